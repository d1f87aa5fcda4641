"""The Patroni REST client of the write path: basic auth, TLS verified, one member after another."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import httpx

from pgtop_ha.collect.tls import context_for
from pgtop_ha.models.base import Frozen
from pgtop_ha.settings import Settings

# POST /switchover waits inside Patroni for up to 2 x max(10, loop_wait) seconds.
WRITE_TIMEOUT_S = 60.0


class PatroniReply(Frozen):
    """One answer from Patroni (or why there was none: status None)."""

    url: str
    status: int | None
    text: str
    data: Any = None

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return self.status is not None and 200 <= self.status < 300


def base_url(api_url: str) -> str:
    """Patroni's REST root from a member's api_url (which ends in /patroni)."""
    parts = urlsplit(api_url)
    return f"{parts.scheme}://{parts.netloc}"


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class PatroniWriter:
    """Sends Patroni's write requests, trying the next known member when one cannot be reached."""

    def __init__(
        self,
        urls: Iterable[str],
        client: httpx.AsyncClient,
        read_timeout: float = 2.0,
    ) -> None:
        """Use ``client`` (which carries auth and TLS) against ``urls`` in order."""
        self._urls: list[str] = []
        self.learn(urls)
        self._client = client
        self._read_timeout = read_timeout

    @classmethod
    def from_settings(cls, settings: Settings) -> PatroniWriter:
        """A writer with the REST credentials and TLS settings of ``settings``."""
        auth: httpx.BasicAuth | None = None
        secret = settings.patroni_secret()
        if settings.patroni.user:
            password = secret.get_secret_value() if secret is not None else ""
            auth = httpx.BasicAuth(settings.patroni.user, password)
        # The read path's TLS (system store, ca_file, client certificate), and like the read path
        # no HTTP(S)_PROXY: the Basic credentials must not travel through a proxy from the env.
        client = httpx.AsyncClient(
            auth=auth,
            verify=context_for("patroni", settings.patroni),
            trust_env=False,
            timeout=httpx.Timeout(settings.patroni.timeout, read=WRITE_TIMEOUT_S),
            headers={"User-Agent": "pgtop-ha (operator)"},
            follow_redirects=False,
        )
        urls = [*settings.patroni.urls, *(n.patroni_url for n in settings.nodes if n.patroni_url)]
        return cls(urls, client, read_timeout=settings.patroni.timeout)

    @property
    def urls(self) -> tuple[str, ...]:
        """Every REST root known so far, in the order they are tried."""
        return tuple(self._urls)

    def learn(self, urls: Iterable[str]) -> None:
        """Add REST roots (e.g. members' api_url from /cluster) to try after the known ones."""
        for url in urls:
            root = base_url(url)
            if root not in self._urls:
                self._urls.append(root)

    def prefer(self, url: str) -> None:
        """Try ``url`` first from now on (the member that answered last)."""
        root = base_url(url)
        if root in self._urls:
            self._urls.remove(root)
        self._urls.insert(0, root)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

    async def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, slow: bool = False
    ) -> PatroniReply:
        """Send one request to the first member that accepts a connection."""
        if not self._urls:
            return PatroniReply(
                url="",
                status=None,
                text="no Patroni URL known; set patroni.urls (e.g. http://10.0.0.5:8008)",
            )
        # Only a refused/failed connect is safe to retry elsewhere: a write that may have
        # reached Patroni must not be sent twice.
        timeout = httpx.Timeout(
            self._read_timeout, read=WRITE_TIMEOUT_S if slow else max(self._read_timeout, 10.0)
        )
        failures: list[str] = []
        for root in list(self._urls):
            url = root + path
            try:
                response = await self._client.request(method, url, json=body, timeout=timeout)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                failures.append(f"{root}: {_one_line(str(exc)) or type(exc).__name__}")
                continue
            except httpx.TimeoutException:
                return PatroniReply(
                    url=url,
                    status=None,
                    text=f"{root} did not answer in time; the request may "
                    "still take effect: watch the cluster",
                )
            except httpx.HTTPError as exc:
                return PatroniReply(
                    url=url, status=None, text=f"{root}: {_one_line(str(exc)) or type(exc).__name__}"
                )
            self.prefer(root)
            return _reply(url, response)
        return PatroniReply(url="", status=None, text="no Patroni member reachable: " + "; ".join(failures))

    async def get_json(self, path: str) -> PatroniReply:
        """GET ``path`` and decode its JSON body (data None when it is not JSON)."""
        return await self.request("GET", path)


def _reply(url: str, response: httpx.Response) -> PatroniReply:
    text = response.text
    data: Any = None
    if "json" in response.headers.get("content-type", ""):
        try:
            data = response.json()
        except ValueError:
            data = None
    if response.status_code == 401:
        text = (
            "Patroni refused the credentials (401): set patroni.user and "
            "PGTOP_HA_PATRONI_PASSWORD or patroni.password_file"
        )
    elif response.status_code == 403:
        text = "Patroni forbids writes from this address (403): check restapi.allowlist"
    return PatroniReply(url=url, status=response.status_code, text=_one_line(text), data=data)

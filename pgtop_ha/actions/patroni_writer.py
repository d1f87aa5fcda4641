"""The Patroni REST client of the write path: basic auth, TLS verified, one member after another."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import httpx

from pgtop_ha.collect.tls import context_for
from pgtop_ha.collect.transport import CLIENT_CERT_HINT
from pgtop_ha.models.base import Frozen
from pgtop_ha.models.text import fit
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.models.urls import host_of, redact, root_of
from pgtop_ha.settings import Settings

# POST /switchover waits inside Patroni for up to 2 x max(10, loop_wait) seconds.
WRITE_TIMEOUT_S = 60.0
MAX_REPLY_BYTES = 1024 * 1024  # Patroni's answers to writes are a line or a small JSON object


class ReplyTooLarge(Exception):
    """Patroni's answer to a write was larger than MAX_REPLY_BYTES (or compressed)."""


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


def _one_line(text: str, limit: int = 300) -> str:
    return fit(" ".join(text.split()), limit)


class PatroniWriter:
    """Sends Patroni's write requests, trying the next known member when one cannot be reached."""

    def __init__(
        self,
        urls: Iterable[str],
        client: httpx.AsyncClient,
        read_timeout: float = 2.0,
        *,
        client_cert: bool = False,
    ) -> None:
        """Use ``client`` (which carries auth and TLS) against ``urls`` in order."""
        self._urls: list[str] = []
        self.learn(urls)
        self._client = client
        self._read_timeout = read_timeout
        self._client_cert = client_cert  # a client certificate is configured (certfile/keyfile)

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
            # identity: an answer is read raw and bounded, never inflated (a gzip bomb stays small).
            headers={"User-Agent": "pgtop-ha (operator)", "Accept-Encoding": "identity"},
            follow_redirects=False,
        )
        urls = [*settings.patroni.urls, *(n.patroni_url for n in settings.nodes if n.patroni_url)]
        # The Basic credentials go only where the read path may go too.
        policy = HostPolicy.of(settings.patroni.allowed_hosts)
        allowed = [u for u in urls if policy.refusal(host_of(u)) is None]
        client_cert = settings.patroni.certfile is not None
        return cls(allowed, client, read_timeout=settings.patroni.timeout, client_cert=client_cert)

    @property
    def urls(self) -> tuple[str, ...]:
        """Every REST root known so far, in the order they are tried."""
        return tuple(self._urls)

    def learn(self, urls: Iterable[str]) -> None:
        """Add REST roots (e.g. members' api_url from /cluster) to try after the known ones."""
        for url in urls:
            root = root_of(url)
            if root not in self._urls:
                self._urls.append(root)

    def prefer(self, url: str) -> None:
        """Try ``url`` first from now on (the member that answered last)."""
        root = root_of(url)
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
                response, raw = await self._send(method, url, body, timeout)
            except ReplyTooLarge as exc:
                return PatroniReply(url=url, status=None, text=f"{root}: {exc}")
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
                said = _one_line(str(exc)) or type(exc).__name__
                closed = isinstance(exc, httpx.ReadError | httpx.RemoteProtocolError)
                if closed and url.startswith("https:") and not self._client_cert:
                    # Closed after the handshake, before any answer: as the read path says it.
                    said = f"{said} ({CLIENT_CERT_HINT})"
                return PatroniReply(url=url, status=None, text=f"{root}: {said}")
            self.prefer(root)
            return _reply(url, response, raw)
        return PatroniReply(url="", status=None, text="no Patroni member reachable: " + "; ".join(failures))

    async def _send(
        self, method: str, url: str, body: dict[str, Any] | None, limits: httpx.Timeout
    ) -> tuple[httpx.Response, bytes]:
        """One request; the answer read raw and bounded (compressed answers are refused)."""
        async with self._client.stream(method, url, json=body, timeout=limits) as response:
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise ReplyTooLarge(f"compressed answer refused (Content-Encoding: {encoding[:40]})")
            if response.is_stream_consumed:  # an answer already in memory (a mock transport)
                if len(response.content) > MAX_REPLY_BYTES:
                    raise ReplyTooLarge("answer larger than 1 MiB refused")
                return response, response.content
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise ReplyTooLarge("answer larger than 1 MiB refused")
                chunks.append(chunk)
        return response, b"".join(chunks)

    async def get_json(self, path: str) -> PatroniReply:
        """GET ``path`` and decode its JSON body (data None when it is not JSON)."""
        return await self.request("GET", path)


def _reply(url: str, response: httpx.Response, raw: bytes) -> PatroniReply:
    text = raw.decode(response.encoding or "utf-8", "replace")
    data: Any = None
    if "json" in response.headers.get("content-type", ""):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
    if response.status_code == 401:
        text = (
            "Patroni refused the credentials (401): set patroni.user and "
            "PGTOP_HA_PATRONI_PASSWORD or patroni.password_file"
        )
    elif response.status_code == 403:
        text = "Patroni forbids writes from this address (403): check restapi.allowlist"
    return PatroniReply(url=redact(url), status=response.status_code, text=_one_line(text), data=data)

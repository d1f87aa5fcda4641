"""A GET-only HTTP client: nothing but GET, and no credentials but a login for one configured origin."""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import httpx
from pydantic import SecretStr

from pgtop_ha.collect.transport import LeanGetTransport, Verify
from pgtop_ha.collect.transport import RefusedAnswer as RefusedAnswer  # re-exported for describers
from pgtop_ha.models.text import clean
from pgtop_ha.models.urls import redact

_USER_AGENT = f"python-httpx/{httpx.__version__}"  # what httpx.AsyncClient sent before


class ReadOnlyViolation(RuntimeError):
    """Something on the read path tried to send a request other than a plain GET."""


@dataclass(frozen=True)
class Login:
    """A login (Basic, or a Bearer token) sent to the origin of ``url`` and nowhere else."""

    url: str  # the page the user configured: its scheme, host and port alone receive it
    user: str | None
    password: SecretStr = field(repr=False)
    scheme: str = "Basic"

    def origin(self) -> tuple[str, str, int | None]:
        """(scheme, host, port) of the page the login is for."""
        return _origin(httpx.URL(self.url))

    def header(self) -> str:
        """The Authorization header's value."""
        secret = self.password.get_secret_value()
        if self.scheme == "Bearer":
            return f"Bearer {secret}"
        pair = f"{self.user or ''}:{secret}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


class GetOnlyTransport(httpx.AsyncBaseTransport):
    """Wraps a transport and refuses any method but GET, and credentials for any other origin."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, login_origin: tuple[str, str, int | None] | None = None
    ) -> None:
        self._inner = inner
        self._login_origin = login_origin

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Forward a GET; raise ReadOnlyViolation for another verb or credentials sent elsewhere."""
        if request.method != "GET":
            raise ReadOnlyViolation(f"the read path refuses HTTP {request.method} {request.url}")
        if "authorization" in request.headers and (
            self._login_origin is None or _origin(request.url) != self._login_origin
        ):
            raise ReadOnlyViolation(f"the read path sends no credentials ({request.url})")
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()


def strip_userinfo(url: str) -> str:
    """``url`` without any user:password part (credentials never travel on the read path)."""
    parsed = httpx.URL(url)
    if not parsed.userinfo:
        return url
    return str(parsed.copy_with(username=None, password=None))


@functools.lru_cache(maxsize=512)
def _target(url: str) -> httpx.URL:
    # The read path asks the same few URLs every cycle; parsing one is a third of a GET's CPU.
    # httpx.URL is immutable, so one parsed object serves every request for it.
    return httpx.URL(strip_userinfo(url))


@functools.lru_cache(maxsize=64)
def _timeouts(limit: float) -> Mapping[str, float | None]:
    # Shared by every request with this limit: read-only, so nothing can change another's.
    return MappingProxyType(httpx.Timeout(limit).as_dict())


class Redirected(RefusedAnswer):
    """A 3xx answer: the read path follows no redirect, the user gives the final URL instead."""


def _redirect(response: httpx.Response, request: httpx.Request) -> Redirected:
    location = response.headers.get("location", "")
    try:
        target = str(request.url.join(location)) if location else ""
    except (httpx.InvalidURL, ValueError):
        target = location
    shown = clean(redact(target))[:200] or "nowhere (no Location)"
    return Redirected(
        f"redirected to {shown} (HTTP {response.status_code}); give the final URL", request=request
    )


class GetOnlyClient:
    """A GET-only HTTP client: no post/put/patch/delete, enforced twice."""

    def __init__(
        self,
        *,
        timeout: float,
        verify: Verify = True,
        transport: httpx.AsyncBaseTransport | None = None,
        login: Login | None = None,
    ) -> None:
        # Requests go straight to the GET-only transport, not through httpx.AsyncClient: its
        # machinery (auth, redirects, cookies, hooks, proxies from the environment) does nothing
        # for a credential-less GET and cost ~0.2 ms CPU of the ~0.6 ms each GET took here.
        origin = None if login is None else login.origin()
        self._transport = GetOnlyTransport(transport or LeanGetTransport(verify=verify), origin)
        self._timeout = timeout
        self._headers = {"Accept": "application/json, text/plain;q=0.9", "User-Agent": _USER_AGENT}
        # Only a client made for one page (HAProxy's stats, a query API) holds a login; the
        # transport refuses it for any other origin, so an answer can never steer it elsewhere.
        self._login_headers = None if login is None else {**self._headers, "Authorization": login.header()}
        self._login_origin = origin

    async def get(self, url: str, *, limit_s: float | None = None) -> httpx.Response:
        """GET ``url`` (user:password stripped), read in full; Redirected on a 3xx answer."""
        limit = self._timeout if limit_s is None else limit_s
        target = _target(url)
        headers = self._headers
        if self._login_headers is not None and _origin(target) == self._login_origin:
            headers = self._login_headers
        request = httpx.Request("GET", target, headers=headers, extensions={"timeout": _timeouts(limit)})
        response = await self._transport.handle_async_request(request)
        response.request = request  # raise_for_status() needs it; transports need not set it
        await response.aread()
        if 300 <= response.status_code < 400:
            raise _redirect(response, request)
        return response

    def __getattr__(self, name: str) -> Any:
        # Only get/aclose exist; any other verb is a programming error on the read path.
        if name in ("post", "put", "patch", "delete", "request", "send", "stream", "options"):
            raise ReadOnlyViolation(f"the read path has no HTTP {name.upper()}")
        raise AttributeError(name)

    async def aclose(self) -> None:
        """Close the transport."""
        await self._transport.aclose()

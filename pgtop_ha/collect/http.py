"""A GET-only HTTP client: the read path cannot send anything but GET, nor any credentials."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import httpx

from pgtop_ha.collect.transport import LeanGetTransport


class ReadOnlyViolation(RuntimeError):
    """Something on the read path tried to send a request other than a plain GET."""


class GetOnlyTransport(httpx.AsyncBaseTransport):
    """Wraps a transport and refuses any method but GET and any Authorization header."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Forward a GET without credentials; raise ReadOnlyViolation for anything else."""
        if request.method != "GET":
            raise ReadOnlyViolation(f"the read path refuses HTTP {request.method} {request.url}")
        if "authorization" in request.headers:
            raise ReadOnlyViolation(f"the read path sends no credentials ({request.url})")
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()


def verify_context(verify: bool, ca_file: Path | None) -> ssl.SSLContext | bool:
    """TLS verification for httpx: the CA file when given, the system default otherwise."""
    if not verify:
        return False
    if ca_file is not None:
        return ssl.create_default_context(cafile=str(ca_file))
    return True


def strip_userinfo(url: str) -> str:
    """``url`` without any user:password part (credentials never travel on the read path)."""
    parsed = httpx.URL(url)
    if not parsed.userinfo:
        return url
    return str(parsed.copy_with(username=None, password=None))


class GetOnlyClient:
    """An httpx.AsyncClient that can only GET: no post/put/patch/delete, enforced twice."""

    def __init__(
        self,
        *,
        timeout: float,
        verify: ssl.SSLContext | bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        inner = transport or LeanGetTransport(verify=verify)
        # trust_env=False: proxy mounts from the environment would bypass the GET-only transport.
        self._client = httpx.AsyncClient(
            transport=GetOnlyTransport(inner),
            timeout=httpx.Timeout(timeout),
            trust_env=False,
            follow_redirects=False,
            headers={"Accept": "application/json, text/plain;q=0.9"},
        )

    async def get(self, url: str, *, limit_s: float | None = None) -> httpx.Response:
        """GET ``url`` (user:password stripped) and return the response."""
        kwargs: dict[str, Any] = {}
        if limit_s is not None:
            kwargs["timeout"] = httpx.Timeout(limit_s)
        return await self._client.get(strip_userinfo(url), **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only get/aclose exist; any other verb is a programming error on the read path.
        if name in ("post", "put", "patch", "delete", "request", "send", "stream", "options"):
            raise ReadOnlyViolation(f"the read path has no HTTP {name.upper()}")
        raise AttributeError(name)

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._client.aclose()

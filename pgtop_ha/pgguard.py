"""PostgreSQL connections that never send a password in clear text over a connection without TLS.

asyncpg answers AuthenticationCleartextPassword in the call that parses it, but every byte enters
its protocol's ``data_received``: a subclass there reads the message headers first while
authentication lasts, and closes the connection instead. It acts only inside ``guarded()``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from asyncpg import connect_utils
from asyncpg import protocol as _pgproto

_AUTH_OK = 0
_AUTH_CLEARTEXT = 3
_AUTH_MESSAGE_MAX = 1 << 20  # authentication messages are bytes to a few KB; more is not PostgreSQL
REFUSED = (
    "the server asked for the password in clear text without TLS; not sent "
    "(use sslmode=require or verify-full, or set postgres.allow_cleartext_password = true)"
)


class CleartextRefused(Exception):
    """A connection was closed rather than send the password in clear text."""


@dataclass
class Guard:
    """One guarded scope: whether cleartext is allowed, and which addresses were refused."""

    allow_cleartext: bool
    refused: dict[tuple[str, int], str] = field(default_factory=dict)
    protocols: int = 0  # connections asyncpg built under this guard (0 means it was bypassed)


_CURRENT: contextvars.ContextVar[Guard | None] = contextvars.ContextVar("pgtop_ha_pg_guard", default=None)


class GuardedProtocol(_pgproto.Protocol):  # type: ignore[misc]  # asyncpg ships no types
    """asyncpg's protocol, looking at authentication requests before asyncpg answers them."""

    def __init__(self, addr: Any, connected: Any, params: Any, record_class: Any, loop: Any) -> None:
        super().__init__(addr, connected, params, record_class, loop)
        guard = _CURRENT.get()
        self._guard = guard
        self._addr = addr
        # A unix socket's peer is this host: only TCP connections are watched.
        self._watch = guard is not None and not guard.allow_cleartext and isinstance(addr, tuple)
        self._carry = b""
        self._skip = 0
        self._refusal: str | None = None
        self._transport: Any = None
        if guard is not None:
            guard.protocols += 1

    def connection_made(self, transport: Any) -> None:
        """Keep the transport (to close it on a refusal), then asyncpg's own handling."""
        self._transport = transport
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        """Check authentication requests first; asyncpg sees the bytes only when they pass."""
        if self._refusal is not None:
            return
        if self._watch and self._refuses(bytes(data)):
            return
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        """Report a refusal as the reason the connection ended."""
        if self._refusal is not None and exc is None:
            exc = CleartextRefused(self._refusal)
        super().connection_lost(exc)

    def _refuses(self, data: bytes) -> bool:
        # Walk the message headers (type, int32 length) as the server sends them.
        view = self._carry + data if self._carry else data
        self._carry = b""
        i, end = 0, len(view)
        while i < end:
            if self._skip:
                step = min(self._skip, end - i)
                i += step
                self._skip -= step
                continue
            if end - i < 5:
                self._carry = view[i:]
                return False
            kind = view[i]
            length = int.from_bytes(view[i + 1 : i + 5], "big", signed=True)
            if not 4 <= length <= _AUTH_MESSAGE_MAX:
                return self._refuse("the server sent a malformed message during authentication; closed")
            if kind == ord("R"):
                if length < 8:
                    return self._refuse("the server sent a malformed authentication request; closed")
                if end - i < 9:
                    self._carry = view[i:]
                    return False
                code = int.from_bytes(view[i + 5 : i + 9], "big", signed=True)
                if code == _AUTH_OK:
                    self._watch = False  # authenticated: nothing more to check on this connection
                    return False
                if code == _AUTH_CLEARTEXT and not self.is_ssl:
                    return self._refuse(REFUSED)
            self._skip = 1 + length
        return False

    def _refuse(self, reason: str) -> bool:
        self._refusal = reason
        self._watch = False
        if self._guard is not None and isinstance(self._addr, tuple):
            self._guard.refused[(str(self._addr[0]), int(self._addr[1]))] = reason
        if self._transport is not None:
            self._transport.abort()
        return True


class _ProtocolModule:
    """asyncpg.protocol as asyncpg.connect_utils sees it, with Protocol guarded."""

    Protocol = GuardedProtocol

    def __getattr__(self, name: str) -> Any:
        return getattr(_pgproto, name)


def _install() -> bool:
    if getattr(connect_utils, "protocol", None) is _pgproto:
        connect_utils.protocol = _ProtocolModule()
    return isinstance(getattr(connect_utils, "protocol", None), _ProtocolModule)


INSTALLED = _install()


@contextlib.contextmanager
def guarded(allow_cleartext: bool) -> Iterator[Guard]:
    """Every asyncpg connection opened inside (tasks started inside too) is guarded."""
    if not allow_cleartext and not INSTALLED:
        # Fail closed: an asyncpg that builds its protocol elsewhere can't be checked.
        raise CleartextRefused(
            f"asyncpg {asyncpg.__version__} can't be guarded against cleartext password requests; "
            "set postgres.allow_cleartext_password = true to connect anyway"
        )
    guard = Guard(allow_cleartext)
    token = _CURRENT.set(guard)
    try:
        yield guard
    finally:
        _CURRENT.reset(token)


def _refusal_in(exc: BaseException) -> CleartextRefused | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, CleartextRefused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


async def connect(*, allow_cleartext: bool, **kwargs: Any) -> Any:
    """``asyncpg.connect(**kwargs)``, guarded; a refusal raises CleartextRefused."""
    with guarded(allow_cleartext) as guard:
        try:
            conn = await asyncpg.connect(**kwargs)
        except Exception as exc:
            refusal = _refusal_in(exc)
            if refusal is not None:
                raise CleartextRefused(str(refusal)) from None
            raise
    if not allow_cleartext and guard.protocols == 0:
        conn.terminate()
        raise CleartextRefused("asyncpg connected without the guard; set allow_cleartext_password to allow")
    return conn


def refusal_for(guard: Guard, host: str, port: int) -> str | None:
    """Why the connection to ``host:port`` inside ``guard`` was closed, if it was refused."""
    return guard.refused.get((host, port))

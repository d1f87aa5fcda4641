"""A small, bounded PostgreSQL client for the simple query protocol (poolers' admin commands).

pgBouncer's admin console speaks only the simple protocol, which asyncpg does not send. Startup,
trust/SCRAM (server proof checked)/MD5 authentication, cleartext only over TLS, TLS per sslmode,
Query; each message, the rows kept and a reply's bytes are bounded.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import os
import secrets
import ssl
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from asyncpg import connect_utils

from pgtop_ha.models.text import clean

MAX_MESSAGE = 1 << 20  # one protocol message: admin rows are a few hundred bytes
MAX_REPLY = 8 << 20  # all messages of one reply, discarded rows included
MAX_ROWS = 1000  # rows kept per reply (the rest are read and dropped: `truncated`)
MAX_SCRAM_ITERATIONS = 1_000_000  # PostgreSQL uses 4096; more is a server trying to burn our CPU
PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
CLEARTEXT_REFUSED = (
    "the server asked for the password in clear text without TLS; not sent "
    "(use sslmode=require or verify-full, or set postgres.allow_cleartext_password = true)"
)


class WireError(Exception):
    """The server broke the protocol, or refused us; the message is one line, never a password."""


class ServerError(WireError):
    """An ErrorResponse: the server's SQLSTATE and first message line."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} (SQLSTATE {code})" if code else message)
        self.code = code


class AuthError(ServerError):
    """The server rejected our login (28P01 / 28000)."""


@dataclass(frozen=True)
class Result:
    """One statement's answer: column names, rows as text (None is SQL NULL), rows dropped."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]
    truncated: bool = False

    def dicts(self) -> list[dict[str, str | None]]:
        """The rows keyed by column name."""
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]


@dataclass(frozen=True)
class Login:
    """Who to log in as and how: the resolved user, database, sslmode, CA and passfile."""

    user: str
    database: str
    sslmode: str = "prefer"
    sslrootcert: Path | None = None
    passfile: Path | None = None
    allow_cleartext: bool = False
    application_name: str = "pgtop-ha"


def login_for(
    user: str | None,
    database: str,
    *,
    sslmode: str | None,
    sslrootcert: Path | None,
    passfile: Path | None,
    allow_cleartext: bool,
) -> Login:
    """A Login with libpq's defaults filled in (PGUSER, PGSSLMODE, PGSSLROOTCERT, PGPASSFILE)."""
    env = os.environ
    name = user or env.get("PGUSER") or _os_user()
    mode = sslmode or env.get("PGSSLMODE") or "prefer"
    root = sslrootcert or (Path(env["PGSSLROOTCERT"]) if env.get("PGSSLROOTCERT") else None)
    pfile = passfile or (Path(env["PGPASSFILE"]) if env.get("PGPASSFILE") else Path.home() / ".pgpass")
    return Login(name, database, mode, root, pfile, allow_cleartext)


def _os_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "postgres"


def _password(login: Login, host: str, port: int) -> str | None:
    """PGPASSWORD, else the passfile line for host:port/database/user (libpq's order)."""
    env = os.environ.get("PGPASSWORD")
    if env is not None:
        return env
    if login.passfile is None:
        return None
    found: str | None = connect_utils._read_password_from_pgpass(
        passfile=login.passfile, hosts=[host], ports=[port], database=login.database, user=login.user
    )
    return found


def _tls_context(login: Login, host: str) -> ssl.SSLContext | None:
    """The TLS context sslmode asks for (None: no TLS)."""
    mode = login.sslmode
    if mode == "disable":
        return None
    if mode in ("verify-ca", "verify-full") or (mode == "require" and login.sslrootcert is not None):
        ctx = ssl.create_default_context(cafile=str(login.sslrootcert) if login.sslrootcert else None)
        ctx.check_hostname = mode == "verify-full"
        return ctx
    if mode in ("allow", "prefer", "require"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # libpq's require/prefer: encrypted, not authenticated
        return ctx
    raise WireError(f"sslmode {mode!r} is not one of disable, allow, prefer, require, verify-ca, verify-full")


def _error_fields(body: bytes) -> tuple[str, str]:
    fields: dict[str, str] = {}
    for part in body.split(b"\0"):
        if len(part) > 1:
            fields.setdefault(chr(part[0]), part[1:].decode("utf-8", "replace"))
    message = clean(fields.get("M", "error")).strip()[:300]
    return fields.get("C", "")[:5], message


class Connection:
    """One logged-in connection; ``query`` runs one simple-protocol statement at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, where: str) -> None:
        self._reader = reader
        self._writer = writer
        self.where = where
        self.parameters: dict[str, str] = {}
        self._closed = False

    async def _message(self, budget: list[int] | None = None) -> tuple[int, bytes]:
        head = await self._reader.readexactly(5)
        kind, length = head[0], struct.unpack("!i", head[1:])[0]
        if not 4 <= length <= MAX_MESSAGE:
            raise WireError(f"the server sent a message of {length} bytes; closed (limit {MAX_MESSAGE})")
        if budget is not None:
            budget[0] -= length + 1
            if budget[0] < 0:
                raise WireError(f"the server's reply passed {MAX_REPLY >> 20} MiB; closed")
        return kind, await self._reader.readexactly(length - 4)

    def _send(self, kind: bytes, body: bytes) -> None:
        self._writer.write(_message(kind, body))

    async def query(self, sql: str, max_rows: int = MAX_ROWS) -> Result:
        """Run ``sql`` (one statement) and return its rows as text."""
        return unwrap((await self.queries((sql,), max_rows))[0])

    async def queries(self, sqls: Sequence[str], max_rows: int = MAX_ROWS) -> list[Result | ServerError]:
        """Run each statement of ``sqls`` in one write; each one's rows, or the error it got."""
        # Pipelined simple queries: the server answers them in order, each ending with
        # ReadyForQuery, and an error ends only its own statement. One write (and one wakeup
        # of the pooler) per read instead of one per command.
        self._writer.write(b"".join(_message(b"Q", sql.encode() + b"\0") for sql in sqls))
        await self._writer.drain()
        return [await self._answer(max_rows) for _ in sqls]

    async def _answer(self, max_rows: int) -> Result | ServerError:
        budget = [MAX_REPLY]
        columns: tuple[str, ...] = ()
        rows: list[tuple[str | None, ...]] = []
        truncated = False
        error: ServerError | None = None
        while True:
            kind, body = await self._message(budget)
            if kind == ord("T"):
                columns = _columns(body)
            elif kind == ord("D"):
                if len(rows) < max_rows:
                    rows.append(_row(body))
                else:
                    truncated = True
            elif kind == ord("E"):
                error = ServerError(*_error_fields(body))
            elif kind == ord("Z"):
                return error if error is not None else Result(columns, tuple(rows), truncated)
            elif kind == ord("S"):
                self._parameter(body)
            # C (complete), I (empty), N (notice), A (notification): nothing to keep

    def _parameter(self, body: bytes) -> None:
        name, _, rest = body.partition(b"\0")
        if len(self.parameters) < 64:
            self.parameters[clean(name.decode("utf-8", "replace"))[:64]] = clean(
                rest.rstrip(b"\0").decode("utf-8", "replace")
            )[:200]

    async def close(self) -> None:
        """Say goodbye (Terminate) and close the socket."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._send(b"X", b"")
            self._writer.close()
            await asyncio.wait_for(self._writer.wait_closed(), 0.5)

    def abort(self) -> None:
        """Close the socket now (after a timeout or a protocol violation)."""
        self._closed = True
        self._writer.transport.abort()


def unwrap(answer: Result | ServerError) -> Result:
    """The statement's rows; its error raised."""
    if isinstance(answer, ServerError):
        raise answer
    return answer


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _columns(body: bytes) -> tuple[str, ...]:
    if len(body) < 2:
        raise WireError("the server sent a malformed row description; closed")
    count = struct.unpack("!h", body[:2])[0]
    names: list[str] = []
    pos = 2
    for _ in range(max(0, count)):
        end = body.find(b"\0", pos)
        if end < 0 or end + 19 > len(body):
            raise WireError("the server sent a malformed row description; closed")
        names.append(clean(body[pos:end].decode("utf-8", "replace"))[:64])
        pos = end + 19  # name\0 + table oid, column, type oid, size, modifier, format
    return tuple(names)


def _row(body: bytes) -> tuple[str | None, ...]:
    if len(body) < 2:
        raise WireError("the server sent a malformed data row; closed")
    count = struct.unpack("!h", body[:2])[0]
    values: list[str | None] = []
    pos = 2
    for _ in range(max(0, count)):
        if pos + 4 > len(body):
            raise WireError("the server sent a malformed data row; closed")
        size = struct.unpack("!i", body[pos : pos + 4])[0]
        pos += 4
        if size < 0:
            values.append(None)
            continue
        if pos + size > len(body):
            raise WireError("the server sent a malformed data row; closed")
        values.append(body[pos : pos + size].decode("utf-8", "replace"))
        pos += size
    return tuple(values)


async def connect(host: str, port: int, login: Login) -> Connection:
    """Open, (TLS,) start up and authenticate; the caller bounds the time (asyncio.timeout)."""
    where = f"{host}:{port}"
    reader, writer = await asyncio.open_connection(host, port)
    conn = Connection(reader, writer, where)
    try:
        tls = await _negotiate_tls(conn, login, host)
        conn._send(b"", _startup(login))
        await writer.drain()
        await _authenticate(conn, login, host, port, tls)
    except BaseException:
        conn.abort()
        raise
    return conn


def _startup(login: Login) -> bytes:
    params = {"user": login.user, "database": login.database, "application_name": login.application_name}
    body = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in params.items()) + b"\0"
    return struct.pack("!i", PROTOCOL_3) + body


async def _negotiate_tls(conn: Connection, login: Login, host: str) -> bool:
    ctx = _tls_context(login, host)
    if ctx is None:
        return False
    conn._writer.write(struct.pack("!ii", 8, SSL_REQUEST))
    await conn._writer.drain()
    answer = await conn._reader.readexactly(1)
    if answer == b"S":
        await conn._writer.start_tls(ctx, server_hostname=host)
        return True
    if answer != b"N":
        raise WireError("the server answered the TLS request with something else; closed")
    if login.sslmode in ("require", "verify-ca", "verify-full"):
        raise WireError(f"the server does not offer TLS and sslmode is {login.sslmode}; not connected")
    return False


async def _authenticate(conn: Connection, login: Login, host: str, port: int, tls: bool) -> None:
    asked: Callable[[], str] = lambda: _need_password(login, host, port)  # noqa: E731
    scram: _Scram | None = None
    while True:
        kind, body = await conn._message()
        if kind == ord("E"):
            code, message = _error_fields(body)
            if code in ("28P01", "28000"):
                raise AuthError(code, message)
            raise ServerError(code, message)
        if kind == ord("R"):
            if len(body) < 4:
                raise WireError("the server sent a malformed authentication request; closed")
            code = struct.unpack("!i", body[:4])[0]
            if code == 0:
                continue
            if code == 3:
                if not tls and not login.allow_cleartext:
                    raise WireError(CLEARTEXT_REFUSED)
                conn._send(b"p", asked().encode() + b"\0")
            elif code == 5:
                if len(body) < 8:
                    raise WireError("the server sent a malformed MD5 request; closed")
                inner = hashlib.md5((asked() + login.user).encode()).hexdigest()  # noqa: S324  (the protocol's)
                outer = hashlib.md5(inner.encode() + body[4:8]).hexdigest()  # noqa: S324
                conn._send(b"p", b"md5" + outer.encode() + b"\0")
            elif code == 10:
                mechanisms = [m.decode("ascii", "replace") for m in body[4:].split(b"\0") if m]
                if "SCRAM-SHA-256" not in mechanisms:
                    raise WireError(f"the server offers only {', '.join(mechanisms)[:80]}; not supported")
                scram = _Scram(asked())
                first = scram.client_first()
                payload = b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first
                conn._send(b"p", payload)
            elif code == 11 and scram is not None:
                conn._send(b"p", await scram.client_final(body[4:]))
            elif code == 12 and scram is not None:
                scram.verify(body[4:])
            else:
                raise WireError(f"the server asked for authentication method {code}; not supported")
            await conn._writer.drain()
        elif kind == ord("S"):
            conn._parameter(body)
        elif kind == ord("Z"):
            if scram is not None and not scram.verified:
                raise WireError("the server ended SCRAM without proving it knows the password; closed")
            return
        # K (backend key), N (notice): nothing to keep


def _need_password(login: Login, host: str, port: int) -> str:
    found = _password(login, host, port)
    if found is None:
        raise AuthError(
            "28P01",
            f"no password for {login.user}@{host}:{port}/{login.database} in PGPASSWORD or the passfile",
        )
    return found


class _Scram:
    """SCRAM-SHA-256 (RFC 5802/7677) without channel binding, as libpq does over plain TCP."""

    def __init__(self, password: str) -> None:
        self._password = password.encode()
        self._nonce = base64.b64encode(secrets.token_bytes(18)).decode()
        self._first_bare = f"n=,r={self._nonce}"
        self._expected: bytes | None = None
        self.verified = False

    def client_first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    async def client_final(self, server_first: bytes) -> bytes:
        text = server_first.decode("ascii", "replace")
        parts = dict(p.split("=", 1) for p in text.split(",") if "=" in p)
        nonce, salt_b64, iterations = parts.get("r", ""), parts.get("s", ""), parts.get("i", "")
        if not nonce.startswith(self._nonce) or len(nonce) <= len(self._nonce):
            raise WireError("the server's SCRAM nonce does not extend ours; closed")
        if not iterations.isdigit() or not 1 <= int(iterations) <= MAX_SCRAM_ITERATIONS:
            raise WireError(f"the server asked for {iterations[:12]!r} SCRAM iterations; closed")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except ValueError:
            raise WireError("the server's SCRAM salt is not base64; closed") from None
        salted = await asyncio.to_thread(hashlib.pbkdf2_hmac, "sha256", self._password, salt, int(iterations))
        client_key = hmac.digest(salted, b"Client Key", "sha256")
        stored_key = hashlib.sha256(client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, "sha256")
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", "sha256")
        self._expected = hmac.digest(server_key, auth_message, "sha256")
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode("ascii", "replace")
        if not text.startswith("v=") or self._expected is None:
            raise WireError("the server's SCRAM final message is malformed; closed")
        try:
            got = base64.b64decode(text[2:].split(",")[0], validate=True)
        except ValueError:
            raise WireError("the server's SCRAM signature is not base64; closed") from None
        if not hmac.compare_digest(got, self._expected):
            raise WireError("the server's SCRAM signature is wrong (not the server we know); closed")
        self.verified = True

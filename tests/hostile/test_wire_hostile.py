"""The poolers' simple-query client (collect/wire.py) against servers no real pooler would be.

Fakes, because a real pgBouncer cannot be made to send a 2 MiB message, a broken row, a forged
SCRAM signature or a million-row reply on demand. Each case must end in a one-line error or a
bounded result, never a hang, a crash or a password sent where it should not go.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from pgtop_ha.collect import wire
from pgtop_ha.collect.poolers import parse_pool_nodes
from tests.hostile.fakes import Loopback
from tests.hostile.pg_server import MD5, fake_postgres

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def msg(kind: bytes, body: bytes) -> bytes:
    """One backend message."""
    return kind + struct.pack("!i", len(body) + 4) + body


AUTH_OK = msg(b"R", struct.pack("!i", 0))
READY = msg(b"Z", b"I")


def row_description(*names: str) -> bytes:
    """A RowDescription of text columns."""
    body = struct.pack("!h", len(names))
    for name in names:
        body += name.encode() + b"\0" + struct.pack("!ihihih", 0, 0, 25, -1, -1, 0)
    return msg(b"T", body)


def data_row(*values: str | None) -> bytes:
    """A DataRow of text values."""
    body = struct.pack("!h", len(values))
    for v in values:
        body += struct.pack("!i", -1) if v is None else struct.pack("!i", len(v.encode())) + v.encode()
    return msg(b"D", body)


async def startup(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> dict[str, str]:
    """Refuse TLS, read the startup message: its parameters."""
    while True:
        (length,) = struct.unpack("!i", await reader.readexactly(4))
        body = await reader.readexactly(length - 4)
        if struct.unpack("!i", body[:4])[0] == wire.SSL_REQUEST:
            writer.write(b"N")
            await writer.drain()
            continue
        words = body[4:].split(b"\0")
        return {k.decode(): v.decode() for k, v in zip(words[::2], words[1::2], strict=False) if k}


async def read_message(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One frontend message."""
    kind = await reader.readexactly(1)
    (length,) = struct.unpack("!i", await reader.readexactly(4))
    return kind, await reader.readexactly(length - 4)


class Scripted(Loopback):
    """A loopback server running ``script`` for each connection."""

    def __init__(self, script: Script) -> None:
        self._server = None
        self.port = 0
        self._script = script

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await self._script(reader, writer)
        with contextlib.suppress(Exception):
            writer.close()


@contextlib.asynccontextmanager
async def scripted(script: Script) -> AsyncIterator[int]:
    """A Scripted server for the block; its port."""
    server = Scripted(script)
    await server._listen(server._serve)
    try:
        yield server.port
    finally:
        await server.stop()


def login(tmp_path: Path | None = None, password: str = "s3cret") -> wire.Login:
    """A login whose passfile holds ``password`` for any host."""
    passfile = None
    if tmp_path is not None:
        passfile = tmp_path / "pgpass"
        passfile.write_text(f"*:*:*:*:{password}\n")
        passfile.chmod(0o600)
    return wire.Login(user="mon", database="pgbouncer", sslmode="prefer", passfile=passfile)


def answering(*reply: bytes) -> Script:
    """Log in without a password, then answer the first query with ``reply``."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await startup(reader, writer)
        writer.write(AUTH_OK + READY)
        await writer.drain()
        await read_message(reader)
        for part in reply:
            writer.write(part)
        await writer.drain()
        await reader.read()  # hold the connection until the client closes it

    return script


async def test_a_normal_reply_is_read_with_nulls_and_the_sql_is_a_simple_query() -> None:
    seen: list[bytes] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        params = await startup(reader, writer)
        assert params["user"] == "mon" and params["database"] == "pgbouncer"
        writer.write(AUTH_OK + msg(b"S", b"server_version\x0016\0") + READY)
        await writer.drain()
        kind, body = await read_message(reader)
        seen.append(kind + body)
        writer.write(row_description("a", "b") + data_row("1", None) + msg(b"C", b"SHOW\0") + READY)
        await writer.drain()
        await reader.read()  # hold the connection until the client closes it

    async with scripted(script) as port:
        conn = await wire.connect("127.0.0.1", port, login())
        result = await conn.query("SHOW POOLS")
        await conn.close()
    assert result.columns == ("a", "b") and result.rows == (("1", None),)
    assert seen == [b"QSHOW POOLS\0"]  # 'Q': the simple query protocol, as pgBouncer requires
    assert conn.parameters == {"server_version": "16"}


async def test_a_message_over_the_limit_is_refused_before_it_is_read() -> None:
    huge = b"D" + struct.pack("!i", wire.MAX_MESSAGE + 100)
    async with scripted(answering(row_description("a"), huge)) as port:
        conn = await wire.connect("127.0.0.1", port, login())
        with pytest.raises(wire.WireError, match="limit"):
            async with asyncio.timeout(5):
                await conn.query("SHOW POOLS")
        conn.abort()


async def test_rows_past_the_limit_are_dropped_and_said_to_be() -> None:
    rows = [data_row(str(i)) for i in range(wire.MAX_ROWS + 50)]
    async with scripted(answering(row_description("n"), *rows, READY)) as port:
        conn = await wire.connect("127.0.0.1", port, login())
        result = await conn.query("SHOW POOLS")
        conn.abort()
    assert len(result.rows) == wire.MAX_ROWS and result.truncated


async def test_a_reply_that_never_ends_stops_at_the_byte_budget() -> None:
    big_row = data_row("x" * 60_000)
    many = [big_row] * ((wire.MAX_REPLY // 60_000) + 10)
    async with scripted(answering(row_description("x"), *many)) as port:
        conn = await wire.connect("127.0.0.1", port, login())
        with pytest.raises(wire.WireError, match="MiB"):
            async with asyncio.timeout(10):
                await conn.query("SHOW POOLS")
        conn.abort()


@pytest.mark.parametrize(
    "bad",
    [
        msg(b"D", struct.pack("!h", 2) + struct.pack("!i", 50) + b"short"),  # value past the end
        msg(b"D", b"\x00"),  # no column count
        msg(b"T", struct.pack("!h", 1) + b"name-without-terminator"),
    ],
    ids=["value-past-end", "no-count", "bad-description"],
)
async def test_a_malformed_message_is_a_one_line_error(bad: bytes) -> None:
    async with scripted(answering(row_description("a", "b"), bad, READY)) as port:
        conn = await wire.connect("127.0.0.1", port, login())
        with pytest.raises(wire.WireError, match="malformed") as caught:
            await conn.query("SHOW POOLS")
        conn.abort()
    assert "\n" not in str(caught.value)


async def test_an_error_response_is_the_servers_message_on_one_line() -> None:
    error = msg(b"E", b"SERROR\0C42601\0Mnot allowed\x1b[31m red\nsecond line\0\0")
    async with scripted(answering(error, READY)) as port:
        conn = await wire.connect("127.0.0.1", port, login())
        with pytest.raises(wire.ServerError) as caught:
            await conn.query("SHOW POOLS")
        conn.abort()
    assert caught.value.code == "42601"
    assert "\x1b" not in str(caught.value) and "\n" not in str(caught.value)


async def test_pipelined_statements_go_in_one_write_and_an_error_ends_only_its_own() -> None:
    received: list[bytes] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await startup(reader, writer)
        writer.write(AUTH_OK + READY)
        await writer.drain()
        received.append(await reader.read(4096))  # everything the client sent before any answer
        error = msg(b"E", b"SERROR\0C42501\0Mpermission denied\0\0")
        writer.write(row_description("n") + data_row("1") + READY + error + READY)
        writer.write(row_description("m") + data_row("2") + READY)
        await writer.drain()
        await reader.read()  # hold the connection until the client closes it

    async with scripted(script) as port:
        conn = await wire.connect("127.0.0.1", port, login())
        answers = await conn.queries(("SHOW A", "SHOW B", "SHOW C"))
        conn.abort()
    # All three before any answer: one write, not a round trip per statement.
    assert received == [msg(b"Q", b"SHOW A\0") + msg(b"Q", b"SHOW B\0") + msg(b"Q", b"SHOW C\0")]
    first, second, third = answers
    assert isinstance(first, wire.Result) and first.rows == (("1",),)
    assert isinstance(second, wire.ServerError) and second.code == "42501"
    assert isinstance(third, wire.Result) and third.rows == (("2",),)
    with pytest.raises(wire.ServerError):
        wire.unwrap(second)


async def test_cleartext_password_without_tls_is_never_sent(tmp_path: Path) -> None:
    async with fake_postgres() as server:
        with pytest.raises(wire.WireError, match="clear text"):
            await wire.connect("127.0.0.1", server.port, login(tmp_path))
    assert server.passwords == []


async def test_md5_sends_the_hash_never_the_password(tmp_path: Path) -> None:
    async with fake_postgres(auth=MD5) as server:
        with pytest.raises(wire.AuthError):
            await wire.connect("127.0.0.1", server.port, login(tmp_path, "s3cret"))
    inner = hashlib.md5(b"s3cretmon").hexdigest()
    assert server.passwords == [b"md5" + hashlib.md5(inner.encode() + b"salt").hexdigest().encode()]


def scram_server(*, iterations: int = 4096, forge: bool = False, proofs: list[bool] | None = None) -> Script:
    """A SCRAM-SHA-256 server that knows "s3cret"; ``forge``: it signs with the wrong key."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await startup(reader, writer)
        writer.write(msg(b"R", struct.pack("!i", 10) + b"SCRAM-SHA-256\0\0"))
        await writer.drain()
        _, body = await read_message(reader)
        first = body[len(b"SCRAM-SHA-256\0") + 4 :].decode()
        client_nonce = first.split("r=", 1)[1]
        salt = b"0123456789abcdef"
        nonce = client_nonce + "SERVER"
        server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        writer.write(msg(b"R", struct.pack("!i", 11) + server_first.encode()))
        await writer.drain()
        _, final = await read_message(reader)
        without_proof = final.decode().rsplit(",p=", 1)[0]
        auth = f"{first[3:]},{server_first},{without_proof}".encode()
        if proofs is not None:  # RFC 5802: the client's proof must come from the password
            known = hashlib.pbkdf2_hmac("sha256", b"s3cret", salt, iterations)
            stored = hashlib.sha256(hmac.digest(known, b"Client Key", "sha256")).digest()
            proof = base64.b64decode(final.decode().rsplit(",p=", 1)[1])
            client_key = bytes(a ^ b for a, b in zip(proof, hmac.digest(stored, auth, "sha256"), strict=True))
            proofs.append(hashlib.sha256(client_key).digest() == stored)
        salted = hashlib.pbkdf2_hmac("sha256", b"wrong" if forge else b"s3cret", salt, iterations)
        signature = hmac.digest(hmac.digest(salted, b"Server Key", "sha256"), auth, "sha256")
        writer.write(msg(b"R", struct.pack("!i", 12) + b"v=" + base64.b64encode(signature)))
        writer.write(AUTH_OK + READY)
        await writer.drain()
        await reader.read()  # hold the connection until the client closes it

    return script


async def test_scram_logs_in_when_the_server_proves_it_knows_the_password(tmp_path: Path) -> None:
    proofs: list[bool] = []
    async with scripted(scram_server(proofs=proofs)) as port:
        conn = await wire.connect("127.0.0.1", port, login(tmp_path))
        conn.abort()
    assert proofs == [True]  # the client proved the password without sending it


async def test_a_forged_scram_signature_is_refused(tmp_path: Path) -> None:
    async with scripted(scram_server(forge=True)) as port:
        with pytest.raises(wire.WireError, match="signature is wrong"):
            await wire.connect("127.0.0.1", port, login(tmp_path))


async def test_a_server_asking_for_a_billion_scram_iterations_is_refused(tmp_path: Path) -> None:
    async with scripted(scram_server(iterations=1_000_000_000)) as port:
        with pytest.raises(wire.WireError, match="iterations"):
            async with asyncio.timeout(5):
                await wire.connect("127.0.0.1", port, login(tmp_path))


async def test_no_password_known_is_an_auth_error_naming_where_to_put_it() -> None:
    async with scripted(scram_server()) as port:
        with pytest.raises(wire.AuthError, match="PGPASSWORD or the passfile"):
            await wire.connect("127.0.0.1", port, wire.Login(user="mon", database="pgbouncer", passfile=None))


def test_pool_nodes_values_are_sanitised_and_range_checked() -> None:
    result = wire.Result(
        columns=("node_id", "hostname", "port", "status", "lb_weight", "select_cnt", "role"),
        rows=(
            ("0", "db1\x1b]0;owned\x07", "5432", "up", "0.5", "99999999999999999999999", "primary"),
            ("x", "db2", "5432", "up", "nan", "1", "standby"),  # no node id: dropped
            ("2", "db3", "-", "down\n", "1e999", "7", "standby"),
        ),
    )
    nodes = parse_pool_nodes(result)
    assert [n.node_id for n in nodes] == [0, 2]
    assert nodes[0].host == "db1" and nodes[0].select_cnt is None and nodes[0].lb_weight == 0.5
    assert nodes[1].port is None and nodes[1].status == "down" and nodes[1].lb_weight is None

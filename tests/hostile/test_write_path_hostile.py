"""The write path against a hostile Patroni: answers bounded, never inflated, credentials kept home."""

from __future__ import annotations

import pytest

from pgtop_ha.actions.patroni_writer import PatroniWriter
from pgtop_ha.settings import load_settings
from tests.hostile.fakes import fake_server
from tests.hostile.test_http_hostile import _json_head, bounded_memory, gzip_bomb, raw

MIB = 1024 * 1024


def _writer(url: str, **patroni: object) -> PatroniWriter:
    settings = load_settings(None, {"patroni": {"urls": [url], "user": "patroni", **patroni}}, environ={})
    return PatroniWriter.from_settings(settings)


@pytest.mark.parametrize("kind", ["gzip", "huge"])
async def test_answer_to_a_write_is_bounded(kind: str) -> None:
    if kind == "gzip":
        body = gzip_bomb()
        head = _json_head(f"Content-Encoding: gzip\r\nContent-Length: {len(body)}\r\n\r\n")
    else:
        body = b"x" * (8 * MIB)
        head = _json_head(f"Content-Length: {len(body)}\r\n\r\n")
    async with fake_server({"/switchover": raw(head.encode() + body)}) as server:
        writer = _writer(server.url)
        try:
            with bounded_memory(24):
                reply = await writer.request("POST", "/switchover", {"leader": "a"})
        finally:
            await writer.aclose()
    assert reply.status is None
    assert ("compressed answer refused" if kind == "gzip" else "larger than 1 MiB") in reply.text
    assert server.received[0].headers["accept-encoding"] == "identity"


def test_configured_urls_outside_allowed_hosts_get_no_credentials() -> None:
    writer = _writer("http://127.0.0.1:8008", allowed_hosts=["10.0.0.0/8"])
    assert writer.urls == ()
    meta = _writer("http://169.254.169.254:80")
    assert meta.urls == ()
    ok = _writer("http://127.0.0.1:8008", allowed_hosts=["127.0.0.0/8"])
    assert ok.urls == ("http://127.0.0.1:8008",)

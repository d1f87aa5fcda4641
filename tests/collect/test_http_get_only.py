"""The read path's HTTP client: GET only, no credentials, TLS verification on by default."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from pgtop_ha.collect.http import (
    GetOnlyClient,
    GetOnlyTransport,
    Login,
    ReadOnlyViolation,
    strip_userinfo,
)


def _recording() -> tuple[list[httpx.Request], httpx.MockTransport]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True})

    return seen, httpx.MockTransport(handler)


async def test_get_passes_without_credentials() -> None:
    seen, transport = _recording()
    client = GetOnlyClient(timeout=1, transport=transport)
    try:
        resp = await client.get("http://user:secret@127.0.0.1:1/patroni")
    finally:
        await client.aclose()
    assert resp.status_code == 200
    assert seen[0].method == "GET"
    assert "authorization" not in seen[0].headers
    assert "secret" not in str(seen[0].url)


@pytest.mark.parametrize("verb", ["post", "put", "patch", "delete", "request", "send", "stream"])
async def test_other_verbs_do_not_exist(verb: str) -> None:
    client = GetOnlyClient(timeout=1, transport=_recording()[1])
    try:
        with pytest.raises(ReadOnlyViolation):
            getattr(client, verb)
    finally:
        await client.aclose()


@pytest.mark.parametrize("method", ["POST", "PATCH", "DELETE", "PUT", "OPTIONS"])
async def test_transport_refuses_other_methods(method: str) -> None:
    seen, inner = _recording()
    # Even a plain httpx client built on this transport cannot write.
    async with httpx.AsyncClient(transport=GetOnlyTransport(inner)) as raw:
        with pytest.raises(ReadOnlyViolation, match=method):
            await raw.request(method, "http://127.0.0.1:1/switchover")
        with pytest.raises(ReadOnlyViolation, match="no credentials"):
            await raw.get("http://127.0.0.1:1/x", auth=("patroni", "pw"))
    assert seen == []


def test_strip_userinfo() -> None:
    assert strip_userinfo("http://a:b@h:1/p") == "http://h:1/p"
    assert strip_userinfo("http://h:1/p") == "http://h:1/p"


async def test_a_stats_login_goes_to_its_own_page_and_nowhere_else() -> None:
    # HAProxy's `stats auth`: the one credential the read path sends, to the origin configured.
    seen, transport = _recording()
    login = Login("http://127.0.0.1:7000/stats", "reader", SecretStr("pw-7000"))
    assert "pw-7000" not in repr(login)
    client = GetOnlyClient(timeout=1, transport=transport, login=login)
    try:
        await client.get("http://127.0.0.1:7000/stats;csv")
        await client.get("http://127.0.0.1:7001/stats;csv")  # another port: another origin
        await client.get("https://127.0.0.1:7000/stats;csv")  # another scheme
        await client.get("http://localhost:7000/stats;csv")  # another host name
    finally:
        await client.aclose()
    assert seen[0].headers["authorization"] == "Basic cmVhZGVyOnB3LTcwMDA="  # reader:pw-7000
    assert ["authorization" in r.headers for r in seen] == [True, False, False, False]
    # The transport under it refuses the login for any other origin, whoever builds the request.
    async with httpx.AsyncClient(transport=GetOnlyTransport(_recording()[1], login.origin())) as raw:
        await raw.get("http://127.0.0.1:7000/stats", auth=("reader", "pw-7000"))
        with pytest.raises(ReadOnlyViolation, match="no credentials"):
            await raw.get("http://127.0.0.1:8008/patroni", auth=("reader", "pw-7000"))

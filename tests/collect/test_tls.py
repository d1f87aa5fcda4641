"""One TLS configuration (collect/tls.py) for the read and the write path, checked end to end.

Certificates come from the openssl command: a private CA, a server certificate for 127.0.0.1 and a
client certificate, so mutual TLS is tried for real against an https fake on loopback.
"""

from __future__ import annotations

import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from pgtop_ha.actions.patroni_writer import PatroniWriter
from pgtop_ha.cli import main
from pgtop_ha.collect.http import GetOnlyClient
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.tls import context_for, context_maker, ssl_context
from pgtop_ha.collect.transport import CLIENT_CERT_HINT
from pgtop_ha.errors import ConfigError
from pgtop_ha.settings import Settings
from tests.hostile.fakes import FakeServer, fake_server, json_answer
from tests.support.pki import PKI

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

OWN = b'{"state": "running", "role": "primary"}'


@pytest.fixture
async def mtls_server(pki: PKI) -> AsyncIterator[FakeServer]:
    """An https fake that demands a client certificate signed by the test CA."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca))
    ctx.load_cert_chain(str(pki.server_cert), str(pki.server_key))
    ctx.verify_mode = ssl.CERT_REQUIRED
    async with fake_server({"/patroni": json_answer(OWN)}, tls=ctx) as server:
        yield server


# -- building the context -----------------------------------------------------------------------


def test_system_store_by_default_and_the_ca_file_instead(pki: PKI) -> None:
    default = ssl_context(None, None, None, True)
    assert (default.verify_mode, default.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert default.cert_store_stats()["x509_ca"] == ssl.create_default_context().cert_store_stats()["x509_ca"]
    private = ssl_context(pki.ca, None, None, True)
    assert private.cert_store_stats()["x509_ca"] == 1  # only the CA given
    off = ssl_context(None, None, None, False)
    assert (off.verify_mode, off.check_hostname) == (ssl.CERT_NONE, False)


def _bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    garbage = tmp / "garbage.pem"
    garbage.write_bytes(b"\x00\x01not a certificate at all\n")
    broken = tmp / "broken.pem"
    broken.write_text("-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n")
    huge = tmp / "huge.pem"
    with huge.open("wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse
    return {
        "missing": (tmp / "nope.pem", "no such file"),
        "directory": (tmp, "not a regular file"),
        "dev-zero": (Path("/dev/zero"), "not a regular file"),
        "not-pem": (garbage, "not a PEM CA bundle"),
        "broken-pem": (broken, "not a PEM CA bundle"),
        "huge": (huge, "over 4 MiB"),
    }


@pytest.mark.parametrize("case", ["missing", "directory", "dev-zero", "not-pem", "broken-pem", "huge"])
def test_unusable_ca_file_is_one_line_naming_the_setting(tmp_path: Path, case: str) -> None:
    path, why = _bad_files(tmp_path)[case]
    with pytest.raises(ConfigError) as caught:
        ssl_context(path, None, None, True, section="patroni")
    message = str(caught.value)
    assert message.startswith(f"patroni.ca_file {path}: {why}")
    assert "\n" not in message and "patroni.ca_file" in message.split(";")[-1]


def test_client_certificate_problems(pki: PKI, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^haproxy\.certfile .*: no such file"):
        ssl_context(None, tmp_path / "nope.pem", pki.client_key, True, section="haproxy")
    with pytest.raises(ConfigError, match=r"^haproxy\.keyfile .*: not a PEM private key"):
        ssl_context(None, pki.client_cert, pki.ca, True, section="haproxy")
    with pytest.raises(ConfigError, match=r"^haproxy\.keyfile .*: the key is encrypted"):
        ssl_context(None, pki.client_cert, pki.encrypted_key, True, section="haproxy")
    with pytest.raises(ConfigError, match=r"^haproxy\.certfile .*cannot load the client certificate"):
        ssl_context(None, pki.client_cert, pki.other_key, True, section="haproxy")
    # Key and certificate in one file, as many deployments keep them.
    both = tmp_path / "both.pem"
    both.write_bytes(pki.client_cert.read_bytes() + pki.client_key.read_bytes())
    assert ssl_context(pki.ca, both, None, True).verify_mode == ssl.CERT_REQUIRED


def test_every_user_of_tls_settings_reports_them(pki: PKI, tmp_path: Path) -> None:
    bad = tmp_path / "nope.pem"
    with pytest.raises(ConfigError, match=r"^haproxy\.ca_file "):
        Poller.from_settings(Settings(haproxy={"url": "https://127.0.0.1:1/stats", "ca_file": bad}))
    with pytest.raises(ConfigError, match=r"^patroni\.ca_file "):
        Poller.from_settings(Settings(patroni={"urls": ("https://127.0.0.1:1",), "ca_file": bad}))
    with pytest.raises(ConfigError, match=r"^patroni\.certfile "):
        PatroniWriter.from_settings(Settings(patroni={"urls": ("https://127.0.0.1:1",), "certfile": bad}))


def test_cli_prints_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[patroni]\nurls = ["https://127.0.0.1:1"]\nca_file = "{tmp_path / "ca.txt"}"\n')
    (tmp_path / "ca.txt").write_text("hello\n")
    assert main(["--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"pgtop-ha: patroni.ca_file {tmp_path / 'ca.txt'}: not a PEM CA bundle")


# -- the same configuration on both paths ---------------------------------------------------------


def _settings(server: FakeServer, pki: PKI, *, client_cert: bool = True, ca: bool = True) -> Settings:
    tls: dict[str, object] = {"urls": (server.url,), "timeout": 2.0}
    if ca:
        tls["ca_file"] = pki.ca
    if client_cert:
        tls |= {"certfile": pki.client_cert, "keyfile": pki.client_key}
    return Settings(patroni=tls)


async def test_read_and_write_paths_share_the_tls_settings(mtls_server: FakeServer, pki: PKI) -> None:
    settings = _settings(mtls_server, pki)
    read = GetOnlyClient(timeout=2, verify=context_for("patroni", settings.patroni))
    try:
        assert (await read.get(f"{mtls_server.url}/patroni")).json()["role"] == "primary"
    finally:
        await read.aclose()
    writer = PatroniWriter.from_settings(settings)
    try:
        reply = await writer.get_json("/patroni")
    finally:
        await writer.aclose()
    assert (reply.status, reply.data) == (200, {"state": "running", "role": "primary"})
    assert len(mtls_server.received) == 2


@pytest.mark.parametrize(
    ("client_cert", "ca", "read_why", "write_why"),
    [
        (True, False, "certificate verify failed", "certificate verify failed"),
        (False, True, CLIENT_CERT_HINT, CLIENT_CERT_HINT),
    ],
    ids=["system-store-does-not-know-the-ca", "no-client-certificate"],
)
async def test_both_paths_fail_alike_without_the_settings(
    mtls_server: FakeServer, pki: PKI, client_cert: bool, ca: bool, read_why: str, write_why: str
) -> None:
    settings = _settings(mtls_server, pki, client_cert=client_cert, ca=ca)
    read = GetOnlyClient(timeout=2, verify=context_for("patroni", settings.patroni))
    try:
        with pytest.raises(httpx.TransportError) as caught:
            await read.get(f"{mtls_server.url}/patroni")
    finally:
        await read.aclose()
    assert read_why in str(caught.value)
    writer = PatroniWriter.from_settings(settings)
    try:
        reply = await writer.get_json("/patroni")
    finally:
        await writer.aclose()
    assert reply.status is None and write_why in reply.text
    assert mtls_server.received == []  # no request got through the handshake


async def test_system_store_is_loaded_at_the_first_https_request_and_verifies(
    mtls_server: FakeServer, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loading the CA store costs ~30 ms per context at launch (issue 10: first frame): a read
    # path without TLS files builds none until it meets https, then one, and it verifies.
    made: list[ssl.SSLContext] = []
    create = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        made.append(create(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    poller = Poller.from_settings(
        Settings(patroni={"urls": ("http://127.0.0.1:1",)}, haproxy={"url": "http://127.0.0.1:1/stats"})
    )
    await poller.aclose()
    assert made == []
    settings = _settings(mtls_server, pki, client_cert=False, ca=False)
    read = GetOnlyClient(timeout=2, verify=context_maker("patroni", settings.patroni))
    try:
        for _ in range(2):
            with pytest.raises(httpx.TransportError, match="certificate verify failed"):
                await read.get(f"{mtls_server.url}/patroni")
    finally:
        await read.aclose()
    assert len(made) == 1 and made[0].verify_mode == ssl.CERT_REQUIRED
    # A CA bundle is read at once: a typo fails at start, not at the first request.
    with_ca = _settings(mtls_server, pki, client_cert=False)
    made.clear()
    assert isinstance(context_maker("patroni", with_ca.patroni), ssl.SSLContext) and len(made) == 1


async def test_write_path_ignores_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    async with (
        fake_server({"/": json_answer(b"{}")}) as proxy,
        fake_server({"/patroni": json_answer(OWN)}) as target,
    ):
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        # Control: a default httpx client does send this request to the proxy.
        async with httpx.AsyncClient() as honours_env:
            await honours_env.get(f"{target.url}/patroni")
        assert len(proxy.received) == 1
        writer = PatroniWriter.from_settings(
            Settings(patroni={"urls": (target.url,), "user": "patroni"}),
        )
        try:
            reply = await writer.get_json("/patroni")
        finally:
            await writer.aclose()
    assert reply.status == 200
    assert len(proxy.received) == 1 and len(target.received) == 1

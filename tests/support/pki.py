"""A private CA and what it signed, made with the openssl command once per session (EC keys: fast)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class PKI:
    """A private CA and what it signed."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    encrypted_key: Path
    other_key: Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    """Certificates made once per session (EC keys: fast)."""
    d = tmp_path_factory.mktemp("pki")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "2",
             "-subj", "/CN=pgtop-ha test CA")  # fmt: skip
    for name, san in (("server", "IP:127.0.0.1"), ("client", "DNS:pgtop-ha-client")):
        _openssl("req", "-x509", *ec, "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
                 "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.pem"), "-days", "2",
                 "-subj", f"/CN={name}", "-addext", f"subjectAltName={san}",
                 "-addext", "basicConstraints=critical,CA:FALSE")  # fmt: skip
    _openssl(
        "pkey", "-in", str(d / "client.key"), "-aes256", "-passout", "pass:x", "-out", str(d / "enc.key")
    )
    _openssl(
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-out",
        str(d / "other.key"),
    )
    return PKI(
        ca=d / "ca.pem",
        server_cert=d / "server.pem",
        server_key=d / "server.key",
        client_cert=d / "client.pem",
        client_key=d / "client.key",
        encrypted_key=d / "enc.key",
        other_key=d / "other.key",
    )

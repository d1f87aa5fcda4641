"""The lab's certificates (`lab up --tls`): a CA, and one server certificate for REST and PostgreSQL."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pgtop_ha.errors import UserError


def make_certificates(directory: Path, days: int) -> None:
    """A CA (10 years) and a 127.0.0.1 server certificate valid ``days`` days, made once."""
    if (directory / "server.crt").exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = directory / "ca.key", directory / "ca.crt"
    key, csr, crt = directory / "server.key", directory / "server.csr", directory / "server.crt"
    ext = directory / "server.ext"
    ext.write_text("subjectAltName = IP:127.0.0.1, DNS:localhost\n")
    steps = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key),
         "-out", str(ca_crt), "-days", "3650", "-subj", "/CN=pgtop-ha lab CA"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
         "-subj", "/CN=127.0.0.1"],
        ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key),
         "-CAcreateserial", "-out", str(crt), "-days", str(days), "-extfile", str(ext)],
    ]  # fmt: skip
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["failed"])[-1]
            raise UserError(
                f"openssl could not make the lab's certificates ({last}); apt-get install -y openssl"
            )

"""A peer certificate's end, read from its DER without a library; anything else is None."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pgtop_ha.collect.certificate import not_after
from pgtop_ha.judge.certs import cert_days_left, cert_level
from pgtop_ha.models.thresholds import Level


def test_the_end_of_a_real_certificate(tmp_path: Path) -> None:
    der = tmp_path / "c.der"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k"),
         "-outform", "DER", "-out", str(der), "-days", "5", "-subj", "/CN=127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    end = not_after(der.read_bytes())
    assert end is not None
    now = datetime.now(UTC)
    assert timedelta(days=4, hours=23) < end - now <= timedelta(days=5)
    assert cert_level(cert_days_left(end, now)) is Level.WARN
    assert cert_level(cert_days_left(end, now + timedelta(days=3))) is Level.CRIT
    assert cert_level(cert_days_left(end, now - timedelta(days=20))) is Level.OK


def test_what_is_no_certificate_is_none() -> None:
    assert not_after(None) is None
    assert not_after(b"") is None
    assert not_after(b"\x30\x82\xff\xff") is None  # a length past the end
    assert not_after(b"\x30\x03\x02\x01\x01") is None  # no validity
    assert cert_level(None) is Level.OK

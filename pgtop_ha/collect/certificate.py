"""A peer certificate's end of validity, read from the DER the TLS handshake gave (no library)."""

from __future__ import annotations

from datetime import UTC, datetime


def _element(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at ``at``; ValueError if cut."""
    tag, first = data[at], data[at + 1]
    at += 2
    if first & 0x80:
        size = first & 0x7F
        if not 0 < size <= 4:
            raise ValueError("DER length")
        length = int.from_bytes(data[at : at + size], "big")
        at += size
    else:
        length = first
    if at + length > len(data):
        raise ValueError("DER cut short")
    return tag, at, at + length


def not_after(der: bytes | None) -> datetime | None:
    """When an X.509 certificate stops being valid (UTC); None when it cannot be read."""
    if not der:
        return None
    try:
        _, cert, _ = _element(der, 0)  # Certificate
        _, tbs, tbs_end = _element(der, cert)  # TBSCertificate
        at = tbs
        tag, _, end = _element(der, at)
        if tag == 0xA0:  # [0] version, optional
            at = end
        for _ in range(3):  # serialNumber, signature, issuer
            _, _, at = _element(der, at)
        tag, validity, _ = _element(der, at)
        _, _, after_start = _element(der, validity)  # notBefore
        tag, start, end = _element(der, after_start)  # notAfter
        if end > tbs_end:
            return None
        text = der[start:end].decode("ascii")
    except (ValueError, IndexError, UnicodeDecodeError):
        return None
    formats = {0x17: "%y%m%d%H%M%SZ", 0x18: "%Y%m%d%H%M%SZ"}  # UTCTime, GeneralizedTime
    try:
        return datetime.strptime(text, formats[tag]).replace(tzinfo=UTC)
    except (KeyError, ValueError):
        return None

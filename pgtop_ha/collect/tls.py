"""One TLS configuration for the read and the write path: system store, CA file, client certificate.

A missing, unreadable, oversized or non-PEM file is a ConfigError naming the setting, and an
encrypted key is refused rather than letting OpenSSL prompt on the terminal.
"""

from __future__ import annotations

import functools
import ssl
from pathlib import Path

from pgtop_ha.collect.transport import Verify
from pgtop_ha.errors import ConfigError
from pgtop_ha.settings import TLSSettings

# Far above any real CA bundle (Debian's whole store is ~220 KB), far below a memory problem.
_MAX_PEM_BYTES = 4 * 1024 * 1024


def _read_pem(setting: str, path: Path, what: str, markers: tuple[bytes, ...]) -> bytes:
    fix = f"give a PEM {what} or remove {setting}"
    try:
        if not path.is_file():
            gone = "no such file" if not path.exists() else "not a regular file"
            raise ConfigError(f"{setting} {path}: {gone}; {fix}")
        if path.stat().st_size > _MAX_PEM_BYTES:
            raise ConfigError(f"{setting} {path}: over {_MAX_PEM_BYTES // 2**20} MiB, not a {what}; {fix}")
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{setting} {path}: {exc.strerror or exc}; {fix}") from None
    if not any(marker in data for marker in markers):
        raise ConfigError(f"{setting} {path}: not a PEM {what} (no '-----BEGIN' block); {fix}")
    return data


def _no_pass_phrase() -> bytes:
    # Called by OpenSSL only for an encrypted key; an empty phrase makes it fail instead of
    # prompting on the terminal the console is drawing on.
    return b""


def ssl_context(
    ca_file: Path | None,
    certfile: Path | None,
    keyfile: Path | None,
    verify: bool,
    *,
    section: str = "tls",
) -> ssl.SSLContext:
    """A client SSLContext: system store (or ``ca_file``), client cert when given; ConfigError if unusable."""
    if ca_file is None:
        ctx = ssl.create_default_context()
    else:
        ca_path = ca_file.expanduser()
        setting = f"{section}.ca_file"
        pem = _read_pem(setting, ca_path, "CA bundle", (b"-----BEGIN CERTIFICATE-----",))
        try:  # this CA instead of the system store
            ctx = ssl.create_default_context(cadata=pem.decode("ascii", "replace"))
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(
                f"{setting} {ca_path}: not a PEM CA bundle ({getattr(exc, 'reason', None) or exc}); "
                f"give a PEM CA bundle or remove {setting}"
            ) from None
    if certfile is not None:
        cert_path = certfile.expanduser()
        key_path = keyfile.expanduser() if keyfile is not None else None
        _read_pem(f"{section}.certfile", cert_path, "certificate", (b"-----BEGIN CERTIFICATE-----",))
        key_setting = f"{section}.keyfile" if key_path is not None else f"{section}.certfile"
        key_pem = _read_pem(key_setting, key_path or cert_path, "private key", (b"PRIVATE KEY-----",))
        if b"ENCRYPTED" in key_pem:
            raise ConfigError(
                f"{key_setting} {key_path or cert_path}: the key is encrypted; give an unencrypted key "
                "(readable only by you) since the console cannot ask for a pass phrase"
            )
        try:
            ctx.load_cert_chain(str(cert_path), str(key_path) if key_path else None, _no_pass_phrase)
        except (ssl.SSLError, OSError) as exc:
            shown = f"{cert_path}" + (f" / {section}.keyfile {key_path}" if key_path else "")
            raise ConfigError(
                f"{section}.certfile {shown}: cannot load the client certificate "
                f"({getattr(exc, 'reason', None) or exc}); check the key matches the certificate"
            ) from None
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def context_for(section: str, tls: TLSSettings) -> ssl.SSLContext:
    """ssl_context from a settings section (``patroni`` or ``haproxy``), errors naming its keys."""
    return ssl_context(tls.ca_file, tls.certfile, tls.keyfile, tls.verify, section=section)


def context_maker(section: str, tls: TLSSettings) -> Verify:
    """context_for at the first https request, or now when the section names a file to check."""
    if tls.ca_file is None and tls.certfile is None:
        # The system store, verified or not: nothing the user gave can be wrong, so nothing to
        # fail closed on at start (keyfile alone is refused by the settings).
        return functools.partial(context_for, section, tls)
    # A CA bundle or client certificate is checked at start: a typo is a ConfigError then,
    # not a failed request later.
    return context_for(section, tls)

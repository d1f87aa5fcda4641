"""The lab's generated passwords: made once, kept in files only, never printed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from pgtop_ha.lab.layout import (
    APP_USER,
    MONITOR_USER,
    OPERATOR_USER,
    REPLICATION_USER,
    REST_USER,
    SUPERUSER,
    Layout,
)

PCP = "pcp"  # pgpool-II's PCP user (`lab up --with pgpool`)
ROLES = (SUPERUSER, REPLICATION_USER, MONITOR_USER, OPERATOR_USER, REST_USER, PCP, APP_USER)


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """A SCRAM-SHA-256 verifier, so SQL never carries the password itself."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def ensure(layout: Layout) -> dict[str, str]:
    """Load the lab's passwords, generating them on first use (files mode 0600)."""
    layout.secrets_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    store = layout.secrets_dir / "passwords.json"
    try:
        passwords: dict[str, str] = json.loads(store.read_text())
    except (OSError, ValueError):
        passwords = {}
    if not isinstance(passwords, dict) or any(role not in passwords for role in ROLES):
        # First use, or a store from before a role was added: keep what exists, add the rest.
        known = passwords if isinstance(passwords, dict) else {}
        passwords = {role: known.get(role) or secrets.token_urlsafe(18) for role in ROLES}
        _write_private(store, json.dumps(passwords))
    _write_private(layout.rest_password_file, passwords[REST_USER] + "\n")
    _write_private(layout.pgpass, pgpass_text(passwords))
    return passwords


def pgpass_text(passwords: dict[str, str]) -> str:
    """A .pgpass body for every PostgreSQL role of the lab, any host and port."""
    roles = (SUPERUSER, REPLICATION_USER, MONITOR_USER, OPERATOR_USER, APP_USER)
    return "".join(f"*:*:*:{role}:{passwords[role]}\n" for role in roles) + (
        f"*:*:replication:{REPLICATION_USER}:{passwords[REPLICATION_USER]}\n"
    )

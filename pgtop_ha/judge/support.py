"""The PostgreSQL and Patroni versions pgtop-ha is proven on, and the warning for any other."""

from __future__ import annotations

import re

POSTGRES = (14, 15, 16, 17, 18)
PATRONI = ("3.3", "4.0", "4.1")


def postgres_unsupported(server_version: int | None) -> str | None:
    """Why this server_version_num is outside the supported range (None: supported or unknown)."""
    if server_version is None or server_version // 10000 in POSTGRES:
        return None
    major = server_version // 10000
    return f"PostgreSQL {major} is outside the supported {POSTGRES[0]}-{POSTGRES[-1]}: views may differ"


def patroni_unsupported(version: str | None) -> str | None:
    """Why this Patroni version is outside the supported range (None: supported or not read)."""
    if version == "unknown":
        return "Patroni sent a version that does not parse: unknown, so unsupported; fields may differ"
    match = re.match(r"(\d+)\.(\d+)", version or "")
    if version is None or match is None or f"{match[1]}.{match[2]}" in PATRONI:
        return None
    return f"Patroni {version[:20]} is outside the supported {PATRONI[0]}-{PATRONI[-1]}: fields may differ"

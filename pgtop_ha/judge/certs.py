"""TLS certificates the console's handshakes read, graded by the days they have left."""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level

CERT_WARN_DAYS = 14  # a certificate that expires sooner is WARN (as cnpg's "Expires Soon" is a week)
CERT_CRIT_DAYS = 3


def cert_days_left(not_after: datetime | None, now: datetime) -> float | None:
    """Days until a certificate ends (negative once it has); None when not read (no TLS)."""
    return None if not_after is None else (not_after - now).total_seconds() / 86400


def cert_level(days: float | None) -> Level:
    """A certificate's days left graded: WARN under CERT_WARN_DAYS, CRIT under CERT_CRIT_DAYS."""
    if days is None or days >= CERT_WARN_DAYS:
        return Level.OK
    return Level.CRIT if days < CERT_CRIT_DAYS else Level.WARN


def member_certs(snapshot: ClusterSnapshot, name: str) -> list[tuple[str, datetime]]:
    """A member's certificates read from the console's handshakes: (which, its end)."""
    m, n = snapshot.member(name), snapshot.node(name)
    out = []
    if m is not None and m.rest_cert_not_after is not None:
        out.append(("REST", m.rest_cert_not_after))
    if n is not None and n.cert_not_after is not None:
        out.append(("PostgreSQL", n.cert_not_after))
    return out

"""Patroni's member roles: the one home of which role names mean leader and synchronous standby.

/cluster says ``leader`` (``standby_leader`` in a standby cluster) where a member's own /patroni
says ``primary`` (3.x) or ``master`` (2.x); every "is this the leader?" asks here.
"""

from __future__ import annotations

LEADER_ROLES = frozenset({"leader", "standby_leader", "primary", "master"})
SYNC_ROLES = frozenset({"sync_standby", "quorum_standby"})
STANDBY_LEADER = "standby_leader"
SHORT_NAMES = {"sync_standby": "sync", "quorum_standby": "quorum", "standby_leader": "sb-leader"}


def is_leader_role(role: str | None) -> bool:
    """Whether Patroni's role name means leader (primary, or standby leader of a standby cluster)."""
    return (role or "").lower() in LEADER_ROLES


def is_standby_leader(role: str | None) -> bool:
    """Whether the role is a standby cluster's leader (which is in recovery by design)."""
    return (role or "").lower() == STANDBY_LEADER


def is_sync_role(role: str | None) -> bool:
    """Whether Patroni's role name means a synchronous (or quorum) standby."""
    return (role or "").lower() in SYNC_ROLES


def short_name(role: str | None) -> str:
    """The role shortened for a narrow column (``sync``, ``quorum``, ``sb-leader``), else as is."""
    if role is None:
        return "?"
    return SHORT_NAMES.get(role, role)

"""The write path: the only code that changes a cluster. Built only when not read-only."""

from __future__ import annotations

from pgtop_ha.actions.audit import AuditLog, default_audit_path
from pgtop_ha.actions.operator import Actions
from pgtop_ha.actions.patroni_writer import PatroniWriter
from pgtop_ha.actions.reset_scopes import ResetChoice, ResetScope, ResetTarget, reset_choices
from pgtop_ha.actions.results import ActionResult, AuditEntry, NodeResult, Progress
from pgtop_ha.actions.stats_reset import StatsResetter
from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.settings import Settings

__all__ = [
    "ActionResult",
    "Actions",
    "AuditEntry",
    "NodeResult",
    "Progress",
    "ResetChoice",
    "ResetScope",
    "ResetTarget",
    "build_actions",
    "reset_choices",
]


def build_actions(settings: Settings, clock: Clock = system_clock) -> Actions:
    """The operator's actions for ``settings``: Patroni writer, stats resetter, audit log."""
    audit = AuditLog(settings.audit_log or default_audit_path(), cluster=settings.cluster_name)
    return Actions(
        PatroniWriter.from_settings(settings),
        StatsResetter(settings),
        audit,
        clock,
        patroni_hosts=HostPolicy.of(settings.patroni.allowed_hosts),
        postgres_hosts=HostPolicy.of(settings.postgres.allowed_hosts),
        allow_cleartext_password=settings.postgres.allow_cleartext_password,
    )

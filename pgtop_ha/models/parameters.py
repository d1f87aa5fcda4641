"""Parameters across members: pending restarts, settings that differ, Patroni's /config (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from pgtop_ha.models.snapshot import ClusterSnapshot, Setting

# Set per member by Patroni or by the node's own role: a difference here is not drift.
PER_NODE = frozenset(
    {
        "config_file", "data_directory", "hba_file", "ident_file", "external_pid_file",
        "listen_addresses", "port", "primary_conninfo", "primary_slot_name", "cluster_name",
        "recovery_target_timeline", "restore_command", "archive_cleanup_command",
        "recovery_min_apply_delay", "hot_standby", "transaction_read_only", "default_transaction_read_only",
        "application_name", "synchronous_standby_names", "in_hot_standby",
    }
)  # fmt: skip
DEFAULT = "(default)"


@dataclass(frozen=True)
class Parameter:
    """One parameter across the members: each node's value, what /config says, and why it shows."""

    name: str
    values: dict[str, str]  # node -> value with unit ("(default)" where the node does not set it)
    context: str | None
    pending: tuple[str, ...]  # nodes where it waits for a restart
    pending_values: dict[str, str]  # node -> the value it would take (superuser reads only)
    patroni: str | None  # Patroni's /config postgresql.parameters value
    drift: bool  # the members' values differ


def shown_value(s: Setting) -> str:
    """The setting as PostgreSQL shows it: value with its unit (8kB units as given)."""
    if s.setting is None:
        return "?"
    return f"{s.setting}{s.unit}" if s.unit and s.unit not in ("8kB", "16MB") else s.setting


def parameters(snapshot: ClusterSnapshot, *, everything: bool = False) -> list[Parameter]:
    """Pending-restart parameters and those that differ between members (``everything``: all read).

    Only nodes whose settings were read count (the pane asks for them while it is on screen).
    """
    read = {n.name: {s.name: s for s in n.parameters} for n in snapshot.nodes if n.reachable and n.parameters}
    config = snapshot.patroni_config.parameters if snapshot.patroni_config else {}
    names = sorted({name for settings in read.values() for name in settings})
    out = []
    for name in names:
        values = {node: shown_value(s[name]) if name in s else DEFAULT for node, s in read.items()}
        rows = [s[name] for s in read.values() if name in s]
        pending = tuple(node for node, s in read.items() if name in s and s[name].pending_restart)
        pending_values = {
            node: s[name].file_setting or "?"
            for node, s in read.items()
            if name in s and s[name].pending_restart
        }
        drift = name not in PER_NODE and len(read) > 1 and len(set(values.values())) > 1
        if not (everything or pending or drift):
            continue
        context = next((r.context for r in rows if r.context), None)
        out.append(Parameter(name, values, context, pending, pending_values, config.get(name), drift))
    return out


def restart_needed(context: str | None) -> str:
    """What applying a change of this context takes, in a DBA's words."""
    return {
        "postmaster": "restart",
        "sighup": "reload",
        "superuser-backend": "new session",
        "backend": "new session",
        "superuser": "SET (superuser)",
        "user": "SET",
        "internal": "initdb",
    }.get(context or "", context or "?")

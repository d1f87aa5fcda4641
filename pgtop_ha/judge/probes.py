"""What applications see through each probe endpoint, graded: the same mark for the pane and `check`."""

from __future__ import annotations

from pgtop_ha.judge.rules import PROBE_READS, PROBE_WRITES
from pgtop_ha.models.leader import is_leader
from pgtop_ha.models.snapshot import ClusterSnapshot, Probe
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark


def probe_mark(snapshot: ClusterSnapshot, probe: Probe) -> Mark | None:
    """CRIT when writes fail or land on a non-leader; WARN when a read endpoint fails or reads the primary."""
    writes = probe.kind in ("writer", "write")
    rule = PROBE_WRITES.id if writes else PROBE_READS.id
    where = f"{probe.endpoint} ({probe.kind})"
    if not probe.ok:
        if probe.last_ok_at is None and probe.errors == 0:
            # Not probed yet: not graded. Refused (allowed_hosts) says why, at WARN.
            return Mark(rule, Level.WARN, f"probe {where}: {probe.error}") if probe.error else None
        level = Level.CRIT if writes else Level.WARN
        return Mark(rule, level, f"probe {where} fails: {probe.first_error or probe.error or '?'}")
    member = snapshot.member(probe.answered_by) if probe.answered_by else None
    # A writer answered by a replica: writes would fail. Reads served by the primary are fine,
    # but not what the pool is for.
    wrong = bool(
        probe.in_recovery or (member is not None and snapshot.cluster.leader and not is_leader(member))
    )
    if writes and wrong:
        return Mark(rule, Level.CRIT, f"probe {where} answered by a replica: writes fail")
    if probe.kind == "reader" and probe.in_recovery is False and len(snapshot.members) > 1:
        return Mark(rule, Level.WARN, f"probe {where} answered by the primary")
    return None

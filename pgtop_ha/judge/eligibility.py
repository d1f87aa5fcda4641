"""Who may take over from the leader: switchover and failover candidates judged from a snapshot.

Patroni refuses a candidate that is tagged nofailover, not streaming/running, on another timeline
or lagging beyond maximum_lag_on_failover; checking the same things first turns a bare
"412 no good candidates" into a reason per member before anything is asked.
"""

from __future__ import annotations

from typing import Any, Literal

from pgtop_ha.judge.checks import leader_of
from pgtop_ha.judge.tags import DEFAULT_MAXIMUM_LAG_ON_FAILOVER, GOOD_STATES, mib, no_failover, tag_true
from pgtop_ha.models.base import Frozen
from pgtop_ha.models.roles import is_sync_role
from pgtop_ha.models.snapshot import ClusterSnapshot, Member


class Candidate(Frozen):
    """One member judged as a candidate: blocking reasons and non-blocking warnings."""

    name: str
    role: str | None = None
    state: str | None = None
    timeline: int | None = None
    lag_bytes: int | None = None
    eligible: bool
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


class TakeoverPlan(Frozen):
    """A switchover (leader present) or failover (no leader) and everyone who could take over."""

    kind: Literal["switchover", "failover"]
    cluster: str | None = None
    leader: str | None = None
    leader_timeline: int | None = None
    maximum_lag_bytes: int = DEFAULT_MAXIMUM_LAG_ON_FAILOVER
    paused: bool = False
    scheduled: dict[str, Any] | None = None
    candidates: tuple[Candidate, ...] = ()
    default: str | None = None
    notes: tuple[str, ...] = ()

    def candidate(self, name: str) -> Candidate | None:
        """The judged member called ``name``, if any."""
        return next((c for c in self.candidates if c.name == name), None)

    @property
    def eligible(self) -> tuple[Candidate, ...]:
        """The candidates Patroni should accept."""
        return tuple(c for c in self.candidates if c.eligible)


def find_leader(snapshot: ClusterSnapshot) -> Member | None:
    """The member Patroni calls leader (checks.leader_of: none while two claim it), if listed."""
    name = leader_of(snapshot)
    return snapshot.member(name) if name is not None else None


def _judge(
    member: Member,
    snapshot: ClusterSnapshot,
    leader: Member | None,
    max_lag: int,
    sync_mode: bool,
) -> Candidate:
    reasons: list[str] = []
    warnings: list[str] = []
    state = member.state
    if member.unlisted:
        # Patroni promotes only members it lists: one shown by its configured URL, or one that
        # left, is no candidate whatever its own /patroni says.
        reasons.append("not in Patroni's /cluster: Patroni will not promote it")
    elif state not in GOOD_STATES:
        reasons.append(f"state is {state or 'unknown'}, not streaming/running")
    if no_failover(member.tags):
        reasons.append("tagged nofailover (or failover_priority 0): Patroni will not promote it")
    if not member.reachable and not member.unlisted:  # unlisted: the reason above says enough
        why = f": {member.error}" if member.error else ""
        reasons.append(f"Patroni REST API not reachable{why}")
    leader_tl = leader.timeline if leader is not None else None
    if leader_tl is not None and member.timeline is not None and member.timeline != leader_tl:
        reasons.append(f"on timeline {member.timeline}, the leader is on {leader_tl}")
    elif member.timeline is None:
        warnings.append("timeline unknown")
    if member.lag_bytes is None:
        warnings.append("lag unknown")
    elif member.lag_bytes > max_lag:
        reasons.append(f"lag {mib(member.lag_bytes)} exceeds maximum_lag_on_failover {mib(max_lag)}")
    if sync_mode and leader is not None and not is_sync_role(member.role):
        reasons.append("synchronous mode: only the sync standby may take over")
    if tag_true(member.tags, "nosync"):
        warnings.append("tagged nosync: never a synchronous standby")
    if member.pending_restart:
        warnings.append("pending restart")
    node = snapshot.node(member.name)
    if node is not None and not node.reachable:
        warnings.append("PostgreSQL not reachable from the console")
    elif node is not None and node.in_recovery is False and leader is not None:
        warnings.append("PostgreSQL is not in recovery")
    return Candidate(
        name=member.name,
        role=member.role,
        state=state,
        timeline=member.timeline,
        lag_bytes=member.lag_bytes,
        eligible=not reasons,
        reasons=tuple(reasons),
        warnings=tuple(warnings),
    )


def _health_key(c: Candidate) -> tuple[int, int, int, int, str]:
    # Healthiest first: eligible, a sync standby, fewest warnings, least lag, then by name.
    lag = c.lag_bytes if c.lag_bytes is not None else 2**62
    return (
        0 if c.eligible else 1,
        0 if is_sync_role(c.role) else 1,
        len(c.warnings),
        lag,
        c.name,
    )


def takeover_plan(snapshot: ClusterSnapshot) -> TakeoverPlan:
    """Judge every non-leader member; the default candidate is the healthiest eligible one."""
    leader = find_leader(snapshot)
    config = snapshot.patroni_config
    max_lag = DEFAULT_MAXIMUM_LAG_ON_FAILOVER
    if config is not None and config.maximum_lag_on_failover is not None:
        max_lag = config.maximum_lag_on_failover
    paused = bool(
        snapshot.cluster.pause
        or (config is not None and config.pause)
        or any(m.pause for m in snapshot.members)
    )
    sync_mode = any(is_sync_role(m.role) for m in snapshot.members)
    others = [m for m in snapshot.members if leader is None or m.name != leader.name]
    judged = sorted((_judge(m, snapshot, leader, max_lag, sync_mode) for m in others), key=_health_key)
    notes: list[str] = []
    if leader is None:
        notes.append("no leader: only a failover to a named candidate is possible")
    if paused:
        notes.append("maintenance mode (pause): a candidate must be named; no scheduling")
    scheduled = snapshot.cluster.scheduled_switchover
    if scheduled:
        at = scheduled.get("at") or scheduled.get("scheduled_at") or "?"
        notes.append(f"a switchover is already scheduled for {at}: cancel it first")
    if not any(c.eligible for c in judged):
        notes.append("no eligible candidate: Patroni would answer 412")
    default = next((c.name for c in judged if c.eligible), None)
    return TakeoverPlan(
        kind="switchover" if leader is not None else "failover",
        cluster=snapshot.cluster.name,
        leader=leader.name if leader is not None else None,
        leader_timeline=leader.timeline if leader is not None else None,
        maximum_lag_bytes=max_lag,
        paused=paused,
        scheduled=scheduled,
        candidates=tuple(judged),
        default=default,
        notes=tuple(notes),
    )

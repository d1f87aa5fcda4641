"""If the leader died now: the leader race as Patroni's ha.py runs it, for the version the members run.

A member races unless nofailover, past maximum_lag_on_failover, outside the synchronous set while
synchronous mode is active, or (check_timeline) behind; it gives way to a rival further ahead, and at
the same position to a higher failover_priority (4.0: not in sync mode but among quorum voters).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pgtop_ha.judge.rules import FAILOVER_DATA_AT_RISK, FAILOVER_NO_CANDIDATE, FAILOVER_WRITES_BLOCKED
from pgtop_ha.judge.tags import (
    DEFAULT_MAXIMUM_LAG_ON_FAILOVER,
    GOOD_STATES,
    failover_priority,
    mib,
    no_failover,
)
from pgtop_ha.models.derive import slot_keepers
from pgtop_ha.models.forecast import Contender, FailoverForecast
from pgtop_ha.models.roles import is_leader_role, is_sync_role
from pgtop_ha.models.snapshot import ClusterSnapshot, Member, NodeSnapshot, Replication
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.verdict import Mark

DEFAULT_TTL_S = 30  # Patroni's defaults, where /config does not say
DEFAULT_LOOP_WAIT_S = 10
PROMOTE_S = 2.0  # pg_ctl promote and the first checkpoint-free write on the new leader
DEFAULT_RISE = 2  # HAProxy's default rise
HAPROXY_INTER_S = 2.0  # HAProxy's default check interval: its stats do not give inter


def _policy(snapshot: ClusterSnapshot) -> str:
    """Whose rules apply: the oldest Patroni among the members (any of them may win the race)."""
    found = []
    for m in snapshot.members:
        if m.patroni_version and (v := re.match(r"(\d+)\.(\d+)", m.patroni_version)):
            found.append((int(v[1]), int(v[2])))
    major, minor = min(found, default=(4, 1))
    if (major, minor) < (4, 0):
        return "Patroni 3.3"
    return "Patroni 4.0" if (major, minor) < (4, 1) else "Patroni 4.1"


def _priority(m: Member) -> int:
    found = failover_priority(m.tags)
    return 1 if found is None else found  # Patroni's default


def _position(m: Member, node: NodeSnapshot | None, leader_lsn: int | None) -> int | None:
    """A member's WAL position as Patroni compares them: its PostgreSQL's, else the leader's less its lag."""
    if node is not None and node.reachable and node.in_recovery:
        known = [lsn for lsn in (node.receive_lsn, node.replay_lsn) if lsn is not None]
        if known:
            return max(known)
    if leader_lsn is not None and m.lag_bytes is not None:
        return leader_lsn - m.lag_bytes
    return None


_SYNC_NAMES = re.compile(r"^\s*(?:(ANY|FIRST)\s+)?(?:(\d+)\s*\()?\s*(.*?)\s*\)?\s*$", re.IGNORECASE)


def commit_waits_for(names: str | None) -> str | None:
    """synchronous_standby_names in words: who must confirm a commit (None: not read)."""
    if names is None:
        return None
    if not names.strip():
        return "none: commits are asynchronous"
    m = _SYNC_NAMES.match(names)
    if m is None:
        return names
    method, count, listed = m[1], m[2], [n.strip().strip('"') for n in m[3].split(",") if n.strip()]
    n = int(count) if count else 1
    who = "any standby" if listed == ["*"] else ", ".join(listed)
    if (method or "").upper() == "ANY":
        return f"any {n} of {who} (quorum)"
    return f"the first {n} of {who}" if len(listed) > 1 else who


def _walsender(snapshot: ClusterSnapshot, leader: str | None, name: str) -> Replication | None:
    """The leader's walsender to ``name``, where the leader was read."""
    node = snapshot.node(leader) if leader else None
    if node is None or not node.reachable:
        return None
    return next((r for r in node.replication if r.application_name == name), None)


def _rise(snapshot: ClusterSnapshot) -> int:
    """HAProxy's rise: checks a new leader needs before it is UP (the largest of its servers')."""
    return max(
        (s.check_rise for s in snapshot.haproxy.servers if s.check_rise is not None), default=DEFAULT_RISE
    )


def _outage(snapshot: ClusterSnapshot) -> tuple[float, float]:
    """The write outage if the leader's host died: its key expires, a replica's next loop promotes,
    then HAProxy's checks see the new leader ``rise`` times."""
    config = snapshot.patroni_config
    ttl = float((config.ttl if config else None) or DEFAULT_TTL_S)
    loop = float((config.loop_wait if config else None) or DEFAULT_LOOP_WAIT_S)
    checks = _rise(snapshot) * HAPROXY_INTER_S
    # The key was refreshed up to one loop before the death; a replica sees it gone within a loop.
    low = max(0.0, ttl - loop) + PROMOTE_S + max(0.0, checks - HAPROXY_INTER_S)
    return low, ttl + loop + PROMOTE_S + checks


PAST_OUTAGES = 5  # the past failovers' outages a forecast shows, the newest


def forecast(snapshot: ClusterSnapshot, past: Sequence[float] | None = None) -> FailoverForecast:
    """The race Patroni would run if the leader died now, every other member's reason, what is at risk.

    ``past``: the write outages of the failovers the console timed on this cluster, oldest first.
    """
    config = snapshot.patroni_config
    leader = next((m for m in snapshot.members if is_leader_role(m.role)), None)
    max_lag = DEFAULT_MAXIMUM_LAG_ON_FAILOVER
    if config is not None and config.maximum_lag_on_failover is not None:
        max_lag = config.maximum_lag_on_failover
    policy = _policy(snapshot)
    sync_setting = (config.synchronous_mode if config else None) or "off"
    if sync_setting == "quorum" and policy == "Patroni 3.3":
        sync_setting = "off"  # 3.3 knows no quorum mode: parse_bool("quorum") reads as off
    quorum = sync_setting == "quorum"
    # Patroni's /sync key is not in /cluster: a member in a sync role says it holds names.
    sync_active = sync_setting != "off" and any(is_sync_role(m.role) for m in snapshot.members)
    mode = "quorum" if quorum else "synchronous" if sync_setting == "on" else "async"
    assumptions = [
        f"the leader's host dies (Patroni with it); {policy}'s rules, the oldest version among the members",
        "positions as read now: received or replayed LSN where PostgreSQL was read, else Patroni's lag",
        f"the write outage: Patroni's ttl and loop_wait, promotion, then HAProxy's rise at inter "
        f"{HAPROXY_INTER_S:g} s (its default: the stats do not give inter)",
    ]
    recent = tuple(past[-PAST_OUTAGES:]) if past is not None else None
    if recent:
        told = ", ".join(f"{s:.1f}" for s in recent)
        assumptions.append(f"this cluster's last failovers, timed by the console: writes stopped {told} s")
    if config is None:
        assumptions.append("Patroni's /config not read: its defaults (maximum_lag_on_failover 1 MiB, async)")
    if quorum:
        assumptions.append("quorum mode: the quorum members' votes are taken as given")
    leader_node = snapshot.node(leader.name) if leader else None
    leader_lsn = leader_node.current_lsn if leader_node is not None and leader_node.reachable else None
    cluster_tl = leader.timeline if leader else None
    check_timeline = bool(config and config.check_timeline)
    pool = [m for m in snapshot.members if leader is None or m.name != leader.name]
    positions = {m.name: _position(m, snapshot.node(m.name), leader_lsn) for m in pool}
    ranks = positions
    if leader_lsn is None:
        # The leader's PostgreSQL not read: positions relative to it by Patroni's own lag, for all.
        ranks = {m.name: -m.lag_bytes if m.lag_bytes is not None else None for m in pool}
        assumptions.append("the leader's PostgreSQL not read: members compared by Patroni's lag")
    reasons: dict[str, str] = {}
    for m in pool:
        pos = ranks[m.name]
        if m.unlisted:
            reasons[m.name] = "not in Patroni's /cluster"
        elif not m.reachable:
            reasons[m.name] = "its Patroni does not answer the console: not counted"
        elif m.state not in GOOD_STATES:
            reasons[m.name] = f"state {m.state or 'unknown'}, not streaming or running"
        elif no_failover(m.tags):
            reasons[m.name] = "nofailover" if "failover_priority" not in m.tags else "failover_priority 0"
        elif sync_active and not quorum and not is_sync_role(m.role):
            reasons[m.name] = "not synchronous: only the synchronous standby may take over"
        elif m.lag_bytes is not None and m.lag_bytes > max_lag:
            reasons[m.name] = f"{mib(m.lag_bytes)} behind > {mib(max_lag)} maximum_lag_on_failover"
        elif check_timeline and cluster_tl is not None and (m.timeline or 0) < cluster_tl:
            reasons[m.name] = (
                f"timeline {m.timeline or '?'} behind the cluster's {cluster_tl} (check_timeline)"
            )
        elif pos is None:
            reasons[m.name] = "its WAL position is not known"
    racers = [m for m in pool if m.name not in reasons]
    # Who a racer compares itself with: members that may promote (in quorum mode, the voters too),
    # and while synchronous mode is active only the synchronous set.
    rivals = [
        m
        for m in pool
        if m.reachable
        and (not no_failover(m.tags) or (quorum and is_sync_role(m.role)))
        and (not sync_active or is_sync_role(m.role))
        and ranks[m.name] is not None
    ]

    def priority_counts(rival: Member) -> bool:
        """Whether a rival at the same position with a higher failover_priority wins the tie."""
        voter = quorum and sync_active and is_sync_role(rival.role)
        if policy == "Patroni 4.0":
            return not sync_active or voter
        if policy == "Patroni 4.1":
            return not (quorum and sync_active) or voter
        return True

    for m in racers:
        mine = ranks[m.name]
        assert mine is not None
        for other in rivals:
            theirs = ranks[other.name]
            if other.name == m.name or theirs is None:
                continue
            if theirs > mine:
                reasons[m.name] = f"behind {other.name} by {mib(theirs - mine)}"
                break
            if theirs == mine and priority_counts(other) and _priority(other) > _priority(m):
                reasons[m.name] = f"same position as {other.name}, lower failover_priority"
                break
    winners = tuple(m.name for m in racers if m.name not in reasons)
    contenders = []
    for m in pool:
        sender = _walsender(snapshot, leader.name if leader else None, m.name)
        contenders.append(
            Contender(
                name=m.name,
                eligible=m in racers,
                wins=m.name in winners,
                reason=reasons.get(m.name, ""),
                position=positions[m.name],
                priority=_priority(m),
                sync_state=sender.sync_state if sender else None,
                # WAL the leader has written that it has not flushed: its walsender's flush lag.
                at_risk_bytes=sender.flush_lag_bytes if sender else None,
                at_risk_s=sender.flush_lag_s if sender else None,
            )
        )
    contenders.sort(key=lambda c: (not c.wins, not c.eligible, c.name))
    names = (
        leader_node.synchronous_standby_names if leader_node is not None and leader_node.reachable else None
    )
    outage = _outage(snapshot) if leader else None
    return FailoverForecast(
        leader=leader.name if leader else None,
        leader_position=leader_lsn,
        policy=policy,
        mode=mode,
        strict=bool(config and config.synchronous_mode_strict),
        standby_names=names,
        commit_waits_for=commit_waits_for(names),
        maximum_lag_bytes=max_lag,
        winners=winners,
        contenders=tuple(contenders),
        slots_lost=_slots_lost(snapshot, leader_node),
        outage_min_s=outage[0] if outage else None,
        outage_max_s=outage[1] if outage else None,
        past_outages_s=recent,
        assumptions=tuple(assumptions),
    )


def _slots_lost(snapshot: ClusterSnapshot, leader_node: NodeSnapshot | None) -> tuple[str, ...]:
    """Logical slots on the leader that no standby keeps: not Patroni-permanent, not synced (PG 17+)."""
    if leader_node is None or not leader_node.reachable:
        return ()
    kept = set(slot_keepers(snapshot))
    return tuple(
        s.slot_name for s in leader_node.slots if s.slot_type == "logical" and s.slot_name not in kept
    )


def forecast_marks(snapshot: ClusterSnapshot, f: FailoverForecast, t: Thresholds) -> tuple[Mark, ...]:
    """The forecast's verdicts: no candidate, data at risk, writes that block (strict, no sync standby)."""
    if f.leader is None or snapshot.cluster.pause:
        return ()  # no leader, or paused: other rules say so, and nobody is promoted automatically
    out: list[Mark] = []
    if not f.winners:
        out.append(
            Mark(FAILOVER_NO_CANDIDATE.id, Level.CRIT, "if the leader died now, no member would take over")
        )
    for c in f.contenders:
        if c.wins and (level := t.lag_bytes.grade(c.at_risk_bytes)) > Level.OK:
            text = f"if the leader died now, {c.name} would take over {mib(c.at_risk_bytes or 0)} short"
            out.append(Mark(FAILOVER_DATA_AT_RISK.id, min(level, Level.WARN), text))
    streaming_sync = any(is_sync_role(m.role) and m.state in GOOD_STATES for m in snapshot.members)
    if f.mode != "async" and f.strict and not streaming_sync:
        text = "synchronous_mode_strict and no synchronous standby: writes block"
        out.append(Mark(FAILOVER_WRITES_BLOCKED.id, Level.CRIT, text))
    return tuple(out)


def explain(f: FailoverForecast, chosen: str) -> tuple[str, ...]:
    """Why ``chosen`` won, and each other member's reason as the forecast stood; a surprise said plainly."""
    others = [c for c in f.contenders if c.name != chosen]
    if chosen in f.winners:
        rivals = [w for w in f.winners if w != chosen]
        if rivals:
            why = f"tied with {', '.join(rivals)} and took the leader key first"
        elif len([c for c in f.contenders if c.eligible]) == 1:
            why = "the only member that could race"
        else:
            why = "the furthest WAL position among those that could race"
        lines = [f"{chosen} won: {why}"]
    else:
        named = ", ".join(f.winners) or "nobody"
        mine = next((c.reason for c in f.contenders if c.name == chosen), "")
        lines = [
            f"Patroni promoted {chosen}, the forecast named {named}"
            + (f" ({chosen}: {mine})" if mine else "")
        ]
    lines += [f"{c.name}: {c.reason}" for c in others if c.reason and c.name not in f.winners]
    return tuple(lines)

"""The failover stopwatch: from the first sign writes fail to a cluster that serves them again.

It times the election, the write outage as a client sees it (checks.writes_ok), the lag at
promotion, the replicas' return and the permanent slots; an outage without a leader change (a
primary restarted in place) is a record of its own. The write probe's outage is the client's truth.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from datetime import datetime

from pgtop_ha.engines.events import listed
from pgtop_ha.judge.checks import writes_ok
from pgtop_ha.judge.forecast import explain, forecast
from pgtop_ha.models.base import Frozen
from pgtop_ha.models.derive import permanent_slots
from pgtop_ha.models.event import Event
from pgtop_ha.models.forecast import FailoverForecast
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.numbers import binary_size
from pgtop_ha.models.snapshot import ClusterSnapshot, Member, Probe
from pgtop_ha.models.sources import node_state, unreachable

# Patroni's word for a member whose PostgreSQL it stopped (`stop-patroni`, a shutdown): its key stays
# listed until its ttl, and "replicas catching up…" waited for it after a failover had settled.
STOPPED = frozenset({"stopped", "stopping"})
GIVE_UP_S = 600.0  # a report still incomplete this long after the loss is closed as it is
TRAIL = 600  # the primary's (time, LSN) readings kept: what dates the WAL a failover lost


class FailoverReport(Frozen):
    """The stopwatch of one leader loss: what a failure-test report needs, in seconds and bytes."""

    lost_at: datetime
    old_leader: str | None = None
    new_leader: str | None = None
    elected_at: datetime | None = None
    election_s: float | None = None
    write_outage_from: datetime | None = None
    write_outage_to: datetime | None = None
    write_outage_s: float | None = None
    # Each end of the outage as a poll saw it lies after the poll before: the outage began after
    # the last poll that saw writes succeed, and ended after the last that saw them fail.
    write_outage_from_after: datetime | None = None
    write_outage_to_after: datetime | None = None
    lag_at_promotion_bytes: int | None = None
    # The same loss in time: from when the old leader's WAL passed the fork to its last LSN seen, on
    # the console's own readings of it (its writes after its last poll are not counted: at least).
    lag_at_promotion_s: float | None = None
    replicas_streaming_at: datetime | None = None
    replicas_streaming_s: float | None = None
    permanent_slots_ok: bool | None = None
    done: bool = False
    old_timeline: int | None = None
    new_timeline: int | None = None
    old_leader_lsn: int | None = None  # the old leader's last LSN seen while it was primary
    promotion_lsn: int | None = None  # where the new leader's timeline forked (or its last replay)
    missing_slots: tuple[str, ...] = ()  # permanent logical slots absent on the new leader
    ended_at: datetime | None = None  # when the report was complete (or given up)
    # When the old leader stopped answering (REST or PostgreSQL unreachable, not merely slow), if it
    # did before Patroni released its key: a crash is felt at once, the key expires a TTL later.
    leader_down_at: datetime | None = None
    down_to_elected_s: float | None = None
    # What a client saw: the write probe's failed writes overlapping this failover, from the first
    # failed write to the first successful one after (to is None while writes still fail).
    client_write_outage_from: datetime | None = None
    client_write_outage_to: datetime | None = None
    client_write_outage_s: float | None = None
    # No leader change: writes failed and came back on the same leader (a restart in place).
    leader_kept: bool = False
    # The forecast as it stood at the last poll before the leader went silent (judge/forecast.py).
    forecast_winners: tuple[str, ...] = ()
    forecast_right: bool | None = None  # the member Patroni promoted was among them
    election: tuple[str, ...] = ()  # why the winner won, then each other member's reason
    # How the old leader came back as a replica: "reinit" (Patroni copied it anew), "pg_rewind" (it
    # had WAL past the fork and follows now), "followed" (nothing to rewind); None: not yet.
    old_leader_back: str | None = None
    old_leader_back_at: datetime | None = None


class LeaderSilence(Frozen):
    """The leader Patroni still names has stopped answering: a failover may be starting."""

    leader: str
    since: datetime  # the first poll that found its REST or PostgreSQL unreachable (not merely slow)
    rest_since: datetime  # the first poll that found its REST unreachable (always, while silent)
    pg_down: bool  # its PostgreSQL unreachable too
    # Patroni's ttl: the key lapses at most this long after its last renewal, which came before
    # its REST stopped answering (unless only this console lost it: then the key stays).
    ttl_s: int | None = None
    paused: bool = False  # maintenance mode: Patroni fails nothing over
    writes_down_since: datetime | None = None  # HAProxy routes writes to no leader since then


def _stopped(m: Member) -> bool:
    """Listed by /cluster as a member whose PostgreSQL Patroni stopped: no replica to wait for."""
    return listed(m) and m.state in STOPPED


def _secs(a: datetime, b: datetime) -> float:
    return round(max(0.0, (b - a).total_seconds()), 3)


def _fmt(seconds: float | None, running: bool) -> str:
    if seconds is not None:
        return f"{seconds:.1f} s"
    return "running" if running else "-"


def summary(r: FailoverReport) -> str:
    """The report in one line, for the Events pane and the banner."""
    live = not r.done
    if r.leader_kept:
        client = ""
        if r.client_write_outage_s is not None:
            client = f", client writes down {r.client_write_outage_s:.1f} s"
        return (
            f"write outage {_fmt(r.write_outage_s, live)} on {r.old_leader}{client},"
            " no leader change (restarted in place or routed away and back)"
        )
    outage = _fmt(r.write_outage_s, live and r.write_outage_from is not None)
    if r.write_outage_from is None:
        outage = "not seen" if r.done else "-"
    slots = {True: "ok", False: "missing " + ", ".join(r.missing_slots), None: "?"}[r.permanent_slots_ok]
    lag = binary_size(r.lag_at_promotion_bytes) if r.lag_at_promotion_bytes is not None else "?"
    if r.lag_at_promotion_bytes and r.lag_at_promotion_s is not None:
        lag += f" (its last {r.lag_at_promotion_s:.1f} s of writes or more)"
    down = ""
    if r.leader_down_at is not None:
        down = f" ({_fmt(r.down_to_elected_s, live)} after {r.old_leader} stopped answering)"
    client = ""
    if r.client_write_outage_from is not None:
        client = f", client writes down {_fmt(r.client_write_outage_s, True)}"
    return (
        f"failover {r.old_leader} → {r.new_leader or '…'}: election {_fmt(r.election_s, live)}{down}, "
        f"write outage {outage}{client}, lag at promotion {lag}, "
        f"replicas streaming {_fmt(r.replicas_streaming_s, live)}, permanent slots {slots}"
    )


Tagged = tuple[str | None, Event]  # (tag, event): one tag is one event, updated in place


class Stopwatch:
    """Watches leader changes in consecutive snapshots and times each failover."""

    def __init__(self, pools: Pools, *, give_up_s: float = GIVE_UP_S) -> None:
        self.pools = pools
        self.give_up_s = give_up_s
        self._seen = False
        self._leader: str | None = None
        self._primary_lsn: dict[str, int] = {}
        self._trail: dict[str, deque[tuple[datetime, int]]] = {}
        self._last: ClusterSnapshot | None = None  # the snapshot before: where writes went since
        self._ok_at: datetime | None = None  # the last poll that saw writes succeed
        self._outage_after: datetime | None = None  # the running outage began after this
        self._back_after: datetime | None = None  # the outage that ended now ended after this
        self._standby_lsn: dict[str, int] = {}
        self._timeline: int | None = None
        self._outage_since: datetime | None = None
        self._reports: list[FailoverReport] = []
        self._haproxy_seen = False
        self._leader_down_since: datetime | None = None
        self._silence: LeaderSilence | None = None
        self._failover_slots: frozenset[str] = frozenset()  # on the primary before a loss (17+)
        self._answering: ClusterSnapshot | None = None  # the last snapshot the leader answered in
        self._forecast: FailoverForecast | None = None  # judged from it when the leader is lost
        self._reinit_seen = False  # the old leader of the running failover was being copied anew

    def silence(self) -> LeaderSilence | None:
        """The leader's silence before Patroni names another (None once a failover is timed)."""
        return self._silence if self.running() is None else None

    def reports(self) -> list[FailoverReport]:
        """Every leader loss so far, oldest first; the last may still be running."""
        return list(self._reports)

    def running(self) -> FailoverReport | None:
        """The failover being timed now, if any."""
        last = self._reports[-1] if self._reports else None
        return last if last is not None and not last.done else None

    def _tag(self) -> str:
        return f"failover:{len(self._reports)}"

    def observe(self, snap: ClusterSnapshot) -> list[Tagged]:
        """Fold one snapshot in; returns new or updated events, each with its tag."""
        out: list[Tagged] = []
        ok = writes_ok(snap, self.pools, self._last)
        before = self._last.taken_at if self._last is not None else None
        self._last = snap
        back_at = _answered_at(snap, self._leader, before) if ok else snap.taken_at
        ended: datetime | None = None
        if ok is False and self._outage_since is None:
            self._outage_since = self._first_sign(snap)
            # A failed read sent before the last good poll was assembled: the start is exact enough.
            ok_at = self._ok_at
            self._outage_after = min(ok_at, self._outage_since) if ok_at is not None else None
        elif ok is True and self._outage_since is not None:
            ended, self._outage_since = self._outage_since, None
            self._back_after = before
        if ok is True:
            self._ok_at = back_at
        known = snap.cluster.reachable
        leader = snap.cluster.leader
        self._watch_leader(snap)
        if known:
            if self._seen and self._leader is not None and leader != self._leader:
                out.extend(self._start(snap, self._leader))
                ended = None  # an outage that ended now began before this loss
            self._leader, self._seen = leader, True
        run = self.running()
        if run is not None:
            self._haproxy_seen = self._haproxy_seen or ok is not None
            updated, milestones = self._advance(run, snap, ok, ended, back_at)
            if updated != run:
                self._reports[-1] = updated
                out.extend(milestones)
                out.append((self._tag(), self._summary_event(updated)))
            if updated.write_outage_to == back_at:
                ended = None
        if ended is not None and self._seen:
            out.extend(self._kept(ended, back_at))
        out.extend(self._client_writes(snap))
        self._remember(snap)
        return out

    def _client_writes(self, snap: ClusterSnapshot) -> list[Tagged]:
        """Fold the write probe's outage overlapping the last failover into its report."""
        if not self._reports:
            return []
        r = self._reports[-1]
        span = client_outage(r, [p for p in snap.probes if p.kind == "write"], snap.taken_at)
        if span is None or span == (r.client_write_outage_from, r.client_write_outage_to):
            return []
        start, end = span
        secs = _secs(start, end) if end is not None else None
        updated = r.model_copy(
            update={
                "client_write_outage_from": start,
                "client_write_outage_to": end,
                "client_write_outage_s": secs,
            }
        )
        self._reports[-1] = updated
        out: list[Tagged] = []
        if end is not None:
            text = f"client writes down {secs:.1f} s: the write probe writes again"
            out.append((None, _event(end, text, 1, r.new_leader)))
        out.append((self._tag(), self._summary_event(updated)))
        return out

    def _first_sign(self, snap: ClusterSnapshot) -> datetime:
        """When writes began to fail: a down leader's first failed read was sent before it failed."""
        n = snap.node(self._leader) if self._leader is not None else None
        sent = n.failing_since if n is not None and not n.reachable else None
        return min(snap.taken_at, sent) if sent is not None else snap.taken_at

    def _watch_leader(self, snap: ClusterSnapshot) -> None:
        """Remember since when the current leader has stopped answering (None while it answers)."""
        if self._leader is None or self.running() is not None:
            return
        m, n = snap.member(self._leader), snap.node(self._leader)
        down, _ = unreachable(m, n)
        rest, pg = "REST" in down, "PG" in down
        if not (rest or pg):
            self._leader_down_since = self._silence = None
            return
        if self._leader_down_since is None:
            self._leader_down_since = snap.taken_at
        if not rest:
            # Its Patroni answers: it restarts PostgreSQL in place and keeps the key (a problem
            # line says so); only a silent Patroni lets the key lapse and a failover follow.
            self._silence = None
            return
        config = snap.patroni_config
        self._silence = LeaderSilence(
            leader=self._leader,
            since=self._leader_down_since,
            rest_since=self._silence.rest_since if self._silence is not None else snap.taken_at,
            pg_down=pg,
            ttl_s=config.ttl if config is not None else None,
            paused=bool(snap.cluster.pause or (config is not None and config.pause)),
            writes_down_since=self._outage_since,
        )

    # -- steps --------------------------------------------------------------------------------

    def _kept(self, since: datetime, at: datetime) -> list[Tagged]:
        """A write outage that ended at ``at`` without a leader change: a record of its own."""
        lasted = _secs(since, at)
        report = FailoverReport(
            lost_at=since,
            old_leader=self._leader,
            new_leader=self._leader,
            write_outage_from=since,
            write_outage_to=at,
            write_outage_s=lasted,
            write_outage_from_after=self._outage_after,
            write_outage_to_after=self._back_after,
            leader_kept=True,
            done=True,
            ended_at=at,
        )
        self._reports.append(report)
        return [_writes_back(at, lasted, self._leader), (self._tag(), self._summary_event(report))]

    def _start(self, snap: ClusterSnapshot, old: str) -> list[Tagged]:
        out: list[Tagged] = []
        last = self.running()
        if last is not None:
            # A second loss before the first settled: close the first with what it has.
            closed = last.model_copy(update={"done": True, "ended_at": snap.taken_at})
            self._reports[-1] = closed
            out.append((self._tag(), self._summary_event(closed)))
        # The race as it stood at the last poll before the leader went silent: judged once, now.
        past = past_outages(self._reports)
        self._forecast = forecast(self._answering, past) if self._answering is not None else None
        report = FailoverReport(
            lost_at=snap.taken_at,
            old_leader=old,
            old_timeline=self._timeline,
            old_leader_lsn=self._primary_lsn.get(old),
            write_outage_from=self._outage_since,
            write_outage_from_after=self._outage_after if self._outage_since is not None else None,
            leader_down_at=self._leader_down_since,
            forecast_winners=self._forecast.winners if self._forecast is not None else (),
        )
        self._leader_down_since = self._silence = None
        self._reinit_seen = False
        self._reports.append(report)
        self._haproxy_seen = False
        out.append((self._tag(), self._summary_event(report)))
        return out

    def _advance(
        self,
        r: FailoverReport,
        snap: ClusterSnapshot,
        ok: bool | None,
        ended: datetime | None,
        back_at: datetime,
    ) -> tuple[FailoverReport, list[Tagged]]:
        at = snap.taken_at
        upd: dict[str, object] = {}
        out: list[Tagged] = []
        leader = snap.cluster.leader if snap.cluster.reachable else None
        # The write outage: the one running at the loss, or the first one after it.
        if r.write_outage_from is None and self._outage_since is not None:
            upd.update(write_outage_from=self._outage_since, write_outage_from_after=self._outage_after)
        outage_from = upd.get("write_outage_from", r.write_outage_from)
        if ended is not None and r.write_outage_to is None and outage_from == ended:
            assert isinstance(outage_from, datetime)
            lasted = _secs(outage_from, back_at)
            upd.update(write_outage_to=back_at, write_outage_s=lasted, write_outage_to_after=self._back_after)
            out.append(_writes_back(back_at, lasted, leader))
        if r.new_leader is None and leader is not None:
            upd.update(new_leader=leader, elected_at=at, election_s=_secs(r.lost_at, at))
            key_s = _secs(r.lost_at, at)
            text = f"new leader {leader} {key_s:.1f} s after {r.old_leader} lost the leader key"
            if r.leader_down_at is not None:
                down_s = _secs(r.leader_down_at, at)
                upd["down_to_elected_s"] = down_s
                # From the old leader's silence first: the time the cluster had no leader to write to.
                text = (
                    f"new leader {leader} {down_s:.1f} s after {r.old_leader} stopped answering,"
                    f" {key_s:.1f} s after it lost the leader key"
                )
            out.append((None, _event(at, text, 1, leader)))
            if self._forecast is not None and self._forecast.leader == r.old_leader:
                lines = explain(self._forecast, leader)
                right = leader in self._forecast.winners
                upd.update(election=lines, forecast_right=right)
                out.append((None, _event(at, "election: " + "; ".join(lines), 0 if right else 1, leader)))
        new = upd.get("new_leader", r.new_leader)
        if isinstance(new, str):
            upd.update(self._lag(r, snap, new))
            slots = self._slots(snap, new)
            if slots is not None and slots != (r.permanent_slots_ok, r.missing_slots):
                good, missing = slots
                upd.update(permanent_slots_ok=good, missing_slots=missing)
                text = (
                    f"every permanent logical slot exists on the new leader {new}"
                    if good
                    else f"permanent logical slots missing on the new leader {new}: {', '.join(missing)}"
                )
                out.append((None, _event(at, text, 0 if good else 2, new)))
            tl = self._new_timeline(snap, new, r.old_timeline)
            if tl is not None and r.new_timeline is None:
                upd["new_timeline"] = tl
            if tl is not None and r.replicas_streaming_at is None and self._streaming(snap, new, tl):
                upd.update(replicas_streaming_at=at, replicas_streaming_s=_secs(r.lost_at, at))
                since = _secs(r.lost_at, at)
                text = f"all replicas stream from {new} {since:.1f} s after the loss (timeline {tl})"
                stopped = sorted(m.name for m in snap.members if m.name != new and _stopped(m))
                if stopped:
                    text += f"; {', '.join(stopped)} stopped"
                out.append((None, _event(at, text, 0, new)))
        if isinstance(new, str) and r.old_leader and r.old_leader != new and r.old_leader_back is None:
            back = self._old_leader_back(snap, r, upd)
            if back is not None:
                upd.update(old_leader_back=back, old_leader_back_at=at)
                how = "nothing to rewind" if back == "followed" else f"by {back}"
                since = _secs(r.lost_at, at)
                text = f"{r.old_leader} back as a replica of {new}, {how}, {since:.1f} s after the loss"
                out.append((None, _event(at, text, 0, r.old_leader)))
        r2 = r.model_copy(update=upd) if upd else r
        complete = (
            r2.new_leader is not None
            and r2.replicas_streaming_at is not None
            and (
                r2.permanent_slots_ok is not None
                or not (permanent_slots(snap, logical_only=True) or self._failover_slots)
            )
            and (
                not self._haproxy_seen
                or r2.write_outage_to is not None
                or (r2.write_outage_from is None and ok is True)
            )
        )
        if complete or _secs(r.lost_at, at) >= self.give_up_s:
            r2 = r2.model_copy(update={"done": True, "ended_at": at})
        return r2, out

    def _lag(self, r: FailoverReport, snap: ClusterSnapshot, new: str) -> dict[str, object]:
        if r.old_leader_lsn is None:
            return {}
        if new == r.old_leader:
            return {} if r.lag_at_promotion_bytes is not None else {"lag_at_promotion_bytes": 0}
        # Where the old timeline ended in the new leader's history is exact; its last replay
        # position seen before the promotion is the fallback until /history says.
        fork = next(
            (h.lsn for h in snap.history or () if h.timeline == r.old_timeline and h.lsn is not None), None
        )
        if fork is None and r.promotion_lsn is not None:
            return {}  # keep what is known (a later /history read may be cut short)
        lsn = fork if fork is not None else self._standby_lsn.get(new)
        if lsn is None or lsn == r.promotion_lsn:
            return {}
        lost = max(0, r.old_leader_lsn - lsn)
        upd: dict[str, object] = {"promotion_lsn": lsn, "lag_at_promotion_bytes": lost}
        if r.old_leader is not None:
            trail = self._trail.get(r.old_leader, ())
            upd["lag_at_promotion_s"] = lost_seconds(trail, lsn) if lost else 0.0
        return upd

    def _old_leader_back(
        self, snap: ClusterSnapshot, r: FailoverReport, upd: dict[str, object]
    ) -> str | None:
        """How the old leader rejoined, once it streams again on the new timeline; None until then."""
        old = r.old_leader
        assert old is not None
        m, n = snap.member(old), snap.node(old)
        if m is not None and m.state == "creating replica":
            self._reinit_seen = True
        tl = upd.get("new_timeline", r.new_timeline)
        if n is None or node_state(n) != "fresh" or not n.in_recovery or tl is None or n.timeline != tl:
            return None
        if not (m is not None and m.state == "streaming") and not (
            n.wal_receiver and n.wal_receiver.status == "streaming"
        ):
            return None
        if self._reinit_seen:
            return "reinit"
        lost = upd.get("lag_at_promotion_bytes", r.lag_at_promotion_bytes)
        # A primary that wrote past the fork can follow the new timeline only once rewound.
        return "pg_rewind" if isinstance(lost, int) and lost > 0 else "followed"

    def _slots(self, snap: ClusterSnapshot, new: str) -> tuple[bool, tuple[str, ...]] | None:
        # Kept by Patroni, or by PostgreSQL's own failover (the slots the old primary had).
        wanted = {*permanent_slots(snap, logical_only=True), *self._failover_slots}
        n = snap.node(new)
        if snap.patroni_config is None or n is None or node_state(n) != "fresh" or n.in_recovery is not False:
            return None
        have = {s.slot_name for s in n.slots}
        missing = tuple(sorted(s for s in wanted if s not in have))
        return not missing, missing

    def _new_timeline(self, snap: ClusterSnapshot, new: str, old: int | None) -> int | None:
        n, m = snap.node(new), snap.member(new)
        tl = None
        if n is not None and node_state(n) == "fresh" and n.in_recovery is False:
            tl = n.timeline
        if tl is None and m is not None:
            tl = m.timeline
        if tl is None or (old is not None and tl <= old and new != self._reports[-1].old_leader):
            return None
        return tl

    def _streaming(self, snap: ClusterSnapshot, new: str, tl: int) -> bool:
        for m in snap.members:
            if m.name == new or not listed(m) or _stopped(m):
                continue  # gone from /cluster (its key expired), or stopped: no replica to wait for
            n = snap.node(m.name)
            if n is None or node_state(n) != "fresh" or not n.in_recovery or n.timeline != tl:
                return False
            receiving = n.wal_receiver is not None and n.wal_receiver.status == "streaming"
            if not (receiving or m.state == "streaming"):
                return False
        return True

    def _remember(self, snap: ClusterSnapshot) -> None:
        timelines: list[int] = []
        for n in snap.nodes:
            if node_state(n) != "fresh":
                continue
            if n.in_recovery is False and n.current_lsn is not None:
                self._primary_lsn[n.name] = n.current_lsn
                trail = self._trail.setdefault(n.name, deque(maxlen=TRAIL))
                if not trail or trail[-1][1] != n.current_lsn:
                    trail.append((snap.taken_at, n.current_lsn))
            elif n.in_recovery:
                pos = [p for p in (n.receive_lsn, n.replay_lsn) if p is not None]
                if pos:
                    self._standby_lsn[n.name] = max(pos)
            if n.in_recovery is False and n.timeline is not None:
                timelines.append(n.timeline)
            if n.in_recovery is False and self.running() is None and "slots" not in n.unavailable:
                self._failover_slots = frozenset(s.slot_name for s in n.slots if s.failover)
        leader = snap.member(snap.cluster.leader) if snap.cluster.leader else None
        if leader is not None and leader.timeline is not None:
            timelines.append(leader.timeline)
        if self.running() is None and self._leader_down_since is None and leader is not None:
            self._answering = snap
        if timelines and self.running() is None:
            self._timeline = max(timelines)

    def _summary_event(self, r: FailoverReport) -> Event:
        severity = 2 if not r.done else (1 if r.permanent_slots_ok is False or r.leader_kept else 0)
        end = r.ended_at if r.done else None
        return Event(
            at=r.lost_at,
            kind="failover",
            node=r.new_leader or r.old_leader,
            text=summary(r),
            severity=severity,
            source="console",
            ended_at=end,
            duration_s=_secs(r.lost_at, end) if end is not None else None,
        )


def _answered_at(snap: ClusterSnapshot, leader: str | None, before: datetime | None) -> datetime:
    """When this snapshot's evidence that writes succeed arrived: the later of HAProxy's answer and
    the leader's PostgreSQL's (the snapshot itself is assembled once the slowest source answers).
    An answer kept from before the last snapshot (a slow source) is no evidence of now."""
    n = snap.node(snap.cluster.leader or leader or "")
    stamps = [n.last_ok_at if n is not None else None]
    if snap.haproxy.servers:
        stamps.append(snap.haproxy.last_ok_at)
    if None in stamps:
        return snap.taken_at
    latest = max(s for s in stamps if s is not None)
    if before is not None and latest <= before:
        return snap.taken_at
    return min(snap.taken_at, latest)


def past_outages(reports: Sequence[FailoverReport]) -> tuple[float, ...]:
    """The write outages of finished failovers (a leader change), oldest first: the client's where probed."""
    out = []
    for r in reports:
        if not r.done or r.leader_kept or r.new_leader in (None, r.old_leader):
            continue
        seconds = r.client_write_outage_s if r.client_write_outage_s is not None else r.write_outage_s
        if seconds is not None:
            out.append(seconds)
    return tuple(out)


def lost_seconds(trail: Sequence[tuple[datetime, int]], fork: int) -> float | None:
    """How long before its last reading a primary's WAL passed ``fork`` (None: not within the trail)."""
    if not trail or trail[-1][1] <= fork:
        return None
    last_at = trail[-1][0]
    for (t0, l0), (t1, l1) in zip(trail, list(trail)[1:], strict=False):
        if l0 <= fork < l1:
            # WAL between two readings is taken as written evenly between them.
            crossed = t0 + (t1 - t0) * ((fork - l0) / (l1 - l0))
            return _secs(crossed, last_at)
    return None


def client_outage(
    r: FailoverReport, probes: list[Probe], now: datetime
) -> tuple[datetime, datetime | None] | None:
    """The write probes' outage span overlapping ``r`` (end None while writes still fail), if any."""
    # The failover began when the first sign of it was seen, and lasts until its report closed.
    start = min(d for d in (r.lost_at, r.leader_down_at, r.write_outage_from) if d is not None)
    end = r.ended_at if r.done and r.ended_at is not None else now
    spans: list[tuple[datetime, datetime | None]] = []
    for p in probes:
        spans += [
            (o.started_at, o.ended_at) for o in p.outages if o.ended_at >= start and o.started_at <= end
        ]
        if p.errors and p.first_error_at is not None and p.first_error_at <= end:
            spans.append((p.first_error_at, None))  # writes still fail: counts up on the banner
    if not spans:
        return None
    ends = [e for _, e in spans]
    # Several runs of failures (writes flapping during the failover) read as one outage, first to last.
    last = None if None in ends else max(e for e in ends if e is not None)
    return min(s for s, _ in spans), last


def _writes_back(at: datetime, lasted: float, leader: str | None) -> Tagged:
    """The event that ends a write outage, with or without a leader change."""
    # Each figure comes early in its line: the overview gives an event ~58 columns at 80.
    text = f"write outage {lasted:.1f} s: HAProxy routes writes to the leader {leader} again"
    return None, _event(at, text, 1, leader)


def _event(at: datetime, text: str, severity: int, node: str | None) -> Event:
    return Event(at=at, kind="failover", node=node, text=text, severity=severity, source="console")

"""The incident timeline: events folded from consecutive snapshots, markers and actions. Pure.

Events are stamped when observed. A flip and flip back within the debounce window is one event
with its duration; flapping raises its ``count``. Checks join once past their grace, the stopwatch
keeps one event per outage. ``cadence()`` says how fast to poll.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pgtop_ha.engines.events import Fact, Key, carry, changes, describe, facts, unknown_scopes
from pgtop_ha.engines.stopwatch import FailoverReport, LeaderSilence, Stopwatch
from pgtop_ha.judge.checks import ROLE_GRACE_S, disagreements
from pgtop_ha.judge.serverlog import news_level
from pgtop_ha.models.event import Event
from pgtop_ha.models.haproxy import DEFAULT_POOLS, Pools
from pgtop_ha.models.serverlog import fatal_key
from pgtop_ha.models.snapshot import ClusterSnapshot, HistoryEntry
from pgtop_ha.models.sources import UNSETTLED_S, member_state, node_state, source_state
from pgtop_ha.models.verdict import Verdict

__all__ = ["ActiveCheck", "FailoverReport", "Timeline", "cadence"]

FAST_FACTOR = 4.0  # poll this many times faster while something is wrong
FASTEST_S = 0.2  # ...but never faster than this
# Events one snapshot may add: a /cluster of thousands of members, or a HAProxy page that changed
# whole, is one line past this, not thousands.
MAX_CHANGES = 200
MAX_LOG_EVENTS = 20  # a node's log lines made events per read; the rest are counted
# A log line said again (its numbers aside) within this long of its event's first is counted on
# that event: a crash loop's FATAL every few seconds is one line a minute, not hundreds pushing
# the rest out of a bounded timeline.
LOG_REPEAT_S = 60.0
PAST_SWITCHES = 10  # of Patroni's /history, told at start
CALM_AFTER_S = UNSETTLED_S  # a leader change keeps the fast cadence this long

EPISODES_SWEEP = 2048  # past this many remembered flips, the ended ones are swept
_ABSENT = ("<absent>",)  # the value of a fact a snapshot does not state


@dataclass(frozen=True)
class ActiveCheck:
    """A disagreement past its grace period, with when it was first seen."""

    check: Verdict
    since: datetime

    def lasted_s(self, now: datetime) -> float:
        """Seconds since it was first seen (grace included)."""
        return max(0.0, (now - self.since).total_seconds())


@dataclass
class _Episode:
    """The last change of one fact: its event, the values it went between, and when."""

    event_id: int
    before: Hashable
    after: Hashable
    started: datetime
    ended: datetime | None = None
    entered: datetime | None = None  # the latest entry into ``after`` (flapping re-enters it)


def _secs(a: datetime, b: datetime) -> float:
    return round(max(0.0, (b - a).total_seconds()), 3)


def _switch_text(entry: HistoryEntry) -> str:
    """One /history row as words: "timeline 3 → 4 (no recovery target specified; new leader node2)"."""
    said = [x for x in (entry.reason, f"new leader {entry.new_leader}" if entry.new_leader else "") if x]
    return f"timeline {entry.timeline} → {entry.timeline + 1}" + (f" ({'; '.join(said)})" if said else "")


def _when(stamp: str | None) -> datetime | None:
    """A /history timestamp (ISO 8601, with its offset) as an aware datetime; None when it is not one."""
    try:
        at = datetime.fromisoformat(stamp or "")
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


class Timeline:
    """Folds snapshots into events in observed order; markers and actions join the same list."""

    def __init__(
        self,
        debounce_s: float = 5.0,
        *,
        pools: Pools = DEFAULT_POOLS,
        role_grace_s: float = ROLE_GRACE_S,
        keep: int | None = None,
    ) -> None:
        self.debounce_s = debounce_s
        self.pools = pools
        self.role_grace_s = role_grace_s
        self._keep = keep
        self._prev: ClusterSnapshot | None = None
        self._facts: dict[Key, Fact] = {}
        self._scopes: set[str] = set()  # sources (Fact.scope) heard, of those still in the snapshot
        self._episodes: dict[Key, _Episode] = {}
        self._events: dict[int, Event] = {}
        self._next_id = 1
        self._tags: dict[str, int] = {}
        self._since: dict[str, datetime] = {}
        self._raw: list[Verdict] = []
        self._max_tl: int | None = None
        self._bump: tuple[int, int] | None = None  # (event id, old timeline) awaiting /history
        self._history_told = False  # the switches before the console ran, told once
        self._leader_changed_at: datetime | None = None
        self._changed_at: datetime | None = None  # when an event was last added or updated
        self._stopwatch = Stopwatch(pools)
        self._log_runs: dict[tuple[str, str], int] = {}  # (node, message sans numbers) → its event

    # -- folding snapshots ----------------------------------------------------------------------

    def observe(self, snap: ClusterSnapshot) -> list[Event]:
        """Fold one snapshot in; returns the events it added or updated (final versions)."""
        at = snap.taken_at
        touched: dict[int, None] = {}
        cur = facts(snap)
        cur.update(self._check_facts(snap))
        unknown = unknown_scopes(snap)
        if self._prev is None:
            # The first snapshot is the baseline, except a disagreement: it is news from the start.
            self._facts = {k: f for k, f in cur.items() if k[0] != "check"}
        answered = {f.scope for f in cur.values() if f.scope is not None} - unknown
        for key, fact in cur.items():
            if fact.scope in answered and fact.scope not in self._scopes and key not in self._facts:
                # A source heard for the first time (a member's PostgreSQL that answers late, a
                # member a console started after its Patroni stopped sees join): what it says
                # is where it starts. Its slots existed before; they were not "created" now.
                self._facts[key] = fact
        # Only sources still in the snapshot (answering or silent) are remembered: a bounded set
        # however many names a hostile /cluster makes up, and a member forgotten and back starts over.
        self._scopes = (self._scopes & unknown) | answered
        cur = carry(self._facts, cur, unknown)
        # A member Patroni stops listing takes its role and state with it: they were not seen
        # to end, so their open flips get no duration ("stopped — for 20.1 s" read as back).
        listed = {k[1] for k in cur if k[0] == "member"}
        left = frozenset(k[1] for k in self._facts if k[0] == "member" and k[1] not in listed)
        found = changes(self._facts, cur)
        for change in found[:MAX_CHANGES]:  # in story order: roles and leaders first
            self._change(change, at, touched, left)
        if len(found) > MAX_CHANGES:
            more = len(found) - MAX_CHANGES
            text = f"{more} more changes in this snapshot not listed (past {MAX_CHANGES} a cycle)"
            touched[self._add(Event(at=at, kind="summary", text=text, severity=1)).id] = None
        self._facts = cur
        if len(self._episodes) > EPISODES_SWEEP:
            self._sweep(at)
        self._timeline_bump(snap, touched)
        self._past_switches(snap, touched)
        self._server_logs(snap, touched)
        for tag, event in self._stopwatch.observe(snap):
            touched[self._tagged(tag, event).id] = None
        self._prev = snap
        if touched:
            self._changed_at = at
        return [self._events[i] for i in touched if i in self._events]

    def _sweep(self, at: datetime) -> None:
        """Forget flips no change can join: ended past the debounce window, then the oldest gone."""
        # One episode per key, for good: COPY and walsender pids over weeks, or a /cluster that
        # makes up member names each cycle. An open one whose key is gone would only give its
        # event a duration if the key came back; past the bound the oldest of those go first.
        kept = {
            key: ep
            for key, ep in self._episodes.items()
            if ep.ended is None or _secs(ep.ended, at) <= self.debounce_s
        }
        gone = sorted((key for key in kept if key not in self._facts), key=lambda k: kept[k].started)
        for key in gone[: max(0, len(kept) - EPISODES_SWEEP // 2)]:
            del kept[key]
        self._episodes = kept

    def _check_facts(self, snap: ClusterSnapshot) -> dict[Key, Fact]:
        at = snap.taken_at
        raw = disagreements(snap, self.pools, role_grace_s=self.role_grace_s)
        self._since = {c.key: self._since.get(c.key, at) for c in raw}
        self._raw = raw
        out: dict[Key, Fact] = {}
        for c in raw:
            if _secs(self._since[c.key], at) >= c.grace_s:
                fact = Fact(True, "check", "console", node=c.subject, label=c.text, severity=c.level)
                out[("check", c.key)] = fact
        return out

    def _change(
        self,
        change: tuple[Key, Fact | None, Fact | None],
        at: datetime,
        touched: dict[int, None],
        left: frozenset[str],
    ) -> None:
        key, b, a = change
        bv = _ABSENT if b is None else b.value
        av = _ABSENT if a is None else a.value
        if key == ("leader",) and b is not None and a is not None:
            self._leader_changed_at = at
        ep = self._episodes.get(key)
        back = ep is not None and ep.ended is None and (ep.before, ep.after) == (av, bv)
        if ep is not None and back and _secs(ep.entered or ep.started, at) <= self.debounce_s:
            # Flipped back within the window: one event with a duration, not two.
            ep.ended = at
            self._update(ep.event_id, touched, ended_at=at, duration_s=_secs(ep.started, at))
            return
        again = ep is not None and ep.ended is not None and (ep.before, ep.after) == (bv, av)
        if ep is not None and ep.ended is not None and again and _secs(ep.ended, at) <= self.debounce_s:
            # The same flip again soon after: the same event, counted, not a new one.
            ep.ended, ep.entered = None, at
            old = self._events.get(ep.event_id)
            count = (old.count if old is not None else 1) + 1
            self._update(ep.event_id, touched, ended_at=None, duration_s=None, count=count)
            return
        unseen = (a is None or a.value is None) and b is not None and b.node in left and key[0] != "member"
        if ep is not None and ep.ended is None and not unseen:
            ep.ended = at
            self._update(ep.event_id, touched, ended_at=at, duration_s=_secs(ep.started, at))
        event = describe(change, at)
        if event is None:
            self._episodes.pop(key, None)
            return
        started = at
        if key[0] == "check" and a is not None:
            started = self._since.get(key[1], at)
        added = self._add(event)
        touched[added.id] = None
        self._episodes[key] = _Episode(added.id, bv, av, started)

    def _timeline_bump(self, snap: ClusterSnapshot, touched: dict[int, None]) -> None:
        seen: list[tuple[int, str]] = [
            (n.timeline, "postgres")
            for n in snap.nodes
            if node_state(n) == "fresh" and n.timeline is not None
        ]
        if snap.cluster.reachable:
            seen += [(m.timeline, "patroni") for m in snap.members if m.timeline is not None]
        if not seen:
            return
        tl, source = max(seen)
        if self._max_tl is not None and tl > self._max_tl:
            event = Event(
                at=snap.taken_at,
                kind="timeline",
                text=f"timeline {self._max_tl} → {tl}",
                severity=1,
                source=source,
                node=snap.cluster.leader,
            )
            added = self._add(event)
            touched[added.id] = None
            self._bump = (added.id, self._max_tl)
        if self._max_tl is None or tl > self._max_tl:
            self._max_tl = tl
        if self._bump is not None:
            event_id, old = self._bump
            entry = next((h for h in snap.history or () if h.timeline == old), None)
            current = self._events.get(event_id)
            if entry is not None and current is not None:
                self._update(event_id, touched, text=_switch_text(entry))
                self._bump = None

    def _server_logs(self, snap: ClusterSnapshot, touched: dict[int, None]) -> None:
        """The news in each node's log lines read this cycle, stamped when the server wrote them."""
        for node in snap.nodes:
            log = node.server_log
            if log is None or log.backlog or not log.lines:
                continue
            news = [(line, level) for line in log.lines if (level := news_level(line)) is not None]
            for line, level in news[:MAX_LOG_EVENTS]:
                # The server's own time when it is known and not ahead of the reading; else the reading's.
                at = line.at if line.at is not None and line.at <= snap.taken_at else snap.taken_at
                text = f"{line.severity}: {line.message}"
                run = (node.name, f"{line.severity}: {fatal_key(line.message)}")
                if self._repeated(run, at, touched):
                    continue
                event = Event(
                    at=at, kind="log", node=node.name, text=text, severity=int(level), source="postgres"
                )
                added = self._add(event)
                touched[added.id] = None
                self._log_runs[run] = added.id
            if len(news) > MAX_LOG_EVENTS:
                more = len(news) - MAX_LOG_EVENTS
                text = f"{more} more log lines worth an event not listed (past {MAX_LOG_EVENTS} a read)"
                event = Event(
                    at=snap.taken_at, kind="log", node=node.name, text=text, severity=1, source="postgres"
                )
                touched[self._add(event).id] = None

    def _repeated(self, run: tuple[str, str], at: datetime, touched: dict[int, None]) -> bool:
        """Whether a log line counts on its run's event (said again within LOG_REPEAT_S of its first)."""
        window = timedelta(seconds=LOG_REPEAT_S)
        first = self._events.get(self._log_runs.get(run, 0))
        if first is None or not timedelta(0) <= at - first.at <= window:
            if len(self._log_runs) > EPISODES_SWEEP:  # only lines still within their window can fold
                runs = self._log_runs.items()
                self._log_runs = {k: i for k, i in runs if (e := self._events.get(i)) and at - e.at <= window}
            return False
        self._update(first.id, touched, count=first.count + 1, duration_s=_secs(first.at, at))
        return True

    def _past_switches(self, snap: ClusterSnapshot, touched: dict[int, None]) -> None:
        """Patroni's /history, read at start: the timeline switches before the console ran."""
        if self._history_told or not snap.history:
            return
        self._history_told = True
        for entry in snap.history[-PAST_SWITCHES:]:
            at = _when(entry.timestamp)
            if at is None or at > snap.taken_at:
                continue  # no time, or one from the future: not placed on the timeline
            text = f"{_switch_text(entry)}, from /history"
            event = Event(at=at, kind="history", text=text, source="patroni", node=entry.new_leader)
            touched[self._add(event).id] = None

    # -- events from elsewhere ------------------------------------------------------------------

    def mark(self, at: datetime, text: str, source: str = "marker") -> Event:
        """A marker from the user (key M, `pgtop-ha mark`)."""
        return self._add(Event(at=at, kind="marker", text=text, source=source))

    def action(
        self,
        at: datetime,
        text: str,
        phase: Literal["sent", "done"],
        ok: bool | None = None,
        node: str | None = None,
    ) -> Event:
        """An operator action: one event when sent, one when done, each stamped when it happens."""
        severity = 0 if ok is not False else 2
        event = Event(
            at=at, kind="action", node=node, text=f"{text} ({phase})", severity=severity, source="action"
        )
        return self._add(event)

    def add(self, event: Event) -> Event:
        """Any other event (its id is assigned here); returns it as stored."""
        return self._add(event)

    # -- reading --------------------------------------------------------------------------------

    def events(self) -> list[Event]:
        """Every event so far (the newest ``keep`` when bounded), in the order observed."""
        return list(self._events.values())

    def failovers(self) -> list[FailoverReport]:
        """Every leader loss seen so far with its stopwatch figures (the last may be running)."""
        return self._stopwatch.reports()

    def running_failover(self) -> FailoverReport | None:
        """The failover being timed now, if any."""
        return self._stopwatch.running()

    def leader_silence(self) -> LeaderSilence | None:
        """The leader's silence before Patroni names another, if it has stopped answering."""
        return self._stopwatch.silence()

    @property
    def last(self) -> ClusterSnapshot | None:
        """The last snapshot folded in."""
        return self._prev

    @property
    def changed_at(self) -> datetime | None:
        """When an event was last added or updated (a snapshot's taken_at, a marker's time)."""
        return self._changed_at

    def seen_checks(self) -> list[tuple[Verdict, datetime]]:
        """Every disagreement of the last snapshot, within its grace or past it, with its start."""
        return [(c, self._since[c.key]) for c in self._raw]

    def checks(self) -> list[ActiveCheck]:
        """Disagreements of the last snapshot that are past their grace period, oldest first."""
        if self._prev is None:
            return []
        at = self._prev.taken_at
        out = [
            ActiveCheck(c, self._since[c.key])
            for c in self._raw
            if _secs(self._since[c.key], at) >= c.grace_s
        ]
        return sorted(out, key=lambda a: (a.since, a.check.key))

    def unrest(self, now: datetime) -> tuple[str, ...]:
        """Why the cluster is not calm now (empty when it is): what makes the poll go faster."""
        snap = self._prev
        if snap is None:
            return ()
        out: list[str] = []
        for m in snap.members:
            state = member_state(m)
            if state == "slow" or (state == "unreachable" and m.last_ok_at is not None):
                out.append(f"{m.name} Patroni REST {state}")
        for n in snap.nodes:
            state = node_state(n)
            if state == "slow" or (state == "unreachable" and n.last_ok_at is not None):
                out.append(f"{n.name} PostgreSQL {state}")
        h = snap.haproxy
        stats = "unreachable" if h.error is not None else source_state(True, h.slow_s)
        if stats == "slow" or (stats == "unreachable" and h.last_ok_at is not None):
            out.append(f"HAProxy stats {stats}")
        api = source_state(snap.cluster.reachable, snap.cluster.slow_s)
        if api in ("slow", "unreachable"):
            out.append(f"Patroni /cluster {api}")
        elif snap.members and not snap.cluster.leader:
            out.append("no leader")
        if self._raw:
            out.append(self._raw[0].text)
        if self._leader_changed_at is not None and _secs(self._leader_changed_at, now) < CALM_AFTER_S:
            out.append("leader changed")
        if self._stopwatch.running() is not None:
            out.append("failover being timed")
        return tuple(out)

    # -- storage --------------------------------------------------------------------------------

    def _add(self, event: Event) -> Event:
        if self._changed_at is None or event.at > self._changed_at:
            self._changed_at = event.at
        stored = event.model_copy(update={"id": self._next_id})
        self._next_id += 1
        self._events[stored.id] = stored
        if self._keep is not None:
            while len(self._events) > self._keep:
                del self._events[next(iter(self._events))]
        return stored

    def _update(self, event_id: int, touched: dict[int, None], **changes: object) -> None:
        current = self._events.get(event_id)
        if current is None:
            return  # evicted: a bounded timeline forgets the oldest
        self._events[event_id] = current.model_copy(update=changes)
        touched[event_id] = None

    def _tagged(self, tag: str | None, event: Event) -> Event:
        known = self._tags.get(tag) if tag is not None else None
        if known is not None and known in self._events:
            fields = event.model_dump(exclude={"id"})
            updated = self._events[known].model_copy(update=fields)
            self._events[known] = updated
            return updated
        stored = self._add(event)
        if tag is not None:
            self._tags[tag] = stored.id
        return stored


def cadence(
    state: Timeline,
    idle_interval: float,
    now: datetime,
    *,
    factor: float = FAST_FACTOR,
    fastest: float = FASTEST_S,
) -> float:
    """The poll interval now: idle when calm, ``factor`` times faster (not below ``fastest``) when not."""
    if not state.unrest(now):
        return idle_interval
    return min(idle_interval, max(fastest, idle_interval / factor))

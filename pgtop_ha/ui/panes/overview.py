"""Overview pane: the 80x24 screen beside a failure test, problems on top only when there are any.

Each member's role, Patroni state, PostgreSQL's word, timeline, lag (bytes and seconds) and
routing in columns that fit 80; then the cluster in a few lines (timeline, the worst slot, the
archiver, a running COPY) and the last events. The full views stay one key away.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from pgtop_ha.engines.events import without_preludes
from pgtop_ha.judge.rules import CLUSTER_TIMELINES, SLOTS_RETAINED
from pgtop_ha.judge.view import (
    archive_failing,
    find_leader,
)
from pgtop_ha.models.derive import CopyRate, age_s, copy_rates, replay_lag_seconds, walsender_for
from pgtop_ha.models.event import Event
from pgtop_ha.models.haproxy import state_word
from pgtop_ha.models.leader import exact_timeline, is_leader, pg_primary
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Verdict
from pgtop_ha.ui.format import NAME_ROOM, age, count, duration, fit_name, human_bytes, shown
from pgtop_ha.ui.panes import cluster, events
from pgtop_ha.ui.panes.base import (
    Cell,
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    SameInputs,
    Table,
    cell,
    dedupe,
    marked,
    same_row,
    sortable,
    state,
    worst_cell,
)

# The events fill what the pane has left below the members and the cluster's lines (newest first,
# the rest cut at the bottom): ten lines at 80x24 on a healthy cluster, fewer beside problems.
# Six fixed ones left half the screen empty while a failure test pushed its cause out of view.
RECENT_EVENTS = 50
MAX_ALERTS = 4

# Widths keep every table inside 80 columns: no sideways scrolling in a tmux pane.
ALERT_COLUMNS = (Column("level", "Level"), Column("text", "Problem", width=66))
MEMBER_COLUMNS = (
    Column("member", "Member"),
    Column("role", "Role"),
    Column("state", "Patroni"),
    Column("pg", "PG"),
    Column("tl", "TL", right=True),
    Column("lag", "Lag", right=True),
    Column("lag_s", "Lag t", right=True),
    Column("route", "Route"),
)
STATE_ROOM = 62
STATE_COLUMNS = (Column("what", "Cluster"), Column("now", "Now", width=STATE_ROOM))
# The Node column and the text share 64 columns: short node names leave the text more room.
EVENT_ROOM = 64
# A cluster's own names ("pg-prod-eu-central-1a-01") pushed Route out of view and made every
# event's node "pg-prod-eu-…": past NAME_ROOM they are cut to what tells them apart ("…1a-01").
NODE_WIDTH = NAME_ROOM
EVENT_COLUMNS = (
    Column("time", "Time"),
    Column("node", "Node", width=NODE_WIDTH),
    Column("text", "Last events", width=EVENT_ROOM - len("Node")),
)


def alert_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """The worst current problems (none while healthy: the table then hides)."""
    names = ctx.names(snapshot)
    # The same problem on several members is one line: Patroni's copies of a permanent slot
    # retain the same WAL on every member, and said once each they took three of the four
    # lines at 80x24 (seven with seven members), pushing the archiver's failure out of view.
    groups: dict[tuple[Level, str | None, str], list[Verdict]] = {}
    for p in ctx.problems(snapshot):
        groups.setdefault((p.level, None if p.subject else p.ident, p.text), []).append(p)
    merged = list(groups.values())
    out = []
    for same in merged[:MAX_ALERTS]:
        first = same[0]
        text = _who([p.subject for p in same], first.text, names)
        out.append(
            same_row(
                "+".join(p.ident for p in same),
                {"level": state(first.level, first.rule), "text": cell(text, first.level, rule=first.rule)},
                _members_of(same),
            )
        )
    if len(merged) > MAX_ALERTS:
        more = f"… {len(merged) - MAX_ALERTS} more: the Problems pane on the dashboard, or key 1"
        out.append(same_row("|more", {"level": cell(""), "text": cell(more)}))
    return dedupe(out)


def _members_of(items: Iterable[Verdict | Event]) -> str | None:
    """The row's node for the node filter: each member a merged line speaks of ("node1,node2")."""
    nodes = (i.subject if isinstance(i, Verdict) else i.node for i in items)
    return ",".join(dict.fromkeys(n for n in nodes if n)) or None


def _who(nodes: Sequence[str | None], text: str, names: Sequence[str]) -> str:
    said = [fit_name(n, names, NODE_WIDTH) for n in nodes if n]
    if not said:
        return text
    if len(said) > 2 and len(", ".join(said)) > NODE_WIDTH * 2:
        return f"{said[0]} +{len(said) - 1}: {text}"  # "node1 +6: slot lab_sub retains 2.4 GiB"
    return f"{', '.join(said)}: {text}"


def _route(writer: Cell, reader: Cell) -> Cell:
    # HAProxy's own word, as the Cluster pane shows it: "UP 1/2" (a check failed, not yet down)
    # still takes traffic. Read as "not UP", a frozen leader still taking writes showed "-".
    words = [w for w, c in (("W", writer), ("R", reader)) if state_word(c.text) == "UP"]
    text = "+".join(words) or "-"
    graded = [c for c in (writer, reader) if c.level is not None and c.level != Level.OK]
    worst = max(graded, key=lambda c: c.level or Level.OK, default=None)
    return cell(text) if worst is None else cell(text, worst.level, rule=worst.rule)


def member_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per member, the Cluster pane's judgement in the columns that fit 80."""
    out = []
    names = ctx.names(snapshot)
    for full in cluster.rows(snapshot, ctx):
        c = full.cells
        health = c["health"].level or Level.OK
        health_rule = c["health"].rule
        name = full.node or full.key
        m = snapshot.member(name)
        reach = c["reach"]
        if reach.level is not None and reach.level > Level.OK and "REST" in reach.text:
            # Patroni's word is stale: say so ("REST 12s" unreachable, "REST slow 2s").
            patroni = cell(reach.text.split(" ", 1)[-1], reach.level, rule=reach.rule)
        else:
            patroni = c["state"]
        sender = None if is_leader(m) else walsender_for(snapshot, name)
        lag_s = replay_lag_seconds(sender, ctx.now) if sender is not None else None
        lag_marks = ctx.judged(snapshot).walsender(sender) if sender is not None else ()
        out.append(
            same_row(
                full.key,
                {
                    "member": cell(
                        f"{health.symbol} {fit_name(name, names, NODE_WIDTH)}",
                        health,
                        float(health),
                        health_rule,
                    ),
                    "role": c["role"],
                    "state": patroni,
                    "pg": c["pg"],
                    "tl": c["tl"],
                    "lag": c["lag"],
                    "lag_s": marked(duration(lag_s), lag_marks, "replay_s", sortable(lag_s), ok=True),
                    "route": _route(c["writer"], c["reader"]),
                },
                full.node,
            )
        )
    return out


def state_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Timeline, worst slot, the leader's archiver, running COPYs: one line each."""
    out = [_timeline(snapshot, ctx)]
    names = ctx.names(snapshot)
    if (takeover := _takeover(snapshot, ctx, names)) is not None:
        out.append(takeover)
    slot = ctx.judged(snapshot).worst_slot()
    if slot is not None:
        where, s, level = slot
        figures = f": {human_bytes(s.retained_bytes)} retained, {shown(s.wal_status or '?', 16)}"
        text = _on(s.slot_name, where, names, figures)
        now = cell(text, level, rule=SLOTS_RETAINED.id)
        out.append(same_row("slot", {"what": cell("Worst slot"), "now": now}))
    out.append(_archiver(snapshot, ctx))
    rates = {} if ctx.previous is None else copy_rates(ctx.previous, snapshot)
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        for cp in node.copy_progress:
            r = rates.get((node.name, cp.pid), CopyRate())
            pct = "?" if cp.percent is None else f"{cp.percent:.0f}%"
            eta = "" if r.eta_s is None else f", ETA {age(r.eta_s)}"
            text = _on(cp.relation or "?", node.name, names, f": {pct}{eta}")
            out.append(
                same_row(f"copy|{node.name}|{cp.pid}", {"what": cell("COPY"), "now": cell(text)}, node.name)
            )
    return out


def _takeover(snapshot: ClusterSnapshot, ctx: Context, names: Sequence[str]) -> Row | None:
    """If the leader died now: who takes over and what it lacks (the Failover pane, f)."""
    f = ctx.forecast(snapshot)
    if f.leader is None:
        return None
    marks = ctx.judged(snapshot).outlook()
    if not f.winners:
        text = "nobody, if the leader died now (f: why)"
    else:
        who = " or ".join(fit_name(w, names, NODE_WIDTH) for w in f.winners)
        risk = [c.at_risk_bytes for c in f.contenders if c.wins and c.at_risk_bytes is not None]
        lacks = f" ({human_bytes(max(risk))} unflushed)" if risk else ""
        text = f"{who}{lacks}, if the leader died now (f)"
    return same_row(
        "takeover",
        {"what": cell("Takeover"), "now": marked(shown(text, STATE_ROOM), marks)},
    )


def _on(what: str, node: str, names: Sequence[str], figures: str) -> str:
    # "<slot> on <node>: <figures>" in the line's 62 columns: a Debezium slot's name beside a
    # host's ("pg-prod-eu-central-1c-03") cut off the retained bytes; the names give way.
    text = f"{shown(what, 40)} on {shown(node, 64)}{figures}"
    if len(text) <= STATE_ROOM:
        return text
    where = f" on {fit_name(node, names, NODE_WIDTH)}"
    return shown(what, max(12, STATE_ROOM - len(where) - len(figures))) + where + figures


def _timeline(snapshot: ClusterSnapshot, ctx: Context) -> Row:
    seen: dict[int, list[str]] = {}
    for full in snapshot.nodes:
        if full.reachable and (tl := exact_timeline(full, snapshot.member(full.name))) is not None:
            seen.setdefault(tl, []).append(full.name)
    found = find_leader(snapshot)
    leader = found.name if found is not None else None
    lead_node = snapshot.node(leader) if leader else None
    main = exact_timeline(lead_node, snapshot.member(lead_node.name)) if lead_node is not None else None
    if main is None and seen:
        main = max(seen)
    text = count(main) if main is not None else "?"
    others = [f"{', '.join(sorted(names))} on {tl}" for tl, names in sorted(seen.items()) if tl != main]
    # Graded as the "timelines differ" check is: normal within its grace during a failover.
    active = ctx.check(CLUSTER_TIMELINES.id)
    level = active.check.level if others and active is not None else None
    if others:
        text += " — " + "; ".join(others)
    if leader:
        text += f" (leader {shown(leader, 24)})"
    return same_row("tl", {"what": cell("Timeline"), "now": cell(text, level, rule=CLUSTER_TIMELINES.id)})


def _archiver(snapshot: ClusterSnapshot, ctx: Context) -> Row:
    leader = find_leader(snapshot)
    node = snapshot.node(leader.name) if leader is not None else None
    if node is None or not node.reachable or node.archiver is None:
        # The line stays, saying why it is unknown: gone, it read as "nothing to say" in the
        # very minutes after a kill of the leader, when archiving is what stopped.
        who = fit_name(leader.name, ctx.names(snapshot), NODE_WIDTH) if leader is not None else ""
        if leader is None:
            why = "no leader"
        elif node is not None and not node.reachable:
            why = f"{who}'s PostgreSQL unreachable"
        else:
            why = f"not read on {who}"  # not polled (yet), or pg_stat_archiver not in its answer
        return same_row("archiver", {"what": cell("Archiver"), "now": cell(f"unknown: {why}")})
    a = node.archiver
    found = ctx.judged(snapshot).archiver(a, pg_primary(node))
    if a.last_archived_time:
        done = f"last archived {age(age_s(ctx.now, a.last_archived_time))} ago"
    elif a.stats_reset is not None:
        # A crash (or a reset) empties pg_stat_archiver: "nothing archived yet" would read as
        # "archiving never worked" just after a failure test.
        done = f"nothing archived since its stats reset {age(age_s(ctx.now, a.stats_reset))} ago"
    else:
        done = "nothing archived yet"
    text = f"{count(a.ready_count)} ready, {done}"
    if archive_failing(a):
        text += f", FAILING ({count(a.failed_count)} {'failure' if a.failed_count == 1 else 'failures'})"
    return same_row("archiver", {"what": cell("Archiver"), "now": worst_cell(text, found)}, node.name)


_EVENT_ROWS = SameInputs(limit=2)


# Each member's Patroni applies a change of the cluster's /config in its own loop: read live,
# `lab fault pending-restart` was "pending restart" at 10:13:38, 10:13:38 and 10:13:39, three
# lines beside "all" for the same second. Within a loop (Patroni's default loop_wait) is the same
# change.
MERGE_WITHIN_S = 10.0


def event_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """The newest events of the timeline, newest first (as many as the pane has room for)."""
    newest = tuple(ctx.events[-RECENT_EVENTS:])  # not all 500 kept
    names = ctx.names(snapshot)
    return _EVENT_ROWS.rows("\n".join(names), newest, lambda: _short_event_rows(newest, names))


def _short_event_rows(newest: tuple[Event, ...], names: Sequence[str]) -> list[Row]:
    # A read's slowness that ended as its source's unreachability is left to the Events pane.
    # By when each happened, as the Events pane and `events` order them: a stopwatch's event is
    # stamped at the outage's first failed write but stored when the outage ends.
    shown_events = sorted(without_preludes(newest), key=lambda e: e.at)[::-1]
    full_rows = [events.event_row(ev) for ev in shown_events]
    # A change of the whole cluster (a parameter pending restart, a timeline) is one event per
    # member, and at 80x24 the same line three or seven times: the same words on every member
    # within MERGE_WITHIN_S are one line here, at the first member's time (the Events pane keeps
    # each).
    runs: list[list[int]] = []
    for i, ev in enumerate(shown_events):
        run = runs[-1] if runs else None
        if (
            run is not None
            and _same_change(shown_events[run[0]], ev)
            and ev.node not in {shown_events[k].node for k in run}
        ):
            run.append(i)
        else:
            runs.append([i])
    # Only a change of every member is merged, and said "all": a merged label wider than a member's
    # ("node2 +1") widened the Node column, which keeps its width for a while after (the table's
    # SHRINK_AFTER_S) while the texts were cut for the narrower one: they ran past the border.
    runs = [
        part for run in runs for part in ([run] if _covers(shown_events, run, names) else [[k] for k in run])
    ]
    nodes = [cell(_node([shown_events[k] for k in run], names)) for run in runs]
    # What the widest node name leaves of 80 columns: "for 0.3 s" was cut at 52 beside "node3".
    # Every member's label counts, not only those shown: the Node column keeps a width for a
    # while after its widest cell leaves (the table's SHRINK_AFTER_S), and texts cut for a
    # narrower one ran past the border (a longer name's row leaving the list).
    widest = max(len(fit_name(n, names, NODE_WIDTH)) for n in names) if names else 0
    node_width = max([len("Node"), widest, *(len(n.text) for n in nodes)])
    room = EVENT_ROOM - node_width
    out = []
    for run, node in zip(runs, nodes, strict=True):
        # Newest first: a run's last is the change first seen, with the longest it lasted.
        ev, full = shown_events[run[-1]], full_rows[run[-1]]
        c = full.cells
        text = replace(c["text"], text=events.event_text(ev, room))
        key = "+".join(full_rows[k].key for k in run)
        members = _members_of(shown_events[k] for k in run) if len(run) > 1 else full.node
        out.append(same_row(key, {"time": c["time"], "node": node, "text": text}, members))
    return dedupe(out)


def _same_change(a: Event, b: Event) -> bool:
    # The same words, both still so or both over: how long each lasted differs by the same
    # second or two its members took to see it ("pending restart — for 136.1 s", "137.1 s").
    return (
        a.node is not None
        and b.node is not None
        and abs((a.at - b.at).total_seconds()) <= MERGE_WITHIN_S
        and events.bare_text(a) == events.bare_text(b)
        and (a.ended_at is None) == (b.ended_at is None)
    )


def _covers(shown_events: Sequence[Event], run: Sequence[int], names: Sequence[str]) -> bool:
    return len(run) > 1 and {shown_events[k].node for k in run} >= set(names)


def _node(run: Sequence[Event], names: Sequence[str]) -> str:
    ev = run[0]
    if len(run) > 1:
        return "all"  # every member (_covers): no wider than the column's own title
    if ev.node:
        return fit_name(ev.node, names, NODE_WIDTH)
    # No Kind column at 80: a DBA's marker ("pgtop-ha mark") read as "-", like HAProxy's pool.
    # "mark", as the command, is no wider than the column's title (see node_width above).
    return "mark" if ev.kind == "marker" else "-"


PANE = PaneSpec(
    id="overview",
    title="Overview",
    key=None,  # it is the view of key 0 below the dashboard size
    columns=ALERT_COLUMNS,
    rows=alert_rows,
    optional=True,
    cursor=False,
    more=(
        Table("overview-members", MEMBER_COLUMNS, member_rows),
        Table("overview-state", STATE_COLUMNS, state_rows, cursor=False),
        Table("overview-events", EVENT_COLUMNS, event_rows, cursor=False, fill=True),
    ),
    help="problems (when any), members, timeline, worst slot, archiver, COPY, last events",
    place=Place(overview=True, dashboard=False),
)

"""Replication pane: per standby, state, sync, lag per stage in bytes and time, a lag sparkline."""

from __future__ import annotations

from pgtop_ha.judge.view import receiver_status, standby_name, unreported
from pgtop_ha.models.derive import REPLY_ON_TIME_S, age_s, stage_lag_seconds
from pgtop_ha.models.servers import upstream_of
from pgtop_ha.models.snapshot import ClusterSnapshot, Replication
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import age, age_step, duration, human_bytes, sparkline
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Row,
    cell,
    marked,
    name_column,
    num,
    same_row,
    sortable,
    worst_state,
)

COLUMNS = (
    name_column("upstream", "From"),
    name_column("standby", "Standby"),
    Column("health", "Health"),
    Column("state", "State"),
    Column("sync", "Sync"),
    Column("sent", "Sent", right=True),
    Column("write", "Write", right=True),
    Column("flush", "Flush", right=True),
    Column("replay", "Replay", right=True),
    Column("write_s", "Write t", right=True),
    Column("flush_s", "Flush t", right=True),
    Column("replay_s", "Replay t", right=True),
    Column("reply", "Reply", right=True),
    Column("trend", "Replay lag"),
)


def _history(ctx: Context, upstream: str, name: str) -> list[float | None]:
    out: list[float | None] = []
    for snap in ctx.history[-9:]:
        node = snap.node(upstream)
        match = None if node is None else next((r for r in node.replication if standby_name(r) == name), None)
        out.append(None if match is None else match.replay_lag_bytes)
    return out


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per walsender on every reachable node (the primary, and cascading standbys)."""
    out: list[Row] = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if not node.reachable:
            continue
        out.extend(
            _walsender_row(node.name, r, ctx, ctx.judged(snapshot).walsender(r)) for r in node.replication
        )
    out.extend(_standby_side(snapshot, ctx))
    return out


def _walsender_row(upstream: str, r: Replication, ctx: Context, found: tuple[Mark, ...]) -> Row:
    """The row of one walsender, built from its model and the judge's marks on it."""
    name = standby_name(r)
    write_s, flush_s, replay_s = stage_lag_seconds(r, ctx.now)  # a caught-up stage is 0 s, not "-"
    # The Reply column says for how long a silent standby has been silent.
    # A standby replies at least every wal_receiver_status_interval (10 s by default): an age
    # below that is on time, shown as such so the row does not repaint every second.
    reply = age_step(age_s(ctx.now, r.reply_time), REPLY_ON_TIME_S)
    trend = (*_history(ctx, upstream, name), r.replay_lag_bytes)
    cells = {
        "upstream": cell(upstream),
        "standby": cell(name),
        "health": worst_state(found),
        "state": marked(r.state or "?", found, "state"),
        "sync": cell(r.sync_state or "?"),
        "sent": num(human_bytes(r.sent_lag_bytes), r.sent_lag_bytes),
        "write": num(human_bytes(r.write_lag_bytes), r.write_lag_bytes),
        "flush": num(human_bytes(r.flush_lag_bytes), r.flush_lag_bytes),
        "replay": marked(
            human_bytes(r.replay_lag_bytes), found, "replay", sortable(r.replay_lag_bytes), ok=True
        ),
        "write_s": num(duration(write_s), write_s),
        "flush_s": num(duration(flush_s), flush_s),
        "replay_s": marked(duration(replay_s), found, "replay_s", sortable(replay_s), ok=True),
        "reply": num(age(reply, floor=REPLY_ON_TIME_S), reply),
        "trend": cell(sparkline(trend), sort=r.replay_lag_bytes or 0),
    }
    return same_row(f"{upstream}|{name}", cells, name)


def _standby_side(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Standbys no upstream reports (e.g. the primary is down): their own receiver's view."""
    out = []
    for node in unreported(snapshot):
        status = receiver_status(node)
        found = ctx.judged(snapshot).receiver(node)
        # Its upstream by name, as the primary's own rows say it, not by address.
        sender = upstream_of(snapshot, node.name) or "?"
        backlog = None
        if node.receive_lsn is not None and node.replay_lsn is not None:
            backlog = max(0, node.receive_lsn - node.replay_lsn)
        blank = num("-", None)
        out.append(
            Row(
                key=f"?|{node.name}",
                node=node.name,
                cells={
                    "upstream": cell(sender),
                    "standby": cell(node.name),
                    "health": worst_state(found),
                    "state": marked(status, found),
                    "sync": cell("?"),
                    "sent": blank,
                    "write": blank,
                    "flush": blank,
                    "replay": num(human_bytes(backlog), backlog),
                    "write_s": blank,
                    "flush_s": blank,
                    "replay_s": blank,
                    "reply": blank,
                    "trend": cell("(own view)"),
                },
            )
        )
    return out


PANE = PaneSpec(
    id="replication",
    title="Replication",
    key="3",
    columns=COLUMNS,
    rows=rows,
    per_member=True,
    help="per standby: state, sync, lag per stage (bytes, time)",
)

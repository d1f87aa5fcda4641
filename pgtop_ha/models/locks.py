"""Blocking trees from pg_blocking_pids(): who blocks whom, root blockers first (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgtop_ha.models.snapshot import LockProcess

# Taken by ALTER TABLE, DROP, TRUNCATE, VACUUM FULL, pg_repack's swap: every other statement on
# the table queues behind it, readers included. A waiter for it stops the application.
STOPS_EVERYTHING = "AccessExclusiveLock"


@dataclass(frozen=True)
class TreeLine:
    """One line of a blocking tree: the process, its depth under its root, and that root."""

    process: LockProcess
    depth: int
    root: int
    waiters: int  # processes under this one, at any depth


def blocking_trees(rows: Sequence[LockProcess]) -> list[TreeLine]:
    """Each root blocker (blocks others, waits on nobody) with its waiters below it, depth-first.

    A process waiting behind several blockers appears under each. Waits that form a cycle (a
    deadlock before the detector ends it) have no root: they are shown from their lowest pid.
    """
    by_pid = {r.pid: r for r in rows}
    children: dict[int, list[int]] = {}
    for r in rows:
        for blocker in r.blocked_by:
            children.setdefault(blocker, []).append(r.pid)
    roots = sorted(pid for pid in children if pid not in by_pid or not by_pid[pid].blocked_by)
    out: list[TreeLine] = []
    placed: set[int] = set()

    def under(pid: int, seen: frozenset[int]) -> int:
        return sum(1 + under(c, seen | {c}) for c in children.get(pid, ()) if c not in seen)

    def walk(pid: int, depth: int, root: int, seen: frozenset[int]) -> None:
        placed.add(pid)
        # A blocker outside the rows (the statement's limit) is shown by its pid alone.
        process = by_pid.get(pid) or LockProcess.model_construct(pid=pid)
        out.append(TreeLine(process, depth, root, under(pid, seen)))
        for child in sorted(children.get(pid, ())):
            if child not in seen:  # a cycle ends here
                walk(child, depth + 1, root, seen | {child})

    for root in roots:
        walk(root, 0, root, frozenset({root}))
    for pid in sorted(p for p in children if p not in placed):  # cycles: no root blocker
        if pid not in placed:
            walk(pid, 0, pid, frozenset({pid}))
    return out

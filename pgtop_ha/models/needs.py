"""Optional reads: what a pane on screen asks the read path for, beyond the every-cycle document.

Some views cost real time on the server or here (process memory: ~1 ms CPU per smaps_rollup) and
only one pane shows each. A pane declares the reads it needs (``PaneSpec.needs``); the monitor
screen tells the source the union for the panes on screen, and the readers skip the rest.
"""

from __future__ import annotations

from typing import Literal

Need = Literal[
    "memory", "memory_focus", "locks", "cache", "parameters", "pgbackrest", "sessions", "statements"
]
"""One optional read: ``memory`` per-process Pss/USS (local /proc or pg_read_file), every 15 s, or
every 5 s with ``memory_focus`` (the Memory pane shown alone); ``locks`` the
blocking trees (pg_locks, pg_blocking_pids); ``cache`` pg_buffercache and autoprewarm;
``parameters`` every node's non-default settings, for drift between members; ``pgbackrest``
`pgbackrest info` every [pgbackrest] interval (every 60 s otherwise, collect/pgbackrest.py);
``sessions`` each process's client, its query's, transaction's and state's ages and its xmin age;
``statements`` pg_stat_statements every 10 s, as rates since the read before."""

Needs = frozenset[Need]

NONE: Needs = frozenset()

"""Wait events: what each node's processes wait on now, and over the last minute (pure).

Counted: client backends active or idle in a transaction (it holds locks and snapshots), and other
processes waiting on something besides their idle loop. Idle sessions and "Activity" waits are
not waits anyone suffers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from pgtop_ha.models.snapshot import ClusterSnapshot, Process, WaitCount

WINDOW = timedelta(seconds=60)
CPU = "CPU"
_IN_TRANSACTION = ("active", "idle in transaction", "idle in transaction (aborted)")
# ClientRead/ClientWrite are the network and the application (a cursor read slowly), not the
# database: the pane tells them apart from IO and Lock.
CLIENT_EVENTS = frozenset({"ClientRead", "ClientWrite"})


def waiting(p: Process) -> tuple[str, str | None] | None:
    """(class, event) a process counts under, or None when it is idle (see the module's rule)."""
    if p.wait_event_type == "Activity":
        return None
    if p.backend_type == "client backend":
        if p.state not in _IN_TRANSACTION:
            return None
        if p.wait_event_type is None:
            return (CPU, None) if p.state == "active" else None
        return p.wait_event_type, p.wait_event
    if p.wait_event_type is None:
        return None
    return p.wait_event_type, p.wait_event


def wait_counts(processes: Iterable[Process]) -> tuple[WaitCount, ...]:
    """This snapshot's waits on a node, most first."""
    counts = Counter(w for p in processes if (w := waiting(p)) is not None)
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1] or ""))
    return tuple(WaitCount(wait_class=c, event=e, count=n) for (c, e), n in ordered)


def kind(wait_class: str, event: str | None) -> str:
    """A word for the wait: client (network/app), lock, io, cpu, or the class itself."""
    if event in CLIENT_EVENTS:
        return "client"
    return {"Lock": "lock", "LWLock": "lwlock", "IO": "io", CPU: "cpu"}.get(wait_class, wait_class.lower())


@dataclass(frozen=True)
class WaitTrend:
    """One wait on one node over the window: samples per snapshot (oldest first), their mean."""

    node: str
    wait_class: str
    event: str | None
    now: int
    samples: tuple[int, ...]

    @property
    def mean(self) -> float:
        """Average processes waiting on it per snapshot over the window."""
        return sum(self.samples) / len(self.samples) if self.samples else 0.0


def window(history: Sequence[ClusterSnapshot], current: ClusterSnapshot) -> list[WaitTrend]:
    """Every wait seen on a node within WINDOW of ``current``, by mean over the window, most first."""
    snaps = [s for s in history if current.taken_at - s.taken_at <= WINDOW] + [current]
    out = []
    names = sorted({n.name for s in snaps for n in s.nodes})
    for name in names:
        per_snapshot: list[dict[tuple[str, str | None], int]] = []
        for s in snaps:
            node = s.node(name)
            counts = (
                {(w.wait_class, w.event): w.count or 0 for w in node.waits} if node and node.reachable else {}
            )
            per_snapshot.append(counts)
        keys = {k for counts in per_snapshot for k in counts}
        for key in keys:
            samples = tuple(counts.get(key, 0) for counts in per_snapshot)
            out.append(WaitTrend(name, key[0], key[1], samples[-1], samples))
    return sorted(out, key=lambda t: (-t.mean, -t.now, t.node, t.wait_class, t.event or ""))

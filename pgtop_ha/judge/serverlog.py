"""The server's own log: which lines are news on the timeline, and a recent FATAL or PANIC."""

from __future__ import annotations

import re
from datetime import datetime

from pgtop_ha.judge.rules import LOG_FATAL, LOG_PANIC
from pgtop_ha.models.serverlog import FATAL_GAP_S, FatalRun, LogLine, ServerLog
from pgtop_ha.models.snapshot import NodeSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark

LOG_RECENT_S = 300.0  # a PANIC this recent is CRIT
# A FATAL counts when it keeps coming this long: a failover's own ("the database system is
# starting up", a standby losing its primary for seconds) does not; a replica that cannot follow does.
FATAL_PERSIST_S = 60.0
FATAL_PERSIST_COUNT = 3

# LOG lines that tell a crash, a restart, a checkpoint or a promotion as the server saw it.
_NEWS = re.compile(
    r"checkpoint (starting|complete)|restartpoint (starting|complete)|database system is (ready|shut down)"
    r"|database system was (interrupted|not properly shut down|shut down)|received \w+ shutdown request"
    r"|received promote request|selected new timeline ID|archive recovery complete|redo (starts|done) at"
    r"|was terminated by signal|terminating any other active server processes"
    r"|all server processes terminated|started streaming WAL|replication terminated by primary"
)
_EVENT_LEVEL = {"PANIC": Level.CRIT, "FATAL": Level.WARN, "ERROR": Level.WARN}


def news_level(line: LogLine) -> Level | None:
    """The event level of a line worth the timeline (None for the rest of the log)."""
    if line.severity in _EVENT_LEVEL:
        return _EVENT_LEVEL[line.severity]
    if line.severity == "LOG" and _NEWS.search(line.message):
        return Level.OK
    return None


def _recent(at: datetime | None, now: datetime) -> bool:
    return at is not None and 0 <= (now - at).total_seconds() <= LOG_RECENT_S


def persistent_fatal(log: ServerLog, now: datetime) -> FatalRun | None:
    """The FATAL that has kept coming longest, while it still comes; None when none does."""
    runs = [
        r
        for r in log.fatal_runs
        if 0 <= (now - r.last_at).total_seconds() <= FATAL_GAP_S  # it still comes
        and r.count >= FATAL_PERSIST_COUNT
        and (r.last_at - r.first_at).total_seconds() >= FATAL_PERSIST_S
    ]
    return min(runs, key=lambda r: r.first_at, default=None)


def log_findings(node: NodeSnapshot, now: datetime) -> tuple[Mark, ...]:
    """A PANIC in the last LOG_RECENT_S (CRIT); a FATAL that keeps coming (WARN)."""
    log = node.server_log
    if log is None:
        return ()
    out: list[Mark] = []
    panic = log.last_panic
    if panic is not None and panic.at is not None and _recent(panic.at, now):
        out.append(Mark(LOG_PANIC.id, Level.CRIT, f"PANIC at {panic.at:%H:%M:%S}: {panic.message}"))
    run = persistent_fatal(log, now)
    if run is not None:
        # No count or age in the words: they stay the same while the run goes on.
        text = f"FATAL again and again since {run.first_at:%H:%M:%S}: {run.message}"
        out.append(Mark(LOG_FATAL.id, Level.WARN, text))
    return tuple(out)

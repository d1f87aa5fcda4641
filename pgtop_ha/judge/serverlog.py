"""The server's own log: which lines are news on the timeline, and a recent FATAL or PANIC."""

from __future__ import annotations

import re
from datetime import datetime

from pgtop_ha.judge.rules import LOG_FATAL, LOG_PANIC
from pgtop_ha.models.serverlog import LogLine
from pgtop_ha.models.snapshot import NodeSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark

LOG_RECENT_S = 300.0  # a FATAL or PANIC this recent is a verdict

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


def _recent(line: LogLine | None, now: datetime) -> bool:
    return line is not None and line.at is not None and 0 <= (now - line.at).total_seconds() <= LOG_RECENT_S


def log_findings(node: NodeSnapshot, now: datetime) -> tuple[Mark, ...]:
    """A PANIC (CRIT) or a FATAL (WARN) in the node's log in the last LOG_RECENT_S."""
    log = node.server_log
    if log is None:
        return ()
    out: list[Mark] = []
    for line, rule, level in (
        (log.last_panic, LOG_PANIC.id, Level.CRIT),
        (log.last_fatal, LOG_FATAL.id, Level.WARN),
    ):
        if line is not None and line.at is not None and _recent(line, now):
            text = f"{line.severity} at {line.at:%H:%M:%S}: {line.message}"
            out.append(Mark(rule, level, text))
    return tuple(out)

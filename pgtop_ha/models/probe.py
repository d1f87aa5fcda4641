"""Client probes, pure: runs of errors, write outages, and which member a server address is.

A probe is what an application sees through an endpoint (HAProxy's writer or reader port, a
pooler): a new connection and one short statement per cycle. Its outcome is folded into a
``ProbeRun`` here, without I/O, so the read and the write probes and the tests share one rule.
"""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.base import Frozen

MAX_OUTAGES = 20  # write outages kept on the probe (the timeline keeps its own history)


class WriteOutage(Frozen):
    """Writes were down: from the first failed write to the first successful write after it."""

    started_at: datetime
    ended_at: datetime
    duration_s: float
    member: str | None = None  # the member that took the first write after the outage
    failures: int = 0


class ProbeRun(Frozen):
    """A probe's history in brief: the current run of errors, the last success, past outages."""

    errors: int = 0  # consecutive failures (0 while the probe answers)
    first_error: str | None = None  # the first error text of the current run
    first_error_at: datetime | None = None
    last_ok_at: datetime | None = None
    last_member: str | None = None
    outages: tuple[WriteOutage, ...] = ()


def step(run: ProbeRun, at: datetime, error: str | None, member: str | None = None) -> ProbeRun:
    """The run after one probe at ``at``: ``error`` None means it answered (from ``member``)."""
    if error is not None:
        if run.errors == 0:
            return run.model_copy(update={"errors": 1, "first_error": error, "first_error_at": at})
        return run.model_copy(update={"errors": run.errors + 1})
    outages = run.outages
    if run.errors and run.first_error_at is not None:
        outage = WriteOutage(
            started_at=run.first_error_at,
            ended_at=at,
            duration_s=max(0.0, (at - run.first_error_at).total_seconds()),
            member=member,
            failures=run.errors,
        )
        outages = (*outages, outage)[-MAX_OUTAGES:]
    return ProbeRun(last_ok_at=at, last_member=member, outages=outages)


def member_at(
    members: tuple[tuple[str, str | None, int | None], ...], addr: str | None, port: int | None
) -> str | None:
    """The member (name, host, port) listening at ``addr``:``port``; by port alone when unique.

    A member may be listed more than once (by its host name and by its address).
    """
    if port is None:
        return None
    same_port = {name for name, _, p in members if p == port}
    exact = {name for name, host, p in members if p == port and host is not None and host == addr}
    if len(exact) == 1:
        return next(iter(exact))
    if len(same_port) == 1:
        return next(iter(same_port))  # host names vs addresses: the port alone tells them apart
    return None


def answered_label(member: str | None, addr: str | None, port: int | None) -> str | None:
    """What the pane shows as "answered by": the member, else the server's address and port."""
    if member is not None:
        return member
    if port is None:
        return None
    return f"{addr or 'local'}:{port}"

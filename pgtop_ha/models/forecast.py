"""If the leader died now: who Patroni would promote, why every other member would lose, what is at risk."""

from __future__ import annotations

from pgtop_ha.models.base import Frozen


class Contender(Frozen):
    """One member in the forecast race: whether it may race, why it would lose, and what it lacks."""

    name: str
    eligible: bool  # Patroni would let it race (not nofailover, not lagging, synchronous where required)
    wins: bool = False
    reason: str = ""  # why it would not be promoted, in one line ("" for the winner)
    position: int | None = None  # its WAL position as Patroni compares them: max(received, replayed)
    priority: int = 1  # its failover_priority tag (Patroni's default 1)
    sync_state: str | None = None  # its walsender's on the leader: sync, quorum, potential, async
    at_risk_bytes: int | None = None  # WAL the leader has written that it has not flushed
    at_risk_s: float | None = None  # the same, in seconds of the leader's commits (flush lag)


class FailoverForecast(Frozen):
    """The leader race Patroni would run now, by its own rules for the version it runs."""

    leader: str | None = None
    leader_position: int | None = None  # the leader's current WAL position, where its PostgreSQL was read
    policy: str  # whose rules: "Patroni 3.3", "Patroni 4.0", "Patroni 4.1"
    mode: str  # "async", "synchronous", "quorum"
    strict: bool = False  # synchronous_mode_strict
    standby_names: str | None = None  # the leader's synchronous_standby_names, where it was read
    commit_waits_for: str | None = None  # that in words: "any 1 of node2, node3", "none"
    maximum_lag_bytes: int
    winners: tuple[str, ...] = ()  # more than one: a tie Patroni settles by whoever takes the key first
    contenders: tuple[Contender, ...] = ()
    slots_lost: tuple[str, ...] = ()  # logical slots on the leader the new leader would not have
    outage_min_s: float | None = None  # the expected write outage: at least
    outage_max_s: float | None = None  # and at most
    # The write outages of this cluster's past failovers as the console timed them, newest last;
    # None: no timeline stands behind this forecast (a one-shot `snapshot`), () none timed yet.
    past_outages_s: tuple[float, ...] | None = None
    assumptions: tuple[str, ...] = ()  # what the forecast took as given

"""Patroni's member tags and states as its code reads them: who may ever be promoted."""

from __future__ import annotations

from typing import Any

# Patroni's own default for maximum_lag_on_failover (1 MiB) when /config does not say.
DEFAULT_MAXIMUM_LAG_ON_FAILOVER = 1024 * 1024
GOOD_STATES = frozenset({"streaming", "running"})


def tag_true(tags: dict[str, Any], name: str) -> bool:
    """Whether a Patroni tag is set to a true value (tags may come as strings)."""
    value = tags.get(name)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1")
    return bool(value)


def failover_priority(tags: dict[str, Any]) -> int | None:
    """The failover_priority tag as a number; None when absent or not one."""
    try:
        return int(tags["failover_priority"])
    except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: JSON's 1e999 is inf
        return None


def no_failover(tags: dict[str, Any]) -> bool:
    """Whether Patroni will never promote a member with these tags (nofailover, failover_priority 0)."""
    # Patroni 3.2+: failover_priority 0 means the same as nofailover, and wins when both are set.
    if "failover_priority" in tags:
        priority = failover_priority(tags)
        return priority is not None and priority <= 0
    return tag_true(tags, "nofailover")


def mib(n: int) -> str:
    """Bytes in MiB with one decimal, as a candidate's reasons give lag."""
    return f"{n / 1024**2:.1f} MiB"

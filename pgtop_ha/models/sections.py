"""The parts of the settings a driver gets: a session's judging, what the console shows by, its mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from pgtop_ha.models.haproxy import DEFAULT_POOLS, Pools
from pgtop_ha.models.thresholds import Thresholds


@dataclass(frozen=True)
class Judging:
    """What a session judges and paces by: the thresholds, HAProxy's pools, the chosen interval."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    pools: Pools = DEFAULT_POOLS
    interval: float = 1.0


@dataclass(frozen=True)
class ConsoleSections:
    """What the console reads of the settings: its session's judging, its theme, the cluster's name."""

    judging: Judging = field(default_factory=Judging)
    theme: str = "dark"
    cluster_name: str | None = None


@dataclass(frozen=True)
class Mode:
    """Whether the console may act, and why (shown in the header and the help screen)."""

    read_only: bool
    reason: str
    short: str = ""  # for the header badge: "SSH", "flag", "env", "config", "default"

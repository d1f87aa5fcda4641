"""Frozen, typed data of pgtop-ha: no I/O, no Textual, nothing of ours but models."""

from pgtop_ha.models.snapshot import (
    Archiver,
    ClusterInfo,
    ClusterSnapshot,
    CopyProgress,
    HAProxyServer,
    HAProxyState,
    HistoryEntry,
    Member,
    NodeSnapshot,
    PatroniConfig,
    PendingSetting,
    Process,
    Replication,
    Slot,
    Subscription,
    WalReceiver,
)

__all__ = [
    "Archiver",
    "ClusterInfo",
    "ClusterSnapshot",
    "CopyProgress",
    "HAProxyServer",
    "HAProxyState",
    "HistoryEntry",
    "Member",
    "NodeSnapshot",
    "PatroniConfig",
    "PendingSetting",
    "Process",
    "Replication",
    "Slot",
    "Subscription",
    "WalReceiver",
]

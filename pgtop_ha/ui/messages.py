"""Messages the console passes between its poll task and its widgets."""

from __future__ import annotations

from textual.message import Message

from pgtop_ha.models.snapshot import ClusterSnapshot


class SnapshotReady(Message):
    """A new snapshot arrived from the source."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

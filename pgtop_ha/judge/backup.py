"""pgBackRest as the cluster uses it: the stanza archive_command pushes to, against the stanzas read."""

from __future__ import annotations

import re

from pgtop_ha.models.pgbackrest import PgBackRestState
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level

_STANZA = re.compile(r"--stanza[= ]+['\"]?([A-Za-z0-9_.-]{1,64})")


def archived_stanza(snapshot: ClusterSnapshot) -> str | None:
    """The stanza archive_command pushes to, as Patroni's /config or a node's settings give it."""
    commands: list[str | None] = []
    if snapshot.patroni_config is not None:
        commands.append(snapshot.patroni_config.parameters.get("archive_command"))
    for node in snapshot.nodes:
        commands += [s.setting for s in node.parameters or () if s.name == "archive_command"]
    for command in commands:
        if command and "pgbackrest" in command and (found := _STANZA.search(command)):
            return found[1]
    return None


def no_stanza_text(state: PgBackRestState, snapshot: ClusterSnapshot) -> str:
    """Why no stanza was read, naming the one archive_command uses when the config read lacks it."""
    stanza = archived_stanza(snapshot)
    if stanza is not None and stanza not in {s.name for s in state.stanzas}:
        where = f"config {state.config}" if state.config else "no pgbackrest.conf found"
        return (
            f"archive_command pushes to stanza {stanza!r}, which pgBackRest as read here ({where}) "
            "does not hold; set [pgbackrest] config and stanza"
        )
    return state.no_stanza or "no stanza reported"


def no_stanza_level(error: bool, asked: bool = True) -> Level:
    """No stanza: CRIT when `pgbackrest info` failed, WARN when it lists none, OK when nobody asked."""
    if not asked:
        return Level.OK
    return Level.CRIT if error else Level.WARN

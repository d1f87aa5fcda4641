"""The lab feeds the panes inside a node: a lock with waiters, a slow reader, a pending restart,
a pgBackRest backup the source reads back, and the cache extensions (checked with SQL)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable

import pytest

from pgtop_ha.clock import system_clock
from pgtop_ha.collect.pgbackrest import PgBackRestReader
from pgtop_ha.lab import faults, procs
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.configs import STANZA
from pgtop_ha.lab.layout import NODE_NAMES
from pgtop_ha.lab.tools import find_tools
from tests.conftest import needs_pgbackrest
from tests.support.lab_polls import quiet, running

pytestmark = pytest.mark.lab


def test_lock_holds_access_exclusive_with_waiters(lab: Lab) -> None:
    silent = quiet(lab)
    i = lab.leader_index()
    with running(lambda: faults.lock(silent, seconds=15, waiters=2), 60):
        holder = (
            "SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.granted "
            f"AND l.mode = 'AccessExclusiveLock' AND l.relation = to_regclass('{faults.LOCK_TABLE}')"
        )
        assert procs.poll(lambda: lab.psql(holder, i) != "", 20, interval=0.2)
        pid = lab.psql(holder, i)
        waiting = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            f"AND {pid} = ANY(pg_blocking_pids(pid))"
        )
        assert procs.poll(lambda: lab.psql(waiting, i) == "2", 20, interval=0.2)
    # Ended on its own: nobody holds or waits any more, and no client process is left.
    assert lab.psql(holder, i) == ""
    assert not [n for n in lab.book.load() if n.startswith("fault-lock")]


def test_slow_reader_makes_the_server_wait_on_client_write(lab: Lab) -> None:
    silent = quiet(lab)
    i = lab.leader_index()
    query = (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lab-fault-slow-reader' "
        "AND wait_event = 'ClientWrite'"
    )
    with running(lambda: faults.slow_reader(silent, seconds=12), 60):
        assert procs.poll(lambda: lab.psql(query, i) == "1", 30, interval=0.3)
    gone = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lab-fault-slow-reader'"
    assert procs.poll(lambda: lab.psql(gone, i) == "0", 15, interval=0.3)


def _shows(lab: Lab, sql: str, node: int, expected: str) -> Callable[[], bool]:
    return lambda: lab.psql(sql, node) == expected


def test_pending_restart_shows_on_every_node_and_undoes(lab: Lab) -> None:
    silent = quiet(lab)
    pending = "SELECT name FROM pg_settings WHERE pending_restart"
    try:
        faults.pending_restart(silent)
        for i in range(len(NODE_NAMES)):
            assert procs.poll(_shows(lab, pending, i, "max_connections"), 20, interval=0.3)
    finally:
        faults.pending_restart(silent, undo=True)
    for i in range(len(NODE_NAMES)):
        assert procs.poll(_shows(lab, pending, i, ""), 20, interval=0.3)


def test_cache_extensions_on_every_node(lab: Lab) -> None:
    for i in range(len(NODE_NAMES)):
        names = lab.psql("SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension", i)
        assert {"pg_buffercache", "pg_prewarm"} <= set(names.split(","))
        assert "pg_prewarm" in lab.psql("SHOW shared_preload_libraries", i)


def test_backup_is_listed_and_read_by_the_source(lab: Lab) -> None:
    needs_pgbackrest(lab)
    faults.backup(quiet(lab))
    config = lab.layout.state_dir / "pgbackrest.conf"
    info = subprocess.run(
        [str(find_tools().pgbackrest), f"--config={config}", f"--stanza={STANZA}", "--output=json", "info"],
        capture_output=True, text=True, timeout=60, check=True, env=procs.lab_env(),
    )  # fmt: skip
    (stanza_doc,) = json.loads(info.stdout)
    newest = [b for b in stanza_doc["backup"] if b["type"] == "full"][-1]
    state = asyncio.run(PgBackRestReader(("pgbackrest",), config, None, None, system_clock).read())
    (stanza,) = state.stanzas
    assert stanza.name == STANZA and stanza.ok
    assert stanza.full is not None and stanza.full.label == newest["label"]
    assert stanza.full.age_s is not None and stanza.full.age_s < 600
    assert stanza.archive_max is not None
    (spool,) = state.spools
    assert spool.error is None and spool.error_count == 0

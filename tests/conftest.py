"""Shared fixtures: the real lab cluster, started once per test session by the project's own code.

By default each session claims its own free port range and state directory, so several suites can
run side by side. Environment knobs:
- PGTOPHA_TEST_BASE_PORT and PGTOPHA_TEST_STATE_DIR pin the lab (to reuse one across sessions);
- PGTOPHA_TEST_KEEP_LAB=1 leaves the lab running after the session (the next session reuses it);
- PGTOPHA_TEST_POSTGRES=18 runs the lab on that PostgreSQL (`pytest -m lab`: the lab suite).
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pgtop_ha import runtime
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab, claim_layout
from pgtop_ha.lab.layout import NODE_NAMES, Layout
from pgtop_ha.lab.procs import log_tail, poll
from pgtop_ha.lab.versions import postgres_major
from pgtop_ha.settings import Settings, load_settings

TEST_ROWS = int(os.environ.get("PGTOPHA_TEST_ROWS", "1000000"))
pytest_plugins = ["tests.support.pki"]  # the private CA fixture, for every https test


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test runs on the console's own loop (pgtop_ha/runtime.py: uvloop where installed)."""
    return {runtime.loop_name(): runtime.loop_factory()}


def _layout() -> Layout:
    pinned = os.environ.get("PGTOPHA_TEST_BASE_PORT")
    if pinned:
        state = os.environ.get("PGTOPHA_TEST_STATE_DIR", f"/tmp/pgtop-ha-test-{pinned}")
        layout = Layout(base_port=int(pinned), state_dir=Path(state))
    else:
        layout = claim_layout(None)
    version = os.environ.get("PGTOPHA_TEST_POSTGRES")
    return dataclasses.replace(layout, postgres=postgres_major(version)) if version else layout


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test on the session's lab is in the lab suite (`-m lab`), whatever its module says.

    They also run in one xdist group, first: one worker brings the lab up once and runs them one
    after another, the longest chain of the run, while the others take the tests that need no lab
    (`--dist loadgroup`).
    """
    on_lab = {item for item in items if "lab_session" in getattr(item, "fixturenames", ())}
    for item in on_lab:
        item.add_marker(pytest.mark.lab)
        item.add_marker(pytest.mark.xdist_group("lab"))
    items.sort(key=lambda item: item not in on_lab)


def needs_pgbackrest(lab: Lab) -> None:
    """Skip unless the lab archives with pgBackRest (it cannot on versions newer than it knows)."""
    if not lab.tools().pgbackrest_archives:
        pytest.skip(f"pgBackRest does not archive PostgreSQL {lab.tools().pg_version} in this lab")


@pytest.fixture(scope="session")
def lab_session() -> Iterator[Lab]:
    """The lab, brought up once for the whole session and torn down at its end."""
    lab = Lab(_layout(), out=sys.stderr)
    lab.up(rows=TEST_ROWS)
    yield lab
    if os.environ.get("PGTOPHA_TEST_KEEP_LAB") != "1":
        # Quiet: after an interrupt the stream it was given may be closed, and the lab must still go.
        Lab(lab.layout, out=io.StringIO()).down()


def _log_tails(lab: Lab, cluster: dict[str, Any] | None, lines: int = 15) -> str:
    """The newest Patroni and PostgreSQL log lines of every node not running: why it did not return.

    Patroni's own output file comes too: a traceback that ends it lands there, not in its log.
    """
    states = {m.get("name"): m.get("state") for m in (cluster or {}).get("members", [])}
    out = []
    for name in NODE_NAMES:
        if states.get(name) in ("running", "streaming"):
            continue
        stdout = lab.layout.log_dir / f"patroni-{name}.out"
        newest = [stdout] if stdout.is_file() and stdout.stat().st_size else []
        for d in (lab.layout.log_dir / f"patroni-{name}", lab.layout.server_log_dir(lab.index(name))):
            files = sorted(d.glob("*"), key=lambda f: f.stat().st_mtime) if d.is_dir() else []
            newest += files[-1:]
        out += [f"--- {f}\n" + "\n".join(log_tail(f, lines)) for f in newest]
    return "\n".join(out)


def restore(lab: Lab, timeout: float = 240) -> None:
    """Undo what an earlier test may have left: frozen or stopped nodes, a broken archive, WAL kept."""
    quiet = Lab(lab.layout, out=io.StringIO())
    for name in NODE_NAMES:
        faults.thaw(quiet, name)
        if (lab.layout.run_dir / f"behind-{name}.json").exists():
            faults.fall_behind(quiet, name, undo=True)
    faults.fix_archive(quiet)
    for name in NODE_NAMES:
        if not quiet.book.running(f"patroni-{name}"):
            quiet.start_patroni(name, python=quiet.patroni_python())
    if not poll(quiet.healthy, timeout, interval=0.5):
        cluster = quiet.cluster()
        raise AssertionError(f"lab not healthy within {timeout}s: {cluster}\n{_log_tails(quiet, cluster)}")
    faults.undo_takeover_faults(quiet)  # nofailover tags and synchronous mode an earlier test set
    faults.release_slot(quiet)  # WAL an earlier test wrote is no later test's warning
    # Patroni restarts a standby to copy a permanent slot the leader had to recreate.
    if not poll(quiet.healthy, timeout, interval=0.5):
        cluster = quiet.cluster()
        raise AssertionError(
            f"lab not healthy within {timeout}s after the slot: {cluster}\n{_log_tails(quiet, cluster)}"
        )
    if lab.tools().pg_version >= 17:
        # A failover slot idle since a failover is missing on a standby until advanced past it.
        quiet.sync_failover_slots()


@pytest.fixture
def lab(lab_session: Lab) -> Lab:
    """The session's lab, healthy (one leader, two streaming replicas) when the test starts.

    Tests must not assume which node leads: switchovers and failovers move the leader.
    """
    restore(lab_session)
    return lab_session


@pytest.fixture
def lab_settings(lab: Lab) -> Settings:
    """Console settings the lab wrote for itself (pg_monitor role, REST password file)."""
    return load_settings(lab.layout.console_config, environ={})

"""`pgtop-ha check` on the lab: OK when healthy, CRITICAL through a failover, --wait-healthy after it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.configs import NATIVE_SLOT_SYNC
from pgtop_ha.lab.procs import poll

PGTOP = [sys.executable, "-m", "pgtop_ha"]


def _check(lab: Lab, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = [*PGTOP, "--config", str(lab.layout.console_config), "check", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def test_check_through_a_failover_and_wait_healthy(lab: Lab) -> None:
    ok = _check(lab)
    assert ok.returncode == 0, ok.stdout
    assert ok.stdout.startswith("PGTOP-HA OK - healthy | members=3;;;0 leaders=1;;;0 pg_reachable=3;;;0")
    quiet = Lab(lab.layout, out=io.StringIO())
    old = quiet.leader()
    assert old is not None
    faults.stop_patroni(quiet, old)
    seen: list[subprocess.CompletedProcess[str]] = []

    def critical() -> bool:
        seen.append(_check(lab, "--json"))
        return seen[-1].returncode == 2

    assert poll(critical, 60, interval=0.5), seen[-1].stdout
    doc = json.loads(seen[-1].stdout)
    assert doc["status"] == "CRITICAL" and doc["exit_code"] == 2
    crit = [v for v in doc["verdicts"] if v["level"] == 2 and v["counts"]]
    assert crit and all(v["rule"] and v["text"] for v in crit)
    assert any(v["subject"] == old for v in crit), crit

    # Bring the old leader back while --wait-healthy waits: it returns as soon as all is well.
    def back_as_a_dba_brings_it() -> None:
        faults.start_patroni(quiet, old)
        if quiet.tools().pg_version >= NATIVE_SLOT_SYNC:
            # 17+: the old leader keeps its own failover slot, stale, until it is dropped and the
            # slot advanced as its consumer would (docs/lab.md, `lab fault sync-slots`).
            poll(quiet.healthy, 120, interval=0.5)
            quiet.sync_failover_slots(timeout=60)

    starter = threading.Thread(target=back_as_a_dba_brings_it)
    starter.start()
    try:
        back = _check(lab, "--wait-healthy", "180", timeout=240)
    finally:
        starter.join(timeout=240)
    assert back.returncode == 0, back.stdout
    assert back.stdout.startswith("PGTOP-HA OK - healthy")


def test_check_from_patroni_and_haproxy_alone(lab: Lab) -> None:
    # A monitoring host with REST access only: nothing read from PostgreSQL, nothing judged of it.
    ok = _check(lab, "--no-postgres")
    assert ok.returncode == 0, ok.stdout
    first, said = ok.stdout.splitlines()[:2]
    assert first.startswith("PGTOP-HA OK - healthy | members=3;;;0 leaders=1;;;0 writers_up=1")
    assert "pg_reachable" not in first
    assert said == "PostgreSQL not read: [postgres] enabled = false: judged from Patroni and HAProxy alone"
    doc = json.loads(_check(lab, "--no-postgres", "--json").stdout)
    assert doc["postgres_read"] is False and doc["exit_code"] == 0
    argv = [*PGTOP, "--config", str(lab.layout.console_config), "--no-postgres", "snapshot", "--json"]
    snap = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout)
    assert snap["nodes"] == [] and snap["postgres_read"] is False
    # The leader race still runs, on Patroni's lag, and says so.
    assert snap["forecast"]["winners"] and any("Patroni's lag" in a for a in snap["forecast"]["assumptions"])

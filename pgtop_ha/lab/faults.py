"""Failure tests for the lab: each bounded in time and reversible."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time

import httpx

from pgtop_ha.errors import UserError
from pgtop_ha.lab import procs
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import COPY_TABLE, DBNAME, NODE_NAMES, REST_USER, SUPERUSER
from pgtop_ha.lab.progress import Progress
from pgtop_ha.lab.tools import find_tools


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue


def kill_primary(lab: Lab) -> str:
    """kill -9 the leader's postmaster (an OOM-kill look-alike); Patroni usually restarts it."""
    i = lab.leader_index()
    pid = procs.postmaster_pid(lab.layout.data_dir(i))
    if pid is None:
        raise UserError(f"{NODE_NAMES[i]} has no running postmaster to kill")
    os.kill(pid, signal.SIGKILL)
    return f"killed postmaster {pid} of leader {NODE_NAMES[i]} (SIGKILL)"


def crash(lab: Lab, node: str) -> str:
    """kill -9 a node's Patroni and postmaster: a power cut."""
    i = lab.index(node)
    pids = [
        p for p in (lab.book.running(f"patroni-{node}"), procs.postmaster_pid(lab.layout.data_dir(i))) if p
    ]
    if not pids:
        raise UserError(
            f"{node} is not running; bring it back with `pgtop-ha lab fault start-patroni {node}`"
        )
    _signal(pids, signal.SIGKILL)
    procs.wait_gone(pids, time.monotonic() + 10)
    return f"crashed {node}: SIGKILL to {', '.join(map(str, pids))}"


def stop_patroni(lab: Lab, node: str) -> str:
    """Stop a node's Patroni gracefully (a leader hands over at once)."""
    pid = lab.book.running(f"patroni-{node}")
    lab.index(node)
    if pid is None:
        raise UserError(f"Patroni on {node} is not running")
    progress = Progress(total=1, out=lab.out)
    progress.step(f"stopping Patroni on {node} (PID {pid}); it stops PostgreSQL first")
    os.kill(pid, signal.SIGTERM)
    if procs.wait_gone([pid], time.monotonic() + 90):
        raise UserError(f"Patroni on {node} (PID {pid}) did not stop within 90s")
    return f"Patroni on {node} stopped in {progress.elapsed():.1f}s"


def start_patroni(lab: Lab, node: str, timeout: float = 180) -> str:
    """Start a node's Patroni again (also after `crash`) and wait until it runs or streams."""
    lab.index(node)
    progress = Progress(total=1, out=lab.out)
    progress.step(f"starting Patroni on {node}")
    lab.start_patroni(node, python=lab.patroni_python())

    def back() -> bool:
        # Ask the node itself: after a crash /cluster still shows its stale entry until the TTL.
        state = lab.own_state(node)
        progress.note(f"{node} state: {state or 'REST API not answering yet'}")
        return state in ("running", "streaming")

    if not procs.poll(back, timeout, interval=0.5):
        raise UserError(f"{node} did not come back within {timeout:.0f}s; see {lab.layout.log_dir}")
    return f"{node} is back in {progress.elapsed():.1f}s"


def _frozen_file(lab: Lab, node: str) -> os.PathLike[str]:
    return lab.layout.run_dir / f"frozen-{node}.json"


def freeze(lab: Lab, node: str) -> str:
    """SIGSTOP a node's Patroni and every postgres process of it."""
    i = lab.index(node)
    pids = [p for p in [lab.book.running(f"patroni-{node}")] if p]
    pids += procs.pids_under(lab.layout.data_dir(i), lab.run_as.uid)
    if not pids:
        raise UserError(f"{node} has no running process to freeze")
    with open(_frozen_file(lab, node), "w") as fh:
        json.dump(pids, fh)
    _signal(pids, signal.SIGSTOP)
    return f"froze {node}: SIGSTOP to {len(pids)} processes; undo with `pgtop-ha lab fault thaw {node}`"


def thaw(lab: Lab, node: str) -> str:
    """SIGCONT what `freeze` stopped (and anything else of that node, to be safe)."""
    i = lab.index(node)
    try:
        with open(_frozen_file(lab, node)) as fh:
            pids = [int(p) for p in json.load(fh)]
    except (OSError, ValueError):
        pids = []
    pids += [p for p in [lab.book.running(f"patroni-{node}")] if p]
    pids += procs.pids_under(lab.layout.data_dir(i), lab.run_as.uid)
    _signal(sorted(set(pids)), signal.SIGCONT)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_frozen_file(lab, node))
    return f"thawed {node}"


def _repo(lab: Lab) -> os.PathLike[str]:
    return lab.layout.state_dir / "pgbackrest" / "repo"


def break_archive(lab: Lab) -> str:
    """Make the pgBackRest repository unwritable: archiving fails and .ready files pile up."""
    os.chmod(_repo(lab), 0)
    return "archive repository made unwritable; undo with `pgtop-ha lab fault fix-archive`"


def fix_archive(lab: Lab) -> str:
    """Make the repository writable again; the archiver catches up."""
    os.chmod(_repo(lab), 0o700)
    return "archive repository writable again"


def switchover(lab: Lab, to: str | None = None, timeout: float = 90) -> str:
    """Switch over through Patroni's REST API (for scripts) and wait for the new leader."""
    leader = lab.leader()
    if leader is None:
        raise UserError("the lab has no leader to switch over from")
    if to is not None:
        lab.index(to)
        if to == leader:
            raise UserError(f"{to} already leads")
    body: dict[str, str] = {"leader": leader}
    if to:
        body["candidate"] = to
    password = lab.layout.rest_password_file.read_text().strip()
    progress = Progress(total=2, out=lab.out)
    progress.step(f"POST /switchover from {leader}" + (f" to {to}" if to else ""))
    url = lab.layout.patroni_url(lab.index(leader))
    try:
        resp = httpx.post(
            f"{url}/switchover", json=body, auth=(REST_USER, password), timeout=60, trust_env=False
        )
    except httpx.HTTPError as exc:
        raise UserError(f"switchover request to {url} failed: {exc}") from None
    if resp.status_code != 200:
        raise UserError(f"Patroni refused the switchover ({resp.status_code}): {resp.text.strip()}")
    progress.step("waiting for the new leader")

    def moved() -> bool:
        new = lab.leader()
        progress.note(f"leader: {new or 'none'}")
        return new is not None and new != leader and (to is None or new == to)

    if not procs.poll(moved, timeout, interval=0.3):
        raise UserError(f"no new leader observed within {timeout:.0f}s")
    return f"switchover done: {lab.leader()} leads (was {leader}) in {progress.elapsed():.1f}s"


def load(lab: Lab, seconds: int) -> str:
    """Run pgbench through HAProxy's writer port for ``seconds``."""
    if not 1 <= seconds <= 3600:
        raise UserError("--seconds must be between 1 and 3600")
    tools = find_tools()
    env = procs.lab_env({"PGPASSFILE": str(lab.layout.pgpass)})
    # Besides pgbench's own transactions, a few large ones on the published table: they exceed
    # logical_decoding_work_mem, so a subscriber's slot spills or streams for real.
    big = lab.layout.run_dir / "bigtxn.sql"
    big.write_text(
        "\\set id random(1, 900000)\n"
        f"UPDATE {COPY_TABLE} SET created_at = now() WHERE id BETWEEN :id AND :id + 2000;\n"
    )
    big.chmod(0o644)
    result = subprocess.run(
        [str(tools.pgbench), "-h", "127.0.0.1", "-p", str(lab.layout.writer_port), "-U", SUPERUSER,
         "-c", "4", "-j", "2", "-T", str(seconds), "-P", "5", "-n",
         "-b", "tpcb-like@20", "-f", f"{big}@1", DBNAME],
        env=env, text=True, stderr=subprocess.STDOUT, stdout=None, timeout=seconds + 60,
    )  # fmt: skip
    if result.returncode != 0:
        raise UserError(f"pgbench failed (exit {result.returncode}); is the writer port up?")
    return f"load finished: pgbench ran {seconds}s through 127.0.0.1:{lab.layout.writer_port}"

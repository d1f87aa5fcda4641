"""Failure tests for the lab: each bounded in time and reversible."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psutil

from pgtop_ha.errors import UserError
from pgtop_ha.lab import procs, versions
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import APP_USER, COPY_TABLE, DBNAME, PERMANENT_SLOT, REST_USER, SUPERUSER
from pgtop_ha.lab.progress import Progress
from pgtop_ha.models.roles import is_sync_role


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
        raise UserError(f"{lab.layout.names[i]} has no running postmaster to kill")
    os.kill(pid, signal.SIGKILL)
    return f"killed postmaster {pid} of leader {lab.layout.names[i]} (SIGKILL)"


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


def start_patroni(lab: Lab, node: str, timeout: float = 180, python: str | None = None) -> str:
    """Start a node's Patroni again (also after `crash`) and wait until it runs or streams."""
    lab.index(node)
    progress = Progress(total=1, out=lab.out)
    progress.step(f"starting Patroni on {node}")
    lab.start_patroni(node, python=python or lab.patroni_python())

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


def _rest(lab: Lab, method: str, url: str, *, timeout: float, body: object = None) -> httpx.Response:
    """One authenticated call to a lab member's REST API; a UserError naming it when it fails."""
    password = lab.layout.rest_password_file.read_text().strip()
    send: Callable[..., httpx.Response] = getattr(httpx, method.lower())  # looked up at each call
    extra = {} if body is None else {"json": body}
    try:
        return send(
            url,
            auth=(REST_USER, password),
            timeout=timeout,
            trust_env=False,
            verify=lab.layout.verify,
            **extra,
        )
    except httpx.HTTPError as exc:
        raise UserError(f"{method} {url} failed: {exc}") from None


def schedule_restart(lab: Lab, node: str, minutes: int = 60, cancel: bool = False) -> str:
    """Schedule a restart of ``node`` in ``minutes`` through Patroni's REST API (or cancel it)."""
    if not 1 <= minutes <= 1440:
        raise UserError("--minutes must be between 1 and 1440")
    url = f"{lab.layout.patroni_url(lab.index(node))}/restart"
    at = datetime.now(UTC) + timedelta(minutes=minutes)
    if cancel:
        resp = _rest(lab, "DELETE", url, timeout=30)
    else:
        resp = _rest(lab, "POST", url, timeout=30, body={"schedule": at.isoformat(timespec="seconds")})
    if resp.status_code not in (200, 202, 404):
        raise UserError(f"Patroni refused ({resp.status_code}): {resp.text.strip()[:200]}")
    if cancel:
        return f"{node}: scheduled restart cancelled ({resp.text.strip()[:80]})"
    return f"{node}: restart scheduled at {at:%H:%M} UTC; undo: `lab fault schedule-restart {node} --cancel`"


def stop_etcd(lab: Lab, seconds: int = 30) -> str:
    """SIGSTOP etcd for ``seconds`` (Patroni cannot reach its DCS), then SIGCONT it."""
    if not 1 <= seconds <= 600:
        raise UserError("--seconds must be between 1 and 600")
    pid = lab.book.running("etcd")
    if pid is None:
        raise UserError("the lab's etcd is not running")
    progress = Progress(total=2, out=lab.out)
    progress.step(f"etcd stopped (SIGSTOP) for {seconds}s: Patroni's leader runs in failsafe mode")
    _signal([pid], signal.SIGSTOP)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            progress.note("etcd stopped", every=5)
            time.sleep(0.5)  # the fault lasts this long by design
    finally:
        _signal([pid], signal.SIGCONT)
    progress.step("etcd running again")
    return f"etcd was stopped for {progress.elapsed():.1f}s"


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


def mixed_patroni(lab: Lab, node: str, minor: str) -> str:
    """Restart a node's Patroni under another version, as midway through a rolling upgrade."""
    minor = versions.patroni_minor(minor)
    python = str(versions.ensure_patroni(minor, lambda line: Progress(total=1, out=lab.out).note(line)))
    stop_patroni(lab, node)
    start_patroni(lab, node, python=python)
    return f"{node} runs Patroni {versions.PATRONI[minor]}; run it again with the lab's own version to end it"


def fix_archive(lab: Lab) -> str:
    """Make the repository writable again; the archiver catches up."""
    os.chmod(_repo(lab), 0o700)
    return "archive repository writable again"


RELEASED_BELOW = 256 * 1024**2  # what a released permanent slot may still keep on a member


# What psql says of a server that is restarting, by the moment it asked (a fast shutdown ends
# every backend).
_RESTARTING = (
    "Connection refused",
    "starting up",
    "shutting down",
    "closed the connection unexpectedly",
    "terminating connection due to administrator command",
)


def release_slot(lab: Lab, timeout: float = 120) -> str:
    """Advance the idle permanent slot to now, as a consumer would; wait for every member's copy."""
    leader = lab.leader_index()
    advance = (
        "SELECT count(pg_replication_slot_advance(slot_name, pg_current_wal_lsn())) "
        f"FROM pg_replication_slots WHERE slot_name = '{PERMANENT_SLOT}' AND NOT active"
    )
    kept = (
        "SELECT coalesce(max(pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN "
        "pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END, restart_lsn)), 0)::bigint "
        f"FROM pg_replication_slots WHERE slot_name = '{PERMANENT_SLOT}'"
    )

    def low() -> bool:
        nodes = range(len(lab.layout.names))
        try:
            return all(int(lab.psql(kept, i, timeout=10) or 0) < RELEASED_BELOW for i in nodes)
        except UserError as e:
            # Patroni restarts a standby to copy a slot the leader recreated: ask again.
            if any(w in str(e) for w in _RESTARTING):
                return False
            raise

    exists = f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{PERMANENT_SLOT}'"
    lost = (
        "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots "
        f"WHERE slot_name = '{PERMANENT_SLOT}' AND NOT active"
    )

    def released() -> bool:
        # restart_lsn moves only past a running-xacts record decoded after the last advance: a
        # checkpoint writes one, the next advance takes it. Patroni then moves the standbys' copies.
        try:
            lab.psql(advance, leader, timeout=timeout)
        except UserError as e:
            if "has already been removed" not in str(e):
                raise
            # A copy promoted with a member may point at WAL that member never kept: no consumer
            # can use it again. Drop it; Patroni recreates its permanent slot at the current LSN.
            lab.psql(lost, leader, timeout=timeout)
            return False
        if lab.psql(exists, leader, timeout=timeout) in ("", "0"):
            return False  # dropped above; Patroni has not recreated it yet
        lab.psql("CHECKPOINT", leader, timeout=timeout)
        return low()

    if low():
        return f"permanent slot {PERMANENT_SLOT} keeps little WAL already"
    if not procs.poll(released, timeout, interval=0.5):
        raise UserError(f"the permanent slot {PERMANENT_SLOT} still keeps WAL after {timeout:.0f}s")
    return f"permanent slot {PERMANENT_SLOT} advanced to the current WAL position"


# Patroni's 412 while no replica qualifies yet; any other refusal is final.
NO_CANDIDATE_YET = "no good candidates have been found"
CANDIDATE_WAIT_S = 30.0
CANDIDATE_RETRY_S = 1.0


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
    progress = Progress(total=2, out=lab.out)
    progress.step(f"POST /switchover from {leader}" + (f" to {to}" if to else ""))
    url = lab.layout.patroni_url(lab.index(leader))
    refused: list[httpx.Response] = []

    def accepted() -> bool:
        resp = _rest(lab, "POST", f"{url}/switchover", timeout=60, body=body)
        if resp.status_code == 200:
            return True
        if resp.status_code != 412 or NO_CANDIDATE_YET not in resp.text:
            raise UserError(f"Patroni refused the switchover ({resp.status_code}): {resp.text.strip()}")
        # Patroni asks each replica's /patroni before it agrees: one restarting (Patroni restarts
        # each replica once to create the permanent slot) or a moment behind is "no good
        # candidate" for now, not for good (seen once in CI right after the lab was healthy).
        refused.append(resp)
        progress.note("Patroni: no good candidate yet (a replica restarting or behind); asking again")
        return False

    if not procs.poll(accepted, CANDIDATE_WAIT_S, interval=CANDIDATE_RETRY_S):
        last = refused[-1]
        raise UserError(
            f"Patroni refused the switchover ({last.status_code}) for {CANDIDATE_WAIT_S:.0f}s: "
            f"{last.text.strip()}; see `pgtop-ha lab status`"
        )
    progress.step("waiting for the new leader")

    def moved() -> bool:
        new = lab.leader()
        progress.note(f"leader: {new or 'none'}")
        return new is not None and new != leader and (to is None or new == to)

    if not procs.poll(moved, timeout, interval=0.3):
        raise UserError(f"no new leader observed within {timeout:.0f}s")
    return f"switchover done: {lab.leader()} leads (was {leader}) in {progress.elapsed():.1f}s"


# pgbench with its large transactions writes WAL at tens of MB/s here; the lab's permanent slot
# (kept on every node) and pgBackRest's archive keep all of it, so an hour of load can fill a
# disk (80 GB in ~20 min of benchmarks, 2026-11-25). The load stops before the disk is full.
LOAD_DISK_FLOOR = 5 * 2**30


def disk_left(path: Path, floor: int = LOAD_DISK_FLOOR) -> str | None:
    """Why the load cannot go on (``path``'s filesystem has less than ``floor`` bytes free), or None."""
    where = next((p for p in (path, *path.parents) if p.exists()), Path("/"))  # a lab not made yet
    free = shutil.disk_usage(where).free
    if free >= floor:
        return None
    return (
        f"the filesystem of {path} has {free / 2**30:.1f} GiB free (floor "
        f"{floor / 2**30:.0f} GiB); the lab keeps the load's WAL for its slot and pgBackRest's "
        "archive: `pgtop-ha lab down` frees it"
    )


def load(lab: Lab, seconds: int, floor: int = LOAD_DISK_FLOOR) -> str:
    """Run pgbench through HAProxy's writer port (through pgBouncer in front of it, if the lab has one)."""
    if not 1 <= seconds <= 3600:
        raise UserError("--seconds must be between 1 and 3600")
    state = lab.layout.state_dir
    if (why := disk_left(state, floor)) is not None:
        raise UserError(f"no load started: {why}")
    tools = lab.tools()
    env = procs.lab_env({"PGPASSFILE": str(lab.layout.pgpass)})
    # Besides pgbench's own transactions, a few large ones on the published table: they exceed
    # logical_decoding_work_mem, so a subscriber's slot spills or streams for real.
    big = lab.layout.run_dir / "bigtxn.sql"
    big.write_text(
        "\\set id random(1, 900000)\n"
        f"UPDATE {COPY_TABLE} SET created_at = now() WHERE id BETWEEN :id AND :id + 2000;\n"
    )
    big.chmod(0o644)
    port, via = lab.layout.writer_port, "HAProxy's writer port"
    if lab.book.running("pgbouncer"):
        # As applications there would: through the pooler, which sends them on to the writer port.
        port, via = lab.layout.pgbouncer_port, "pgBouncer (then HAProxy's writer port)"
    try:
        code = procs.run_child(
            [str(tools.pgbench), "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER,
             "-c", "4", "-j", "2", "-T", str(seconds), "-P", "5", "-n",
             "-b", "tpcb-like@20", "-f", f"{big}@1", DBNAME],
            env=env, text=True, stderr=subprocess.STDOUT, stdout=None, timeout=seconds + 60,
            stop_when=lambda: disk_left(state, floor),
        )  # fmt: skip
    except procs.ChildStopped as exc:
        raise UserError(f"load stopped: {exc}") from None
    if code != 0:
        raise UserError(f"pgbench failed (exit {code}); is the writer port up?")
    done = f"load finished: pgbench ran {seconds}s through {via}, 127.0.0.1:{port}"
    return done + _retained_after_load(lab)


def _retained_after_load(lab: Lab) -> str:
    # Two benchmark sets of load left every member retaining 21 GiB for the permanent slot, the
    # disk at 99 %: the floor above guards a load while it runs, this says what stays after it.
    try:
        retained = lab.psql(
            "SELECT pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) "
            f"FROM pg_replication_slots WHERE slot_name = '{PERMANENT_SLOT}'",
            lab.leader_index(),
            timeout=10,
        )
    except (UserError, subprocess.TimeoutExpired):
        return ""  # the load's own result stands; the slot is a note
    if not retained:
        return ""
    return (
        f"; the permanent slot {PERMANENT_SLOT} now retains {retained} of WAL on each member "
        "(`pgtop-ha lab down` frees it)"
    )


# ----- faults that feed the panes inside a node -------------------------------------------------

LOCK_TABLE = "lab_locked"
LOCK_HOLDER_APP = "lab-fault-lock-holder"  # the application_name of the session holding the lock


def _client_env(lab: Lab) -> dict[str, str]:
    """What a lab client process needs: the lab user's own passfile (never a password in argv)."""
    return {"PGPASSFILE": str(lab.layout.run_dir / "lab-pgpass"), "PGCONNECT_TIMEOUT": "5"}


def _psql_argv(lab: Lab, port: int, sql: str, app: str) -> list[str]:
    # The application's role, no superuser: the operator role may signal its sessions.
    return [
        str(lab.tools().psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port),
        "-U", APP_USER, "-d", DBNAME, "-c", f"SET application_name = '{app}'", "-c", sql,
    ]  # fmt: skip


def _spawn_client(lab: Lab, name: str, argv: list[str]) -> int:
    """Start a lab client as the lab user, recorded in the PID book (so `lab down` ends it too)."""
    proc = procs.spawn(
        argv, log=lab.layout.log_dir / f"{name}.log", run_as=lab.run_as, env=_client_env(lab),
        cwd=lab.layout.run_dir,
    )  # fmt: skip
    lab.book.record(name, proc.pid)
    return proc.pid


def _end_clients(lab: Lab, names: list[str]) -> None:
    pids = [p for n in names if (p := lab.book.running(n))]
    procs.terminate(pids, grace=5)
    for n in names:
        lab.book.forget(n)


def _wait_clients(lab: Lab, names: list[str], progress: Progress, seconds: float, what: str) -> None:
    """Wait until every client ended (they end on their own), ending them if they outlive the limit."""
    deadline = time.monotonic() + seconds

    def gone() -> bool:
        left = [n for n in names if lab.book.running(n)]
        progress.note(f"{what}; {max(0.0, deadline - time.monotonic()):.0f}s left", every=5)
        return not left

    try:
        procs.poll(gone, seconds + 15, interval=0.5)
    finally:
        _end_clients(lab, names)


def lock(lab: Lab, seconds: int = 60, waiters: int = 2) -> str:
    """Hold an AccessExclusiveLock on a lab table for ``seconds`` on the leader while sessions queue."""
    if not 1 <= seconds <= 3600:
        raise UserError("--seconds must be between 1 and 3600")
    if not 0 <= waiters <= 20:
        raise UserError("--waiters must be between 0 and 20")
    i = lab.leader_index()
    port = lab.layout.pg_port(i)
    progress = Progress(total=3, out=lab.out)
    progress.step(f"{lab.layout.names[i]}: preparing table {LOCK_TABLE}")
    if lab.psql(f"SELECT count(*) FROM pg_roles WHERE rolname = '{APP_USER}'", i) != "1":
        raise UserError(f"this lab predates its role {APP_USER}; recreate it: `lab down`, then `lab up`")
    lab.psql(
        f"CREATE TABLE IF NOT EXISTS {LOCK_TABLE} (id int PRIMARY KEY, note text); "
        f"INSERT INTO {LOCK_TABLE} VALUES (1, 'locked by lab fault lock') ON CONFLICT DO NOTHING; "
        f"GRANT SELECT, UPDATE ON {LOCK_TABLE} TO {APP_USER}",
        i,
    )
    holder = "fault-lock-holder"
    names = [holder] + [f"fault-lock-waiter-{k}" for k in range(1, waiters + 1)]
    _end_clients(lab, names)  # a previous run's leftovers
    progress.step(f"BEGIN; LOCK {LOCK_TABLE} IN ACCESS EXCLUSIVE MODE; pg_sleep({seconds})")
    try:
        _spawn_client(
            lab, holder,
            _psql_argv(lab, port, f"BEGIN; LOCK TABLE {LOCK_TABLE} IN ACCESS EXCLUSIVE MODE; "
                       f"SELECT pg_sleep({seconds}); COMMIT;", LOCK_HOLDER_APP),
        )  # fmt: skip
        granted = (
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.granted "
            f"AND l.mode = 'AccessExclusiveLock' AND l.relation = '{LOCK_TABLE}'::regclass "
            f"AND a.application_name = '{LOCK_HOLDER_APP}'"
        )
        if not procs.poll(lambda: lab.psql(granted, i) == "1", 15, interval=0.2):
            raise UserError(
                f"the lock holder did not get its lock; see {lab.layout.log_dir / (holder + '.log')}"
            )
        progress.step(f"{waiters} sessions waiting on {LOCK_TABLE} for {seconds}s")
        for name in names[1:]:
            _spawn_client(
                lab,
                name,
                _psql_argv(lab, port, f"SELECT count(*) FROM {LOCK_TABLE}", "lab-fault-lock-waiter"),
            )
        _wait_clients(lab, names, progress, seconds, f"lock held on {lab.layout.names[i]}")
    finally:
        _end_clients(lab, names)
    return f"lock on {LOCK_TABLE} released after {progress.elapsed():.1f}s ({waiters} waiters)"


# A libpq client that reads its result a few bytes at a time: a tiny receive buffer, single-row mode,
# and a pause between reads, so the server's send buffer fills and the backend waits on ClientWrite.
_SLOW_READER = """
import socket, sys, time
import psycopg
from psycopg import pq
dsn, seconds = sys.argv[1], float(sys.argv[2])
conn = psycopg.connect(dsn, autocommit=True)
pg = conn.pgconn
sock = socket.socket(fileno=pg.socket)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sock.detach()  # libpq owns the descriptor
# A set-returning function in the target list streams (one in FROM would fill a temp file first).
pg.send_query(b"SELECT generate_series(1, 100000000), repeat('x', 200)")
pg.set_single_row_mode()
end = time.monotonic() + seconds
while time.monotonic() < end:
    time.sleep(0.2)
    pg.consume_input()
    while not pg.is_busy():
        if pg.get_result() is None:
            sys.exit(0)
"""


def slow_reader(lab: Lab, seconds: int = 60) -> str:
    """A client on the leader that reads a big result slowly: its backend waits on ClientWrite."""
    if not 1 <= seconds <= 3600:
        raise UserError("--seconds must be between 1 and 3600")
    return _leader_client(
        lab, "slow-reader", _SLOW_READER, seconds,
        doing="a client reading a large result a few bytes at a time",
        until="wait_event = 'ClientWrite'", seen="the backend waits on ClientWrite", what="slow reader",
    )  # fmt: skip


def _leader_client(lab: Lab, fault: str, script: str, seconds: int, *, doing: str, until: str, seen: str,
                   what: str) -> str:  # fmt: skip
    """Run ``script`` as a lab client on the leader for ``seconds``, saying when its backend is ``until``."""
    i = lab.leader_index()
    app = f"lab-fault-{fault}"
    dsn = (
        f"host=127.0.0.1 port={lab.layout.pg_port(i)} user={SUPERUSER} dbname={DBNAME} application_name={app}"
    )
    name = f"fault-{fault}"
    _end_clients(lab, [name])
    progress = Progress(total=2, out=lab.out)
    progress.step(f"{lab.layout.names[i]}: {doing}")
    try:
        _spawn_client(lab, name, [lab.patroni_python(), "-c", script, dsn, str(seconds)])
        reached = f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{app}' AND {until}"
        if procs.poll(lambda: lab.psql(reached, i) != "0", 30, interval=0.5):
            progress.step(f"{seen}; ending in {seconds}s")
        else:
            progress.step(f"not seen yet ({seen}); the client keeps going")
        _wait_clients(lab, [name], progress, seconds, f"{what} on {lab.layout.names[i]}")
    finally:
        _end_clients(lab, [name])
    return f"{what} ended after {progress.elapsed():.1f}s"


_LONG_XACT = """
import sys, time
import psycopg
dsn, seconds = sys.argv[1], float(sys.argv[2])
with psycopg.connect(dsn) as conn:
    conn.execute("SELECT txid_current()")  # an xid, then idle in transaction: the horizon stays
    time.sleep(seconds)
"""


def long_xact(lab: Lab, seconds: int = 300) -> str:
    """A session on the leader idle in transaction: it holds the xmin horizon while it lasts."""
    if not 1 <= seconds <= 86400:
        raise UserError("--seconds must be between 1 and 86400")
    return _leader_client(
        lab, "long-xact", _LONG_XACT, seconds,
        doing=f"a session idle in transaction for {seconds}s",
        until="state = 'idle in transaction' AND backend_xid IS NOT NULL",
        seen="it holds the xmin horizon", what="long transaction",
    )  # fmt: skip


def _table_size(lab: Lab, i: int) -> tuple[int, int]:
    """The published table's pages and rows, as pg_class last counted them."""
    text = lab.psql(f"SELECT relpages, reltuples::bigint FROM pg_class WHERE relname = '{COPY_TABLE}'", i)
    pages, _, rows = text.partition("|")
    return max(1, int(pages or 0)), max(1, int(rows or 0))


def vacuum(lab: Lab, seconds: int = 60) -> str:
    """A VACUUM of the published table on the leader, throttled to last about ``seconds``."""
    if not 1 <= seconds <= 3600:
        raise UserError("--seconds must be between 1 and 3600")
    i = lab.leader_index()
    pages, _ = _table_size(lab, i)
    # Each page costs at least 1 against a limit of 1: one sleep of the delay per page.
    delay_ms = min(100.0, max(0.1, seconds * 1000 / pages))
    options = (
        f"-c vacuum_cost_limit=1 -c vacuum_cost_delay={delay_ms:.2f} -c statement_timeout={seconds * 2}s"
    )
    progress = Progress(total=1, out=lab.out)
    progress.step(f"{lab.layout.names[i]}: VACUUM {COPY_TABLE} ({pages} pages, {delay_ms:.1f} ms a page)")
    try:
        lab.psql(f"VACUUM (DISABLE_PAGE_SKIPPING) {COPY_TABLE}", i, timeout=seconds * 2 + 30, options=options)
    except UserError as exc:
        return f"VACUUM stopped after {progress.elapsed():.1f}s: {exc}"
    return f"VACUUM done in {progress.elapsed():.1f}s"


def create_index(lab: Lab, seconds: int = 60) -> str:
    """CREATE INDEX CONCURRENTLY on the published table, slowed to last about ``seconds``; then dropped."""
    if not 1 <= seconds <= 3600:
        raise UserError("--seconds must be between 1 and 3600")
    i = lab.leader_index()
    _, rows = _table_size(lab, i)
    # An index on a key that sleeps a little per row: the build's phases last long enough to watch.
    pause = seconds / rows
    progress = Progress(total=1, out=lab.out)
    progress.step(f"{lab.layout.names[i]}: CREATE INDEX CONCURRENTLY on {COPY_TABLE} ({rows} rows)")
    lab.psql(
        "CREATE OR REPLACE FUNCTION lab_slow_key(bigint) RETURNS bigint IMMUTABLE LANGUAGE plpgsql "
        f"AS $$ BEGIN PERFORM pg_sleep({pause:.6f}); RETURN $1; END $$",
        i,
    )
    try:
        lab.psql(
            f"CREATE INDEX CONCURRENTLY lab_fault_idx ON {COPY_TABLE} (lab_slow_key(id))",
            i, timeout=seconds * 3 + 30, options=f"-c statement_timeout={seconds * 3}s",
        )  # fmt: skip
        outcome = f"CREATE INDEX CONCURRENTLY done in {progress.elapsed():.1f}s"
    except UserError as exc:
        outcome = f"CREATE INDEX CONCURRENTLY stopped after {progress.elapsed():.1f}s: {exc}"
    finally:
        lab.psql("DROP INDEX CONCURRENTLY IF EXISTS lab_fault_idx", i, timeout=120)
        lab.psql("DROP FUNCTION IF EXISTS lab_slow_key(bigint)", i)
    return outcome


PENDING_PARAMETER = "max_connections"


def _patch_config(lab: Lab, body: dict[str, object]) -> dict[str, object]:
    url = lab.layout.patroni_url(lab.leader_index())
    resp = _rest(lab, "PATCH", f"{url}/config", timeout=30, body=body)
    if resp.status_code != 200:
        raise UserError(f"Patroni refused PATCH /config ({resp.status_code}): {resp.text.strip()[:200]}")
    answer: dict[str, object] = resp.json()
    return answer


def _pending_flags(lab: Lab) -> list[bool]:
    flags = []
    for m in (lab.cluster() or {}).get("members", []):
        flags.append(bool(m.get("pending_restart")))
    return flags


def pending_restart(lab: Lab, undo: bool = False, timeout: float = 60) -> str:
    """Raise max_connections through Patroni's /config (a restart is then pending); ``undo`` reverts."""
    progress = Progress(total=2, out=lab.out)
    saved = lab.layout.state_dir / "pending-restart.json"
    if undo:
        try:
            before = json.loads(saved.read_text())["before"]
        except (OSError, ValueError, KeyError):
            raise UserError(
                "no pending-restart fault to undo (nothing saved by `lab fault pending-restart`)"
            ) from None
        progress.step(
            f"PATCH /config {PENDING_PARAMETER} back to {before if before is not None else 'default'}"
        )
        _patch_config(lab, {"postgresql": {"parameters": {PENDING_PARAMETER: before}}})
        progress.step("waiting for pending_restart to clear on every member")
        if not procs.poll(lambda: not any(_pending_flags(lab)), timeout, interval=0.5):
            raise UserError(f"pending_restart still set after {timeout:.0f}s; see `pgtop-ha lab status`")
        saved.unlink(missing_ok=True)
        return f"{PENDING_PARAMETER} restored; no restart pending"
    url = lab.layout.patroni_url(lab.leader_index())
    try:
        config = _rest(lab, "GET", f"{url}/config", timeout=10).json()
    except ValueError as exc:
        raise UserError(f"GET {url}/config failed: {exc}") from None
    before = config.get("postgresql", {}).get("parameters", {}).get(PENDING_PARAMETER)
    if saved.exists():
        before = json.loads(saved.read_text()).get("before", before)
    running = int(lab.psql(f"SHOW {PENDING_PARAMETER}", lab.leader_index()))
    new = running + 10
    saved.write_text(json.dumps({"before": before, "new": new}))
    progress.step(f"PATCH /config {PENDING_PARAMETER} {running} -> {new} (postmaster context)")
    _patch_config(lab, {"postgresql": {"parameters": {PENDING_PARAMETER: new}}})
    progress.step("waiting for pending_restart on every member")
    members = len(lab.layout.names)
    if not procs.poll(lambda: _pending_flags(lab).count(True) == members, timeout, interval=0.5):
        raise UserError(f"pending_restart not reported by every member after {timeout:.0f}s")
    return (
        f"{PENDING_PARAMETER} = {new} pending a restart on every member; undo with "
        "`pgtop-ha lab fault pending-restart --undo`"
    )


def extensions(lab: Lab) -> str:
    """pg_buffercache and pg_prewarm in the lab database (on the leader; replicas follow)."""
    i = lab.leader_index()
    lab.psql("CREATE EXTENSION IF NOT EXISTS pg_buffercache; CREATE EXTENSION IF NOT EXISTS pg_prewarm", i)
    return f"pg_buffercache and pg_prewarm installed in {DBNAME} (through {lab.layout.names[i]})"


def backup(lab: Lab, kind: str = "full", timeout: float = 1800) -> str:
    """A pgBackRest backup of the lab stanza from the leader, with progress."""
    from pgtop_ha.lab.configs import STANZA

    if kind not in ("full", "diff", "incr"):
        raise UserError("--type must be full, diff or incr")
    tools = lab.tools()
    i = lab.leader_index()
    env = lab.env(i)
    progress = Progress(total=3, out=lab.out)
    progress.step(f"pgbackrest stanza-create (idempotent) on {lab.layout.names[i]}")
    cwd = lab.layout.state_dir / "pgbackrest"
    check = procs.run(
        [str(tools.pgbackrest), f"--stanza={STANZA}", "stanza-create"],
        run_as=lab.run_as, env=env, cwd=cwd, timeout=120, check=False,
    )  # fmt: skip
    if check.returncode != 0:
        raise UserError(f"pgbackrest stanza-create failed: {check.stderr.strip()[:300]}")
    progress.step(f"pgbackrest --type={kind} backup from {lab.layout.names[i]}")
    name = "backup"
    proc = procs.spawn(
        [str(tools.pgbackrest), f"--stanza={STANZA}", f"--type={kind}", "--log-level-console=info", "backup"],
        log=lab.layout.log_dir / "pgbackrest-backup.log", run_as=lab.run_as, env=env, cwd=cwd,
    )  # fmt: skip
    lab.book.record(name, proc.pid)
    try:
        log = lab.layout.log_dir / "pgbackrest-backup.log"

        def finished() -> bool:
            progress.note(f"backup running; {_last_line(log)}", every=3)
            return proc.poll() is not None

        if not procs.poll(finished, timeout, interval=0.5):
            raise UserError(f"the backup did not finish within {timeout:.0f}s; see {log}")
    finally:
        if proc.poll() is None:
            procs.terminate([proc.pid], grace=10)
        lab.book.forget(name)
    if proc.returncode != 0:
        raise UserError(f"pgbackrest backup failed (exit {proc.returncode}): {_last_line(log)}")
    progress.step("pgbackrest info")
    info = procs.run(
        [str(tools.pgbackrest), f"--stanza={STANZA}", "info"], run_as=lab.run_as, env=env, cwd=cwd,
        timeout=60, check=False,
    )  # fmt: skip
    print(info.stdout.rstrip(), file=lab.out)
    return f"{kind} backup of stanza {STANZA} done in {progress.elapsed():.1f}s"


def _last_line(path: os.PathLike[str]) -> str:
    lines = procs.log_tail(path, 1, limit=2048)
    return lines[-1][-200:] if lines else "no log yet"


def _walreceiver(lab: Lab, node: str) -> int:
    """The PID of a standby's WAL receiver among the postgres processes the lab started for it."""
    i = lab.index(node)
    for pid in procs.pids_under(lab.layout.data_dir(i), lab.run_as.uid):
        try:
            title = " ".join(psutil.Process(pid).cmdline())
        except psutil.Error:
            continue
        if "walreceiver" in title:
            return pid
    raise UserError(f"{node} has no WAL receiver (is it a streaming standby?)")


def fall_behind(lab: Lab, node: str, undo: bool = False) -> str:
    """SIGSTOP a standby's WAL receiver: it falls behind under writes; ``undo`` (SIGCONT): it catches up."""
    saved = lab.layout.run_dir / f"behind-{node}.json"
    if undo:
        try:
            pid = int(json.loads(saved.read_text()))
        except (OSError, ValueError, TypeError):
            raise UserError(
                f"{node} was not made to fall behind (nothing saved by `lab fault fall-behind`)"
            ) from None
        _signal([pid], signal.SIGCONT)
        saved.unlink(missing_ok=True)
        return f"{node}'s WAL receiver {pid} resumed (SIGCONT): it catches up"
    pid = _walreceiver(lab, node)
    saved.write_text(json.dumps(pid))
    _signal([pid], signal.SIGSTOP)
    return (
        f"{node}'s WAL receiver {pid} stopped (SIGSTOP): it falls behind as the leader writes "
        f"(`pgtop-ha lab fault load`); undo with `pgtop-ha lab fault fall-behind {node} --undo`"
    )


def _member_tags(lab: Lab, node: str) -> dict[str, object]:
    for m in (lab.cluster() or {}).get("members", []):
        if m.get("name") == node:
            tags = m.get("tags")
            return tags if isinstance(tags, dict) else {}
    return {}


def nofailover(lab: Lab, node: str, clear: bool = False, timeout: float = 60) -> str:
    """Tag a member nofailover (or clear it) in its Patroni config, reloaded; wait for /cluster to say so."""
    i = lab.index(node)
    path = lab.layout.state_dir / f"patroni-{node}.yml"
    conf = json.loads(path.read_text())  # the lab writes Patroni's YAML as JSON, a subset
    conf.setdefault("tags", {})["nofailover"] = not clear
    path.write_text(json.dumps(conf, indent=1))
    url = lab.layout.patroni_url(i)
    resp = _rest(lab, "POST", f"{url}/reload", timeout=30)
    if resp.status_code not in (200, 202):
        raise UserError(
            f"Patroni on {node} refused POST /reload ({resp.status_code}): {resp.text.strip()[:200]}"
        )
    if not procs.poll(
        lambda: bool(_member_tags(lab, node).get("nofailover")) is not clear, timeout, interval=0.5
    ):
        raise UserError(f"/cluster did not show {node}'s nofailover tag within {timeout:.0f}s")
    return f"{node} {'may be promoted again' if clear else 'tagged nofailover: Patroni will not promote it'}"


SYNC_MODES = ("off", "on", "strict", "quorum")


def sync_mode(lab: Lab, mode: str, timeout: float = 60) -> str:
    """Patroni's synchronous_mode through /config: off, on, strict (with synchronous_mode_strict), quorum."""
    if mode not in SYNC_MODES:
        raise UserError(f"synchronous mode must be one of {', '.join(SYNC_MODES)}")
    value: object = {"off": False, "on": True, "strict": True, "quorum": "quorum"}[mode]
    _patch_config(lab, {"synchronous_mode": value, "synchronous_mode_strict": mode == "strict"})

    def settled() -> bool:
        roles = [m.get("role") for m in (lab.cluster() or {}).get("members", [])]
        synced = any(is_sync_role(r) for r in roles if isinstance(r, str))
        return synced is (mode != "off")

    if not procs.poll(settled, timeout, interval=0.5):
        raise UserError(f"Patroni's members did not show synchronous mode {mode} within {timeout:.0f}s")
    return f"synchronous mode {mode}" + ("" if mode == "off" else ": a standby is synchronous")


def undo_takeover_faults(lab: Lab) -> None:
    """Clear every nofailover tag and turn synchronous mode off, where a fault set them."""
    for m in (lab.cluster() or {}).get("members", []):
        tags = m.get("tags")
        if isinstance(tags, dict) and tags.get("nofailover") and isinstance(m.get("name"), str):
            nofailover(lab, m["name"], clear=True)
    url = lab.layout.patroni_url(lab.leader_index())
    config = _rest(lab, "GET", f"{url}/config", timeout=10).json()
    if config.get("synchronous_mode") or config.get("synchronous_mode_strict"):
        sync_mode(lab, "off")

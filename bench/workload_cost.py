"""Server time of the workload reads against pg_activity's, in the same run (on demand, not in CI).

On the lab's leader: SESSIONS client sessions (most idle, some running, a few idle in
transaction), then pgtop-ha's read path with Sessions and Statements on screen (the cycle's
statement, pg_stat_statements every 10 s, the server log every 2 s) and pg_activity in a tmux
pane, both refreshing every second for the same window. Each runs as its own role, so
pg_stat_statements tells their server time apart. Each one's backend time on a CPU
(/proc/PID/schedstat) is read too: it counts what pg_stat_statements leaves out (executor
start-up, planning, the protocol) and leaves out what it counts (waiting for a core).

    .venv/bin/python bench/workload_cost.py --config /path/to/lab/pgtop-ha.toml \
        --pg-activity /tmp/pga-venv/bin/pg_activity [--seconds 60] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import secrets
import shutil
import statistics
import time
from pathlib import Path

import asyncpg

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab.cli import layout_from
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import DBNAME, MONITOR_USER, SUPERUSER
from pgtop_ha.settings import load_settings

PGA_ROLE = "bench_pg_activity"
LOAD_ROLE = "bench_sessions"
EXECUTED = "pg_stat_statements execution"
ON_CPU = "backend time on a CPU"


async def _server_ms(conn: asyncpg.Connection, role: str) -> float:
    value = await conn.fetchval(
        "select coalesce(sum(total_exec_time), 0) from pg_stat_statements s"
        " join pg_roles r on r.oid = s.userid where r.rolname = $1",
        role,
    )
    return float(value)


async def _refreshes(conn: asyncpg.Connection) -> int:
    """How often pg_activity refreshed: its list of sessions is read once a refresh."""
    # Its activities query is the only one of its statements that names pg_encoding_to_char;
    # a refresh takes its interval plus its own queries and drawing, so it is not once a second.
    value = await conn.fetchval(
        "select coalesce(sum(calls), 0) from pg_stat_statements s join pg_roles r on r.oid = s.userid"
        " where r.rolname = $1 and s.query like '%pg_encoding_to_char%'",
        PGA_ROLE,
    )
    return int(value)


async def _backends(conn: asyncpg.Connection, role: str) -> dict[int, int]:
    """The role's client backends on this host: pid to nanoseconds on a CPU so far."""
    pids = await conn.fetch(
        "select pid from pg_stat_activity where usename = $1 and backend_type = 'client backend'", role
    )
    return _on_cpu_ns([r["pid"] for r in pids])


def _on_cpu_ns(pids: list[int]) -> dict[int, int]:
    """Each process's time on a CPU so far (the first field of /proc/PID/schedstat)."""
    out = {}
    for pid in pids:
        try:
            out[pid] = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # gone between the two reads
    return out


def _cpu_ms(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU milliseconds of the backends alive at both reads."""
    return sum(after[p] - before[p] for p in before.keys() & after.keys()) / 1e6


async def _top_statements(conn: asyncpg.Connection, cycles: int) -> None:
    """Print where pgtop-ha's server time went: its statements, ms per cycle, the costliest first."""
    rows = await conn.fetch(
        "select calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as q"
        " from pg_stat_statements s join pg_roles r on r.oid = s.userid"
        " where r.rolname = $1 order by total_exec_time desc limit 8",
        MONITOR_USER,
    )
    for r in rows:
        print(f"  {r['total_exec_time'] / cycles:6.3f} ms/cycle {r['calls']:5d} calls  {r['q']}")


async def _sessions(
    port: int, password: str, count: int, running: list[asyncio.Task[str]]
) -> list[asyncpg.Connection]:
    """``count`` sessions: a tenth running (their tasks put in ``running``), a twentieth idle in
    transaction, the rest idle."""
    conns = []
    for i in range(count):
        c = await asyncpg.connect(
            host="127.0.0.1", port=port, user=LOAD_ROLE, password=password, database=DBNAME
        )
        conns.append(c)
        if i % 10 == 0:
            running.append(asyncio.get_running_loop().create_task(c.execute("select pg_sleep(3600)")))
        elif i % 20 == 1:
            await c.execute("begin; select txid_current()")
    return conns


async def _tmux(*argv: str, env: dict[str, str] | None = None) -> None:
    proc = await asyncio.create_subprocess_exec("tmux", *argv, env=env)
    await proc.wait()


async def run_once(
    args: argparse.Namespace, su: asyncpg.Connection, port: int, pga_pw: str
) -> dict[str, tuple[float, float]]:
    """One window, by measure: (pgtop-ha's ms per leader cycle, pg_activity's per refresh)."""
    settings = load_settings(args.config)
    poller = Poller.from_settings(settings)
    poller.set_needs(frozenset({"sessions", "statements"}))
    session = f"pga-bench-{os.getpid()}"
    env = {**os.environ, "PGPASSWORD": pga_pw}
    cmd = [
        args.pg_activity,
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-U",
        PGA_ROLE,
        "-d",
        DBNAME,
        "--refresh",
        "1",
    ]
    await _tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "48", *cmd, env=env)
    try:
        await poller.cycle(budget=3.0)  # connect and probe before counting
        deadline = time.monotonic() + 30
        while not await _backends(su, PGA_ROLE):
            if time.monotonic() > deadline:
                raise SystemExit(f"pg_activity did not connect as {PGA_ROLE} within 30 s")
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.0)  # past its first refreshes, which read the server's settings
        await su.execute("select pg_stat_statements_reset()")
        cpu_before = {r: await _backends(su, r) for r in (MONITOR_USER, PGA_ROLE)}
        cycles = 0
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            started = time.monotonic()
            await poller.cycle(budget=3.0)
            cycles += 1
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        executed = [await _server_ms(su, r) for r in (MONITOR_USER, PGA_ROLE)]
        refreshes = await _refreshes(su)
        on_cpu = [_cpu_ms(cpu_before[r], await _backends(su, r)) for r in (MONITOR_USER, PGA_ROLE)]
        if args.by_statement:
            await _top_statements(su, cycles)
    finally:
        await _tmux("kill-session", "-t", session)
        await poller.aclose()
    if not refreshes:
        raise SystemExit("pg_activity's list of sessions was not read in the window; is it pg_activity?")
    print(f"  window: {cycles} pgtop-ha cycles, {refreshes} pg_activity refreshes")
    return {
        measure: (ours / cycles, theirs / refreshes)
        for measure, (ours, theirs) in ((EXECUTED, executed), (ON_CPU, on_cpu))
    }


async def main(args: argparse.Namespace) -> None:
    """Make the roles and the sessions, measure ``runs`` windows, drop what it made."""
    layout = layout_from(argparse.Namespace(config=args.config))
    lab = Lab(layout, out=io.StringIO())
    port = layout.pg_port(lab.leader_index())
    su_pw = next(
        line.rsplit(":", 1)[1].strip()
        for line in layout.pgpass.read_text().splitlines()
        if line.split(":")[3] == SUPERUSER
    )
    su = await asyncpg.connect(host="127.0.0.1", port=port, user=SUPERUSER, password=su_pw, database=DBNAME)
    limit = int(await su.fetchval("show max_connections"))
    if limit < args.sessions + 50:
        await su.close()
        raise SystemExit(
            f"max_connections is {limit}: {args.sessions} sessions and the lab's own need "
            f"{args.sessions + 50}; raise it in Patroni's /config (postgresql.parameters) and restart"
        )
    pga_pw, load_pw = secrets.token_hex(12), secrets.token_hex(12)
    await su.execute(f"create role {PGA_ROLE} login password '{pga_pw}' in role pg_monitor")
    await su.execute(f"create role {LOAD_ROLE} login password '{load_pw}'")
    conns: list[asyncpg.Connection] = []
    running: list[asyncio.Task[str]] = []
    try:
        conns = await _sessions(port, load_pw, args.sessions, running)
        figures = [await run_once(args, su, port, pga_pw) for _ in range(args.runs)]
    finally:
        for c in conns:
            c.terminate()
        await asyncio.gather(*running, return_exceptions=True)  # each ends with its connection
        await su.execute(
            f"select pg_terminate_backend(pid) from pg_stat_activity where usename = '{LOAD_ROLE}'"
        )
        await su.execute(f"drop role if exists {PGA_ROLE}")
        await su.execute(f"drop role if exists {LOAD_ROLE}")
        await su.close()
    print(f"sessions on the leader: {args.sessions}; {args.runs} runs of {args.seconds:g} s")
    for measure in (EXECUTED, ON_CPU):
        pairs = [f[measure] for f in figures]
        ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
        print(f"{measure}:")
        for who, xs in (("pgtop-ha, per leader cycle", ours), ("pg_activity, per refresh", theirs)):
            runs = ", ".join(f"{x:.2f}" for x in xs)
            print(f"  {who}: ms median {statistics.median(xs):.2f} ({runs})")
        ratio = statistics.median(ours) / statistics.median(theirs)
        ratios = ", ".join(f"{a / b:.2f}" for a, b in pairs)
        print(f"  ratio pgtop-ha / pg_activity: {ratio:.2f} (per run {ratios})")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--pg-activity", default="/tmp/pga-venv/bin/pg_activity")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--by-statement", action="store_true", help="print pgtop-ha's costliest statements")
    a = p.parse_args()
    if not shutil.which("tmux") or not os.access(a.pg_activity, os.X_OK):
        raise SystemExit(f"needs tmux and {a.pg_activity}")
    asyncio.run(main(a))

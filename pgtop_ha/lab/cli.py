"""`pgtop-ha lab ...` and `pgtop-ha demo`: the command-line face of the lab."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pgtop_ha.errors import UserError
from pgtop_ha.lab.layout import (
    HAPROXY_SERVER_STYLES,
    NODE_NAMES,
    Layout,
    default_state_dir,
    member_names,
    saved_layout,
)
from pgtop_ha.lab.versions import patroni_minor, postgres_major
from pgtop_ha.settings import ENV_PREFIX, load_settings


def add_lab_arguments(parser: argparse.ArgumentParser, lab_only: bool = True) -> None:
    """--base-port and --state-dir (and --config for the lab alone), accepted at any level."""
    quiet = argparse.SUPPRESS  # so a subcommand's absent flag does not undo the parent's
    if lab_only:
        parser.add_argument("--config", type=Path, default=quiet, metavar="PATH", help="TOML config")
    parser.add_argument(
        "--base-port",
        type=int,
        default=quiet,
        metavar="N",
        help="first of the lab's ports (default 25400, or the state dir's; uses N..N+40)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=quiet,
        metavar="DIR",
        help="where the lab keeps data, logs and PIDs",
    )


def _lab_parser(sub: Any, name: str, text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=text)
    add_lab_arguments(parser)
    return parser


def add_lab_parser(parser: argparse.ArgumentParser) -> None:
    """Subcommands of `pgtop-ha lab`."""
    add_lab_arguments(parser)
    sub = parser.add_subparsers(dest="lab_command", metavar="LAB_COMMAND", required=True)
    up = _lab_parser(sub, "up", "start the sandbox cluster (idempotent)")
    up.add_argument(
        "--rows",
        type=int,
        default=None,
        metavar="N",
        help="rows in the published table (default 1,000,000)",
    )
    up.add_argument(
        "--with",
        dest="with_",
        default=None,
        metavar="LIST",
        help="also start poolers: pgbouncer, pgpool or pgbouncer,pgpool (kept by later `up`s)",
    )
    up.add_argument(
        "--names",
        default=None,
        metavar="A,B,C",
        help="the members' names, as a real cluster's, 2 to 7 of them (default node1,node2,node3;"
        " a new lab only)",
    )
    up.add_argument(
        "--haproxy-servers",
        default=None,
        choices=HAPROXY_SERVER_STYLES,
        help="HAProxy's server names: the members' (default), or addresses as in Patroni's example "
        "haproxy.cfg (postgresql_127.0.0.1_PORT, stats show-legends); a new lab only",
    )
    up.add_argument(
        "--postgres",
        default=None,
        metavar="N",
        help="PostgreSQL major, 14 to 18: Debian's build where installed, else PyPI's (downloaded once);"
        " a new lab only",
    )
    up.add_argument(
        "--patroni",
        default=None,
        metavar="X.Y",
        help="Patroni 3.3, 4.0 or 4.1, each in its own venv (default: the one installed); a new lab only",
    )
    up.add_argument(
        "--cascade",
        action="store_true",
        default=None,
        help="the last member streams from the second (Patroni's replicatefrom tag); a new lab only",
    )
    up.add_argument(
        "--tls",
        type=int,
        default=None,
        metavar="DAYS",
        help="REST API and PostgreSQL over TLS, the certificate valid DAYS days; a new lab only",
    )
    status = _lab_parser(sub, "status", "members with role, state, ports and PIDs")
    status.add_argument("--json", action="store_true", help="as JSON")
    _lab_parser(sub, "down", "stop everything the lab started and remove its state")
    fault = _lab_parser(sub, "fault", "failure tests, each bounded and reversible")
    faults = fault.add_subparsers(dest="fault", metavar="FAULT", required=True)
    _lab_parser(faults, "kill-primary", "kill -9 the leader's postmaster")
    for name, text in (
        ("crash", "kill -9 a node's Patroni and PostgreSQL (a power cut)"),
        ("stop-patroni", "stop a node's Patroni gracefully"),
        ("start-patroni", "start a node's Patroni (also after crash)"),
        ("freeze", "SIGSTOP a node's Patroni and PostgreSQL"),
        ("thaw", "SIGCONT what freeze stopped"),
    ):
        _lab_parser(faults, name, text).add_argument("node", metavar="NODE")
    _lab_parser(faults, "break-archive", "make archiving fail (.ready files pile up)")
    _lab_parser(faults, "fix-archive", "undo break-archive")
    sw = _lab_parser(faults, "switchover", "switch over through Patroni's REST API")
    sw.add_argument("--to", default=None, metavar="NODE", help="candidate (default: Patroni picks)")
    ld = _lab_parser(faults, "load", "pgbench through the writer port")
    ld.add_argument("--seconds", type=int, default=30, metavar="N")
    lk = _lab_parser(faults, "lock", "hold an AccessExclusiveLock on the leader while sessions wait")
    lk.add_argument("--seconds", type=int, default=60, metavar="N", help="how long (default 60)")
    lk.add_argument("--waiters", type=int, default=2, metavar="K", help="waiting sessions (default 2)")
    sr = _lab_parser(faults, "slow-reader", "a cursor read slowly: the server waits on ClientWrite")
    sr.add_argument("--seconds", type=int, default=60, metavar="N", help="how long (default 60)")
    for name, text in (
        ("vacuum", "a VACUUM of the published table, throttled to last N seconds"),
        ("create-index", "CREATE INDEX CONCURRENTLY on the published table, slowed; dropped after"),
    ):
        fp = _lab_parser(faults, name, text)
        fp.add_argument("--seconds", type=int, default=60, metavar="N", help="about how long (default 60)")
    sr2 = _lab_parser(faults, "schedule-restart", "schedule a node's restart through Patroni (or --cancel)")
    sr2.add_argument("node", metavar="NODE")
    sr2.add_argument("--minutes", type=int, default=60, metavar="N", help="from now (default 60)")
    sr2.add_argument("--cancel", action="store_true", help="cancel the scheduled restart")
    se = _lab_parser(faults, "stop-etcd", "SIGSTOP etcd for N seconds: Patroni loses its DCS (failsafe mode)")
    se.add_argument("--seconds", type=int, default=30, metavar="N", help="how long (default 30)")
    _lab_parser(faults, "sync-slots", "advance failover slots, drop standbys' stale ones (17+)")
    mp = _lab_parser(faults, "mixed-patroni", "restart a node's Patroni under another version (an upgrade)")
    mp.add_argument("node", metavar="NODE")
    mp.add_argument("--patroni", required=True, metavar="X.Y", help="3.3, 4.0 or 4.1")
    lx = _lab_parser(faults, "long-xact", "a session idle in transaction: it holds the xmin horizon")
    lx.add_argument("--seconds", type=int, default=300, metavar="N", help="how long (default 300)")
    pr = _lab_parser(faults, "pending-restart", "raise max_connections via Patroni: restart pending")
    pr.add_argument("--undo", action="store_true", help="put the parameter back")
    _lab_parser(faults, "extensions", "install pg_buffercache and pg_prewarm (lab up does it)")
    fb = _lab_parser(faults, "fall-behind", "SIGSTOP a standby's WAL receiver: it falls behind under load")
    fb.add_argument("node", metavar="NODE")
    fb.add_argument("--undo", action="store_true", help="SIGCONT it: it catches up")
    nf = _lab_parser(faults, "nofailover", "tag a member nofailover (Patroni will not promote it)")
    nf.add_argument("node", metavar="NODE")
    nf.add_argument("--clear", action="store_true", help="remove the tag")
    sm = _lab_parser(faults, "sync-mode", "Patroni's synchronous_mode: off, on, strict or quorum")
    sm.add_argument("mode", choices=["off", "on", "strict", "quorum"])
    bk = _lab_parser(sub, "backup", "a pgBackRest backup of the lab stanza")
    bk.add_argument("--type", default="full", choices=["full", "diff", "incr"], dest="backup_type")
    subscriber = _lab_parser(sub, "subscriber", "a logical subscriber of the lab's publication")
    subscriber.add_argument("action", choices=["up", "down"])
    fleet = _lab_parser(sub, "fleet", "several labs and two engines scraping them (the fleet view's lab)")
    fleet_sub = fleet.add_subparsers(dest="fleet_command", metavar="up|down", required=True)
    fleet_up = _lab_parser(fleet_sub, "up", "start N labs, Prometheus and VictoriaMetrics")
    fleet_up.add_argument("--clusters", type=int, default=None, metavar="N", help="labs (default 3)")
    fleet_up.add_argument("--rows", type=int, default=None, metavar="N", help="rows per lab (default 1,000)")
    _lab_parser(fleet_sub, "down", "stop the fleet's engines and labs and remove its state")


# The lab's own settings come from flags, --config or the user config, and PGTOP_HA_LAB__* only:
# the caller's other PGTOP_HA_* (a bad PGTOP_HA_READ_ONLY, say) concern the console, not the lab.
_LAB_ENV_PREFIX = "PGTOP_HA_LAB__"
# What `demo` takes from the lab's config whatever the environment says: where the lab is and how
# to log in. PGTOP_HA_<one of these>... would point the demo console at another cluster.
_FORCED_BY_LAB = ("PATRONI", "POSTGRES", "PG_", "HAPROXY", "NODES", "CLUSTER_NAME", "LAB")


def layout_from(args: argparse.Namespace) -> Layout:
    """The lab layout: the state directory's record, else flags, else config [lab], else defaults."""
    lab = load_settings(getattr(args, "config", None), environ=lab_environ(os.environ)).lab
    explicit: int | None = getattr(args, "base_port", None)
    if explicit is not None and not 1024 <= explicit <= 65000:
        raise UserError(f"--base-port {explicit} is out of range; use 1024..65000")
    state = (getattr(args, "state_dir", None) or lab.state_dir or default_state_dir()).absolute()
    names_text: str | None = getattr(args, "names", None)
    names = member_names(names_text) if names_text is not None else None
    servers: str | None = getattr(args, "haproxy_servers", None)
    postgres_text: str | None = getattr(args, "postgres", None)
    postgres = postgres_major(postgres_text) if postgres_text is not None else None
    patroni_text: str | None = getattr(args, "patroni", None)
    patroni = patroni_minor(patroni_text) if patroni_text is not None else None
    cascade: bool | None = getattr(args, "cascade", None)
    tls: int | None = getattr(args, "tls", None)
    if tls is not None and not 1 <= tls <= 3650:
        raise UserError(f"--tls {tls}: give the certificate's validity in days, 1 to 3650")
    saved = saved_layout(state)
    if saved is not None:
        if explicit is not None and explicit != saved.base_port:
            raise UserError(
                f"--base-port {explicit} disagrees with the lab in {state}, which uses base port "
                f"{saved.base_port}; omit --base-port"
            )
        if names is not None and names != saved.names:
            raise UserError(
                f"--names disagrees with the lab in {state}, whose members are "
                f"{','.join(saved.names)}; omit --names, or `lab down` and remove {state} first"
            )
        if servers is not None and servers != saved.haproxy_servers:
            raise UserError(
                f"--haproxy-servers {servers} disagrees with the lab in {state} "
                f"({saved.haproxy_servers}); omit it, or `lab down` and remove {state} first"
            )
        versions = (
            ("--postgres", postgres, saved.postgres),
            ("--patroni", patroni, saved.patroni),
            ("--cascade", cascade, saved.cascade),
            ("--tls", tls, saved.tls),
        )
        for flag, given, kept in versions:
            if given is not None and given != kept:
                raise UserError(
                    f"{flag} {given} disagrees with the lab in {state} ({kept or 'the default'}); "
                    f"omit it, or `lab down` first"
                )
        return saved
    return Layout(
        base_port=lab.base_port if explicit is None else explicit,
        state_dir=state,
        names=names or NODE_NAMES,
        haproxy_servers=servers or "members",
        postgres=postgres,
        patroni=patroni,
        cascade=bool(cascade),
        tls=tls,
    )


def lab_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the lab reads its own settings from: PGTOP_HA_LAB__* only."""
    return {k: v for k, v in environ.items() if k.startswith(_LAB_ENV_PREFIX)}


def demo_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment `demo` builds console settings from: the caller's, minus what the lab forces."""
    return {
        k: v
        for k, v in environ.items()
        if not (k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX) :].startswith(_FORCED_BY_LAB))
    }


def drop_libpq_environ(environ: MutableMapping[str, str]) -> None:
    """Remove libpq's PG* variables (PGPASSWORD, PGSSLMODE...): the lab's passfile must be used."""
    for name in [k for k in environ if k.startswith("PG") and not k.startswith(ENV_PREFIX)]:
        del environ[name]


def run_lab(args: argparse.Namespace) -> int:
    """Dispatch `pgtop-ha lab ...`."""
    from pgtop_ha.lab import faults, subscriber
    from pgtop_ha.lab.cluster import DEFAULT_ROWS, Lab
    from pgtop_ha.lab.progress import Progress

    if args.lab_command == "fleet":
        from pgtop_ha.lab.fleet import run_fleet_lab

        return run_fleet_lab(args)
    lab = Lab(layout_from(args))
    cmd = args.lab_command
    if cmd == "up":
        from pgtop_ha.lab.poolers import parse_with

        lab.up(rows=args.rows or DEFAULT_ROWS, with_=parse_with(args.with_))
        return 0
    if cmd == "down":
        lab.down()
        return 0
    if not lab.exists():
        raise UserError(f"no lab in {lab.layout.state_dir}; start one with `pgtop-ha lab up`")
    if cmd == "status":
        return _print_status(lab, as_json=args.json)
    if cmd == "backup":
        print(faults.backup(lab, args.backup_type))
        return 0
    if cmd == "subscriber":
        print(subscriber.up(lab) if args.action == "up" else subscriber.down(lab))
        return 0
    node_faults = {
        "crash": faults.crash,
        "stop-patroni": faults.stop_patroni,
        "start-patroni": faults.start_patroni,
        "freeze": faults.freeze,
        "thaw": faults.thaw,
    }
    if args.fault in node_faults:
        message = node_faults[args.fault](lab, args.node)
    elif args.fault == "switchover":
        message = faults.switchover(lab, args.to)
    elif args.fault == "load":
        message = faults.load(lab, args.seconds)
    elif args.fault == "lock":
        message = faults.lock(lab, args.seconds, args.waiters)
    elif args.fault == "slow-reader":
        message = faults.slow_reader(lab, args.seconds)
    elif args.fault == "schedule-restart":
        message = faults.schedule_restart(lab, args.node, args.minutes, args.cancel)
    elif args.fault == "stop-etcd":
        message = faults.stop_etcd(lab, args.seconds)
    elif args.fault == "mixed-patroni":
        message = faults.mixed_patroni(lab, args.node, args.patroni)
    elif args.fault == "sync-slots":
        synced = lab.sync_failover_slots(Progress(total=1, out=lab.out))
        message = "every standby has synced the failover slots" if synced else "not synced within 60s"
    elif args.fault == "long-xact":
        message = faults.long_xact(lab, args.seconds)
    elif args.fault == "vacuum":
        message = faults.vacuum(lab, args.seconds)
    elif args.fault == "create-index":
        message = faults.create_index(lab, args.seconds)
    elif args.fault == "pending-restart":
        message = faults.pending_restart(lab, undo=args.undo)
    elif args.fault == "fall-behind":
        message = faults.fall_behind(lab, args.node, undo=args.undo)
    elif args.fault == "nofailover":
        message = faults.nofailover(lab, args.node, clear=args.clear)
    elif args.fault == "sync-mode":
        message = faults.sync_mode(lab, args.mode)
    else:
        simple = {
            "kill-primary": faults.kill_primary,
            "break-archive": faults.break_archive,
            "fix-archive": faults.fix_archive,
            "extensions": faults.extensions,
        }
        message = simple[args.fault](lab)
    print(message)
    return 0


def _print_status(lab: Any, as_json: bool) -> int:
    members = lab.status()
    others = {k: v for k, v in lab.running_pids().items() if not k.startswith("patroni-")}
    if as_json:
        doc = {
            "state_dir": str(lab.layout.state_dir),
            "base_port": lab.layout.base_port,
            "members": [asdict(m) for m in members],
            "processes": others,
            "haproxy": {
                "writer_port": lab.layout.writer_port,
                "reader_port": lab.layout.reader_port,
                "stats_url": lab.layout.stats_url,
            },
            "poolers": {
                name: {"pgbouncer": lab.layout.pgbouncer_port, "pgpool": lab.layout.pgpool_port}[name]
                for name in lab.poolers()
            },
            "console_config": str(lab.layout.console_config),
            "versions": lab.versions(),
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"{'member':<8} {'role':<14} {'state':<12} {'TL':>3} {'pg':>6} {'rest':>6} "
        f"{'patroni':>8} {'postmaster':>10}"
    )
    for m in members:
        print(
            f"{m.name:<8} {m.role or '-':<14} {m.state or 'down':<12} {m.timeline or '-':>3} "
            f"{m.pg_port:>6} {m.rest_port:>6} {m.patroni_pid or '-':>8} {m.postmaster_pid or '-':>10}"
        )
    for name, pid in sorted(others.items()):
        print(f"{name:<8} pid {pid}")
    print(
        f"writer 127.0.0.1:{lab.layout.writer_port}  reader 127.0.0.1:{lab.layout.reader_port}  "
        f"stats {lab.layout.stats_url}"
    )
    for what, text in lab.versions().items():
        print(f"{what}: {text}")
    ports = {"pgbouncer": lab.layout.pgbouncer_port, "pgpool": lab.layout.pgpool_port}
    if lab.poolers():
        print("  ".join(f"{name} 127.0.0.1:{ports[name]}" for name in lab.poolers()))
    return 0


def run_demo(args: argparse.Namespace, overrides: dict[str, Any]) -> int:
    """Bring the lab up unless it is healthy, then open the console on it."""
    from pgtop_ha.console import run_console
    from pgtop_ha.lab.cluster import Lab

    chosen = None
    name = getattr(args, "scenario", None)
    if name:
        from pgtop_ha.lab.scenarios import scenario

        chosen = scenario(name)  # a typo fails before the lab starts
    args.config = None
    lab = Lab(layout_from(args))
    if not (lab.exists() and lab.healthy() and lab.book.running("haproxy")):
        lab.up()
    settings = load_settings(lab.layout.console_config, overrides, environ=demo_environ(os.environ))
    # The console's PostgreSQL connections read libpq's variables (asyncpg does): a caller's
    # PGPASSWORD or PGSSLMODE would beat the lab's passfile, so the demo process drops them.
    drop_libpq_environ(os.environ)
    if not sys.stdout.isatty():
        print("pgtop-ha demo: stdout is not a terminal; the lab is up:", lab.layout.console_config)
        return 0
    if chosen is not None:
        _start_scenario(lab, chosen)
    record = getattr(args, "record", None)
    return run_console(settings, record=record, record_max=getattr(args, "record_max", "1GiB"))


def _start_scenario(lab: Any, chosen: Any) -> None:
    """Run the scenario beside this process's console, its steps stamped as markers."""
    import contextlib

    from pgtop_ha.errors import UserError
    from pgtop_ha.lab.scenarios import start_in_background
    from pgtop_ha.record.markers import marker_dir, send_marker

    ours = marker_dir() / f"{os.getpid()}.sock"  # the console in this process listens here

    def mark(text: str) -> None:
        with contextlib.suppress(UserError, OSError):
            send_marker(text, source="demo")

    start_in_background(lab, chosen, mark, ours.exists)

"""The command line: parse it, build settings, and hand over to the console (console.py) or a subcommand."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from pgtop_ha import __version__
from pgtop_ha.console import run_attach, run_console, run_replay
from pgtop_ha.crash import crash_line, quiet_unraisable, write_report
from pgtop_ha.errors import UserError
from pgtop_ha.models.text import clean
from pgtop_ha.runtime import collector_on
from pgtop_ha.settings import Settings, load_settings


def _console_flags() -> _Parser:
    """Flags shared by the console, `snapshot` and `demo`."""
    p = _Parser(add_help=False)
    d = argparse.SUPPRESS
    p.add_argument("--config", type=Path, default=d, metavar="PATH", help="TOML config file")
    p.add_argument(
        "--patroni",
        action="append",
        default=d,
        metavar="URL",
        help="a Patroni REST URL (repeatable); members come from /cluster",
    )
    p.add_argument(
        "--haproxy",
        default=d,
        metavar="URL|SOCKET",
        help="HAProxy stats: an http(s) URL or a unix socket path",
    )
    p.add_argument("--pg-user", default=d, metavar="NAME", help="PostgreSQL role to read with")
    p.add_argument(
        "--patroni-user",
        default=d,
        metavar="NAME",
        help="Patroni REST user for actions (password: PGTOP_HA_PATRONI_PASSWORD)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--read-only",
        action="store_const",
        const=True,
        default=d,
        dest="read_only",
        help="no action exists (default inside SSH sessions)",
    )
    mode.add_argument(
        "--operator",
        action="store_const",
        const=False,
        default=d,
        dest="read_only",
        help="allow actions even inside an SSH session",
    )
    p.add_argument(
        "--no-postgres",
        action="store_const",
        const=False,
        default=d,
        dest="postgres_enabled",
        help="read Patroni and HAProxy alone, no PostgreSQL ([postgres] enabled = false)",
    )
    p.add_argument("--interval", type=float, default=d, metavar="SECONDS", help="poll interval")
    p.add_argument(
        "--probe-writes",
        default=d,
        metavar="TABLE",
        help="operator only: INSERT one row per cycle into TABLE (must exist) through the writer endpoint",
    )
    p.add_argument("--theme", default=d, metavar="NAME", help="dark, light or mono")
    return p


# Subcommands that belong to the lab: their flags are defined in pgtop_ha.lab.cli, imported only when
# one of them is asked for, so the console's own start never loads the lab.
LAB_COMMANDS = ("demo", "lab")


class UsageError(Exception):
    """A command line argparse cannot take: its parser and message."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors raised: `check` must say UNKNOWN (3), not exit 2 (CRITICAL)."""

    def error(self, message: str) -> NoReturn:
        """Raise UsageError instead of exiting."""
        raise UsageError(self, message)


def _usage_error(exc: UsageError, args_list: list[str]) -> int:
    """A usage error: a status line and 3 for `check`, argparse's usage and 2 for the rest."""
    commands = [a for a in args_list if a in _COMMANDS]
    if exc.parser.prog.endswith(" check") or (commands and commands[0] == "check"):
        print(f"PGTOP-HA UNKNOWN - usage: {clean(str(exc))}; see pgtop-ha check --help")
        return 3
    exc.parser.print_usage(sys.stderr)
    print(f"{exc.parser.prog}: error: {clean(str(exc))}", file=sys.stderr)
    return 2


_COMMANDS = (
    "snapshot",
    "check",
    "record",
    "replay",
    "events",
    "mark",
    "serve",
    "attach",
    "fleet",
    "demo",
    "lab",
)


def _parser(lab: bool = False) -> argparse.ArgumentParser:
    """The command line; ``lab`` adds the lab's own flags to `demo` and `lab` (it imports the lab)."""
    common = _console_flags()
    parser = _Parser(
        prog="pgtop-ha",
        parents=[common],
        description="A live console for PostgreSQL HA clusters run by Patroni behind HAProxy.",
    )
    parser.add_argument("--version", action="version", version=f"pgtop-ha {__version__}")
    parser.add_argument("--record", type=Path, metavar="FILE", help="record while watching (a new file)")
    _record_max(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    snap = sub.add_parser("snapshot", parents=[common], help="print one snapshot of the cluster")
    snap.add_argument("--json", action="store_true", help="as JSON (the default)")
    snap.add_argument("--schema", action="store_true", help="print the snapshot's JSON Schema")
    snap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="READ",
        help="read only these optional parts (locks, cache, parameters, memory, pgbackrest; repeatable)",
    )
    snap.add_argument(
        "--without", action="append", default=[], metavar="READ", help="skip this optional part (repeatable)"
    )
    check = sub.add_parser(
        "check",
        parents=[common],
        help="the cluster's verdicts for scripts and monitoring (exit 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN)",
    )
    check.add_argument("--json", action="store_true", help="the verdicts as JSON")
    check.add_argument(
        "--wait-healthy",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="poll until the cluster is healthy again, at most SECONDS; the exit code says how it ended",
    )
    rec = sub.add_parser(
        "record", parents=[common], help="record the cluster to FILE without a screen (Ctrl-C stops)"
    )
    rec.add_argument("file", type=Path, metavar="FILE", help="the recording to create (never overwritten)")
    _record_max(rec)
    replay = sub.add_parser("replay", help="open a recording in the console (read-only)")
    replay.add_argument("file", type=Path, metavar="FILE", help="a recording")
    replay.add_argument("--speed", type=float, default=1.0, metavar="X", help="playback speed (default 1)")
    replay.add_argument("--paused", action="store_true", help="start paused on the first snapshot")
    replay.add_argument("--theme", default=argparse.SUPPRESS, metavar="NAME", help="dark, light or mono")
    events = sub.add_parser("events", help="print a recording's timeline and failover stopwatch")
    events.add_argument("file", type=Path, nargs="?", metavar="FILE", help="a recording")
    _fleet_arguments(sub, common, events)
    events.add_argument("--json", action="store_true", help="as JSON (for a failure-test report)")
    events.add_argument(
        "--recompute", action="store_true", help="derive the events again from the snapshots and markers"
    )
    mark = sub.add_parser("mark", help="stamp a marker on every running console's and recorder's timeline")
    mark.add_argument("text", nargs="+", metavar="TEXT", help='what happened, e.g. "killed primary"')
    _serve_subcommands(sub, common)
    _lab_subcommands(sub, common, lab)
    return parser


def _serve_subcommands(sub: Any, common: argparse.ArgumentParser) -> None:
    """`serve` (one poller for many viewers) and `attach` (a viewer)."""
    serve = sub.add_parser("serve", parents=[common], help="poll and record once, for every `attach` viewer")
    serve.add_argument("--socket", type=Path, metavar="PATH", help="the unix socket (default: a private one)")
    serve.add_argument("--group", metavar="NAME", help="let this group attach (socket mode 0660)")
    serve.add_argument(
        "--listen", metavar="HOST:PORT", help="also listen on a loopback TCP port (viewers need a token)"
    )
    serve.add_argument(
        "--tokens", type=Path, metavar="FILE", help="TCP viewers' tokens: NAME TOKEN lines in a 0600 file"
    )
    serve.add_argument(
        "--max-viewers", type=_count, default=None, metavar="N", help="viewers attached at once (default 256)"
    )
    serve.add_argument(
        "--max-tabs", type=_count, default=None, metavar="N", help="browser tabs open at once (default 8)"
    )
    serve.add_argument("--record", type=Path, metavar="FILE", help="record to FILE as `record` does")
    _record_max(serve)
    serve.add_argument(
        "--web", metavar="HOST:PORT", help="the read-only console in a browser, behind a token"
    )
    serve.add_argument(
        "--web-host", action="store_true", help="let --web listen on an address other than loopback"
    )
    attach = sub.add_parser("attach", help="the console fed by a `pgtop-ha serve` (always read-only)")
    attach.add_argument("target", nargs="?", metavar="SOCKET|HOST:PORT", help="where serve listens")
    attach.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="over TCP: the token file serve wrote beside its socket (default: the private one)",
    )
    attach.add_argument("--theme", default=argparse.SUPPRESS, metavar="NAME", help="dark, light or mono")


def _fleet_arguments(sub: Any, common: argparse.ArgumentParser, events: argparse.ArgumentParser) -> None:
    """`fleet`, and `events --prometheus URL --scope NAME --since 6h` (history from Prometheus)."""
    fleet = sub.add_parser("fleet", parents=[common], help="many clusters at a glance, read from Prometheus")
    fleet.add_argument("--prometheus", metavar="URL", help="Prometheus base URL (or fleet.prometheus)")
    fleet.add_argument(
        "--match", metavar="MATCHERS", help="""only these clusters, asked of Prometheus: '{env="prod"}'"""
    )
    fleet.add_argument(
        "action", nargs="?", choices=("rules",), help="rules: print the fleet's Prometheus rule file"
    )
    fleet.add_argument("--output", type=Path, metavar="FILE", help="with rules: write the rule file here")
    fleet.add_argument(
        "--standalone-alerts",
        action="store_true",
        help="with rules: each alert evaluates its own PromQL (for vmalert, which reads a record late)",
    )
    events.add_argument("--prometheus", metavar="URL", help="read history from Prometheus instead of FILE")
    events.add_argument("--scope", metavar="NAME", help="with --prometheus: the cluster (Patroni scope)")
    events.add_argument("--since", default="6h", metavar="DURATION", help="with --prometheus (default 6h)")
    events.add_argument("--config", type=Path, default=argparse.SUPPRESS, metavar="PATH", help="TOML config")


def _lab_subcommands(sub: Any, common: argparse.ArgumentParser, lab: bool) -> None:
    """`demo` and `lab`; without ``lab`` only their names and help (a placeholder that takes anything)."""
    demo_help = "bring the local lab up and open the console"
    lab_help = "a local sandbox Patroni cluster for demos and failure tests"
    if not lab:
        # Placeholders: parse_known_args() sees the command, then main() parses again with the lab.
        sub.add_parser("demo", help=demo_help, add_help=False)
        sub.add_parser("lab", help=lab_help, add_help=False)
        return
    from pgtop_ha.lab.cli import add_lab_arguments, add_lab_parser

    demo = sub.add_parser("demo", parents=[common], help=demo_help)
    demo.add_argument(
        "--scenario",
        default=None,
        metavar="NAME",
        help="run a lab fault beside the console, with markers: failover, kill-primary or archive",
    )
    add_lab_arguments(demo, lab_only=False)
    add_lab_parser(sub.add_parser("lab", help=lab_help))


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; the lab's parser is built (and the lab imported) only for its commands."""
    args_list = sys.argv[1:] if argv is None else list(argv)
    first, _ = _parser().parse_known_args(args_list)
    return _parser(lab=first.command in LAB_COMMANDS).parse_args(args_list)


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds between 0 and 86400")
    return value


def _count(text: str) -> int:
    """A whole number from 1 to 10,000 (argparse type)."""
    if not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number from 1 to 10000")
    return int(text)


def _record_max(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record-max",
        default="1GiB",
        metavar="SIZE|AGE",
        help="bound the recording: a size (1GiB, 500MB) thins the oldest snapshots, an age (6h) drops "
        "older ones; events and markers stay (default 1GiB)",
    )


def cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Turn parsed flags into a settings tree (only the flags given)."""
    ns = vars(args)
    tree: dict[str, Any] = {}
    if "patroni" in ns:
        tree.setdefault("patroni", {})["urls"] = ns["patroni"]
    if "patroni_user" in ns:
        tree.setdefault("patroni", {})["user"] = ns["patroni_user"]
    if "pg_user" in ns:
        tree.setdefault("postgres", {})["user"] = ns["pg_user"]
    if "postgres_enabled" in ns:
        tree.setdefault("postgres", {})["enabled"] = ns["postgres_enabled"]
    if "haproxy" in ns:
        target = ns["haproxy"]
        # Anything with a scheme is a URL (and an ftp:// one is refused as such), else a socket path.
        key = "url" if "://" in target else "socket"
        tree.setdefault("haproxy", {})[key] = target
    if "probe_writes" in ns:
        tree.setdefault("probes", {})["write_table"] = ns["probe_writes"]
    for key in ("read_only", "interval", "theme"):
        if key in ns:
            tree[key] = ns[key]
    return tree


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(getattr(args, "config", None), cli_overrides(args))


def _merged_settings(args: argparse.Namespace, extra: dict[str, Any]) -> Settings:
    """Settings from the flags plus ``extra`` (a fleet drill down's cluster), sections merged."""
    tree = cli_overrides(args)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(tree.get(key), dict):
            tree[key] = {**tree[key], **value}
        else:
            tree[key] = value
    return load_settings(getattr(args, "config", None), tree)


def _check(args: argparse.Namespace) -> int:
    """`pgtop-ha check`: a monitoring plugin says UNKNOWN (3), on one line, when it cannot judge."""
    from pgtop_ha.check_cli import UNKNOWN, run_check

    try:
        return run_check(_settings(args), as_json=args.json, wait_healthy=args.wait_healthy)
    except UserError as exc:
        print(f"PGTOP-HA UNKNOWN - {clean(str(exc))}")
        return UNKNOWN


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `pgtop-ha` command."""
    sys.unraisablehook = quiet_unraisable
    args_list = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parse(args_list)
    except UsageError as exc:
        return _usage_error(exc, args_list)
    if args.command is not None:
        # Only the console keeps the collector off until it is on screen (pgtop_ha/entry.py).
        collector_on()
    try:
        if args.command == "lab":
            from pgtop_ha.lab.cli import run_lab

            return run_lab(args)
        if args.command == "snapshot":
            from pgtop_ha.collect.snapshot_cli import run_snapshot

            return run_snapshot(_settings(args), schema=args.schema, only=args.only, without=args.without)
        if args.command == "check":
            return _check(args)
        if args.command == "record":
            from pgtop_ha.console import run_recorder

            return run_recorder(_settings(args), args.file, args.record_max)
        if args.command == "replay":
            return run_replay(args)
        if args.command == "serve":
            from pgtop_ha.serve.cli import run_serve_command

            return run_serve_command(args, _settings(args))
        if args.command == "attach":
            return run_attach(args.target, getattr(args, "theme", None), args.token_file)
        if args.command == "fleet" and args.action == "rules":
            from pgtop_ha.fleet_cli import run_rules

            return run_rules(_settings(args), args.output, standalone_alerts=args.standalone_alerts)
        if args.command == "fleet":
            if args.output is not None or args.standalone_alerts:
                raise UserError("--output and --standalone-alerts go with `fleet rules`; add `rules`")
            from pgtop_ha.fleet_cli import run_fleet

            return run_fleet(
                _settings(args), args.prometheus, lambda extra: _merged_settings(args, extra), args.match
            )
        if args.command == "events" and (args.prometheus or args.file is None):
            from pgtop_ha.fleet_cli import run_history

            if not args.scope:
                raise UserError("events: give a recording FILE, or --prometheus URL --scope NAME")
            return run_history(_settings(args), args.prometheus, args.scope, args.since, as_json=args.json)
        if args.command == "events":
            from pgtop_ha.record.report import run_events

            return run_events(args.file, as_json=args.json, recompute_events=args.recompute)
        if args.command == "mark":
            from pgtop_ha.record.markers import run_mark

            return run_mark(" ".join(args.text))
        if args.command == "demo":
            from pgtop_ha.lab.cli import run_demo

            return run_demo(args, cli_overrides(args))
        return run_console(_settings(args), record=args.record, record_max=args.record_max)
    except UserError as exc:
        print(f"pgtop-ha: {clean(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`pgtop-ha lab status | head`): not a crash. Point stdout at
        # /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # never a traceback on the terminal, never exit 0 after a crash
        print(crash_line(exc, write_report(exc)), file=sys.stderr)
        return 1

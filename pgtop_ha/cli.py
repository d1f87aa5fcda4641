"""The composition root: parse the command line, build settings, readers, actions and the app."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pgtop_ha import __version__
from pgtop_ha.crash import crash_line, write_report
from pgtop_ha.errors import UserError
from pgtop_ha.models.text import clean
from pgtop_ha.settings import Settings, load_settings, resolve_mode


def _console_flags() -> argparse.ArgumentParser:
    """Flags shared by the console, `snapshot` and `demo`."""
    p = argparse.ArgumentParser(add_help=False)
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
    p.add_argument("--interval", type=float, default=d, metavar="SECONDS", help="poll interval")
    p.add_argument("--theme", default=d, metavar="NAME", help="dark, light or mono")
    return p


def _parser() -> argparse.ArgumentParser:
    common = _console_flags()
    parser = argparse.ArgumentParser(
        prog="pgtop-ha",
        parents=[common],
        description="A live console for PostgreSQL HA clusters run by Patroni behind HAProxy.",
    )
    parser.add_argument("--version", action="version", version=f"pgtop-ha {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    snap = sub.add_parser("snapshot", parents=[common], help="print one snapshot of the cluster")
    snap.add_argument("--json", action="store_true", help="as JSON (the default)")
    snap.add_argument("--schema", action="store_true", help="print the snapshot's JSON Schema")
    demo = sub.add_parser("demo", parents=[common], help="bring the local lab up and open the console")
    from pgtop_ha.lab.cli import add_lab_arguments

    add_lab_arguments(demo, lab_only=False)
    lab = sub.add_parser("lab", help="a local sandbox Patroni cluster for demos and failure tests")
    from pgtop_ha.lab.cli import add_lab_parser

    add_lab_parser(lab)
    return parser


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
    if "haproxy" in ns:
        target = ns["haproxy"]
        # Anything with a scheme is a URL (and an ftp:// one is refused as such), else a socket path.
        key = "url" if "://" in target else "socket"
        tree.setdefault("haproxy", {})[key] = target
    for key in ("read_only", "interval", "theme"):
        if key in ns:
            tree[key] = ns[key]
    return tree


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(getattr(args, "config", None), cli_overrides(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `pgtop-ha` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "lab":
            from pgtop_ha.lab.cli import run_lab

            return run_lab(args)
        if args.command == "snapshot":
            from pgtop_ha.collect.snapshot_cli import run_snapshot

            return run_snapshot(_settings(args), schema=args.schema)
        if args.command == "demo":
            from pgtop_ha.lab.cli import run_demo

            return run_demo(args, cli_overrides(args))
        return run_console(_settings(args))
    except UserError as exc:
        print(f"pgtop-ha: {clean(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # never a traceback on the terminal, never exit 0 after a crash
        print(crash_line(exc, write_report(exc)), file=sys.stderr)
        return 1


def run_console(settings: Settings) -> int:
    """Build the read path, the actions (unless read-only) and the app, then run it."""
    from pgtop_ha.collect.poller import Poller
    from pgtop_ha.ui.app import PgtopApp

    mode = resolve_mode(settings, os.environ)
    actions = None
    if not mode.read_only:
        # Imported only here: in read-only mode the write path is never even loaded.
        from pgtop_ha.actions import build_actions

        actions = build_actions(settings)
    app = PgtopApp(
        settings=settings,
        source=Poller.from_settings(settings),
        actions=actions,
        mode=mode,
    )
    app.run()
    if app.crash is not None:
        print(crash_line(app.crash, app.crash_report), file=sys.stderr)
        return 1
    return app.return_code or 0

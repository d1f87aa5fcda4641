"""The console's composition: settings in; the read path, the actions (unless read-only) and the app out.

`pgtop-ha` (the command line, cli.py) and `pgtop-ha demo` (the lab, lab/cli.py) both start the console
here, so neither imports the other.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pgtop_ha.crash import crash_line
from pgtop_ha.models.sections import ConsoleSections
from pgtop_ha.runtime import run_app, run_built, settle_heap
from pgtop_ha.settings import Settings, load_settings, recorded_settings, resolve_mode

if TYPE_CHECKING:
    from pgtop_ha.clock import Clock
    from pgtop_ha.collect.poller import Poller
    from pgtop_ha.ui.app import PgtopApp
    from pgtop_ha.ui.attach import AttachApp


def attach_sections(hello: dict[str, object], theme: str) -> ConsoleSections:
    """An attached console's sections: the serve's thresholds and pools (how it judges), its own theme."""
    return recorded_settings({"settings": hello.get("settings")}, theme).console()


def run_console(settings: Settings, record: Path | None = None, record_max: str = "1GiB") -> int:
    """Build the read path, the actions (unless read-only) and the app, then run it."""
    from pgtop_ha.record.limits import parse_limit
    from pgtop_ha.record.markers import MarkerInbox
    from pgtop_ha.record.recorder import Recorder

    limit = parse_limit(record_max)  # a bad --record-max fails before anything starts

    mode = resolve_mode(settings, os.environ)
    actions = None
    if not mode.read_only:
        # Imported only here: in read-only mode the write path is never even loaded.
        from pgtop_ha.actions import build_actions

        actions = build_actions(settings)
    recorder = Recorder.create(record, settings, limit, role="console") if record is not None else None
    label = f"recording {record}" if record is not None else (settings.cluster_name or "")
    poller = build_poller(settings, operator=actions is not None)

    async def build() -> PgtopApp:
        # The first cycle mostly waits on the servers (a new connection per node, /cluster,
        # `pgbackrest info`): begun now, it runs while a thread imports Textual and the screens,
        # instead of after Textual has built the screen.
        poller.prime()
        await asyncio.to_thread(_import_ui, operator=actions is not None)
        from pgtop_ha.ui.app import PgtopApp

        app = PgtopApp(
            sections=settings.console(),
            source=poller,
            actions=actions,
            mode=mode,
            recorder=recorder,
            markers=MarkerInbox("console", label),
            settle=settle_heap,
        )
        if actions is None and settings.probes.write_table:
            # Said, not silently dropped: the user asked for writes the read-only mode cannot send.
            ignored = "write probe off: read-only mode sends no INSERT (--operator to measure write outages)"
            app.notice = f"{app.notice}; {ignored}" if app.notice else ignored
        return app

    try:
        app = run_built(build)
    finally:
        if recorder is not None:
            recorder.close()
    if recorder is not None and recorder.error is not None:
        print(f"pgtop-ha: recording stopped early: {recorder.error}", file=sys.stderr)
    return _exit_code(app)


def _import_ui(*, operator: bool) -> None:
    from pgtop_ha.ui.app import import_main_screen

    import_main_screen(operator)


def run_recorder(settings: Settings, path: Path, record_max: str) -> int:
    """`pgtop-ha record FILE`: the read path, and in operator mode the write probe asked for."""
    from pgtop_ha.record.headless import require_targets, run_record
    from pgtop_ha.record.limits import parse_limit

    limit = parse_limit(record_max)
    require_targets(settings)
    operator = not resolve_mode(settings, os.environ).read_only
    if settings.probes.write_table and not operator:
        # Said, not silently dropped: the user asked for writes the read-only mode cannot send.
        print("pgtop-ha: write probe off: read-only mode sends no INSERT (--operator to measure)")
    return run_record(settings, path, limit, source=build_poller(settings, operator=operator))


def build_poller(settings: Settings, *, operator: bool, clock: Clock | None = None) -> Poller:
    """The read path; in operator mode with probes.write_table set, the write probe beside it."""
    from pgtop_ha.clock import system_clock
    from pgtop_ha.collect.poller import Poller

    poller = Poller.from_settings(settings, clock or system_clock)
    if operator and settings.probes.write_table:
        # The write probe exists only beside the actions: read-only mode has no INSERT to send.
        from pgtop_ha.actions.write_probe import build_write_probe

        poller.add_probe(build_write_probe(settings, clock or system_clock))
    return poller


def run_replay(args: argparse.Namespace) -> int:
    """`pgtop-ha replay FILE`: the console over a recording, no actions at all."""
    from pgtop_ha.record.reader import Recording
    from pgtop_ha.record.replay import ReplaySource
    from pgtop_ha.ui.replay import ReplayApp

    theme = getattr(args, "theme", None) or load_settings(None, {}).theme
    recording = Recording.open(args.file)
    try:
        source = ReplaySource(recording, speed=args.speed, playing=not args.paused)
    except BaseException:
        recording.close()
        raise
    app = ReplayApp(recorded_settings(recording.header, theme).console(), source, args.file)
    run_app(app)
    return _exit_code(app)


def run_attach(target: str | None, theme: str | None, token_file: Path | None = None) -> int:
    """`pgtop-ha attach [SOCKET|HOST:PORT]`: the console fed by a serve; no write path is loaded."""
    from pgtop_ha.models.text import clean
    from pgtop_ha.serve.address import parse_target
    from pgtop_ha.serve.peers import tcp_token
    from pgtop_ha.serve.viewer import AttachSource

    address = parse_target(target)
    token = tcp_token(address, token_file)
    chosen = theme or load_settings(None, {}).theme

    async def build() -> AttachApp:
        source = await AttachSource.connect(address, token)
        await asyncio.to_thread(_import_ui, operator=False)
        from pgtop_ha.ui.attach import AttachApp

        return AttachApp(attach_sections(source.hello, chosen), source)

    app = run_built(build)
    if app.crash is None and app.ended:
        print(f"pgtop-ha: {clean(app.ended)[:300]}", file=sys.stderr)
        return 1
    return _exit_code(app)


def _exit_code(app: PgtopApp) -> int:
    """A crash as one line (exit 1), else the app's own code."""
    if app.crash is not None:
        print(crash_line(app.crash, app.crash_report), file=sys.stderr)
        return 1
    return app.return_code or 0

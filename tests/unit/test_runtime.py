"""The console's process: uvloop's loop where installed, the start-up heap frozen and unfrozen after.

Run in a child process: the loop policy and the collector's permanent generation are the whole
process's, and the test process must keep its own.
"""

from __future__ import annotations

import json
import subprocess
import sys

from pgtop_ha.runtime import MIDDLE_COLLECT_AFTER, OLD_COLLECT_AFTER, YOUNG_COLLECT_AFTER

THRESHOLDS = [YOUNG_COLLECT_AFTER, MIDDLE_COLLECT_AFTER, OLD_COLLECT_AFTER]

CHILD = r"""
import asyncio, gc, json
from pgtop_ha.runtime import loop_name, run, run_app, run_built, settle_heap

gc.disable()  # as pgtop_ha/entry.py starts the console

class App:
    async def run_async(self):
        settle_heap()
        return {"loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
                "frozen": gc.get_freeze_count(), "collecting": gc.isenabled(),
                "threshold": gc.get_threshold()}

inside = run_app(App())
async def loop_module():
    return type(asyncio.get_running_loop()).__module__.split(".")[0]

class Built:
    async def run_async(self):
        settle_heap()
        self.ran_on = asyncio.get_running_loop()

async def build():
    built = Built()
    built.built_on = asyncio.get_running_loop()
    return built

built = run_built(build)
print(json.dumps({**inside, "after": gc.get_freeze_count(), "name": loop_name(), "run": run(loop_module()),
                  "built": type(built).__name__, "same_loop": built.ran_on is built.built_on,
                  "built_loop": type(built.ran_on).__module__.split(".")[0],
                  "after_built": gc.get_freeze_count()}))
"""


def test_run_app_and_run_built_run_on_uvloop_and_unfreeze_what_settle_froze() -> None:
    child = [sys.executable, "-c", CHILD]
    out = subprocess.run(child, capture_output=True, text=True, timeout=60, check=True)
    seen = json.loads(out.stdout)
    # uvloop is a dependency on Linux: a console (and `record`) runs on it, not on asyncio's loop.
    assert seen["name"] == "uvloop"
    assert seen["loop"] == "uvloop" and seen["run"] == "uvloop"
    assert seen["frozen"] > 1000  # the interpreter's and the imports' objects at least
    assert seen["collecting"]  # settle_heap turns the collector back on
    # ...with young passes far apart: at Python's 700 they cost the console 8 % under load.
    assert seen["threshold"] == THRESHOLDS and YOUNG_COLLECT_AFTER > 700
    assert seen["after"] == 0  # the next console (the fleet's drill-down) starts collectable
    # run_built: the app is built on the loop it runs on (work begun while building goes on).
    assert seen["built"] == "Built" and seen["same_loop"] and seen["built_loop"] == "uvloop"
    assert seen["after_built"] == 0


ENTRY = r"""
import gc, json
import pgtop_ha.cli as cli

seen = {}
real = cli.main

def console(argv=None):
    seen["off_in_cli"] = not gc.isenabled()
    return 0

cli.main = console
from pgtop_ha import entry

seen["exit"] = entry.main()
cli.main = real
gc.disable()
seen["code"] = real(["events", "/nonexistent/recording.db"])
seen["on_after_subcommand"] = gc.isenabled()
seen["threshold"] = gc.get_threshold()
print(json.dumps(seen))
"""


def test_the_command_starts_without_the_collector_and_subcommands_turn_it_back_on() -> None:
    child = [sys.executable, "-c", ENTRY]
    out = subprocess.run(child, capture_output=True, text=True, timeout=60, check=True)
    seen = json.loads(out.stdout)
    # entry.main() hands over with the cyclic GC off (the console's start-up, issue 10)...
    assert seen["off_in_cli"] and seen["exit"] == 0
    # ...and every command but the console turns it on at once (the console: at settle_heap).
    assert seen["code"] != 0 and seen["on_after_subcommand"]
    assert seen["threshold"] == THRESHOLDS
    assert "nonexistent" in out.stderr and "Traceback" not in out.stderr


HTTPX = r"""
import json, sys
from pgtop_ha import entry

sys.argv = ["pgtop-ha", "events", "/nonexistent/recording.db"]
code = entry.main()
import httpx

print(json.dumps({"code": code, "click": "click" in sys.modules, "cli": httpx.main.__qualname__}))
"""


def test_the_command_does_not_import_httpx_s_own_command_line() -> None:
    child = [sys.executable, "-c", HTTPX]
    out = subprocess.run(child, capture_output=True, text=True, timeout=60, check=True)
    seen = json.loads(out.stdout)
    # click is installed here (Patroni's): plain `import httpx` would have imported it (and pygments).
    assert seen["code"] != 0 and not seen["click"]
    assert seen["cli"] == "_no_httpx_cli"  # httpx.main is the stand-in

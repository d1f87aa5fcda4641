"""The `pgtop-ha` command's entry point: start-up runs without Python's cyclic garbage collector.

Start-up only builds (modules, validators, Textual's DOM): the collector's passes free little
and delay the first frame. It comes back on once the console is on screen, and at once for every
other command; httpx's command line is never imported.
"""

from __future__ import annotations

import gc
import sys
import types


def main() -> int:
    """Run the command line with the cyclic collector off for the imports and the console's start-up."""
    gc.disable()
    _without_httpx_cli()
    from pgtop_ha.cli import main as cli_main

    return cli_main()


def _without_httpx_cli() -> None:
    # `import httpx` imports httpx's own command line (httpx._main: click, pygments, rich's
    # markup) whenever click is installed, as it is beside Patroni: 50-100 ms of every start for
    # a module pgtop-ha never runs (the httpx2 fork made that import lazy). A stand-in in its
    # place leaves `httpx.main` a stub; nothing else of httpx is touched.
    if "httpx" not in sys.modules:
        stand_in = types.ModuleType("httpx._main", "httpx's command line, not loaded by pgtop-ha")
        stand_in.main = _no_httpx_cli  # type: ignore[attr-defined]
        sys.modules.setdefault("httpx._main", stand_in)


def _no_httpx_cli() -> None:
    raise SystemExit("httpx's command line is not loaded inside pgtop-ha")

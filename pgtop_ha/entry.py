"""The `pgtop-ha` command's entry point: start-up runs without Python's cyclic garbage collector.

Start-up only builds (modules, pydantic's validators, Textual's DOM and CSS): measured to the
console's first frame at 160x48, the collector's passes over that growing heap took 0.2-0.3 s of
CPU on the one thread that draws, and freed little (issue 10, first frame ≤ 1 s). Reference
counting frees what start-up drops meanwhile. The collector comes back on with
runtime.settle_heap() once the console is on screen, and at once for every other command
(cli.main).
"""

from __future__ import annotations

import gc


def main() -> int:
    """Run the command line with the cyclic collector off for the imports and the console's start-up."""
    gc.disable()
    from pgtop_ha.cli import main as cli_main

    return cli_main()

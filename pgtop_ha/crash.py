"""Crash reports: an unexpected exception ends the console with exit 1, one line and a file."""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

from pgtop_ha import __version__
from pgtop_ha.models.text import clean
from pgtop_ha.models.urls import redact


def crash_dir() -> Path:
    """~/.local/state/pgtop-ha/crashes (or under $XDG_STATE_HOME)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pgtop-ha" / "crashes"


def write_report(exc: BaseException, where: Path | None = None) -> Path | None:
    """Write the traceback (URL credentials redacted) to a 0600 file; its path, or None."""
    folder = where or crash_dir()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"crash-{stamp}-{os.getpid()}.txt"
    text = "".join(traceback.format_exception(exc))
    header = f"pgtop-ha {__version__}, Python {sys.version.split()[0]}, argv {sys.argv[1:]}\n\n"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(redact(header + text))
    except OSError:
        return None
    return path


def crash_line(exc: BaseException, report: Path | None) -> str:
    """The one line printed when the console ends on an unexpected exception."""
    what = clean(redact(f"{type(exc).__name__}: {exc}"))[:300]
    where = f"; details in {report}" if report else "; no crash report could be written"
    return f"pgtop-ha: unexpected error, the console stopped ({what}){where}; please report it"


def quiet_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """Python's hook for errors it cannot raise (in finalizers): never a library's traceback on stderr.

    A library's object torn down half-made (asyncpg's Connection after a server version it cannot
    parse) raises in its __del__; the failure itself was already reported where it happened.
    """
    where = getattr(type(unraisable.object), "__module__", "") or ""
    if where.startswith("pgtop_ha"):
        sys.__unraisablehook__(unraisable)

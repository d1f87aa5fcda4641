"""VictoriaMetrics and vmalert as the labs start them: their binaries and command lines."""

from __future__ import annotations

import shutil
from pathlib import Path

from pgtop_ha.errors import UserError

# A member whose samples stopped reads as down after this, as with Prometheus's default lookback.
LOOKBACK = "5m"


def binaries() -> tuple[str, str]:
    """The paths of victoria-metrics and vmalert; a one-line error naming the package when missing."""
    vm, vmalert = shutil.which("victoria-metrics"), shutil.which("vmalert")
    if vm is None or vmalert is None:
        raise UserError("victoria-metrics and vmalert not found; install Debian's `victoria-metrics`")
    return vm, vmalert


def victoria_command(binary: str, data: Path, port: int, *flags: str) -> list[str]:
    """VictoriaMetrics on 127.0.0.1:``port``, its newest samples searchable at once."""
    return [
        binary,
        f"-storageDataPath={data}",
        f"-httpListenAddr=127.0.0.1:{port}",
        "-search.latencyOffset=0s",
        *flags,
    ]


def vmalert_command(binary: str, rules: Path, url: str, port: int, interval_s: int) -> list[str]:
    """vmalert on 127.0.0.1:``port`` evaluating ``rules`` over ``url`` and writing the records back."""
    return [
        binary,
        f"-rule={rules}",
        f"-datasource.url={url}",
        f"-remoteWrite.url={url}",
        f"-evaluationInterval={interval_s}s",
        f"-httpListenAddr=127.0.0.1:{port}",
        # Records written back by the next evaluation: the default flush (5 s) is longer than a
        # short interval, and each count would wait for it.
        f"-remoteWrite.flushInterval={min(interval_s, 5)}s",
        # It will not run alerting rules without a notifier: one on loopback where none listens.
        f"-notifier.url=http://127.0.0.1:{port + 1}",
    ]

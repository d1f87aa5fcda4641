"""A lab over TLS whose certificate ends in 5 days: both handshakes read, both graded WARN."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from typing import Any

from pgtop_ha.lab.cluster import Lab, claim_layout
from pgtop_ha.lab.procs import poll

PGTOP = [sys.executable, "-m", "pgtop_ha"]


def test_a_certificate_ending_in_five_days_is_a_warning() -> None:
    lab = Lab(dataclasses.replace(claim_layout(None), tls=5), out=io.StringIO())
    try:
        lab.up(rows=1_000)
        argv = [*PGTOP, "--config", str(lab.layout.console_config), "check", "--json"]
        seen: list[dict[str, Any]] = []

        def warned() -> bool:
            seen.append(json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout))
            return len([v for v in seen[-1]["verdicts"] if v["rule"] == "tls.expiry"]) == 2 * len(
                lab.layout.names
            )

        assert poll(warned, 60, interval=0.5), seen[-1]
        expiry = [v for v in seen[-1]["verdicts"] if v["rule"] == "tls.expiry"]
        assert all(v["level"] == 1 for v in expiry)
        texts = {v["text"].split(":", 1)[-1].strip().split(" certificate")[0] for v in expiry}
        assert texts == {"REST", "PostgreSQL"}
        assert all("expires in 5 days" in v["text"] or "expires in 4 days" in v["text"] for v in expiry)
    finally:
        lab.down()

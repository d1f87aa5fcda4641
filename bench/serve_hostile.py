"""A serve under hostile viewers: its memory and descriptors, against the same serve with one viewer.

On the lab, `pgtop-ha serve` runs twice for a window each: first with one honest viewer (the
reference), then with N viewers of which a quarter never read and one floods markers. Sampled
every second: the serve's RSS (its whole process tree) and open descriptors. Example:

    .venv/bin/python bench/serve_hostile.py --config /var/lib/pgtop-ha/lab/pgtop-ha.toml \
        --seconds 60 --viewers 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgtop_ha.serve import wire

PGTOP = [sys.executable, "-m", "pgtop_ha"]


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


async def _reader(sock: Path, got: list[int], k: int) -> None:
    reader, writer = await asyncio.open_unix_connection(sock, limit=wire.MAX_FROM_SERVER)
    try:
        while line := await reader.readline():
            got[k] += 1
            del line
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _stuck(sock: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    await asyncio.get_running_loop().sock_connect(s, str(sock))
    return s


async def _flood(sock: Path, seconds: float) -> int:
    _, writer = await asyncio.open_unix_connection(sock, limit=wire.MAX_FROM_SERVER)
    sent = 0
    deadline = time.monotonic() + seconds
    with contextlib.suppress(ConnectionError, RuntimeError):
        while time.monotonic() < deadline and not writer.is_closing():
            writer.write(wire.encode("mark", text=f"flood {sent}") * 70)
            sent += 70
            await writer.drain()
            await asyncio.sleep(0.05)
    writer.close()
    return sent


async def _window(config: str, viewers: int, seconds: float, hostile: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pgtop-serve-hostile-") as tmp:
        sock = Path(tmp) / "serve.sock"
        argv = [*PGTOP, "--config", config, "serve", "--socket", str(sock), "--record", f"{tmp}/rec.pgtop",
                "--record-max", "16MiB", "--max-viewers", str(max(viewers, 1) + 8)]  # fmt: skip
        proc = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            while not await asyncio.to_thread(os.path.exists, sock):
                if proc.returncode is not None:
                    said = (await proc.stdout.read()).decode() if proc.stdout else ""
                    raise SystemExit(f"serve ended: {said}")
                await asyncio.sleep(0.1)
            await asyncio.sleep(5)  # a few cycles first: the baseline is a serve already polling
            ps = psutil.Process(proc.pid)
            honest = viewers - viewers // 4 if hostile else 1
            got = [0] * honest
            tasks = [asyncio.create_task(_reader(sock, got, k)) for k in range(honest)]
            stuck = [await _stuck(sock) for _ in range(viewers // 4)] if hostile else []
            flooding = asyncio.create_task(_flood(sock, seconds)) if hostile else None
            rss: list[int] = []
            fds: list[int] = []
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                rss.append(_tree_rss(ps))
                fds.append(ps.num_fds())
                await asyncio.sleep(1)
            flooded = await flooding if flooding is not None else 0
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for s in stuck:
                s.close()
            return {
                "viewers": viewers if hostile else 1,
                "hostile": hostile,
                "rss_first_mib": rss[0] / 1024**2,
                "rss_peak_mib": max(rss) / 1024**2,
                "rss_last_mib": rss[-1] / 1024**2,
                "rss_median_mib": statistics.median(rss) / 1024**2,
                "fds_last": fds[-1],
                "markers_flooded": flooded,
                "lines_per_honest_viewer": statistics.median(got) if got else 0,
            }
        finally:
            proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 30)


async def main() -> None:
    """Run the reference window, then the hostile one; print both and their ratio as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--viewers", type=int, default=200)
    args = parser.parse_args()
    reference = await _window(args.config, 1, args.seconds, hostile=False)
    hostile = await _window(args.config, args.viewers, args.seconds, hostile=True)
    ratio = hostile["rss_peak_mib"] / reference["rss_peak_mib"]
    print(
        json.dumps({"reference": reference, "hostile": hostile, "peak_rss_ratio": round(ratio, 2)}, indent=2)
    )


if __name__ == "__main__":
    asyncio.run(main())

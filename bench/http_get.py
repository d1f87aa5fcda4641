"""CPU per GET: the read path's lean transport against plain httpx.AsyncClient (on demand, not in CI).

A server in a child process (so its CPU is not counted) answers ``/patroni`` with a Patroni-sized
JSON body, either as Patroni does (HTTP/1.0, a new connection per request) or with HTTP/1.1
keep-alive (where httpx's pool can reuse its connection). Each run sends ``--gets`` GETs one after
another with each client, the clients interleaved run by run; the figure is this process's CPU
(user + system, ``time.process_time``) per GET, median over ``--runs`` runs.

    .venv/bin/python bench/http_get.py [--runs 7] [--gets 300] [--also OLD_TRANSPORT.py]

``--also`` loads another module defining ``LeanGetTransport`` (e.g. an older transport.py from
git) and measures it under the same GetOnlyClient.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from pgtop_ha.collect.http import GetOnlyClient

BODY = (Path(__file__).parent.parent / "tests/collect/fixtures/patroni_primary.json").read_bytes()


def serve(keep_alive: bool) -> None:
    """Run the server (in the child): print the port, answer until killed."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


Get = Callable[[str], Awaitable[httpx.Response]]


async def _run(get: Get, url: str, gets: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(gets):
        response = await get(url)
        if response.status_code != 200 or len(response.content) != len(BODY):
            raise SystemExit(f"unexpected answer {response.status_code}")
    return (time.process_time() - cpu) * 1000 / gets, (time.perf_counter() - wall) * 1000 / gets


def _load_transport(path: Path) -> type[httpx.AsyncBaseTransport]:
    spec = importlib.util.spec_from_file_location("other_transport", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    transport: type[httpx.AsyncBaseTransport] = module.LeanGetTransport
    return transport


async def bench(url: str, runs: int, gets: int, also: Path | None) -> dict[str, dict[str, object]]:
    """Median CPU and wall ms per GET for each client."""
    lean = GetOnlyClient(timeout=5)
    plain = httpx.AsyncClient(timeout=5)
    clients: dict[str, Get] = {"lean (GetOnlyClient)": lean.get, "httpx.AsyncClient": plain.get}
    other = None
    if also is not None:
        other = GetOnlyClient(timeout=5, transport=_load_transport(also)())
        clients[f"lean, {also.name}"] = other.get
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
    try:
        for get in clients.values():
            await _run(get, url, 20)  # warm-up: imports, TLS-less connect paths, pool
        for _ in range(runs):
            for name, get in clients.items():
                samples[name].append(await _run(get, url, gets))
    finally:
        await lean.aclose()
        await plain.aclose()
        if other is not None:
            await other.aclose()
    return {
        name: {
            "cpu_ms_per_get": round(statistics.median(c for c, _ in runs_), 3),
            "wall_ms_per_get": round(statistics.median(w for _, w in runs_), 3),
            "cpu_runs": [round(c, 3) for c, _ in runs_],
        }
        for name, runs_ in samples.items()
    }


def main() -> None:
    """Measure both server kinds and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--gets", type=int, default=300)
    parser.add_argument("--also", type=Path, help="another transport.py to measure as well")
    parser.add_argument("--serve", choices=["close", "keep-alive"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve == "keep-alive")
        return
    results: dict[str, object] = {}
    for kind in ("close", "keep-alive"):
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", kind], stdout=subprocess.PIPE, text=True
        )
        try:
            assert child.stdout is not None
            port = int(child.stdout.readline())
            url = f"http://127.0.0.1:{port}/patroni"
            results[f"server: {kind}"] = asyncio.run(bench(url, args.runs, args.gets, args.also))
        finally:
            child.terminate()
            child.wait()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

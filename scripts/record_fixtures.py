"""Re-record the node-document fixtures (tests/collect/fixtures/doc_*.json) from a running lab.

The fixtures are what the one statement returns on a real server, so the parse tests read what
PostgreSQL really sends. After a change to the statement (collect/sql/, collect/pgquery.py),
re-record them and review the diff:

    .venv/bin/pgtop-ha lab up --state-dir /tmp/fixture-lab
    .venv/bin/python scripts/record_fixtures.py --state-dir /tmp/fixture-lab
    git diff tests/collect/fixtures

- doc_primary_monitor.json: the leader, as the lab's monitoring role (pg_monitor), a full cycle
  (pending restarts included), memory read locally (no /proc texts in the document).
- doc_standby_superuser.json: a replica, as the superuser, a full cycle with remote memory
  (pg_read_file of /proc texts), as the console reads a node on another host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import asyncpg

from pgtop_ha.collect.pgquery import PROBE_SQL, Capabilities, build_query
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import DBNAME, MONITOR_USER, NODE_NAMES, SUPERUSER, saved_layout

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "collect" / "fixtures"


async def _document(lab: Lab, node: str, user: str, *, remote_memory: bool) -> dict[str, object]:
    port = lab.layout.pg_port(lab.index(node))
    conn = await asyncpg.connect(
        host="127.0.0.1", port=port, user=user, database=DBNAME, passfile=str(lab.layout.pgpass), timeout=10
    )
    try:
        caps = Capabilities.from_row(await conn.fetchrow(PROBE_SQL))
        if remote_memory and not caps.remote_memory:
            raise SystemExit(f"{user} on {node} cannot read /proc through pg_read_file")
        text = await conn.fetchval(build_query(caps, remote_memory=remote_memory, slow=True))
    finally:
        await conn.close()
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise SystemExit(f"{node}: the statement did not return an object")
    return doc


async def record(state_dir: Path, out: Path = FIXTURES) -> list[Path]:
    """Write both fixtures from the lab in ``state_dir`` into ``out``; the paths written."""
    layout = saved_layout(state_dir)
    if layout is None:
        raise SystemExit(f"no lab in {state_dir}; start one with `pgtop-ha lab up --state-dir {state_dir}`")
    lab = Lab(layout)
    leader = lab.leader()
    if leader is None:
        raise SystemExit("the lab has no leader right now; wait for `pgtop-ha lab status` to show one")
    replica = next(n for n in NODE_NAMES if n != leader)
    wanted = {
        "doc_primary_monitor.json": (leader, MONITOR_USER, False),
        "doc_standby_superuser.json": (replica, SUPERUSER, True),
    }
    written = []
    for name, (node, user, remote) in wanted.items():
        doc = await _document(lab, node, user, remote_memory=remote)
        path = out / name
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command line: --state-dir of a running lab."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, required=True, help="the lab's (lab up --state-dir)")
    parser.add_argument("--out", type=Path, default=FIXTURES, help="where to write (default: the fixtures)")
    args = parser.parse_args(argv)
    for path in asyncio.run(record(args.state_dir, args.out)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Levels are the judge's to give: a Level.WARN or Level.CRIT written outside pgtop_ha/judge fails here.

The panes that still grade a cell themselves are listed with their count, which may only fall: a
new grade outside the judge, or one more in a listed file, fails; a file that needs fewer must
lower its count here, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pgtop_ha

PACKAGE = Path(pgtop_ha.__file__).parent
HOMES = ("judge/", "models/thresholds.py")  # the rules, and where Level itself is defined

# Grades still given in place (file: count), to move into the judge.
STILL_IN_PLACE = {
    "check_cli.py": 1,
    "models/poolers.py": 8,
    "ui/panes/archiver.py": 1,
    "ui/panes/cache.py": 1,
    "ui/panes/cluster.py": 5,
    "ui/panes/haproxy.py": 2,
    "ui/panes/locks.py": 7,
    "ui/panes/memory.py": 1,
    "ui/panes/overview.py": 2,
    "ui/panes/parameters.py": 2,
    "ui/panes/pgbackrest.py": 13,
    "ui/panes/pgbouncer.py": 2,
    "ui/panes/pgpool.py": 3,
    "ui/panes/probes.py": 7,
    "ui/panes/replication.py": 4,
    "ui/panes/slots.py": 3,
    "ui/panes/waits.py": 1,
    "ui/screens/monitor.py": 2,
    "ui/themes.py": 2,
    "ui/widgets/heartbeat.py": 5,
}


def _grades() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(HOMES):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("WARN", "CRIT")
                and isinstance(node.value, ast.Name)
                and node.value.id == "Level"
            ):
                found[rel] += 1
    return found


def test_no_new_grade_outside_the_judge() -> None:
    found = _grades()
    grown = {f: n for f, n in found.items() if n > STILL_IN_PLACE.get(f, 0)}
    assert not grown, f"grade in the judge (pgtop_ha/judge/), not here: {grown}"


def test_the_list_of_grades_in_place_only_shrinks() -> None:
    found = _grades()
    fell = {f: (n, found.get(f, 0)) for f, n in STILL_IN_PLACE.items() if found.get(f, 0) < n}
    assert not fell, f"lower these counts in STILL_IN_PLACE (listed, found): {fell}"


def test_comments_say_why_briefly() -> None:
    # No issue numbers of a tracker outside the repository, no measured figures, short module docs.
    issue = re.compile(r"\bissue \d+")
    figure = re.compile(r"CPU s/min")
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(PACKAGE).as_posix()
        assert not issue.search(text), f"{rel}: an issue number in the code"
        assert not figure.search(text), f"{rel}: a measured figure belongs in docs/benchmarks.md"
        doc = ast.get_docstring(ast.parse(text), clean=False) or ""
        assert len(doc.strip().splitlines()) <= 5, f"{rel}: module docstring over 5 lines"

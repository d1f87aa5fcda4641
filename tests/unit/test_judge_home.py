"""Levels are the judge's to give: a Level.WARN or Level.CRIT written outside pgtop_ha/judge fails here.

A pane, the header, the JSON and `check` render the judge's grades; one that grades a value itself
can disagree with another that shows the same fact.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pgtop_ha

PACKAGE = Path(pgtop_ha.__file__).parent
HOMES = ("judge/", "models/thresholds.py")  # the rules, and where Level itself is defined


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


def test_no_grade_outside_the_judge() -> None:
    found = _grades()
    assert not found, f"grade in the judge (pgtop_ha/judge/), not here: {dict(found)}"


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


def test_no_threshold_outside_the_judge() -> None:
    # A limit that turns a value WARN or CRIT is a rule: named *_WARN* or *_CRIT*, it lives in the
    # judge (or is a [thresholds] band of the settings).
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(HOMES):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if any(re.search(r"(^|_)(WARN|CRIT)(_|$)", n) for n in names):
                    found.append(f"{rel}:{node.lineno} {names}")
    assert not found, found

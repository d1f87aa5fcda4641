"""Rewrite the generated tables of docs/ from the code (the rule ids of docs/check.md).

.venv/bin/python scripts/docs_tables.py          # rewrite
.venv/bin/python scripts/docs_tables.py --check  # exit 1 when a page drifted
"""

from __future__ import annotations

import sys
from pathlib import Path

from pgtop_ha.judge.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "docs" / "check.md"
RULES_HEAD = "| rule | means |\n|---|---|\n"


def rules_table() -> str:
    """The rules section's table, one row per rule id."""
    return RULES_HEAD + "".join(f"| `{rule}` | {meaning} |\n" for rule, meaning in RULES.items())


def rewritten(text: str) -> str:
    """``text`` (docs/check.md) with its rules table made anew; the table ends the page."""
    return text[: text.index(RULES_HEAD)] + rules_table()


def main() -> int:
    """Rewrite, or with --check say whether the pages match the code."""
    text = CHECK.read_text()
    want = rewritten(text)
    if "--check" in sys.argv[1:]:
        if want != text:
            print(
                f"{CHECK.relative_to(ROOT)} drifted from the code: run scripts/docs_tables.py",
                file=sys.stderr,
            )
            return 1
        return 0
    CHECK.write_text(want)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

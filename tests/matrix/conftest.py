"""`pytest -m matrix`: the page is written once every case has run and passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.matrix.compat import CASES, REPORTS, case_id, write_page

PAGE = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """docs/compatibility.md, when the whole walk ran green (a partial run leaves it alone)."""
    if exitstatus == 0 and all(case_id(c) in REPORTS for c in CASES):
        write_page(REPORTS, PAGE)

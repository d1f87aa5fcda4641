"""Each supported PostgreSQL and Patroni in a real lab: every pane and field, a switchover, a kill -9."""

from __future__ import annotations

import dataclasses
import io

import pytest

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab, claim_layout
from tests.matrix.compat import CASES, REPORTS, case_id, measure, report

# One xdist worker runs every case: one lab at a time (their timings), and REPORTS in one process.
pytestmark = [pytest.mark.matrix, pytest.mark.xdist_group("matrix")]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_every_pane_and_field_on_this_version(case: tuple[int, str]) -> None:
    postgres, patroni = case
    layout = dataclasses.replace(claim_layout(None), postgres=postgres, patroni=patroni)
    lab = Lab(layout, out=io.StringIO())
    try:
        lab.up(rows=10_000)
        r, settings = report(lab)
        assert r.postgres == str(postgres) and r.patroni.startswith(patroni), (r.postgres, r.patroni)
        assert not r.failing(), r.failing()
        assert not r.verdicts, r.verdicts
        # A version's gap is said with the version that brings it, never left as a bare null.
        assert all(v.startswith(("n/a", "empty")) for v in r.fields.values()), r.fields
        r.switchover_s = measure(lab, settings, faults.switchover)
        r.kill_s = measure(lab, settings, faults.kill_primary, trouble=True)
        REPORTS[case_id(case)] = r
    finally:
        lab.down()

"""`lab fault switchover` against Patroni's refusals: a fake, since a 412 cannot be had on demand."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from pgtop_ha.errors import UserError
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab

NO_CANDIDATE = "switchover is not possible: no good candidates have been found"


class _Layout:
    verify = True  # no TLS: nothing to verify the REST API against

    def __init__(self, tmp: Path) -> None:
        self.rest_password_file = tmp / "patroni-rest"
        self.rest_password_file.write_text("secret\n")

    def patroni_url(self, index: int) -> str:
        return f"http://127.0.0.1:{28000 + index}"


class _Lab:
    """What switchover() reads of a lab: its leader (node2 once Patroni took the request)."""

    def __init__(self, tmp: Path) -> None:
        self.layout = _Layout(tmp)
        self.out = io.StringIO()
        self.accepted = False

    def leader(self) -> str:
        return "node2" if self.accepted else "node1"

    def index(self, name: str) -> int:
        return ["node1", "node2", "node3"].index(name)


def _patroni(monkeypatch: pytest.MonkeyPatch, lab: _Lab, answers: list[httpx.Response]) -> list[str]:
    asked: list[str] = []

    def post(url: str, **_: Any) -> httpx.Response:
        asked.append(url)
        resp = answers.pop(0) if len(answers) > 1 else answers[0]
        lab.accepted = resp.status_code == 200
        return resp

    monkeypatch.setattr(httpx, "post", post)  # faults.switchover looks it up at each call
    monkeypatch.setattr(faults, "CANDIDATE_RETRY_S", 0.01)
    return asked


def test_no_good_candidate_yet_is_asked_again_until_patroni_agrees(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Seen once in CI right after the lab was healthy: a replica restarting (Patroni restarts
    # each once to create the permanent slot) is no good candidate for a moment, not for good.
    lab = _Lab(tmp_path)
    refusal = httpx.Response(412, text=NO_CANDIDATE)
    asked = _patroni(
        monkeypatch, lab, [refusal, refusal, httpx.Response(200, text="Successfully switched over")]
    )
    said = faults.switchover(cast(Lab, lab))
    assert said.startswith("switchover done: node2 leads (was node1)") and len(asked) == 3
    assert "no good candidate yet" in lab.out.getvalue()  # the wait says what it waits for


def test_any_other_refusal_is_final_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lab = _Lab(tmp_path)
    reason = "switchover is not possible: cluster does not have members except leader"
    asked = _patroni(monkeypatch, lab, [httpx.Response(412, text=reason)])
    with pytest.raises(UserError, match=r"Patroni refused the switchover \(412\): .*except leader$"):
        faults.switchover(cast(Lab, lab))
    assert len(asked) == 1


def test_a_refusal_that_lasts_ends_with_patronis_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lab = _Lab(tmp_path)
    asked = _patroni(monkeypatch, lab, [httpx.Response(412, text=NO_CANDIDATE)])
    monkeypatch.setattr(faults, "CANDIDATE_WAIT_S", 0.05)
    with pytest.raises(
        UserError, match=r"refused the switchover \(412\) for 0s: .*no good candidates.*lab status"
    ):
        faults.switchover(cast(Lab, lab))
    assert len(asked) >= 2

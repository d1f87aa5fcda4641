"""`serve` and `attach` on the command line: every bad flag or address is one line naming the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtop_ha.cli import main

PATRONI = ["--patroni", "http://127.0.0.1:1"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", "--web", "0.0.0.0:8080"], "not a loopback address"),
        (["serve", "--web", "8080"], "give HOST:PORT"),
        (["serve", "--listen", "10.0.0.1:7000"], "listen on 127.0.0.1 and forward it with ssh -L"),
        (["serve", "--group", "adm"], "--group needs --socket PATH"),
        (["serve", "--record-max", "lots"], "record"),
    ],
)
def test_bad_serve_flags_are_one_line(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*PATRONI, *argv]) != 0
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_attach_to_nothing_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attach", str(tmp_path / "none.sock")]) != 0
    err = capsys.readouterr().err
    assert "no pgtop-ha serve at" in err and "start `pgtop-ha serve`" in err and err.count("\n") == 1


def test_a_file_where_the_socket_goes_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken.sock"
    taken.write_text("mine")
    assert main([*PATRONI, "serve", "--socket", str(taken)]) != 0
    assert "exists and is not a socket" in capsys.readouterr().err
    assert taken.read_text() == "mine"

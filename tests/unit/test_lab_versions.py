"""Choosing the lab's PostgreSQL and Patroni, and the warning for an unsupported version."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from pgtop_ha.errors import UserError
from pgtop_ha.judge.support import patroni_unsupported, postgres_unsupported
from pgtop_ha.lab import versions
from pgtop_ha.lab.layout import Layout, saved_layout


def test_flags_name_the_choices() -> None:
    assert versions.postgres_major("18") == 18
    assert versions.patroni_minor("3.3") == "3.3"
    with pytest.raises(UserError, match="choose one of 14, 15, 16, 17, 18"):
        versions.postgres_major("13")
    with pytest.raises(UserError, match=r"choose one of 3\.3, 4\.0, 4\.1"):
        versions.patroni_minor("4.2")


def test_debian_build_is_taken_where_installed(tmp_path: Path) -> None:
    for major in ("13", "15", "16"):
        (tmp_path / major / "bin").mkdir(parents=True)
        for name in ("postgres", "psql"):
            (tmp_path / major / "bin" / name).touch()
    assert versions.debian_bin(None, tmp_path) == tmp_path / "16" / "bin"
    assert versions.debian_bin(15, tmp_path) == tmp_path / "15" / "bin"
    assert versions.debian_bin(18, tmp_path) is None
    assert versions.library_dir(Path("/var/cache/pgtop-ha/postgres/18/bin")) == Path(
        "/var/cache/pgtop-ha/postgres/18/lib"
    )
    assert versions.library_dir(Path("/usr/lib/postgresql/15/bin")) is None


def test_an_archive_escaping_its_directory_is_refused(tmp_path: Path) -> None:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    data.seek(0)
    with tarfile.open(fileobj=data, mode="r:gz") as tar, pytest.raises(UserError, match="unsafe path"):
        versions._extract(tar, tmp_path / "into")
    assert not (tmp_path / "escape").exists()


def test_pgbackrest_archives_only_the_versions_it_knows() -> None:
    assert versions.pgbackrest_archives(15, (2, 45))
    assert not versions.pgbackrest_archives(16, (2, 45))
    assert versions.pgbackrest_archives(18, (2, 57))
    assert not versions.pgbackrest_archives(15, None)


def test_the_layout_keeps_its_versions(tmp_path: Path) -> None:
    layout = Layout(base_port=26400, state_dir=tmp_path, postgres=18, patroni="3.3")
    (tmp_path / "layout.json").write_text(layout.record())
    saved = saved_layout(tmp_path)
    assert saved is not None and (saved.postgres, saved.patroni) == (18, "3.3")
    (tmp_path / "layout.json").write_text(layout.record().replace('"postgres": 18', '"postgres": 12'))
    with pytest.raises(UserError, match="damaged \\(versions\\)"):
        saved_layout(tmp_path)


def test_a_version_outside_the_range_is_one_line() -> None:
    assert postgres_unsupported(180006) is None and postgres_unsupported(None) is None
    assert postgres_unsupported(130012) == "PostgreSQL 13 is outside the supported 14-18: views may differ"
    assert patroni_unsupported("4.1.5") is None and patroni_unsupported("garbage") is None
    assert patroni_unsupported("3.2.2") == "Patroni 3.2.2 is outside the supported 3.3-4.1: fields may differ"

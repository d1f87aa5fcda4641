"""Finding the binaries the lab needs, with the install command when one is missing."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.errors import UserError
from pgtop_ha.lab import versions

APT = "apt-get install -y postgresql postgresql-contrib etcd-server haproxy pgbackrest"


@dataclass(frozen=True)
class Tools:
    """Paths of every program the lab runs."""

    pg_bin: Path
    etcd: Path
    haproxy: Path
    pgbackrest: Path

    @property
    def psql(self) -> Path:
        """psql of the chosen PostgreSQL."""
        return self.pg_bin / "psql"

    @property
    def pgbench(self) -> Path:
        """pgbench of the chosen PostgreSQL."""
        return self.pg_bin / "pgbench"

    @property
    def pg_version(self) -> int:
        """Major version of the chosen PostgreSQL."""
        return int(self.pg_bin.parent.name)

    @property
    def pg_lib(self) -> Path | None:
        """The build's own lib/ for LD_LIBRARY_PATH (None for Debian's)."""
        return versions.library_dir(self.pg_bin)

    @functools.cached_property
    def pgbackrest_archives(self) -> bool:
        """Whether Debian's pgBackRest can archive this PostgreSQL (else the lab copies WAL); asked once."""
        return versions.pgbackrest_archives(self.pg_version, versions.pgbackrest_version(self.pgbackrest))


def _which(name: str, package: str) -> Path:
    found = shutil.which(name, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    if found is None:
        raise UserError(f"{name} not found; install it with: apt-get install -y {package}")
    return Path(found)


def find_tools(postgres: int | None = None, note: Callable[[str], None] | None = None) -> Tools:
    """Locate every binary, or say which apt-get command installs the missing one.

    ``postgres``: the lab's major (None: Debian's newest); ``note``, when given, allows fetching it.
    """
    return Tools(
        pg_bin=versions.find_postgres(postgres, note or (lambda _: None), fetch=note is not None),
        etcd=_which("etcd", "etcd-server"),
        haproxy=_which("haproxy", "haproxy"),
        pgbackrest=_which("pgbackrest", "pgbackrest"),
    )

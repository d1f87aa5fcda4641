"""The audit log: every attempted action appended as one JSON line, and kept for the Events pane."""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from pathlib import Path

from pgtop_ha.actions.results import ActionResult, AuditEntry
from pgtop_ha.errors import ConfigError

AuditListener = Callable[[AuditEntry], None]


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
            with path.open("a", encoding="utf-8"):
                pass
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
            target=result.target,
            ok=result.ok,
            status=result.status,
            result=result.message,
            duration_s=round(result.duration_s, 3),
        )
        self._entries.append(entry)
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(entry.model_dump_json() + "\n")
            self.last_error = None
        except OSError as exc:
            # The action already happened: say the log failed rather than hide the result.
            self.last_error = f"audit log {self.path}: {exc.strerror}"
        for listener in self._listeners:
            listener(entry)
        return entry

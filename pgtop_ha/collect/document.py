"""The node statement's JSON document as one typed model, validated whole and strictly.

``NodeDocument`` is the readings a snapshot carries (NodeReadings) plus what only the reader uses.
Strict JSON: an integer is an integer, a timestamp an ISO string; anything else is one ParseError
line naming the place, never a crash.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, ValidationError, field_validator

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.models.base import Frozen
from pgtop_ha.models.snapshot import NodeReadings, Process

MAX_DOCUMENT = 32 * 1024 * 1024  # a node's document is KBs; with /proc texts of 1000 backends, a few MB


class ProcessRow(Process):
    """A pg_stat_activity row as sent; on remote nodes with its /proc texts (full cycles only)."""

    smaps: str | None = None
    status: str | None = None


class PostmasterTexts(Frozen):
    """The postmaster's pid and /proc texts, read through pg_read_file (remote memory)."""

    pid: int | None = None
    smaps: str | None = None
    status: str | None = None
    meminfo: str | None = None


class HugePagesSetting(Frozen):
    """PostgreSQL's HugePages settings (read with the pending restarts: they change on restart)."""

    setting: str | None = None
    status: str | None = None
    shared_memory_pages: int | None = None


class NodeDocument(NodeReadings):
    """The whole document: the readings, then what the reader itself needs."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    backend_pid: int | None = None
    conf_load_time: str | None = None
    processes: tuple[ProcessRow, ...] = ()
    postmaster: PostmasterTexts | None = None
    huge_pages: HugePagesSetting | None = None

    @field_validator("processes", mode="before")
    @classmethod
    def _process_rows(cls, columns: Any) -> tuple[dict[str, Any], ...]:
        """The statement's columns (one array each, all of one length) as an object per process."""
        if not isinstance(columns, dict):
            raise ValueError("not an object of columns")
        pids = columns.get("pid")
        if pids is None and all(values is None for values in columns.values()):
            return ()  # no process listed: every column's aggregate is NULL
        if not isinstance(pids, list):
            raise ValueError("pid: not an array")
        for name, values in columns.items():
            if not isinstance(values, list) or len(values) != len(pids):
                raise ValueError(f"{name}: not an array of {len(pids)} values")
        names = tuple(columns)
        return tuple(dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True))


def read_document(text: str) -> NodeDocument:
    """The statement's text as a NodeDocument; ParseError (one line) when it is not one."""
    if len(text) > MAX_DOCUMENT:
        raise ParseError(f"postgres document: {len(text)} characters, more than {MAX_DOCUMENT}")
    try:
        return NodeDocument.model_validate_json(text)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "json_invalid":
            raise ParseError("postgres document: not JSON") from None
        where = ".".join(str(p) for p in err["loc"]) or "the top level"
        if err["type"] == "model_type" and not err["loc"]:
            raise ParseError("postgres document: not an object") from None
        raise ParseError(f"postgres document: unexpected value at {where}: {err['msg']}") from None
    except ValueError as exc:  # a Bounded number out of range that must be present
        raise ParseError(f"postgres document: {exc}") from None

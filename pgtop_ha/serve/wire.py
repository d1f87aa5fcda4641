"""The stream between `serve` and `attach`: one JSON object per line, bounded both ways.

The server sends hello, then the events and snapshots it holds, then each snapshot and marker as
it comes; a viewer sends only markers. Snapshots cross as the recorder stores them: scrubbed.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.record.markers import clean_marker
from pgtop_ha.record.reader import event_of
from pgtop_ha.record.scrub import cleaned_json, scrub_tree
from pgtop_ha.record.store import MAX_SNAPSHOT_BYTES

VERSION = 1
_STRINGS = re.compile(r'"[^"]*"')
_BRACKETS = re.compile(r"[\[\]{}]")
MAX_FROM_SERVER = MAX_SNAPSHOT_BYTES + 4096  # one line: a snapshot as large as a recording holds
MAX_FROM_VIEWER = 8192  # one line: a marker of 500 characters, and room
MAX_DEPTH = 32  # nesting of a line's JSON (a snapshot needs under ten)
MAX_EVENTS = 10_000  # events taken from an "events" line (a serve keeps fewer)


def encode(kind: str, **fields: Any) -> bytes:
    """One line of kind ``kind``."""
    return (json.dumps({"t": kind, **fields}, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def snapshot_line(scrubbed: str) -> bytes:
    """A snapshot's line from its JSON as a recording stores it, secrets masked (made once a cycle)."""
    return b'{"t":"snap","s":' + scrubbed.encode() + b"}\n"


def events_line(events: list[Event]) -> bytes:
    """The server's events so far, for a viewer that comes late."""
    return encode("events", events=scrub_tree([e.model_dump(mode="json") for e in events]))


def marker_line(at: datetime, text: str, source: str) -> bytes:
    """A marker stamped by the server, to every viewer."""
    return encode("mark", at=at.isoformat(), text=text, source=source)


def decode(line: bytes, what: str) -> dict[str, Any]:
    """One line as an object with a string ``t``, every string cleaned; ParseError naming ``what``."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError(f"{what}: not a line of JSON") from None
    if _too_deep(text):
        raise ParseError(f"{what}: JSON nested deeper than {MAX_DEPTH}")
    try:
        doc = cleaned_json(text)
    except (ValueError, RecursionError):
        raise ParseError(f"{what}: not a line of JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("t"), str):
        raise ParseError(f"{what}: not a pgtop-ha stream line (no type)")
    return doc


def _too_deep(text: str) -> bool:
    """True when brackets outside strings nest deeper than MAX_DEPTH (checked before parsing)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    depth = 0
    # Strings hold no structure: drop them (escaped quotes first), then count what is left.
    bare = _STRINGS.sub("", text.replace("\\\\", "").replace('\\"', ""))
    for ch in _BRACKETS.findall(bare):
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def snapshot_of(doc: dict[str, Any], what: str) -> ClusterSnapshot:
    """The snapshot a "snap" line holds."""
    try:
        return ClusterSnapshot.model_validate(doc.get("s"))
    except (ValidationError, ValueError):
        raise ParseError(f"{what}: a snapshot this pgtop-ha cannot read") from None


def events_of(doc: dict[str, Any]) -> list[Event]:
    """The events an "events" line holds (those this pgtop-ha cannot read are left out)."""
    found = doc.get("events")
    items = found[-MAX_EVENTS:] if isinstance(found, list) else []
    return [e for item in items if isinstance(item, dict) and (e := event_of(item)) is not None]


def marker_of(doc: dict[str, Any]) -> tuple[datetime, str, str] | None:
    """A "mark" line's time, text and source (None when it is not one)."""
    try:
        at = datetime.fromisoformat(str(doc.get("at")))
    except ValueError:
        return None
    text, source = doc.get("text"), doc.get("source")
    if not isinstance(text, str) or not isinstance(source, str) or at.tzinfo is None:
        return None
    return at, clean_marker(text), clean_marker(source)[:100]

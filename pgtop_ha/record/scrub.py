"""What goes into and comes out of a recording: secrets masked on the way in, text cleaned on the way out.

Recordings are shared, so URL user info, ``password=...``, ``PASSWORD '...'`` and password-like
keys are masked before they are stored; replayed, a recording is untrusted input and every string
is cleaned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pgtop_ha.models.text import clean
from pgtop_ha.models.urls import redact

# Quick test on a whole JSON text: the common snapshot has none of these and costs one search.
_MAYBE_SECRET = re.compile(r"://[^\s/\"]*@|passw(?:or)?d|secret|token", re.IGNORECASE)
_SECRET_KEY = re.compile(r"passw(?:or)?d|secret|token", re.IGNORECASE)
_CONNINFO = re.compile(r"(?P<key>\bpassw(?:or)?d\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s'\"]+)", re.IGNORECASE)
# Only a quoted or dollar-quoted literal: "password authentication failed" stays readable.
_SQL = re.compile(r"(?P<key>\bpassword\s+)(?:'(?:[^']|'')*'?|\$(?P<tag>\w*)\$.*?(?:\$(?P=tag)\$|$))", re.I)
# A JSON escape of a control character, or a raw C1 / bidi character: cleaning is needed.
_MAYBE_CONTROL = re.compile(
    r"\\u00[01][0-9a-fA-F]|\\u007[fF]|\\u00[89][0-9a-fA-F]|\\u202[a-eA-E]|\\u206[6-9]"
    "|[\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def scrub(text: str) -> str:
    """``text`` with URL credentials, ``password=...`` values and SQL ``PASSWORD '...'`` masked."""
    if not _MAYBE_SECRET.search(text):
        return text
    text = redact(text)
    text = _CONNINFO.sub(lambda m: f"{m.group('key')}***", text)
    return _SQL.sub(lambda m: f"{m.group('key')}'***'", text)


def _walk(value: Any, fix: Callable[[str], str], secret_keys: bool) -> Any:
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if secret_keys and isinstance(key, str) and _SECRET_KEY.search(key) and item is not None:
                out[key] = "***"
            else:
                out[fix(key) if isinstance(key, str) else key] = _walk(item, fix, secret_keys)
        return out
    if isinstance(value, list):
        return [_walk(v, fix, secret_keys) for v in value]
    return value


def scrub_tree(value: Any) -> Any:
    """A JSON-like value with every string scrubbed and every password-like key's value masked."""
    return _walk(value, scrub, secret_keys=True)


def scrubbed_json(text: str) -> str:
    """A JSON document with every string scrubbed (returned as is when nothing could match)."""
    if not _MAYBE_SECRET.search(text):
        return text
    # Per string, never on the raw text: a pattern spanning two JSON strings would break the JSON.
    return json.dumps(scrub_tree(json.loads(text)), ensure_ascii=False, separators=(",", ":"))


def needs_cleaning(text: str) -> bool:
    """True when a JSON text may hold a control character, escaped or raw."""
    return _MAYBE_CONTROL.search(text) is not None


def clean_tree(value: Any) -> Any:
    """A JSON-like value with every string cleaned of control characters and escape sequences."""
    return _walk(value, clean, secret_keys=False)


def cleaned_json(text: str) -> Any:
    """A JSON document read from a recording, every string cleaned."""
    data = json.loads(text)
    return clean_tree(data) if needs_cleaning(text) else data

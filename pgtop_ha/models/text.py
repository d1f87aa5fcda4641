"""Untrusted text made safe for a terminal: no control characters, no escape sequences."""

from __future__ import annotations

import re

# ESC-introduced sequences (CSI, OSC, DCS, ...) first, so their parameters go with them; then
# every remaining C0/C1 control, DEL, and the bidi overrides that reorder what a reader sees.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC (to BEL or ST)
    r"|\x1b[ -/]*[0-~]?"  # other ESC sequences, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SAFE = re.compile(r"[ -~\u00a0-\u2029\u202f-\u2065\u206a-\uffff]*")


def clean(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` without control characters or escape sequences; tabs (and newlines) become spaces."""
    if _SAFE.fullmatch(text):
        return text  # the common case: nothing to strip, no copy
    text = _ESCAPES.sub("", text)
    if not keep_newlines:
        text = text.replace("\n", " ").replace("\r", " ")
    text = text.replace("\t", " ")
    return _CONTROLS.sub("", text)


def one_line(text: str) -> str:
    """The first line of ``text``, control characters stripped, bounded (an error's message)."""
    lines = clean(text, keep_newlines=True).splitlines()
    return (lines[0] if lines else "error")[:300]

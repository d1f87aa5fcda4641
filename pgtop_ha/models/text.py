"""Untrusted text made safe for a terminal: no control, format or separator characters, no escapes."""

from __future__ import annotations

import re
import unicodedata

# ESC-introduced sequences (CSI, OSC, DCS, ...) first, so their parameters go with them; then
# every remaining C0/C1 control, DEL, and the bidi overrides that reorder what a reader sees.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC (to BEL or ST)
    r"|\x1b[ -/]*[0-~]?"  # other ESC sequences, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Printable ASCII and the common scripts, less every range that holds a control (Cc), format (Cf:
# zero-width space and joiners, LRM/RLM/ALM, BOM, bidi marks, soft hyphen) or line/paragraph
# separator (Zl, Zp): text inside it needs no look. Anything else is checked one character at a time.
SAFE_TEXT = re.compile(
    r"[ -~\u00a0-\u00ac\u00ae-\u05ff\u0606-\u061b\u061d-\u06dc\u06de-\u070e\u0710-\u08e1"
    r"\u08e3-\u180d\u180f-\u200a\u2010-\u2027\u202f-\u205f\u2070-\ud7ff\uf900-\ufefe\uff00-\ufff8]*"
)
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _visible(text: str) -> str:
    """``text`` less every character that is invisible or reorders what is seen (see _HIDDEN)."""
    out = []
    for c in text:
        kind = unicodedata.category(c)
        if kind not in _HIDDEN:
            out.append(c)
        elif kind in ("Zl", "Zp"):
            out.append(" ")  # a line break in all but name: it still parts words
    return "".join(out)


def clean(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` without control characters or escape sequences; tabs (and newlines) become spaces."""
    if SAFE_TEXT.fullmatch(text):
        return text  # the common case: nothing to strip, no copy
    text = _ESCAPES.sub("", text)
    if not keep_newlines:
        text = text.replace("\n", " ").replace("\r", " ")
    text = text.replace("\t", " ")
    text = _CONTROLS.sub("", text)
    if keep_newlines:
        return "\n".join(_visible(line) for line in text.split("\n"))
    return _visible(text)


def fit(text: str, limit: int) -> str:
    """``text`` if it has ``limit`` characters or fewer, else its first ``limit - 1`` and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def removed(text: str, shown: int = 4) -> str:
    """The invisible or control characters in ``text``, as code points: "U+200B U+FEFF (+2)"."""
    gone = list(dict.fromkeys(c for c in text if unicodedata.category(c) in _HIDDEN))
    more = f" (+{len(gone) - shown})" if len(gone) > shown else ""
    return " ".join(f"U+{ord(c):04X}" for c in gone[:shown]) + more


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds characters clean() drops: a name that can pass for another."""
    return not SAFE_TEXT.fullmatch(text) and clean(text) != text


def one_line(text: str) -> str:
    """The first line of ``text``, control characters stripped, bounded (an error's message)."""
    lines = clean(text, keep_newlines=True).splitlines()
    return (lines[0] if lines else "error")[:300]


# Letters of other scripts that look like Latin ones (the common Cyrillic and Greek confusables).
_LOOKALIKE = str.maketrans(
    "аАвВеЕкКмМнНоОрРсСтТуУхХіІјЈѕЅԁԛԝαΑβΒεΕηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧζΖ",
    "aABBeEkKmMHHoOpPcCtTyYxXiIjJsSdqwaABBeEHHiIkKmMvNoOpPtTuYxXzZ",
)


def skeleton(name: str) -> str:
    """What a name looks like: compatibility forms folded, look-alike letters mapped to Latin ones."""
    return unicodedata.normalize("NFKC", name).translate(_LOOKALIKE).casefold()

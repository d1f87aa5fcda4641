"""Text for numbers and ages, rounded so noise below the shown precision never changes it.

Every helper takes whatever a server sent: a number no server can really send (wider than 64
bits, NaN, infinite, negative where that is impossible) is shown as ``INVALID``, never raised;
a server's string goes through ``shown`` (no control characters, bounded length).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from pgtop_ha.models.numbers import INT_LIMIT as _INT_LIMIT
from pgtop_ha.models.numbers import binary_size, finite
from pgtop_ha.models.text import clean, fit

__all__ = [
    "INVALID",
    "NAME_ROOM",
    "age",
    "bar",
    "count",
    "duration",
    "finite",
    "fit_name",
    "human_bytes",
    "lsn",
    "rate",
    "ratio",
    "shown",
    "sparkline",
    "yes_no",
]

INVALID = "?"
_LSN_LIMIT = 2**64  # pg_lsn is an unsigned 64-bit position
_SPARKS = "▁▂▃▄▅▆▇█"
MAX_TEXT = 256  # characters: a megabyte of member name must not become a column or a dialog


def shown(text: str, limit: int = MAX_TEXT) -> str:
    """Untrusted text as it may reach the terminal: one line, no control characters, bounded."""
    # Bound before cleaning too: the regexes should not walk a megabyte either.
    return fit(clean(text[: limit * 4]), limit)


_WHITE_RUN = re.compile(r"\s+")


def query_line(text: str, limit: int = MAX_TEXT) -> str:
    """A statement's text on one line, each run of white space one space (indented SQL), then shown."""
    return shown(_WHITE_RUN.sub(" ", text[: limit * 4]).strip(), limit)


# A member's name where 80 columns are shared (the overview, the stopwatch): what the overview's
# other columns leave when a node is slow ("REST+PG slow 12s") and a lag is in MiB.
NAME_ROOM = 11
# Where a member's name may be cut: a Kubernetes pod's "-0", a host's "-1a-01" or ".example.com".
_NAME_BREAKS = "-_."
_PARTS = re.compile(r"[^-_.]*[-_.]|[^-_.]+")
_PORT_TAIL = re.compile(r":\d+$")  # a name that is an address: host:port


def fit_name(name: str, names: Sequence[str], room: int) -> str:
    """``name`` in ``room`` characters, keeping what tells it from ``names``: '…1a-01', 'db1…'."""
    # Cut at the end, three names of one cluster ("pg-prod-eu-central-1a-01") all read
    # "pg-prod-eu-…": the shared part goes first, at a break (- _ .), and "…" says where.
    room = max(room, 2)
    key = (id(names), room)
    hit = _FITTED.get(key)
    if hit is None or hit[0] is not names:
        # Every cell of a column asks with the same names: fitted once for all of them.
        if len(_FITTED) >= 64:
            _FITTED.clear()
        hit = (names, _fit_names(tuple(names), room))
        _FITTED[key] = hit
    label = hit[1].get(name)
    return label if label is not None else _fit_names((*names, name), room)[name]


_FITTED: dict[tuple[int, int], tuple[Sequence[str], dict[str, str]]] = {}
# Past this many names the "which part differs" refinement (each label against every name) is
# skipped: a shared HAProxy lists tens of thousands of servers.
_REFINE_MAX = 64


@functools.lru_cache(maxsize=16)
def _fit_names(names: tuple[str, ...], room: int) -> dict[str, str]:
    clean = {raw: shown(raw) for raw in names}
    # The longest prefix a name shares with any other is the one it shares with a neighbour in
    # sorted order: n log n, not every name against every other.
    order = sorted(clean.values())
    first: dict[str, int] = {}
    for i, name in enumerate(order):
        before = _shared(name, order[i - 1]) if i else 0
        after = _shared(name, order[i + 1]) if i + 1 < len(order) else 0
        first[name] = max(first.get(name, 0), before, after)
    out = {}
    for raw, name in clean.items():
        label = _fit_one(name, first[name], room)
        # What a cut name still shows may be part of another name too ("…central-1a-01" of
        # eu-central and us-central): that one keeps each part that differs ("…eu…1a-01"),
        # if that fits; else the cut name is the best that does.
        if label != name and len(names) <= _REFINE_MAX:
            others = [clean[o] for o in names if o != raw]
            if any(label.strip("…") in o for o in others):
                parts = _parts(name, others)
                label = parts if len(parts) <= room else label
        out[raw] = label
    return out


def _parts(name: str, others: list[str]) -> str:
    """The parts of ``name`` (between breaks) some other name has not at that place, "…" between."""
    theirs = [_split(o) for o in others]
    text = ""
    for i, part in enumerate(_split(name)):
        if any(len(t) <= i or t[i] != part for t in theirs):
            text += part.lstrip(_NAME_BREAKS) if text.endswith("…") else part
        elif not text.endswith("…"):
            text = text.rstrip(_NAME_BREAKS) + "…"  # a break beside "…" says nothing
    return text


def _split(name: str) -> list[str]:
    # Each part with the break after it: "pg-prod-1" -> ["pg-", "prod-", "1"].
    return _PARTS.findall(name)


def _fit_one(name: str, first: int, room: int) -> str:
    if len(name) <= room:
        return name
    if _PORT_TAIL.search(name) and room > 4:
        # A member known only by its REST address ("127.0.0.1:27622"): the port tells it apart,
        # so the host gives way, from a break on ("…0.1:27622").
        tails = (name[i + 1 :] for i, c in enumerate(name) if c in ":" + _NAME_BREAKS)
        return "…" + next((tail for tail in tails if len(tail) < room), name[-(room - 1) :])
    # ``first``: the first character no other name has at that place; then the breaks around it.
    breaks = [0, *(i + 1 for i, c in enumerate(name) if c in _NAME_BREAKS), len(name) + 1]
    starts = [b for b in breaks if b <= first] or [0]
    ends = [b - 1 for b in breaks if b - 1 > first] or [len(name)]
    start, end = starts[-1], ends[0]

    def label(a: int, b: int) -> str:
        return ("…" if a > 0 else "") + name[a:b] + ("…" if b < len(name) else "")

    if len(label(start, end)) > room:
        # Not even the part between breaks fits: its start if the difference is there, else
        # from the difference on ("…1a" of "pg-prod-eu-central-1a-01" in 3).
        if first < room - 1:
            return name[: room - 1] + "…"
        at = start if first - start < room - 1 else first
        at = min(at, len(name) - (room - 1))
        return "…" + name[at : at + room - 1]
    # Keep the tail first (a pod's ordinal, a host's number), then as much before it as fits.
    for b in reversed(ends):
        if len(label(start, b)) <= room:
            end = b
            break
    for a in starts:
        if len(label(a, end)) <= room:
            return label(a, end)
    return label(start, end)


def _shared(a: str, b: str) -> int:
    # How many leading characters two names share (os.path.commonprefix is for paths: RUF071).
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _int64(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_INT_LIMIT < value < _INT_LIMIT


def ratio(part: float | None, whole: float | None) -> float | None:
    """``part / whole`` as a finite float; None when either is unknown or absurd, or ``whole`` is 0."""
    a, b = finite(part), finite(whole)
    if a is None or b is None or b == 0:
        return None
    return finite(a / b)


def count(value: int | None) -> str:
    """A count, pid or timeline: '-' when unknown, '?' when negative or wider than 64 bits."""
    if value is None:
        return "-"
    if not _int64(value) or value < 0:
        return INVALID
    return str(value)


def human_bytes(value: int | None, *, signed: bool = False) -> str:
    """Bytes with a binary unit; negative is '?' unless ``signed`` (e.g. a slot's safe size)."""
    if value is None:
        return "-"
    if not _int64(value) or (value < 0 and not signed):
        return INVALID
    return binary_size(value)


def age(seconds: float | None, floor: int = 0, *, exact: int = 10) -> str:
    """An age, coarser as it grows: 7s, 30s, 4m, 2h05m, 3d; '<10s' under a ``floor`` of 10.

    Each second is shown below ``exact`` seconds (60: 42s, where 40s by default).
    """
    if seconds is None:
        return "-"
    known = finite(seconds)
    if known is None or not 0 <= known < _INT_LIMIT:
        return INVALID
    s = int(known)
    if s < floor:
        return f"<{floor}s"
    if s < max(10, min(exact, 60)):
        return f"{s}s"
    if s < 60:
        return f"{s // 10 * 10}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d"


def age_step(seconds: float | None, floor: int = 0) -> float | None:
    """The start of the step age() shows ``seconds`` in (34 -> 30, 250 -> 240): one value per text."""
    # A cell built from the step shows and sorts the same for as long as its text stays, so a
    # row cached on its inputs is reused while an age ticks unseen.
    known = finite(seconds)
    if known is None or not 0 <= known < _INT_LIMIT:
        return seconds  # age() says '-' or '?' for these: the same value says it again
    s = int(known)
    if s < floor:
        return 0.0
    if s < 10 or s >= 2**53:  # past 2**53 s a float cannot hold a step's start exactly
        return float(s)
    if s < 60:
        return float(s // 10 * 10)
    if s < 86400:
        return float(s // 60 * 60)
    return float(s // 86400 * 86400)


def duration(seconds: float | None) -> str:
    """A lag in seconds: 0, 12ms, 1.4s, 42s, 3m."""
    if seconds is None:
        return "-"
    known = finite(seconds)
    if known is None or known < 0:
        return INVALID
    if known < 0.001:
        return "0"
    if known < 1:
        return f"{int(known * 1000)}ms"
    if known < 10:
        return f"{known:.1f}s"
    if known < 60:
        return f"{int(known)}s"
    return age(known)


def rate(bytes_per_s: float | None) -> str:
    """A byte rate: '-', '0', '1.2 MiB/s'."""
    if bytes_per_s is None:
        return "-"
    known = finite(bytes_per_s)
    if known is None or known < 0 or known >= _INT_LIMIT:
        return INVALID
    if known < 1:
        return "0"
    return human_bytes(int(known)) + "/s"


def per_second(value: float | None) -> str:
    """A count per second: '-', '0', '7.5/s', '120/s', '12k/s'."""
    if value is None:
        return "-"
    known = finite(value)
    if known is None or known < 0 or known >= _INT_LIMIT:
        return INVALID
    if known < 0.05:
        return "0"
    if known < 10:
        return f"{known:.1f}/s"
    if known < 10_000:
        return f"{known:.0f}/s"
    return f"{known / 1000:.0f}k/s"


def lsn(value: int | None) -> str:
    """An LSN the way PostgreSQL prints it (X/X)."""
    if value is None:
        return "-"
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _LSN_LIMIT:
        return INVALID
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def yes_no(value: bool | None, yes: str = "yes", no: str = "-") -> str:
    """A flag as a word; unknown is '?'."""
    if value is None:
        return "?"
    return yes if value else no


def sparkline(values: Sequence[float | None], width: int = 10) -> str:
    """The last ``width`` values as block characters scaled to their maximum; gaps are spaces."""
    tail = [finite(v) for v in list(values)[-width:]]  # unknown or absurd values are gaps
    known = [v for v in tail if v is not None]
    top = max(known, default=0.0)
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
        elif top <= 0 or v <= 0:
            out.append(_SPARKS[0])
        else:
            out.append(_SPARKS[min(len(_SPARKS) - 1, int(v / top * (len(_SPARKS) - 1)))])
    return "".join(out)


def bar(fraction: float | None, width: int = 12) -> str:
    """A progress bar of ``width`` cells, e.g. '██████░░░░░░'."""
    known = finite(fraction)
    if known is None:
        return "·" * width
    filled = int(max(0.0, min(1.0, known)) * width)  # clamp first: 1e308 * width is inf
    return "█" * filled + "░" * (width - filled)

"""Lenient readers of untrusted JSON values: the wrong type becomes None, never an exception."""

from __future__ import annotations

from typing import Any


def as_int(value: Any) -> int | None:
    """An int (bools and other types give None; integral floats and digit strings count)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def as_float(value: Any) -> float | None:
    """A finite float from an int or float, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    result = float(value)
    return result if result == result and abs(result) != float("inf") else None


def as_str(value: Any) -> str | None:
    """A string, else None."""
    return value if isinstance(value, str) else None


def as_bool(value: Any) -> bool | None:
    """A bool, else None."""
    return value if isinstance(value, bool) else None


def as_dict(value: Any) -> dict[str, Any] | None:
    """A dict with string keys, else None."""
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return value
    return None

"""A value made once per key while it is asked of the same object (compared by identity, not ==)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar, cast

T = TypeVar("T")


def kept(store: dict[Hashable, tuple[object, object]], key: Hashable, of: object, make: Callable[[], T]) -> T:
    """``make()``'s value for ``key``, made again only when asked of another object than ``of``."""
    # Identity: pydantic's == would compare whole snapshots. The object is stored beside its value,
    # so it stays alive and no other object can take its id.
    found = store.get(key)
    if found is not None and found[0] is of:
        return cast(T, found[1])
    value = make()
    store[key] = (of, value)
    return value

"""Numbers from untrusted sources: the one rule for what counts as a usable number."""

from __future__ import annotations

import math

INT_LIMIT = 2**63  # what PostgreSQL's bigint holds; Patroni and HAProxy send nothing larger


def finite(value: object) -> float | None:
    """``value`` as a finite float; None for None, non-numbers, bools, NaN, ±inf and huge ints."""
    if type(value) is float:  # the common case first: every number cell of every pane comes here
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        result = float(value)
    except OverflowError:  # an int beyond float's range
        return None
    return result if math.isfinite(result) else None

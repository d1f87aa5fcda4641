"""The one error a parser of the read path raises on input it cannot use."""

from __future__ import annotations


class ParseError(ValueError):
    """A source answered something that cannot be parsed; the message names the source."""

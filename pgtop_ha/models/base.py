"""The base every pgtop-ha model derives from."""

from __future__ import annotations

import types
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from pgtop_ha.models.text import SAFE_TEXT, clean, removed


def _text_field(annotation: Any) -> bool:
    """Whether a field holds one text (str or str | None)."""
    args = annotation.__args__ if isinstance(annotation, types.UnionType) else (annotation,)
    return str in args


class Frozen(BaseModel):
    """An immutable model that rejects unknown fields; its texts are cleaned as it is made."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    _texts: ClassVar[tuple[str, ...]] = ()
    # The field that names the subject: when cleaning changed it, ``hidden`` lists what it held.
    _identity: ClassVar[str | None] = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Find the text fields once per class."""
        super().__pydantic_init_subclass__(**kwargs)
        cls._texts = tuple(n for n, info in cls.model_fields.items() if _text_field(info.annotation))

    def model_post_init(self, context: Any, /) -> None:
        """One sanitiser, at parse: the logic, the screen and the JSON all see the cleaned text."""
        values = self.__dict__
        for name in self._texts:
            value = values[name]
            if type(value) is str and not SAFE_TEXT.fullmatch(value):
                # A name is one line; other texts (a query) keep their line breaks.
                values[name] = clean(value, keep_newlines=name != self._identity)
                if name == self._identity and values[name] != value:
                    values["hidden"] = removed(value)

"""The base every pgtop-ha model derives from."""

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """An immutable model that rejects unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

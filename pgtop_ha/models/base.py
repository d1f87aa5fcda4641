"""The base every pgtop-ha model derives from."""

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """An immutable model that rejects unknown fields."""

    # defer_build: a model's validator is built at its first use, not at import. A console uses
    # about a third of the models in its first cycle (no pooler, fleet or lock models on a
    # plain cluster); building all of them at launch was ~0.1 s of the first frame (issue 10).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

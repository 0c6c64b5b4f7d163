"""The node models' names (kept apart from the models, so that checking a name imports no
torch)."""

from __future__ import annotations

from dpgl.errors import unknown_name

MODEL_NAMES = ("mlp", "gcn", "sage", "gat")
_ALIASES = {"graphsage": "sage"}


def canonical_model_name(name: str) -> str:
    """The registered model name for ``name`` (case-insensitive; ``graphsage`` = ``sage``)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in MODEL_NAMES:
        raise unknown_name("model", name, [*MODEL_NAMES, *_ALIASES])
    return key


__all__ = ["MODEL_NAMES", "canonical_model_name"]

"""The node models' names and their weight initialisations' (kept apart from the models, so
that checking a name imports no torch)."""

from __future__ import annotations

from typing import Literal, get_args

from dpgl.errors import unknown_name

MODEL_NAMES = ("mlp", "gcn", "sage", "gat")
_ALIASES = {"graphsage": "sage"}


def canonical_model_name(name: str) -> str:
    """The registered model name for ``name`` (case-insensitive; ``graphsage`` = ``sage``)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in MODEL_NAMES:
        raise unknown_name("model", name, [*MODEL_NAMES, *_ALIASES])
    return key


#: where GCN and GAT layers draw their weight matrices (:mod:`dpgl.nn.init`)
WeightInit = Literal["torch", "glorot"]
WEIGHT_INITS: tuple[str, ...] = get_args(WeightInit)
WEIGHT_INIT_HELP = ("GCN and GAT weight matrices: torch (nn.Linear's default U(+-1/sqrt(fan_in)); "
                    "every run stored before this option) or glorot (PyG's GCNConv and GATConv, "
                    "the Blink authors' layers); GraphSAGE and MLP: torch's default")


def check_weight_init(name: str) -> str:
    """``name`` if it is a known ``weight_init``; a one-line error otherwise."""
    if name not in WEIGHT_INITS:
        raise unknown_name("weight_init", name, list(WEIGHT_INITS))
    return name


__all__ = ["MODEL_NAMES", "WEIGHT_INITS", "WEIGHT_INIT_HELP", "WeightInit", "canonical_model_name",
           "check_weight_init"]

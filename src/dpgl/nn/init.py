"""Parameter initialisation of the node models' GCN and GAT layers, and the walk with which
the node and graph trainers re-initialise a model before training.

``weight_init`` names where a GCN or GAT layer's weight matrix ``W`` is drawn from:

* ``"glorot"``: Glorot & Bengio (AISTATS 2010, Eq. 16), ``U(-a, a)`` with
  ``a = sqrt(6 / (fan_in + fan_out))``, as PyG's ``GCNConv`` and ``GATConv`` draw it (and so
  the Blink authors' models, Kipf & Welling's GCN and Velickovic et al.'s GAT).
  A layer's parameters equal PyG's layer's after ``reset_parameters`` under the same torch
  seed (tests/nn/test_init.py).
* ``"torch"``: PyTorch's ``nn.Linear`` default, ``U(-1 / sqrt(fan_in), 1 / sqrt(fan_in))``
  (Kaiming-uniform with ``a = sqrt(5)``): 2.4x narrower than Glorot on CiteSeer's first
  layer (fan_in 3,703, fan_out 16), 2.1x on a 16 -> 6 second layer. Every GCN and GAT run
  stored before this option existed drew its weights this way (the trainers re-initialised
  every submodule, the layer's ``nn.Linear`` after the layer's own Glorot draw), so it is the
  default: their keys and numbers stay valid, bit for bit.

GraphSAGE and the MLP draw PyTorch's default under both names, as PyG's ``SAGEConv`` and
``Linear`` do. GAT's attention vectors are Glorot and its biases zero in both. LPGNN's model
(:class:`dpgl.nn.kprop.KPropGNN`) draws PyTorch's default under ``"torch"``, as the KProp
layers of the LPGNN authors' code for the arXiv version's tables do (``KPropConv.fc``, a
``torch.nn.Linear``, in sisaman/LPGNN's ``models.py`` until April 2021); ``"glorot"`` acts on
its GCN layer only (their published code's GCN backbone is PyG's ``GCNConv``).
"""

from __future__ import annotations

from torch import nn


def finish_weight(lin: nn.Linear, weight_init: str) -> None:
    """The last step of a GCN or GAT layer's ``reset_parameters``, which has drawn
    ``lin.weight`` by Glorot before its other parameters: with ``"torch"``, redraw it by
    ``nn.Linear``'s default. Drawing Glorot first under both names keeps the random stream of
    the stored runs (the layer's own draws, then the trainers' reset of its ``nn.Linear``), so
    their seeds keep their numbers."""
    if weight_init == "torch":
        lin.reset_parameters()


def reset_parameters(model: nn.Module) -> None:
    """Re-initialise every submodule of ``model`` (not ``model`` itself) that has
    ``reset_parameters``, in ``model.modules()`` order. A module whose ``owns_init`` is true
    initialises its children itself: they are not reset again after it (which would redraw a
    GCN layer's Glorot weight with ``nn.Linear``'s default)."""
    skip: set[int] = set()
    for module in model.modules():
        if module is model or id(module) in skip:
            continue
        reset = getattr(module, "reset_parameters", None)
        if callable(reset):
            reset()
        if getattr(module, "owns_init", False):
            skip.update(id(m) for m in module.modules() if m is not module)

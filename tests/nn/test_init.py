"""The GCN and GAT layers' weight initialisation (dpgl.nn.init): ``glorot`` is PyG's, and
survives the trainers' re-initialisation walk; ``torch`` keeps the random stream of the runs
stored before the option existed."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn
from torch_geometric.nn import GATConv, GCNConv

from dpgl.errors import ConfigError
from dpgl.methods.params import NodeParams
from dpgl.nn.init import reset_parameters
from dpgl.nn.models import ModelConfig, build_node_model

DIMS = (300, 16, 6)


def _model(kind: str, weight_init: str) -> nn.Module:
    return build_node_model(kind, DIMS[0], DIMS[2], ModelConfig(hidden=DIMS[1],
                                                                weight_init=weight_init))


def _walked(kind: str, weight_init: str, seed: int) -> nn.Module:
    """The model as the node trainer initialises it (its walk under the run's seed)."""
    model = _model(kind, weight_init)
    torch.manual_seed(seed)
    reset_parameters(model)
    return model


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize(("kind", "pyg_layer"), [("gcn", GCNConv), ("gat", GATConv)])
def test_glorot_is_pygs_layer_after_the_trainers_walk(kind: str, pyg_layer: type,
                                                       seed: int) -> None:
    model = _walked(kind, "glorot", seed)
    pyg = [pyg_layer(a, b) for a, b in itertools.pairwise(DIMS)]
    torch.manual_seed(seed)
    for conv in pyg:
        conv.reset_parameters()
    for ours, theirs in zip(model.layers, pyg, strict=True):
        torch.testing.assert_close(ours.lin.weight, theirs.lin.weight, rtol=1e-6, atol=0)
        for name in ("att_src", "att_dst") if kind == "gat" else ():
            torch.testing.assert_close(getattr(ours, name), getattr(theirs, name).view(-1),
                                       rtol=1e-6, atol=0)
        assert torch.equal(ours.bias, theirs.bias)
    # Glorot's bound on the first layer is 2.4x nn.Linear's 1 / sqrt(fan_in)
    assert float(model.layers[0].lin.weight.detach().abs().max()) > 2 / DIMS[0] ** 0.5


@pytest.mark.parametrize("kind", ["gcn", "gat"])
def test_torch_init_keeps_the_stored_runs_random_stream(kind: str) -> None:
    """Before ``weight_init``, a layer drew its Glorot weight (and GAT its attention vectors),
    then the trainer's walk reset the layer's ``nn.Linear`` again: the default replays that
    sequence of draws exactly, so a stored run's seed gives its numbers."""
    model = _walked(kind, "torch", 3)
    old = _model(kind, "torch")
    torch.manual_seed(3)
    for layer in old.layers:
        nn.init.xavier_uniform_(layer.lin.weight)
        if kind == "gat":
            bound = (6.0 / (1 + layer.att_src.numel())) ** 0.5
            nn.init.uniform_(layer.att_src, -bound, bound)
            nn.init.uniform_(layer.att_dst, -bound, bound)
        nn.Linear.reset_parameters(layer.lin)
    for name, value in old.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name
    first = model.layers[0].lin.weight
    assert float(first.detach().abs().max()) <= 1 / DIMS[0] ** 0.5


def test_the_walk_resets_every_other_module_as_before() -> None:
    """Modules that do not own their children's initialisation (GraphSAGE, batch norm, the
    MLP) are reset one by one, children included, as the trainers always did (a GraphSAGE
    layer resets its two Linears itself, and the walk resets them again)."""
    model = build_node_model("sage", *DIMS[::2], ModelConfig(hidden=16, batch_norm=True))
    calls: list[str] = []
    for name, module in model.named_modules():
        if hasattr(module, "reset_parameters") and name:
            original = module.reset_parameters
            module.reset_parameters = (  # type: ignore[method-assign]
                lambda original=original, name=name: (calls.append(name), original()))
    reset_parameters(model)
    twice = ["layers.{i}.lin_l", "layers.{i}.lin_r"]
    assert calls == [name.format(i=i) for i in (0, 1)
                     for name in ["layers.{i}", *twice, *twice]] + ["norms.0"]


def test_unknown_weight_init_is_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match="unknown weight_init 'xavier'"):
        ModelConfig(weight_init="xavier")
    with pytest.raises(ValueError, match="weight_init"):
        NodeParams(weight_init="xavier")
    assert NodeParams(weight_init="glorot").architecture().weight_init == "glorot"
    assert NodeParams().architecture().weight_init == "torch"


def test_lpgnn_model_draws_torchs_default_as_the_authors_kpropconv() -> None:
    """The authors' KProp layers (sisaman/LPGNN ``models.py`` until April 2021,
    ``KPropConv.fc``) are ``torch.nn.Linear``: by default, after the trainer's walk, both of
    our KPropGNN's weight matrices lie within nn.Linear's bound 1 / sqrt(fan_in), not Glorot's
    (2.4x wider on the first, 2.1x on the second layer here); ``glorot`` is PyG's ``GCNConv``
    on the GCN layer."""
    from dpgl.nn.kprop import KPropGNN

    def walked(**kw: str) -> KPropGNN:
        model = KPropGNN(DIMS[0], DIMS[2], hidden=DIMS[1], **kw)
        torch.manual_seed(0)
        reset_parameters(model)
        return model

    model = walked()
    for weight, fan_in in ((model.lin1.weight, DIMS[0]), (model.conv2.lin.weight, DIMS[1])):
        largest = float(weight.detach().abs().max())
        assert largest <= 1 / fan_in ** 0.5
        assert largest > 0.9 / fan_in ** 0.5  # drawn, not left at zero or shrunk
    glorot = walked(weight_init="glorot")
    torch.testing.assert_close(glorot.lin1.weight, model.lin1.weight, rtol=0, atol=0)
    pyg, first = GCNConv(DIMS[1], DIMS[2]), nn.Linear(DIMS[0], DIMS[1])
    torch.manual_seed(0)
    first.reset_parameters()  # the first layer's draw comes first
    pyg.reset_parameters()
    torch.testing.assert_close(glorot.conv2.lin.weight, pyg.lin.weight, rtol=1e-6, atol=0)

"""Issue #12, finding 6: a parameter model builds the configurations it describes (one place
that maps parameters to trainer settings); every field is carried over."""

from __future__ import annotations

from dpgl.methods.params import GraphParams, NodeDPParams, NodeParams
from dpgl.methods.solitude import SolitudeLinkParams


def test_node_params_build_architecture_and_train_config() -> None:
    p = NodeParams(hidden=7, num_layers=3, dropout=0.25, input_dropout=0.1, activation="elu",
                   batch_norm=True, lr=0.02, weight_decay=0.003, epochs=11, patience=4)
    a, t = p.architecture(), p.train_config()
    assert (a.hidden, a.num_layers, a.dropout, a.input_dropout, a.activation, a.batch_norm) \
        == (7, 3, 0.25, 0.1, "elu", True)
    assert (t.lr, t.weight_decay, t.epochs, t.patience) == (0.02, 0.003, 11, 4)


def test_dpsgd_config_carries_every_field() -> None:
    p = NodeDPParams(lr=0.03, epochs=9, batch_size=17, clip=0.7, weight_decay=0.01)
    c = p.dpsgd_config(public_size=123, noise_multiplier=1.5)
    assert (c.lr, c.epochs, c.batch_size, c.clip, c.weight_decay) == (0.03, 9, 17, 0.7, 0.01)
    assert (c.public_size, c.noise_multiplier, c.private) == (123, 1.5, True)
    probe = p.dpsgd_config(public_size=50, epochs=2)
    assert probe.epochs == 2 and probe.noise_multiplier is None and not probe.private
    assert probe.sampling_rate(50) == 17 / 50


def test_graph_and_solitude_configs() -> None:
    g = GraphParams(lr=0.005, weight_decay=0.1, epochs=3, patience=2, batch_size=8, lr_step=5,
                    lr_gamma=0.9).train_config()
    assert (g.lr, g.weight_decay, g.epochs, g.patience, g.batch_size, g.lr_step, g.lr_gamma) \
        == (0.005, 0.1, 3, 2, 8, 5, 0.9)
    s = SolitudeLinkParams(lr=0.02, weight_decay=0.0, epochs=4, patience=3, adj_lr=0.5,
                           lambda1=2.0, lambda2=3.0, gnn_weight=0.4, inner_steps=2
                           ).solitude_config(structure_learning=False)
    assert (s.lr, s.weight_decay, s.epochs, s.patience, s.structure_learning, s.adj_lr,
            s.lambda1, s.lambda2, s.gnn_weight, s.inner_steps) \
        == (0.02, 0.0, 4, 3, False, 0.5, 2.0, 3.0, 0.4, 2)

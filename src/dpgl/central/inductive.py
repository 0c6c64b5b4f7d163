"""The inductive setting shared by the node-level DP methods (DPAR Sec. 5.1): the nodes are
split into a training graph and a test graph with the edges between them removed; training
(and its privacy) concerns the training graph only; the test graph is seen at inference.
Half of the test graph's nodes (random) serve as validation nodes for hyper-parameter
selection, the other half are reported as test accuracy."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data

from dpgl.errors import ConfigError
from dpgl.graph.splits import inductive_split
from dpgl.privacy import current_accountant

__all__ = ["InductiveData", "make_inductive", "node_subsample",
           "poisson_node_subsample"]


@dataclass
class InductiveData:
    train: Data
    test: Data
    val_idx: torch.Tensor      # indices into the test graph
    test_idx: torch.Tensor     # indices into the test graph
    num_classes: int


def make_inductive(data: Data, train_ratio: float, rng: np.random.Generator,
                   val_fraction: float = 0.5) -> InductiveData:
    """Random inductive split (``dpgl.graph.splits.inductive_split``) + val/test halves."""
    if not 0 < val_fraction < 1:
        raise ConfigError(f"val_fraction must be in (0, 1), got {val_fraction}")
    train, test, _, _ = inductive_split(data, train_ratio, rng=rng)
    m = int(test.num_nodes)
    perm = rng.permutation(m)
    cut = round(val_fraction * m)
    val_idx = torch.from_numpy(np.sort(perm[:cut]))
    test_idx = torch.from_numpy(np.sort(perm[cut:]))
    return InductiveData(train, test, val_idx, test_idx, int(data.y.max()) + 1)


def poisson_node_subsample(graph: Data, rate: float, rng: np.random.Generator
                           ) -> tuple[Data, np.ndarray]:
    """Induced subgraph on a Poisson sample of the nodes (each kept independently with prob
    ``rate``; DPAR's node subsampling with q', done Poisson so amplification applies), and the
    ids of the kept nodes in ``graph`` (the public universe; the subgraph's node i is
    ``ids[i]``)."""
    if not 0 < rate <= 1:
        raise ConfigError(f"subsample rate must be in (0, 1], got {rate}")
    n = int(graph.num_nodes)
    if rate == 1:
        return graph, np.arange(n)
    keep = np.flatnonzero(rng.random(n) < rate)
    if keep.size < 2:
        raise ConfigError(f"node subsampling at rate {rate} kept {keep.size} node(s)")
    return graph.subgraph(torch.from_numpy(keep)), keep


@contextlib.contextmanager
def node_subsample(graph: Data, rate: float, rng: np.random.Generator, *, name: str,
                   inner_delta: float | None = None) -> Iterator[tuple[Data, np.ndarray]]:
    """Draw a Poisson node subsample (:func:`poisson_node_subsample`) and, when ``rate`` < 1,
    record that everything charged inside ran on it: the sampler declares the amplification
    by subsampling (:meth:`dpgl.privacy.Accountant.subsampled`; ``inner_delta`` is the target
    delta of the inner Gaussian/RDP parts)."""
    sample = poisson_node_subsample(graph, rate, rng)
    acc = current_accountant()
    if acc is None or rate >= 1:
        yield sample
        return
    with acc.subsampled(name, rate, delta=inner_delta,
                        description="node-level DP on the induced subgraph of a Poisson node "
                                    "sample"):
        yield sample

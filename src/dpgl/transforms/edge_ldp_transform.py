"""Shared PyG transform base for the edge-LDP pipelines (users randomize, server estimates).

A transform maps a :class:`torch_geometric.data.Data` holding the true undirected graph to a
*new* ``Data`` whose ``edge_index`` (and ``edge_weight`` when the estimator produces
weights) is the server's estimate (an estimate dense by nature: ``dense_adjacency``, float32
[n, n], and no ``edge_index``); the input object is never mutated (PyG's
``BaseTransform.__call__`` passes a shallow copy to :meth:`forward`). Everything else on the
``Data`` (features, labels, masks) is shared with the input, as the server sees it.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl import progress
from dpgl.errors import GraphError
from dpgl.mechanisms.neighbor_list import check_num_nodes, undirected_pairs
from dpgl.privacy import Guarantee
from dpgl.rng import SeedLike, make_rng


class EdgeLDPTransform(BaseTransform):
    """Base class: validates the input graph, runs :meth:`estimate`, returns a new Data.

    ``seed`` is an int, a ``numpy.random.Generator`` or ``None`` with ``secure=True``
    (see :func:`dpgl.rng.make_rng`); the generator is created once, so repeated calls draw
    fresh randomness in a reproducible sequence. ``secure=True`` is deployment mode: OS
    entropy, and randomizers that draw real-valued Laplace noise on the device draw it with
    Mironov's snapping mechanism (docs/secure-mode.md).
    """

    def __init__(self, seed: SeedLike = None, *, secure: bool = False) -> None:
        self.rng = make_rng(seed, secure=secure)
        self.last_info: dict[str, Any] = {}

    #: the client-side randomizer every (private) user runs; a subclass sets it
    mechanism: Any

    @property
    def guarantee(self) -> Guarantee:
        """The edge-LDP guarantee of what every (private) user sends: its randomizer's."""
        return self.mechanism.guarantee

    @abstractmethod
    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Simulate the users' reports for the graph with pairs (u, v), u < v, and return
        the server's ``(edge_index, edge_weight | None)``, or ``(None, adjacency)`` for an
        estimate dense by nature (Blink-Soft beyond its pair limit: float32 [n, n])."""

    def forward(self, data: Data) -> Data:
        if getattr(data, "edge_index", None) is None:
            raise GraphError("the Data object has no edge_index")
        n = data.num_nodes
        if n is None:
            raise GraphError("the Data object does not know its number of nodes")
        n = check_num_nodes(int(n))
        u, v = undirected_pairs(data.edge_index, n)
        with progress.step(f"{n:,} users randomize, the server estimates ({self!r})"):
            edge_index, edge_weight = self.estimate(u, v, n, self.rng)
        if edge_index is None:  # dense: the estimate is a matrix, not an edge list
            del data.edge_index
            data.dense_adjacency = edge_weight
            edge_weight = None
        else:
            data.edge_index = edge_index
        if edge_weight is not None:
            data.edge_weight = edge_weight
        elif "edge_weight" in data:
            del data.edge_weight
        if "edge_attr" in data:
            del data.edge_attr  # attributes of true edges do not belong to estimated edges
        data.num_nodes = n
        return data

    def _repr_args(self) -> dict[str, Any]:
        """Constructor arguments shown by ``repr`` (PyG style): the client randomizer's."""
        return dict(self.mechanism._repr_args())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                         for k, v in self._repr_args().items())
        return f"{self.__class__.__name__}({args})"

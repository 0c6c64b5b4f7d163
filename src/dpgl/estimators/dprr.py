"""DPRR server side (Hidano & Murakami 2022): the sampled noisy graph is used as it is.

DPRR's edge sampling already makes each user's reported degree ~ her true degree, so the
server needs no denoising: it takes the directed reports as the graph (``"directed"``) or
symmetrizes them (``"or"`` / ``"and"``, :mod:`dpgl.graph.symmetrize`). RR's server
(:class:`dpgl.transforms.RRTransform`) is the same: reports used as they are.
Directed reports are oriented either way (``direction``): each user aggregates from her
sampled list (dpgl's default) or a node aggregates from the users who reported it (the
Blink authors' DPRR baseline, github.com/zhxchd/Blink_GNN ``src/dprr/server.py``).
"""

from __future__ import annotations

import torch

from dpgl.errors import unknown_name
from dpgl.graph.symmetrize import POLICIES, symmetrize_pairs
from dpgl.mechanisms.neighbor_list import edge_index_from_pairs
from dpgl.mechanisms.rr import DirectedReports, check_direction

__all__ = ["dprr_graph"]


def dprr_graph(reports: DirectedReports, symmetrize: str = "directed",
               direction: str = "user") -> tuple[torch.Tensor, torch.Tensor | None]:
    """The server's graph from DPRR reports: ``(edge_index, None)``; directed reports are
    oriented by ``direction`` (:meth:`DirectedReports.edge_index`: ``"user"``, each user
    aggregates from her sampled list; ``"reported"``, Blink's code)."""
    if symmetrize not in POLICIES:
        raise unknown_name("symmetrization policy", symmetrize, POLICIES)
    check_direction(direction, symmetrize)
    if symmetrize == "directed":
        return reports.edge_index(direction), None
    a, b = symmetrize_pairs(reports.user, reports.neighbor, reports.num_nodes, symmetrize)
    return edge_index_from_pairs(a, b)

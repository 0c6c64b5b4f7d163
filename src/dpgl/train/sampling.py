"""Uniform neighbour sampling for mini-batch node classification (GraphSAGE, Hamilton, Ying &
Leskovec 2017, Alg. 2), as a PyG :class:`~torch_geometric.sampler.BaseSampler`.

Why our own sampler: PyG 2.8's ``NeighborLoader`` / ``NeighborSampler`` need a compiled
extension, and fail here with ``ImportError: 'NeighborSampler' requires either 'pyg-lib' or
'torch-sparse'``: pyg-lib has no wheel for this platform on the registry and torch-sparse
only builds from source (5-9 minutes), and dpgl needs no compiled PyG extension (README).
So :class:`UniformNeighbourSampler` implements ``sample_from_nodes`` in torch and
:class:`torch_geometric.loader.NodeLoader` drives it: the loader batches the seed nodes,
calls the sampler and joins the node and edge attributes of its output (``filter_data``:
node attributes by ``SamplerOutput.node``, edge attributes such as ``edge_weight`` by
``SamplerOutput.edge``), so an estimator's edge weights follow the sampled edges.

Sampling. The in-edges of every node (``edge_index[0]`` the source j, ``edge_index[1]`` the
target i, the PyG convention of :mod:`dpgl.graph.propagation`) are kept once in CSR order by
target. Hop ``h`` takes the nodes first reached at hop ``h - 1`` (hop 0: the seeds) and draws
``fanout[h]`` of each node's in-edges uniformly *without replacement* (all of them when the
node has at most that many, or when ``fanout[h]`` is -1); a node is expanded once, at the hop
where it is first reached. Edges are drawn uniformly whatever their weight (the weights enter
the model, not the draw). One draw is vectorized over all the hop's edges: every candidate
edge gets a uniform key from the sampler's ``torch.Generator`` and each node keeps its
``fanout`` smallest keys (a uniform k-subset), with no Python loop over nodes. Same seed and
same sequence of calls, same samples.

Output (the :class:`~torch_geometric.sampler.SamplerOutput` contract that ``NodeLoader``
reads): ``node`` the sampled node ids, the seeds first in their given order, then each hop's
new nodes in increasing id; ``row`` / ``col`` the local source / target of every sampled
edge; ``edge`` its id in the graph's ``edge_index`` (so ``edge_permutation`` is None);
``num_sampled_nodes`` / ``num_sampled_edges`` per hop; ``metadata`` = (input ids, seed time),
as PyG's samplers set it. The mini-batch's seed outputs are its first ``batch_size`` rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch_geometric.sampler import BaseSampler, NodeSamplerInput, SamplerOutput

from dpgl.errors import ConfigError
from dpgl.graph.propagation import check_edge_index
from dpgl.train.fanout import ALL, check_fanout

__all__ = ["ALL", "UniformNeighbourSampler", "check_fanout"]


class UniformNeighbourSampler(BaseSampler):
    """Uniform neighbour sampling without replacement, ``fanout[h]`` in-edges per node at hop
    ``h`` (-1: all). The CSR by target is built once; ``generator`` (or ``seed``) makes the
    draws deterministic."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, fanout: Sequence[int], *,
                 generator: torch.Generator | None = None, seed: int | None = None) -> None:
        check_edge_index(edge_index, num_nodes)
        self.num_nodes = int(num_nodes)
        self.fanout = check_fanout(fanout)
        if generator is None:
            generator = torch.Generator()
            generator.manual_seed(0 if seed is None else int(seed))
        self.generator = generator
        dst = edge_index[1].detach().cpu().long()
        order = torch.sort(dst, stable=True).indices
        #: in-edges of node i are ``edge_id[indptr[i]:indptr[i + 1]]`` (sources ``src[...]``)
        self.edge_id = order
        self.src = edge_index[0].detach().cpu().long()[order]
        counts = torch.bincount(dst, minlength=self.num_nodes)
        self.indptr = torch.zeros(self.num_nodes + 1, dtype=torch.long)
        torch.cumsum(counts, 0, out=self.indptr[1:])

    @property
    def num_edges(self) -> int:
        return int(self.src.numel())

    def _hop(self, targets: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(positions in the CSR, targets) of the sampled in-edges of ``targets``: all of
        a target's in-edges when it has at most ``k`` (or ``k`` is -1), else a uniform
        ``k``-subset of them."""
        start = self.indptr[targets]
        deg = self.indptr[targets + 1] - start
        whole = deg <= k if k != ALL else torch.ones_like(deg, dtype=torch.bool)
        # targets taking every in-edge: their runs of the CSR
        t_all, s_all, d_all = targets[whole], start[whole], deg[whole]
        seg = torch.repeat_interleave(torch.arange(t_all.numel()), d_all)
        first = torch.cumsum(d_all, 0) - d_all
        pos = s_all[seg] + (torch.arange(seg.numel()) - first[seg])
        dst = t_all[seg]
        if bool(whole.all()):
            return pos, dst
        t_k, s_k, d_k = targets[~whole], start[~whole], deg[~whole]
        chosen = _floyd_subsets(d_k, k, self.generator)
        return (torch.cat([pos, (s_k[:, None] + chosen).reshape(-1)]),
                torch.cat([dst, t_k.repeat_interleave(k)]))

    def sample_nodes(self, seeds: torch.Tensor) -> SamplerOutput:
        """The sampled subgraph around ``seeds`` (global ids, distinct)."""
        seeds = seeds.detach().cpu().long().reshape(-1)
        if seeds.numel() and (int(seeds.min()) < 0 or int(seeds.max()) >= self.num_nodes):
            raise ConfigError(f"seed node ids outside [0, {self.num_nodes - 1}]")
        local = torch.full((self.num_nodes,), -1, dtype=torch.long)
        local[seeds] = torch.arange(seeds.numel())
        if int((local >= 0).sum()) != seeds.numel():
            raise ConfigError("the seed nodes of a mini-batch must be distinct")
        nodes, rows, cols, eids = [seeds], [], [], []
        num_nodes, num_edges = [int(seeds.numel())], []
        frontier, count = seeds, int(seeds.numel())
        for k in self.fanout:
            pos, dst = self._hop(frontier, k)
            src = self.src[pos]
            new = torch.unique(src[local[src] < 0])  # sorted ids
            local[new] = torch.arange(count, count + new.numel())
            count += int(new.numel())
            nodes.append(new)
            rows.append(local[src])
            cols.append(local[dst])
            eids.append(self.edge_id[pos])
            num_nodes.append(int(new.numel()))
            num_edges.append(int(pos.numel()))
            frontier = new
        empty = torch.zeros(0, dtype=torch.long)
        return SamplerOutput(
            node=torch.cat(nodes),
            row=torch.cat(rows) if rows else empty,
            col=torch.cat(cols) if cols else empty,
            edge=torch.cat(eids) if eids else empty,
            batch=None,
            num_sampled_nodes=num_nodes,
            num_sampled_edges=num_edges,
        )

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> SamplerOutput:
        """PyG's entry point (:class:`~torch_geometric.loader.NodeLoader` calls it per batch)."""
        if index.time is not None:
            raise ConfigError("temporal neighbour sampling is not supported")
        out = self.sample_nodes(index.node)
        out.metadata = (index.input_id, index.time)
        return out

    def sample_from_edges(self, index: Any, neg_sampling: Any = None) -> SamplerOutput:
        raise NotImplementedError("UniformNeighbourSampler samples around nodes only "
                                  "(node classification); link sampling is not implemented")


def _floyd_subsets(deg: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """For every entry d of ``deg`` (all > ``k``), a uniform ``k``-subset of range(d), as a
    [len(deg), k] tensor: Floyd's algorithm (Bentley & Floyd, CACM 1987), its ``k`` steps
    vectorized over the rows. Step i draws t uniform in [0, J], J = d - k + i, and keeps t,
    or J when t was kept already; O(len(deg) k^2), however large the degrees."""
    m = int(deg.numel())
    out = torch.empty(m, k, dtype=torch.long)
    for i in range(k):
        top = deg - k + i  # J
        t = (torch.rand(m, dtype=torch.float64, generator=generator) * (top + 1)).long()
        t = torch.minimum(t, top)  # guards the float edge case r * (J + 1) == J + 1
        taken = (out[:, :i] == t[:, None]).any(1)
        out[:, i] = torch.where(taken, top, t)
    return out

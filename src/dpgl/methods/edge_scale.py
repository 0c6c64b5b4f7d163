"""Neighbour-weight shrinkage of an estimated graph (dpgl; docs/own-method.md, "Edge scale").

A GCN layer over an estimated graph with edge weights w_ij aggregates
``D^-1/2 (s W + I) D^-1/2 X`` with s = 1 (Kipf & Welling 2017, Eq. 2 with weights). Scaling
every estimated weight by s in [0, 1] moves the layer between the GCN on the estimate (s = 1)
and a GCN on self-loops alone (s = 0: an MLP on the node's own features): when most estimated
edges are noise and the features are strong, a small s keeps what the graph adds without
letting the noise swamp the node's own features. ``edge_scale="val"`` trains one model per
scale of :data:`EDGE_SCALES` on the same estimate with the same trainer seed and keeps the one
with the highest validation accuracy: server-side post-processing of the estimate with the
public validation labels (Blink's setting), so it changes no privacy charge.

A method may add a graph built from public data alone (``blink-pp``'s ``public_graph``: the
feature kNN graph) beside the estimate: the GCN then reads ``s W + t K + I``, with ``t`` the
public graph's weight (``public_scale``, or chosen jointly with ``s`` from
:data:`PUBLIC_SCALES` on validation). ``K`` depends on no report, so this is post-processing
too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    import torch

    from dpgl.methods.base import MethodOutput, RunContext
    from dpgl.nn import PreparedGraph

__all__ = ["EDGE_SCALES", "EDGE_SCALE_HELP", "PUBLIC_SCALES", "PUBLIC_SCALE_HELP",
           "combined_graph", "fit_scaled", "scaled_graph"]

#: the scales ``edge_scale="val"`` chooses from, largest first (ties go to the larger one)
EDGE_SCALES: tuple[float, ...] = (1.0, 0.5, 0.25, 0.1, 0.05, 0.0)

#: the public graph's weights ``public_scale="val"`` chooses from (0: the estimate alone)
PUBLIC_SCALES: tuple[float, ...] = (0.5, 0.25, 0.1, 0.0)

PUBLIC_SCALE_HELP = ("the weight of every pair of the public graph (a number in [0, 1]), or "
                     "val: choose it from 0.5, 0.25, 0.1, 0 by validation accuracy, jointly "
                     "with edge_scale; GCN only")

EDGE_SCALE_HELP = ("a number in [0, 1] that multiplies every estimated edge weight (the "
                   "GCN's self-loops keep weight 1; 0: no edges), or val: choose it from 1, "
                   "0.5, 0.25, 0.1, 0.05, 0 by validation accuracy (one model per scale, the "
                   "same estimate and seed); GCN only")


def scaled_graph(graph: PreparedGraph, scale: float) -> PreparedGraph:
    """``graph`` with every edge weight (1 where unweighted) multiplied by ``scale``; scale 1:
    ``graph`` itself; scale 0: no edges."""
    import torch

    from dpgl.nn import PreparedGraph
    from dpgl.nn.dense_graph import DenseGraph
    if scale == 1.0:
        return graph
    if isinstance(graph, DenseGraph):
        return graph.scaled(scale)
    if scale == 0.0:
        return PreparedGraph(torch.zeros(2, 0, dtype=torch.long), graph.num_nodes)
    w = graph.edge_weight if graph.edge_weight is not None else torch.ones(graph.num_edges)
    return PreparedGraph(graph.edge_index, graph.num_nodes, w * scale)


def combined_graph(graph: PreparedGraph, scale: float, public: PreparedGraph,
                   public_scale: float) -> PreparedGraph:
    """``scale`` times ``graph``'s weights plus ``public_scale`` times ``public``'s (1 where
    unweighted), pairs in both summed into one weighted edge."""
    import torch
    from torch_geometric.utils import coalesce

    from dpgl.nn import PreparedGraph
    parts = [(g.edge_index, g.edge_weight if g.edge_weight is not None
              else torch.ones(g.num_edges), w)
             for g, w in ((graph, scale), (public, public_scale)) if w != 0.0]
    if not parts:
        return PreparedGraph(torch.zeros(2, 0, dtype=torch.long), graph.num_nodes)
    ei = torch.cat([e for e, _, _ in parts], dim=1)
    wt = torch.cat([v.float() * w for _, v, w in parts])
    ei, wt = coalesce(ei, wt, graph.num_nodes, reduce="sum")
    return PreparedGraph(ei, graph.num_nodes, wt)


def fit_scaled(ctx: RunContext, x: torch.Tensor, y: torch.Tensor,
               split: tuple[torch.Tensor, torch.Tensor, torch.Tensor], graph: PreparedGraph,
               scale: float | str, *, public: PreparedGraph | None = None,
               public_scale: float | str = 1.0) -> MethodOutput:
    """Train the run's model on ``graph`` with its weights scaled by ``scale``, or, with
    ``scale="val"``, one model per :data:`EDGE_SCALES` (one trainer seed for all) and return
    the one with the highest validation accuracy (the first, i.e. largest scale, on ties).
    Scale 1 is exactly :func:`dpgl.methods.common.train_node_model` on ``graph``.

    With a ``public`` graph, every (scale, public scale) pair (each from its list when "val",
    public scales inner) trains on :func:`combined_graph`, one trainer seed for all, and the
    best on validation is kept (the first on ties)."""
    from dpgl.methods.common import train_node_model
    if public is not None:
        return _fit_combined(ctx, x, y, split, graph, scale, public, public_scale)
    if scale != "val":
        out = train_node_model(ctx, x, y, split, scaled_graph(graph, float(scale)))
        if scale != 1.0:
            out.info["edge_scale"] = float(scale)
        return out
    chosen, out, val = _best_on_validation(
        ctx, x, y, split, ((s, scaled_graph(graph, s)) for s in EDGE_SCALES))
    out.info["edge_scale"] = chosen
    out.diagnostics["edge_scale_val_accuracy"] = {f"{s:g}": v for s, v in val}
    return out


def _best_on_validation(ctx: RunContext, x: torch.Tensor, y: torch.Tensor,
                        split: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                        candidates: Iterable[tuple[Any, PreparedGraph]]
                        ) -> tuple[Any, MethodOutput, list[tuple[Any, float]]]:
    """One model per (label, graph) of ``candidates`` (built lazily, one at a time), all with
    the trainer seed :func:`~dpgl.methods.common.train_node_model` would draw; returns the
    label and model of the highest validation accuracy (the first on ties) and every label's
    validation accuracy, in order."""
    from dpgl.methods.common import fit_node_model
    seed = int(ctx.rng.integers(2**31))  # what train_node_model draws: one seed for all
    best: Any = None
    val: list[tuple[Any, float]] = []
    for label, g in candidates:
        out = fit_node_model(ctx.model, x, y, split, g, ctx.params, seed=seed,
                             device=ctx.device)
        val.append((label, acc := float(out.metrics["val_accuracy"])))
        if best is None or acc > best[1]:
            best = (label, acc, out)
    return best[0], best[2], val


def _fit_combined(ctx: RunContext, x: torch.Tensor, y: torch.Tensor,
                  split: tuple[torch.Tensor, torch.Tensor, torch.Tensor], graph: PreparedGraph,
                  scale: float | str, public: PreparedGraph,
                  public_scale: float | str) -> MethodOutput:
    scales = EDGE_SCALES if scale == "val" else (float(scale),)
    publics = PUBLIC_SCALES if public_scale == "val" else (float(public_scale),)
    (s, t), out, val = _best_on_validation(
        ctx, x, y, split, (((s, t), combined_graph(graph, s, public, t))
                           for s in scales for t in publics))
    out.info["edge_scale"] = s
    out.info["public_scale"] = t
    out.info["public_edges"] = public.num_edges
    if len(val) > 1:
        out.diagnostics["scale_val_accuracy"] = {f"{a:g},{b:g}": v for (a, b), v in val}
    return out

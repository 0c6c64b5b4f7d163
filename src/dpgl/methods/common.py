"""Steps shared by the method recipes: splitting, training a node model on a (possibly
estimated) graph, and the graph-classification pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpgl.methods.base import MethodOutput, RunContext
from dpgl.methods.params import GraphParams, NodeParams
from dpgl.rng import spawn

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data

    from dpgl.nn import PreparedGraph
    from dpgl.train.node import ReportedLabels


def node_split(ctx: RunContext, data: Data, *, labels: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The run's node split (seeded by the run's generator). With ``stratify`` it is
    stratified on ``labels``: methods whose labels are label-LDP pass the users' *reported*
    labels, so the split never reads a private label (default: ``data.y``, for methods that
    use the labels as is). ``split="blink-fixed"``: the Blink authors' fixed split
    (:func:`dpgl.graph.splits.blink_fixed_split`), the same for every seed; it draws nothing
    from the run's generator."""
    from dpgl.graph.splits import blink_fixed_split, random_node_split
    p = ctx.params
    assert isinstance(p, NodeParams)
    if p.split == "blink-fixed":
        fixed = blink_fixed_split(int(data.num_nodes))
        return fixed.train, fixed.val, fixed.test
    split = random_node_split(
        data.num_nodes,
        train=p.train_ratio,
        val=p.val_ratio,
        test=p.test_ratio,
        rng=ctx.rng,
        stratify=p.stratify,
        labels=data.y if labels is None else labels,
        label_rate=p.label_rate,
    )
    return split.train, split.val, split.test


def train_node_model(
    ctx: RunContext,
    x: torch.Tensor,
    y: torch.Tensor,
    split: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    graph: PreparedGraph | None,
    *,
    model: str | None = None,
    train_targets: torch.Tensor | None = None,
    head: tuple | None = None,
    reported: ReportedLabels | None = None,
) -> MethodOutput:
    """Train ``model`` (default: the run's model) on features ``x`` over ``graph``, on the
    run's device: full batch (the features and the graph are moved there once), or in
    neighbour-sampled mini-batches when the parameters set ``batch_size``
    (:mod:`dpgl.train.minibatch`; the batches move there). The trainer's seed is the run
    generator's next draw either way, so full and mini-batch runs of one configuration see
    the same split and the same (estimated) graph. ``head``: the arguments of a
    :class:`~dpgl.nn.kprop.LabelPropagationHead` wrapped around the model (noisy labels,
    :func:`dpgl.methods.lpgnn.label_targets`; full batch only). ``reported``: the k-RR
    label reports for ``select_epoch_by: lpgnn-noise-capped``
    (:func:`dpgl.methods.lpgnn.reported_labels`)."""
    p = ctx.params
    assert isinstance(p, NodeParams)
    return fit_node_model(model or ctx.model, x, y, split, graph, p,
                          seed=int(ctx.rng.integers(2**31)), device=ctx.device,
                          train_targets=train_targets, head=head, reported=reported)


def fit_node_model(
    kind: str,
    x: torch.Tensor,
    y: torch.Tensor,
    split: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    graph: PreparedGraph | None,
    p: NodeParams,
    *,
    seed: int,
    device: torch.device | str | None = "cpu",
    train_targets: torch.Tensor | None = None,
    head: tuple | None = None,
    reported: ReportedLabels | None = None,
) -> MethodOutput:
    """:func:`train_node_model`'s training step with its seed given: a ``kind`` node model
    with ``p``'s architecture, trained by ``p``'s configuration (full or mini-batch) on
    ``device``. ``x`` may also be a SciPy sparse matrix (kept sparse). ``head``: see
    :func:`train_node_model`."""
    import scipy.sparse as sp
    import torch

    from dpgl.device import to_device
    from dpgl.graph.propagation import SparseOperator
    from dpgl.nn import build_node_model
    from dpgl.nn.layers import sparse_features
    from dpgl.train import train_node_classifier
    arch = p.architecture()
    num_classes = int(y.max()) + 1
    dim = int(x.shape[1])
    with torch.random.fork_rng(devices=[]):  # the trainer re-initializes with the run's seed
        net = build_node_model(kind, dim, num_classes, arch)
    batching = p.minibatch()
    trained: torch.nn.Module = net
    if head is not None:
        from dpgl.errors import ConfigError
        from dpgl.nn.kprop import LabelPropagationHead
        if batching is not None:
            raise ConfigError("label denoising propagates over the whole graph: train full "
                              "batch (unset batch_size)")
        trained = LabelPropagationHead(net, *head)
    info: dict[str, object] = {}
    if batching is None:
        if sp.issparse(x):
            features: object = SparseOperator(sp.csr_matrix(x)) if p.input_dropout == 0 \
                else torch.from_numpy(sp.csr_matrix(x).toarray())
        else:
            features = sparse_features(x) if p.input_dropout == 0 else x
        features, graph = to_device(features, device), to_device(graph, device)
        result = train_node_classifier(
            trained,
            lambda m: m(features, graph),
            y,
            *split,
            p.train_config(),
            seed=seed,
            train_targets=train_targets,
            device=device,
            reported=reported,
        )
    else:
        from dpgl.errors import ConfigError
        from dpgl.nn.dense_graph import DenseGraph
        from dpgl.train.minibatch import train_node_minibatch
        if isinstance(graph, DenseGraph):
            raise ConfigError("mini-batches sample an edge list; a dense estimate (Blink-Soft "
                              "beyond its pair limit) trains full batch (unset batch_size)")
        rows: object = x
        if not sp.issparse(x) and p.input_dropout == 0:
            sparse = sparse_features(x)  # wide sparse features: rows read from CSR
            if isinstance(sparse, SparseOperator):
                rows = sp.csr_matrix(x.detach().cpu().numpy())
        result = train_node_minibatch(net, rows, graph, y, *split, p.train_config(), batching,
                                      seed=seed, train_targets=train_targets, device=device)
        info.update({"batch_size": batching.batch_size,
                     "fanout": list(batching.fanouts(arch.num_layers)),
                     "batches_per_epoch": int(result.history[-1]["batches_per_epoch"]),
                     "mean_batch_nodes": result.history[-1]["mean_batch_nodes"],
                     "mean_batch_edges": result.history[-1]["mean_batch_edges"]})
    info.update({
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "train_seconds": result.seconds,
        "train_epoch_seconds": result.timings["train"] / max(result.epochs_run, 1),
        "eval_epoch_seconds": result.timings["eval"] / max(result.epochs_run, 1),
    })
    if graph is not None:
        info["train_graph_edges"] = graph.num_edges
    return MethodOutput(result.metrics, info)


def run_graph_classification(ctx: RunContext) -> MethodOutput:
    """GIN-0 on the true graphs of a graph dataset (DPRR Sec. 5.1; the non-private baseline).
    Node features are constant (unattributed graphs)."""
    import torch
    from torch_geometric.data import Data

    from dpgl.graph.splits import graph_split
    from dpgl.train import train_graph_classifier
    p = ctx.params
    assert isinstance(p, GraphParams)
    ds = ctx.dataset
    labels = ds.y
    split_rng, _ = spawn(ctx.rng, 2)  # (two streams, as before: the same seed, the same run)
    tr, va, te = graph_split(labels, p.train_ratio, p.val_ratio, p.test_ratio, rng=split_rng)
    graphs = [
        Data(
            x=torch.ones(g.num_nodes, 1),
            edge_index=g.edge_index,
            y=g.y.view(-1),
            num_nodes=g.num_nodes,
        )
        for g in ds.graphs
    ]
    pick = lambda idx: [graphs[int(i)] for i in idx]  # noqa: E731
    with torch.random.fork_rng(devices=[]):  # the trainer re-initializes with the run's seed
        model = p.gin(ds.num_classes)
    result = train_graph_classifier(
        model,
        pick(tr),
        pick(va),
        pick(te),
        p.train_config(),
        seed=int(ctx.rng.integers(2**31)),
    )
    return MethodOutput(
        result.metrics,
        {
            "best_epoch": result.best_epoch,
            "epochs_run": result.epochs_run,
            "train_seconds": result.seconds,
        },
    )

"""Train/validation/test splits for node and graph classification.

All splits but the fixed one are random, drawn from an explicit ``numpy.random.Generator``
(or an int seed); every split leaves its input alone and returns sorted int64 index tensors.

* :func:`random_node_split` — transductive node split by ratios (e.g. 50/25/25, the 2:1:1
  split of Blink and LPGNN), optionally stratified by label, optionally keeping only a
  ``label_rate`` fraction of all nodes as labelled training nodes (LPGNN RQ4).
* :func:`blink_fixed_split` — the Blink authors' one fixed 50/25/25 split (their code's
  sklearn ``train_test_split`` with ``random_state=42``, replicated with NumPy).
* :func:`inductive_split` — DPAR's inductive setting (Zhang et al. 2024): disjoint train and
  test subgraphs, edges between them removed.
* :func:`graph_split` — graph classification splits (e.g. 75/10/15 or 65/15/20).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch_geometric.data import Data

from dpgl.errors import ConfigError
from dpgl.rng import SeedLike, make_rng

_TOL = 1e-9


@dataclass(frozen=True)
class NodeSplit:
    """Index sets of a node split (sorted int64 tensors).

    ``unlabeled`` holds the training-part nodes whose labels are withheld when a
    ``label_rate`` below the train ratio is requested (empty otherwise).
    """

    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor
    unlabeled: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.long))

    def masks(self, num_nodes: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Boolean ``(train_mask, val_mask, test_mask)`` of length ``num_nodes``."""
        out = []
        for idx in (self.train, self.val, self.test):
            if idx.numel() and int(idx.max()) >= num_nodes:
                raise ConfigError(
                    f"split refers to node {int(idx.max())} but num_nodes is {num_nodes}"
                )
            mask = torch.zeros(num_nodes, dtype=torch.bool)
            mask[idx] = True
            out.append(mask)
        return out[0], out[1], out[2]


def _check_ratios(**ratios: float | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in ratios.items():
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ConfigError(f"{name} ratio must be a number in [0, 1], got {value!r}") from None
        if math.isnan(v) or not 0.0 <= v <= 1.0:
            raise ConfigError(f"{name} ratio must be in [0, 1], got {value!r}")
        out[name] = v
    total = sum(out.values())
    if total > 1.0 + _TOL:
        parts = " + ".join(f"{k}={v:g}" for k, v in out.items())
        raise ConfigError(f"split ratios must sum to at most 1, got {parts} = {total:g}")
    return out


def _counts(n: int, ratios: list[float]) -> list[int]:
    """Sizes for ``ratios`` of ``n`` items; when the ratios sum to 1 every item is used."""
    sizes = [round(r * n) for r in ratios]
    if abs(sum(ratios) - 1.0) <= _TOL:
        sizes[-1] = n - sum(sizes[:-1])
    # Rounding can overshoot by one or two: shrink the last non-empty parts.
    i = len(sizes) - 1
    while sum(sizes) > n and i >= 0:
        cut = min(sizes[i], sum(sizes) - n)
        sizes[i] -= cut
        i -= 1
    return sizes


def _partition(
    n: int, ratios: list[float], rng: np.random.Generator, labels: np.ndarray | None
) -> list[np.ndarray]:
    """Random disjoint index sets with the given ratios (per class when ``labels`` given)."""
    if labels is None:
        perm = rng.permutation(n)
        bounds = np.cumsum([0, *_counts(n, ratios)])
        return [np.sort(perm[bounds[i] : bounds[i + 1]]) for i in range(len(ratios))]
    parts: list[list[np.ndarray]] = [[] for _ in ratios]
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        perm = members[rng.permutation(members.size)]
        bounds = np.cumsum([0, *_counts(members.size, ratios)])
        for i in range(len(ratios)):
            parts[i].append(perm[bounds[i] : bounds[i + 1]])
    return [np.sort(np.concatenate(p)) if p else np.empty(0, np.int64) for p in parts]


def _labels_array(labels: torch.Tensor | np.ndarray | None, n: int, what: str) -> np.ndarray:
    if labels is None:
        raise ConfigError(f"{what}: stratify=True needs labels (pass labels= or a Data with y)")
    arr = labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    arr = arr.reshape(-1)
    if arr.size != n:
        raise ConfigError(f"{what}: {arr.size} labels for {n} items")
    return arr


def _tensor(idx: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(idx, dtype=np.int64))


def random_node_split(
    data_or_num_nodes: Data | int,
    train: float = 0.5,
    val: float = 0.25,
    test: float = 0.25,
    *,
    rng: SeedLike,
    stratify: bool = False,
    labels: torch.Tensor | np.ndarray | None = None,
    label_rate: float | None = None,
) -> NodeSplit:
    """Random transductive node split by ratios (2:1:1 is ``0.5, 0.25, 0.25``).

    ``stratify`` splits every class by the same ratios (labels from ``labels`` or
    ``data.y``). ``label_rate`` is the fraction of *all* nodes whose labels are used for
    training (LPGNN, Sajadmanesh & Gatica-Perez 2021, RQ4): that many nodes are drawn from
    the training part (stratified when ``stratify``), the rest of the training part is
    returned as ``unlabeled``; it must not exceed ``train``.
    """
    if isinstance(data_or_num_nodes, Data):
        n = int(data_or_num_nodes.num_nodes)
        if labels is None and stratify:
            labels = data_or_num_nodes.y
    elif isinstance(data_or_num_nodes, (int, np.integer)) and not isinstance(
        data_or_num_nodes, bool
    ):
        n = int(data_or_num_nodes)
    else:
        raise ConfigError(
            f"random_node_split needs a Data or a node count, got {type(data_or_num_nodes)}"
        )
    if n < 0:
        raise ConfigError(f"num_nodes must be >= 0, got {n}")
    r = _check_ratios(train=train, val=val, test=test)
    gen = make_rng(rng)
    y = _labels_array(labels, n, "random_node_split") if stratify else None
    tr, va, te = _partition(n, [r["train"], r["val"], r["test"]], gen, y)

    unlabeled = np.empty(0, np.int64)
    if label_rate is not None:
        lr = _check_ratios(label_rate=label_rate)["label_rate"]
        if lr > r["train"] + _TOL:
            raise ConfigError(
                f"label_rate ({lr:g}) exceeds the train ratio ({r['train']:g}): labelled "
                f"training nodes are drawn from the training part"
            )
        k = min(round(lr * n), tr.size)
        if y is None:
            chosen = np.sort(gen.choice(tr, size=k, replace=False)) if k else tr[:0]
        else:
            # Per class, the same fraction of the class's training nodes.
            frac = k / tr.size if tr.size else 0.0
            sub_parts = _partition(tr.size, [frac, 1.0 - frac], gen, y[tr])
            chosen = tr[sub_parts[0]]
        unlabeled = np.setdiff1d(tr, chosen, assume_unique=True)
        tr = chosen
    return NodeSplit(_tensor(tr), _tensor(va), _tensor(te), _tensor(unlabeled))


def sklearn_shuffle_split(items: np.ndarray, test_size: float, random_state: int
                          ) -> tuple[np.ndarray, np.ndarray]:
    """``sklearn.model_selection.train_test_split(items, test_size=test_size,
    random_state=random_state)`` (shuffled, unstratified), without sklearn: sklearn's
    ``ShuffleSplit`` draws ``RandomState(random_state).permutation(n)``; the first
    ``ceil(test_size n)`` positions are the test part, the next ``n - ceil(test_size n)`` the
    training part. Returns ``(train, test)`` in that (permuted) order, as sklearn does."""
    items = np.asarray(items)
    n = int(items.shape[0])
    n_test = math.ceil(test_size * n)
    perm = np.random.RandomState(random_state).permutation(n)
    return items[perm[n_test:]], items[perm[:n_test]]


#: ``random_state`` of the Blink authors' split (github.com/zhxchd/Blink_GNN,
#: ``src/data/split.py``)
BLINK_SPLIT_SEED = 42


def blink_fixed_split(num_nodes: int) -> NodeSplit:
    """The Blink authors' protocol (Zhu, Tan & Xiao, CCS 2023; their code
    ``src/data/split.py``): ``train, val_test = train_test_split(range(n), test_size=0.5,
    random_state=42)``, then ``val, test = train_test_split(val_test, test_size=0.5,
    random_state=42)``. One fixed, unstratified 50/25/25 split, the same for every method,
    epsilon and run (their runs vary only the LDP noise and the initialisation); on Cora its
    test part's largest class is 34.1 % of it (30.2 % of the graph)."""
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) \
            or num_nodes < 0:
        raise ConfigError(f"blink_fixed_split needs a node count >= 0, got {num_nodes!r}")
    train, val_test = sklearn_shuffle_split(np.arange(int(num_nodes)), 0.5, BLINK_SPLIT_SEED)
    val, test = sklearn_shuffle_split(val_test, 0.5, BLINK_SPLIT_SEED)
    return NodeSplit(*(_tensor(np.sort(part)) for part in (train, val, test)))


def inductive_split(
    data: Data, train: float = 0.8, *, rng: SeedLike
) -> tuple[Data, Data, torch.Tensor, torch.Tensor]:
    """Split the nodes into a training and a test subgraph (DPAR's inductive setting).

    Returns ``(train_graph, test_graph, train_nodes, test_nodes)``: the subgraphs induced by
    a random ``train`` fraction of the nodes and by the rest (edges between the two parts are
    dropped, node attributes follow, ids are relabelled ``0..k-1``), and the original ids of
    each subgraph's nodes, sorted, so ``train_graph`` node ``i`` is node ``train_nodes[i]``.
    """
    if not isinstance(data, Data):
        raise ConfigError(f"inductive_split needs a torch_geometric Data, got {type(data)}")
    r = _check_ratios(train=train)["train"]
    n = int(data.num_nodes)
    gen = make_rng(rng)
    tr, te = _partition(n, [r, 1.0 - r], gen, None)
    tr_t, te_t = _tensor(tr), _tensor(te)
    return data.subgraph(tr_t), data.subgraph(te_t), tr_t, te_t


def graph_split(
    labels: torch.Tensor | np.ndarray | list[int],
    train: float = 0.75,
    val: float = 0.10,
    test: float = 0.15,
    *,
    rng: SeedLike,
    stratify: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random (by default label-stratified) split of graph indices by ratios.

    ``labels`` holds one label per graph (e.g. ``GraphDataset.y``); returns sorted
    ``(train_idx, val_idx, test_idx)`` int64 tensors.
    """
    if isinstance(labels, torch.Tensor):
        arr = labels.detach().cpu().numpy().reshape(-1)
    else:
        arr = np.asarray(labels).reshape(-1)
    r = _check_ratios(train=train, val=val, test=test)
    gen = make_rng(rng)
    parts = _partition(arr.size, [r["train"], r["val"], r["test"]], gen, arr if stratify else None)
    return _tensor(parts[0]), _tensor(parts[1]), _tensor(parts[2])

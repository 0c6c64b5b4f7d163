"""Containers shared by the loaders: :class:`GraphDataset`, :class:`DatasetInfo`, and the
edge-list normalisation every loader applies (undirected, coalesced, no self-loops)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from dpgl.errors import DatasetError

if TYPE_CHECKING:
    import numpy as np
    import torch
    from torch_geometric.data import Data

Kind = Literal["node", "graph"]


def undirected_edge_index(
    src: np.ndarray | torch.Tensor,
    dst: np.ndarray | torch.Tensor,
    num_nodes: int,
    *,
    what: str = "edge list",
) -> torch.Tensor:
    """``[2, 2|E|]`` int64 edge index: both directions, sorted, no duplicates, no self-loops.

    Edge weights and direction in the input are ignored (the graphs are simple and
    undirected). Out-of-range node ids raise :class:`~dpgl.errors.DatasetError`.
    """
    import numpy as np
    import torch
    s = np.asarray(src.numpy() if isinstance(src, torch.Tensor) else src).astype(np.int64)
    d = np.asarray(dst.numpy() if isinstance(dst, torch.Tensor) else dst).astype(np.int64)
    s, d = s.reshape(-1), d.reshape(-1)
    if s.size != d.size:
        raise DatasetError(f"{what}: {s.size} sources but {d.size} targets")
    if s.size:
        lo = int(min(s.min(), d.min()))
        hi = int(max(s.max(), d.max()))
        if lo < 0 or hi >= num_nodes:
            raise DatasetError(
                f"{what}: node id {lo if lo < 0 else hi} outside [0, {num_nodes - 1}]"
            )
    keep = s != d
    s, d = s[keep], d[keep]
    # One sort of the linear keys row * n + col both sorts (row-major, as PyG's coalesce) and
    # removes duplicates; n <= 3e9 keeps the keys inside int64.
    key = np.sort(np.concatenate([s * num_nodes + d, d * num_nodes + s]))
    if key.size:
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
    return torch.from_numpy(np.stack([key // num_nodes, key % num_nodes]))


def num_undirected_edges(data: Data) -> int:
    """Number of undirected edges of a graph stored with both directions."""
    return int(data.edge_index.size(1)) // 2


class GraphDataset:
    """A list of graphs for graph classification (TU datasets).

    Each graph is a :class:`~torch_geometric.data.Data` with an undirected ``edge_index``,
    ``y`` of shape ``[1]``, ``num_nodes``, ``x=None`` (unless structural features were
    requested) and, when the files have them, integer ``node_label``.
    """

    def __init__(self, name: str, graphs: Sequence[Data], num_classes: int) -> None:
        self.name = name
        self.graphs: list[Data] = list(graphs)
        self.num_classes = int(num_classes)

    def __len__(self) -> int:
        return len(self.graphs)

    def __iter__(self) -> Iterator[Data]:
        return iter(self.graphs)

    def __getitem__(self, index: int | slice | Sequence[int] | torch.Tensor | np.ndarray):
        """One graph for an integer, a :class:`GraphDataset` for a slice or index array."""
        import numpy as np
        import torch
        if isinstance(index, (int, np.integer)):
            return self.graphs[int(index)]
        if isinstance(index, slice):
            return GraphDataset(self.name, self.graphs[index], self.num_classes)
        idx = torch.as_tensor(np.asarray(index)).reshape(-1)
        if idx.dtype == torch.bool:
            idx = idx.nonzero().reshape(-1)
        return GraphDataset(self.name, [self.graphs[int(i)] for i in idx], self.num_classes)

    @property
    def y(self) -> torch.Tensor:
        """Graph labels, int64 ``[len(self)]``."""
        import torch
        if not self.graphs:
            return torch.empty(0, dtype=torch.long)
        return torch.cat([g.y.reshape(-1) for g in self.graphs])

    @property
    def num_features(self) -> int:
        """Width of ``x`` (0 when the graphs have no node features)."""
        x = self.graphs[0].x if self.graphs else None
        return 0 if x is None else int(x.size(-1))

    @property
    def avg_nodes(self) -> float:
        import numpy as np
        return float(np.mean([g.num_nodes for g in self.graphs])) if self.graphs else 0.0

    def __repr__(self) -> str:
        return f"GraphDataset({self.name!r}, graphs={len(self)}, classes={self.num_classes})"


@dataclass
class DatasetInfo:
    """What is known about a dataset without loading it.

    ``nodes`` is the average number of nodes per graph for graph datasets; ``edges`` counts
    undirected edges without self-loops (for graph datasets: in total over all graphs, or
    ``None`` when not recorded). ``available`` says whether ``load_dataset(name)`` with
    default options finds all its files; ``missing`` lists the files that are absent.
    ``structure_available`` is true when the edges and labels are present even if the
    node features are not (then ``features='one-hot-degree'`` loads).
    """

    name: str
    kind: Kind
    available: bool
    nodes: float | int | None
    edges: int | None
    features: int | None
    classes: int | None
    graphs: int | None = None
    missing: list[str] = field(default_factory=list)
    note: str = ""
    structure_available: bool = True
    aliases: tuple[str, ...] = ()
    #: files present but not usable, with why (:func:`dpgl.datasets.check.looks_corrupt`)
    corrupt: dict[str, str] = field(default_factory=dict)

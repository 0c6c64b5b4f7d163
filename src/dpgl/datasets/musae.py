"""Social networks in the MUSAE / FEATHER csv + json format (Rozemberczki et al.,
"Multi-scale attributed node embedding", J. Complex Networks 2021; "Characteristic functions
on graphs", CIKM 2020): Facebook page-page, GitHub developers, LastFM Asia, Deezer Europe,
Twitch (DE, ENGB, ES, FR, PTBR, RU).

* ``*_edges.csv``: header + one undirected edge per row (two integer columns);
* ``*_target.csv``: one row per node with an id column and a label column;
* ``*_features.json``: ``{"<node id>": [active feature ids, ...]}``, turned into a multi-hot
  float matrix (a feature listed twice counts once).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from dpgl.datasets.base import undirected_edge_index
from dpgl.errors import DatasetError

if TYPE_CHECKING:
    import pandas as pd
    import torch
    from torch_geometric.data import Data


@dataclass(frozen=True)
class MusaeFormat:
    """Column layout of one MUSAE dataset's files."""

    id_column: str
    label_column: str
    num_features: int | None  # None: 1 + the largest feature id in the file
    categorical: bool = False  # labels are strings, mapped to sorted category codes


def _read_csv(path: Path, **kwargs) -> pd.DataFrame:
    import pandas as pd
    try:
        return pd.read_csv(path, **kwargs)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise DatasetError(f"{path.name} is not a readable csv file: {exc}") from None


def read_edges(path: Path, num_nodes: int) -> torch.Tensor:
    """The undirected edge index of a two-column edge csv (header row skipped)."""
    import numpy as np
    df = _read_csv(path)
    if df.shape[1] != 2:
        raise DatasetError(f"{path.name}: expected two columns, got {list(df.columns)}")
    try:
        arr = df.to_numpy(dtype=np.int64)
    except (ValueError, TypeError) as exc:
        raise DatasetError(f"{path.name}: non-integer node ids: {exc}") from None
    return undirected_edge_index(arr[:, 0], arr[:, 1], num_nodes, what=path.name)


def read_targets(path: Path, fmt: MusaeFormat) -> tuple[torch.Tensor, list[str] | None]:
    """Labels ordered by node id; the ids must be exactly ``0..n-1``."""
    import numpy as np
    import pandas as pd
    import torch
    df = _read_csv(path)
    missing = {fmt.id_column, fmt.label_column} - set(df.columns)
    if missing:
        raise DatasetError(
            f"{path.name}: missing column(s) {sorted(missing)}; has {list(df.columns)}"
        )
    if not pd.api.types.is_integer_dtype(df[fmt.id_column]):
        raise DatasetError(f"{path.name}: column {fmt.id_column!r} is not integer")
    dup = df.duplicated(fmt.id_column, keep=False)
    if dup.any():
        # Twitch FR lists two users twice (same id and label, slightly different views):
        # keep one row per id, but never choose between conflicting labels.
        conflicting = df[dup].groupby(fmt.id_column)[fmt.label_column].nunique() > 1
        if conflicting.any():
            bad = int(conflicting[conflicting].index[0])
            raise DatasetError(f"{path.name}: node {bad} is listed with different labels")
        df = df.drop_duplicates(fmt.id_column, keep="first")
    ids = df[fmt.id_column].to_numpy()
    order = np.argsort(ids, kind="stable")
    if not np.array_equal(ids[order], np.arange(len(ids))):
        raise DatasetError(f"{path.name}: node ids are not exactly 0..{len(ids) - 1}")
    raw = df[fmt.label_column].to_numpy()[order]
    names: list[str] | None = None
    if fmt.categorical:
        names = sorted({str(v) for v in raw})
        labels = np.searchsorted(np.asarray(names), raw.astype(str))
    elif raw.dtype == bool:
        labels = raw.astype(np.int64)
    else:
        try:
            labels = raw.astype(np.int64)
        except (ValueError, TypeError) as exc:
            raise DatasetError(f"{path.name}: label column is not integer: {exc}") from None
        if labels.size and labels.min() < 0:
            raise DatasetError(f"{path.name}: negative labels")
    return torch.from_numpy(np.asarray(labels, dtype=np.int64)), names


def read_features(path: Path, num_nodes: int, num_features: int | None) -> torch.Tensor:
    """Multi-hot float32 ``[num_nodes, num_features]`` matrix from a features json."""
    import numpy as np
    import torch
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise DatasetError(f"{path.name} is not a readable json file: {exc}") from None
    if not isinstance(raw, dict):
        raise DatasetError(f"{path.name}: expected an object {{node: [feature ids]}}")
    try:
        nodes = np.fromiter((int(k) for k in raw), dtype=np.int64, count=len(raw))
        lists = list(raw.values())
        lengths = np.fromiter((len(v) for v in lists), dtype=np.int64, count=len(lists))
        cols = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{path.name}: malformed feature lists: {exc}") from None
    rows = np.repeat(nodes, lengths)
    if nodes.size and (nodes.min() < 0 or nodes.max() >= num_nodes):
        raise DatasetError(f"{path.name}: node id outside [0, {num_nodes - 1}]")
    width = num_features if num_features is not None else int(cols.max(initial=-1)) + 1
    if cols.size and (cols.min() < 0 or cols.max() >= width):
        raise DatasetError(f"{path.name}: feature id outside [0, {width - 1}]")
    x = np.zeros((num_nodes, width), dtype=np.float32)
    x[rows, cols] = 1.0
    return torch.from_numpy(x)


def read_musae(edges: Path, target: Path, features: Path | None, fmt: MusaeFormat) -> Data:
    """Assemble a MUSAE dataset; ``features=None`` leaves ``x`` unset (no feature file)."""
    from torch_geometric.data import Data
    y, _ = read_targets(target, fmt)
    n = int(y.numel())
    edge_index = read_edges(edges, n)
    x = read_features(features, n, fmt.num_features) if features is not None else None
    return Data(x=x, y=y, edge_index=edge_index, num_nodes=n)

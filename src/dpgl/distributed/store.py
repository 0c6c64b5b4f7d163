"""The shard store (issue #15): a directory every worker of a sharded run reads and writes.

``input/`` holds what the users hold (the simulation's input): the neighbor lists in CSR form
(``indptr.npy`` int64, ``indices.npy`` int32), and optionally ``features.npy`` (n, d) and
``labels.npy`` (n,). A stage writes per-user arrays (one row per user: reports, estimates)
as one ``.npy`` file that each block fills in its own rows, and variable-length outputs (a
block's neighbor reports) as one file per block. Workers open arrays memory-mapped, so a
block reads only its own rows and a propagation step reads the previous step's features
through the page cache. On one machine the directory is local; on a cluster it must be a
filesystem every worker mounts (docs/scale.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dpgl.errors import ConfigError, GraphError
from dpgl.mechanisms.neighbor_list import check_population

__all__ = ["ShardStore"]

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-")


def _check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name or not set(name) <= _NAME_CHARS:
        raise ConfigError(f"a {kind} name must be lower-case letters, digits, '_' or '-', "
                          f"got {name!r}")
    return name


class ShardStore:
    """A shard store at ``root`` (created by :meth:`create`, opened by the constructor)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        meta = self.root / "meta.json"
        try:
            self.meta = json.loads(meta.read_text())
            self.num_users = check_population(self.meta["num_users"])
        except FileNotFoundError:
            raise ConfigError(f"{self.root} is not a shard store (no meta.json)") from None
        except (ValueError, KeyError, TypeError, GraphError) as exc:
            raise ConfigError(f"{meta} is corrupt: {exc}") from None

    def __repr__(self) -> str:
        return f"ShardStore({str(self.root)!r}, num_users={self.num_users})"

    # ----------------------------------------------------------------- input

    @classmethod
    def create(cls, root: str | Path, indptr: np.ndarray, indices: np.ndarray, *,
               features: np.ndarray | None = None, labels: np.ndarray | None = None
               ) -> ShardStore:
        """Write the users' data to a new store at ``root`` (row i of the CSR arrays is user
        i's sorted neighbor list)."""
        root = Path(root)
        indptr = np.asarray(indptr)
        n = indptr.size - 1
        check_population(n)
        if indptr[0] != 0 or indptr[-1] != np.asarray(indices).size \
                or np.any(np.diff(indptr) < 0):
            raise GraphError("indptr must start at 0, be non-decreasing and end at the number "
                             "of neighbor ids")
        for name, arr in (("features", features), ("labels", labels)):
            if arr is not None and np.shape(arr)[0] != n:
                raise ConfigError(f"{name} must have one row per user ({n}), got "
                                  f"{np.shape(arr)[0]}")
        try:
            (root / "input").mkdir(parents=True, exist_ok=True)
            np.save(root / "input" / "indptr.npy", indptr.astype(np.int64, copy=False))
            np.save(root / "input" / "indices.npy", np.asarray(indices).astype(np.int32,
                                                                               copy=False))
            if features is not None:
                np.save(root / "input" / "features.npy",
                        np.asarray(features, dtype=np.float32))
            if labels is not None:
                np.save(root / "input" / "labels.npy", np.asarray(labels, dtype=np.int64))
            (root / "meta.json").write_text(json.dumps({"num_users": int(n)}))
        except OSError as exc:
            raise ConfigError(f"cannot write the shard store at {root}: {exc.strerror}") from None
        return cls(root)

    def _input(self, name: str) -> np.ndarray:
        path = self.root / "input" / f"{name}.npy"
        try:
            return np.load(path, mmap_mode="r")
        except FileNotFoundError:
            raise ConfigError(f"the shard store {self.root} has no {name}") from None
        except ValueError as exc:
            raise ConfigError(f"{path} is corrupt: {exc}") from None

    def rows(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """The neighbor lists of users ``[lo, hi)``: (indptr from 0, indices)."""
        indptr = np.asarray(self._input("indptr")[lo:hi + 1], dtype=np.int64)
        indices = np.asarray(self._input("indices")[indptr[0]:indptr[-1]], dtype=np.int64)
        return indptr - indptr[0], indices

    def features(self, lo: int, hi: int) -> np.ndarray:
        """The feature rows of users ``[lo, hi)`` (float32)."""
        return np.array(self._input("features")[lo:hi])

    def labels(self, lo: int, hi: int) -> np.ndarray:
        """The labels of users ``[lo, hi)`` (int64)."""
        return np.array(self._input("labels")[lo:hi])

    @property
    def feature_dim(self) -> int:
        return int(self._input("features").shape[1])

    # ----------------------------------------------------------------- stage outputs

    def _array_path(self, stage: str, name: str) -> Path:
        return self.root / _check_name("stage", stage) / f"{_check_name('array', name)}.npy"

    def allocate(self, stage: str, name: str, shape: tuple[int, ...], dtype: str) -> None:
        """Create the per-user array ``stage/name`` (first dimension: the users); the driver
        calls this before the blocks fill their rows."""
        if shape[0] != self.num_users:
            raise ConfigError(f"a per-user array needs {self.num_users} rows, got {shape[0]}")
        path = self._array_path(stage, name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.dtype(dtype),
                                            shape=tuple(shape))
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
        del arr

    def write_rows(self, stage: str, name: str, lo: int, values: np.ndarray) -> None:
        """Fill rows ``lo, lo + 1, ...`` of ``stage/name`` (a block writes only its own)."""
        arr = np.lib.format.open_memmap(self._array_path(stage, name), mode="r+")
        arr[lo:lo + len(values)] = values
        arr.flush()
        del arr

    def array(self, stage: str, name: str) -> np.ndarray:
        """The per-user array ``stage/name``, memory-mapped read-only."""
        path = self._array_path(stage, name)
        try:
            return np.load(path, mmap_mode="r")
        except FileNotFoundError:
            raise ConfigError(f"the shard store has no {stage}/{name}; run that stage "
                              "first") from None

    def put_block(self, stage: str, block: int, **arrays: np.ndarray) -> None:
        """Write one block's variable-length output ``stage/block-XXXXXX.npz``."""
        path = self.root / _check_name("stage", stage) / f"block-{block:06d}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)
        tmp.replace(path)    # a block's file appears whole or not at all

    def get_block(self, stage: str, block: int) -> dict[str, np.ndarray]:
        """One block's variable-length output."""
        path = self.root / _check_name("stage", stage) / f"block-{block:06d}.npz"
        try:
            with np.load(path) as z:
                return {k: z[k] for k in z.files}
        except FileNotFoundError:
            raise ConfigError(f"the shard store has no {stage} output for block {block}; "
                              "run that stage first") from None

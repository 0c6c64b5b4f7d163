"""Shared test set-up. Its presence puts ``tests/`` on ``sys.path`` (pytest's default
``prepend`` import mode), so helper modules such as ``_edge_graphs`` are importable from
every test folder."""

import os
from pathlib import Path

import pytest

from dpgl.device import cpu_thread_defaults

# As the CLI does: torch's threads wait passively, one thread on a 2-core machine (CI shares
# its cores), set before any test imports torch.
cpu_thread_defaults()

# The repository's ../shared/datasets (CI checks the repository out beside ../shared).
DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The offline dataset directory ($DPGL_DATA_DIR or ../shared/datasets); skip if absent."""
    path = Path(os.environ.get("DPGL_DATA_DIR") or DEFAULT_SHARED)
    if not path.is_dir():
        pytest.skip(f"offline dataset copies not found at {path} (set DPGL_DATA_DIR)")
    return path


@pytest.fixture(scope="session")
def shared_file(shared_data_dir: Path):
    """``shared_file(rel)``: the path of an offline file; skips the test when it is absent."""

    def get(rel: str) -> Path:
        path = shared_data_dir / rel
        if not path.is_file():
            pytest.skip(f"{rel} not in {shared_data_dir}")
        return path

    return get

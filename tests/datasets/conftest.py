"""Fixtures for the dataset tests: the offline copies of the real datasets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The repository's ../shared/datasets (CI checks the repository out beside ../shared).
DEFAULT_SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


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

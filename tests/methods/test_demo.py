"""The default demo: what it runs (fast) and that it writes its table and plot (slow)."""

from pathlib import Path

import pytest

from dpgl.experiments.demo import DEMO_EPSILONS, demo_grid, run_demo
from dpgl.methods import get_method


def test_demo_grid_compares_private_methods_with_both_baselines() -> None:
    configs = demo_grid(seeds=2).expand(lambda m: get_method(m).private)
    methods = {c.method for c in configs}
    assert {"none", "mlp", "rr", "blink-hard"} <= methods
    assert all(c.dataset == "csbm" for c in configs)  # no files, no network
    private = [c for c in configs if get_method(c.method).private]
    assert {c.epsilon for c in private} == set(DEMO_EPSILONS)
    assert len(configs) == 2 * (2 + (len(methods) - 2) * len(DEMO_EPSILONS))


@pytest.mark.slow
def test_demo_writes_table_and_plot(tmp_path: Path) -> None:
    paths = run_demo(tmp_path, seeds=1)
    names = {p.name for p in paths}
    assert {"results.md", "results.csv", "privacy_utility_test_accuracy.png"} <= names
    assert "blink-hard" in (tmp_path / "results.md").read_text()

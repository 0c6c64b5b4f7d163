"""Smoke tests of benchmark scripts whose output the docs quote (benchmarks/*.py): they run on
a tiny case and print what the docs read; the timings themselves live in benchmarks/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_gat_step_compares_the_layers_in_their_own_processes(tmp_path: Path) -> None:
    out = _run("benchmarks/gat_step.py", "--nodes", "300", "--edges", "3000",
               "--features", "8", "--repeats", "1", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert [r["implementation"] for r in rows] == ["dpgl", "pyg"]
    assert all(r["status"] == "ok" and r["peak_rss_mb"] > 0 and r["seconds"] > 0 for r in rows)
    assert rows[-1]["max_abs_diff_logits"] < 1e-5  # the same logits from both layers


def test_graph_step_benchmarks_refuse_bad_arguments() -> None:
    for script in ("benchmarks/gat_step.py", "benchmarks/solitude_step.py"):
        out = _run(script, "--edges", "1e6,x")
        assert out.returncode == 2 and "--edges must be comma-separated numbers" in out.stderr
    out = _run("benchmarks/gat_step.py", "--only", "dgl")
    assert out.returncode == 2 and "unknown implementation 'dgl'" in out.stderr


def test_replay_stored_reruns_a_stored_run_and_compares(shared_data_dir, shared_file) -> None:
    shared_file("planetoid/raw/ind.cora.x")  # skips without the offline Cora
    out = _run("benchmarks/replay_stored.py", "blink", "--data-dir", str(shared_data_dir),
               "--where", "method=mlp",
               "--where", "seed=0", "--limit", "1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[2].startswith("| cora | ") and "| mlp |" in lines[2]
    assert lines[-1].endswith("of 1 runs give the stored test accuracy exactly")


def test_replay_stored_refuses_unknown_names_and_filters() -> None:
    out = _run("benchmarks/replay_stored.py", "nosuch")
    assert out.returncode == 1 and "unknown reproduction 'nosuch'" in out.stderr
    out = _run("benchmarks/replay_stored.py", "blink", "--where", "colour=red")
    assert out.returncode == 2 and "--where takes FIELD=VALUE" in out.stderr
    out = _run("benchmarks/replay_stored.py", "blink", "--where", "dataset=nowhere")
    assert out.returncode == 1 and "no stored run of the protocol matches" in out.stderr

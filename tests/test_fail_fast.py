"""Argument errors and listings come back before the heavy imports (issue #13: a mistyped
name must not cost seconds of torch / PyG / dp-accounting start-up). Checked on what a fresh
interpreter has imported, not on timings (those are in benchmarks/cli.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "torch_geometric", "dp_accounting", "pandas", "scipy", "matplotlib", "numpy",
         "dask", "distributed")

_PROBE = """
import json, sys
from dpgl.cli import main
try:
    main(sys.argv[1:])
    code = 0
except SystemExit as e:
    code = int(e.code or 0)
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
sys.__stdout__.write("\\nPROBE " + json.dumps({{"code": code, "heavy": heavy}}) + "\\n")
"""


def _probe(*args: str, cwd: Path | None = None) -> tuple[int, list[str], str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY), *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE "))
    result = json.loads(line[len("PROBE "):])
    return result["code"], result["heavy"], proc.stderr


@pytest.mark.parametrize("args", [
    ("--help",),
    ("train", "--help"),
    ("methods",),
    ("methods", "--task", "node"),
    ("datasets",),
    ("collect", "--help"),
    ("client", "submit", "--help"),
])
def test_listings_import_nothing_heavy(args: tuple[str, ...]) -> None:
    code, heavy, err = _probe(*args)
    assert code == 0, err
    assert heavy == [], f"dpgl {' '.join(args)} imported {heavy}"


@pytest.mark.parametrize("args, message", [
    (("train", "--dataset", "nope"), "unknown dataset 'nope'"),
    (("train", "--dataset", "cora", "--method", "nope"), "unknown method 'nope'"),
    (("train", "--dataset", "cora", "--model", "nope"), "unknown model 'nope'"),
    (("train", "--dataset", "cora", "--method", "rr", "--epsilon", "-1"), "epsilon"),
    (("train", "--dataset", "cora", "--method", "rr"), "give an epsilon"),
    (("train", "--dataset", "cora", "--method", "rr", "--epsilon", "1", "-p", "foo=1"),
     "no parameter 'foo'"),
    (("train", "--dataset", "cora", "--method", "blink-hard", "--epsilon", "1",
      "-p", "degree_share=2"), "degree_share"),
    (("train", "--dataset", "mutag", "--method", "rr", "--epsilon", "1"), "--task graph"),
    (("collect", "create", "no-such-round.yaml"), "not found"),
    (("run", "grid.yaml", "--executor", "nope"), "unknown executor 'nope'"),
    (("run", "grid.yaml", "--address", "tcp://127.0.0.1:8786"), "with --executor dask"),
    (("run", "grid.yaml", "--executor", "dask", "--address", "x"),
     "not a Dask scheduler address"),
    (("run", "no-such-grid.yaml", "--executor", "dask", "--address", "tcp://127.0.0.1:8786"),
     "grid file 'no-such-grid.yaml' does not exist"),
    (("reproduce", "blink", "--executor", "ray2"), "unknown executor 'ray2'"),
    (("reproduce", "blink", "--executor", "dask", "--address", "tcp://127.0.0.1:8786",
      "--workers", "2"), "--workers sets the size of the local cluster"),
    (("serve", "--db", "no/such/dir/c.db"), "does not exist"),
    (("collect", "close", "r", "--db", "mysql://x"), "unsupported database URL"),
])
def test_argument_errors_come_before_heavy_imports(args: tuple[str, ...], message: str
                                                   ) -> None:
    code, heavy, err = _probe(*args)
    assert code == 2 and message in err, err
    assert heavy == [], f"the error for dpgl {' '.join(args)} came after importing {heavy}"


@pytest.mark.parametrize("executor", [(), ("--executor", "dask", "--address",
                                           "tcp://127.0.0.1:8786")])
def test_a_bad_grid_is_refused_before_heavy_imports(tmp_path: Path,
                                                    executor: tuple[str, ...]) -> None:
    """Also on a cluster: a bad grid is refused before dask is imported or the scheduler
    contacted."""
    grid = tmp_path / "g.yaml"
    grid.write_text("name: g\ndatasets: [cora]\nmethods:\n  - name: rr\n"
                    "    epsilons: [1.0]\n    params: {nope: 1}\nseeds: [0]\n")
    code, heavy, err = _probe("run", str(grid), "--store", str(tmp_path / "s.sqlite"),
                              *executor)
    assert code == 2 and "nope" in err, err
    assert heavy == []


def test_a_bad_round_spec_is_refused_before_heavy_imports(tmp_path: Path) -> None:
    spec = tmp_path / "round.yaml"
    spec.write_text("round_id: r\npopulation: {size: 10}\n"
                    "neighbors: {mechanism: nope, epsilon: 1}\n")
    code, heavy, err = _probe("collect", "create", str(spec), "--db", str(tmp_path / "c.db"))
    assert code == 2 and "neighbors.mechanism" in err, err
    assert heavy == []


def test_the_probe_sees_heavy_imports() -> None:
    """Negative control: a command that trains does import torch, and the probe says so."""
    code, heavy, err = _probe("audit", "rr", "--trials", "10", "--epsilon", "1")
    assert "torch" in heavy, (code, heavy, err)

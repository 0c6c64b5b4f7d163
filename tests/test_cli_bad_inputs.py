"""Issue #13, item 3: every bad input found by trying dpgl as a new user is a one-line error
with a non-zero exit, never a traceback or a silent success."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _cli import run_cli


def _one_line_error(code: int, err: str, *needles: str) -> None:
    assert code != 0
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture()
def a_file(tmp_path: Path) -> Path:
    f = tmp_path / "a-file"
    f.write_text("not a directory")
    return f


GRID = """name: g
datasets: [csbm]
methods: [none]
seeds: 1
params: {epochs: 1}
"""


def test_output_paths_under_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   a_file: Path) -> None:
    from dpgl.experiments.store import RunStore

    store = tmp_path / "runs.sqlite"
    with RunStore(store):
        pass
    code, _, err = run_cli(capsys, "report", str(store), "--out", str(a_file / "out"))
    _one_line_error(code, err, "--out", "cannot create the directory")
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(a_file / "s.sqlite"))
    _one_line_error(code, err, "--store")
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(tmp_path / "ok.sqlite"),
                           "--report", str(a_file / "rep"))
    _one_line_error(code, err, "--report")
    code, _, err = run_cli(capsys, "demo", "--output", str(a_file / "demo"))
    _one_line_error(code, err, "--output")
    code, _, err = run_cli(capsys, "reproduce", "dpar", "--report-only", "--out",
                           str(a_file / "r"))
    _one_line_error(code, err, "--out")


def test_unknown_task_for_methods(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "methods", "--task", "foo")
    _one_line_error(code, err, "unknown task 'foo'", "node, graph")


def test_datasets_on_a_missing_directory(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "datasets", "--data-dir", str(tmp_path / "nope"))
    _one_line_error(code, err, "is not a directory", "does not exist")


def test_missing_file_hint_names_an_option_that_exists(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "train", "--dataset", "cora", "--data-dir", str(tmp_path),
                           "-p", "epochs=1")
    _one_line_error(code, err, "is missing", "--download")
    for command in ("train", "run"):
        code, out, _ = run_cli(capsys, command, "--help")
        assert code == 0 and "--download" in out


def test_corrupt_files_are_not_available(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    (tmp_path / "npz").mkdir()
    (tmp_path / "npz" / "cora.npz").write_bytes(b"this is not a zip archive")
    (tmp_path / "npz" / "citeseer.npz").write_bytes(b"")
    code, out, _ = run_cli(capsys, "datasets", "--data-dir", str(tmp_path), "--json")
    assert code == 0
    info = {d["name"]: d for d in json.loads(out)}
    assert info["cora-npz"]["available"] is False
    assert info["cora-npz"]["corrupt"] == {"npz/cora.npz": "not a zip archive"}
    assert info["citeseer-npz"]["corrupt"] == {"npz/citeseer.npz": "empty"}
    # a zip cut short (its end record gone) is caught without reading the whole file
    good = Path(os.environ.get("DPGL_DATA_DIR", "/nonexistent")) / "npz" / "cora_ml.npz"
    if good.is_file():
        (tmp_path / "npz" / "cora_ml.npz").write_bytes(good.read_bytes()[:-30])
        code, out, _ = run_cli(capsys, "datasets", "--data-dir", str(tmp_path), "--json")
        info = {d["name"]: d for d in json.loads(out)}
        assert info["cora-ml"]["corrupt"] == {"npz/cora_ml.npz": "truncated zip archive"}
    code, out, _ = run_cli(capsys, "datasets", "--data-dir", str(tmp_path))
    assert "corrupt: npz/cora.npz (not a zip archive)" in out


def test_a_grid_error_lists_every_problem(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    grid = tmp_path / "bad.yaml"
    grid.write_text("name: bad\ndatasets: [csbm]\nmethods: [none]\nseeds: -1\nepsilons: [0]\n")
    code, _, err = run_cli(capsys, "run", str(grid))
    _one_line_error(code, err, "seeds", "epsilons")
    assert "more error" not in err

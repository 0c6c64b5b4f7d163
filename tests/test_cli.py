"""The command line: JSON output, one-line errors, exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import run_cli

FAST = ["-p", "epochs=30", "-p", "patience=10"]


def test_entry_point_train_json_prints_one_object() -> None:
    """The installed entry point, as a subprocess: one JSON object on stdout."""
    r = subprocess.run(
        [sys.executable, "-m", "dpgl.cli", "train", "--dataset", "csbm", "--model", "gcn",
         "--method", "none", "--seed", "0", "--json", *FAST],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    payload = json.loads(lines[0])
    assert 0.5 < payload["test_accuracy"] <= 1.0
    assert payload["val_accuracy"] == payload["metrics"]["val_accuracy"]
    assert "totals" in payload["privacy"]
    assert payload["timing"]["total"] > 0


def test_train_json_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("train", "--dataset", "csbm", "--seed", "3", "--json", *FAST)
    first = json.loads(run_cli(capsys, *args)[1])
    second = json.loads(run_cli(capsys, *args)[1])
    assert first["metrics"] == second["metrics"]


def test_train_table_output_shows_privacy_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "train", "--dataset", "csbm", "--method", "mlp", *FAST)
    assert code == 0
    assert "test_accuracy" in out and "Privacy report" in out


@pytest.mark.parametrize(
    "args, needle",
    [
        (["train", "--dataset", "nope"], "unknown dataset 'nope'"),
        (["train", "--dataset", "csbm", "--method", "nope"], "unknown method 'nope'"),
        (["train", "--dataset", "csbm", "--model", "nope"], "unknown model 'nope'"),
        (["train", "--dataset", "csbm", "-p", "dropout=2"], "parameter 'dropout'"),
        (["train", "--dataset", "csbm", "-p", "dropout"], "NAME=VALUE"),
        (["train", "--dataset", "csbm", "--seed", "-1"], "seed"),
        (["run", "does-not-exist.yaml"], "does-not-exist.yaml"),
        (["report", "missing.sqlite"], "missing.sqlite"),
        (["reproduce", "nope"], "unknown reproduction 'nope'"),
        (["reproduce", "blink", "--merge", "no-such.jsonl"], "--merge 'no-such.jsonl': no such"),
        (["reproduce", "blink", "--device", "tpu"], "tpu"),
        (["reproduce", "blink-pp", "--full", "--param", "knn"], "--param expects NAME=VALUE"),
        (["reproduce", "blink-pp", "--full", "--param", "=40"], "(no name)"),
        (["audit", "nope", "--epsilon", "1"], "nope"),
        (["audit", "rr", "--epsilon", "-1"], "epsilon"),
    ],
)
def test_user_errors_are_one_line_without_traceback(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    code, _, err = run_cli(capsys, *args)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def test_run_grid_then_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: tiny\ndatasets: [csbm]\nmodels: [gcn]\nseeds: 2\nmethods: [none, mlp]\n"
        "params: {epochs: 20, patience: 10, lr: [0.01, 0.02]}\n"
    )
    store = tmp_path / "tiny.sqlite"
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(store), "--quiet",
                           "--report", str(tmp_path / "rep"))
    assert code == 0, err
    table = (tmp_path / "rep" / "results.md").read_text()
    assert "none" in table and "mlp" in table
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(store), "--quiet")
    assert code == 0
    assert "8 already stored" in err
    code, _, err = run_cli(capsys, "report", str(store), "--out", str(tmp_path / "rep2"))
    assert code == 0, err
    assert (tmp_path / "rep2" / "results.csv").exists()


def test_run_threads_sets_each_runs_torch_threads(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """``dpgl run --threads 1``: the runs train on one torch thread, and say so."""
    import torch

    from dpgl.experiments.store import RunStore
    grid = tmp_path / "g.yaml"
    grid.write_text("name: t\ndatasets: [csbm]\nmodels: [gcn]\nseeds: 1\nmethods: [mlp]\n"
                    "params: {epochs: 3, patience: null}\n")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        code, _, err = run_cli(capsys, "run", str(grid), "--store", str(tmp_path / "t.sqlite"),
                               "--quiet", "--threads", "1")
    finally:
        torch.set_num_threads(before)
    assert code == 0, err
    with RunStore(tmp_path / "t.sqlite") as s:
        [row] = list(s.rows())
    assert row["info"]["torch_threads"] == 1
    code, _, err = run_cli(capsys, "run", str(grid), "--threads", "0")
    assert code == 2 and "--threads" in err


def test_audit_command_passes_and_lists(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "audit", "rr", "--epsilon", "1", "--trials", "2000")
    assert code == 0 and out.startswith("audit rr: PASS")
    assert "[x0 vs x1]" in out or "event:" in out      # rich markup does not eat the text
    code, out, _ = run_cli(capsys, "audit", "--list")
    assert code == 0
    for name in ("rr", "blink", "lpgnn-features", "label-krr", "dpsgd", "gap-ndp", "krr"):
        assert name in out.split()
    code, out, _ = run_cli(capsys, "audit", "rr", "--epsilon", "1", "--trials", "2000",
                           "--spend-twice")
    assert code == 1 and out.startswith("audit rr: FAIL")
    code, out, _ = run_cli(capsys, "audit", "broken-rr", "--epsilon", "1", "--trials", "20000")
    assert code == 1 and out.startswith("audit broken-rr: FAIL")
    code, _, err = run_cli(capsys, "audit", "nope")
    assert code == 2 and "unknown audit" in err


def test_one_way_to_pass_a_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #12, finding 6: -p is the way; the old --non-private-fraction flag is hidden,
    still works for one release with a warning, and may not repeat -p."""
    import warnings

    code, out, _ = run_cli(capsys, "train", "--help")
    assert code == 0 and "non-private-fraction" not in out
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = run_cli(capsys, "train", "--dataset", "csbm", "--method", "dprr",
                               "--epsilon", "1", "--non-private-fraction", "0.2",
                               "-p", "non_private_fraction=0.1")
    # the warning is one line of its own, then the one-line error
    assert err.splitlines()[0] == ("warning: --non-private-fraction F is deprecated: use -p "
                                   "non_private_fraction=F (removed in the next release)")
    assert code != 0 and "give the non-private fraction once" in err

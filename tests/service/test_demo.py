"""``dpgl collect demo`` end to end (issue #14; slow: every Cora user enrols and reports over
HTTP, then a GCN is trained)."""

from __future__ import annotations

import json

import pytest

from _cli import run_cli


@pytest.mark.slow
def test_collect_demo_runs_a_round_end_to_end(tmp_path, capsys) -> None:
    out = tmp_path / "demo"
    code, stdout, err = run_cli(capsys, "collect", "demo", "--output", str(out), "--port", "0",
                                "--no-serve", "--quiet")
    assert code == 0, err
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "done"
    assert result["participation"]["rate"] == 1.0
    assert result["metrics"]["test_accuracy"] > 0.6
    assert "test accuracy" in stdout and "result page: http://127.0.0.1:" in stdout
    assert (out / "collection.db").exists()

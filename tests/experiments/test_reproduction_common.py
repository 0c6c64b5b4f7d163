"""Helpers shared by the reproductions: timings that survive resumed runs."""

import json
from pathlib import Path

from dpgl.experiments.reproductions._spec import save_timings


def test_timings_accumulate_over_resumed_invocations(tmp_path: Path) -> None:
    save_timings(tmp_path, True, "day 1", {"table": 100.0, "rq2": 5.0}, recomputed=("rq2",))
    save_timings(tmp_path, True, "day 2", {"table": 0.5, "rq2": 4.0}, recomputed=("rq2",))
    saved = json.loads((tmp_path / "timings.json").read_text())
    assert saved["started"] == "day 1"
    assert saved["seconds"] == {"table": 100.5, "rq2": 4.0}
    # keys written by hand earlier are kept
    path = tmp_path / "timings.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "note": "2 processes"}))
    save_timings(tmp_path, True, "day 4", {"table": 1.0})
    assert json.loads(path.read_text())["note"] == "2 processes"
    # another protocol (--full) starts over
    save_timings(tmp_path, False, "day 3", {"table": 7.0})
    assert json.loads(path.read_text()) == {"started": "day 3", "quick": False,
                                            "seconds": {"table": 7.0}}

"""run_grid: skipping finished runs, failures, fail-fast, Ctrl-C, progress display."""

from __future__ import annotations

import io
import signal

import pytest

from dpgl.experiments.config import RunConfig, RunResult
from dpgl.experiments.grid import GridSpec
from dpgl.experiments.runner import GridInterrupted, run_grid
from dpgl.experiments.store import RunStore


def configs(n: int = 6) -> list[RunConfig]:
    return [RunConfig(dataset="d", method="m", epsilon=1.0, seed=s, params={"lr": 0.1})
            for s in range(n)]


class CountingRun:
    """Fake run function: records calls; fails for seeds in ``fail``."""

    def __init__(self, fail=(), exc=ValueError):
        self.calls: list[int] = []
        self.fail = set(fail)
        self.exc = exc

    def __call__(self, cfg: RunConfig) -> RunResult:
        self.calls.append(cfg.seed)
        if cfg.seed in self.fail:
            raise self.exc(f"boom at seed {cfg.seed}\nsecond line")
        return RunResult(metrics={"val_accuracy": 0.5 + cfg.seed / 100},
                         privacy={"totals": {"epsilon": cfg.epsilon}}, timing={"fit": 0.01})


def test_runs_everything_then_skips_on_rerun(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        run = CountingRun()
        seen = []
        out = run_grid(configs(), store, run, progress=False,
                       on_result=lambda c, r: seen.append((c.seed, r.metrics["val_accuracy"])))
        assert (out.total, out.skipped_existing, out.ran, out.failed) == (6, 0, 6, 0)
        assert out.ok and not out.interrupted and out.remaining == 0
        assert run.calls == [0, 1, 2, 3, 4, 5]  # grid order
        assert seen == [(s, 0.5 + s / 100) for s in range(6)]
        assert len(store) == 6
        row = store.get(configs()[3].key())
        assert row["metrics"] == {"val_accuracy": 0.53}
        assert row["timing"]["fit"] == 0.01 and row["timing"]["total"] >= 0  # total added
        run2 = CountingRun()
        out2 = run_grid(configs(), store, run2, progress=False)
        assert (out2.total, out2.skipped_existing, out2.ran, out2.failed) == (6, 6, 0, 0)
        assert run2.calls == []
        run3 = CountingRun()
        out3 = run_grid(configs(8), store, run3, progress=False)
        assert (out3.skipped_existing, out3.ran) == (6, 2) and run3.calls == [6, 7]
        assert len(store) == 8


def test_duplicate_configs_run_once(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        run = CountingRun()
        out = run_grid(configs(3) + configs(3), store, run, progress=False)
        assert out.total == 3 and run.calls == [0, 1, 2]


def test_failures_are_reported_not_stored(tmp_path, capsys):
    with RunStore(tmp_path / "r.db") as store:
        run = CountingRun(fail={1, 4})
        out = run_grid(configs(), store, run, progress=False)
        assert (out.total, out.ran, out.failed, out.remaining) == (6, 4, 2, 2)
        assert not out.ok
        assert [f.config.seed for f in out.failures] == [1, 4]
        assert out.failures[0].error == "ValueError: boom at seed 1"
        assert out.failures[0].key == configs()[1].key()
        assert "Traceback" in out.failures[0].traceback
        assert not store.has(configs()[1].key()) and not store.has(configs()[4].key())
        assert len(store) == 4
        err = capsys.readouterr().err
        assert "failed: d/gcn/m eps=1 seed=1 lr=0.1: ValueError: boom at seed 1" in err
        # the next invocation retries exactly the failed runs
        run2 = CountingRun()
        out2 = run_grid(configs(), store, run2, progress=False)
        assert run2.calls == [1, 4] and (out2.skipped_existing, out2.ran) == (4, 2)
        assert len(store) == 6


def test_fail_fast_reraises_and_stops(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        run = CountingRun(fail={2}, exc=RuntimeError)
        with pytest.raises(RuntimeError, match="boom at seed 2"):
            run_grid(configs(), store, run, progress=False, fail_fast=True)
        assert run.calls == [0, 1, 2]
        assert len(store) == 2


def test_bad_result_is_a_failure(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        out = run_grid(configs(2), store, lambda c: {"metrics": {"acc": "x"}}, progress=False)
        assert out.failed == 2 and len(store) == 0
        assert out.failures[0].error.startswith("ConfigError: run result: metrics:")
        out = run_grid(configs(2), store, lambda c: {"metrics": {"acc": 0.5}}, progress=False)
        assert out.ran == 2 and store.get(configs(2)[0].key())["metrics"] == {"acc": 0.5}


def test_ctrl_c_during_a_run_stores_nothing_of_it(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        run = CountingRun(fail={3}, exc=KeyboardInterrupt)
        with pytest.raises(KeyboardInterrupt) as info:
            run_grid(configs(), store, run, progress=False)
        assert isinstance(info.value, GridInterrupted)
        outcome = info.value.outcome
        assert outcome.interrupted and outcome.ran == 3 and outcome.remaining == 3
        assert run.calls == [0, 1, 2, 3]
        assert {r["seed"] for r in store.rows()} == {0, 1, 2}


@pytest.fixture
def python_sigint():
    """Python's Ctrl-C handler for the test (a background job inherits SIGINT ignored, and a
    signal raised then would be ignored, as it should be), the caller's back after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_the_write_is_held_until_the_row_is_committed(tmp_path, python_sigint):
    with RunStore(tmp_path / "r.db") as store:
        real_put = store.put
        puts = []

        def put_with_sigint(config, result, grid=None):
            if config.seed == 2:
                signal.raise_signal(signal.SIGINT)  # arrives in the middle of the write
            ok = real_put(config, result, grid=grid)
            puts.append(config.seed)
            return ok

        store.put = put_with_sigint  # type: ignore[method-assign]
        run = CountingRun()
        with pytest.raises(GridInterrupted) as info:
            run_grid(configs(), store, run, progress=False)
        assert puts == [0, 1, 2]  # the write finished before the interrupt was raised
        assert info.value.outcome.ran == 3
        assert {r["seed"] for r in store.rows()} == {0, 1, 2}
        assert run.calls == [0, 1, 2]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_grid_spec_input_and_progress_display(tmp_path, monkeypatch):
    from rich.console import Console

    monkeypatch.setenv("DPGL_PROGRESS_INTERVAL", "0")  # a plain line at every step
    grid = GridSpec.from_dict({"name": "tiny", "datasets": ["d"], "seeds": 2,
                               "epsilons": [1, 2], "methods": ["none", "m"]})
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=120)
    with RunStore(tmp_path / "r.db") as store:
        run = CountingRun()
        out = run_grid(grid, store, run, is_private=lambda m: m == "m", progress=True,
                       console=console)
        assert (out.total, out.ran) == (6, 6)
        assert {r["grid"] for r in store.rows()} == {"tiny"}
        assert [(r["method"], r["epsilon"]) for r in store.rows()][:3] == [
            ("m", 1.0), ("m", 1.0), ("m", 2.0)]
    text = buf.getvalue()
    assert "grid tiny: 6 runs, 0 already stored, 6 to run" in text
    assert "runs 6/6" in text

"""Progress of long steps (dpgl.progress): quiet by default, plain lines without a terminal,
bars with a terminal, nothing with --quiet (issue #13, item 1)."""

from __future__ import annotations

import io

import pytest
from tests._cli import run_cli

from dpgl import progress


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_quiet_by_default_but_steps_still_count(capsys) -> None:
    assert not progress.active()
    with progress.step("work", total=3) as s:
        s.advance()
        s.advance(2, loss=0.5)
    assert (s.completed, s.fields) == (3, {"loss": 0.5})
    assert capsys.readouterr().err == ""


def test_line_reporter_writes_one_line_per_interval_with_the_chain_and_eta() -> None:
    clock, buf = Clock(), io.StringIO()
    rep = progress.LineReporter(buf, interval=5.0, clock=clock)
    with progress.use(rep), progress.step("grid", total=2) as g:
        with progress.step("training", total=10) as t:
            for _ in range(4):
                clock.t += 1.0
                t.advance(loss=0.25)          # 1..4 s: under the interval, nothing yet
            assert buf.getvalue() == ""
            clock.t += 1.0
            t.advance(loss=0.125)             # 5 s since the last line
        g.advance()
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("grid 0/2 > training 5/10 loss 0.125")
    assert "ETA" in lines[0]
    assert len(lines) == 1  # the steps themselves took no real time: no 'done' lines


def test_line_reporter_says_when_a_long_step_ends(monkeypatch) -> None:
    buf = io.StringIO()
    rep = progress.LineReporter(buf, interval=0.0)
    with progress.use(rep), progress.step("estimating") as s:
        s.advance()
    out = buf.getvalue()
    assert "estimating" in out and "done in" in out


def test_rich_reporter_shows_nested_bars_with_values() -> None:
    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    rep = progress.RichReporter(console)
    with progress.use(rep), progress.step("runs", total=2):
        with progress.step("training", total=5) as t:
            t.advance(loss=0.5)
            tasks = rep._progress.tasks
            assert len(tasks) == 2
            assert tasks[1].description.strip() == "training  loss 0.5"
            assert tasks[1].completed == 1 and tasks[1].total == 5
        assert len(rep._progress.tasks) == 1    # a finished step's bar goes away
    assert not rep._tasks


def test_reporter_for_chooses_by_terminal_and_quiet(monkeypatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert progress.reporter_for(quiet=True) is None
    assert isinstance(progress.reporter_for(stream=Tty()), progress.RichReporter)
    monkeypatch.setenv("DPGL_PROGRESS_INTERVAL", "2.5")
    rep = progress.reporter_for(stream=io.StringIO())
    assert isinstance(rep, progress.LineReporter) and rep.interval == 2.5


def test_notes_show_even_when_quiet(capsys) -> None:
    with progress.use(None):
        progress.note("failed: something")
    assert capsys.readouterr().err == "failed: something\n"


@pytest.mark.parametrize("quiet", [False, True])
def test_train_shows_progress_on_stderr_unless_quiet(capsys, monkeypatch, quiet: bool
                                                     ) -> None:
    monkeypatch.setenv("DPGL_PROGRESS_INTERVAL", "0")
    args = ["train", "--dataset", "csbm", "--method", "rr", "--epsilon", "1",
            "-p", "epochs=3", "--json"] + (["--quiet"] if quiet else [])
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    assert '"test_accuracy"' in out           # the result is on stdout either way
    if quiet:
        assert err == ""
    else:
        assert "loading csbm" in err
        assert "users randomize, the server estimates (RRTransform" in err
        assert "training 3/3 loss" in err and "val_accuracy" in err

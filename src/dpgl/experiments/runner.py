"""Run a grid into a :class:`~dpgl.experiments.store.RunStore`, resumably.

:func:`run_grid` runs every configuration whose key is not yet stored, in the grid's
deterministic order, and stores each one as soon as it finishes. Resume semantics:

* A finished run is one row; re-running the same grid skips it (``skipped_existing``).
* A run that raised is reported (``failures``) and NOT stored, so the next invocation
  retries it. With ``fail_fast=True`` the first failure stops the grid and is re-raised.
* Ctrl-C (SIGINT) during a run abandons that run (nothing stored); during the store write it
  is held back until the row is committed. Either way the grid stops and
  :class:`GridInterrupted` (a ``KeyboardInterrupt``; the CLI exits with 130) is raised.
* ``kill -9`` at any point loses at most the run in progress (SQLite's transaction is atomic).

Since the stored rows depend only on the configurations (the run function must be
deterministic given its :class:`RunConfig`), an interrupted-and-resumed grid ends with the same
rows, hence the same report, as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dpgl import progress
from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.experiments.grid import GridSpec
from dpgl.experiments.store import RunStore

RunFn = Callable[[RunConfig], RunResult]


@dataclass(frozen=True)
class RunFailure:
    """A run that raised: its configuration and a one-line ``Type: message``."""

    config: RunConfig
    error: str
    traceback: str = ""

    @property
    def key(self) -> str:
        return self.config.key()


@dataclass
class GridOutcome:
    """What :func:`run_grid` did. ``total`` = distinct configurations in the grid."""

    total: int = 0
    skipped_existing: int = 0
    ran: int = 0
    failed: int = 0
    failures: list[RunFailure] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def remaining(self) -> int:
        """Configurations neither stored before nor stored now (failed or not reached)."""
        return self.total - self.skipped_existing - self.ran

    @property
    def ok(self) -> bool:
        """Every configuration of the grid is stored."""
        return self.remaining == 0

    def summary(self) -> str:
        text = (f"{self.total} runs: {self.skipped_existing} already stored, {self.ran} ran, "
                f"{self.failed} failed ({self.seconds:.1f} s)")
        if self.interrupted:
            text += f"; interrupted with {self.remaining} left (re-run to resume)"
        return text


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`run_grid`; ``outcome`` says what was stored before."""

    def __init__(self, outcome: GridOutcome) -> None:
        super().__init__(outcome.summary())
        self.outcome = outcome


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold SIGINT back until the block is done (only possible in the main thread)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is None):  # not ours to replace
        yield
        return
    received: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    except ValueError:  # signals unavailable here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:  # deliver the held-back signal to the handler it was meant for
            if callable(previous):
                previous(signal.SIGINT, None)
            else:
                signal.raise_signal(signal.SIGINT)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class _Display:
    """The grid's progress (a :mod:`dpgl.progress` step, one unit per run; a run's own steps
    nest inside it: :func:`~dpgl.experiments.execute.execute_run` names the run), or nothing
    in quiet mode; failures are always shown, one line each."""

    def __init__(self, enabled: bool, console: Any = None) -> None:
        self.enabled = enabled
        self.console = console
        self._stack = contextlib.ExitStack()
        self.step: progress.Step | None = None

    def start(self, title: str, todo: int) -> None:
        if self.enabled and not progress.active():  # the caller did not choose a display
            self._stack.enter_context(progress.use(progress.reporter_for(console=self.console)))
        elif not self.enabled:
            self._stack.enter_context(progress.use(None))
        if self.enabled:
            progress.note(title)
        self.step = self._stack.enter_context(progress.step("runs", total=todo))

    def advance(self) -> None:
        if self.step is not None:
            self.step.advance()

    def message(self, text: str) -> None:
        progress.note(text)

    def stop(self) -> None:
        self.step = None
        self._stack.close()


@dataclass(frozen=True)
class _CheckedRun:
    """``run_fn`` whose result is parsed as a :class:`RunResult` where it runs (a malformed
    result is that run's failure); picklable when ``run_fn`` is, for worker processes."""

    run_fn: RunFn

    def __call__(self, cfg: RunConfig) -> RunResult:
        result = self.run_fn(cfg)
        return result if isinstance(result, RunResult) else \
            RunResult.parse(result, "run result")


def run_grid(grid: GridSpec | Sequence[RunConfig], store: RunStore, run_fn: RunFn, *,
             progress: bool = True, fail_fast: bool = False,
             on_result: Callable[[RunConfig, RunResult], Any] | None = None,
             is_private: Callable[[str], bool] | None = None,
             grid_name: str | None = None, console: Any = None,
             executor: Any = None) -> GridOutcome:
    """Run every configuration of ``grid`` not yet in ``store`` and store each result.

    ``run_fn(config) -> RunResult`` executes one run (the CLI passes
    ``dpgl.experiments.execute.execute_run``); it must be deterministic given the config.
    ``grid`` is a :class:`GridSpec` (expanded with ``is_private``) or a list of configs.
    ``progress=False`` is quiet mode (no bar; failures still go to stderr as one line).
    ``on_result(config, result)`` is called after each run is stored. ``grid_name`` (default:
    the GridSpec's name) is written to the store's ``grid`` column. ``executor``: None runs
    here, one run after another; a :class:`dpgl.experiments.executors.ProcessExecutor` or
    :class:`~dpgl.experiments.executors.DaskExecutor` runs them in worker processes or on a
    Dask cluster (``run_fn`` must be picklable) while this process alone writes the store.
    See the module docstring for failure and interruption behaviour.
    """
    name: str | None
    if isinstance(grid, GridSpec):
        configs = grid.expand(is_private)
        name = grid_name if grid_name is not None else grid.name
    else:
        configs = list(grid)
        name = grid_name
        for i, c in enumerate(configs):
            if not isinstance(c, RunConfig):
                raise ConfigError(f"grid entry {i} is a {type(c).__name__}, not a RunConfig")
    unique: dict[str, RunConfig] = {}
    for c in configs:
        unique.setdefault(c.key(), c)

    start = time.perf_counter()
    done = store.finished_keys()
    outcome = GridOutcome(total=len(unique))
    todo = [(k, c) for k, c in unique.items() if k not in done]
    outcome.skipped_existing = outcome.total - len(todo)

    display = _Display(progress, console)
    display.start(f"grid {name or '(unnamed)'}: {outcome.total} runs, "
                  f"{outcome.skipped_existing} already stored, {len(todo)} to run", len(todo))

    def store_result(cfg: RunConfig, result: Any, wall: float) -> None:
        """Store one finished run (its wall time as ``total`` unless it timed itself)."""
        if "total" not in result.timing:
            result = result.model_copy(update={"timing": {**result.timing, "total": wall}})
        with _sigint_deferred():
            inserted = store.put(cfg, result, grid=name)
            if inserted:
                outcome.ran += 1
            else:  # another process sharing the store finished it first
                outcome.skipped_existing += 1
        display.advance()
        if inserted and on_result is not None:
            on_result(cfg, result)

    def failed(cfg: RunConfig, error: str, tb: str) -> None:
        outcome.failed += 1
        outcome.failures.append(RunFailure(cfg, error, tb))
        display.message(f"failed: {cfg.label()}: {error}")
        display.advance()

    checked = _CheckedRun(run_fn)
    try:
        if executor is not None:
            pending = [c for k, c in todo if not store.has(k)]
            outcome.skipped_existing += len(todo) - len(pending)
            for _ in range(len(todo) - len(pending)):
                display.advance()
            for done_run in executor.map_unordered(checked, pending):
                cfg = pending[done_run.index]
                if done_run.error is not None:
                    failed(cfg, done_run.error, done_run.traceback)
                    if fail_fast:
                        raise RuntimeError(f"{cfg.label()}: {done_run.error}")
                    continue
                store_result(cfg, done_run.result, done_run.seconds)
            todo = []
        for key, cfg in todo:
            if store.has(key):  # stored meanwhile by another process sharing the file
                outcome.skipped_existing += 1
                display.advance()
                continue
            t0 = time.perf_counter()
            try:
                result = checked(cfg)
            except Exception as exc:
                failed(cfg, _one_line(exc), traceback.format_exc())
                if fail_fast:
                    raise
                continue
            store_result(cfg, result, time.perf_counter() - t0)
    except KeyboardInterrupt:
        outcome.interrupted = True
        outcome.seconds = time.perf_counter() - start
        display.stop()
        display.message(f"interrupted: {outcome.summary()}")
        raise GridInterrupted(outcome) from None
    finally:
        display.stop()
    outcome.seconds = time.perf_counter() - start
    return outcome

"""Progress of long steps: library code reports, the caller decides how it is shown.

Code that can take more than a couple of seconds (loading a dataset, the users' randomizers,
an estimator's iterations, training epochs, audit trials, grid runs) wraps the work in
:func:`step` and calls :meth:`Step.advance` as it goes::

    with progress.step("training gcn", total=epochs) as s:
        for epoch in range(epochs):
            ...
            s.advance(loss=loss, val_accuracy=acc)

By default nothing is shown (a library stays quiet). The CLI installs a reporter with
:func:`use`: :class:`RichReporter` (bars with an ETA on stderr) when stderr is a terminal,
:class:`LineReporter` (one plain line every few seconds) when it is not, nothing with
``--quiet`` (:func:`reporter_for`). Steps nest: a grid's runs contain training epochs.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["LineReporter", "Reporter", "RichReporter", "Step", "note", "reporter_for",
           "step", "use"]

#: Seconds between two plain progress lines (``DPGL_PROGRESS_INTERVAL`` overrides).
DEFAULT_INTERVAL = 5.0


@dataclass(eq=False)
class Step:
    """One long step in progress: what it is, how far it got, the latest values."""

    label: str
    total: int | None = None
    completed: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    parent: Step | None = None
    _reporter: Reporter | None = field(default=None, repr=False)

    def advance(self, n: int = 1, **fields: Any) -> None:
        """``n`` more units done; ``fields`` (loss, metrics, ...) replace the shown values."""
        self.completed += n
        if fields:
            self.fields.update(fields)
        if self._reporter is not None:
            self._reporter.changed(self)

    def update(self, *, completed: int | None = None, total: int | None = None,
               **fields: Any) -> None:
        """Set the position or the total (an estimator that learns how long it will run)."""
        if completed is not None:
            self.completed = completed
        if total is not None:
            self.total = total
        self.fields.update(fields)
        if self._reporter is not None:
            self._reporter.changed(self)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def eta(self) -> float | None:
        """Seconds left at the rate so far (None without a total or before any progress)."""
        if not self.total or self.completed <= 0:
            return None
        return max(0.0, self.elapsed * (self.total - self.completed) / self.completed)

    def describe(self) -> str:
        """``label 50/200 loss 0.531 val_accuracy 0.712`` (no times)."""
        parts = [self.label]
        if self.total:
            parts.append(f"{self.completed}/{self.total}")
        elif self.completed:
            parts.append(str(self.completed))
        parts += [f"{k} {_fmt(v)}" for k, v in self.fields.items()]
        return " ".join(parts)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _seconds(s: float) -> str:
    t = round(s)
    return f"{t // 60}m{t % 60:02d}s" if t >= 60 else f"{t}s"


class Reporter:
    """Shows steps. The base class shows nothing but notes (quiet mode)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    def started(self, step: Step) -> None:
        """A step began."""

    def changed(self, step: Step) -> None:
        """A step advanced."""

    def finished(self, step: Step) -> None:
        """A step ended (also on errors)."""

    def note(self, text: str) -> None:
        """A message that is always shown (a failed run in a grid), one line."""
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Release the display."""


class LineReporter(Reporter):
    """A plain line at most every ``interval`` seconds, for logs and pipes: the innermost
    running steps with their position, values, elapsed time and ETA; a step that ran longer
    than ``interval`` also says when it ends."""

    def __init__(self, stream: TextIO | None = None, interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(stream)
        self.interval = interval
        self.clock = clock
        self._last = clock()

    def _line(self, step: Step) -> str:
        chain = []
        s: Step | None = step
        while s is not None:
            chain.append(s)
            s = s.parent
        text = " > ".join(c.describe() for c in reversed(chain))
        eta = step.eta()
        timing = _seconds(step.elapsed) + (f", ETA {_seconds(eta)}" if eta is not None else "")
        return f"{text} ({timing})"

    def _maybe(self, step: Step) -> None:
        now = self.clock()
        if now - self._last >= self.interval:
            self._last = now
            self.note(self._line(step))

    def started(self, step: Step) -> None:
        self._maybe(step)

    def changed(self, step: Step) -> None:
        self._maybe(step)

    def finished(self, step: Step) -> None:
        if step.elapsed >= self.interval:
            self.note(f"{step.describe()}: done in {_seconds(step.elapsed)}")


class RichReporter(Reporter):
    """One bar per running step (ETA where the total is known) on a rich console; a step's
    bar disappears when it ends."""

    def __init__(self, console: Any = None) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class Count(MofNCompleteColumn):
            """``11/200``, or nothing for a step without a known total."""

            def render(self, task: Any) -> Any:
                return super().render(task) if task.total is not None else Text("")

        self.console = console if console is not None else Console(stderr=True)
        self._progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
            Count(), TimeElapsedColumn(), TimeRemainingColumn(),
            console=self.console, transient=True)
        self._tasks: dict[int, Any] = {}

    def _description(self, step: Step) -> str:
        depth = 0
        s = step.parent
        while s is not None:
            depth, s = depth + 1, s.parent
        text = "  " * depth + step.label
        if step.fields:
            text += "  " + " ".join(f"{k} {_fmt(v)}" for k, v in step.fields.items())
        return text

    def started(self, step: Step) -> None:
        if not self._tasks:
            self._progress.start()
        self._tasks[id(step)] = self._progress.add_task(
            self._description(step), total=step.total, completed=step.completed)

    def changed(self, step: Step) -> None:
        task = self._tasks.get(id(step))
        if task is not None:
            self._progress.update(task, description=self._description(step),
                                  completed=step.completed, total=step.total)

    def finished(self, step: Step) -> None:
        task = self._tasks.pop(id(step), None)
        if task is not None:
            self._progress.remove_task(task)
        if not self._tasks:
            self._progress.stop()

    def note(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        self._tasks.clear()
        self._progress.stop()


_QUIET = Reporter()
_reporter: ContextVar[Reporter] = ContextVar("dpgl_progress_reporter", default=_QUIET)
_current: ContextVar[Step | None] = ContextVar("dpgl_progress_step", default=None)


@contextlib.contextmanager
def step(label: str, total: int | None = None) -> Iterator[Step]:
    """Report a long step (nested in the running one, if any) until the block ends."""
    reporter = _reporter.get()
    s = Step(label, total=total, parent=_current.get(),
             _reporter=None if reporter is _QUIET else reporter)
    token = _current.set(s)
    if s._reporter is not None:
        s._reporter.started(s)
    try:
        yield s
    finally:
        _current.reset(token)
        if s._reporter is not None:
            s._reporter.finished(s)


def note(text: str) -> None:
    """Show one line now, above any bars (shown in quiet mode too)."""
    _reporter.get().note(text)


def active() -> bool:
    """Whether a reporter is installed (something is shown)."""
    return _reporter.get() is not _QUIET


@contextlib.contextmanager
def use(reporter: Reporter | None) -> Iterator[Reporter]:
    """Install ``reporter`` (None: quiet) for the block."""
    r = reporter if reporter is not None else _QUIET
    token = _reporter.set(r)
    try:
        yield r
    finally:
        _reporter.reset(token)
        r.close()


def reporter_for(quiet: bool = False, console: Any = None,
                 stream: TextIO | None = None) -> Reporter | None:
    """The CLI's choice: None when ``quiet``, bars when stderr is a terminal, else plain lines
    every ``DPGL_PROGRESS_INTERVAL`` seconds (default 5)."""
    if quiet:
        return None
    target = stream if stream is not None else sys.stderr
    if console is None and hasattr(target, "isatty") and target.isatty():
        return RichReporter()
    if console is not None:
        if getattr(console, "is_terminal", False):
            return RichReporter(console)
        stream = getattr(console, "file", None) or stream
    raw = os.environ.get("DPGL_PROGRESS_INTERVAL", "")
    try:
        interval = float(raw) if raw else DEFAULT_INTERVAL
    except ValueError:
        interval = DEFAULT_INTERVAL
    return LineReporter(stream, interval=max(0.0, interval))

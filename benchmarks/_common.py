"""Small helpers shared by the benchmark scripts (each run as ``python benchmarks/NAME.py``,
which puts this folder on ``sys.path``)."""

from __future__ import annotations

import shlex
import sys


def csv_items(text: str) -> list[str]:
    """The non-empty, stripped items of a comma-separated option ('' gives [])."""
    return [t.strip() for t in text.split(",") if t.strip()]


def command_line(script: str, argv: list[str] | None) -> str:
    """The command that reproduces this invocation, for the results page."""
    return f"python benchmarks/{script} " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))

"""Small helpers shared by the benchmark scripts (each run as ``python benchmarks/NAME.py``,
which puts this folder on ``sys.path``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterable


def csv_items(text: str) -> list[str]:
    """The non-empty, stripped items of a comma-separated option ('' gives [])."""
    return [t.strip() for t in text.split(",") if t.strip()]


def chosen_names(ap: argparse.ArgumentParser, text: str, every: Iterable[str],
                 known: Iterable[str], kind: str) -> list[str]:
    """The names of a comma-separated option (``all``: ``every``); an unknown one is an
    argument error listing ``known``."""
    names = list(every) if text == "all" else csv_items(text)
    allowed = list(known)
    for n in names:
        if n not in allowed:
            ap.error(f"unknown {kind} {n!r}; choose from {', '.join(allowed)}")
    return names


def command_line(script: str, argv: list[str] | None) -> str:
    """The command that reproduces this invocation, for the results page."""
    return f"python benchmarks/{script} " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))

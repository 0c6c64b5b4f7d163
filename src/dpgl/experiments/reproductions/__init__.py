"""Paper reproductions, run by ``dpgl reproduce NAME [--quick]``.

Each reproduction is a sub-package holding its specification as data (``spec.yaml`` with the
grids of each protocol, ``paper.csv`` with the paper's numbers, ``README.md.j2``) and a small
hook (its ``__init__``) for what is specific to the paper; :mod:`._spec` runs and reports
every reproduction the same way (``docs/reproductions.md``). Packages with a ``spec.yaml`` are
discovered automatically.
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

from dpgl.errors import unknown_name
from dpgl.experiments.reproductions._spec import Reproduction


def available() -> dict[str, Reproduction]:
    """Reproduction name -> reproduction."""
    found: dict[str, Reproduction] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg and (Path(__path__[0]) / info.name / "spec.yaml").exists():
            repro = Reproduction(f"{__name__}.{info.name}")
            found[repro.name] = repro
    return found


def get(name: str) -> Reproduction:
    repros = available()
    if name not in repros:
        raise unknown_name("reproduction", name, list(repros))
    return repros[name]

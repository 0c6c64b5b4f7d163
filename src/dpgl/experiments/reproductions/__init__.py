"""Paper reproductions, one module each, run by ``dpgl reproduce NAME [--quick]``.

A reproduction module defines ``NAME`` (the command name), ``SUMMARY`` (one line) and
``run(out_dir: Path, *, quick: bool, data_dir: Path | None, console) -> list[Path]``, which
runs its grid(s) through the resumable runner (store in ``out_dir``), writes tables, plots and
a ``README.md`` (command, date, measured numbers, paper numbers, gaps explained) into
``out_dir`` and returns the written paths. Modules are discovered automatically.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from dpgl.errors import unknown_name


def available() -> dict[str, ModuleType]:
    """Reproduction name -> module."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            found[module.NAME] = module
    return found


def get(name: str) -> ModuleType:
    repros = available()
    if name not in repros:
        raise unknown_name("reproduction", name, list(repros))
    return repros[name]

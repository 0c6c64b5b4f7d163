"""Lazy package attributes (PEP 562), so that ``import dpgl.x`` costs nothing until a name
is used.

A package lists its public names once, as ordinary imports under ``if TYPE_CHECKING:`` (what
type checkers and readers see); :func:`attach` reads that block from the package's own source
and imports a name's submodule on first access. This is what keeps ``dpgl --help``, ``dpgl
methods`` and argument errors free of the torch / PyG / dp-accounting imports (several seconds
of CPU): see ``benchmarks/cli.py``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _type_checking_imports(init_file: str, package: str) -> dict[str, tuple[str, str]]:
    """``{public name: (module, name in module)}`` from the ``if TYPE_CHECKING:`` imports."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom) or stmt.module is None:
                raise TypeError(f"{package}: only 'from M import N' belongs in the lazy block")
            module = ("." * stmt.level) + stmt.module
            module = importlib.util.resolve_name(module, package) if stmt.level else module
            for alias in stmt.names:
                found[alias.asname or alias.name] = (module, alias.name)
    return found


def attach(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a package whose ``__init__`` lists its names lazily."""
    names = _type_checking_imports(init_file, package)

    def getattr_(name: str) -> Any:
        try:
            module, attr = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        source = importlib.import_module(module)
        try:
            value = getattr(source, attr)
        except AttributeError:  # a submodule listed by name
            value = importlib.import_module(f"{module}.{attr}")
        globals_ = importlib.import_module(package).__dict__
        globals_[name] = value  # later lookups skip __getattr__
        return value

    def dir_() -> list[str]:
        return sorted(set(names) | set(importlib.import_module(package).__dict__))

    return getattr_, dir_

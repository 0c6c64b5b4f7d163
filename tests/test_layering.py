"""The package layering of docs/architecture.md, checked on the import graph: a package imports
only from its own layer or lower ones (module-level and function-level imports alike)."""

from __future__ import annotations

import ast
from pathlib import Path

import dpgl

# lowest first; packages on one line are one layer (they may import each other)
LAYERS: list[set[str]] = [
    {"errors", "rng", "_lazy", "progress", "device"},
    {"privacy", "graph", "datasets"},
    {"mechanisms"},
    {"estimators"},
    {"transforms"},
    {"collection"},
    {"distributed"},
    {"central"},
    {"nn", "train"},
    {"methods"},
    {"audit", "experiments"},
    {"client"},
    {"service"},
    {"cli"},
]
RANK = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
ROOT = Path(dpgl.__file__).parent


def _imports() -> list[tuple[str, str, str]]:
    """(importing file, its package, imported dpgl package) for every dpgl import."""
    out = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT)
        pkg = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if pkg == "__init__":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "dpgl" and len(parts) > 1 and parts[1] != pkg:
                    out.append((str(rel), pkg, parts[1]))
    return out


def test_every_package_has_a_layer() -> None:
    pkgs = {p.name if p.is_dir() else p.stem for p in ROOT.iterdir()
            if (p.is_dir() and (p / "__init__.py").exists()) or
            (p.suffix == ".py" and p.stem != "__init__")}
    assert pkgs == set(RANK), f"add the new packages to LAYERS: {pkgs ^ set(RANK)}"


def test_no_package_imports_from_a_higher_layer() -> None:
    upward = [f"{f} ({pkg}) imports dpgl.{tgt}" for f, pkg, tgt in _imports()
              if RANK[tgt] > RANK[pkg]]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_the_check_sees_imports() -> None:
    """A negative control: the scan finds the known downward imports."""
    found = {(pkg, tgt) for _, pkg, tgt in _imports()}
    assert ("methods", "privacy") in found and ("cli", "experiments") in found

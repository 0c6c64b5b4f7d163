"""constraints.txt pins every distribution dpgl's install pulls in, at the installed version.

The install (Makefile) is `pip install -c constraints.txt -e '.[dev]'`: a dependency of a
dependency that constraints.txt does not name is resolved to whatever the registry has that
day, so two checkouts of one commit could run on different code.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", line)
        assert m, f"constraints.txt: not an exact pin: {line!r}"
        pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def _closure(root: str, extras: set[str]) -> dict[str, str]:
    """Installed name -> version of every distribution reachable from root[extras]."""
    found: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(root, frozenset(extras))]
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        dist = metadata.distribution(name)
        found[canonicalize_name(dist.metadata["Name"])] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker and not any(
                req.marker.evaluate({"extra": e}) for e in (wanted | {""})
            ):
                continue
            todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return found


def test_constraints_are_exact_pins_without_duplicates():
    names = [
        canonicalize_name(line.split("==")[0])
        for line in CONSTRAINTS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(names) == len(set(names))
    assert _pins()["torch"]  # torch must stay pinned (an unpinned one pulls CUDA builds)


def test_every_installed_dependency_is_pinned_at_its_version():
    try:
        installed = _closure("dpgl", {"dev"})
    except metadata.PackageNotFoundError as exc:  # pragma: no cover - partial installs
        pytest.skip(f"dpgl's dependencies are not all installed here: {exc}")
    installed.pop("dpgl")
    pins = _pins()
    unpinned = sorted(f"{n}=={v}" for n, v in installed.items() if n not in pins)
    assert not unpinned, f"add to constraints.txt: {unpinned}"
    moved = sorted(
        f"{n}: pinned {pins[n]}, installed {v}"
        for n, v in installed.items()
        if pins[n] != v and not v.startswith(pins[n] + "+")
    )
    assert not moved, moved

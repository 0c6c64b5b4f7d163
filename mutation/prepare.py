"""Build mutation/work/, the scratch tree that ``make mutation`` runs mutmut in.

mutmut reads its configuration from ``pyproject.toml`` in the working directory and copies the
tree into ``mutants/``. To leave the project's own ``pyproject.toml`` and ``src/`` untouched
this script copies ``src/``, ``tests/`` and ``pyproject.toml`` into ``mutation/work/`` and
appends ``mutation/mutmut.toml`` (the ``[tool.mutmut]`` table) to the copied pyproject.toml.
In the *copy* of each mutated module it then

1. marks every function that is out of scope with ``# pragma: no mutate block``: in the
   partly-mutated modules (``ONLY``) every top-level function/class not listed, and everywhere
   the functions of ``SKIP`` (formatting, serialization, analysis-only code; docs/mutation.md
   gives the reasons);
2. makes ``@property`` and ``@contextlib.contextmanager`` functions mutable: mutmut 3 never
   mutates a decorated function, which would leave out every ``guarantee``/``scale``
   property, i.e. exactly where the charge meets the noise. The decorator line becomes a
   comment and the module ends with ``Cls.f = property(Cls.f)`` (resp.
   ``contextlib.contextmanager``), which is the same object the decorator made.

Both edits keep every line of the module at its number, so mutmut's reports point at the
real source. Usage: python mutation/prepare.py [--keep]   (--keep: keep mutation/work/mutants,
i.e. mutmut's cached results; only functions whose source changed are tested again).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import libcst as cst
import tomllib

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "mutation" / "work"

# Modules of which only some top-level functions are privacy-critical (the methods' budget
# code and the runner's check). Nested functions belong to the function they are in.
ONLY: dict[str, set[str]] = {
    "src/dpgl/methods/dpar.py": {"_calibrate", "_calibrate_sgd", "_appr_randomizer",
                                 "_release", "_paper_em_step", "_paper_sgd_z"},
    "src/dpgl/methods/gap.py": {"_configs", "calibrate_gap"},
    "src/dpgl/methods/sage_ndp.py": {"train_sage"},
    "src/dpgl/methods/features_dpsgd.py": {"train_features", "public_subsample_size",
                                           "_paper_z"},
    "src/dpgl/experiments/execute.py": {"check_report", "_budget"},
}

# Functions and methods never mutated, by name, in every mutated module: none of them draws
# noise, states a guarantee or charges (see docs/mutation.md, "Scope").
SKIP_ANYWHERE: set[str] = {
    # text: repr, rendering, report wording
    "__repr__", "_repr_args", "__str__", "describe", "render", "headline", "_words",
    "guarantee_text", "_fmt_eps", "_fmt_delta", "_total_text", "_budget_words",
    "method_label", "dp_accounting_version",
    # serialization of a finished report (storage format; tests/experiments covers it)
    "to_dict", "from_dict", "_guarantee_from_dict",
    # exact likelihoods / distributions used only by tests and audits, never by a run
    "log_prob", "log_pmf", "log_density", "output_distribution",
    "noisy_degree_distribution", "tail_ge",
}

PRAGMA = "# pragma: no mutate block"
REWRAP = {"property": "property", "contextlib.contextmanager": "contextlib.contextmanager"}


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _mark(fn: cst.FunctionDef | cst.ClassDef) -> cst.FunctionDef | cst.ClassDef:
    body = fn.body
    if not isinstance(body, cst.IndentedBlock):
        return fn
    comment = body.header.comment
    text = PRAGMA if comment is None else f"{comment.value}  {PRAGMA[2:]}"
    header = body.header.with_changes(comment=cst.Comment(text),
                                      whitespace=cst.SimpleWhitespace("  "))
    return fn.with_changes(body=body.with_changes(header=header))


class _Prepare(cst.CSTTransformer):
    def __init__(self, only: set[str] | None) -> None:
        self.only = only
        self.classes: list[str] = []
        self.depth = 0                      # function nesting
        self.rewrap: list[tuple[str, str]] = []   # (target, wrapper)
        self.skipped: list[str] = []
        self.found: set[str] = set()
        self.with_setter: set[tuple[str, str]] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:  # noqa: N802 (libcst visitor names)
        self.classes.append(node.name.value)
        # a property with a setter/deleter keeps its decorator (mutmut leaves it alone)
        for stmt in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.FunctionDef):
                for dec in stmt.decorators:
                    name = _dotted(dec.decorator)
                    if name.endswith((".setter", ".deleter")):
                        self.with_setter.add((node.name.value, name.split(".")[0]))
        return self.depth == 0

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.CSTNode:  # noqa: N802 (libcst visitor names)
        name = self.classes.pop()
        if not self.classes and self.depth == 0 and self.only is not None:
            if name in self.only:
                self.found.add(name)
            else:
                self.skipped.append(name)
                return _mark(updated)
        return updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:  # noqa: N802 (libcst visitor names)
        self.depth += 1
        return False   # nested functions are part of the outer one

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef  # noqa: N802 (libcst visitor names)
                          ) -> cst.CSTNode:
        self.depth -= 1
        name = updated.name.value
        top_level = not self.classes
        in_scope = True
        if top_level and self.only is not None:
            if name in self.only:
                self.found.add(name)
            else:
                in_scope = False
        if name in SKIP_ANYWHERE:
            in_scope = False
        if len(self.classes) > 1:   # methods of nested classes: left as they are
            return updated
        if not in_scope:
            self.skipped.append(".".join([*self.classes, name]))
            return _mark(updated)
        if len(updated.decorators) == 1:
            wrapper = REWRAP.get(_dotted(updated.decorators[0].decorator))
            has_setter = bool(self.classes) and (self.classes[-1], name) in self.with_setter
            if wrapper is not None and not name.startswith("__") and not has_setter:
                target = ".".join([*self.classes, name])
                self.rewrap.append((target, wrapper))
                # the decorator line becomes a comment line: line numbers stay
                dec = updated.decorators[0]
                lead = [*dec.leading_lines,
                        cst.EmptyLine(indent=True, comment=cst.Comment(
                            f"# mutation/prepare.py: @{_dotted(dec.decorator)} re-applied at "
                            "the end of the module"))]
                return updated.with_changes(decorators=[], leading_lines=[
                    *updated.leading_lines, *lead])
        return updated


def prepare_module(path: Path, only: set[str] | None) -> tuple[list[str], list[str]]:
    source = path.read_text()
    visitor = _Prepare(only)
    out = cst.parse_module(source).visit(visitor)
    if only is not None and only - visitor.found:
        raise SystemExit(f"{path}: functions to mutate not found: {sorted(only - visitor.found)}")
    new = out.code
    if new.count("\n") != source.count("\n"):
        raise SystemExit(f"{path}: preparing changed the line count")
    if visitor.rewrap:
        tail = "".join(f"{t} = {w}({t})  # mutation/prepare.py\n" for t, w in visitor.rewrap)
        if "contextlib.contextmanager" in tail and "import contextlib" not in new:
            tail = "import contextlib  # mutation/prepare.py\n" + tail
        new = new.rstrip("\n") + "\n\n\n" + tail
    path.write_text(new)
    return visitor.skipped, [t for t, _ in visitor.rewrap]


CONFTEST_HOOK = '''

# --- added by mutation/prepare.py (mutmut's copy only): targeted tests per mutated module
def pytest_collection_modifyitems(config, items):  # noqa: D103
    import json
    import os
    import pathlib
    import re
    from fnmatch import fnmatchcase

    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    here = pathlib.Path(__file__).parent
    targets = json.loads((here / "_mutation_targets.json").read_text())
    match = re.match(r"^(.*?)\\.x[_\u01c1]", mutant)
    if mutant == "":      # mutmut's clean run: every targeted test, no other
        prefixes = sorted({p for t in targets for p in t["tests"]})
    elif "__mutmut_" not in mutant or match is None:
        return
    else:
        prefixes = next((t["tests"] for t in targets
                         if any(fnmatchcase(match.group(1), m) for m in t["modules"])), None)
    if prefixes is None:
        return
    try:
        durations = json.loads(pathlib.Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        durations = {}
    keep = [it for it in items if it.nodeid.startswith(tuple(prefixes))]
    drop = [it for it in items if not it.nodeid.startswith(tuple(prefixes))]
    if drop:
        config.hook.pytest_deselected(items=drop)
    keep.sort(key=lambda it: durations.get(it.nodeid, 0.0))
    items[:] = keep
'''


def main() -> None:
    keep = "--keep" in sys.argv[1:]
    WORK.mkdir(parents=True, exist_ok=True)
    if not keep and (WORK / "mutants").exists():
        shutil.rmtree(WORK / "mutants")
    for name in ("src", "tests"):
        if (WORK / name).exists():
            shutil.rmtree(WORK / name)
        shutil.copytree(ROOT / name, WORK / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
    pyproject = (ROOT / "pyproject.toml").read_text()
    config_text = (ROOT / "mutation" / "mutmut.toml").read_text()
    (WORK / "pyproject.toml").write_text(pyproject.rstrip("\n") + "\n\n" + config_text)
    mutated = tomllib.loads(config_text)["tool"]["mutmut"]["only_mutate"]
    for rel in mutated:
        skipped, rewrapped = prepare_module(WORK / rel, ONLY.get(rel))
        print(f"{rel}: not mutated {skipped or '-'}; decorator re-applied {rewrapped or '-'}")
    targets = tomllib.loads((ROOT / "mutation" / "targets.toml").read_text())["target"]
    (WORK / "tests" / "_mutation_targets.json").write_text(json.dumps(targets, indent=1))
    conftest = WORK / "tests" / "conftest.py"
    conftest.write_text(conftest.read_text() + CONFTEST_HOOK)
    print(f"prepared {WORK}")


if __name__ == "__main__":
    main()

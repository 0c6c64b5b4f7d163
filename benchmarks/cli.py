"""CPU time of the CLI's quick answers: help, listings and argument errors (issue #13).

Each command runs ``--repeat`` times in a fresh interpreter; the table shows the median CPU
time (user + system of the child process, so load from other processes does not count) and
wall time, against the targets: under 0.5 s of CPU for ``dpgl --help`` and for an unknown
dataset name, under 1 s for ``dpgl methods``. ``--src DIR`` measures another checkout's
``src`` (for before/after numbers: ``git worktree add /tmp/old <commit>``).

    python benchmarks/cli.py --repeat 5
    python benchmarks/cli.py --repeat 5 --src /tmp/old/src --label before
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from _common import command_line, run_python

#: (label, arguments, CPU target in seconds or None)
COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("dpgl --help", ["--help"], 0.5),
    ("dpgl methods", ["methods"], 1.0),
    ("dpgl methods blink-hard", ["methods", "blink-hard"], 1.0),
    ("dpgl datasets", ["datasets"], None),
    ("dpgl train --dataset nope", ["train", "--dataset", "nope"], 0.5),
    ("dpgl train --dataset cora --method nope", ["train", "--dataset", "cora", "--method",
                                                 "nope"], 0.5),
    ("dpgl train ... -p foo=1 (unknown parameter)",
     ["train", "--dataset", "cora", "--method", "rr", "--epsilon", "1", "-p", "foo=1"], 0.5),
]

_RUN = "import sys; from dpgl.cli import main; main(sys.argv[1:])"


def _one(args: list[str], src: Path | None) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit code) of one fresh ``dpgl ARGS``."""
    rc, _, usage = run_python(["-c", _RUN, *args], src, {}, None)
    return usage["cpu"], usage["wall"], rc


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (median shown)")
    ap.add_argument("--src", type=Path, default=None,
                    help="the src/ directory to measure (default: the installed dpgl)")
    ap.add_argument("--label", default="now", help="column label (e.g. before, after)")
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    src = None if args.src is None else args.src.resolve()
    if src is not None and not (src / "dpgl" / "cli.py").is_file():
        ap.error(f"--src {args.src}: no dpgl/cli.py there")
    lines = [f"<!-- {command_line('cli.py', argv)} -->",
             f"| command | CPU s ({args.label}, median of {args.repeat}) | wall s | target "
             "CPU s | exit |", "|---|---:|---:|---:|---:|"]
    for label, cmd, target in COMMANDS:
        runs = [_one(cmd, src) for _ in range(args.repeat)]
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        verdict = "-" if target is None else f"{target:g} ({'ok' if cpu < target else 'MISSED'})"
        lines.append(f"| `{label}` | {cpu:.2f} | {wall:.2f} | {verdict} | {runs[0][2]} |")
        print(lines[-1], flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

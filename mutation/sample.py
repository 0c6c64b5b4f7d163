"""Draw a seeded uniform random sample of the mutants mutmut has not checked yet.

Every mutant of the privacy-critical code takes about five seconds to test on two cores, so
the ~8,000 mutants of ``make mutation`` would take about eleven hours. ``mutation/run.sh``
therefore tests the mutants it has time for in full (the *census*) and, for the rest, a
uniform random sample (mutant sampling: Acree et al. 1979; Zhang et al., "Operator-based and
random mutant selection", ICSE 2013). ``mutation/report.py`` then gives each sampled mutant
the weight population / sample size, so the score is an unbiased estimate for the whole scope
(a stratified estimator: the census is one stratum, the sampled remainder the other), with
its standard error.

Run from mutation/work (``mutmut results`` reads mutants/ there). Writes
``reports/sample.json`` ({"seed", "population", "names"}) and prints the names, one per line.
Usage: python mutation/sample.py SIZE [--seed S]. An existing sample.json is kept and its
names printed again (a resumed run tests the same sample).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "mutation" / "reports" / "sample.json"
MUTMUT = str(Path(sys.executable).with_name("mutmut"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size", type=int)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.size < 1:
        ap.error("SIZE must be a positive integer")
    if SAMPLE.exists():
        names = json.loads(SAMPLE.read_text())["names"]
    else:
        out = subprocess.run([MUTMUT, "results", "--all", "true"], capture_output=True,
                             text=True, check=True).stdout
        pending = sorted(name for name, _, st in (ln.strip().rpartition(": ")
                                                  for ln in out.splitlines())
                         if name and st == "not checked")
        if not pending:
            print("no unchecked mutants: nothing to sample", file=sys.stderr)
            return 0
        names = sorted(random.Random(args.seed).sample(pending, min(args.size, len(pending))))
        SAMPLE.write_text(json.dumps({"seed": args.seed, "population": len(pending),
                                      "names": names}, indent=1) + "\n")
    print("\n".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How much one user uploads per collection round (issue #14), per mechanism, as a function
of the population size n and epsilon: the expected size from the mechanism's formula and the
measured size of the JSON report a device actually sends (``Round.device_report``, encoded
as the service sends it), for a user of degree ``--degree``.

Neighbour lists (edge-LDP): RR and Blink send every id whose randomized bit is 1, about
(n - 1) / (1 + e^eps) + d ids, so their upload grows linearly with n at small epsilon; DPRR
sends about its noisy degree; LocalLap / L-DpGCN send n float64 values (base64) at every
epsilon. Features (feature-LDP, LPGNN multi-bit): m sampled indices and signs, independent
of n. Labels (label-LDP): one integer.

    python benchmarks/collection_report_size.py                 # n = 1e3, 1e4, 1e5; eps 1, 4, 8
    python benchmarks/collection_report_size.py --n 1000000 --eps 1 --mechanisms rr,dprr
"""

from __future__ import annotations

import argparse
import base64
import math
import time
from typing import Any

from _common import chosen_names, command_line, csv_items

MECHANISMS = ("rr", "blink", "dprr", "locallap", "multibit", "1bit", "labels")


def _spec(mech: str, n: int, eps: float, dim: int, classes: int) -> dict[str, Any]:
    base: dict[str, Any] = {"round_id": "size", "population": {"size": n}}
    if mech in ("rr", "dprr", "locallap"):
        base["neighbors"] = {"mechanism": mech, "epsilon": eps}
    elif mech == "blink":
        base["neighbors"] = {"mechanism": "blink-hard", "epsilon": eps}
    elif mech in ("multibit", "1bit"):
        base["features"] = {"mechanism": mech, "epsilon": eps, "dim": dim}
    else:
        base["labels"] = {"epsilon": eps, "classes": classes}
    return base


def _expected(mech: str, item: Any, n: int, eps: float, degree: int) -> tuple[str, float]:
    """(what is sent, its expected count) for a user of degree ``degree``."""
    if mech in ("rr", "blink"):
        e = item.randomizer.eps_a if mech == "blink" else eps
        p = 1.0 / (1.0 + math.exp(e))
        ids = degree * (1 - p) + (n - 1 - degree) * p
        what = f"ids: (n-1-d)/(1+e^{e:g}) + d e^{e:g}/(1+e^{e:g})"
        return (what + (" + noisy degree" if mech == "blink" else ""), ids)
    if mech == "dprr":
        return "ids: about the noisy degree (mean d)", float(degree)
    if mech == "locallap":
        return "n float64 values (base64) + noisy degree", float(n)
    if mech in ("multibit", "1bit"):
        return "m indices + m signs", float(item.m)
    return "one label", 1.0


def _count(mech: str, report: dict[str, Any]) -> int:
    """How many ids / values / indices the report holds."""
    if mech in ("rr", "blink", "dprr"):
        return len(report["neighbors"]["neighbors"])
    if mech == "locallap":
        return len(base64.b64decode(report["neighbors"]["values"])) // 8
    if mech in ("multibit", "1bit"):
        return len(report["features"]["indices"])
    return 1


def measure(n: int, eps: float, mech: str, *, degree: int, dim: int, classes: int,
            seed: int) -> dict[str, Any]:
    import numpy as np

    from dpgl.collection import PrivateData, Round, canonical_json, parse_round_spec, user_rng
    from dpgl.errors import DpglError
    row: dict[str, Any] = {"n": n, "eps": eps, "mechanism": mech, "what": "", "expected": None,
                           "count": None, "bytes": None, "limit": None, "ms": None, "note": ""}
    try:
        rnd = Round(parse_round_spec(_spec(mech, n, eps, dim, classes)))
    except DpglError as e:
        row["note"] = " ".join(str(e).split())[:90]
        return row
    item = next(iter(rnd.items.values()))
    rng = np.random.default_rng(seed)
    index = n // 2
    others = np.delete(np.arange(n), index)
    nb = np.sort(rng.choice(others, size=min(degree, n - 1), replace=False)).tolist()
    private = PrivateData(neighbors=nb, features=rng.uniform(0, 1, dim).tolist(),
                          label=int(rng.integers(classes)))
    times = []
    for _ in range(3):                 # the same draw each time; the fastest of 3 is timed
        t0 = time.perf_counter()
        report = rnd.device_report(private, index, user_rng(seed, index))
        times.append(time.perf_counter() - t0)
    body = canonical_json({"user_id": str(index), "report": report})
    what, expected = _expected(mech, item, n, eps, degree)
    row.update(what=what, expected=expected, count=_count(mech, report), bytes=len(body),
               limit=rnd.max_bytes() + 1024, ms=1e3 * min(times))
    return row


def _size(b: float | None) -> str:
    if b is None:
        return "-"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b:.0f} B"


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| mechanism | n | eps | what one user sends | expected count | measured count | "
           "measured body | server limit | draw ms |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["note"]:
            out.append(f"| {r['mechanism']} | {r['n']:,} | {r['eps']:g} | refused: "
                       f"{r['note']} | - | - | - | - | - |")
            continue
        out.append(f"| {r['mechanism']} | {r['n']:,} | {r['eps']:g} | {r['what']} | "
                   f"{r['expected']:,.0f} | {r['count']:,} | {_size(r['bytes'])} | "
                   f"{_size(r['limit'])} | {r['ms']:.1f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="1000,10000,100000", help="population sizes")
    ap.add_argument("--eps", default="1,4,8", help="epsilons")
    ap.add_argument("--mechanisms", default="all", help=f"any of {', '.join(MECHANISMS)}")
    ap.add_argument("--degree", type=int, default=10, help="the user's true degree")
    ap.add_argument("--dim", type=int, default=1433, help="feature dimension (Cora: 1433)")
    ap.add_argument("--classes", type=int, default=7, help="label classes (Cora: 7)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    mechs = chosen_names(ap, args.mechanisms, MECHANISMS, MECHANISMS, "mechanism")
    ns = [int(float(x)) for x in csv_items(args.n)]
    epss = [float(x) for x in csv_items(args.eps)]
    rows = []
    for mech in mechs:
        for n in ns if mech not in ("multibit", "1bit", "labels") else ns[:1]:
            for eps in epss:
                rows.append(measure(n, eps, mech, degree=args.degree, dim=args.dim,
                                    classes=args.classes, seed=args.seed))
    print(f"<!-- {command_line('collection_report_size.py', argv)} -->")
    print(f"User degree d = {args.degree}; features d = {args.dim} (independent of n); "
          f"labels k = {args.classes} (independent of n). Sizes are the whole HTTP body "
          "(`{\"user_id\": ..., \"report\": ...}`, canonical JSON).\n")
    print(table(rows))


if __name__ == "__main__":
    main()

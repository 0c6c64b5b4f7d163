"""Write mutmut's raw results, the survivors' diffs and the classification to mutation/reports/.

Run from mutation/work after ``mutmut run`` (mutation/run.sh does). Writes

* ``reports/results.txt``: every mutant and its status (``mutmut results --all true``);
* ``reports/survivors.diff``: the diff of every mutant that was not killed;
* ``reports/survivors.md``: every mutant that was not killed, with its verdict and reason;
* ``reports/summary.json``: counts and the score.

Verdicts. A survivor is *budget-breaking* when it can make a run spend more privacy than it
reports or report a guarantee the noise does not give (docs/mutation.md). Each survivor gets
a verdict from, in order: the exact name or glob pattern in ``mutation/classification.toml``
(manual judgements, each with its reason), then the mechanical rules below (``_rule``), which
only recognise mutants that can change nothing but the text of an error message or of a
report label. A survivor no rule or judgement covers is reported as ``unclassified`` and
counted as budget-breaking.
"""

from __future__ import annotations

import collections
import fnmatch
import io
import json
import random
import subprocess
import sys
import tokenize
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "mutation" / "reports"
MUTMUT = str(Path(sys.executable).with_name("mutmut"))

# validators whose arguments after the first are only the value's name in error messages
_VALIDATORS = {"check_epsilon", "check_delta", "check_fraction", "check_positive",
               "check_positive_int", "check_unit", "check_generator", "as_bits",
               "as_finite_float", "as_int_array", "check_num_nodes", "unknown_name"}
# keyword arguments that only name a part / describe it in the report text
_TEXT_KWARGS = {"label", "name", "description", "sensitivity_note", "mechanism", "details"}


def _tokens(line: str) -> list[tokenize.TokenInfo]:
    toks = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if t.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                          tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                continue
            toks.append(t)
    except (tokenize.TokenError, IndentationError):
        pass
    return toks


def _is_text_token(t: tokenize.TokenInfo) -> bool:
    return t.type == tokenize.STRING or (t.type == tokenize.NAME and t.string == "None") \
        or t.string == "," or getattr(tokenize, "FSTRING_START", -1) == t.type


def _context(toks: list[tokenize.TokenInfo], i: int) -> tuple[str, int, str | None]:
    """(called function, index of the argument, keyword) of the call enclosing token i."""
    depth, arg, kw = 0, 0, None
    for j in range(i - 1, -1, -1):
        s = toks[j].string
        if s in ")]}":
            depth += 1
        elif s in "([{":
            if depth == 0:
                name = toks[j - 1].string if j and s == "(" else ""
                return name, arg, kw
            depth -= 1
        elif depth == 0 and s == ",":
            arg += 1
        elif depth == 0 and s == "=" and j and arg == 0 and kw is None:
            kw = toks[j - 1].string
    return "", arg, kw


def _rule(diff: str) -> str | None:
    old = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    new = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    if len(old) != 1 or len(new) != 1:
        return None
    a, b = _tokens(old[0]), _tokens(new[0])
    if not a or not b:
        return None
    p = 0
    while p < min(len(a), len(b)) and a[p].string == b[p].string:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s].string == b[-1 - s].string:
        s += 1
    changed_a, changed_b = a[p:len(a) - s], b[p:len(b) - s]
    if not all(_is_text_token(t) for t in changed_a + changed_b):
        return None
    if not any(t.type == tokenize.STRING for t in changed_a):
        return None
    func, arg, kw = _context(a, p)
    if func in _VALIDATORS and (arg >= 1 or (changed_a and changed_a[0].string == ",")):
        return (f"the name argument of {func}() changed or dropped: the name appears only in "
                "the error message (equivalent for every valid input)")
    if kw in _TEXT_KWARGS:
        return (f"the text of the {kw}= argument changed or dropped: it names/describes the "
                "part in the report, the charge and the noise are unchanged")
    return None


def _load_judgements() -> tuple[dict[str, dict], list[tuple[str, dict]]]:
    path = ROOT / "mutation" / "classification.toml"
    if not path.exists():
        return {}, []
    data = tomllib.loads(path.read_text())
    exact, patterns = {}, []
    for key, value in data.get("mutant", {}).items():
        exact[key] = value
    for entry in data.get("pattern", []):
        patterns.append((entry["match"], entry))
    return exact, patterns


def _estimate(status: dict[str, str], verdict_of: dict[str, str]) -> dict[str, object]:
    """The score over the whole scope: every tested mutant outside the random sample of
    ``reports/sample.json`` counts once (census), every tested mutant of the sample counts
    population / (tested sample size); a 95 % interval from 2,000 seeded bootstrap resamples
    of the sample. Without a sample file this is the score of the tested mutants."""

    def open_bb(name: str) -> bool:
        return verdict_of.get(name) in ("budget-breaking", "unclassified")

    path = REPORTS / "sample.json"
    sample = json.loads(path.read_text()) if path.exists() else {"population": 0, "names": []}
    in_sample = set(sample["names"])
    census = [n for n, st in status.items() if st != "not checked" and n not in in_sample]
    drawn = [n for n in sample["names"] if status.get(n, "not checked") != "not checked"]
    k_c = sum(status[n] == "killed" for n in census)
    o_c = sum(open_bb(n) for n in census)
    ks = [status[n] == "killed" for n in drawn]
    os_ = [open_bb(n) for n in drawn]

    def score(k: list[bool], o: list[bool]) -> float | None:
        w = sample["population"] / len(k) if k else 0.0
        kk, oo = k_c + w * sum(k), o_c + w * sum(o)
        return kk / (kk + oo) if kk + oo else None

    est = score(ks, os_)
    lo = hi = est
    if drawn:
        rng = random.Random(0)
        boots = []
        for _ in range(2000):
            idx = [rng.randrange(len(drawn)) for _ in drawn]
            b = score([ks[i] for i in idx], [os_[i] for i in idx])
            if b is not None:
                boots.append(b)
        boots.sort()
        lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
    # one-sided 95 % Clopper-Pearson bound on the share of open budget-breaking mutants among
    # the unchecked ones (from the sample), and the score that bound implies
    lower = est
    if drawn:
        from scipy import stats
        x = sum(os_)
        p_hi = 1.0 if x == len(drawn) else float(stats.beta.ppf(0.95, x + 1, len(drawn) - x))
        w = sample["population"] / len(drawn)
        kk = k_c + w * sum(ks)
        lower = kk / (kk + o_c + sample["population"] * p_hi)
    return {
        "score_budget_breaking_lower_95": lower,
        "census_tested": len(census),
        "sample_population": sample["population"],
        "sample_tested": len(drawn),
        "sample_killed": sum(ks),
        "sample_open_budget_breaking": sum(os_),
        "score_budget_breaking": est,
        "score_budget_breaking_95ci": [lo, hi],
    }


def main() -> None:
    out = subprocess.run([MUTMUT, "results", "--all", "true"], capture_output=True, text=True,
                         check=True).stdout
    (REPORTS / "results.txt").write_text(out)
    status: dict[str, str] = {}
    for line in out.splitlines():
        name, _, st = line.strip().rpartition(": ")
        if name:
            status[name] = st
    exact, patterns = _load_judgements()
    by_status = collections.Counter(status.values())
    rows, diffs = [], []
    verdicts: collections.Counter[str] = collections.Counter()
    verdict_of: dict[str, str] = {}
    for name in sorted(n for n, s in status.items() if s not in ("killed", "not checked")):
        diff = subprocess.run([MUTMUT, "show", name], capture_output=True, text=True).stdout
        diffs.append(diff.rstrip("\n"))
        judgement = exact.get(name)
        if judgement is None:
            judgement = next((e for pat, e in patterns if fnmatch.fnmatchcase(name, pat)), None)
        if judgement is not None:
            verdict, reason = judgement["verdict"], judgement["reason"]
        elif (reason := _rule(diff)) is not None:
            verdict = "not budget-breaking"
        else:
            verdict, reason = "unclassified", ""
        verdicts[verdict] += 1
        verdict_of[name] = verdict
        body = [ln for ln in diff.splitlines() if ln[:1] in "-+" and ln[:3] not in ("---", "+++")]
        rows.append(f"### `{name}` ({status[name]}): {verdict}\n\n{reason}\n\n```diff\n"
                    + "\n".join(body) + "\n```\n")
    (REPORTS / "survivors.diff").write_text("\n\n".join(diffs) + "\n")
    (REPORTS / "survivors.md").write_text(
        "# Mutants not killed, with verdicts (generated by mutation/report.py)\n\n"
        + "\n".join(rows))
    killed = by_status.get("killed", 0)
    open_bb = verdicts["budget-breaking"] + verdicts["unclassified"]
    summary = {
        "total": len(status),
        "by_status": dict(by_status),
        "survivor_verdicts": dict(verdicts),
        # every killed mutant counts as budget-relevant; a surviving one only if judged so
        "score_budget_breaking_tested": killed / (killed + open_bb) if killed + open_bb else None,
        **_estimate(status, verdict_of),
    }
    (REPORTS / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()

"""The collection server's web pages (issue #14): an overview of every round and of the
budget spent per user (``GET /``), and one page per round (``GET /rounds/{id}``) with what
it collects, its participation over time, and its result and privacy report.

Plain HTML and CSS with inline SVG plots drawn here (no JavaScript, nothing fetched from
elsewhere; the Content-Security-Policy allows neither). Every string from the database is
escaped. The pages show aggregates only: no user id and no report is ever rendered.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import quote

__all__ = ["add_pages", "histogram_svg", "participation_svg"]

_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                               "img-src data:; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

_CSS = """
:root { --fg: #1f2933; --muted: #616e7c; --line: #d9e2ec; --bg: #f5f7fa; --card: #fff;
        --accent: #2f6fbf; --ok: #1f7a4d; --bad: #b42318; --warn: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
       sans-serif; color: var(--fg); background: var(--bg); }
header { background: #102a43; color: #fff; padding: 12px 24px; }
header a { color: #fff; text-decoration: none; font-weight: 600; }
main { max-width: 980px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 1.6rem; margin: 8px 0 16px; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 0 0 12px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
          padding: 16px 20px; margin: 0 0 18px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line);
         vertical-align: top; overflow-wrap: anywhere; }
th { color: var(--muted); font-weight: 600; font-size: 0.85rem; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: var(--accent); }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 1px 9px; border-radius: 999px; font-size: 0.8rem;
         font-weight: 600; border: 1px solid currentColor; }
.badge.open { color: var(--accent); } .badge.done { color: var(--ok); }
.badge.failed { color: var(--bad); } .badge.closed { color: var(--warn); }
.bar { display: inline-block; width: 80px; height: 8px; background: var(--line);
       border-radius: 4px; vertical-align: middle; margin-right: 6px; overflow: hidden; }
.bar span { display: block; height: 100%; background: var(--accent); }
.headline { display: flex; gap: 28px; align-items: center; flex-wrap: wrap; }
.big { font-size: 3.2rem; font-weight: 700; line-height: 1.1; color: var(--ok); }
.note { padding: 10px 14px; border-radius: 6px; background: #fff8e1;
        border: 1px solid #f0d48a; }
.note.bad { background: #fdecea; border-color: #f3b4ab; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f0f4f8;
      border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
      font-size: 0.82rem; line-height: 1.45; }
.units { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr));
         gap: 16px; margin-top: 16px; }
.unit svg.plot { max-width: 480px; }
svg.plot { width: 100%; height: auto; display: block; }
svg text { font-family: system-ui, "DejaVu Sans", sans-serif; fill: #334e68; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
"""

_ITEM_NAMES = {"neighbors": "neighbour list", "features": "feature vector", "labels": "label"}
_ITEM_UNITS = {"neighbors": "edge-LDP", "features": "feature-LDP", "labels": "label-LDP"}


# ---------------------------------------------------------------------- formatting
def _e(value: Any) -> str:
    """``value`` as escaped HTML text."""
    return escape(str(value), quote=True)


def _num(x: Any) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _when(ts: Any) -> str:
    if not isinstance(ts, (int, float)) or not math.isfinite(ts):
        return "none"
    try:
        return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return "none"


def _round_href(round_id: str) -> str:
    return "/rounds/" + quote(round_id, safe="")


def _badge(status: str) -> str:
    cls = status if status in ("open", "closed", "done", "failed") else "closed"
    return f'<span class="badge {cls}">{_e(status)}</span>'


def _is_score(name: str, value: float) -> bool:
    return 0.0 <= value <= 1.0 and any(k in name for k in ("accuracy", "f1", "auc"))


def _label(name: str) -> str:
    """A metric or info key for people: ``test_f1_macro`` -> ``test F1 macro``."""
    return " ".join("F1" if w == "f1" else "AUC" if w == "auc" else w
                    for w in str(name).split("_"))


def _metric(name: str, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and \
            _is_score(name, float(value)):
        return _pct(float(value))
    return _num(value)


def _page(title: str, body: str, status: int = 200) -> Any:
    from fastapi.responses import HTMLResponse
    html = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            f'<header><a href="/">dpgl collection server</a></header>'
            f"<main>{body}</main></body></html>")
    return HTMLResponse(html, status_code=status, headers=_HEADERS)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], num: Sequence[int] = ()) -> str:
    """A table of already-escaped cells; columns in ``num`` are right-aligned."""
    def cls(i: int) -> str:
        return ' class="num"' if i in num else ""
    th = "".join(f"<th{cls(i)}>{h}</th>" for i, h in enumerate(head))
    trs = "".join("<tr>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(r)) +
                  "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


# ---------------------------------------------------------------------- SVG plots
def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if not hi > lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, k = [], 0
    while first + k * step <= hi + 1e-9 * step:
        out.append(round(first + k * step, 10))
        k += 1
    return out


def _svg_open(w: int, h: int, title: str) -> str:
    return (f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" '
            f'width="{w}" height="{h}" role="img" aria-label="{_e(title)}">'
            f"<title>{_e(title)}</title>"
            f'<text x="{w / 2:.0f}" y="20" text-anchor="middle" font-size="15" '
            f'font-weight="600">{_e(title)}</text>')


def participation_svg(times: Sequence[float], start: float | None, population: int,
                      minimum: float = 0.0, end: float | None = None) -> str:
    """Cumulative reports against the time since the round opened, as inline SVG."""
    w, h, left, right, top, bottom = 640, 280, 58, 20, 34, 48
    pw, ph = w - left - right, h - top - bottom
    title = "Participation over time"
    t0 = start if start is not None else (times[0] if times else 0.0)
    last = max([t0, *times, *([end] if end is not None else [])])
    span = last - t0
    unit, div = next(((u, d) for u, d in (("days", 86400.0), ("hours", 3600.0),
                                             ("minutes", 60.0)) if span >= 2 * d),
                     ("seconds", 1.0))
    xmax = max(span / div, 1.0)
    xt = _nice_ticks(0.0, xmax, 6)
    xmax = max(xmax, xt[-1])
    ymax = max(population, len(times), 1)
    yt = [t for t in _nice_ticks(0.0, ymax, 5) if t == int(t)]
    ymax = max(ymax, yt[-1])

    def x(v: float) -> float:
        return left + pw * v / xmax

    def y(v: float) -> float:
        return top + ph * (1 - v / ymax)

    out = [_svg_open(w, h, title)]
    for t in yt:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                   f'stroke="#e4e7eb"/><text x="{left - 6}" y="{y(t) + 4:.1f}" '
                   f'text-anchor="end" font-size="11">{t:g}</text>')
    for t in xt:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top + ph}" y2="{top + ph + 5}" '
                   f'stroke="#52606d"/><text x="{x(t):.1f}" y="{top + ph + 18}" '
                   f'text-anchor="middle" font-size="11">{t:g}</text>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" '
               f'stroke="#52606d"/><line x1="{left}" x2="{left}" y1="{top}" '
               f'y2="{top + ph}" stroke="#52606d"/>')
    out.append(f'<text x="{left + pw / 2:.0f}" y="{h - 8}" text-anchor="middle" '
               f'font-size="12">{_e(unit)} since the round opened</text>'
               f'<text transform="translate(16 {top + ph / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle" font-size="12">reports received</text>')
    guides = [(population, f"population {population}", "#9aa5b1")] if population > 0 else []
    if minimum > 0 and population > 0:
        need = minimum * population
        guides.append((need, f"minimum {need:g} ({100 * minimum:g}%)", "#c27c0e"))
    for v, label, colour in guides:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   f'stroke="{colour}" stroke-dasharray="5 4"/>'
                   f'<text x="{left + pw - 4}" y="{y(v) - 5:.1f}" text-anchor="end" '
                   f'font-size="11" style="fill:{colour}">{_e(label)}</text>')
    if times:
        path = [f"M{x(0):.1f},{y(0):.1f}"]
        for i, t in enumerate(times):
            path.append(f"H{x((t - t0) / div):.1f}V{y(i + 1):.1f}")
        path.append(f"H{x(span / div):.1f}")
        out.append(f'<path d="{"".join(path)}" fill="none" stroke="#2f6fbf" '
                   f'stroke-width="2.2"/>')
    else:
        out.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph / 2:.0f}" text-anchor="middle" '
                   f'font-size="13">no reports yet</text>')
    out.append("</svg>")
    return "".join(out)


def histogram_svg(values: Sequence[float], cap: float, unit: str) -> str:
    """Users per spent epsilon (one bar per value, or ten bins when values are many)."""
    w, h, left, right, top, bottom = 420, 240, 46, 14, 40, 50
    pw, ph = w - left - right, h - top - bottom
    title = f"Spent {unit} budget per user"
    distinct = sorted(set(values))
    if len(distinct) <= 10:
        labels = [f"{v:g}" for v in distinct]
        counts = [sum(1 for x in values if x == v) for v in distinct]
    else:
        hi = max(cap, max(values))
        width = hi / 10
        counts = [0] * 10
        for v in values:
            counts[min(int(v / width), 9)] += 1
        labels = [f"{i * width:.3g}–{(i + 1) * width:.3g}" for i in range(10)]
    ymax = max(max(counts, default=0), 1) * 1.12  # room for the count above the tallest bar
    yt = [t for t in _nice_ticks(0.0, ymax, 4) if t == int(t)]
    out = [_svg_open(w, h, title)]
    for t in yt:
        yy = top + ph * (1 - t / ymax)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" '
                   f'stroke="#e4e7eb"/><text x="{left - 6}" y="{yy + 4:.1f}" '
                   f'text-anchor="end" font-size="11">{t:g}</text>')
    slot = pw / max(len(counts), 1)
    bw = min(slot * 0.7, 60)
    for i, (label, c) in enumerate(zip(labels, counts, strict=True)):
        cx = left + slot * (i + 0.5)
        bh = ph * c / ymax
        out.append(f'<rect x="{cx - bw / 2:.1f}" y="{top + ph - bh:.1f}" width="{bw:.1f}" '
                   f'height="{bh:.1f}" fill="#2f6fbf" rx="2"/>'
                   f'<text x="{cx:.1f}" y="{top + ph - bh - 4:.1f}" text-anchor="middle" '
                   f'font-size="11">{c}</text>'
                   f'<text x="{cx:.1f}" y="{top + ph + 16}" text-anchor="middle" '
                   f'font-size="{11 if len(counts) <= 6 else 9}">{_e(label)}</text>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" '
               f'stroke="#52606d"/>'
               f'<text x="{left + pw / 2:.0f}" y="{h - 10}" text-anchor="middle" '
               f'font-size="12">ε spent (lifetime cap {cap:g})</text>'
               f'<text transform="translate(14 {top + ph / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle" font-size="12">users</text></svg>')
    return "".join(out)


# ---------------------------------------------------------------------- pages
def _result_or_none(db: Any, round_id: str) -> dict[str, Any] | None:
    from dpgl.service.db import NotFoundError
    try:
        return db.result(round_id)
    except NotFoundError:
        return None


def _test_accuracy(result: dict[str, Any] | None) -> float | None:
    metrics = (result or {}).get("metrics")
    v = metrics.get("test_accuracy") if isinstance(metrics, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _overview(db: Any) -> str:
    rounds = db.list_rounds()
    rows = []
    for r in reversed(rounds):  # newest first
        result = _result_or_none(db, r["round_id"]) if r["has_result"] else None
        status = str(result.get("status", r["status"])) if result else r["status"]
        pop, got = r["population"], r["reports"]
        rate = got / pop if pop else 0.0
        acc = _test_accuracy(result)
        rows.append([
            f'<a href="{_e(_round_href(r["round_id"]))}">{_e(r["round_id"])}</a>',
            _badge(status),
            f"{got} / {pop}",
            f'<span class="bar"><span style="width:{min(rate, 1) * 100:.0f}%"></span></span>'
            f"{_pct(rate)}",
            "—" if acc is None else f"<strong>{_pct(acc)}</strong>",
            _e(_when(r["created_at"])),
        ])
    table = _table(["Round", "Status", "Reports", "Participation", "Test accuracy",
                    "Opened"], rows, num=(2, 4)) if rows else \
        '<p class="muted">No rounds yet.</p>'
    return (f"<h1>Collection rounds</h1><section><h2>Rounds ({len(rounds)})</h2>{table}"
            f"</section>{_budget(db)}")


def _budget(db: Any) -> str:
    spent = db.budget_spent()
    lifetime = db.lifetime()
    n = len(spent)
    rows, plots = [], []
    for unit in sorted(set(lifetime) | {u for s in spent.values() for u in s}):
        cap = lifetime.get(unit)
        values = sorted(s.get(unit, 0.0) for s in spent.values())
        used = sum(1 for v in values if v > 0)
        at_cap = sum(1 for v in values if cap is not None and v >= cap * (1 - 1e-12))
        rows.append([_e(unit), "none" if cap is None else f"ε = {cap:g}", f"{used} of {n}",
                     f"{values[len(values) // 2]:g}" if values else "—",
                     f"{values[-1]:g}" if values else "—", str(at_cap)])
        if used:
            plots.append(f'<div class="unit">{histogram_svg(values, cap or values[-1], unit)}'
                         "</div>")
    table = _table(["Unit", "Lifetime cap per user", "Users who spent some", "Median ε",
                    "Max ε", "At the cap"], rows, num=(2, 3, 4, 5))
    return (f"<section><h2>Privacy budget per user</h2><p>{n} enrolled users. Each round "
            f"reserves its per-user charge for every member of its population when it opens; "
            f"a round that would take anyone past the lifetime cap is refused.</p>{table}"
            f'<div class="units">{"".join(plots)}</div></section>')


def _collected(spec: dict[str, Any], charge: dict[str, Any]) -> str:
    rows = []
    for key in ("neighbors", "features", "labels"):
        item = spec.get(key)
        if not isinstance(item, dict):
            continue
        mech = item.get("mechanism", "k-ary randomized response" if key == "labels" else "—")
        details = ", ".join(f"{_e(k)} = {_e(_num(v))}" for k, v in sorted(item.items())
                            if k not in ("mechanism", "epsilon"))
        unit = _ITEM_UNITS[key]
        c = charge.get(unit) if isinstance(charge.get(unit), dict) else {}
        rows.append([_e(_ITEM_NAMES[key]), _e(mech), _e(_num(item.get("epsilon", "—"))),
                     _e(unit), f'ε = {_e(_num(c.get("epsilon", "—")))}, '
                     f'δ = {_e(_num(c.get("delta", "—")))}', details or "—"])
    if not rows:
        return '<p class="muted">The round\'s spec names no collected item.</p>'
    return _table(["Item", "Mechanism", "ε", "Unit", "Charge per member", "Parameters"], rows,
                  num=(2,))


def _facts(pairs: Sequence[tuple[str, str]]) -> str:
    return '<dl class="facts">' + "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in pairs) \
        + "</dl>"


def _result_section(info: dict[str, Any], result: dict[str, Any] | None) -> str:
    if result is None:
        msg = ("This round is not closed yet: the result appears here once the operator "
               "closes it." if info["status"] == "open" else
               "This round is closed; its result is not stored yet.")
        return f'<section><h2>Result</h2><p class="note">{_e(msg)}</p></section>'
    parts = ["<section><h2>Result</h2>"]
    if result.get("status") == "failed":
        parts.append(f'<p class="note bad">The round failed: {_e(result.get("reason"))}</p>')
    acc = _test_accuracy(result)
    part = result.get("participation") if isinstance(result.get("participation"), dict) \
        else {}
    head = []
    if acc is not None:
        head.append(f'<div><div class="big">{_pct(acc)}</div><div class="muted">test '
                    f"accuracy</div></div>")
    train = result.get("train") if isinstance(result.get("train"), dict) else {}
    facts = [("status", _badge(str(result.get("status", "—")))),
             ("closed", _e(_when(result.get("closed_at"))))]
    if part:
        facts.append(("participation", _e(f"{part.get('reports', '—')} of "
                                          f"{part.get('population', '—')} users")
                      + (f" ({_pct(part['rate'])})" if isinstance(part.get("rate"),
                                                                  (int, float)) else "")))
    if train:
        facts.append(("model", _e(f"{train.get('model', '—')} on {train.get('dataset', '—')},"
                                  f" {train.get('epochs', '—')} epochs, seed "
                                  f"{train.get('seed', '—')}")))
    head.append(_facts(facts))
    parts.append(f'<div class="headline">{"".join(head)}</div>')
    metrics = result.get("metrics") if isinstance(result.get("metrics"), dict) else {}
    others = [(k, v) for k, v in sorted(metrics.items()) if k != "test_accuracy"]
    if others:
        parts.append("<h2 style='margin-top:16px'>Metrics</h2>" + _table(
            ["Metric", "Value"], [[_e(_label(k)), _e(_metric(k, v))] for k, v in others], num=(1,)))
    parts.append("</section>")
    privacy = result.get("privacy") if isinstance(result.get("privacy"), dict) else {}
    if privacy:
        text = str(privacy.get("text") or privacy.get("summary") or "")
        headline, _, rest = text.strip("\n").partition("\n")
        per_user = privacy.get("per_user") if isinstance(privacy.get("per_user"), dict) else {}
        rows = [[_e(u), _e(_num(g.get("epsilon"))), _e(_num(g.get("delta")))]
                for u, g in sorted(per_user.items()) if isinstance(g, dict)]
        parts.append("<section><h2>Privacy report</h2>"
                     f'<p class="privacy-headline"><strong>{_e(headline)}</strong></p>'
                     + (f"<pre>{_e(rest.rstrip())}</pre>" if rest.strip() else "")
                     + ("<h2>What each user spent in this round</h2>" +
                        _table(["Unit", "ε", "δ"], rows, num=(1, 2)) if rows else "")
                     + "</section>")
    extra = result.get("info") if isinstance(result.get("info"), dict) else {}
    if extra:
        parts.append("<section><details><summary>Estimator and training details "
                     f"({len(extra)})</summary>" + _table(
                         ["Name", "Value"], [[_e(_label(k)), _e(_num(v))] for k, v in
                                             sorted(extra.items())], num=(1,))
                     + "</details></section>")
    return "".join(parts)


def _round_page(db: Any, round_id: str) -> str:
    info = db.round(round_id)
    listed = next((r for r in db.list_rounds() if r["round_id"] == round_id), {})
    spec = info["spec"] if isinstance(info.get("spec"), dict) else {}
    result = _result_or_none(db, round_id)
    times = db.received_times(round_id)
    population = int(listed.get("population", 0))
    minimum = spec.get("min_participation", 0.0)
    minimum = float(minimum) if isinstance(minimum, (int, float)) else 0.0
    end = result.get("closed_at") if result else None
    if result is None and info["status"] == "open":  # up to now (or the passed deadline)
        deadline = info.get("deadline")
        now = float(db.clock())
        end = min(now, deadline) if isinstance(deadline, (int, float)) else now
    status = str(result.get("status", info["status"])) if result else info["status"]
    train = spec.get("train") if isinstance(spec.get("train"), dict) else None
    facts = [("status", _badge(status)), ("opened", _e(_when(listed.get("created_at")))),
             ("deadline", _e(_when(info.get("deadline")))),
             ("reports", _e(f"{len(times)} of {population} users "
                            f"({_pct(len(times) / population if population else 0.0)})")),
             ("minimum participation", _e(f"{100 * minimum:g}%"))]
    if train:
        facts.append(("trains", _e(f"{train.get('model', 'gcn')} on {train.get('dataset')}")))
    plot = participation_svg(times, listed.get("created_at"), population, minimum,
                             end if isinstance(end, (int, float)) else None)
    return (f'<p><a href="/">← all rounds</a></p><h1>Round {_e(round_id)}</h1>'
            f"<section>{_facts(facts)}</section>"
            f"<section><h2>What is collected</h2>{_collected(spec, info['charge'])}</section>"
            f"<section><h2>Participation</h2>{plot}</section>"
            + _result_section(info, result))


def add_pages(app: Any, db: Any) -> None:
    """Register the HTML pages ``GET /`` and ``GET /rounds/{round_id}`` on ``app``."""
    from dpgl.service.db import NotFoundError

    @app.get("/", include_in_schema=False)
    def overview() -> Any:
        return _page("dpgl collection rounds", _overview(db))

    @app.get("/rounds/{round_id}", include_in_schema=False)
    def round_page(round_id: str) -> Any:
        try:
            body = _round_page(db, round_id)
        except NotFoundError:
            return _page("unknown round", f"<h1>Unknown round {_e(round_id)}</h1>"
                         '<p><a href="/">← all rounds</a></p>', status=404)
        return _page(f"round {round_id}", body)

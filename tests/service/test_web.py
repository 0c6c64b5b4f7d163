"""The server's web pages: their HTML (escaping, no user ids, the 404 page) through the ASGI
client, and the pages as a real headless Chromium renders them from a running server.

Screenshots go to the test's temp dir; ``DPGL_WEB_SCREENSHOTS=results/collection`` writes
them there instead (how the committed ``web-round.png`` and ``web-overview.png`` are made).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import httpx
import pytest

from dpgl.collection import PrivateData, Round, canonical_json, parse_round_spec, user_rng
from dpgl.service.app import create_app
from dpgl.service.db import Database
from dpgl.service.operator import open_round
from dpgl.service.server import ServerThread
from dpgl.service.web import histogram_svg, participation_svg

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC: a fixed clock keeps the pages deterministic

PRIVACY_TEXT = """\
Protected: each user's neighbour list, eps = 4 edge-LDP (neighbors: adjacency 3.6 + \
neighbors: degree 0.4). Not protected: node features and training labels (used as is).
  Privacy report, part by part:
    part                  unit         guarantee   mechanism
    neighbors: adjacency  edge-LDP     eps=3.6     BlinkClient(epsilon=4, degree_share=0.1)
    neighbors: degree     edge-LDP     eps=0.4     BlinkClient(epsilon=4, degree_share=0.1)
    node features         feature-LDP  no privacy  public in this round (dataset cora)
    training labels       label-LDP    no privacy  public in this round (dataset cora)
  Totals per unit (basic composition across parts):
    edge-LDP     eps=4
    feature-LDP  no privacy: used as is
    label-LDP    no privacy: used as is
"""


PHONES = ["phone-7c1e", "phone-93ab", "phone-d210", "phone-e44f", "phone-0b5d", "phone-61aa"]


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def _submit(db: Database, clock: Clock, spec_obj: dict[str, Any], who: list[int],
            minutes: list[float]) -> None:
    rnd = Round(parse_round_spec(spec_obj))
    for i, m in zip(who, minutes, strict=True):
        clock.now = T0 + 60 * m
        uid = rnd.users[i]
        near = sorted({(i + 1) % len(rnd), (i + 3) % len(rnd)})
        report = rnd.device_report(PrivateData(neighbors=near), i, user_rng(0, i))
        assert db.submit(spec_obj["round_id"], uid, canonical_json(report))


def _result(round_id: str, reports: int) -> dict[str, Any]:
    return {
        "round_id": round_id, "closed_at": T0 + 3 * 3600, "status": "done", "reason": None,
        "participation": {"reports": reports, "population": 20, "rate": reports / 20},
        "collected": {"neighbors": {"mechanism": "blink-hybrid", "epsilon": 4.0,
                                    "degree_share": 0.1, "symmetrize": "directed"}},
        "privacy": {"text": PRIVACY_TEXT, "summary": "privacy: edge-LDP eps=4",
                    "per_user": {"edge-LDP": {"epsilon": 4.0, "delta": 0.0}}},
        "train": {"dataset": "cora", "model": "gcn", "epochs": 200, "seed": 0},
        "metrics": {"test_accuracy": 0.8137, "val_accuracy": 0.802, "train_accuracy": 0.9714,
                    "test_f1_macro": 0.7921, "test_f1_micro": 0.8137, "val_f1_macro": 0.781},
        "info": {"estimated_edges": 64, "estimator_reported_pairs": 58, "best_epoch": 112},
    }


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """26 enrolled users ("0".."19" and six phones); round "demo" (users "0".."19", 14
    reports) closed with a result; round "week-2" (10 users, 4 reports so far) open.
    Read-only for the tests."""
    clock = Clock()
    db = Database(f"sqlite:///{tmp_path_factory.mktemp('web') / 'server.db'}", clock=clock)
    for u in [*map(str, range(20)), *PHONES]:
        db.enroll(u)
    demo = {"round_id": "demo", "population": {"size": 20},
            "neighbors": {"mechanism": "blink-hybrid", "epsilon": 4},
            "min_participation": 0.5, "train": {"dataset": "cora"}}
    open_round(db, parse_round_spec(demo))
    _submit(db, clock, demo, [3, 0, 7, 1, 12, 5, 9, 2, 15, 11, 4, 18, 8, 6],
            [2, 5, 9, 14, 22, 31, 38, 47, 63, 80, 96, 118, 140, 171])
    db.close_round("demo")
    clock.now = T0 + 3 * 3600
    db.store_result("demo", _result("demo", 14))
    week2 = {"round_id": "week-2", "population": {"users": [*map(str, range(6)), *PHONES[:4]]},
             "neighbors": {"mechanism": "rr", "epsilon": 2},
             "deadline": "2026-01-08T00:00:00Z", "train": {"dataset": "cora"}}
    clock.now = T0 + 4 * 3600
    open_round(db, parse_round_spec(week2))
    _submit(db, clock, week2, [1, 4, 0, 8], [245, 251, 262, 300])
    clock.now = T0 + 6 * 3600  # "now": two hours after week-2 opened
    yield db
    db.close()


@pytest.fixture(scope="module")
def server(scene: Database) -> Iterator[ServerThread]:
    with ServerThread(create_app(scene)) as srv:
        yield srv


@pytest.fixture
def client(server: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


# ---------------------------------------------------------------------- HTML


def test_overview_lists_rounds_and_budget(client: Any) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "script-src" not in r.headers["content-security-policy"]  # no scripts at all
    html = r.text
    assert '<a href="/rounds/demo">demo</a>' in html and "/rounds/week-2" in html
    assert "14 / 20" in html and "70.0%" in html and "81.4%" in html   # demo: done
    assert "4 / 10" in html and "40.0%" in html                        # week-2: open
    # 26 enrolled: 6 in both rounds (eps 6), 14 in demo only (4), 4 in week-2 only (2), 2 idle
    cells = "<td>edge-LDP</td><td>ε = 8</td><td class=\"num\">24 of 26</td>" \
        '<td class="num">4</td><td class="num">6</td><td class="num">0</td>'
    assert cells in html                       # spent: 24 of 26, median 4, max 6, 0 at cap
    assert "<svg" in html and "<script" not in html


def test_round_page_shows_result_and_privacy(client: Any) -> None:
    html = client.get("/rounds/demo").text
    assert '<div class="big">81.4%</div>' in html
    assert "blink-hybrid" in html and "Protected: each user&#x27;s neighbour list" in html
    assert "Participation over time" in html and "minimum 10 (50%)" in html
    assert "97.1%" in html and "test F1 macro" in html          # the other metrics
    assert "2026-01-01 03:00:00 UTC" in html                    # closed at


def test_open_round_page_says_not_closed(client: Any) -> None:
    html = client.get("/rounds/week-2").text
    assert "not closed yet" in html and "4 of 10 users (40.0%)" in html
    assert "2026-01-08 00:00:00 UTC" in html                    # the deadline


def test_pages_show_no_user_ids_or_reports(scene: Database, client: Any) -> None:
    html = client.get("/rounds/demo").text + client.get("/rounds/week-2").text + \
        client.get("/").text
    for r in scene.reports("demo") + scene.reports("week-2"):
        assert r.payload not in html and escape(r.payload) not in html
    assert "phone-d210" in {r.user_id for r in scene.reports("week-2")}   # a reporter
    assert "phone-" not in html


def test_unknown_round_is_an_html_404(client: Any) -> None:
    r = client.get("/rounds/nope%3Cb%3E")
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "Unknown round nope&lt;b&gt;" in r.text and "Traceback" not in r.text


def test_every_string_from_the_database_is_escaped(tmp_path: Path) -> None:
    evil = "<script>alert(1)<\\script>"
    with Database(f"sqlite:///{tmp_path / 'x.db'}") as db:
        db.enroll("a")
        db.enroll("b")
        db.open_round(evil, {"neighbors": {"mechanism": evil, "epsilon": 1, evil: evil},
                             "train": {"dataset": evil}}, ["a", "b"], {"edge-LDP": (1.0, 0.0)})
        db.store_result(evil, {"status": "failed", "reason": evil, "closed_at": T0,
                               "privacy": {"text": evil + "\n" + evil,
                                           "per_user": {evil: {"epsilon": 1, "delta": 0}}},
                               "metrics": {evil: 0.5}, "info": {evil: evil}})
        with ServerThread(create_app(db)) as srv, httpx.Client(base_url=srv.url) as c:
            pages = [c.get("/").text, c.get("/rounds/%3Cscript%3Ealert(1)%3C%5Cscript%3E").text]
    assert "Round &lt;script&gt;alert(1)&lt;\\script&gt;" in pages[1]
    assert "The round failed: &lt;script&gt;" in pages[1]
    assert 'href="/rounds/%3Cscript%3Ealert%281%29%3C%5Cscript%3E"' in pages[0]
    for html in pages:
        assert "<script" not in html


def test_plots_handle_edge_cases() -> None:
    empty = participation_svg([], T0, 5)
    assert "no reports yet" in empty and "<path" not in empty
    one = participation_svg([T0], T0, 1)          # all at once: no division by zero
    assert "<path" in one and ">1</text>" in one and not re.search(r"\de-\d", one)
    assert "population" not in participation_svg([T0], None, 0)
    days = participation_svg([T0 + 86400 * k for k in range(1, 5)], T0, 8)
    assert "days since the round opened" in days
    many = histogram_svg([0.1 * k for k in range(40)], 8.0, "edge-LDP")
    assert many.count("<rect") == 10 and "lifetime cap 8" in many


# ---------------------------------------------------------------------- browser
@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip(f"headless browser not installed ({CHROMIUM}, {CHROMEDRIVER})")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                 "--window-size=1200,900", f"--user-data-dir={tmp_path / 'chromium'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


def _screenshot(driver: Any, path: Path) -> None:
    """The whole page, beyond the window (Chrome DevTools protocol)."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"],
                 "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


def test_pages_in_a_real_browser(server: ServerThread, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    shots = Path(os.environ.get("DPGL_WEB_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    browser.get(server.url + "/")
    assert browser.title == "dpgl collection rounds"
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "demo" in text and "week-2" in text and "81.4%" in text
    assert "edge-LDP ε = 8 24 of 26 4 6 0" in text                # the budget table row
    hist = browser.find_element(By.CSS_SELECTOR, "svg.plot")
    assert hist.size["width"] > 200 and hist.size["height"] > 100
    _screenshot(browser, shots / "web-overview.png")

    browser.find_element(By.LINK_TEXT, "demo").click()
    assert browser.current_url == server.url + "/rounds/demo"
    big = browser.find_element(By.CSS_SELECTOR, ".big")
    assert big.text == "81.4%" and big.size["height"] > 40     # big and clear
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "Protected: each user's neighbour list, eps = 4 edge-LDP" in text
    assert "blink-hybrid" in text and "Participation over time" in text
    plot = browser.find_element(By.CSS_SELECTOR, "svg.plot")
    assert plot.size["width"] > 400 and plot.size["height"] > 150
    line = plot.find_element(By.TAG_NAME, "path")
    assert line.size["width"] > 100 and line.size["height"] > 50
    _screenshot(browser, shots / "web-round.png")

    browser.get(server.url + "/rounds/week-2")
    assert "not closed yet" in browser.find_element(By.TAG_NAME, "body").text

    browser.get(server.url + "/rounds/missing")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Unknown round missing"
    assert (shots / "web-round.png").stat().st_size > 10_000

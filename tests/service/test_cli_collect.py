"""The collection commands (issue #14): `dpgl collect create` from YAML, `dpgl collect close`
(estimate, train, print the accuracy), `dpgl client enroll` / `client submit` against a real
server, and every bad input a one-line `error:` with exit code 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _cli import run_cli
from _collection import ROOMY, enroll, serving
from dpgl.collection import PrivateData, Round, canonical_json, parse_round_spec, user_rng
from dpgl.service.db import Database

USERS = ["ann", "ben", "cy", "dee"]

BLINK_ROUND = """\
round_id: week-1
population:
  users: [ann, ben, cy, dee]
neighbors:
  mechanism: blink-hard
  epsilon: 2.0
labels:
  epsilon: 1.0
  classes: 3
"""


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, (code, err)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture
def db_path(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "server.db"
    with Database(f"sqlite:///{path}") as db:
        enroll(db, USERS)
    yield path


def _write(tmp_path: Path, text: str, name: str = "round.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


# ---------------------------------------------------------------------------- create
def test_collect_create_opens_the_round(capsys, tmp_path: Path, db_path: Path) -> None:
    code, out, err = run_cli(capsys, "collect", "create", str(_write(tmp_path, BLINK_ROUND)),
                             "--db", str(db_path))
    assert code == 0, err
    assert "opened round 'week-1': 4 users" in out
    assert "eps=2 edge-LDP" in out and "eps=1 label-LDP" in out
    with Database(f"sqlite:///{db_path}") as db:
        info = db.round("week-1")
        assert info["status"] == "open"
        assert info["charge"] == {"edge-LDP": {"epsilon": 2.0, "delta": 0.0},
                                  "label-LDP": {"epsilon": 1.0, "delta": 0.0}}
        assert db.spent("ann") == {"edge-LDP": 2.0, "label-LDP": 1.0}
    # the same round again, and a round past the users' lifetime budget, are refused
    code, _, err = run_cli(capsys, "collect", "create", str(tmp_path / "round.yaml"), "--db",
                           str(db_path))
    one_line_error(code, err, "already exists")
    over = BLINK_ROUND.replace("week-1", "week-2").replace("epsilon: 2.0", "epsilon: 7.0")
    code, _, err = run_cli(capsys, "collect", "create", str(_write(tmp_path, over, "o.yaml")),
                           "--db", str(db_path))
    one_line_error(code, err, "lifetime edge-LDP budget")


@pytest.mark.parametrize(("text", "needles"), [
    ("round_id: [unclosed\n", ("not valid YAML",)),
    (BLINK_ROUND.replace("blink-hard", "blink-extra"), ("neighbors.mechanism",)),
    (BLINK_ROUND.replace("epsilon: 2.0", "epsilon: -1"), ("neighbors.epsilon",)),
    (BLINK_ROUND.replace("classes: 3", "classes: 3\n  colour: red"), ("labels.colour",)),
    ("- just\n- a list\n", ("mapping",)),
    (BLINK_ROUND.replace("dee]", "dee, zed]"), ("not enrolled", "zed")),
    ("round_id: r\npopulation: {size: 4}\n", ("at least one of",)),
    (BLINK_ROUND + "defence: {theta: 0.1}\n", ("dprr",)),
], ids=["bad-yaml", "unknown-mechanism", "bad-epsilon", "unknown-field", "not-a-mapping",
        "not-enrolled", "collects-nothing", "defence-without-dprr"])
def test_collect_create_bad_specs(capsys, tmp_path: Path, db_path: Path, text: str,
                                  needles: tuple[str, ...]) -> None:
    code, _, err = run_cli(capsys, "collect", "create", str(_write(tmp_path, text)), "--db",
                           str(db_path))
    one_line_error(code, err, *needles)
    with Database(f"sqlite:///{db_path}") as db:
        assert db.list_rounds() == []


def test_collect_create_missing_file_and_bad_db(capsys, tmp_path: Path,
                                                db_path: Path) -> None:
    code, _, err = run_cli(capsys, "collect", "create", str(tmp_path / "nope.yaml"), "--db",
                           str(db_path))
    one_line_error(code, err, "nope.yaml", "not found")
    spec = str(_write(tmp_path, BLINK_ROUND))
    code, _, err = run_cli(capsys, "collect", "create", spec, "--db", "mysql://x/y")
    one_line_error(code, err, "--db", "unsupported")
    code, _, err = run_cli(capsys, "collect", "create", spec, "--db",
                           str(tmp_path / "no" / "dir.db"))
    one_line_error(code, err, "--db", "does not exist")
    code, _, err = run_cli(capsys, "collect", "close", "nope", "--db", str(db_path))
    one_line_error(code, err, "unknown round")


# ---------------------------------------------------------------------------- close
CSBM_NODES = 200


@pytest.fixture
def small_csbm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry's csbm generated with 200 nodes (its default, 2000, would need 2000
    enrolments, each a durable commit: seconds of fsync for nothing this test checks)."""
    import dpgl.datasets
    real = dpgl.datasets.load_dataset

    def load(name: str, data_dir: Any = None, **kw: Any) -> Any:
        assert name == "csbm"
        return real(name, data_dir, num_nodes=CSBM_NODES, **kw)
    monkeypatch.setattr(dpgl.datasets, "load_dataset", load)


def test_collect_close_prints_the_accuracy(capsys, tmp_path: Path, small_csbm: None) -> None:
    db_file = tmp_path / "server.db"
    with Database(f"sqlite:///{db_file}") as db:
        db.set_lifetime(ROOMY)
        enroll(db, [str(i) for i in range(CSBM_NODES)])
    text = (f"round_id: csbm-1\npopulation: {{size: {CSBM_NODES}}}\n"
            "neighbors: {mechanism: blink-hybrid, epsilon: 4.0}\n"
            "train: {dataset: csbm, model: gcn, epochs: 5}\n")
    code, _, err = run_cli(capsys, "collect", "create", str(_write(tmp_path, text)), "--db",
                           str(db_file))
    assert code == 0, err
    from dpgl.datasets import load_dataset
    data = load_dataset("csbm")
    with Database(f"sqlite:///{db_file}") as db:
        spec = parse_round_spec(db.round("csbm-1")["spec"])
        rnd = Round(spec)
        src, dst = data.edge_index.numpy()
        for i in range(0, CSBM_NODES, 2):                     # half the users report
            nb = sorted(int(j) for j in dst[src == i])
            rep = rnd.device_report(PrivateData(neighbors=nb), i, user_rng(0, i))
            assert db.submit("csbm-1", str(i), canonical_json(rep))
    code, out, err = run_cli(capsys, "collect", "close", "csbm-1", "--db", str(db_file),
                             "--quiet")
    assert code == 0, err
    assert "round 'csbm-1': 100/200 reports (50.0%)" in out
    acc = [line for line in out.splitlines() if line.strip().startswith("test_accuracy:")]
    assert len(acc) == 1 and 0.0 <= float(acc[0].split(":")[1]) <= 1.0
    assert "eps = 4 edge-LDP" in out
    with Database(f"sqlite:///{db_file}") as db:
        result = db.result("csbm-1")
        assert result["status"] == "done"
        assert f"{result['metrics']['test_accuracy']:.4f}" in acc[0]
        assert db.round("csbm-1")["status"] == "closed"


def test_collect_close_refuses_a_dataset_of_another_size(capsys, tmp_path: Path,
                                                         db_path: Path) -> None:
    text = BLINK_ROUND + "train: {dataset: csbm, epochs: 1}\n"
    assert run_cli(capsys, "collect", "create", str(_write(tmp_path, text)), "--db",
                   str(db_path))[0] == 0
    code, _, err = run_cli(capsys, "collect", "close", "week-1", "--db", str(db_path), "-q")
    one_line_error(code, err, "2000 nodes", "4 users")


def test_collect_close_below_min_participation(capsys, tmp_path: Path,
                                               db_path: Path) -> None:
    text = BLINK_ROUND + "min_participation: 0.5\ntrain: {dataset: csbm, epochs: 1}\n"
    assert run_cli(capsys, "collect", "create", str(_write(tmp_path, text)), "--db",
                   str(db_path))[0] == 0
    code, out, err = run_cli(capsys, "collect", "close", "week-1", "--db", str(db_path), "-q")
    assert code == 0, err
    assert "0/4 reports" in out and "not estimated: participation 0.0%" in out


# ---------------------------------------------------------------------------- client
def test_client_enroll_and_submit(capsys, tmp_path: Path) -> None:
    db_file = tmp_path / "server.db"
    state = tmp_path / "ann.json"
    with Database(f"sqlite:///{db_file}") as db, serving(db) as srv:
        for user in ("ann", "ben", "cy"):
            code, out, err = run_cli(capsys, "client", "enroll", "--server", srv.url,
                                     "--user", user, "--state", str(tmp_path / f"{user}.json"))
            assert code == 0, err
            assert f"enrolled {user!r}" in out
            token = json.loads((tmp_path / f"{user}.json").read_text())["token"]
            assert db.authenticate(user, token)
        code, _, err = run_cli(capsys, "client", "enroll", "--server", srv.url, "--user",
                               "ann", "--state", str(tmp_path / "elsewhere.json"))
        one_line_error(code, err, "already enrolled")
        enroll(db, ["dee"])
        code, _, err = run_cli(capsys, "collect", "create",
                               str(_write(tmp_path, BLINK_ROUND)), "--db", str(db_file))
        assert code == 0, err
        args = ["client", "submit", "--server", srv.url, "--user", "ann", "--round", "week-1",
                "--state", str(state), "--neighbors", "ben,dee", "--label", "2"]
        code, out, err = run_cli(capsys, *args)
        assert code == 0, err
        assert "stored: round 'week-1'" in out and "edge-LDP 2" in out
        [stored] = db.reports("week-1")
        saved = json.loads(state.read_text())
        assert stored.user_id == "ann"
        assert canonical_json(json.loads(saved["rounds"]["week-1"]["body"])["report"]) == \
            stored.payload
        assert saved["spent"] == {"edge-LDP": 2.0, "label-LDP": 1.0}
        code, out, err = run_cli(capsys, *args)               # again: the saved report
        assert code == 0 and "already stored" in out
        assert len(db.reports("week-1")) == 1
        assert json.loads(state.read_text())["spent"] == saved["spent"]

        # bad inputs: one line each, nothing sent
        bad = [
            (["--neighbors", "ben,zed"], ("'zed'", "not in round")),
            (["--label", "7"], ("label", "[0, 2]")),
            (["--features", "0.1,x"], ("--features",)),
            (["--round", "nope"], ("unknown round",)),
        ]
        ben_state = str(tmp_path / "ben.json")
        for extra, needles in bad:
            base = ["client", "submit", "--server", srv.url, "--user", "ben", "--round",
                    "week-1", "--state", ben_state, "--neighbors", "ann", "--label", "0"]
            code, _, err = run_cli(capsys, *_override(base, extra))
            one_line_error(code, err, *needles)
        assert json.loads(Path(ben_state).read_text())["spent"] == {}   # nothing drawn
        code, _, err = run_cli(capsys, "client", "submit", "--server", srv.url, "--user",
                               "cy", "--round", "week-1", "--state",
                               str(tmp_path / "cy.json"), "--neighbors", "ann", "--label",
                               "0", "--lifetime", "1.5")
        one_line_error(code, err, "lifetime edge-LDP budget")
        assert [s.user_id for s in db.reports("week-1")] == ["ann"]


def _override(argv: list[str], extra: list[str]) -> list[str]:
    """``argv`` with each option of ``extra`` set to its value there (added if absent)."""
    out = list(argv)
    for opt, value in zip(extra[::2], extra[1::2], strict=True):
        if opt in out:
            out[out.index(opt) + 1] = value
        else:
            out += [opt, value]
    return out


def test_the_deployment_guides_example_rounds_are_valid(tmp_path: Path) -> None:
    """Every ```yaml block of docs/deployment.md is a round spec dpgl accepts."""
    from dpgl.collection import load_round_spec
    doc = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"
    blocks = doc.read_text(encoding="utf-8").split("```yaml\n")[1:]
    assert len(blocks) == 3
    mechanisms = []
    for i, block in enumerate(blocks):
        spec = load_round_spec(_write(tmp_path, block.split("```")[0], f"r{i}.yaml"))
        rnd = Round(spec)
        assert len(rnd) == 2708
        mechanisms.append(spec.neighbors.mechanism if spec.neighbors else "features+labels")
    assert mechanisms == ["blink-hybrid", "dprr", "features+labels"]

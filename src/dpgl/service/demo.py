"""``dpgl collect demo``: the collection service end to end on one machine (issue #14).

A real server (uvicorn, FastAPI) on a loopback port over a SQLite file; one simulated device
per Cora user (the built-in synthetic graph when Cora is not offline) enrols over HTTP,
reads the published round, randomizes her own neighbour list with Blink's randomizer on the
device and submits it; the operator closes the round: the Blink-Hybrid posterior graph is
estimated from the stored reports and a GCN is trained on it. The result page
(``/rounds/demo``) shows the accuracy, the participation and the budget spent per user.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from dpgl import progress
from dpgl.errors import ConfigError

__all__ = ["run_collection_demo"]

ROUND_ID = "demo"
EPSILON = 4.0


def _dataset() -> tuple[str, dict[str, Any]]:
    from dpgl.datasets import dataset_info
    return ("cora", {}) if dataset_info("cora").available else ("csbm", {})


def run_collection_demo(output: Path, *, port: int = 8000, keep_serving: bool = True,
                        console: Any = None, devices_in_flight: int = 16) -> dict[str, Any]:
    """Run the demo; returns the round's result (also in ``output/result.json``)."""
    import httpx

    from dpgl.client import Device, PrivateData
    from dpgl.collection import parse_round_spec
    from dpgl.datasets import load_dataset
    from dpgl.mechanisms.neighbor_list import neighbor_csr, undirected_pairs
    from dpgl.service.app import create_app
    from dpgl.service.db import Database
    from dpgl.service.operator import close_round, open_round
    from dpgl.service.server import ServerThread

    def say(text: str) -> None:
        if console is not None:
            console.print(text)

    output.mkdir(parents=True, exist_ok=True)
    db_path = output / "collection.db"
    for suffix in ("", "-wal", "-shm"):  # a fresh database for every demo run
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    name, options = _dataset()
    with progress.step(f"loading {name}"):
        data = load_dataset(name, **options)
    n = int(data.num_nodes)
    indptr, ind = neighbor_csr(*undirected_pairs(data.edge_index, n), n)
    spec = parse_round_spec({
        "round_id": ROUND_ID, "population": {"size": n},
        "neighbors": {"mechanism": "blink-hybrid", "epsilon": EPSILON},
        "min_participation": 0.5,
        "deadline": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
        "train": {"dataset": name, "options": options, "model": "gcn", "epochs": 200}})
    db = Database(f"sqlite:///{db_path}")
    server = ServerThread(create_app(db), port=port).start()
    try:
        say(f"server: {server.url} (SQLite {db_path})")
        limits = httpx.Limits(max_connections=devices_in_flight)
        with httpx.Client(timeout=30.0, limits=limits) as http, \
                ThreadPoolExecutor(devices_in_flight) as pool:
            devices = [Device(server.url, str(i), seed=0, client=http) for i in range(n)]
            with progress.step(f"{n:,} devices enrol over HTTP", total=n) as s:
                for f in as_completed([pool.submit(d.enroll) for d in devices]):
                    f.result()
                    s.advance()
            charge = open_round(db, spec)
            say(f"round {ROUND_ID!r} opened: Blink (eps = {EPSILON:g} edge-LDP per user) "
                f"on {name}'s {n:,} users")

            def report(i: int) -> bool:
                mine = PrivateData(neighbors=ind[indptr[i]:indptr[i + 1]])
                return devices[i].submit(ROUND_ID, mine).stored

            with progress.step(f"{n:,} devices randomize and submit", total=n) as s:
                for f in as_completed([pool.submit(report, i) for i in range(n)]):
                    f.result()
                    s.advance()
        result = close_round(db, ROUND_ID)
        (output / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
        part = result["participation"]
        say(f"closed: {part['reports']:,}/{part['population']:,} reports; "
            f"{result['privacy']['text'].splitlines()[0]}")
        if result["status"] != "done":
            raise ConfigError(f"the demo round was not estimated: {result['reason']}")
        say(f"Blink-Hybrid + GCN test accuracy: {100 * result['metrics']['test_accuracy']:.1f}%"
            f" (charge per user: {', '.join(f'{u} {e[0]:g}' for u, e in charge.items())})")
        say(f"result page: {server.url}/rounds/{ROUND_ID}   (JSON: "
            f"{server.url}/v1/rounds/{ROUND_ID}/result)")
        if keep_serving:
            say("serving; press Ctrl-C to stop")
            try:
                while server.thread.is_alive():
                    time.sleep(0.5)
            except KeyboardInterrupt:
                pass
        return result
    finally:
        server.stop()
        db.close()

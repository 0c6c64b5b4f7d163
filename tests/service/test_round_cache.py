"""The server builds each published round once: requests that arrive together for a round
it has not loaded yet wait for one build instead of each building their own copy (with a
100,000-user population, 32 concurrent first requests held 32 population indexes and
randomizers at once: the load benchmark saw the server's RSS jump by ~250 MB)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import dpgl.service.app as app_module
from dpgl.collection.spec import RoundSpec
from dpgl.service.db import Database
from dpgl.service.operator import open_round


def test_concurrent_first_requests_build_the_round_once(tmp_path: Path, monkeypatch) -> None:
    with Database(f"sqlite:///{tmp_path / 's.db'}") as db:
        db.enroll_many(["0", "1", "2"])
        open_round(db, RoundSpec.model_validate({
            "round_id": "r", "population": {"size": 3},
            "labels": {"epsilon": 1.0, "classes": 2}}))
        builds: list[int] = []
        real = app_module.Round

        def slow_round(spec):  # a slow build widens the window the requests race in
            builds.append(1)
            time.sleep(0.2)
            return real(spec)

        monkeypatch.setattr(app_module, "Round", slow_round)
        cache = app_module._Rounds(db)
        got: list[object] = []
        threads = [threading.Thread(target=lambda: got.append(cache.get("r")))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(builds) == 1
        assert len(got) == 8 and all(g is got[0] for g in got)

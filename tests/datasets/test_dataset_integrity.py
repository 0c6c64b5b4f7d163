"""Integrity: corrupt and missing files, checksum caching, trust-on-first-use, safe parsing."""

from __future__ import annotations

import io
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

import dpgl.datasets.download as dl
from dpgl.datasets import DatasetWarning, FileSpec, Source, load_dataset, trust_file
from dpgl.datasets.download import ensure_files, verify_file
from dpgl.datasets.npz import read_npz
from dpgl.datasets.planetoid import RestrictedUnpickler, restricted_load
from dpgl.datasets.registry import DATASETS
from dpgl.datasets.tu import read_tu_zip
from dpgl.errors import ChecksumError, DatasetError, DatasetNotFoundError


def _copy(shared_file, rel: str, root: Path) -> Path:
    src = shared_file(rel)
    dest = root / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_flipped_byte_in_planetoid_file_is_a_checksum_error(shared_file, tmp_path):
    for part in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"):
        _copy(shared_file, f"planetoid/raw/ind.cora.{part}", tmp_path)
    assert load_dataset("cora", tmp_path).num_nodes == 2708  # intact copy loads
    target = tmp_path / "planetoid/raw/ind.cora.graph"
    before = target.stat().st_size
    _flip_byte(target, before // 2)
    with pytest.raises(ChecksumError) as exc:
        load_dataset("cora", tmp_path)
    assert "ind.cora.graph" in str(exc.value) and "corrupt" in str(exc.value)
    assert target.stat().st_size == before  # never modified or deleted by the loader


def test_truncated_tu_zip_is_a_checksum_error_and_unparseable(shared_file, tmp_path):
    path = _copy(shared_file, "tu/MUTAG.zip", tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ChecksumError, match=r"MUTAG\.zip"):
        load_dataset("mutag", tmp_path)
    # Even without a checksum (e.g. a trusted-on-first-use file), parsing fails cleanly.
    with pytest.raises(DatasetError, match=r"MUTAG\.zip"):
        read_tu_zip(path, "MUTAG")


def test_flipped_byte_inside_tu_zip_fails_parsing_cleanly(shared_file, tmp_path):
    path = _copy(shared_file, "tu/PROTEINS.zip", tmp_path)
    _flip_byte(path, 50_000)  # inside the compressed PROTEINS_A.txt
    with pytest.raises(DatasetError, match=r"PROTEINS\.zip .*(CRC|zip)"):
        read_tu_zip(path, "PROTEINS")


def test_corrupt_npz_is_a_clean_dataset_error(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 definitely not a zip archive")
    with pytest.raises(DatasetError, match=r"bad\.npz"):
        read_npz(bad)
    buf = io.BytesIO()
    np.savez(buf, adj_data=np.ones(1))  # a valid npz without the needed entries
    (tmp_path / "partial.npz").write_bytes(buf.getvalue())
    with pytest.raises(DatasetError, match=r"partial\.npz"):
        read_npz(tmp_path / "partial.npz")


def test_npz_with_object_array_in_a_needed_key_is_refused(tmp_path):
    path = tmp_path / "objects.npz"
    np.savez(
        path,
        adj_data=np.ones(1, dtype=np.float32),
        adj_indices=np.zeros(1, dtype=np.int32),
        adj_indptr=np.array([0, 1, 1]),
        adj_shape=np.array([2, 2]),
        labels=np.array([{"a": 1}, None], dtype=object),
    )
    with pytest.raises(DatasetError, match="without pickle"):
        read_npz(path)


def test_missing_file_message_names_file_location_and_url(tmp_path):
    with pytest.raises(DatasetNotFoundError) as exc:
        load_dataset("proteins", tmp_path)
    msg = str(exc.value)
    assert "tu/PROTEINS.zip" in msg
    assert str(tmp_path / "tu" / "PROTEINS.zip") in msg
    assert "https://www.chrsmrrs.com/graphkerneldatasets/PROTEINS.zip" in msg
    assert "download=True" in msg and "--data-dir" in msg and "DPGL_DATA_DIR" in msg
    assert "\n" not in msg
    assert isinstance(exc.value, FileNotFoundError)


def test_verification_is_cached_per_path_size_mtime(shared_file, tmp_path, monkeypatch):
    path = _copy(shared_file, "tu/MUTAG.zip", tmp_path)
    calls = []
    real = dl.sha256_file
    monkeypatch.setattr(dl, "sha256_file", lambda p: calls.append(p) or real(p))
    dl.clear_verification_cache()
    for _ in range(3):
        load_dataset("mutag", tmp_path)
    assert len(calls) == 1
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    load_dataset("mutag", tmp_path)
    assert len(calls) == 2  # a touched file is hashed again


def test_unknown_file_is_trusted_on_first_use_then_verified(tmp_path):
    spec = FileSpec("extra/features.json", (Source("https://example.invalid/f.json"),))
    path = tmp_path / "extra" / "features.json"
    path.parent.mkdir()
    path.write_text('{"0": [1]}')
    with pytest.warns(DatasetWarning, match="trusting it on first use"):
        ensure_files([spec], tmp_path)
    sidecar = path.with_name("features.json.sha256")
    assert sidecar.read_text().split()[0] == dl.sha256_file(path)
    ensure_files([spec], tmp_path)  # verified silently (warnings are errors here)
    path.write_text('{"0": [2]}')
    with pytest.raises(ChecksumError, match="recorded"):
        ensure_files([spec], tmp_path)


def test_trust_file_accepts_a_genuine_copy_with_another_digest(tmp_path):
    spec = FileSpec("tu/X.zip", (Source("https://example.invalid/X.zip"),), frozenset({"0" * 64}))
    path = tmp_path / "tu" / "X.zip"
    path.parent.mkdir()
    path.write_bytes(b"home-page bytes")
    with pytest.raises(ChecksumError, match="trust_file"):
        verify_file(spec, path)
    digest = trust_file(path)
    assert verify_file(spec, path) == digest


def test_restricted_unpickler_rejects_code_execution(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = tmp_path / "ind.cora.x"
    payload.write_bytes(pickle.dumps(Evil(), protocol=2))
    with pytest.raises(DatasetError, match=r"refusing to unpickle (posix|os|nt)\.system"):
        restricted_load(payload)
    assert not marker.exists()
    builtins_eval = pickle.dumps(eval, protocol=2)
    with pytest.raises(DatasetError, match="refusing"):
        RestrictedUnpickler(io.BytesIO(builtins_eval), encoding="latin1").load()


def test_restricted_unpickler_reads_real_planetoid_objects(shared_file):
    import scipy.sparse as sp

    x = restricted_load(shared_file("planetoid/raw/ind.cora.x"))
    graph = restricted_load(shared_file("planetoid/raw/ind.cora.graph"))
    assert isinstance(x, sp.csr_matrix) and x.shape == (140, 1433)
    assert isinstance(graph, dict) and len(graph) == 2708


def test_registry_checksums_match_the_offline_manifest(shared_data_dir):
    manifest = shared_data_dir / "MANIFEST.md"
    if not manifest.is_file():
        pytest.skip("no MANIFEST.md")
    table = {}
    for line in manifest.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and len(cells[2]) == 64:
            table[cells[0]] = cells[2]
    assert len(table) >= 60  # 63 files when written
    specs = {f.path: f for s in DATASETS.values() for f in (*s.files, s.feature_file) if f}
    for rel, digest in table.items():
        assert specs[rel].sha256 == frozenset({digest}), rel


def test_resolve_data_dir_precedence(tmp_path, monkeypatch):
    import platformdirs

    from dpgl.datasets import resolve_data_dir

    monkeypatch.setenv("DPGL_DATA_DIR", str(tmp_path / "env"))
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_data_dir() == tmp_path / "env"
    monkeypatch.delenv("DPGL_DATA_DIR")
    assert resolve_data_dir() == Path(platformdirs.user_cache_dir("dpgl")) / "datasets"
    monkeypatch.setenv("DPGL_DATA_DIR", str(tmp_path / "env"))
    with pytest.raises(DatasetNotFoundError, match=str(tmp_path / "env")):
        load_dataset("mutag")  # the environment variable is used when no argument is given

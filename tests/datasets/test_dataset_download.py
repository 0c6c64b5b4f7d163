"""Downloads against a local HTTP server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import io
import shutil
import socket
import threading
import time
import zipfile
from pathlib import Path

import pytest

from dpgl.datasets import DatasetWarning, FileSpec, Source, load_dataset
from dpgl.datasets.download import download_file, ensure_files, verify_file
from dpgl.datasets.registry import DATASETS
from dpgl.errors import ChecksumError, DatasetError, DatasetNotFoundError


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """Loopback requests must not go through a proxy configured in the environment."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_GET(self):
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    """A static file server for ``tmp_path / "www"`` on a free loopback port."""
    root = tmp_path / "www"
    root.mkdir()

    def handler(*args, **kwargs):
        return _Handler(*args, directory=str(root), **kwargs)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield root, base, httpd.requests  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".part"))


def test_download_success_is_atomic_and_exact(server, tmp_path):
    root, base, _ = server
    payload = bytes(range(256)) * 5000
    (root / "blob.bin").write_bytes(payload)
    dest = tmp_path / "data" / "sub" / "blob.bin"
    out = download_file(Source(f"{base}/blob.bin"), dest, {_sha(payload)}, timeout=5)
    assert out == dest and dest.read_bytes() == payload
    assert _leftovers(dest.parent) == []
    assert not dest.with_name("blob.bin.sha256").exists()  # known digest: no sidecar


def test_checksum_mismatch_leaves_nothing(server, tmp_path):
    root, base, _ = server
    (root / "blob.bin").write_bytes(b"tampered bytes")
    dest = tmp_path / "data" / "blob.bin"
    with pytest.raises(ChecksumError, match=r"blob\.bin") as exc:
        download_file(Source(f"{base}/blob.bin"), dest, {"0" * 64}, timeout=5)
    assert "not saved" in str(exc.value)
    assert not dest.exists() and _leftovers(dest.parent) == []


def test_checksum_mismatch_keeps_an_existing_file_untouched(server, tmp_path):
    root, base, _ = server
    (root / "blob.bin").write_bytes(b"new bytes")
    dest = tmp_path / "blob.bin"
    dest.write_bytes(b"old bytes")
    with pytest.raises(ChecksumError):
        download_file(Source(f"{base}/blob.bin"), dest, {"1" * 64}, timeout=5)
    assert dest.read_bytes() == b"old bytes" and _leftovers(tmp_path) == []


def test_unpinned_source_is_trusted_on_first_use(server, tmp_path):
    root, base, _ = server
    (root / "home.zip").write_bytes(b"bytes from the home page")
    spec = FileSpec(
        "tu/home.zip", (Source(f"{base}/home.zip", pinned=False),), frozenset({"2" * 64})
    )
    with pytest.warns(DatasetWarning, match="no known checksum"):
        ensure_files([spec], tmp_path / "data", download=True, timeout=5)
    path = tmp_path / "data" / "tu" / "home.zip"
    assert path.read_bytes() == b"bytes from the home page"
    assert (tmp_path / "data/tu/home.zip.sha256").read_text().split()[0] == _sha(path.read_bytes())
    verify_file(spec, path)  # later loads: verified against the sidecar, silently
    path.write_bytes(b"bytes from the home pagE")
    with pytest.raises(ChecksumError):
        verify_file(spec, path)


def test_http_error_is_a_dataset_error(server, tmp_path):
    _, base, _ = server
    with pytest.raises(DatasetError, match="HTTP 404"):
        download_file(Source(f"{base}/nope.bin"), tmp_path / "d" / "nope.bin", timeout=5)
    assert list((tmp_path / "d").iterdir()) == []


def test_server_down_fails_quickly(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now
    spec = FileSpec("x/file.bin", (Source(f"http://127.0.0.1:{port}/file.bin"),))
    start = time.monotonic()
    with pytest.raises(DatasetError, match=f"127.0.0.1:{port}/file.bin") as exc:
        ensure_files([spec], tmp_path, download=True, timeout=2)
    assert time.monotonic() - start < 5
    assert not isinstance(exc.value, ChecksumError)
    assert _leftovers(tmp_path / "x") == []


def test_missing_file_without_download_does_not_touch_the_network(server, tmp_path):
    root, base, requests = server
    (root / "f.bin").write_bytes(b"x")
    spec = FileSpec("f.bin", (Source(f"{base}/f.bin"),), frozenset({_sha(b"x")}))
    with pytest.raises(DatasetNotFoundError, match=f"{base}/f.bin"):
        ensure_files([spec], tmp_path / "data")
    assert requests == []


def test_falls_back_to_the_next_source(server, tmp_path):
    root, base, requests = server
    (root / "mirror.bin").write_bytes(b"payload")
    spec = FileSpec(
        "d/file.bin",
        (Source(f"{base}/missing.bin"), Source(f"{base}/mirror.bin")),
        frozenset({_sha(b"payload")}),
    )
    paths = ensure_files([spec], tmp_path / "data", download=True, timeout=5)
    assert paths["d/file.bin"].read_bytes() == b"payload"
    assert requests == ["/missing.bin", "/mirror.bin"]


def test_archive_members_share_one_download(server, tmp_path):
    root, base, requests = server
    files = {"pack/A/edges.csv": b"a,b\n0,1\n", "pack/A/target.csv": b"id,target\n0,1\n1,0\n"}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    (root / "pack.zip").write_bytes(buf.getvalue())
    specs = [
        FileSpec(
            f"m/{Path(name).name}",
            (Source(f"{base}/pack.zip", member=f"A/{Path(name).name}"),),
            frozenset({_sha(data)}),
        )
        for name, data in files.items()
    ]
    paths = ensure_files(specs, tmp_path / "data", download=True, timeout=5)
    assert paths["m/edges.csv"].read_bytes() == files["pack/A/edges.csv"]
    assert paths["m/target.csv"].read_bytes() == files["pack/A/target.csv"]
    assert requests == ["/pack.zip"]
    assert sorted(p.name for p in (tmp_path / "data" / "m").iterdir()) == [
        "edges.csv",
        "target.csv",
    ]


def test_load_dataset_download_end_to_end(server, tmp_path, shared_file, monkeypatch):
    root, base, requests = server
    shutil.copyfile(shared_file("tu/MUTAG.zip"), root / "MUTAG.zip")
    spec = DATASETS["mutag"]
    (file_spec,) = spec.files
    local = dataclasses.replace(file_spec, sources=(Source(f"{base}/MUTAG.zip", pinned=False),))
    monkeypatch.setitem(DATASETS, "mutag", dataclasses.replace(spec, files=(local,)))
    data_dir = tmp_path / "cache"
    with pytest.raises(DatasetNotFoundError):
        load_dataset("mutag", data_dir)
    ds = load_dataset("mutag", data_dir, download=True, timeout=5)
    assert len(ds) == 188 and (data_dir / "tu" / "MUTAG.zip").is_file()
    assert not (data_dir / "tu" / "MUTAG.zip.sha256").exists()  # bytes matched the MANIFEST
    assert len(load_dataset("mutag", data_dir, download=True)) == 188
    assert requests == ["/MUTAG.zip"]  # present files are never fetched again

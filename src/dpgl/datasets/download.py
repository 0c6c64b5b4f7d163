"""Dataset files: the data directory, integrity checks, and downloads.

Every file a loader reads is described by a :class:`FileSpec`: its path relative to the data
directory, where it can be fetched from (:class:`Source`), and the set of sha256 digests
accepted for it. The layout of the data directory is the layout of the offline copies
(``planetoid/raw/ind.cora.x``, ``npz/cora_ml.npz``, ``tu/MUTAG.zip``, ...).

Integrity rules
---------------
* A local file is hashed once per (path, size, mtime) per process and must match one of the
  accepted digests, or the digest recorded in its ``<file>.sha256`` sidecar. Anything else is a
  :class:`~dpgl.errors.ChecksumError`; a corrupt file never yields a partial dataset.
* A *pinned* source serves bytes whose digest is known in advance (a GitHub file at a fixed
  commit); a mismatch is a ``ChecksumError`` and nothing is written.
* An *unpinned* source (a dataset's home page that serves bytes different from the offline
  copy, e.g. the TU Dortmund zips) is trusted on first use: the digest is computed, written to
  the ``<file>.sha256`` sidecar, a :class:`DatasetWarning` says so, and later loads are
  verified against the sidecar. Files for which no digest is known at all (features that are
  not in the offline copies) get the same trust-on-first-use treatment when first seen.
* Downloads stream into a temporary file in the destination directory, are verified, and
  are then moved into place with :func:`os.replace` (atomic); a failed download leaves
  nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import platformdirs

from dpgl.errors import ChecksumError, DatasetError, DatasetNotFoundError

ENV_DATA_DIR = "DPGL_DATA_DIR"
DEFAULT_TIMEOUT = 60.0
_CHUNK = 1 << 20
_USER_AGENT = "dpgl/0.1 (+https://github.com; dataset download)"


class DatasetWarning(UserWarning):
    """A dataset file was accepted by trust-on-first-use (its digest was not known)."""


@dataclass(frozen=True)
class Source:
    """One place a file can be fetched from.

    ``member`` is the file's name inside a zip archive served at ``url`` (matched against
    the end of the member path), or ``None`` when ``url`` serves the file itself. ``pinned``
    says whether the bytes served are known in advance (their digest is in the file's
    accepted set): a pinned mismatch is an error, an unpinned one is trust-on-first-use.
    """

    url: str
    member: str | None = None
    pinned: bool = True

    def describe(self) -> str:
        return f"{self.url} (member {self.member})" if self.member else self.url


@dataclass(frozen=True)
class FileSpec:
    """A dataset file: relative path (POSIX), sources in order of preference, accepted digests."""

    path: str
    sources: tuple[Source, ...]
    sha256: frozenset[str] = frozenset()
    note: str = ""

    @property
    def url(self) -> str:
        """The first source's URL (for messages)."""
        return self.sources[0].describe() if self.sources else "(no known download location)"

    def local(self, data_dir: Path) -> Path:
        return data_dir.joinpath(*PurePosixPath(self.path).parts)


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: explicit argument > ``$DPGL_DATA_DIR`` > the user cache directory.

    The fallback is ``platformdirs.user_cache_dir("dpgl")/datasets``. The directory need not
    exist (it is created by a download).
    """
    if data_dir is not None and str(data_dir) != "":
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_DATA_DIR, "")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("dpgl")) / "datasets"


# --------------------------------------------------------------------------- hashing


_VERIFIED: dict[tuple[str, int, int], str] = {}


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file (streamed)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _cached_digest(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    digest = _VERIFIED.get(key)
    if digest is None:
        digest = sha256_file(path)
        _VERIFIED[key] = digest
    return digest


def clear_verification_cache() -> None:
    """Forget all cached digests (tests; files replaced within the same mtime tick)."""
    _VERIFIED.clear()


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def read_sidecar(path: Path) -> str | None:
    """The digest recorded in ``<path>.sha256`` (``sha256sum`` format), or ``None``."""
    side = sidecar_path(path)
    try:
        text = side.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read checksum sidecar {side}: {exc}") from None
    token = text.split()[0].lower() if text else ""
    if len(token) != 64 or any(c not in "0123456789abcdef" for c in token):
        raise DatasetError(f"checksum sidecar {side} does not hold a sha256 digest")
    return token


def _write_sidecar(path: Path, digest: str) -> bool:
    try:
        sidecar_path(path).write_text(f"{digest}  {path.name}\n", encoding="ascii")
    except OSError:
        return False
    return True


def trust_file(path: str | os.PathLike[str]) -> str:
    """Accept a local file as genuine: record its sha256 in ``<file>.sha256`` and return it.

    Use this for a copy obtained by hand from a dataset's home page whose bytes differ from
    the known digests; later loads verify the file against the recorded digest.
    """
    p = Path(path)
    if not p.is_file():
        raise DatasetNotFoundError(f"cannot trust {p}: no such file")
    digest = sha256_file(p)
    if not _write_sidecar(p, digest):
        raise DatasetError(f"cannot write checksum sidecar {sidecar_path(p)}")
    return digest


def verify_file(spec: FileSpec, path: Path) -> str:
    """Check a local file against the accepted digests (or its sidecar); return its digest."""
    digest = _cached_digest(path)
    if digest in spec.sha256:
        return digest
    recorded = read_sidecar(path)
    if recorded is not None:
        if digest == recorded:
            return digest
        raise ChecksumError(
            f"{path} is corrupt: sha256 {digest} differs from the digest {recorded} recorded "
            f"in {sidecar_path(path).name} when it was first obtained; delete both files and "
            f"download again"
        )
    if not spec.sha256:
        _trust_on_first_use(path, digest, origin="found locally")
        return digest
    raise ChecksumError(
        f"{path} is corrupt or a different version: sha256 {digest} is not one of the known "
        f"digests ({', '.join(sorted(spec.sha256))}); delete it and download again from "
        f"{spec.url}, or, if this copy is genuine, record it with "
        f"dpgl.datasets.trust_file({str(path)!r})"
    )


_TRUSTED: set[tuple[str, str]] = set()  # (path, digest) trusted without a sidecar


def _trust_on_first_use(path: Path, digest: str, *, origin: str) -> None:
    key = (str(path.resolve()), digest)
    if key in _TRUSTED:
        return
    written = _write_sidecar(path, digest)
    if not written:
        _TRUSTED.add(key)
    where = (
        f"recorded in {sidecar_path(path).name}"
        if written
        else "not recorded (directory not writable), trusted for this process only"
    )
    warnings.warn(
        f"{path.name} ({origin}) has no known checksum; trusting it on first use: sha256 "
        f"{digest} {where}; later loads are verified against it",
        DatasetWarning,
        stacklevel=3,
    )


# --------------------------------------------------------------------------- downloads


def _fetch_url(url: str, dest_dir: Path, *, timeout: float, prefix: str) -> tuple[Path, str]:
    """Stream ``url`` into a temporary file in ``dest_dir``; return (temp path, sha256)."""
    try:
        request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    except ValueError as exc:
        raise DatasetError(f"cannot download {url!r}: {exc}") from None
    fd, tmp_name = tempfile.mkstemp(dir=dest_dir, prefix=prefix, suffix=".part")
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as r:
            while chunk := r.read(_CHUNK):
                h.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        tmp.unlink(missing_ok=True)
        raise DatasetError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        tmp.unlink(missing_ok=True)
        raise DatasetError(f"download of {url} failed: {exc.reason}") from None
    except TimeoutError:
        tmp.unlink(missing_ok=True)
        raise DatasetError(f"download of {url} failed: timed out after {timeout:g} s") from None
    except (OSError, http.client.HTTPException) as exc:
        tmp.unlink(missing_ok=True)
        raise DatasetError(f"download of {url} failed: {type(exc).__name__}: {exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, h.hexdigest()


def _extract_member(archive: Path, member: str, dest_dir: Path, url: str) -> tuple[Path, str]:
    """Copy the archive member whose path ends with ``member`` to a temp file in dest_dir."""
    try:
        with zipfile.ZipFile(archive) as zf:
            names = [
                n for n in zf.namelist() if n == member or n.endswith("/" + member.lstrip("/"))
            ]
            if len(names) != 1:
                raise DatasetError(
                    f"archive {url} has {len(names)} members named {member!r} (expected one)"
                )
            fd, tmp_name = tempfile.mkstemp(dir=dest_dir, prefix=".member.", suffix=".part")
            tmp = Path(tmp_name)
            h = hashlib.sha256()
            try:
                with os.fdopen(fd, "wb") as out, zf.open(names[0]) as src:
                    while chunk := src.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise DatasetError(f"archive downloaded from {url} is unreadable: {exc}") from None
    return tmp, h.hexdigest()


class _ArchiveCache:
    """Downloaded archives of one ``ensure_files`` call (an archive is fetched once)."""

    def __init__(self) -> None:
        self._paths: dict[str, Path] = {}

    def get(self, url: str, dest_dir: Path, timeout: float) -> Path:
        if url not in self._paths:
            path, _ = _fetch_url(url, dest_dir, timeout=timeout, prefix=".archive.")
            self._paths[url] = path
        return self._paths[url]

    def close(self) -> None:
        for path in self._paths.values():
            path.unlink(missing_ok=True)
        self._paths.clear()


@contextlib.contextmanager
def _archive_cache() -> Iterator[_ArchiveCache]:
    cache = _ArchiveCache()
    try:
        yield cache
    finally:
        cache.close()


def download_file(
    source: Source,
    dest: str | os.PathLike[str],
    sha256: Iterable[str] = (),
    *,
    timeout: float = DEFAULT_TIMEOUT,
    _archives: _ArchiveCache | None = None,
) -> Path:
    """Fetch ``source`` to ``dest`` atomically and verify it; return ``dest``.

    The bytes go to a temporary file next to ``dest`` and are moved into place only after
    the check: a digest in ``sha256`` is accepted; otherwise a pinned source raises
    :class:`~dpgl.errors.ChecksumError` (nothing written) and an unpinned source is trusted on
    first use (sidecar + :class:`DatasetWarning`). Network failures raise
    :class:`~dpgl.errors.DatasetError`.
    """
    dest = Path(dest)
    accepted = frozenset(s.lower() for s in sha256)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(
            f"cannot create directory {dest.parent} for {dest.name}: {exc}"
        ) from None
    if not os.access(dest.parent, os.W_OK):
        raise DatasetError(
            f"cannot download {dest.name}: directory {dest.parent} is not writable; choose "
            f"another data directory (--data-dir / {ENV_DATA_DIR})"
        )
    with contextlib.ExitStack() as stack:
        archives = _archives if _archives is not None else stack.enter_context(_archive_cache())
        if source.member is None:
            tmp, digest = _fetch_url(
                source.url, dest.parent, timeout=timeout, prefix=f".{dest.name}."
            )
        else:
            archive = archives.get(source.url, dest.parent, timeout)
            tmp, digest = _extract_member(archive, source.member, dest.parent, source.url)
        try:
            trusted = False
            if digest not in accepted:
                if source.pinned:
                    raise ChecksumError(
                        f"download of {dest.name} from {source.describe()} has sha256 {digest}, "
                        f"expected one of: {', '.join(sorted(accepted)) or '(none)'}; "
                        f"the file was not saved"
                    )
                trusted = True
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    if trusted:
        _trust_on_first_use(dest, digest, origin=f"downloaded from {source.describe()}")
    else:
        # A digest from the accepted set needs no sidecar; drop a stale one.
        with contextlib.suppress(OSError):
            sidecar_path(dest).unlink(missing_ok=True)
    return dest


def missing_message(spec: FileSpec, data_dir: Path, dataset: str | None = None) -> str:
    """The one-line explanation for a missing file (what, where, from where, how)."""
    who = f"dataset {dataset!r}: " if dataset else ""
    note = f" ({spec.note})" if spec.note else ""
    return (
        f"{who}file {spec.path} is missing{note}; expected at {spec.local(data_dir)}; "
        f"download it from {spec.url}, or pass download=True (CLI: dpgl train/run "
        f"--download), or point --data-dir / {ENV_DATA_DIR} at a directory that has it"
    )


def ensure_files(
    specs: Iterable[FileSpec],
    data_dir: Path,
    *,
    download: bool = False,
    dataset: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Path]:
    """Make sure every file exists and verifies; return ``{spec.path: local path}``.

    Missing files are downloaded when ``download`` is true (trying the sources in order),
    otherwise :class:`~dpgl.errors.DatasetNotFoundError` names the file, its expected location
    and its URL. Existing files are never re-downloaded, only verified.
    """
    specs = list(specs)
    out: dict[str, Path] = {}
    missing = [s for s in specs if not s.local(data_dir).is_file()]
    if missing and not download:
        raise DatasetNotFoundError(missing_message(missing[0], data_dir, dataset))
    with _archive_cache() as archives:
        for spec in missing:
            if not spec.sources:
                raise DatasetNotFoundError(missing_message(spec, data_dir, dataset))
            errors: list[str] = []
            for source in spec.sources:
                try:
                    download_file(
                        source,
                        spec.local(data_dir),
                        spec.sha256,
                        timeout=timeout,
                        _archives=archives,
                    )
                    break
                except ChecksumError:
                    raise
                except DatasetError as exc:
                    errors.append(str(exc))
            else:
                raise DatasetError(f"could not download {spec.path}: " + "; ".join(errors))
    for spec in specs:
        path = spec.local(data_dir)
        verify_file(spec, path)
        out[spec.path] = path
    return out

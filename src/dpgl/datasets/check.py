"""A cheap look at a dataset file before it is called available: read its first and last
bytes, not the whole file (``dpgl datasets`` lists every dataset in well under a second). It
catches empty, truncated and wrong-format files; the full checksum is verified when a file is
loaded (:mod:`dpgl.datasets.download`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["looks_corrupt"]

_ZIP_END = b"PK\x05\x06"  # end-of-central-directory record: missing when a zip is truncated
_PICKLE = b"\x80"  # protocol 2+ pickle (Planetoid's raw ind.* arrays)


def looks_corrupt(path: Path) -> str | None:
    """Why ``path`` cannot be a good file of its kind (None when it looks fine)."""
    try:
        size = path.stat().st_size
        if size == 0:
            return "empty"
        suffix, tail = path.suffix.lower(), b""
        with path.open("rb") as f:
            head = f.read(4096)
            if suffix in (".npz", ".zip") and head.startswith(b"PK"):
                f.seek(max(size - 65_557, 0))  # the end record sits in the last 64 KiB + 22 B
                tail = f.read()
        if suffix in (".npz", ".zip"):
            if not head.startswith(b"PK"):
                return "not a zip archive"
            if _ZIP_END not in tail:
                return "truncated zip archive"
        elif suffix == ".json":
            if head.lstrip()[:1] not in (b"{", b"["):
                return "not JSON"
        elif suffix in (".csv", ".index", ".txt", ".md"):
            if b"\x00" in head:
                return "binary data in a text file"
            try:
                head.decode("utf-8")
            except UnicodeDecodeError as e:
                if e.start < len(head) - 4:  # not a character cut at the 4 KiB boundary
                    return "not UTF-8 text"
        elif path.name.startswith("ind.") and not head.startswith(_PICKLE):
            return "not a pickle (Planetoid raw array)"
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    return None

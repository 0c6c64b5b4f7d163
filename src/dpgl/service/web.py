"""The server's web pages (filled in below)."""

from __future__ import annotations

from typing import Any


def add_pages(app: Any, db: Any) -> None:
    """Register the HTML pages."""

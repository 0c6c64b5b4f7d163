"""Error types. Every error a user can cause is a :class:`DpglError` with a one-line message
that says what is wrong and what is allowed; the CLI prints it without a traceback."""

from __future__ import annotations


class DpglError(Exception):
    """Base class of all user-facing errors."""


class ConfigError(DpglError, ValueError):
    """An invalid parameter value, unknown name or unreadable configuration."""


class DatasetError(DpglError):
    """A dataset is unknown, missing, corrupt or malformed."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A dataset file is not in the data directory and cannot be downloaded."""


class ChecksumError(DatasetError):
    """A file's sha256 does not match the expected value."""


class PrivacyError(DpglError, ValueError):
    """An invalid privacy parameter (epsilon, delta, sensitivity, ...)."""


class GraphError(DpglError, ValueError):
    """A malformed graph or neighbor list (self-loops, out-of-range ids, asymmetry, ...)."""


def unknown_name(kind: str, name: str, allowed: list[str] | tuple[str, ...]) -> ConfigError:
    """The standard error for an unknown registry name: says what is allowed."""
    return ConfigError(f"unknown {kind} {name!r}; choose one of: {', '.join(sorted(allowed))}")

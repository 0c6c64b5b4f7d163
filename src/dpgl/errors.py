"""Error types. Every error a user can cause is a :class:`DpglError` with a one-line message
that says what is wrong and what is allowed; the CLI prints it without a traceback."""

from __future__ import annotations

import difflib
import functools
import warnings
from collections.abc import Callable
from typing import Any


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


class DpglDeprecationWarning(FutureWarning):
    """An old name that still works for one release (shown by default, unlike
    ``DeprecationWarning``, because users write these names in grids and on the command line)."""


def renamed_kwargs(**renames: str | tuple[str, Callable[[Any], Any]]
                   ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: keyword arguments under an old name (``old="new"`` or ``old=("new",
    convert)``) still work for one release, with a :class:`DpglDeprecationWarning`."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            for old, spec in renames.items():
                if old not in kwargs:
                    continue
                new, convert = (spec, None) if isinstance(spec, str) else spec
                if new in kwargs:
                    raise ConfigError(f"{old!r} is the old name of {new!r}: give only {new!r}")
                value = kwargs.pop(old)
                kwargs[new] = convert(value) if convert is not None else value
                warnings.warn(f"argument {old!r} is now called {new!r}; the old name will be "
                              "removed in the next release (docs/glossary.md)",
                              DpglDeprecationWarning, stacklevel=2)
            return fn(*args, **kwargs)

        return inner

    return wrap


def one_line(exc: BaseException) -> str:
    """``Type: message`` with the message's whitespace (newlines included) collapsed, for
    reporting an exception from elsewhere (a worker, a scheduler) in one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def unknown_name(kind: str, name: str, allowed: list[str] | tuple[str, ...]) -> ConfigError:
    """The standard error for an unknown registry name: says what is allowed, and the closest
    allowed name when one is close (a typo)."""
    close = difflib.get_close_matches(str(name), [str(a) for a in allowed], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown {kind} {name!r}; choose one of: {', '.join(sorted(allowed))}"
                       + hint)

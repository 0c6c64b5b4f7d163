"""Input checks shared by the primitive mechanisms (one-line errors, no deep tracebacks)."""

from __future__ import annotations

import numpy as np

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy.guarantee import check_unit  # noqa: F401 - the mechanisms import it from here


def check_positive(value: float, name: str) -> float:
    """A finite number > 0 (sensitivities, scales)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PrivacyError(f"{name} must be a finite number > 0, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise PrivacyError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def check_positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise PrivacyError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_generator(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(
            f"rng must be a numpy.random.Generator (see dpgl.rng.make_rng), got "
            f"{type(rng).__name__}"
        )
    return rng


def as_bits(x: object, name: str = "x") -> np.ndarray:
    """A boolean array from 0/1 or bool input; anything else is refused."""
    a = np.asarray(x)
    if a.dtype == bool:
        return a
    if a.dtype.kind not in "iuf":
        raise ConfigError(f"{name} must hold bits (0/1 or bool), got dtype {a.dtype}")
    if a.size and not np.all((a == 0) | (a == 1)):
        raise ConfigError(f"{name} must hold bits (0/1 or bool); found other values")
    return a.astype(bool)


def as_finite_float(x: object, name: str = "x") -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.size and not np.all(np.isfinite(a)):
        raise ConfigError(f"{name} must be finite (no NaN or inf)")
    return a


def as_int_array(x: object, name: str = "x") -> np.ndarray:
    """An int64 array from integer-valued input (floats with integral values accepted)."""
    a = np.asarray(x)
    if a.dtype == bool:
        return a.astype(np.int64)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f":
        if a.size and (not np.all(np.isfinite(a)) or not np.all(a == np.round(a))):
            raise ConfigError(f"{name} must hold integers")
        return a.astype(np.int64)
    raise ConfigError(f"{name} must hold integers, got dtype {a.dtype}")

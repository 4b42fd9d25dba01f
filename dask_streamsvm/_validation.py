"""Parameter and input checks, kept apart from the solvers.

Every message names the parameter, shows the value and says what to pass.
"""

import numbers

import numpy as np


def check_positive_float(name, value, *, allow_zero=False):
    """``value`` as float, or a ValueError/TypeError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {name}={value!r} of type {type(value).__name__}.")
    value = float(value)
    ok = value >= 0.0 if allow_zero else value > 0.0
    if not (np.isfinite(value) and ok):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {name}={value!r}.")
    return value


def check_positive_int(name, value, *, low=1, high=None):
    """``value`` as int in ``[low, high]``, or an error naming ``name``."""
    bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer {bounds}, got {name}={value!r} of type {type(value).__name__}."
        )
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer {bounds}, got {name}={value!r}.")
    return int(value)


def check_choice(name, value, choices):
    """``value`` if it is one of ``choices``, else a ValueError listing them."""
    if not isinstance(value, str) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {name}={value!r}.")
    return value


def check_class_weight(class_weight):
    if class_weight is None or class_weight == "balanced" or isinstance(class_weight, dict):
        return class_weight
    raise ValueError(
        "class_weight must be None, 'balanced' or a dict mapping class labels to "
        f"positive weights; got class_weight={class_weight!r}."
    )


def check_sample_weight(sample_weight, n_samples):
    """float64 weights of length ``n_samples``: finite and non-negative."""
    if sample_weight is None:
        return np.ones(n_samples)
    if np.isscalar(sample_weight):
        sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
    try:
        sw = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sample_weight must be an array of numbers; could not convert it: {exc}") from None
    if sw.ndim != 1 or sw.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight must be 1-D with one weight per sample: expected shape "
            f"({n_samples},), got {sw.shape}."
        )
    bad = ~np.isfinite(sw)
    if bad.any():
        raise ValueError(
            f"sample_weight contains NaN or inf at {int(bad.sum())} rows (first at row "
            f"{int(np.flatnonzero(bad)[0])}); pass finite weights."
        )
    if (sw < 0).any():
        first = int(np.flatnonzero(sw < 0)[0])
        raise ValueError(
            f"sample_weight must be non-negative; row {first} has weight {float(sw[first])!r}. "
            "Drop such rows or give them weight 0."
        )
    return sw

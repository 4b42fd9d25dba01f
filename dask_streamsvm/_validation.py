"""Parameter and input checks, kept apart from the solvers.

Every message names the parameter, shows the value and says what to pass.
"""

import numbers
import reprlib

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import column_or_1d, validate_data

from .engine.data.checks import (
    check_sparse_structure,
    invalid_labels,
    non_finite_encoded,
    overflow_message,
    overflowing_rows,
)
from .engine.plan.problem import MIN_C
from .engine.plan.sizes import CacheShare, parse_bytes

# The smallest number > 0 a parameter may be: below it float64 is subnormal, losing precision, and the
# solvers' quotients overflow (C=1e-320 gave a duality gap of -1e10 in memory and "the rows read changed"
# streamed; OnePassSVC's ball, a LinAlgError).
SMALLEST_NORMAL = float(np.finfo(np.float64).tiny)


def check_positive_float(name, value, *, allow_zero=False, high=None):
    """``value`` as float, or a ValueError/TypeError naming ``name``.

    Finite and > 0 (``allow_zero``: >= 0), never subnormal (0 < value <
    :data:`SMALLEST_NORMAL`), and at most ``high`` if given.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {name}={value!r} of type {type(value).__name__}.")
    value = float(value)
    ok = value >= 0.0 if allow_zero else value > 0.0
    if not (np.isfinite(value) and ok):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {name}={value!r}.")
    if 0.0 < value < SMALLEST_NORMAL:
        raise ValueError(
            f"{name} must be at least {SMALLEST_NORMAL:.4g} (float64's smallest normal number; below it "
            f"the solvers' arithmetic loses precision or overflows), got {name}={value!r}. Pass a larger "
            f"{name}{' or 0' if allow_zero else ''}."
        )
    if high is not None and value > high:
        raise ValueError(f"{name} must be at most {high:g}, got {name}={value!r}.")
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
    """None, ``"balanced"``, or a dict of finite weights >= 0 (each one a number, never subnormal)."""
    if class_weight is None or (isinstance(class_weight, str) and class_weight == "balanced"):
        return class_weight
    if not isinstance(class_weight, dict):
        raise ValueError(
            "class_weight must be None, 'balanced' or a dict mapping class labels to "
            f"positive weights; got class_weight={class_weight!r}."
        )
    for label, weight in class_weight.items():
        number = not isinstance(weight, bool) and isinstance(weight, numbers.Real)
        if not number or not (np.isfinite(weight) and (weight == 0 or weight >= SMALLEST_NORMAL)):
            kind = ValueError if number else TypeError
            raise kind(
                f"class_weight must map class labels to finite numbers >= 0, got class_weight="
                f"{class_weight!r}, whose weight of class {label!r} is {weight!r}. Give each class a "
                f"weight of 0 (its rows are left out) or at least {SMALLEST_NORMAL:.4g}."
            )
    return class_weight


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


def drop_invalid(X, y, sample_weight, encoder=None, scaled=False):
    """In-memory input less the rows ``on_invalid="skip"`` drops: ``(X, y, sample_weight, n_dropped)``.

    A row goes if a feature is NaN or infinite, its ``x . x`` overflows, its
    label is missing or infinite, or its weight is NaN, infinite or
    negative; input whose shapes do not fit is passed on as it is, for the
    checks that follow to name.  With an ``encoder`` (a map that reads
    strings), a DataFrame ``X`` stays a DataFrame and loses the rows whose
    values the map reads are not finite, or whose encoded ``x . x``
    overflows.  ``scaled``: the fit scales the rows before the solver reads
    them (a map with ``scales_rows``), so a large ``x . x`` here is no reason
    to drop a row (the scaled rows are checked).
    """
    X = checked_sparse(X)
    if encoder is not None and hasattr(X, "columns"):
        bad_rows, n = non_finite_encoded(encoder, X)[0], X.shape[0]
    else:
        X = check_array(
            X, accept_sparse="csr", dtype=[np.float64, np.float32], ensure_all_finite=False,
            accept_large_sparse=True,
        )  # fmt: skip
        bad_rows, n = None, X.shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        return X, y, sample_weight, 0  # the checks that follow name the problem
    bad = invalid_labels(y)
    if bad_rows is not None:
        bad |= bad_rows
    elif sp.issparse(X):
        X = sp.csr_matrix(X)
        bad_values = np.flatnonzero(~np.isfinite(X.data))
        bad[np.searchsorted(X.indptr, bad_values, side="right") - 1] = True
    else:
        bad |= ~np.isfinite(X).all(axis=1)
    if bad_rows is None and not scaled:
        bad |= overflowing_rows(X)
    if sample_weight is not None and not np.isscalar(sample_weight):
        weights = np.asarray(sample_weight)
        if weights.shape == y.shape and weights.dtype.kind in "fiub":
            weights = weights.astype(np.float64)
            bad |= ~np.isfinite(weights) | (weights < 0)
    if not bad.any():
        return X, y, sample_weight, 0
    keep = ~bad
    if sample_weight is not None and not np.isscalar(sample_weight):
        sample_weight = np.asarray(sample_weight)[keep]
    X = X.iloc[keep] if hasattr(X, "iloc") else X[keep]
    return X, y[keep], sample_weight, int(bad.sum())


def checked_sparse(X):
    """In-memory ``X``, with the index arrays of a sparse matrix checked (a ValueError naming the row).

    A malformed matrix would have the kernels read outside their arrays;
    see :func:`~.engine.data.checks.check_sparse_structure`.
    """
    if not sp.issparse(X):
        return X
    return check_sparse_structure(X, lambda r: "X" if r is None else f"X, row {r}")


def validated_rows(estimator, X, y=None, *, reset, encoder=None):
    """In-memory ``X`` (and ``y``) checked as scikit-learn's ``validate_data`` does: ``(rows, y)``.

    With an ``encoder`` (a feature map that reads strings, such as
    :class:`~dask_streamsvm.features.HashingMap`), ``X`` may hold strings;
    the names and number of its columns are checked, and ``rows`` are its
    encoded raw rows.  Beyond scikit-learn's checks: a sparse matrix's
    index arrays (:func:`checked_sparse`) and, with ``y`` (to train on),
    rows whose ``x . x`` overflows (an error that says to scale the
    features; a prediction needs only ``w . x``).
    """
    check = {"accept_sparse": "csr", "dtype": [np.float64, np.float32], "accept_large_sparse": True}
    X = checked_sparse(X)
    if encoder is None:
        if y is None:
            return validate_data(estimator, X, reset=reset, **check), None
        rows, y = validate_data(estimator, X, y, reset=reset, order="C", **check)
        return _finite_norms(estimator, rows), y
    if not hasattr(X, "columns"):
        X = check_array(X, **check)
    validate_data(estimator, X, skip_check_array=True, reset=reset)  # n_features_in_, feature_names_in_
    rows = encoder.encode(X)
    if y is not None:
        # 1-D and finite, as scikit-learn checks y (validate_data with X would reset feature names).
        y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name="y"), warn=True)
        if y.shape[0] != rows.shape[0]:
            raise ValueError(f"X has {rows.shape[0]} rows but y has {y.shape[0]} labels.")
        _finite_norms(estimator, rows)
    return rows, y


def _finite_norms(estimator, rows):
    """``rows``, or a ValueError naming the first whose ``x . x`` overflows float64.

    With a feature map that scales the rows before the solver reads them
    (``scales_rows``: :class:`~dask_streamsvm.features.Standardize`), the
    check is the scaled rows' (the map makes it): a column at 1e200 is
    then a column like any other.
    """
    if getattr(getattr(estimator, "feature_map", None), "scales_rows", False):
        return rows
    over = overflowing_rows(rows)
    if over.any():
        r = int(np.flatnonzero(over)[0])
        raise ValueError(overflow_message(f"X, row {r}", rows, r, skip=hasattr(estimator, "on_invalid")))
    return rows


# -- declared parameter constraints -------------------------------------------------------
#
# An estimator declares ``_parameter_constraints = {name: check}`` and calls
# :func:`validate_params` once at the top of ``fit``: every check takes
# ``(name, value)`` and returns the value to use (parsed, converted) or raises
# an error that names the parameter, shows the value and says what to pass.


def validate_params(estimator):
    """Every parameter of ``estimator._parameter_constraints``, checked: ``{name: value}``.

    The error of a check carries the parameter's name as its ``parameter``
    attribute, so that a caller (the command line) can name the option that set it.
    """
    checked = {}
    for name, check in estimator._parameter_constraints.items():
        try:
            checked[name] = check(name, getattr(estimator, name))
        except (TypeError, ValueError) as exc:
            exc.parameter = name
            raise
    return checked


def positive_float(name, value):
    return check_positive_float(name, value)


def cost(reason, high=np.inf):
    """Check: ``C``, a finite number from :data:`~.engine.plan.problem.MIN_C` (the linear models'
    bound) to ``high``; ``reason`` says what breaks beyond the range, for the error."""

    def check(name, value):
        value = check_positive_float(name, value)
        if not MIN_C <= value <= high:
            above = "" if high == np.inf else f" and <= {high:g}"
            raise ValueError(
                f"{name} must be >= {MIN_C:g}{above}, got {name}={value!r}: {reason} "
                f"Pass {name} within that range (the default is 1.0)."
            )
        return value

    return check


def non_negative_float(name, value):
    return check_positive_float(name, value, allow_zero=True)


def integer(low=1, high=None):
    """Check: an integer in ``[low, high]``."""

    def check(name, value):
        return check_positive_int(name, value, low=low, high=high)

    return check


def one_of(*choices):
    """Check: one of the strings ``choices``."""

    def check(name, value):
        return check_choice(name, value, choices)

    return check


def positive_float_or(*words):
    """Check: one of the strings ``words`` (such as ``"scale"``), or a finite number > 0 (as a float)."""

    def check(name, value):
        if isinstance(value, str) and value in words:
            return value
        return check_positive_float(name, value)

    return check


def boolean(name, value):
    """Check: True or False (NumPy's too), as a bool; a string such as ``"no"``, None or 0/1 is an error."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {name}={value!r} of type {type(value).__name__}.")


def verbosity(name, value):
    """Check: an integer >= 0 (or a bool, as 0 or 1)."""
    if isinstance(value, bool | np.bool_):
        return int(value)
    return check_positive_int(name, value, low=0)


def random_state(name, value):
    """Check: what ``sklearn.utils.check_random_state`` takes (None, an int in [0, 2**32 - 1], a
    ``numpy.random.RandomState``); the value itself is returned, a RandomState undrawn from."""
    try:
        check_random_state(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be None, an int in [0, 2**32 - 1] or a numpy.random.RandomState, got "
            f"{name}={value!r} of type {type(value).__name__}."
        ) from None
    return value


def pair(name, value):
    """Check: None, or a pair ``(X, y)`` (a tuple or list of two)."""
    if value is None or (isinstance(value, tuple | list) and len(value) == 2):
        return value
    shown = reprlib.repr(value)
    raise ValueError(
        f"{name} must be a pair (X_val, y_val) or None, got {name}={shown} of type {type(value).__name__}."
    )


# The largest intercept_scaling: its square is in every row's squared norm, ||x||^2 +
# intercept_scaling^2, which float64 holds up to about 1.8e308 (intercept_scaling about 1.3e154).
MAX_INTERCEPT_SCALING = 1e150


def intercept_scaling(name, value):
    """Check: a finite number in ``[SMALLEST_NORMAL, MAX_INTERCEPT_SCALING]``, as a float."""
    try:
        return check_positive_float(name, value, high=MAX_INTERCEPT_SCALING)
    except ValueError as exc:
        if not (isinstance(value, numbers.Real) and np.isfinite(value) and value > MAX_INTERCEPT_SCALING):
            raise
        raise ValueError(
            f"{exc} Its square is added to every row's squared norm, which float64 cannot hold beyond "
            "about 1.8e308: pass a smaller intercept_scaling (a value near the features' scale)."
        ) from None


def auto_or_bool(name, value):
    """Check: ``"auto"``, True or False."""
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ValueError(f"{name} must be 'auto', True or False; got {name}={value!r}.")


def optional(check):
    """Check: None, or what ``check`` accepts."""

    def checked(name, value):
        return None if value is None else check(name, value)

    return checked


# The most bytes a size may be: the engine counts bytes in int64 (10**30 was an OverflowError).  Sizes
# below it are accepted whatever the machine: the cache and the blocks grow with the rows they hold.
MAX_BYTES = int(np.iinfo(np.int64).max)


def _bytes(name, value, share):
    """:func:`~.engine.plan.sizes.parse_bytes` of ``value``, with its type and its int64 range checked."""
    also = ", or a share of the training data such as '10%'" if share else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | str):
        raise TypeError(
            f"{name} must be an int or a string such as '512MB'{also}, got {name}={value!r} of type "
            f"{type(value).__name__}."
        )
    parsed = parse_bytes(value, name, share=share)
    if not isinstance(parsed, CacheShare) and parsed > MAX_BYTES:
        raise ValueError(
            f"{name} must be at most 2**63 - 1 bytes (about 9.2 EB), got {name}={value!r}. Pass a "
            f"smaller size{also}."
        )
    return parsed


def byte_size(name, value):
    """A number of bytes: an int or a string such as ``"512MB"`` (:func:`~.engine.plan.sizes.parse_bytes`)."""
    return _bytes(name, value, share=False)


def cache_size(name, value):
    """:func:`byte_size`, or a share of the training data such as ``"10%"`` (a
    :class:`~.engine.plan.sizes.CacheShare`)."""
    return _bytes(name, value, share=True)


def class_weight(name, value):
    return check_class_weight(value)


def callables(name, value):
    """None or a list of callables, as a list."""
    try:
        items = list(value or [])
    except TypeError:
        items = None
    if items is None or not all(callable(cb) for cb in items):
        raise TypeError(f"{name} must be a list of callables, got {value!r}.")
    return items


def feature_map(name, value):
    """None, or a map of :mod:`dask_streamsvm.features` (what has ``spec`` and ``raw_width``)."""
    if value is not None and not (hasattr(value, "spec") and hasattr(value, "raw_width")):
        raise TypeError(
            f"{name} must be a map of dask_streamsvm.features (PolynomialMap, ...) or None, got {value!r}."
        )
    return value


def unit_interval(name, value):
    """Check: a real number in ``[0, 1]``, as float (``l1_ratio``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number in [0, 1], got {name}={value!r} of type {type(value).__name__}."
        )
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {name}={value!r}.")
    return float(value)


def anything(name, value):
    return value


def checked_params(estimator):
    """The estimator's parameters, checked once (its ``_parameter_constraints``): ``{name: value}``,
    and, for an estimator with ``intercept_scaling``, ``bias``: the constant feature's value
    (``intercept_scaling``; 0 without ``fit_intercept``)."""
    params = validate_params(estimator)
    if hasattr(estimator, "intercept_scaling"):
        params["bias"] = (
            intercept_scaling("intercept_scaling", estimator.intercept_scaling)
            if (estimator.fit_intercept)
            else 0.0
        )
    return params

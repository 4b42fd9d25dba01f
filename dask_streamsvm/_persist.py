"""Model files without pickle: NumPy arrays and JSON metadata in a zip file.

Layout of a model file (an archive of :mod:`.engine.archive`)::

    model.json          format name and version, library version, estimator
                        class, parameters, scalar attributes, history, and
                        for each array its dtype, shape and SHA-256
    arrays/<name>.npy   one array per fitted attribute, NumPy's .npy format

What a ``LinearSVC`` keeps is its schema here: :func:`model_params`,
:func:`model_state` and :func:`set_model_state`.  This module imports no
estimator: :func:`load_model` is given the classes a file may name.

Loading reads the JSON with :mod:`json` and the arrays with
``numpy.load(allow_pickle=False)``, so a file can carry data but never code.
Every array is checked against its recorded checksum, dtype and shape, the
estimator class against a list of known ones, and the parameters and
attributes against the estimator's own checks: a truncated, edited or
foreign file raises :class:`ValueError` naming what is wrong.
"""

import os

import numpy as np

from .engine.archive import META, plain, plain_array, read_archive, write_archive
from .engine.problem import model_width
from .features import ColumnMaps, HashingMap, MapOf, PolynomialMap, SpectrumMap, WeightedDegreeMap

FORMAT = "dask-streamsvm-model"
VERSION = 1
ESTIMATORS = ("LinearSVC",)  # the estimators whose model-file schema is below
FEATURE_MAPS = {
    cls.__name__: cls
    for cls in (ColumnMaps, HashingMap, MapOf, PolynomialMap, SpectrumMap, WeightedDegreeMap)
}


def _jsonable(value, what):
    """Plain JSON value of a parameter or attribute (tuples become lists).

    A feature map is saved as its class name and parameters, and rebuilt
    from a fixed list of map classes when loaded.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if type(value).__name__ in FEATURE_MAPS and isinstance(value, FEATURE_MAPS[type(value).__name__]):
        params = {k: _jsonable(v, f"{what}.{k}") for k, v in value.get_params(deep=False).items()}
        return {"__feature_map__": [type(value).__name__, params]}
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, dict):
        # Keys may be class labels of any type: keep them as pairs.
        return {"__pairs__": [[_jsonable(k, what), _jsonable(v, what)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [_jsonable(v, what) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufU":
        return value.tolist()
    raise TypeError(
        f"cannot save {what}={value!r} in a model file (only numbers, strings, lists and dicts of them); "
        "set it to a plain value, or use pickle."
    )


def _from_json(value):
    if isinstance(value, dict) and set(value) == {"__feature_map__"}:
        name, params = value["__feature_map__"]
        if name not in FEATURE_MAPS:
            raise ValueError(f"unknown feature map {name!r}; known: {sorted(FEATURE_MAPS)}")
        return FEATURE_MAPS[name](**{k: _from_json(v) for k, v in params.items()})
    if isinstance(value, dict):
        if set(value) != {"__pairs__"}:
            raise ValueError(f"unexpected JSON object {value!r}")
        return {_from_json(k): _from_json(v) for k, v in value["__pairs__"]}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def model_params(estimator):
    """The parameters a model file keeps: those that are not data (callbacks, validation data) or RNGs."""
    params = estimator.get_params(deep=False)
    params["callbacks"] = params["validation_data"] = None
    if not isinstance(params["random_state"], int | np.integer | None):
        params["random_state"] = None
    return params


def model_state(estimator):
    """``(arrays, attributes)``: the fitted arrays and the JSON attributes of a fitted ``LinearSVC``."""
    arrays = {"coef_": estimator.coef_, "intercept_": estimator.intercept_, "classes_": estimator.classes_}
    if hasattr(estimator, "probA_"):
        arrays.update(probA_=estimator.probA_, probB_=estimator.probB_)
    attributes = {
        "n_features_in_": estimator.n_features_in_,
        "n_iter_": estimator.n_iter_,
        "objective_": np.atleast_1d(estimator.objective_).tolist(),
        "duality_gap_": np.atleast_1d(estimator.duality_gap_).tolist(),
        "history_": [{k: plain(v) for k, v in r.items()} for r in estimator.history_],
    }
    if hasattr(estimator, "feature_names_in_"):
        attributes["feature_names_in_"] = [str(c) for c in estimator.feature_names_in_]
    return arrays, attributes


def set_model_state(estimator, arrays, attributes):
    """Set what :func:`model_state` wrote on ``estimator``, checked against its parameters.

    Raises ValueError (or KeyError for a missing entry) naming what does
    not fit; ``estimator`` may then be partly set and is to be discarded.
    """
    estimator._params()  # the estimator's own parameter checks
    classes = arrays["classes_"]
    coef = np.asarray(arrays["coef_"], dtype=np.float64)
    intercept = np.asarray(arrays["intercept_"], dtype=np.float64)
    n_features = int(attributes["n_features_in_"])
    k = classes.shape[0]
    rows = 1 if k == 2 else k
    if classes.ndim != 1 or k < 2 or np.unique(classes).shape[0] != k:
        raise ValueError(f"classes_ must hold at least 2 distinct labels, got {classes!r}")
    feature_map = estimator.feature_map
    raw = feature_map.raw_width(n_features) if feature_map is not None else n_features
    width = model_width(raw, estimator._feature_spec(raw))
    if coef.shape != (rows, width) or intercept.shape != (rows,):
        raise ValueError(
            f"coef_ {coef.shape} and intercept_ {intercept.shape} do not fit {k} classes and {width} features"
        )
    if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
        raise ValueError("coef_ or intercept_ holds NaN or infinity")
    objective = np.asarray(attributes["objective_"], dtype=np.float64)
    gap = np.asarray(attributes["duality_gap_"], dtype=np.float64)
    problems = 1 if estimator._crammer_singer else rows
    if objective.shape != (problems,) or gap.shape != (problems,):
        raise ValueError("objective_ and duality_gap_ need one value per problem")
    estimator.classes_, estimator.coef_, estimator.intercept_ = classes, coef, intercept
    estimator.n_features_in_ = n_features
    estimator.n_iter_ = int(attributes["n_iter_"])
    estimator.objective_ = float(objective[0]) if problems == 1 else objective
    estimator.duality_gap_ = float(gap[0]) if problems == 1 else gap
    history = attributes.get("history_", [])
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise ValueError("history_ must be a list of records")
    estimator.history_ = history
    if "feature_names_in_" in attributes:
        names = np.asarray(attributes["feature_names_in_"], dtype=object)
        if names.shape != (n_features,):
            raise ValueError("feature_names_in_ must name every feature")
        estimator.feature_names_in_ = names
    if "probA_" in arrays:
        probA = np.asarray(arrays["probA_"], dtype=np.float64)
        probB = np.asarray(arrays["probB_"], dtype=np.float64)
        if probA.shape != (rows,) or probB.shape != (rows,):
            raise ValueError("probA_ and probB_ need one value per problem")
        estimator.probA_, estimator.probB_ = probA, probB


def save_model(estimator, path):
    """Write ``estimator`` (fitted) to ``path``; see the module docstring."""
    name = type(estimator).__name__
    if name not in ESTIMATORS:
        raise TypeError(f"model files support {sorted(ESTIMATORS)}, not {name}.")
    arrays, attributes = model_state(estimator)
    meta = {
        "estimator": name,
        "params": {key: _jsonable(value, key) for key, value in model_params(estimator).items()},
        "attributes": {key: _jsonable(value, key) for key, value in attributes.items()},
    }
    arrays = {key: plain_array(key, array) for key, array in arrays.items()}
    write_archive(path, FORMAT, VERSION, meta, arrays)


def load_model(path, estimators):
    """Read a model written by :func:`save_model`; raises ValueError for anything else.

    ``estimators`` are the classes a file may name (``dask_streamsvm.load``
    passes them, so this module imports no estimator).
    """
    where = os.fspath(path)
    meta, arrays = read_archive(path, FORMAT, VERSION, "dask_streamsvm model file")
    known = {cls.__name__: cls for cls in estimators if cls.__name__ in ESTIMATORS}
    name = meta.get("estimator")
    if name not in known:
        raise ValueError(f"{where}: unknown estimator {name!r}; expected one of {sorted(known)}.")
    if not isinstance(meta.get("attributes"), dict):
        raise ValueError(f"{where}: {META} lacks its 'attributes' table.")
    try:
        params = {k: _from_json(v) for k, v in meta.get("params", {}).items()}
        attributes = {k: _from_json(v) for k, v in meta["attributes"].items()}
        estimator = known[name]()
        estimator.set_params(**params)
        set_model_state(estimator, arrays, attributes)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{where}: inconsistent model file: {exc}") from None
    return estimator

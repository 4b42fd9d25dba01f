"""Model files without pickle: NumPy arrays and JSON metadata in a zip file.

Layout of a model file (an archive of :mod:`.engine.store.archive`)::

    model.json          format name and version, library version, estimator
                        class, parameters, scalar attributes, history, and
                        for each array its dtype, shape and SHA-256
    arrays/<name>.npy   one array per fitted attribute, NumPy's .npy format

Each estimator class keeps its own schema, as the three methods of
:class:`ModelFile` (its base for ``save``): ``_file_state`` gives the arrays
and the JSON attributes it writes, ``_check_file_table`` checks the shapes
the file declares against its parameters and attributes before any array
is read, and ``_set_file_state`` checks the arrays read and sets the fitted
model.  What each one keeps:

``LinearSVC``, ``LogisticRegression`` (:class:`LinearModelFile`)
    ``classes_``, ``coef_``, ``intercept_`` (and ``probA_``, ``probB_``
    with Platt's sigmoids); attributes ``n_features_in_``, ``n_iter_``,
    ``objective_``, ``duality_gap_``, ``history_``.
``BudgetedSVC``
    ``classes_``, ``intercept_``, ``n_support_``, the support vectors of
    every problem one after the other (``support_vectors_``, a row each),
    their coefficients before the step scaling (``beta``: ``dual_coef_ =
    beta / (lambda t)``) and squared norms as the steps computed them
    (``sv_sqnorm``), ``gamma_``, ``lambda`` and ``steps`` (``t - 1``) as
    one-element arrays, and the merge counters (``merge_counts``,
    ``merge_ticks``); attributes ``n_features_in_``, ``n_iter_`` and the
    timings of ``merge_stats_``.  Everything a prediction reads is an
    array, so that it is checksummed, and ``partial_fit`` goes on from the
    loaded model as from the saved one.
``OnePassSVC``
    ``classes_``, ``coef_``, ``intercept_``; each problem's ball
    (``ball_V`` ... ``ball_n_buf``, the rows still buffered included) and,
    when it standardized, the scaling's ``standardize_mean_`` and
    ``standardize_scale_``, from which ``partial_fit`` goes on; attributes
    ``n_features_in_``, ``majority_fallback_``, ``radius_``,
    ``n_core_vectors_``, ``standardize_`` and the norm every row must have
    (``normalize=False``).

This module imports no estimator: :func:`load_model` is given the classes
a file may name, and names outside :data:`ESTIMATORS` are refused.

Loading reads the JSON with :mod:`json` and the arrays without pickle, so a
file can carry data but never code.  The parameters are checked as ``fit``
checks them, the shapes the file declares against the parameters and
attributes before any array is read, every array against its recorded
checksum, dtype and shape, then its values (real numbers, finite, distinct
classes, counts within the budget and the buffers, ...), and the estimator
class against a list of known ones: a truncated, edited or foreign file
raises :class:`ValueError` naming what is wrong, and what reading it may
allocate is bounded (see :mod:`.engine.store.archive`).  The parameters in
:data:`NOT_SAVED`, which point at code, data or the file system
(``callbacks``, ``validation_data``, ``checkpoint_dir``), are neither saved
nor restored: a loaded model has their defaults.

The checksums detect damage, not tampering: whoever can write a model file
can rewrite its checksums, and a file's parameters and weights decide what
the model predicts.  Load only files you trust, as with scikit-learn's and
XGBoost's model files.
"""

import contextlib
import os

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._stream_classifier import feature_spec
from ._validation import checked_params
from .engine.plan.problem import model_width
from .engine.store.archive import META, ArchiveReader, cut, plain, plain_array, short, write_archive
from .features import (
    ColumnMaps,
    HashingMap,
    MapOf,
    PolynomialMap,
    SpectrumMap,
    Standardize,
    WeightedDegreeMap,
)

FORMAT = "dask-streamsvm-model"
VERSION = 1
WHAT = "dask_streamsvm model file"
# The estimators a model file may name (each class keeps its schema: ModelFile); cli/paths.py copies it.
ESTIMATORS = ("LinearSVC", "LogisticRegression", "OnePassSVC", "BudgetedSVC")
# Parameters that point at code, data or the file system: never saved, never restored from a file.
NOT_SAVED = ("callbacks", "validation_data", "checkpoint_dir")
FEATURE_MAPS = {
    cls.__name__: cls
    for cls in (ColumnMaps, HashingMap, MapOf, PolynomialMap, SpectrumMap, Standardize, WeightedDegreeMap)
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
    """The parameter or attribute value that :func:`_jsonable` wrote; ValueError for anything else."""
    if isinstance(value, dict):
        if set(value) == {"__feature_map__"}:
            return _feature_map(value["__feature_map__"])
        if set(value) == {"__pairs__"}:
            return _pairs(value["__pairs__"])
        raise ValueError(f"unexpected JSON object with keys {short(sorted(value))}")
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _feature_map(entry):
    """A feature map from ``[class name, {parameters}]``, of a fixed list of classes."""
    if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict)):
        raise ValueError(f"a feature map is saved as [class name, {{parameters}}], got {short(entry)}")
    name, params = entry
    if not isinstance(name, str) or name not in FEATURE_MAPS:
        raise ValueError(f"unknown feature map {short(name)}; known: {sorted(FEATURE_MAPS)}")
    return FEATURE_MAPS[name](**{k: _from_json(v) for k, v in params.items()})


def _pairs(pairs):
    """A dict from its ``[key, value]`` pairs (keys may be class labels of any type)."""
    if not (isinstance(pairs, list) and all(isinstance(p, list) and len(p) == 2 for p in pairs)):
        raise ValueError(f"a dict is saved as a list of [key, value] pairs, got {short(pairs)}")
    items = [(_from_json(k), _from_json(v)) for k, v in pairs]
    if any(isinstance(k, list | dict) for k, _ in items):
        raise ValueError(f"dict keys must be numbers or strings, got {short(pairs)}")
    return dict(items)


def model_params(estimator):
    """The parameters a model file keeps: all but :data:`NOT_SAVED`, and random_state only if an int."""
    params = estimator.get_params(deep=False)
    params.update(dict.fromkeys(name for name in NOT_SAVED if name in params))
    if not isinstance(params["random_state"], int | np.integer | None):
        params["random_state"] = None
    return params


class ModelFile:
    """The base of an estimator that model files keep: its :meth:`save`, and the three methods of
    its schema (see the module docstring), which a subclass defines."""

    def save(self, path):
        """Write the fitted model to ``path`` without pickle; read it with :func:`dask_streamsvm.load`.

        The file is a zip archive of ``.npy`` arrays and JSON metadata with a
        format version and checksums, written aside and renamed over ``path``
        once complete (a crash leaves the previous file whole); a symbolic
        link at ``path`` is replaced, never written through, and a path that
        is not a regular file (a directory, FIFO, device or socket) is
        refused.  ``callbacks``, ``validation_data`` and ``checkpoint_dir``
        are not saved, and a ``random_state`` that is not an int is saved as
        None.  The checksums detect damage, not tampering: load only files
        you trust.
        """
        check_is_fitted(self)
        save_model(self, path)

    def _file_state(self):
        """``(arrays, attributes)``: what the file keeps of the fitted model."""
        raise NotImplementedError

    def _check_file_table(self, attributes, table):
        """Check the shapes the file's array table declares (``{name: {"shape": ...}}``) against the
        parameters and ``attributes``, before any array is read."""
        raise NotImplementedError

    def _set_file_state(self, arrays, attributes):
        """Check the arrays read and the attributes, then set the fitted model (ValueError naming what
        does not fit, before anything is set)."""
        raise NotImplementedError


class LinearModelFile(ModelFile):
    """The schema of the linear models (:func:`model_state`, :func:`check_table`,
    :func:`set_model_state`)."""

    def _file_state(self):
        arrays, attributes = model_state(self)
        try:
            check_scores_finite(np.atleast_2d(arrays["coef_"]), np.atleast_1d(arrays["intercept_"]))
        except ValueError as exc:
            raise ValueError(f"{exc}; nothing was written. Fit the model again, with a smaller C.") from None
        return arrays, attributes

    def _check_file_table(self, attributes, table):
        check_table(self, attributes, table)

    def _set_file_state(self, arrays, attributes):
        set_model_state(self, arrays, attributes)


# -- what the schemas check ---------------------------------------------------------------------


def count(attributes, name, low):
    """The integer attribute ``name`` (>= ``low``) of a model file."""
    value = attributes[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {short(value)}")
    return value


def number(attributes, name, low=0.0):
    """The finite number attribute ``name`` (>= ``low``) of a model file, as a float."""
    value = attributes[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < low:
        raise ValueError(f"{name} must be a finite number >= {low:g}, got {short(value)}")
    return float(value)


def declared_classes(table):
    """The number of classes ``classes_``'s entry in the array table declares (before it is read)."""
    classes = table.get("classes_", {}).get("shape")
    if not (isinstance(classes, list) and len(classes) == 1):
        raise ValueError("classes_ must be a 1-D array")
    if classes[0] < 2:
        raise ValueError(f"classes_ must hold at least 2 labels, got {classes[0]}")
    return classes[0]


def declared_shape(table, name, ndim):
    """The shape the array table declares for ``name``, which must have ``ndim`` dimensions."""
    shape = table.get(name, {}).get("shape")
    if not (isinstance(shape, list) and len(shape) == ndim):
        raise ValueError(f"{name} must be a {ndim}-D array")
    return tuple(shape)


def check_shapes(table, shapes, reason):
    """Every array the table declares, and only those, of the shapes ``shapes`` (``{name: shape}``),
    which ``reason`` (words: "2 classes and n_features_in_=3") need."""
    declared = {name: tuple(info["shape"]) for name, info in table.items()}
    if declared.keys() != shapes.keys():
        raise ValueError(f"the arrays are {sorted(declared)}, expected {sorted(shapes)}")
    for name, shape in shapes.items():
        if declared[name] != shape:
            raise ValueError(f"{name} has shape {declared[name]}, but {reason} need {shape}")


def distinct_classes(arrays):
    """``classes_``: at least 2 distinct labels."""
    classes = arrays["classes_"]
    k = classes.shape[0] if classes.ndim == 1 else 0
    if k < 2 or np.unique(classes).shape[0] != k:
        raise ValueError(f"classes_ must hold at least 2 distinct labels, got {short(classes)}")
    return classes


def real(arrays, name, low=None):
    """The array ``name`` as finite float64 values (>= ``low``): never cast from complex numbers,
    strings or dates."""
    kind = np.asarray(arrays[name]).dtype
    if kind.kind not in "iuf":  # complex, strings, dates: never cast (a complex one would lose a part)
        raise ValueError(f"{name} has dtype {kind}; a model's weights are real numbers (float64)")
    values = np.asarray(arrays[name], dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError(f"{name} holds NaN or infinity")
    if low is not None and (values < low).any():
        raise ValueError(f"{name} holds values below {low:g}")
    return values


def integers(arrays, name, low=0, high=2**62):
    """The array ``name`` as int64 counts in ``[low, high]`` (an integer dtype, never cast from floats)."""
    kind = np.asarray(arrays[name]).dtype
    if kind.kind not in "iu":
        raise ValueError(f"{name} has dtype {kind}; it holds counts (int64)")
    values = np.asarray(arrays[name])
    if values.size and (values.min() < low or values.max() > high):
        raise ValueError(f"{name} holds counts outside [{low}, {high}]")
    return values.astype(np.int64)


def booleans(arrays, name):
    """The array ``name`` of booleans."""
    kind = np.asarray(arrays[name]).dtype
    if kind.kind != "b":
        raise ValueError(f"{name} has dtype {kind}; it holds booleans")
    return np.array(arrays[name], dtype=np.bool_)


def feature_names(attributes, n_features):
    """``{"feature_names_in_": names}`` from the attributes, or ``{}`` where the file has none."""
    names = attributes.get("feature_names_in_")
    if names is None:
        return {}
    if not (isinstance(names, list) and len(names) == n_features and all(isinstance(c, str) for c in names)):
        raise ValueError("feature_names_in_ must name every feature")
    return {"feature_names_in_": np.asarray(names, dtype=object)}


def names_of(estimator):
    """The attributes every model file keeps of the input: ``n_features_in_`` and the column names."""
    names = {"n_features_in_": estimator.n_features_in_}
    if hasattr(estimator, "feature_names_in_"):
        names["feature_names_in_"] = [str(c) for c in estimator.feature_names_in_]
    return names


# -- the linear models' schema ------------------------------------------------------------------


def model_state(estimator):
    """``(arrays, attributes)``: the fitted arrays and the JSON attributes of a fitted linear model."""
    arrays = {"coef_": estimator.coef_, "intercept_": estimator.intercept_, "classes_": estimator.classes_}
    if _platt(estimator) and hasattr(estimator, "probA_"):  # predict_proba needs both
        arrays.update(probA_=estimator.probA_, probB_=estimator.probB_)
    attributes = {
        **names_of(estimator),
        "n_iter_": estimator.n_iter_,
        "objective_": np.atleast_1d(estimator.objective_).tolist(),
        "duality_gap_": np.atleast_1d(estimator.duality_gap_).tolist(),
        "history_": [{k: plain(v) for k, v in r.items()} for r in estimator.history_],
        **estimator._fitted_kind(estimator._softmax_fitted()),
    }
    return arrays, attributes


def _platt(estimator):
    """Whether the model fits Platt's sigmoids (``probability=True``): its ``probA_`` and ``probB_``."""
    return estimator._model()[2]


def restore_params(estimator, params):
    """Set the parameters a model file holds on ``estimator``, checked as ``fit`` checks them.

    Those in :data:`NOT_SAVED` are left at their defaults whatever the file
    says.  Raises ValueError (or TypeError) naming the parameter.
    """
    if not isinstance(params, dict):
        raise ValueError(f"'params' must be a JSON object, got {short(params)}")
    own = estimator.get_params(deep=False)
    unknown = sorted(set(params) - set(own) - set(NOT_SAVED))
    if unknown:
        raise ValueError(f"unknown parameters {short(unknown)}")
    estimator.set_params(**{k: _from_json(v) for k, v in params.items() if k not in NOT_SAVED})
    checked_params(estimator)  # _parameter_constraints, through _validation.validate_params
    try:
        check_random_state(estimator.random_state)
    except ValueError:
        raise ValueError(
            f"random_state must be None or an int in [0, 2**32 - 1], got {short(estimator.random_state)}"
        ) from None


def _shapes(estimator, n_features, n_classes):
    """The shape of each fitted array of a model of ``n_classes`` classes and ``n_features`` features."""
    rows = 1 if n_classes == 2 else n_classes
    feature_map = estimator.feature_map
    raw = feature_map.raw_width(n_features) if feature_map is not None else n_features
    width = model_width(raw, feature_spec(feature_map, raw))
    shapes = {"classes_": (n_classes,), "coef_": (rows, width), "intercept_": (rows,)}
    return shapes, {"probA_": (rows,), "probB_": (rows,)}


def check_table(estimator, attributes, table):
    """Check the shapes the archive's array table declares, before any array is read.

    A file whose arrays do not fit its parameters and attributes is refused
    without reading (nor allocating) them.
    """
    k = declared_classes(table)
    n_features = count(attributes, "n_features_in_", low=1)
    shapes, calibration = _shapes(estimator, n_features, k)
    if "probA_" in table or "probB_" in table:
        if not _platt(estimator):
            raise ValueError("probA_ and probB_ are saved, but probability is False")
        shapes.update(calibration)
    check_shapes(table, shapes, f"{k} classes and n_features_in_={n_features}")


def set_model_state(estimator, arrays, attributes):
    """Set what :func:`model_state` wrote on ``estimator``, checked against its parameters.

    Raises ValueError (or KeyError for a missing entry) naming what does
    not fit, before it sets anything.
    """
    checked_params(estimator)  # the estimator's own parameter checks
    fitted = _weights(estimator, arrays, attributes)
    fitted.update(_records(estimator, attributes, fitted["intercept_"].shape[0]))
    for name, value in fitted.items():
        setattr(estimator, name, value)


def _weights(estimator, arrays, attributes):
    """``classes_``, ``coef_``, ``intercept_`` and ``probA_``, ``probB_`` if saved, checked."""
    classes = distinct_classes(arrays)
    k = classes.shape[0]
    shapes, calibration = _shapes(estimator, count(attributes, "n_features_in_", low=1), k)
    if "probA_" in arrays:
        shapes.update(calibration)
    fitted = {"classes_": classes}
    for name in [name for name in shapes if name != "classes_"]:
        fitted[name] = real(arrays, name)
        if fitted[name].shape != shapes[name]:
            raise ValueError(
                f"{name} {fitted[name].shape} does not fit {k} classes and {shapes['coef_'][1]} features"
            )
    check_scores_finite(fitted["coef_"], fitted["intercept_"])
    return fitted


def check_scores_finite(coef, intercept):
    """A ValueError unless every class's ``sum |coef_| + |intercept_|`` is a finite float64: else a
    row of values in [-1, 1] scores beyond float64, and its probabilities are NaN (inf - inf)."""
    with np.errstate(over="ignore"):
        reach = np.abs(coef).sum(axis=1) + np.abs(intercept)
    if not np.isfinite(reach).all():
        raise ValueError(
            "coef_ and intercept_ are too large to score with: their absolute values sum beyond "
            "float64's largest number (1.8e308), so rows of values within [-1, 1] score as infinity "
            "and predict_proba as NaN"
        )


def _records(estimator, attributes, rows):
    """The JSON attributes: counts, certificates, history and feature names, checked."""
    n_features = count(attributes, "n_features_in_", low=1)
    objective = np.asarray(attributes["objective_"], dtype=np.float64)
    gap = np.asarray(attributes["duality_gap_"], dtype=np.float64)
    kind = _fitted_kind(estimator, attributes)
    joint = estimator._model()[1] or kind.get("multi_class_") == "multinomial"  # one joint problem
    problems = 1 if joint else rows  # one joint problem, or a row each
    if objective.shape != (problems,) or gap.shape != (problems,):
        raise ValueError("objective_ and duality_gap_ need one value per problem")
    history = attributes.get("history_", [])
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise ValueError("history_ must be a list of records")
    return {
        "n_features_in_": n_features,
        "n_iter_": count(attributes, "n_iter_", low=0),
        "objective_": float(objective[0]) if problems == 1 else objective,
        "duality_gap_": float(gap[0]) if problems == 1 else gap,
        "history_": history,
        **feature_names(attributes, n_features),
        **kind,
    }


def _fitted_kind(estimator, attributes):
    """The attributes that say which model was fitted (``multi_class_``), checked; a file written
    before they were saved fitted the model its parameters name (``multi_class="multinomial"``: the
    softmax model; the one-vs-rest problems otherwise)."""
    saved = {name: attributes[name] for name in estimator._fitted_kind(False) if name in attributes}
    kind = estimator._fitted_kind(estimator._multinomial())
    for name, value in saved.items():
        allowed = (estimator._fitted_kind(False)[name], estimator._fitted_kind(True)[name])
        if value not in allowed:
            raise ValueError(f"{name} must be one of {short(list(allowed))}, got {short(value)}")
        kind[name] = value
    return kind


# -- writing and reading ------------------------------------------------------------------------


def save_model(estimator, path):
    """Write ``estimator`` (fitted) to ``path``; see the module docstring."""
    name = type(estimator).__name__
    if name not in ESTIMATORS or not isinstance(estimator, ModelFile):
        raise TypeError(f"model files support {sorted(ESTIMATORS)}, not {name}.")
    arrays, attributes = estimator._file_state()
    meta = {
        "estimator": name,
        "params": {key: _jsonable(value, key) for key, value in model_params(estimator).items()},
        "attributes": {key: _jsonable(value, key) for key, value in attributes.items()},
    }
    arrays = {key: plain_array(key, array) for key, array in arrays.items()}
    write_archive(path, FORMAT, VERSION, meta, arrays)


@contextlib.contextmanager
def _inconsistent(where):
    """Errors of rebuilding the model from a file's values, as one ValueError naming the file."""
    try:
        yield
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        detail = f"{cut(str(exc))} is missing" if isinstance(exc, KeyError) else cut(str(exc))
        raise ValueError(f"{where}: inconsistent model file: {detail}") from None


def load_model(path, estimators):
    """Read a model written by :func:`save_model`; raises ValueError for anything else.

    ``estimators`` are the classes a file may name (``dask_streamsvm.load``
    passes them, so this module imports no estimator), each with its schema
    (:class:`ModelFile`).  The parameters and attributes are checked, and
    the shapes the file declares checked against them, before any array is
    read.
    """
    where = os.fspath(path)
    with ArchiveReader(path, WHAT) as archive:
        archive.expect(FORMAT, VERSION)
        meta = archive.meta
        known = {
            cls.__name__: cls
            for cls in estimators
            if cls.__name__ in ESTIMATORS and issubclass(cls, ModelFile)
        }
        name = meta.get("estimator")
        if not isinstance(name, str) or name not in known:
            raise ValueError(f"{where}: unknown estimator {short(name)}; expected one of {sorted(known)}.")
        attributes = meta.get("attributes")
        if not isinstance(attributes, dict):
            raise ValueError(f"{where}: {META} lacks its 'attributes' table.")
        estimator = known[name]()
        with _inconsistent(where):
            restore_params(estimator, meta.get("params", {}))
            attributes = {k: _from_json(v) for k, v in attributes.items()}
            estimator._check_file_table(attributes, meta["arrays"])
        arrays = archive.arrays()
    with _inconsistent(where):
        estimator._set_file_state(arrays, attributes)
    return estimator

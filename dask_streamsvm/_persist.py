"""Model files without pickle: NumPy arrays and JSON metadata in a zip file.

Layout of a model file (a zip archive)::

    model.json          format name and version, library version, estimator
                        class, parameters, scalar attributes, history, and
                        for each array its dtype, shape and SHA-256
    arrays/<name>.npy   one array per fitted attribute, NumPy's .npy format

Loading reads the JSON with :mod:`json` and the arrays with
``numpy.load(allow_pickle=False)``, so a file can carry data but never code.
Every array is checked against its recorded checksum, dtype and shape, the
estimator class against a list of known ones, and the parameters and
attributes against the estimator's own checks: a truncated, edited or
foreign file raises :class:`ValueError` naming what is wrong.
"""

import hashlib
import json
import os
import zipfile

import numpy as np

FORMAT = "dask-streamsvm-model"
VERSION = 1
_META = "model.json"


def _estimators():
    from .linear import LinearSVC

    return {"LinearSVC": LinearSVC}


def _feature_maps():
    from .features import ColumnMaps, HashingMap, MapOf, PolynomialMap, SpectrumMap, WeightedDegreeMap

    return {
        "ColumnMaps": ColumnMaps,
        "HashingMap": HashingMap,
        "MapOf": MapOf,
        "PolynomialMap": PolynomialMap,
        "SpectrumMap": SpectrumMap,
        "WeightedDegreeMap": WeightedDegreeMap,
    }


def _jsonable(value, what):
    """Plain JSON value of a parameter or attribute (tuples become lists).

    A feature map is saved as its class name and parameters, and rebuilt
    from a fixed list of map classes when loaded.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if type(value).__name__ in _feature_maps() and isinstance(value, _feature_maps()[type(value).__name__]):
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
        if name not in _feature_maps():
            raise ValueError(f"unknown feature map {name!r}; known: {sorted(_feature_maps())}")
        return _feature_maps()[name](**{k: _from_json(v) for k, v in params.items()})
    if isinstance(value, dict):
        if set(value) != {"__pairs__"}:
            raise ValueError(f"unexpected JSON object {value!r}")
        return {_from_json(k): _from_json(v) for k, v in value["__pairs__"]}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _plain_array(name, array):
    array = np.asarray(array)
    if array.dtype.kind == "O":
        values = array.ravel().tolist()
        if all(isinstance(v, str) for v in values):
            array = array.astype(str)
        elif all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
            array = array.astype(np.int64)
        else:
            raise TypeError(
                f"cannot save {name}: its values {values[:3]!r}... are Python objects; model files "
                "hold numbers and strings only. Use pickle for this model."
            )
    return np.ascontiguousarray(array)


def save_model(estimator, path):
    """Write ``estimator`` (fitted) to ``path``; see the module docstring."""
    from . import __version__

    name = type(estimator).__name__
    if name not in _estimators():
        raise TypeError(f"model files support {sorted(_estimators())}, not {name}.")
    arrays, attributes = estimator._model_state()
    params = {key: _jsonable(value, key) for key, value in estimator._model_params().items()}
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "library_version": __version__,
        "estimator": name,
        "params": params,
        "attributes": {key: _jsonable(value, key) for key, value in attributes.items()},
        "arrays": {},
    }
    write_archive(path, meta, {key: _plain_array(key, array) for key, array in arrays.items()})


class _Hashing:
    """A write-only file object that hashes what passes through it."""

    def __init__(self, target):
        self.target, self.sha = target, hashlib.sha256()

    def write(self, data):
        self.sha.update(data)
        return self.target.write(data)


def write_archive(path, meta, arrays, *, compress=True):
    """Write ``meta`` (JSON, with ``meta["arrays"]`` filled in) and ``arrays`` to a zip file at ``path``.

    Each array is streamed into the archive in NumPy's ``.npy`` format with
    its SHA-256 recorded in the metadata, so large arrays are not copied in
    memory.  The file appears at ``path`` only once complete (written
    beside it, flushed to disk and renamed): a crash mid-write leaves the
    previous file, never half of one.
    """
    meta = dict(meta, arrays={})
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    try:
        with open(tmp, "wb") as raw:
            with zipfile.ZipFile(raw, "w", compression=mode) as archive:
                for key, array in arrays.items():
                    array = np.ascontiguousarray(array)
                    with archive.open(f"arrays/{key}.npy", "w", force_zip64=True) as member:
                        sink = _Hashing(member)
                        np.lib.format.write_array(sink, array, allow_pickle=False)
                    meta["arrays"][key] = {
                        "dtype": array.dtype.str,
                        "shape": list(array.shape),
                        "sha256": sink.sha.hexdigest(),
                    }
                archive.writestr(_META, json.dumps(meta, indent=1, allow_nan=True))
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_archive(path, fmt, version, what):
    """``(meta, arrays)`` of an archive written by :func:`write_archive`, every array checked.

    ``fmt`` and ``version`` are the expected format name and version; ``what``
    names the kind of file in messages.  Anything else raises ValueError
    (FileNotFoundError if there is no file).
    """
    where = os.fspath(path)
    try:
        archive = zipfile.ZipFile(where)
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{where} is not a {what} (not a zip archive: {exc}).") from None
    with archive:
        names = set(archive.namelist())
        if _META not in names:
            raise ValueError(f"{where} is not a {what} (no {_META} inside).")
        try:
            meta = json.loads(archive.read(_META).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{where}: {_META} is not valid JSON ({exc}); the file is damaged.") from None
        if not isinstance(meta, dict) or meta.get("format") != fmt:
            raise ValueError(f"{where} is not a {what} (format is not {fmt!r}).")
        if meta.get("version") != version:
            raise ValueError(
                f"{where} has format version {meta.get('version')!r}; this dask_streamsvm "
                f"reads version {version}. Load it with the library version that wrote it "
                f"({meta.get('library_version')!r}) or start again."
            )
        expected = meta.get("arrays")
        if not isinstance(expected, dict):
            raise ValueError(f"{where}: {_META} lacks its 'arrays' table.")
        arrays = {}
        for key, info in expected.items():
            member = f"arrays/{key}.npy"
            if member not in names:
                raise ValueError(f"{where}: array {key!r} is missing from the file.")
            sha = hashlib.sha256()
            with archive.open(member) as fh:
                for chunk in iter(lambda fh=fh: fh.read(1 << 24), b""):
                    sha.update(chunk)
            if sha.hexdigest() != info.get("sha256"):
                raise ValueError(
                    f"{where}: array {key!r} does not match its checksum; the file was modified or damaged."
                )
            try:
                with archive.open(member) as fh:
                    array = np.lib.format.read_array(fh, allow_pickle=False)
            except ValueError as exc:
                raise ValueError(f"{where}: array {key!r} cannot be read without pickle ({exc}).") from None
            if array.dtype.str != info.get("dtype") or list(array.shape) != info.get("shape"):
                raise ValueError(f"{where}: array {key!r} has dtype/shape other than recorded.")
            arrays[key] = array
        extra = {n for n in names if n.startswith("arrays/")} - {f"arrays/{k}.npy" for k in expected}
        if extra:
            raise ValueError(f"{where}: unexpected members {sorted(extra)}; the file was modified.")
    return meta, arrays


def load_model(path):
    """Read a model written by ``save``; raises ValueError for anything else."""
    where = os.fspath(path)
    meta, arrays = read_archive(path, FORMAT, VERSION, "dask_streamsvm model file")
    estimators = _estimators()
    name = meta.get("estimator")
    if name not in estimators:
        raise ValueError(f"{where}: unknown estimator {name!r}; expected one of {sorted(estimators)}.")
    if not isinstance(meta.get("attributes"), dict):
        raise ValueError(f"{where}: {_META} lacks its 'attributes' table.")
    try:
        params = {k: _from_json(v) for k, v in meta.get("params", {}).items()}
        attributes = {k: _from_json(v) for k, v in meta["attributes"].items()}
        estimator = estimators[name]()
        estimator.set_params(**params)
        estimator._set_model_state(arrays, attributes)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{where}: inconsistent model file: {exc}") from None
    return estimator

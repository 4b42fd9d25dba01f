"""Zip archives of NumPy arrays and JSON: the container of model files and checkpoints.

Layout of an archive::

    model.json          format name and version, the library version that
                        wrote it, the caller's metadata, and for each array
                        its dtype, shape and SHA-256
    arrays/<name>.npy   one array each, NumPy's .npy format

:func:`write_archive` writes one atomically; :func:`read_archive` reads it
without pickle and checks every array against its recorded checksum, dtype
and shape.  :func:`plain` and :func:`plain_array` turn values into what an
archive can hold.  Model files (:mod:`dask_streamsvm._persist`) and
checkpoints (:mod:`.checkpoint`) are both archives; what their metadata
means is theirs to say.
"""

import hashlib
import importlib.metadata
import json
import os
import zipfile

import numpy as np

META = "model.json"

try:  # the installed distribution's version, which hatch takes from dask_streamsvm.__version__
    LIBRARY_VERSION = importlib.metadata.version("dask-streamsvm")
except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
    LIBRARY_VERSION = None


def plain(value):
    """A value as plain JSON: NumPy scalars become Python numbers."""
    return value.item() if isinstance(value, np.generic) else value


def plain_array(name, array):
    """``array`` as a contiguous array of numbers or strings, which ``.npy`` holds without pickle.

    Object arrays of strings or of ints are converted; any other object
    array raises TypeError naming ``name``.
    """
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


class _Hashing:
    """A write-only file object that hashes what passes through it."""

    def __init__(self, target):
        self.target, self.sha = target, hashlib.sha256()

    def write(self, data):
        self.sha.update(data)
        return self.target.write(data)


def write_archive(path, fmt, version, meta, arrays, *, compress=True):
    """Write ``meta`` (JSON) and ``arrays`` to a zip file at ``path``, as format ``fmt`` ``version``.

    The metadata written is ``format``, ``version`` and ``library_version``
    (:data:`LIBRARY_VERSION`), then ``meta``, then the ``arrays`` table.
    Each array is streamed into the archive in NumPy's ``.npy`` format with
    its SHA-256 recorded in that table, so large arrays are not copied in
    memory.  The file appears at ``path`` only once complete (written
    beside it, flushed to disk and renamed): a crash mid-write leaves the
    previous file, never half of one.
    """
    meta = {"format": fmt, "version": version, "library_version": LIBRARY_VERSION, **meta, "arrays": {}}
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
                archive.writestr(META, json.dumps(meta, indent=1, allow_nan=True))
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
        if META not in names:
            raise ValueError(f"{where} is not a {what} (no {META} inside).")
        try:
            meta = json.loads(archive.read(META).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{where}: {META} is not valid JSON ({exc}); the file is damaged.") from None
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
            raise ValueError(f"{where}: {META} lacks its 'arrays' table.")
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

"""Readers that turn files into lazy Dask collections."""

import io as _io
import math
from glob import glob

import numpy as np
import scipy.sparse as sp

_COMPRESSED = (".bz2", ".gz", ".xz", ".zst", ".lz4")


def _expand(path_or_glob):
    if isinstance(path_or_glob, (list, tuple)):
        paths = [str(p) for p in path_or_glob]
    else:
        text = str(path_or_glob)
        paths = sorted(glob(text)) if any(c in text for c in "*?[") else [text]
    if not paths:
        raise FileNotFoundError(f"no file matches {path_or_glob!r}")
    return paths


def _parse_block(data, n_features, dtype, zero_based, where):
    """LIBSVM text -> (CSR rows, labels), the same as scikit-learn's reader gives.

    The compiled parser (:mod:`.kernels.text`) reads the common form exactly;
    whatever it declines goes to scikit-learn's reader.
    """
    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm.kernels.text import parse_block

    if not data.strip():
        return sp.csr_matrix((0, n_features), dtype=dtype), np.empty(0, dtype=np.float64)
    fast = parse_block(data, n_features, zero_based)
    if fast is not None:
        values, indices, indptr, y, width = fast
        with np.errstate(over="ignore"):  # past float32's range: inf, as scikit-learn's reader gives
            values = values.astype(dtype, copy=False)
        X = sp.csr_matrix((values, indices, indptr), shape=(y.shape[0], width))
    else:
        try:
            X, y = load_svmlight_file(
                _io.BytesIO(data), n_features=n_features, dtype=dtype, zero_based=zero_based
            )
        except ValueError as exc:
            raise ValueError(f"{where}: malformed LIBSVM data: {exc}") from None
        X = X.tocsr()
    # 32-bit indices and row pointers where they fit, as SciPy makes them: scikit-learn's partial_fit
    # (dask-ml's Incremental) refuses 64-bit ones.
    X.indices = X.indices.astype(np.int32, copy=False)
    if X.nnz < np.iinfo(np.int32).max:
        X.indptr = X.indptr.astype(np.int32, copy=False)
    return X, y.astype(np.float64, copy=False)


def _max_index(data, zero_based, where):
    X, _ = _parse_block(data, None, np.float64, zero_based, where)
    return X.shape[1]


def read_libsvm(path_or_glob, n_features=None, *, blocksize="64MB", dtype=np.float64, zero_based=False):
    """Lazy ``(X, y)`` from LIBSVM/svmlight text files.

    Parameters
    ----------
    path_or_glob : str, path, or list of them
        Files in LIBSVM format (``label idx:val ...``); ``.bz2``, ``.gz`` and
        ``.xz`` are decompressed on the fly (one partition per compressed
        file, since they cannot be split).
    n_features : int, optional
        Number of features. When omitted the files are read once, now, to
        find the largest feature index.
    blocksize : int or str, default "64MB"
        Bytes per partition of uncompressed files; each partition ends at a
        line end.
    dtype : float32 or float64, default float64
    zero_based : bool, default False
        Whether feature indices start at 0 (LIBSVM files start at 1).

    Returns
    -------
    X : dask.array.Array of shape (nan, n_features) with SciPy CSR chunks
    y : dask.array.Array of shape (nan,), float64
        Row counts are unknown until the partitions are read.
    """
    import dask
    import dask.array as da
    from dask.bytes import read_bytes

    paths = _expand(path_or_glob)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got dtype={dtype}.")
    blocks = []
    for path in paths:
        size = None if path.endswith(_COMPRESSED) else blocksize
        _, parts = read_bytes(path, delimiter=b"\n", blocksize=size, sample=False, compression="infer")
        for k, part in enumerate(parts[0]):
            blocks.append((part, f"{path} (block {k})"))
    if n_features is None:
        widths = dask.compute(*[dask.delayed(_max_index)(b, zero_based, w) for b, w in blocks])
        n_features = max(widths) if widths else 0
    elif not (isinstance(n_features, (int, np.integer)) and n_features > 0):
        raise ValueError(f"n_features must be a positive integer, got n_features={n_features!r}.")
    parsed = [dask.delayed(_parse_block, nout=2)(b, int(n_features), dtype, zero_based, w) for b, w in blocks]
    meta = sp.csr_matrix((0, n_features), dtype=dtype)
    X = da.concatenate(
        [da.from_delayed(p[0], shape=(math.nan, n_features), dtype=dtype, meta=meta) for p in parsed],
        axis=0,
    )
    y = da.concatenate(
        [da.from_delayed(p[1], shape=(math.nan,), dtype=np.float64) for p in parsed],
        axis=0,
    )
    return X, y


_LIBSVM_SUFFIXES = (".svm", ".libsvm", ".svmlight", ".txt", ".t", ".bz2", ".gz", ".xz")


def open_path(path, y=None):
    """Lazy ``(X, y)`` from a Parquet, CSV or LIBSVM path (or glob).

    Parquet and CSV give a Dask DataFrame; ``y`` must then name the label
    column.  LIBSVM files carry their labels, so ``y`` must be None.
    """
    import os

    import dask.dataframe as dd

    text = os.fspath(path)
    lower = text.lower()
    is_table = lower.endswith((".parquet", ".pq", ".csv", ".csv.gz", ".csv.bz2")) or os.path.isdir(text)
    if is_table and not isinstance(y, str):
        raise ValueError(f"{text!r} is a table: pass the label column's name as y, got y={y!r}.")
    if lower.endswith((".parquet", ".pq")) or os.path.isdir(text):
        frame = dd.read_parquet(text)
    elif lower.endswith((".csv", ".csv.gz", ".csv.bz2")):
        frame = dd.read_csv(text)
    elif lower.endswith(_LIBSVM_SUFFIXES) or any(c in text for c in "*?["):
        if y is not None:
            raise ValueError(
                f"{text!r} is read as LIBSVM, whose files carry their labels: pass y=None, not y={y!r}."
            )
        return read_libsvm(text)
    else:
        raise ValueError(
            f"cannot tell the format of {text!r}: use a .parquet, .csv or LIBSVM (.svm, .txt, .bz2) "
            "path, or open it with dask.dataframe / dask_streamsvm.read_libsvm yourself."
        )
    return frame, y


def as_dask(X, y, sample_weight=None, n_partitions=16):
    """In-memory data as Dask collections of about ``n_partitions`` row blocks."""
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd

    n = X.shape[0]
    step = max(1, -(-n // n_partitions))
    if isinstance(X, pd.DataFrame):
        label = "__dask_streamsvm_label__"
        frame = X.assign(**{label: np.asarray(y)})
        if sample_weight is not None:
            frame["__dask_streamsvm_weight__"] = np.asarray(sample_weight, dtype=np.float64)
        ddf = dd.from_pandas(frame, chunksize=step, sort=False)
        weights = None
        if sample_weight is not None:
            weights = ddf["__dask_streamsvm_weight__"]
            ddf = ddf.drop(columns="__dask_streamsvm_weight__")
        return ddf.drop(columns=label), ddf[label], weights
    y = np.asarray(y)
    if sp.issparse(X):
        Xd, yd = csr_to_dask(sp.csr_matrix(X), y, n_partitions)
    else:
        X = np.asarray(X)
        Xd = da.from_array(X, chunks=(step, X.shape[1]))
        yd = da.from_array(y, chunks=step)
    wd = (
        None
        if sample_weight is None
        else da.from_array(np.asarray(sample_weight, dtype=np.float64), chunks=step)
    )
    return Xd, yd, wd


def csr_to_dask(X, y, n_partitions):
    """An in-memory CSR matrix and its labels as Dask Arrays of ``n_partitions`` row blocks.

    Every block is its own task holding a CSR slice, so computing one block
    copies only its rows; chunk sizes are known.
    """
    import dask
    import dask.array as da
    import scipy.sparse as sp

    n = X.shape[0]
    step = max(1, -(-n // max(int(n_partitions), 1)))
    meta = sp.csr_matrix((0, X.shape[1]), dtype=X.dtype)
    starts = range(0, n, step)
    blocks = [
        da.from_delayed(
            dask.delayed(X[i : i + step], pure=True),
            shape=(min(step, n - i), X.shape[1]),
            dtype=X.dtype,
            meta=meta,
        )
        for i in starts
    ]
    labels = da.from_array(np.asarray(y), chunks=(tuple(min(step, n - i) for i in starts),))
    return da.concatenate(blocks, axis=0), labels

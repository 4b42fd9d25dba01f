"""Lazy row-wise maps over Dask collections, for prediction."""

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .engine.data.checks import check_sparse_structure
from .engine.data.source import is_dask_dataframe


def _check_rows(block, n_features):
    """A partition as a float NumPy array or CSR matrix, checked."""
    if sp.issparse(block):
        block = check_sparse_structure(block, lambda r: "a partition" + ("" if r is None else f", row {r}"))
        rows = sp.csr_matrix(block)
        if rows.dtype not in (np.float32, np.float64):
            rows = rows.astype(np.float64)
        values = rows.data
    else:
        rows = np.asarray(block)
        if rows.dtype.kind not in "biuf":
            raise ValueError(
                f"a partition has {rows.dtype} values; prediction needs numeric features (convert the "
                "columns, or drop the non-numeric ones)."
            )
        if rows.dtype not in (np.float32, np.float64):
            rows = rows.astype(np.float64)
        values = rows
    if rows.ndim != 2 or rows.shape[1] != n_features:
        raise ValueError(f"a partition has shape {rows.shape}; the model expects {n_features} features.")
    if not np.isfinite(values).all():
        raise ValueError("a partition contains NaN or infinity; prediction needs finite features.")
    return rows


def _frame_values(frame):
    """A partition's values as NumPy: nullable (extension) numeric columns as float64 with NaN for
    pandas' NA (refused by :func:`_check_rows`, as fit refuses it), where every column is numeric."""
    dtypes = list(frame.dtypes)
    if any(pd.api.types.is_extension_array_dtype(t) for t in dtypes) and all(
        pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t) for t in dtypes
    ):
        return frame.to_numpy(dtype=np.float64, na_value=np.nan)
    return frame.to_numpy()


def feature_frame(estimator, X):
    """The model's feature columns of a Dask DataFrame, in fitting order."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        missing = [c for c in names if c not in X.columns]
        if missing:
            raise ValueError(
                f"X lacks the feature columns {missing[:5]} the model was fitted on "
                f"({len(missing)} missing of {len(names)})."
            )
        return X[list(names)]
    if len(X.columns) != estimator.n_features_in_:
        raise ValueError(
            f"X has {len(X.columns)} columns; the model was fitted on {estimator.n_features_in_} "
            "unnamed features. Select the feature columns first."
        )
    return X


def map_rows(estimator, X, func, columns=None, name=None):
    """Apply ``func`` (checked rows -> ndarray) to every partition of ``X``, lazily.

    ``func`` returns one value per row, or one row of ``len(columns)``
    values.  A Dask Array gives a Dask Array with the same row chunks; a
    Dask DataFrame gives a Dask Series named ``name`` (or a DataFrame with
    ``columns``) with the same index and divisions.  Empty partitions give
    empty results.
    """
    n_features = estimator.n_features_in_
    encoder = estimator.feature_map if getattr(estimator, "_encoding", False) else None
    if is_dask_dataframe(X):
        X = feature_frame(estimator, X)
        labels = None if columns is None else [str(c) for c in columns]

        def on_frame(frame):
            if encoder is not None:
                rows = encoder.encode(frame)
            else:
                rows = _check_rows(_frame_values(frame), n_features)
            out = func(rows)
            if labels is None:
                return pd.Series(out, index=frame.index, name=name)
            return pd.DataFrame(out, index=frame.index, columns=labels)

        return X.map_partitions(on_frame, meta=on_frame(X._meta))

    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got a Dask Array of shape {X.shape}.")
    if X.numblocks[1] != 1:
        raise ValueError(
            f"X is chunked along its columns ({X.numblocks[1]} column chunks); prediction needs whole rows "
            "in each chunk: use X.rechunk({1: -1})."
        )
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features; the model was fitted on {n_features}.")

    def on_block(block):
        rows = _check_rows(block, n_features)
        return func(rows if encoder is None else encoder.encode(rows))

    meta = on_block(np.zeros((0, n_features)))
    if columns is None:
        return X.map_blocks(on_block, drop_axis=1, dtype=meta.dtype, meta=meta)
    return X.map_blocks(on_block, chunks=(X.chunks[0], (len(columns),)), dtype=meta.dtype, meta=meta)

"""Dask collections -> blocks of rows, one partition at a time.

A :class:`DaskSource` checks the collection's layout up front (row chunks
only, X and y partitioned alike, numeric columns) and hands out one
delayed task per partition.  :meth:`DaskSource.load` computes a partition
and turns it into a :class:`Block`: the rows in the layout the kernels read,
the raw labels and the sample weights, with every check that needs the
values (NaN, inf, lengths, columns) done there, naming the partition.  It
runs on the reader thread, off the trainer's path.
"""

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._malloc import release_free_memory


@dataclass
class Block:
    """The rows of one partition, ready for the cache."""

    partition: int
    X: object  # C-contiguous 2-D ndarray or scipy.sparse.csr_matrix
    y: np.ndarray  # raw labels
    sample_weight: np.ndarray  # float64, >= 0
    row_ids: np.ndarray = None  # global ids, stamped by the reader
    order: np.ndarray = None  # the pass's row order (rows are not moved)

    @property
    def n_rows(self):
        return self.X.shape[0]

    @property
    def nbytes(self):
        if sp.issparse(self.X):
            x_bytes = self.X.data.nbytes + self.X.indices.nbytes + self.X.indptr.nbytes
        else:
            x_bytes = self.X.nbytes
        return x_bytes + self.y.nbytes + self.sample_weight.nbytes


def is_dask_collection(obj):
    return hasattr(obj, "__dask_graph__")


def _is_dask_dataframe(obj):
    return is_dask_collection(obj) and hasattr(obj, "columns") and hasattr(obj, "npartitions")


def encoder_set(source):
    """Whether the source's encoder turns partitions into sparse rows (it reads strings)."""
    return source.encoder is not None and bool(getattr(source.encoder, "reads_strings", False))


class DaskSource:
    """Partitions of a Dask Array or DataFrame (and its labels) as blocks.

    Parameters
    ----------
    X : dask.array.Array (2-D, dense or SciPy sparse chunks, chunked along
        rows only) or dask.dataframe.DataFrame
    y : dask.array.Array, dask Series, or (with a DataFrame X) the name of
        the label column
    sample_weight : same kind as y, or None
    encoder : feature map or None
        A map whose ``encode`` turns each partition (a pandas DataFrame, or
        numeric rows) into numeric raw rows on the reader thread (e.g.
        :class:`~dask_streamsvm.features.HashingMap`); its columns may then
        hold strings.  ``n_features`` is the encoded width and
        ``n_input_features`` the input's.
    """

    def __init__(self, X, y, sample_weight=None, encoder=None):
        self._label_column = None
        self.encoder = encoder
        if _is_dask_dataframe(X):
            if isinstance(y, str):
                if y not in X.columns:
                    raise ValueError(f"y={y!r} names no column of X; its columns are {list(X.columns)}.")
                # Keep one frame: its partitions hold features and labels
                # alike, however the reader splits or fuses files.
                self._label_column = y
                self._init_frame(X.drop(columns=[y]), X[y], sample_weight, whole=X)
            else:
                self._init_frame(X, y, sample_weight)
        elif is_dask_collection(X) and getattr(X, "ndim", None) == 2:
            self._init_array(X, y, sample_weight)
        else:
            raise TypeError(f"DaskSource needs a Dask Array or DataFrame for X, got {type(X).__name__}.")

    # -- layout checks, done once ----------------------------------------------

    def _init_array(self, X, y, sample_weight):
        if len(X.chunks[1]) != 1:
            raise ValueError(
                f"X is split into {len(X.chunks[1])} column chunks; rows must be whole. "
                "Rechunk along rows only: X = X.rechunk({1: -1})."
            )
        self.n_input_features = int(X.shape[1])
        self.n_features = self._encoded_width(self.n_input_features)
        self.feature_names = None
        self.column_labels = None
        self.dtype = np.dtype(X.dtype)
        self.is_sparse = isinstance(getattr(X, "_meta", None), sp.spmatrix | sp.sparray) or encoder_set(self)
        parts_x = list(X.to_delayed().ravel())
        parts_y = self._label_parts(y, len(parts_x), X.chunks[0], "y")
        parts_w = self._label_parts(sample_weight, len(parts_x), X.chunks[0], "sample_weight")
        self._parts = list(zip(parts_x, parts_y, parts_w, strict=True))
        self._frame = False

    def _init_frame(self, X, y, sample_weight, whole=None):
        dtypes = X.dtypes
        bad = [
            str(c)
            for c, t in dtypes.items()
            if not (pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t))
        ]
        if bad and not encoder_set(self):
            raise ValueError(
                f"X has non-numeric columns {bad}; LinearSVC needs numbers. Encode them "
                "(one-hot, codes, or a hashing feature map) or drop them."
            )
        self.n_input_features = len(X.columns)
        self.n_features = self._encoded_width(self.n_input_features)
        self.feature_names = np.asarray([str(c) for c in X.columns], dtype=object)
        self.column_labels = list(X.columns)
        self._columns = list(X.columns)
        all32 = all(t == np.float32 for t in dtypes)
        self.dtype = np.dtype(np.float32 if all32 else np.float64)
        self.is_sparse = encoder_set(self)
        self._frame = True
        if whole is not None:
            parts_x = list(whole.to_delayed())
            parts_w = self._label_parts(sample_weight, len(parts_x), None, "sample_weight")
            self._parts = [(x, None, w) for x, w in zip(parts_x, parts_w, strict=True)]
            # Counting labels reads the label column alone (unless weights count too).
            if sample_weight is None:
                self._count_parts = [(None, yp, None) for yp in y.to_delayed()]
            return
        parts_x = list(X.to_delayed())
        parts_y = self._label_parts(y, len(parts_x), None, "y")
        parts_w = self._label_parts(sample_weight, len(parts_x), None, "sample_weight")
        self._parts = list(zip(parts_x, parts_y, parts_w, strict=True))

    def _encoded_width(self, n_in):
        return n_in if self.encoder is None else self.encoder.raw_width(n_in)

    @staticmethod
    def _label_parts(v, n_parts, row_chunks, name):
        if v is None:
            return [None] * n_parts
        if not is_dask_collection(v):
            raise TypeError(
                f"{name} must be a Dask Array or Series like X, got {type(v).__name__}; "
                f"wrap it with dask.array.from_array({name}, chunks=X.chunks[0])."
            )
        if getattr(v, "ndim", 1) != 1:
            raise ValueError(f"{name} must be 1-D, got {v.ndim} dimensions.")
        parts = list(np.ravel(v.to_delayed()))
        if len(parts) != n_parts:
            raise ValueError(
                f"{name} has {len(parts)} partitions but X has {n_parts}; partition them alike "
                f"(for arrays: {name}.rechunk(X.chunks[0]); for frames: pass the whole frame and "
                "the label column's name, fit(frame, 'label'), since Dask may merge the partitions "
                "of a frame read from Parquet when only a few of its columns are selected)."
            )
        chunks = getattr(v, "chunks", None)
        if row_chunks is not None and chunks is not None:
            known = not (any(np.isnan(row_chunks)) or any(np.isnan(chunks[0])))
            if known and tuple(chunks[0]) != tuple(row_chunks):
                raise ValueError(
                    f"{name}'s chunks {chunks[0]} do not match X's row chunks {row_chunks}; "
                    f"rechunk with {name} = {name}.rechunk((X.chunks[0],))."
                )
        return parts

    def label_counts(self, allow_empty=False):
        """Classes, their row counts, and the classes with positive weight.

        Reads the labels (and weights) of every partition once; for a
        Parquet column this reads that column only.
        """
        import dask

        parts = getattr(self, "_count_parts", self._parts)
        label = self._label_column
        results = dask.compute(
            *[
                dask.delayed(_count_labels)(self.partition_id(p), y if y is not None else x[label], w)
                for p, (x, y, w) in enumerate(parts)
            ]
        )
        release_free_memory()  # the partitions computed for their labels
        return merge_label_counts(results, allow_empty)

    @property
    def n_partitions(self):
        return len(self._parts)

    # -- per partition, on the reader thread -------------------------------------

    def subset(self, partitions):
        """This source restricted to ``partitions`` (global numbers), which keep their numbers.

        Only their graphs are kept, so the subset ships to a Dask worker
        without the other partitions' tasks.
        """
        import copy

        sub = copy.copy(self)
        ids = [self.partition_id(p) for p in partitions]
        sub._parts = [self._parts[p] for p in partitions]
        sub._ids = ids
        sub.__dict__.pop("_count_parts", None)
        return sub

    def partition_id(self, p):
        """The number of this source's ``p``-th partition in the whole collection."""
        ids = getattr(self, "_ids", None)
        return p if ids is None else ids[p]

    def load(self, p):
        """Compute partition ``p`` and return it as a checked :class:`Block`."""
        import dask

        parts, p = self._parts[p], self.partition_id(p)
        try:
            x, y, w = dask.compute(*parts)
        except Exception as exc:
            exc.add_note(f"(raised while computing partition {p} of the training data)")
            raise
        if self._label_column is not None:
            x, y = x.drop(columns=[self._label_column]), x[self._label_column]
        X = self._rows(x, p)
        _release_arrow_memory()
        n = X.shape[0]
        y = np.asarray(y).ravel() if y is not None else None
        if y is None or y.shape[0] != n:
            got = "no labels" if y is None else f"{y.shape[0]} labels"
            raise ValueError(f"partition {p}: X has {n} rows but y has {got}; partition X and y alike.")
        if w is None:
            w = np.ones(n)
        else:
            w = np.asarray(w, dtype=np.float64).ravel()
            if w.shape[0] != n:
                raise ValueError(f"partition {p}: X has {n} rows but sample_weight has {w.shape[0]}.")
            bad = ~np.isfinite(w) | (w < 0)
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"partition {p}, row {r}: sample_weight is {float(w[r])!r}; "
                    "weights must be finite and >= 0."
                )
        if self.encoder is not None and hasattr(self.encoder, "expand"):
            X, y, w = self.encoder.expand(X, y, w)  # virtual examples: the partition's variants
        return Block(partition=p, X=X, y=y, sample_weight=w)

    def _rows(self, x, p):
        if self._frame:
            if list(x.columns) != self._columns:
                missing = [c for c in self._columns if c not in x.columns]
                extra = [c for c in x.columns if c not in self._columns]
                raise ValueError(
                    f"partition {p} has columns {list(x.columns)}, expected {self._columns} "
                    f"(missing {missing}, unexpected {extra})."
                )
            if self.encoder is not None and self.encoder.reads_strings:
                return self.encoder.encode(x)
            # Fill a C-ordered array column by column: one copy of the data
            # (DataFrame.to_numpy builds an F-ordered array first).
            values = np.empty((len(x), len(self._columns)), dtype=self.dtype)
            for j, column in enumerate(x.columns):
                values[:, j] = x[column].to_numpy(dtype=self.dtype)
            self._check_finite(values, p, list(x.columns))
            return values
        if sp.issparse(x):
            X = sp.csr_matrix(x, dtype=x.dtype if x.dtype in (np.float32, np.float64) else np.float64)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            self._check_finite(X.data, p, None, X)
            return X if self.encoder is None else self.encoder.encode(X)
        values = np.asarray(x)
        if values.dtype not in (np.float32, np.float64):
            if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
                raise ValueError(f"partition {p}: X has dtype {values.dtype}; it must be numeric.")
            values = values.astype(np.float64)
        if values.ndim != 2 or values.shape[1] != self.n_input_features:
            raise ValueError(
                f"partition {p} has shape {values.shape}, expected (rows, {self.n_input_features})."
            )
        self._check_finite(values, p, None)
        if self.encoder is not None:
            return self.encoder.encode(values)
        return np.ascontiguousarray(values)

    @staticmethod
    def _check_finite(values, p, columns, csr=None):
        bad = ~np.isfinite(values)
        if not bad.any():
            return
        what = "NaN" if np.isnan(values[bad]).any() else "infinity"
        if csr is not None:
            k = int(np.flatnonzero(bad)[0])
            row = int(np.searchsorted(csr.indptr, k, side="right") - 1)
            col = f"feature {int(csr.indices[k])}"
        else:
            row, c = (int(v[0]) for v in np.nonzero(bad))
            col = f"column {columns[c]!r}" if columns is not None else f"feature {c}"
        raise ValueError(
            f"partition {p} contains {what} at row {row} ({col}); {int(bad.sum())} values are not "
            "finite. Drop or impute them before fitting."
        )


def _release_arrow_memory():
    """Hand Arrow's freed buffers back to the system.

    Parquet partitions pass through Arrow, whose allocator keeps freed
    memory for reuse: without this, RSS grows by several partitions' worth
    that the cache budget does not account for.
    """
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        return
    pa.default_memory_pool().release_unused()


def merge_label_counts(results, allow_empty=False):
    """``(classes, counts, weighted classes)`` of the partitions' (or parts') label counts."""
    counts = {}
    weighted = set()
    for labels, n, positive in results:
        for label, c in zip(labels.tolist(), n.tolist(), strict=True):
            counts[label] = counts.get(label, 0) + c
        weighted.update(positive.tolist())
    if not counts and not allow_empty:
        raise ValueError("the collection has no rows: every partition is empty.")
    classes = np.array(sorted(counts))
    n = np.array([counts[c] for c in classes.tolist()], dtype=np.int64)
    return classes, n, np.array(sorted(weighted))


def _count_labels(p, y, w):
    y = np.asarray(y).ravel()
    if y.dtype.kind == "f" and np.isnan(y).any():
        raise ValueError(f"partition {p}: y contains NaN at row {int(np.flatnonzero(np.isnan(y))[0])}.")
    labels, counts = np.unique(y, return_counts=True)
    positive = labels if w is None else np.unique(y[np.asarray(w, dtype=np.float64).ravel() > 0])
    return labels, counts, positive


class RowIds:
    """Global row ids, learned partition by partition on the first pass.

    Partition lengths may be unknown up front (``nan`` chunks); the first
    read of a partition assigns it the next free range of ids, and later
    reads must return as many rows.
    """

    def __init__(self):
        self._offsets = {}
        self.n_rows = 0

    def ids(self, partition, n_rows):
        if partition not in self._offsets:
            self._offsets[partition] = (self.n_rows, n_rows)
            self.n_rows += n_rows
        offset, known = self._offsets[partition]
        if known != n_rows:
            raise ValueError(
                f"partition {partition} had {known} rows on the first pass and {n_rows} now; the "
                "collection must give the same rows on every read (persist it or write it to "
                "Parquet first)."
            )
        return np.arange(offset, offset + n_rows, dtype=np.int64)

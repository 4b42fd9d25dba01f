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
    n_skipped: int = 0  # invalid rows dropped (``on_invalid="skip"``)
    retries: int = 0  # reads of the partition that failed with an I/O error and were repeated

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


def is_dask_dataframe(obj):
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
    on_invalid : {"raise", "skip"}
        What a row with a NaN or infinite feature, a missing label, or a
        NaN, infinite or negative weight does: stop the read with an error
        naming partition, row and column, or be dropped and counted
        (``Block.n_skipped``).  Either way the decision is the same on
        every read.
    """

    def __init__(self, X, y, sample_weight=None, encoder=None, on_invalid="raise"):
        self._label_column = None
        self.encoder = encoder
        self.on_invalid = on_invalid
        if is_dask_dataframe(X):
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
        if self.n_input_features == 0:
            raise ValueError(
                "Found array with 0 feature(s) in X while a minimum of 1 is required: X has no "
                "feature columns."
            )

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
        self._row_chunks = np.asarray(X.chunks[0], dtype=np.float64)
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
        Parquet column this reads that column only.  With
        ``on_invalid="skip"`` it reads whole partitions, so that the rows
        counted are the rows trained on.
        """
        import dask

        label = self._label_column
        if self.on_invalid == "skip":
            tasks = [dask.delayed(self._count_valid)(p, *parts) for p, parts in enumerate(self._parts)]
        else:
            parts = getattr(self, "_count_parts", self._parts)
            tasks = [
                dask.delayed(_count_labels)(self.partition_id(p), y if y is not None else x[label], w)
                for p, (x, y, w) in enumerate(parts)
            ]
        results = dask.compute(*tasks)
        release_free_memory()  # the partitions computed for their labels
        return merge_label_counts(results, allow_empty)

    def _count_valid(self, p, x, y, w):
        _, y, w, _ = self._checked(self.partition_id(p), x, y, w)
        return _count_labels(self.partition_id(p), y, w)

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
        X, y, w, skipped = self._checked(p, x, y, w)
        if self.encoder is not None:
            X = self.encoder.encode(X) if self.encoder.reads_strings or not self._frame else X
            if hasattr(self.encoder, "expand"):
                X, y, w = self.encoder.expand(X, y, w)  # virtual examples: the partition's variants
        return Block(partition=p, X=X, y=y, sample_weight=w, n_skipped=skipped)

    def _checked(self, p, x, y, w):
        """Rows (before any encoding), labels and weights of partition ``p``, and the rows dropped.

        Every check that needs the values happens here: shapes, dtypes,
        columns, finite features, present labels, finite non-negative
        weights.  A failed check raises (``on_invalid="raise"``) naming the
        partition, row and column, or drops the row (``"skip"``).
        """
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
            try:
                w = np.asarray(w, dtype=np.float64).ravel()
            except (TypeError, ValueError) as exc:
                raise ValueError(f"partition {p}: sample_weight is not numeric ({exc}).") from None
            if w.shape[0] != n:
                raise ValueError(f"partition {p}: X has {n} rows but sample_weight has {w.shape[0]}.")
        bad = self._bad_rows(X, p) | missing_labels(y) | ~np.isfinite(w) | (w < 0)
        if not bad.any():
            return X, y, w, 0
        if self.on_invalid == "skip":
            keep = ~bad
            return X[keep], y[keep], w[keep], int(bad.sum())
        r = int(np.flatnonzero(bad)[0])
        where = self._where(p, r)
        if missing_labels(y[r : r + 1])[0]:
            raise ValueError(
                f"{where}: the label is missing ({y[r]}). Drop such rows, or pass on_invalid='skip'."
            )
        raise ValueError(
            f"{where}: sample_weight is {float(w[r])!r}; weights must be finite and >= 0. "
            "Fix them, or pass on_invalid='skip' to drop such rows."
        )

    def _where(self, p, r):
        """``partition p, row r`` with the row's place in the collection when chunk sizes are known."""
        offset = self._row_offset(p)
        at = f" (row {offset + r} of the collection)" if offset is not None else ""
        return f"partition {p}, row {r}{at}"

    def _row_offset(self, p):
        chunks = getattr(self, "_row_chunks", None)
        if chunks is None or any(np.isnan(chunks[:p])):
            return None
        return int(np.sum(chunks[:p]))

    def _rows(self, x, p):
        """Partition ``p``'s features as numbers: a C-ordered array, CSR rows or (strings) a frame."""
        if self._frame:
            if list(x.columns) != self._columns:
                missing = [c for c in self._columns if c not in x.columns]
                extra = [c for c in x.columns if c not in self._columns]
                raise ValueError(
                    f"partition {p} has columns {list(x.columns)}, expected {self._columns} "
                    f"(missing {missing}, unexpected {extra}): the partitions' schemas differ."
                )
            if self.encoder is not None and self.encoder.reads_strings:
                return x
            # Fill a C-ordered array column by column: one copy of the data
            # (DataFrame.to_numpy builds an F-ordered array first).
            values = np.empty((len(x), len(self._columns)), dtype=self.dtype)
            for j, column in enumerate(x.columns):
                series = x[column]
                # Nullable (extension) columns turn pd.NA into NaN; a NumPy column is copied once, as is.
                missing = {"na_value": np.nan} if pd.api.types.is_extension_array_dtype(series.dtype) else {}
                try:
                    values[:, j] = series.to_numpy(dtype=self.dtype, **missing)
                except (TypeError, ValueError) as exc:
                    raise ValueError(
                        f"partition {p}, column {column!r}: its values (dtype {series.dtype}) are not "
                        f"numbers ({exc}). Convert or drop the column, or encode it with a feature map."
                    ) from None
            return values
        if sp.issparse(x):
            X = sp.csr_matrix(x, dtype=x.dtype if x.dtype in (np.float32, np.float64) else np.float64)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            if X.shape[1] != self.n_input_features:
                raise ValueError(f"partition {p} has {X.shape[1]} columns, expected {self.n_input_features}.")
            return X
        values = np.asarray(x)
        if values.dtype not in (np.float32, np.float64):
            if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
                raise ValueError(f"partition {p}: X has dtype {values.dtype}; it must be numeric.")
            values = values.astype(np.float64)
        if values.ndim != 2 or values.shape[1] != self.n_input_features:
            raise ValueError(
                f"partition {p} has shape {values.shape}, expected (rows, {self.n_input_features})."
            )
        return np.ascontiguousarray(values)

    def _bad_rows(self, X, p):
        """Rows of ``X`` holding NaN or infinity; raises naming the first with ``on_invalid="raise"``."""
        if hasattr(X, "columns"):  # strings for an encoding map: it checks what it reads
            return np.zeros(len(X), dtype=bool)
        values = X.data if sp.issparse(X) else X
        bad = ~np.isfinite(values)
        if not bad.any():
            return np.zeros(X.shape[0], dtype=bool)
        if sp.issparse(X):
            rows = np.zeros(X.shape[0], dtype=bool)
            rows[np.searchsorted(X.indptr, np.flatnonzero(bad), side="right") - 1] = True
        else:
            rows = bad.any(axis=1)
        if self.on_invalid == "skip":
            return rows
        what = "NaN" if np.isnan(values[bad]).any() else "infinity"
        if sp.issparse(X):
            k = int(np.flatnonzero(bad)[0])
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            col = f"feature {int(X.indices[k])}"
        else:
            row, c = (int(v[0]) for v in np.nonzero(bad))
            col = f"column {self._columns[c]!r}" if self._frame else f"feature {c}"
        raise ValueError(
            f"{self._where(p, row)}, {col}: the value is {what}; {int(rows.sum())} rows of the partition "
            "hold values that are not finite. Drop or impute them, or pass on_invalid='skip' to drop them."
        )


def missing_labels(y):
    """Labels that are absent: NaN, None or pandas' NA."""
    if y.dtype.kind == "f":
        return np.isnan(y)
    if y.dtype.kind == "O":
        return np.asarray(pd.isna(y), dtype=bool)
    return np.zeros(y.shape[0], dtype=bool)


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
    missing = missing_labels(y)
    if missing.any():
        raise ValueError(
            f"partition {p}, row {int(np.flatnonzero(missing)[0])}: the label is missing. Drop such rows, "
            "or pass on_invalid='skip'."
        )
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

    def state(self):
        """The ids learned so far, as an ``(n, 3)`` array of partition, offset, rows (for checkpoints)."""
        table = [(p, offset, n) for p, (offset, n) in sorted(self._offsets.items())]
        return np.array(table, dtype=np.int64).reshape(-1, 3)

    @classmethod
    def from_state(cls, table):
        ids = cls()
        for p, offset, n in np.asarray(table, dtype=np.int64).tolist():
            ids._offsets[p] = (offset, n)
            ids.n_rows = max(ids.n_rows, offset + n)
        return ids

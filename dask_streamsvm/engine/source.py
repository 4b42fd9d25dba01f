"""Dask collections -> blocks of rows, one partition at a time.

A :class:`DaskSource` checks the collection's layout up front (row chunks
only, X and y partitioned alike, numeric columns) and hands out one
delayed task per partition.  :meth:`DaskSource.load` computes a partition
and turns it into a :class:`Block`: the rows in the layout the kernels read,
the raw labels and the sample weights, with every check that needs the
values (NaN, inf, lengths, columns) done there, naming the partition.  It
runs on the reader thread, off the trainer's path.
"""

import contextlib
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._malloc import release_free_memory
from .waiting import watched_compute

_LABEL = "__dask_streamsvm_label__"  # columns added to X when y (and the weights) come from its frame
_WEIGHT = "__dask_streamsvm_weight__"


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
            repeated = list(dict.fromkeys(X.columns[X.columns.duplicated()]))
            if repeated:
                raise ValueError(
                    f"X has duplicated column names {repeated}; every column needs a name of its own. "
                    "Rename or drop the copies first (X.loc[:, ~X.columns.duplicated()] keeps the first)."
                )
            if isinstance(y, str):
                if y not in X.columns:
                    raise ValueError(f"y={y!r} names no column of X; its columns are {list(X.columns)}.")
                # Keep one frame: its partitions hold features and labels
                # alike, however the reader splits or fuses files.
                self._label_column = y
                whole = self._one_frame(X, None, sample_weight) if sample_weight is not None else None
                if whole is None:
                    self._init_frame(X.drop(columns=[y]), X[y], sample_weight, whole=X)
                else:
                    self._weight_column = _WEIGHT
                    self._init_frame(X.drop(columns=[y]), X[y], None, whole=whole, plan=(X, y, sample_weight))
            elif (whole := self._one_frame(X, y, sample_weight)) is not None:
                self._label_column = _LABEL
                self._weight_column = None if sample_weight is None else _WEIGHT
                self._init_frame(X, whole[_LABEL], None, whole=whole, plan=(X, y, sample_weight))
            else:
                self._init_frame(X, y, sample_weight)
        elif is_dask_collection(X) and getattr(X, "ndim", None) == 2:
            self._init_array(X, y, sample_weight)
        elif is_dask_collection(X) and hasattr(X, "ndim"):
            fix = (
                "for one feature, pass X.reshape(-1, 1) (a Dask Series: X.to_frame())"
                if X.ndim == 1
                else "flatten the trailing axes, X.reshape(X.shape[0], -1)"
            )
            raise ValueError(
                f"X must be 2-D with shape (n_samples, n_features), got a Dask "
                f"{type(X).__name__} with ndim={X.ndim} (shape {X.shape}): {fix}."
            )
        else:
            raise TypeError(f"DaskSource needs a Dask Array or DataFrame for X, got {type(X).__name__}.")
        if self.n_input_features == 0:
            raise ValueError(
                "Found array with 0 feature(s) in X while a minimum of 1 is required: X has no "
                "feature columns."
            )
        from .spill import text_source

        self.text = text_source(X)  # parsed from text when computed: spilled by default

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
        if self.dtype.kind == "c":
            raise ValueError(complex_message("X", self.dtype))
        self.is_sparse = isinstance(getattr(X, "_meta", None), sp.spmatrix | sp.sparray) or encoder_set(self)
        self._row_chunks = np.asarray(X.chunks[0], dtype=np.float64)
        # Unoptimised, so a partition's X, y and w tasks keep the keys they share (the parse of a
        # LIBSVM block gives both X and y): computed together, the shared work runs once.  Optimised
        # one by one, each would fuse its own copy of it.
        parts_x = list(X.to_delayed(optimize_graph=False).ravel())
        parts_y = self._label_parts(y, len(parts_x), X.chunks[0], "y", optimize=False)
        parts_w = self._label_parts(sample_weight, len(parts_x), X.chunks[0], "sample_weight", optimize=False)
        self._parts = list(zip(parts_x, parts_y, parts_w, strict=True))
        self._frame = False

    _weight_column = None
    parquet_plan = None  # a :class:`~.parquet.ParquetPlan` when the fast path reads the partitions

    @staticmethod
    def _one_frame(X, y, sample_weight):
        """X with y (and the weights) as its last columns, when all come from one Dask expression.

        ``fit(frame[cols], frame["y"])`` is how dask-ml users write it, but
        Dask's optimiser may fuse the partitions of a narrow selection (the
        label column alone), so X and y would be partitioned differently.
        Built as one frame, they are read together.  None when they are not
        co-aligned (different sources): those must match partition by
        partition, as checked later.
        """
        import dask.dataframe as dd

        try:
            from dask.dataframe.dask_expr._expr import are_co_aligned
        except ImportError:  # pragma: no cover - another dask layout
            return None
        columns = {name: v for name, v in ((_LABEL, y), (_WEIGHT, sample_weight)) if v is not None}
        others = list(columns.values())
        if not all(isinstance(v, dd.Series) for v in others):
            return None
        if not are_co_aligned(X.expr, *(v.expr for v in others)):
            return None
        return X.assign(**columns)

    def _init_frame(self, X, y, sample_weight, whole=None, plan=None):
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
        complex_columns = [str(c) for c, t in dtypes.items() if pd.api.types.is_complex_dtype(t)]
        if complex_columns:
            raise ValueError(complex_message(f"X's columns {complex_columns}", "complex"))
        self.n_input_features = len(X.columns)
        self.n_features = self._encoded_width(self.n_input_features)
        self.feature_names = np.asarray([str(c) for c in X.columns], dtype=object)
        self.column_labels = list(X.columns)
        self._columns = list(X.columns)
        all32 = all(t == np.float32 for t in dtypes)
        self.dtype = np.dtype(np.float32 if all32 else np.float64)
        self.is_sparse = encoder_set(self)
        self._frame = True
        if self.encoder is None and self._init_parquet(*(plan or (whole, self._label_column, sample_weight))):
            return
        if whole is not None:
            parts_x = list(whole.to_delayed())
            parts_w = self._label_parts(sample_weight, len(parts_x), None, "sample_weight")
            self._parts = [(x, None, w) for x, w in zip(parts_x, parts_w, strict=True)]
            # Counting labels reads the label column alone (unless weights count too).
            if sample_weight is None and self._weight_column is None:
                self._count_parts = [(None, yp, None) for yp in y.to_delayed()]
            return
        parts_x = list(X.to_delayed())
        parts_y = self._label_parts(y, len(parts_x), None, "y")
        parts_w = self._label_parts(sample_weight, len(parts_x), None, "sample_weight")
        self._parts = list(zip(parts_x, parts_y, parts_w, strict=True))

    def _init_parquet(self, X, y, sample_weight):
        """Read partitions with pyarrow straight into arrays (:mod:`.parquet`) if X and y allow it."""
        import dask

        from . import parquet

        if X is None or not is_dask_dataframe(X):
            return False
        plan = parquet.parquet_plan(X, y, sample_weight)
        if plan is None or plan.columns != [str(c) for c in self._columns]:
            return False
        self._parts = []
        for pieces in plan.parts:
            rows = dask.delayed(parquet.read_part, nout=3)(
                plan.fs, pieces, plan.columns, plan.label, plan.weight, self.dtype
            )
            self._parts.append((rows[0], rows[1], rows[2] if plan.weight is not None else None))
        if plan.weight is None:  # counting reads the label column alone (with weights, the whole rows)
            labels = dask.delayed(parquet.read_part, nout=3)
            self._count_parts = [
                (None, labels(plan.fs, p, [], plan.label, None, self.dtype)[1], None) for p in plan.parts
            ]
        self._label_column = self._weight_column = None
        self.parquet_plan = plan
        return True

    def _encoded_width(self, n_in):
        return n_in if self.encoder is None else self.encoder.raw_width(n_in)

    @staticmethod
    def _label_parts(v, n_parts, row_chunks, name, optimize=True):
        if v is None:
            return [None] * n_parts
        if not is_dask_collection(v):
            raise TypeError(
                f"{name} must be a Dask Array or Series like X, got {type(v).__name__}; "
                f"wrap it with dask.array.from_array({name}, chunks=X.chunks[0])."
            )
        if getattr(v, "ndim", 1) != 1:
            raise ValueError(f"{name} must be 1-D, got {v.ndim} dimensions.")
        parts = list(np.ravel(v.to_delayed(optimize_graph=optimize)))
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

    def label_counts(self, allow_empty=False, read_timeout=None, merged=True):
        """Classes, their row counts, and the classes with positive weight.

        Reads the labels (and weights) of every partition once; for a
        Parquet column this reads that column only.  With
        ``on_invalid="skip"`` it reads whole partitions, so that the rows
        counted are the rows trained on.  ``read_timeout``: see
        :func:`~.waiting.watched_compute`.  ``merged=False``: the counts of each partition, a list.
        """
        import dask

        label = self._label_column
        if self.spill is not None and _local_scheduler():  # one read parses, checks, spills and counts
            tasks = [dask.delayed(self._spill_and_count)(p, *parts) for p, parts in enumerate(self._parts)]
        elif self.on_invalid == "skip":
            tasks = [dask.delayed(self._count_valid)(p, *parts) for p, parts in enumerate(self._parts)]
        else:
            parts = getattr(self, "_count_parts", self._parts)
            tasks = [
                dask.delayed(_count_labels)(
                    self.partition_id(p),
                    y if y is not None else x[label],
                    w if w is not None or self._weight_column is None else x[self._weight_column],
                )
                for p, (x, y, w) in enumerate(parts)
            ]
        ids = [self.partition_id(p) for p in range(len(tasks))]
        results = watched_compute(tasks, ids, read_timeout)
        release_free_memory()  # the partitions computed for their labels
        if not merged:
            return list(results)
        return merge_label_counts(results, allow_empty, partitions=ids)

    def _count_valid(self, p, x, y, w):
        _, y, w, _ = self._checked(self.partition_id(p), x, y, w)
        return _count_labels(self.partition_id(p), y, w)

    @property
    def n_partitions(self):
        return len(self._parts)

    # -- per partition, on the reader thread -------------------------------------

    def subset(self, partitions, given=(False, False, False)):
        """This source restricted to ``partitions`` (global numbers), which keep their numbers.

        Only their graphs are kept, so the subset ships to a Dask worker
        without the other partitions' tasks.  ``given``: which of ``x, y,
        w`` keep no graph because their data will be given on the worker
        (:meth:`use_data`).
        """
        import copy

        sub = copy.copy(self)
        ids = [self.partition_id(p) for p in partitions]
        sub._parts = []
        for p in partitions:
            part = self._parts[p]
            lazy = _culled(tuple(None if g else d for d, g in zip(part, given, strict=True)))
            sub._parts.append(
                tuple(_GIVEN if g and d is not None else c for d, c, g in zip(part, lazy, given, strict=True))
            )
        if any(given):
            sub.parquet_plan = None
        sub._ids = ids
        sub.__dict__.pop("_count_parts", None)
        return sub

    def use_data(self, data):
        """Take ``data[p]``, partition ``p``'s computed ``(x, y, w)``, for the parts that
        :meth:`subset` left to be given: a cluster's part whose data its worker already holds."""
        self._parts = [
            tuple(value if now is _GIVEN else now for now, value in zip(part, values, strict=True))
            for part, values in zip(self._parts, data, strict=True)
        ]
        self.__dict__.pop("_count_parts", None)

    def held(self):
        """Where each of the collection's ``x, y, w`` already is (a tuple of three): ``"persisted"``
        when its graph holds futures of a ``dask.distributed`` cluster (``X.persist()``),
        ``"memory"`` when it holds the data itself (``da.from_array``, ``dd.from_pandas``,
        :func:`~dask_streamsvm.io.csr_to_dask`), else None (computed from files or other tasks,
        or absent).  Scans each distinct graph once."""
        kinds = [None, None, None]
        if self.parquet_plan is not None or self.spill is not None:
            return tuple(kinds)
        for j in range(3):
            graphs = {}
            for part in self._parts:
                d = part[j]
                if d is not None and hasattr(d, "__dask_graph__"):
                    graph = d.__dask_graph__()
                    graphs.setdefault(id(graph), graph)
            for graph in graphs.values():
                for value in dict(graph).values():
                    value = value.value if type(value).__name__ == "DataNode" else value
                    if type(value).__name__ == "Future":
                        kinds[j] = "persisted"
                        break
                    if isinstance(value, np.ndarray | sp.spmatrix | sp.sparray | pd.DataFrame | pd.Series):
                        kinds[j] = "memory"
                if kinds[j] == "persisted":
                    break
        return tuple(kinds)

    def partition_id(self, p):
        """The number of this source's ``p``-th partition in the whole collection."""
        ids = getattr(self, "_ids", None)
        return p if ids is None else ids[p]

    # A function of a block's rows applied as each partition is loaded (after the checks, the
    # encoding and the spill: a spilled partition is scaled when read back), or None:
    # :class:`~dask_streamsvm.features.Standardize`'s ``scale_rows``.
    row_transform = None

    def load(self, p):
        """Compute partition ``p`` and return it as a checked :class:`Block` (from the spill once spilled)."""
        block = self._load(p)
        if self.row_transform is not None and block.n_rows > 0:
            block.X = self.row_transform(block.X)
        return block

    def _load(self, p):
        import dask

        parts, p = self._parts[p], self.partition_id(p)
        if self.spill is not None and (spilled := self.spill.get(p)) is not None:
            X, y, w, skipped = spilled
            return Block(partition=p, X=X, y=y, sample_weight=w, n_skipped=skipped)
        try:
            # pandas' advice that a frame is fragmented (the join of X and y of one frame, made
            # here, inserts columns) is nothing the user can act on: it is not shown.
            with pd.option_context("mode.performance_warnings", False):
                x, y, w = dask.compute(*parts)
        except Exception as exc:
            exc.add_note(f"(raised while computing partition {p} of the training data)")
            raise
        return self._block(p, x, y, w)

    def _block(self, p, x, y, w):
        """The checked, encoded :class:`Block` of partition ``p``'s computed parts (spilled if spilling)."""
        X, y, w, skipped = self._checked(p, x, y, w)
        if self.encoder is not None:
            X = self.encoder.encode(X) if self.encoder.reads_strings or not self._frame else X
            if hasattr(self.encoder, "expand"):
                X, y, w = self.encoder.expand(X, y, w)  # virtual examples: the partition's variants
        block = Block(partition=p, X=X, y=y, sample_weight=w, n_skipped=skipped)
        if self.spill is not None:
            self.spill.put(block)
        return block

    # -- the binary spill of text sources (:mod:`.spill`) ---------------------------

    spill = None  # a :class:`~.spill.Spill` while one is open

    @property
    def spill_bytes(self):
        """Bytes the open spill holds (0 without one)."""
        return 0 if self.spill is None else self.spill.bytes

    @contextlib.contextmanager
    def spilling(self, spill="auto", spill_dir=None):
        """Within the ``with`` block, partitions are spilled on their first read and read back from the spill.

        ``spill``: ``"auto"`` (text sources: LIBSVM and CSV), True (any
        source) or False.  The spill's directory is created in ``spill_dir``
        (None: the system's temporary directory) and removed on leaving the
        block, however it is left.
        """
        from .spill import Spill

        if not (spill is True or (spill == "auto" and self.text)):
            yield None
            return
        self.spill = Spill(spill_dir)
        try:
            yield self.spill
        finally:
            self.spill.close()
            self.spill = None

    def _spill_and_count(self, p, x, y, w):
        """The label count of partition ``p``'s computed parts, spilling its checked block on the way."""
        block = self._block(self.partition_id(p), x, y, w)
        return _count_labels(block.partition, block.y, block.sample_weight)

    def _checked(self, p, x, y, w):
        """Rows (before any encoding), labels and weights of partition ``p``, and the rows dropped.

        Every check that needs the values happens here: shapes, dtypes,
        columns, finite features, present labels, finite non-negative
        weights.  A failed check raises (``on_invalid="raise"``) naming the
        partition, row and column, or drops the row (``"skip"``).
        """
        if self._weight_column is not None:
            x, w = x.drop(columns=[self._weight_column]), x[self._weight_column]
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
        bad = self._bad_rows(X, p) | invalid_labels(y) | ~np.isfinite(w) | (w < 0)
        if not bad.any():
            return X, y, w, 0
        if self.on_invalid == "skip":
            keep = ~bad
            return X[keep], y[keep], w[keep], int(bad.sum())
        r = int(np.flatnonzero(bad)[0])
        where = self._where(p, r)
        if invalid_labels(y[r : r + 1])[0]:
            raise ValueError(label_error(where, y[r]))
        raise ValueError(
            f"{where}: sample_weight is {float(w[r])!r}; weights must be finite and >= 0. "
            "Fix them, or pass on_invalid='skip' to drop such rows."
        )

    def _where(self, p, r):
        """``partition p, row r`` with the row's place in the collection when chunk sizes are known."""
        offset = self._row_offset(p)
        at = f" (row {offset + r} of the collection)" if offset is not None else ""
        return f"partition {p}, row {r}{at}"

    @property
    def known_rows(self):
        """Rows of the collection if its partitions' lengths are known without a read (a Dask
        Array with known chunks), else None."""
        chunks = getattr(self, "_row_chunks", None)
        if chunks is None or getattr(self, "_ids", None) is not None or np.isnan(chunks).any():
            return None
        return int(chunks.sum())

    def _row_offset(self, p):
        chunks = getattr(self, "_row_chunks", None)
        if chunks is None or any(np.isnan(chunks[:p])):
            return None
        return int(np.sum(chunks[:p]))

    def _rows(self, x, p):
        """Partition ``p``'s features as numbers: a C-ordered array, CSR rows or (strings) a frame."""
        if self._frame:
            if isinstance(x, np.ndarray):  # read by the Parquet fast path: numbers of the source's dtype
                return x
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
                if pd.api.types.is_complex_dtype(series.dtype):
                    raise ValueError(complex_message(f"partition {p}, column {column!r}", series.dtype))
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
            if x.dtype.kind == "c":
                raise ValueError(complex_message(f"partition {p}: X", x.dtype))
            x = check_sparse_structure(x, lambda r: f"partition {p}" if r is None else self._where(p, r))
            X = sp.csr_matrix(x, dtype=x.dtype if x.dtype in (np.float32, np.float64) else np.float64)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            if X.shape[1] != self.n_input_features:
                raise ValueError(f"partition {p} has {X.shape[1]} columns, expected {self.n_input_features}.")
            return X
        values = np.asarray(x)
        if values.dtype.kind == "c":
            raise ValueError(complex_message(f"partition {p}: X", values.dtype))
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
        """Rows of ``X`` that no solver can use: a value NaN or infinite, or ``x . x`` overflowing.

        With ``on_invalid="raise"`` the first such row is an error naming it.
        """
        if hasattr(X, "columns"):  # strings for an encoding map: it checks what it reads
            rows, first = non_finite_encoded(self.encoder, X)
            if first is not None and self.on_invalid != "skip":
                row, column, value = first
                raise ValueError(self._not_finite(p, row, f"column {column!r}", value, rows))
            return rows
        values = X.data if sp.issparse(X) else X
        rows = np.zeros(X.shape[0], dtype=bool)
        first, top = first_non_finite(values)
        if first >= 0:  # only then the mask of every value (a bool per value)
            bad = ~np.isfinite(values)
            if sp.issparse(X):
                rows[np.searchsorted(X.indptr, np.flatnonzero(bad), side="right") - 1] = True
            else:
                rows = bad.any(axis=1)
        if rows.any() and self.on_invalid != "skip":
            if sp.issparse(X):
                k = int(np.flatnonzero(bad)[0])
                row = int(np.searchsorted(X.indptr, k, side="right") - 1)
                col, value = f"feature {int(X.indices[k])}", values[k]
            else:
                row, c = (int(v[0]) for v in np.nonzero(bad))
                col = f"column {self._columns[c]!r}" if self._frame else f"feature {c}"
                value = values[row, c]
            raise ValueError(self._not_finite(p, row, col, value, rows))
        overflowing = overflowing_rows(X, top=top if first < 0 else None) & ~rows
        if overflowing.any() and self.on_invalid != "skip":
            r = int(np.flatnonzero(overflowing)[0])
            raise ValueError(overflow_message(self._where(p, r), X, r))
        return rows | overflowing

    def _not_finite(self, p, row, column, value, rows):
        """The error for the value NaN or infinity in ``column`` of row ``row`` (``rows``: every such row)."""
        what = "NaN" if np.isnan(value) else "infinity"
        return (
            f"{self._where(p, row)}, {column}: the value is {what}; {int(rows.sum())} rows of the partition "
            "hold values that are not finite. Drop or impute them, or pass on_invalid='skip' to drop them."
        )


class _Given:
    """The placeholder of a partition's x, y or w whose data is given on the worker
    (:meth:`DaskSource.use_data`); unpickled as the one :data:`_GIVEN`."""

    def __reduce__(self):
        return "_GIVEN"

    def __repr__(self):
        return "<given on the worker>"


_GIVEN = _Given()


def _culled(part):
    """A partition's ``(x, y, w)`` delayed objects sharing one graph culled to their own tasks."""
    from dask.delayed import Delayed
    from dask.optimization import cull

    present = [d for d in part if d is not None]
    merged = {}
    for d in present:
        merged.update(d.__dask_graph__())
    graph, _ = cull(merged, [d.key for d in present])
    return tuple(None if d is None else Delayed(d.key, graph) for d in part)


def _local_scheduler():
    """Whether Dask computes on this process's threads (not on a distributed cluster's workers)."""
    from dask.base import get_scheduler

    owner = getattr(get_scheduler(), "__self__", None)
    return owner is None or type(owner).__name__ != "Client"


def missing_labels(y):
    """Labels that are absent: NaN, None or pandas' NA."""
    if y.dtype.kind == "f":
        return np.isnan(y)
    if y.dtype.kind == "O":
        return np.asarray(pd.isna(y), dtype=bool)
    return np.zeros(y.shape[0], dtype=bool)


def invalid_labels(y):
    """Labels no class can have: missing (:func:`missing_labels`) or infinite."""
    if y.dtype.kind == "f":
        return ~np.isfinite(y)
    bad = missing_labels(y)
    if y.dtype.kind == "O" and pd.api.types.infer_dtype(y, skipna=True) not in ("string", "bytes", "empty"):
        bad = bad | np.fromiter((isinstance(v, float) and math.isinf(v) for v in y), bool, y.shape[0])
    return bad


def label_error(where, label):
    """The message for an invalid label (:func:`invalid_labels`), ``where`` naming its row."""
    problem = f"missing ({label})" if pd.isna(label) else f"infinite ({label}), not a class"
    return f"{where}: the label is {problem}. Drop such rows, or pass on_invalid='skip'."


def complex_message(what, dtype):
    """The error for complex features, ``what`` naming where they are."""
    return (
        f"{what} holds complex values (dtype {dtype}); complex values are not supported. Pass their "
        "real and imaginary parts as separate features (e.g. X.real and X.imag side by side)."
    )


def non_finite_encoded(encoder, frame):
    """Rows of ``frame`` whose values an encoding map reads are NaN or infinite, and the first such
    ``(row, column, value)`` or None (maps without ``non_finite_rows`` check what they read)."""
    check = getattr(encoder, "non_finite_rows", None)
    return check(frame) if check is not None else (np.zeros(len(frame), dtype=bool), None)


# A value below this bound squares to at most max / n_features: n of them cannot overflow x . x.
_SQRT_MAX = float(np.sqrt(np.finfo(np.float64).max))


def first_non_finite(values):
    """``(k, top)`` for an array's values in C order: the index of the first NaN or infinite one
    (-1 if none) and the largest magnitude before it, in one pass that allocates nothing."""
    from ..kernels.layout import scan_values

    if values.size == 0 or values.dtype.kind != "f":
        return -1, 0.0
    flat = values.reshape(-1) if values.flags.c_contiguous else np.ravel(values)
    k, top = scan_values(flat)
    return int(k), float(top)


def overflowing_rows(X, top=None):
    """Rows of ``X`` (2-D array or CSR) of finite values whose ``x . x`` overflows float64.

    The kernels accumulate ``x . x`` (and ``w . x``) in float64; such a row
    (values near 1e154 and above) has an infinite norm and no solver can
    use it.  Costs two reductions unless some value is that large, or
    none if ``top``, the largest magnitude of the values, is known.
    """
    values = (X.data if sp.issparse(X) else X).ravel()
    rows = np.zeros(X.shape[0], dtype=bool)
    if values.size == 0 or values.dtype.kind != "f":
        return rows
    if top is None:
        top = max(abs(float(np.fmax.reduce(values))), abs(float(np.fmin.reduce(values))))
    if not top > _SQRT_MAX / math.sqrt(max(X.shape[1], 1)):  # also False for NaN: nothing to check
        return rows
    finite = np.where(np.isfinite(values), values, 0.0).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        squares = finite * finite
        if sp.issparse(X):
            entry_rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            sq = np.bincount(entry_rows, weights=squares, minlength=X.shape[0])
        else:
            sq = squares.reshape(X.shape).sum(axis=1)
    return ~np.isfinite(sq)


def overflow_message(where, X, r, *, skip=True):
    """The error for row ``r`` of ``X``, whose ``x . x`` overflows, ``where`` naming the row."""
    row = X[r].toarray().ravel() if sp.issparse(X) else np.asarray(X[r])
    fix = ", or pass on_invalid='skip' to drop such rows" if skip else ""
    return (
        f"{where}: the row's squared norm x . x overflows float64 (its largest value is "
        f"{float(np.max(np.abs(row))):.3g}); no solver can learn from it. The features need scaling "
        f"(e.g. sklearn.preprocessing.StandardScaler or MaxAbsScaler){fix}."
    )


def check_sparse_structure(X, where):
    """``X`` (SciPy sparse) if its index arrays are consistent, else a ValueError naming the first flaw.

    Neither SciPy's constructors nor scikit-learn's ``check_array`` look at
    the values of ``indices`` and ``indptr``, while the kernels, and SciPy's
    own conversions and products, read ``w[indices[k]]`` and
    ``data[indptr[i]:indptr[i + 1]]`` without bounds checks: an index out
    of range corrupts memory.  CSR, CSC and COO are checked here in
    ``O(nnz)`` vectorised passes, BSR by SciPy's full check; other formats
    are converted to CSR (SciPy converts them safely) and checked.
    ``where(row)`` names a row of ``X``, ``where(None)`` the matrix.  A
    matrix whose ``indptr`` ends before its storage (room SciPy allows)
    comes back trimmed to its entries, as a new matrix.
    """
    fmt = X.format
    if fmt == "bsr":
        try:
            X.copy().check_format(full_check=True)  # on a copy: the check may change the arrays
        except ValueError as exc:
            raise ValueError(f"{where(None)}: the sparse matrix is malformed: {exc}. {_REBUILD}") from None
        return X
    if fmt not in ("csr", "csc", "coo"):
        X = X.tocsr()
    row, flaw = _coo_flaw(X) if fmt == "coo" else _compressed_flaw(X)
    if flaw is not None:
        raise ValueError(f"{where(row)}: the sparse matrix is malformed: {flaw}. {_REBUILD}")
    if fmt != "coo" and X.indptr[-1] < X.indices.shape[0]:
        end = int(X.indptr[-1])
        return type(X)((X.data[:end], X.indices[:end], X.indptr), shape=X.shape)
    return X


_REBUILD = (
    "Its index arrays are inconsistent (built or changed by hand?); build it with the scipy.sparse "
    "constructors, and X.check_format(full_check=True) finds such flaws."
)


def _index_arrays_flaw(arrays, n_values):
    """What is wrong with the index ``arrays`` (name -> array), or None: they must be 1-D signed
    integers (as SciPy's routines need), and all but ``indptr`` of ``n_values`` entries."""
    for name, a in arrays.items():
        if a.ndim != 1 or a.dtype.kind != "i":
            return f"{name} must be a 1-D array of signed integers, got dtype {a.dtype} and shape {a.shape}"
        if name != "indptr" and a.shape[0] != n_values:
            return f"{name} has {a.shape[0]} entries and data {n_values}; they must match"
    return None


def _compressed_flaw(X):
    """``(row or None, flaw)`` of a CSR or CSC matrix: its first inconsistency, or ``(None, None)``."""
    csr = X.format == "csr"
    n_major, n_minor = X.shape if csr else X.shape[::-1]
    major, minor = ("row", "column") if csr else ("column", "row")
    indptr, indices = X.indptr, X.indices

    def at(i, flaw):  # a CSC matrix's flaw is in a column: it names no row
        return (i if csr else None), flaw

    if X.data.ndim != 1:
        return None, f"data must be 1-D, got shape {X.data.shape}"
    flaw = _index_arrays_flaw({"indptr": indptr, "indices": indices}, X.data.shape[0])
    if flaw is not None:
        return None, flaw
    if indptr.shape[0] != n_major + 1:
        return None, f"indptr has {indptr.shape[0]} entries; {n_major} {major}s need {n_major + 1}"
    if indptr[0] != 0:
        return None, f"indptr starts at {indptr[0]}, not 0"
    stored = indices.shape[0]
    past = np.flatnonzero(indptr > stored)
    if past.shape[0]:
        i = int(past[0]) - 1
        return at(i, f"{major} {i} ends at entry {indptr[i + 1]}, past the {stored} entries stored")
    down = np.flatnonzero(np.diff(indptr.astype(np.int64)) < 0)
    if down.shape[0]:
        i = int(down[0])
        return at(i, f"indptr decreases at {major} {i} (from {indptr[i]} to {indptr[i + 1]})")
    used = indices[: int(indptr[-1])]
    out = np.flatnonzero((used < 0) | (used >= n_minor)) if used.shape[0] else used[:0]
    if out.shape[0]:
        k = int(out[0])
        i = int(np.searchsorted(indptr, k, side="right") - 1)
        whose = "its" if csr else f"{major} {i} has a"
        return at(i, f"{whose} {minor} index {int(used[k])} is outside [0, {n_minor})")
    return None, None


def _coo_flaw(X):
    """``(row or None, flaw)`` of a COO matrix: its first inconsistency, or ``(None, None)``."""
    flaw = _index_arrays_flaw({"row": X.row, "col": X.col}, X.data.shape[0])
    if flaw is not None:
        return None, flaw
    for name, index, n, at in (("row", X.row, X.shape[0], None), ("column", X.col, X.shape[1], X.row)):
        out = np.flatnonzero((index < 0) | (index >= n))
        if out.shape[0]:
            k = int(out[0])
            return (None if at is None else int(at[k])), (
                f"entry {k} has {name} index {int(index[k])}, outside [0, {n})"
            )
    return None, None


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


def merge_label_counts(results, allow_empty=False, partitions=None):
    """``(classes, counts, weighted classes)`` of the partitions' (or parts') label counts.

    ``partitions`` numbers the results, for the error when some hold
    string labels and others numbers.
    """
    _check_label_types(results, partitions)
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


def _label_type(label):
    return "string" if isinstance(label, str | bytes) else "number"


def _mixed_labels(string_at, number_at):
    """The error for string and numeric labels: ``(where, label)`` of one of each."""
    (ws, s), (wn, n) = string_at, number_at
    return ValueError(
        f"the labels mix strings and numbers: {ws} has the label {s!r} and {wn} the label {n!r}. Give y "
        "one type in every partition (y.astype(str), or the strings converted to numbers)."
    )


def _check_label_types(results, partitions):
    """A ValueError if some of ``results`` have string labels and others numbers."""
    first = {}  # type -> (where, label)
    for k, (labels, _, _) in enumerate(results):
        where = f"part {k}" if partitions is None else f"partition {partitions[k]}"
        for label in labels.tolist():
            first.setdefault(_label_type(label), (where, label))
        if len(first) == 2:
            raise _mixed_labels(first["string"], first["number"])


def _count_labels(p, y, w):
    y = np.asarray(y).ravel()
    invalid = invalid_labels(y)
    if invalid.any():
        r = int(np.flatnonzero(invalid)[0])
        raise ValueError(label_error(f"partition {p}, row {r}", y[r]))
    try:
        labels, counts = np.unique(y, return_counts=True)
    except TypeError:  # labels that do not sort together: strings and numbers
        first = {}
        for r, label in enumerate(y.tolist()):
            first.setdefault(_label_type(label), (f"partition {p}, row {r}", label))
        if len(first) < 2:
            raise
        raise _mixed_labels(first["string"], first["number"]) from None
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

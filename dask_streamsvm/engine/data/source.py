"""Dask collections -> blocks of rows, one partition at a time.

A :class:`DaskSource` checks the collection's layout up front (row chunks
only, X and y partitioned alike, numeric columns) and hands out one
delayed task per partition.  :meth:`DaskSource.load` computes a partition
and turns it into a :class:`Block`: the rows in the layout the kernels read,
the raw labels and the sample weights, with every check that needs the
values (NaN, inf, lengths, columns) done there, naming the partition.  It
runs on the reader thread, off the trainer's path.

The checks and their messages are in :mod:`.checks`, the labels' layout
and counts in :mod:`.labels`, the partitions' graphs (what a cluster's
worker is sent) in :mod:`.graphs`, and the global row ids in :mod:`.row_ids`.
"""

import contextlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .checks import (
    chunk_rows,
    complex_message,
    frame_rows,
    invalid_labels,
    label_error,
    non_finite_encoded,
    non_finite_message,
    unusable_rows,
)
from .graphs import GIVEN, culled_graph, held_kinds
from .labels import count_labels_of, label_partitions, merge_label_counts
from .malloc import bound_retention, release_free_memory
from .waiting import computed, watched_compute

# What other modules import from here.  The checks, the label counts, the graphs and the row ids
# live in :mod:`.checks`, :mod:`.labels`, :mod:`.graphs` and :mod:`.row_ids`.

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


def rows_trained(source, rows):
    """The examples ``rows`` rows of ``source`` train as: ``n_variants`` each where its encoder makes
    virtual examples as partitions are read (:class:`~dask_streamsvm.features.VirtualExamples`), else
    ``rows``; None (not known) stays None."""
    encoder = getattr(source, "encoder", None)
    if rows is None or encoder is None or not hasattr(encoder, "expand"):
        return rows
    return rows * int(encoder.n_variants)


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
        bound_retention()  # partitions get mappings of their own: freed, they leave the process
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
        parts_y = label_partitions(y, len(parts_x), X.chunks[0], "y", optimize=False)
        parts_w = label_partitions(sample_weight, len(parts_x), X.chunks[0], "sample_weight", optimize=False)
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
        self._collections = (X, y, sample_weight, whole)  # to name a damaged Parquet file it reads
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
            parts_w = label_partitions(sample_weight, len(parts_x), None, "sample_weight")
            self._parts = [(x, None, w) for x, w in zip(parts_x, parts_w, strict=True)]
            # Counting labels reads the label column alone (unless weights count too).
            if sample_weight is None and self._weight_column is None:
                self._count_parts = [(None, yp, None) for yp in y.to_delayed()]
            return
        parts_x = list(X.to_delayed())
        parts_y = label_partitions(y, len(parts_x), None, "y")
        parts_w = label_partitions(sample_weight, len(parts_x), None, "sample_weight")
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
            tasks = [  # (the partitions in the spill already are read back from it, not parsed again)
                dask.delayed(self._spill_and_count)(p, *(() if self.partition_id(p) in self.spill else parts))
                for p, parts in enumerate(self._parts)
            ]
        elif self.on_invalid == "skip":
            tasks = [dask.delayed(self._count_valid)(p, *parts) for p, parts in enumerate(self._parts)]
        else:
            parts = getattr(self, "_count_parts", self._parts)
            tasks = [
                dask.delayed(count_labels_of)(
                    self.partition_id(p),
                    y if y is not None else x[label],
                    w if w is not None or self._weight_column is None else x[self._weight_column],
                )
                for p, (x, y, w) in enumerate(parts)
            ]
        ids = [self.partition_id(p) for p in range(len(tasks))]
        try:
            results = watched_compute(tasks, ids, read_timeout)
        except Exception as exc:
            self._name_damaged_file(exc)
            raise
        release_free_memory()  # the partitions computed for their labels
        if not merged:
            return list(results)
        return merge_label_counts(results, allow_empty, partitions=ids)

    def _count_valid(self, p, x, y, w):
        _, y, w, _ = self._checked(self.partition_id(p), x, y, w)
        return count_labels_of(self.partition_id(p), y, w)

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
            lazy = culled_graph(tuple(None if g else d for d, g in zip(part, given, strict=True)))
            sub._parts.append(
                tuple(GIVEN if g and d is not None else c for d, c, g in zip(part, lazy, given, strict=True))
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
            tuple(value if now is GIVEN else now for now, value in zip(part, values, strict=True))
            for part, values in zip(self._parts, data, strict=True)
        ]
        self.__dict__.pop("_count_parts", None)

    def held(self):
        """Where each of the collection's ``x, y, w`` already is (:func:`~.graphs.held_kinds`: e.g.
        ``"memory"`` for :func:`~dask_streamsvm.io.csr_to_dask`); None for each when the Parquet
        fast path reads the partitions or a spill holds them."""
        if self.parquet_plan is not None or self.spill is not None:
            return (None, None, None)
        return held_kinds(self._parts)

    @property
    def partitions(self):
        """Per partition, the delayed objects ``(x, y, w)`` a read computes (None where there is none;
        with the Parquet fast path, the tasks that decode its files)."""
        return tuple(self._parts)

    @property
    def is_part(self):
        """Whether this source is a :meth:`subset` of a collection (a cluster worker's part)."""
        return getattr(self, "_ids", None) is not None

    def partition_id(self, p):
        """The number of this source's ``p``-th partition in the whole collection."""
        ids = getattr(self, "_ids", None)
        return p if ids is None else ids[p]

    # A function of a block's rows applied as each partition is loaded (after the checks, the
    # encoding and the spill: a spilled partition is scaled when read back), or None:
    # :class:`~dask_streamsvm.features.Standardize`'s ``scale_rows``.
    row_transform = None
    scaled = False  # set for a Standardize: x . x is checked on the scaled rows, after row_transform

    def load(self, p):
        """Compute partition ``p`` and return it as a checked :class:`Block` (from the spill once spilled)."""
        block = self._load(p)
        if self.row_transform is not None and block.n_rows > 0:
            block.X = self.row_transform(block.X)
        return block

    _held_pages = False  # within :meth:`holding`

    @contextlib.contextmanager
    def holding(self):
        """Within the ``with`` block, the partitions the Parquet fast path reads are made on small
        pages (:func:`~.malloc.held_empty`, from :data:`~.malloc.HELD_BLOCK_PAGES`): for a read whose
        blocks are held as read to the fit's end (a cluster's part keeping its rows), where NumPy's
        huge pages, faulted in afresh for every block kept, cost more than the read.  Other sources'
        partitions are made as their graphs make them."""
        self._held_pages = True
        try:
            yield self
        finally:
            self._held_pages = False

    def _load(self, p):
        parts, p = self._parts[p], self.partition_id(p)
        if self.spill is not None and (spilled := self.spill.get(p)) is not None:
            X, y, w, skipped = spilled
            return Block(partition=p, X=X, y=y, sample_weight=w, n_skipped=skipped)
        try:
            if self._held_pages and self.parquet_plan is not None:
                x, y, w = self._read_held(p)
            else:
                # pandas' advice that a frame is fragmented (the join of X and y of one frame, made
                # here, inserts columns) is nothing the user can act on: it is not shown.
                with pd.option_context("mode.performance_warnings", False):
                    x, y, w = computed(parts)
        except Exception as exc:
            self._name_damaged_file(exc, f"partition {p}: ")
            exc.add_note(f"(raised while computing partition {p} of the training data)")
            raise
        return self._block(p, x, y, w)

    def _read_held(self, p):
        """Partition ``p``'s (a global number) ``(x, y, w)`` read by the Parquet fast path, as its task
        reads it, into small pages (:meth:`holding`)."""
        from functools import partial

        from . import parquet
        from .malloc import HELD_BLOCK_PAGES, held_empty

        plan = self.parquet_plan
        return parquet.read_part(
            plan.fs, plan.parts[p], plan.columns, plan.label, plan.weight, self.dtype,
            empty=partial(held_empty, small_from=HELD_BLOCK_PAGES),
        )  # fmt: skip

    def _name_damaged_file(self, exc, where=""):
        """Raise pyarrow's error on a Parquet file it cannot read (``exc``) as a ValueError naming
        the file (:func:`.parquet.unreadable_file`); return if ``exc`` is another error."""
        from .parquet import unreadable_file

        named = unreadable_file(exc, *getattr(self, "_collections", ()))
        if named is not None:
            raise ValueError(f"{where}{named}") from exc

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
        block, however it is left.  Any ``OSError`` of the spill drops it
        (:mod:`.spill`): the partitions are read from the source, and a
        warning says so once, as the block ends.
        """
        from .spill import opened

        if not (spill is True or (spill == "auto" and self.text)):
            yield None
            return
        with opened(spill_dir) as self.spill:
            try:
                yield self.spill
            finally:
                self.spill = None

    def _spill_and_count(self, p, *parts):
        """The label count of partition ``p``'s computed ``parts`` (x, y, w), spilling its checked
        block on the way; without ``parts``, of the block the spill holds."""
        block = self._block(self.partition_id(p), *parts) if parts else self.load(p)
        return count_labels_of(block.partition, block.y, block.sample_weight)

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
        Array with known chunks), else None (and None for a cluster's part)."""
        rows = None if self.is_part else self.partition_rows
        return None if rows is None else int(rows.sum())

    @property
    def partition_rows(self):
        """Each of this source's partitions' rows (int64) where all are known without a read (a Dask
        Array with known chunks; a cluster's part, :meth:`subset`, its own), else None."""
        chunks = getattr(self, "_row_chunks", None)
        if chunks is None:
            return None
        ids = getattr(self, "_ids", None)
        chunks = chunks if ids is None else chunks[np.asarray(ids, dtype=np.int64)]
        return None if np.isnan(chunks).any() else chunks.astype(np.int64)

    def _row_offset(self, p):
        chunks = getattr(self, "_row_chunks", None)
        if chunks is None or any(np.isnan(chunks[:p])):
            return None
        return int(np.sum(chunks[:p]))

    def _rows(self, x, p):
        """Partition ``p``'s features as numbers: a C-ordered array, CSR rows or (strings) a frame."""
        if not self._frame:

            def where(r):
                return f"partition {p}" if r is None else self._where(p, r)

            return chunk_rows(x, p, self.n_input_features, where)
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
        return frame_rows(x, self._columns, self.dtype, p)

    def _bad_rows(self, X, p):
        """Rows of ``X`` that no solver can use (:func:`~.checks.unusable_rows`).

        With ``on_invalid="raise"`` the first such row is an error naming it.
        """
        raising = self.on_invalid != "skip"
        if hasattr(X, "columns"):  # strings for an encoding map: it checks what it reads
            rows, first = non_finite_encoded(self.encoder, X)
            if first is not None and raising:
                row, column, value = first
                raise ValueError(non_finite_message(self._where(p, row), f"column {column!r}", value, rows))
            return rows

        def column_name(c):
            return f"column {self._columns[c]!r}" if self._frame else f"feature {c}"

        where = lambda r: self._where(p, r)  # noqa: E731
        return unusable_rows(X, where, column_name, raising=raising, norms=not self.scaled)


def _local_scheduler():
    """Whether Dask computes on this process's threads (not on a distributed cluster's workers)."""
    from dask.base import get_scheduler

    owner = getattr(get_scheduler(), "__self__", None)
    return owner is None or type(owner).__name__ != "Client"


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

"""Parquet partitions straight to arrays: the reader's fast path.

A Dask DataFrame from ``dd.read_parquet`` decodes each partition through an
Arrow table into a pandas frame, which :class:`~.source.DaskSource` then
copies into the C-ordered array the kernels read: three copies of the
partition alive at once, and Dask's DataFrame machinery in between.  When
X and y are plain column selections of one such read (``frame[cols]``,
``frame.drop(columns=...)``, ``frame["y"]``, or ``fit(frame, "y")``), the
collection's own read plan says which file and row groups make each
partition.  :func:`parquet_plan` recognises that case, and
:func:`read_part` reads a partition's row groups with pyarrow and writes
each column straight into a preallocated C-ordered array of the source's
dtype, about :data:`GROUP_BYTES` of decoded columns at a time: beside the
final array only those columns, and no pandas.

Only what the general path would read the same way takes this path: the
fsspec reader (``dd.read_parquet``'s default), no ``filters``, no hive
partition columns, numeric or boolean feature columns, and labels that are
numbers, booleans or strings.  Anything else keeps the general path, with
its checks and messages.  The partitions are the read plan's (one per file,
or per row-group split), before Dask's optimiser fuses the partitions of a
narrow column selection, so the values, the row order and the partitions
match what ``dd.read_parquet`` gives without fusion.
"""

import contextlib
from dataclasses import dataclass

import numpy as np


@dataclass
class ParquetPlan:
    """Where each partition's rows are, and which columns to read."""

    fs: object  # the fsspec filesystem of the read
    parts: list  # per partition: a list of (path, row groups or None)
    columns: list  # feature columns, in X's order
    label: object  # the label column's name, or None
    weight: object  # the weight column's name, or None

    @property
    def n_partitions(self):
        return len(self.parts)


def _read_parquet_root(expr):
    """``(ReadParquetFSSpec, columns, is_series)`` behind ``expr`` when it only selects columns, or None."""
    try:
        from dask.dataframe.dask_expr._expr import Projection
        from dask.dataframe.dask_expr.io.parquet import ReadParquetFSSpec
    except ImportError:  # pragma: no cover - another dask layout: use the general path
        return None
    expr = expr.simplify()  # pushes column selections into the read
    series = False
    columns = None
    if isinstance(expr, Projection):
        columns = expr.operand("columns")
        series = not isinstance(columns, list)
        columns = [columns] if series else list(columns)
        expr = expr.frame
    if not isinstance(expr, ReadParquetFSSpec):
        return None
    if expr._series:
        series = True
    read_columns = list(expr.columns)
    if columns is None:
        columns = read_columns
    elif not set(columns) <= set(read_columns):
        return None
    return expr, columns, series


def _base_name(read):
    """The read without its column selection: two selections of one read have the same base name."""
    return read.substitute_parameters({"columns": None, "_series": False})._name


def _plain_read(read):
    """Whether ``read`` is one this module reads the same way as Dask: see the module's docstring."""
    import pyarrow as pa

    if read.operand("filters") is not None:
        return False
    info = read._dataset_info
    plan = read._plan
    if plan["empty"] or plan["common_kwargs"].get("partitions"):
        return False
    if (info["kwargs"].get("dtype_backend") or None) is not None:
        return False
    for part in plan["parts"]:
        for entry in part if isinstance(part, list) else [part]:
            piece = entry["piece"]
            if entry.get("kwargs") or (not isinstance(piece, str) and piece[2]):
                return False  # hive partition keys or per-piece options
    return isinstance(info["schema"], pa.Schema)


def _numeric(t):
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _label_type(t):
    import pyarrow as pa

    return _numeric(t) or pa.types.is_string(t) or pa.types.is_large_string(t)


def parquet_plan(X, y, sample_weight=None):
    """The :class:`ParquetPlan` of ``(X, y, sample_weight)``, or None where the general path is needed.

    ``X`` is a Dask DataFrame; ``y`` names one of its columns, or is a Dask
    Series; ``sample_weight`` is None or a Dask Series.  The plan exists when
    every one of them selects columns of the same ``dd.read_parquet`` call
    and that read is plain (see the module's docstring).
    """
    found = _read_parquet_root(X.expr)
    if found is None:
        return None
    read, x_columns, _ = found
    label = weight = None
    base = _base_name(read)
    if isinstance(y, str):
        if y not in x_columns:
            return None
        label = y
        x_columns = [c for c in x_columns if c != y]
    for name, v in (("y", y), ("sample_weight", sample_weight)):
        if v is None or isinstance(v, str):
            continue
        other = _read_parquet_root(getattr(v, "expr", None)) if hasattr(v, "expr") else None
        if other is None or not other[2] or len(other[1]) != 1 or _base_name(other[0]) != base:
            return None
        if name == "y":
            label = other[1][0]
        else:
            weight = other[1][0]
    if label is None or not _plain_read(read):
        return None
    schema = read._dataset_info["schema"]
    names = set(schema.names)
    if not set(x_columns) | {label} | ({weight} if weight is not None else set()) <= names:
        return None
    if not all(_numeric(schema.field(c).type) for c in x_columns):
        return None
    if not _label_type(schema.field(label).type):
        return None
    if weight is not None and not _numeric(schema.field(weight).type):
        return None
    plan = read._plan["parts"]
    parts = []
    for i in read._partitions:
        entries = plan[i] if isinstance(plan[i], list) else [plan[i]]
        pieces = []
        for entry in entries:
            piece = entry["piece"]
            path, groups = (piece, None) if isinstance(piece, str) else (piece[0], piece[1])
            if isinstance(groups, int):
                groups = [groups]
            pieces.append((path, None if groups is None else list(groups)))
        parts.append(pieces)
    return ParquetPlan(read._dataset_info["fs"], parts, list(x_columns), label, weight)


def _values(array, dtype):
    """An Arrow array's values as NumPy ``dtype`` (a view where they already are); nulls are NaN."""
    import pyarrow as pa

    if array.null_count:
        array = array.cast(pa.float64())  # its nulls read as NaN, which the checks then report
    values = np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)
    values.flags.writeable = False  # as Arrow's own buffers are: one array type for the kernel's list
    return values


def _rows_into(out, batch, start, first):
    """Write the columns of an Arrow record batch into ``out[start:, first:]``, row by row."""
    from numba.typed import List

    from ...kernels.layout import columns_into_rows

    values = List()
    for j in range(batch.num_columns):
        values.append(_values(batch.column(j), out.dtype))
    columns_into_rows(out, values, start, first)


GROUP_BYTES = 8 << 20  # decoded bytes of columns read at once (32 MB: 1.5-2.7x the excess over the formula)


def _decode(reader, groups, indices):
    if groups is None:
        return reader.read_all(column_indices=indices, use_threads=True)
    return reader.read_row_groups(groups, column_indices=indices, use_threads=True)


def _reader(source):
    """A pyarrow Parquet reader of ``source`` (a path or a file object) that allocates with malloc.

    Arrow's default allocator keeps the memory of freed tables for reuse
    (about 150 MB after a few 50 MB partitions, measured), which no budget
    accounts for; memory from the system allocator stays in the reading
    thread's heap for the next group of columns (up to the trim threshold,
    :data:`~.malloc.TRIM_THRESHOLD`) and goes back with the reader's
    ``malloc_trim`` once a pass.
    """
    import pyarrow as pa
    from pyarrow._parquet import ParquetReader

    reader = ParquetReader(memory_pool=pa.system_memory_pool())
    reader.open(source)
    return reader


def _opened(path, source):
    """:func:`_reader` of ``source`` (``path`` or its open file); a file Arrow cannot read as Parquet
    (truncated, damaged, or another format) is a ValueError naming it.  I/O errors stay as they are
    (a read may retry them)."""
    import pyarrow as pa

    try:
        return _reader(source)
    except pa.ArrowInvalid as exc:
        raise ValueError(
            f"{path}: not a readable Parquet file ({exc}). It is truncated, damaged or of another "
            "format: write it again, or leave it out of the input."
        ) from None


def unreadable_file(exc, *collections):
    """The ValueError :func:`_opened` gives for the first file of the Parquet reads behind
    ``collections`` that pyarrow cannot open, if ``exc`` is pyarrow's ``ArrowInvalid``; else None.

    The general path (a frame computed by Dask) raises pyarrow's error without the file's name:
    opening each file's footer again, on this error only, finds it.
    """
    import pyarrow as pa

    if not isinstance(exc, pa.ArrowInvalid):
        return None
    try:
        from dask.dataframe.dask_expr.io.parquet import ReadParquet
    except ImportError:  # pragma: no cover - another dask layout: the error stays as it is
        return None
    for collection in collections:
        expr = getattr(collection, "expr", None)
        for read in expr.find_operations(ReadParquet) if expr is not None else ():
            info = read._dataset_info
            fs = info["fs"]
            for path in getattr(info["ds"], "files", ()):
                try:  # a pyarrow file system, or an fsspec one
                    with (
                        fs.open_input_file(path)
                        if hasattr(fs, "open_input_file")
                        else fs.open(path, "rb") as file
                    ):
                        _opened(path, file)
                except ValueError as named:
                    return named
                except OSError:  # a file gone or not readable: not the one Arrow found damaged
                    continue
    return None


def _check_schema(path, schema, columns, label, weight):
    """Refuse a file whose columns are not all there, or whose column types this path (and the
    model) cannot read as numbers: a ValueError naming the file, the column, the type and the fix.

    The plan checked the types of the dataset's schema (its first file's);
    each file is checked here, as the general path checks each partition's
    values (a timestamp column read as int64 nanoseconds would train).
    """
    import pyarrow as pa

    names = set(schema.names)
    wanted = [*columns, label, *([weight] if weight is not None else [])]
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ValueError(
            f"{path} has no column {missing[0]!r}: the files' schemas differ; give every file "
            "the same columns."
        )
    checks = [(c, _numeric, "a feature") for c in columns] + [(label, _label_type, "the label column")]
    if weight is not None:
        checks.append((weight, _numeric, "the sample weights"))
    for column, usable, role in checks:
        kind = schema.field(column).type
        if not usable(kind):
            what = "numbers or booleans" if usable is _numeric else "numbers, booleans or strings"
            example = " (a timestamp: e.g. to float seconds)" if pa.types.is_temporal(kind) else ""
            raise ValueError(
                f"{path}, column {column!r}: its values are of type {kind} in this file, but {role} "
                f"must hold {what}: the files' schemas differ. Cast the column to numbers in every "
                f"file{example}, or drop it."
            )


def _rows_of(reader, groups):
    meta = reader.metadata
    return meta.num_rows if groups is None else sum(meta.row_group(g).num_rows for g in groups)


def read_part(fs, pieces, columns, label, weight, dtype, empty=np.empty):
    """One partition's rows: ``(X, y, w)`` with X C-ordered of ``dtype``, y the labels, w the weights or None.

    ``pieces`` lists ``(path, row groups or None)``; ``columns`` are the
    feature columns (empty to read the labels alone).  Each piece is decoded
    and written into X before the next is read.  ``empty(shape, dtype)`` makes X
    (:func:`~.malloc.held_empty` for rows that will be held).
    """
    wanted = list(columns) + [label] + ([weight] if weight is not None else [])
    # A local file is opened by Arrow itself: through fsspec's file object, decoding takes 1.8x as long.
    local = "file" in ((fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol))
    with contextlib.ExitStack() as files:
        readers = []
        for path, groups in pieces:
            reader = _opened(path, path if local else files.enter_context(fs.open(path, "rb")))
            _check_schema(path, reader.schema_arrow, columns, label, weight)
            readers.append((reader, groups))
        X = empty((sum(_rows_of(r, g) for r, g in readers), len(columns)), dtype)
        y, w = [], []
        start = 0
        for reader, groups in readers:
            n = _rows_of(reader, groups)
            # A few columns at a time: the decoded Arrow columns beside X stay near GROUP_BYTES.
            step = max(1, GROUP_BYTES // max(1, n * X.itemsize))
            for first in range(0, len(columns), step):
                names = columns[first : first + step]
                table = _decode(reader, groups, [reader.column_name_idx(c) for c in names])
                at = start
                for batch in table.to_batches():
                    if batch.num_rows:
                        _rows_into(X, batch, at, first)
                    at += batch.num_rows
                del table
            labels = _decode(reader, groups, [reader.column_name_idx(c) for c in wanted[len(columns) :]])
            y.append(labels.column(label).to_numpy())
            if weight is not None:
                w.append(labels.column(weight).cast("float64").to_numpy())
            start += n
    y = np.concatenate(y) if len(y) != 1 else y[0]
    w = None if weight is None else np.concatenate(w)
    return X, y, w


def footer_rows(source):
    """The rows of ``source`` before any read: a Dask Array's chunks, or, for Parquet files read by
    the fast path, the row counts their footers give (None if unknown: with ``on_invalid="skip"``
    rows may be dropped, which only a read finds).  Footers are a few kB a file, read once.  A
    cluster's part (:meth:`~.source.DaskSource.subset`): its own partitions' rows, its own files'
    footers."""
    known = source.partition_rows
    if known is not None:
        return int(known.sum())
    if source.parquet_plan is None or source.on_invalid != "raise":
        return None
    import pyarrow.parquet as pq

    plan, rows = source.parquet_plan, 0
    own = [source.partition_id(p) for p in range(source.n_partitions)]
    try:
        for pieces in (plan.parts[i] for i in own):
            for path, groups in pieces:
                with plan.fs.open(path, "rb") as f:
                    meta = pq.ParquetFile(f).metadata
                rows += meta.num_rows if groups is None else sum(meta.row_group(g).num_rows for g in groups)
    except (OSError, ValueError):  # the read will name what is wrong with the file
        return None
    return rows

"""Readers that turn files into lazy Dask collections."""

import contextlib
import io as _io
import lzma
import math
import os
import sys
import uuid
import warnings
import zlib
from glob import glob

import numpy as np
import scipy.sparse as sp

from ._input_paths import check_input_path

_COMPRESSED = (".bz2", ".gz", ".xz", ".zst", ".lz4")
_INT_MAX = 2**31 - 1  # scikit-learn's reader holds feature indices in a C int
_SHOWN = 80  # characters of an offending line quoted in an error


@contextlib.contextmanager
def dask_parquet_deprecations_hidden():
    """Within the block, pandas' warnings that ``inplace`` is deprecated, raised by Dask's own Parquet
    code, are not shown; every other warning is.

    Dask's Parquet reader (``dask.dataframe.io.parquet.arrow``) calls
    ``reset_index(..., inplace=True)`` on each partition of files written without an index
    (``to_parquet(write_index=False)``, pandas' ``to_parquet(index=False)``), its writer
    ``set_index(..., inplace=True)``, and pandas 3.1 deprecates ``inplace`` (``Pandas4Warning``).
    A fit that has Dask read such files warns once per partition and read (shown with
    ``-W default``, raised with ``-W error`` and under pytest) about Dask's code: the read is
    right, and neither the user nor this library can act on it.  The filter matches that message
    only where pandas attributes it to Dask's Parquet modules.  ``warnings.catch_warnings`` is
    process-wide state: enter this in the thread that starts the reads, and leave it once they
    have ended (the command line does, around each command's reads).  With a ``distributed``
    client active, the same filter is installed on its workers for good (a worker plugin): a graph
    computed there reads its Parquet files in the workers' processes.
    """
    with warnings.catch_warnings():
        _hide_dask_parquet_deprecations()
        _hide_on_the_workers()
        yield


# pandas' deprecation of ``inplace`` as Dask's Parquet modules raise it (the filter's two patterns).
_DASK_PARQUET_DEPRECATION = (r"The inplace keyword in DataFrame\.", r"dask\.dataframe\.io\.parquet")


def _hide_dask_parquet_deprecations():
    """Adds the filter :func:`dask_parquet_deprecations_hidden` enters, for the rest of the process."""
    message, module = _DASK_PARQUET_DEPRECATION
    warnings.filterwarnings("ignore", message=message, module=module)


def _hide_on_the_workers():
    """With a ``distributed`` client active, the filter on its workers too, where a graph's Parquet
    reads run (:mod:`~dask_streamsvm._worker_warnings`); nothing when ``distributed`` was never
    imported (no client can be active) or no client is."""
    if "distributed" not in sys.modules:
        return
    from distributed import default_client, get_worker

    try:
        get_worker()
        return  # in a task: the cluster that runs it was set up by its caller
    except ValueError:
        pass
    try:
        client = default_client()
    except ValueError:  # no client
        return
    from ._worker_warnings import hide_on_workers

    hide_on_workers(client, *_DASK_PARQUET_DEPRECATION)


def _is_glob(text):
    """Whether ``text`` is a pattern to expand: it has ``*?[`` and names no existing file as given."""
    return any(c in text for c in "*?[") and not os.path.exists(text)


def _expand(path_or_glob):
    if isinstance(path_or_glob, (list, tuple)):
        paths = [str(p) for p in path_or_glob]
    else:
        text = str(path_or_glob)
        paths = sorted(glob(text)) if _is_glob(text) else [text]
    if not paths:
        raise FileNotFoundError(f"no file matches {path_or_glob!r}")
    for path in paths:
        check_input_path(path)
    return paths


class _FileBlock:
    """Where a block of LIBSVM text comes from, so that errors can name the file's line.

    The block was read from ``offset`` with ``fsspec.utils.read_block``: it starts
    at the file's start when ``offset`` is 0, else just after the first newline
    at or after ``offset``.
    """

    __slots__ = ("path", "index", "offset", "compression")

    def __init__(self, path, index, offset, compression):
        self.path, self.index, self.offset, self.compression = path, index, offset, compression

    def __str__(self):
        return f"{self.path} (block {self.index})"

    __repr__ = __str__

    def first_line(self):
        """The file's 1-based line number of the block's first line (reads the file up to ``offset``)."""
        import fsspec

        if self.offset == 0:
            return 1
        newlines = 0
        with fsspec.open(self.path, "rb", compression=self.compression) as f:
            left = self.offset
            while left > 0:
                chunk = f.read(min(left, 1 << 24))
                if not chunk:
                    break
                newlines += chunk.count(b"\n")
                left -= len(chunk)
        return newlines + 2  # the block starts after the first newline at or after offset


def _show(text, limit=_SHOWN):
    """Bytes of a LIBSVM file as a quoted string for an error, cut to ``limit`` characters."""
    text = text.decode("ascii", errors="backslashreplace")
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


def _line_error(line, n_features, zero_based):
    """Why scikit-learn's reader rejects a LIBSVM line: ``what`` or ``(what, how to fix)``, or None.

    Follows ``sklearn.datasets._svmlight_format_fast``: a comment starts at the
    first ``#`` before any NUL byte, tokens are split on ASCII whitespace, the
    label and values are read by ``float``, indices by ``int`` into a C int, and
    a first token starting with ``qid`` is a query id whose value is not read.
    """
    nul = line.find(b"\0")
    comment = line.find(b"#", 0, nul if nul >= 0 else len(line))
    tokens = (line[:comment] if comment >= 0 else line).split()
    if not tokens:
        return None
    label, features = tokens[0], tokens[1:]
    try:
        float(label)
    except ValueError:
        return f"label {_show(label, 40)} is not a number"
    if features and features[0].startswith(b"qid"):
        if b":" not in features[0]:
            return f"query id {_show(features[0], 40)} is not of the form qid:value"
        features = features[1:]
    last = -1
    for token in features:
        text, colon, value = token.partition(b":")
        if not colon:
            return f"feature {_show(token, 40)} is not of the form index:value"
        try:
            index = int(text)
        except ValueError:
            return f"feature index {_show(text, 40)} is not an integer"
        if index > _INT_MAX:
            return f"feature index {index} is too large (at most {_INT_MAX})"
        if index < 0:
            return f"feature index {index} is negative"
        if index == 0 and not zero_based:
            return (
                "feature index 0 where indices count from 1",
                "pass zero_based=True if they count from 0. The dask-streamsvm command takes --zero-based",
            )
        if index <= last:
            return f"feature index {index} follows {last}", "indices must increase along each line"
        try:
            float(value)
        except ValueError:
            return f"value {_show(value, 40)} of feature {index} is not a number"
        width = index + 1 if zero_based else index
        if n_features is not None and width > n_features:
            return (
                f"feature index {index} is past n_features={n_features} (it needs {width} features)",
                f"pass n_features={width} or more, or omit n_features to read the width from the files",
            )
        last = index
    return None


def _first_bad_line(data, n_features, zero_based):
    """``(number from 1, line, reason)`` of the first line of ``data`` scikit-learn rejects, or None."""
    for number, line in enumerate(_io.BytesIO(data), 1):  # lines as scikit-learn's reader splits them
        reason = _line_error(line, n_features, zero_based)
        if reason is not None:
            return number, line.rstrip(b"\r\n"), reason
    return None


def _malformed(data, n_features, zero_based, where, exc):
    """The ValueError for a block scikit-learn's reader rejected, naming the file's line where it can."""
    found = _first_bad_line(data, n_features, zero_based)
    if found is None:
        return ValueError(f"{where}: malformed LIBSVM data: {exc}")
    number, line, reason = found
    what, fix = reason if isinstance(reason, tuple) else (reason, "")
    if isinstance(where, _FileBlock):
        try:
            place = f"{where.path}, line {where.first_line() + number - 1}"
        except OSError:  # the file went away since the block was read: name the block's line instead
            place = f"{where}, line {number} of the block"
    else:
        place = f"{where}, line {number}"
    fix = f"; {fix}." if fix else "."
    return ValueError(f"{place}: malformed LIBSVM data: {what} in line {_show(line)}{fix}")


def _parse_block(data, n_features, dtype, zero_based, where):
    """LIBSVM text -> (CSR rows, labels), the same as scikit-learn's reader gives.

    The compiled parser (:mod:`.kernels.text`) reads the common form exactly;
    whatever it declines goes to scikit-learn's reader.  ``where`` names the
    text in errors: a string (line numbers then count from the start of
    ``data``) or a :class:`_FileBlock` (line numbers in its file).
    ``n_features=None`` reads the width from the largest index, at least 1
    as scikit-learn's reader gives.
    """
    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm.kernels.text import parse_block

    if not data.strip():
        width = 1 if n_features is None else n_features
        return sp.csr_matrix((0, width), dtype=dtype), np.empty(0, dtype=np.float64)
    fast = parse_block(data, n_features, zero_based)
    if fast is not None:
        values, indices, indptr, y, width = fast
        with np.errstate(over="ignore"):  # past float32's range: inf, as scikit-learn's reader gives
            values = values.astype(dtype, copy=False)
        X = sp.csr_matrix((values, indices, indptr), shape=(y.shape[0], max(width, 1)))
    else:
        try:
            X, y = load_svmlight_file(
                _io.BytesIO(data), n_features=n_features, dtype=dtype, zero_based=zero_based
            )
        except (ValueError, OverflowError) as exc:  # OverflowError: an index past a C int
            raise _malformed(data, n_features, zero_based, where, exc) from None
        X = X.tocsr()
    # 32-bit indices and row pointers where they fit, as SciPy makes them: scikit-learn's partial_fit
    # (dask-ml's Incremental) refuses 64-bit ones.
    X.indices = X.indices.astype(np.int32, copy=False)
    if X.nnz < np.iinfo(np.int32).max:
        X.indptr = X.indptr.astype(np.int32, copy=False)
    return X, y.astype(np.float64, copy=False)


def _max_index(data, zero_based, where):
    """The width of LIBSVM bytes ``data``: a scan of the indices (:func:`.kernels.text.largest_index`),
    or, where it declines, the parse (which names what is wrong), as scikit-learn's reader gives."""
    from dask_streamsvm.kernels.text import largest_index

    if data.strip():
        width = largest_index(np.frombuffer(data, dtype=np.uint8), bool(zero_based))
        if width >= 0:
            return max(width, 1)
    X, _ = _parse_block(data, None, np.float64, zero_based, where)
    return X.shape[1]


class _RawReads:
    """A compressed file's raw byte stream that remembers the I/O error its reads raised, if any.

    What the decompressor raises is then either that error (an I/O fault,
    maybe transient) or its own verdict on the bytes (damaged data).
    """

    def __init__(self, raw):
        self.raw, self.failed = raw, None

    def read(self, *args):
        try:
            return self.raw.read(*args)
        except BaseException as exc:
            self.failed = exc
            raise

    def __getattr__(self, name):
        return getattr(self.raw, name)


# What decompressors raise for bytes that are not their format, damaged or cut short:
# gzip.BadGzipFile and bz2's "Invalid data stream" are OSErrors, which the reader would
# retry as transient I/O errors; a truncated stream raises EOFError.
_BAD_STREAM = (OSError, EOFError, lzma.LZMAError, zlib.error)


def _decompressed(path, compression):
    """The whole decompressed content of ``path``; a damaged stream raises a ValueError naming the file."""
    import fsspec
    from fsspec.compression import compr

    with fsspec.open(path, "rb") as raw:
        source = _RawReads(raw)
        try:
            with compr[compression](source, mode="rb") as f:
                return f.read()
        except _BAD_STREAM as exc:
            if source.failed is not None:
                raise
            raise ValueError(
                f"{path}: not valid {compression} data ({exc or type(exc).__name__}); "
                "the file is damaged or its suffix does not match its format."
            ) from None


def _read_block(path, offset, length, compression):
    """Whole lines of ``path`` from ``offset`` on (see :class:`_FileBlock`); all if ``length`` is None."""
    import fsspec
    from fsspec.utils import read_block

    if compression is not None:
        return _decompressed(path, compression)
    with fsspec.open(path, "rb") as f:
        return f.read() if length is None else read_block(f, offset, length, b"\n")


def _file_blocks(path, blocksize):
    """``(offset, length, compression)`` of each block of ``path``: one for a compressed or empty file."""
    import fsspec
    from fsspec.utils import infer_compression

    if path.lower().endswith(_COMPRESSED):
        compression = infer_compression(path)
        if compression is None:
            suffix = os.path.splitext(path)[1]
            raise ValueError(
                f"{path}: no decompressor for {suffix} files is installed; install the one fsspec uses "
                "for it (zstandard for .zst, lz4 for .lz4) or decompress the file first."
            )
        return [(0, None, compression)]
    fs, fspath = fsspec.core.url_to_fs(path)
    size = fs.size(fspath)
    if not size:
        return [(0, None, None)]  # one empty block: the file still counts, with no rows
    n = -(-size // blocksize)  # blocks of blocksize / 2 to blocksize bytes, as partitions are budgeted
    offsets = [size * k // n for k in range(n + 1)]
    return [(a, b - a, None) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


def read_libsvm(path_or_glob, n_features=None, *, blocksize="64MB", dtype=np.float64, zero_based=False):
    """Lazy ``(X, y)`` from LIBSVM/svmlight text files.

    Parameters
    ----------
    path_or_glob : str, path, or list of them
        Files in LIBSVM format (``label idx:val ...``); ``.bz2``, ``.gz`` and
        ``.xz`` are decompressed on the fly (one partition per compressed
        file, since they cannot be split).  A string with ``*``, ``?`` or
        ``[`` is a glob unless a file has that name; a list is never globbed.
    n_features : int, optional
        Number of features. When omitted the files are read once, now, to
        find the largest feature index: a scan of the indices only, several
        times faster than a parse (its values are parsed when a fit reads
        them). With a ``dask.distributed`` client active the workers scan.
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
        Row counts are unknown until the partitions are read.  Empty files
        and files of comments give no rows (and, with ``n_features`` omitted,
        one column, as scikit-learn's reader gives).

    Raises
    ------
    ValueError
        When the partitions are computed, for malformed text: the message
        names the file, the line number in it, the line and what is wrong
        (``"data.svm, line 12: malformed LIBSVM data: ..."``); for a
        compressed file that does not decompress (damaged, cut short, or
        named with another format's suffix), the file and its format
        (``"data.svm.gz: not valid gzip data ..."``).  Being a ValueError,
        a streaming fit does not read it again as it does after an I/O
        error.
    RuntimeError
        With ``n_features`` omitted and a ``dask.distributed`` client active,
        when the cluster lists no worker: within seconds, "every Dask worker
        is gone", rather than waiting for one forever.
    """
    import dask
    import dask.array as da
    from dask.utils import parse_bytes

    from dask_streamsvm.engine.cluster import runtime  # noqa: F401 - how a cluster's tasks are waited for
    from dask_streamsvm.engine.data.waiting import computed

    paths = _expand(path_or_glob)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got dtype={dtype}.")
    if n_features is not None and not (
        isinstance(n_features, (int, np.integer)) and not isinstance(n_features, bool) and n_features > 0
    ):
        raise ValueError(
            f"n_features must be a positive integer, got n_features={n_features!r}; "
            "omit it to read the width from the files."
        )
    size = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    if not (isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > 0):
        raise ValueError(
            f"blocksize must be a positive number of bytes (or a string like '64MB'), got {blocksize!r}."
        )
    blocks = []
    for path in paths:
        for k, (offset, length, compression) in enumerate(_file_blocks(path, int(size))):
            data = dask.delayed(_read_block)(path, offset, length, compression)
            blocks.append((data, _FileBlock(path, k, offset, compression)))
    if n_features is None:  # on a distributed client, an error rather than a wait for workers that are gone
        widths = computed([dask.delayed(_max_index)(b, zero_based, w) for b, w in blocks])
        n_features = max(widths)
    # Named read-libsvm-*: a streaming fit knows from it that the collection parses text (its spill).
    parsed = [
        dask.delayed(_parse_block, nout=2)(
            b, int(n_features), dtype, zero_based, w, dask_key_name=f"read-libsvm-{uuid.uuid4().hex}"
        )
        for b, w in blocks
    ]
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


LIBSVM_SUFFIXES = (".svm", ".libsvm", ".svmlight", ".txt", ".t", ".bz2", ".gz", ".xz")


def open_path(path, y=None):
    """Lazy ``(X, y)`` from a Parquet, CSV or LIBSVM path (or glob).

    Parquet and CSV give a Dask DataFrame; ``y`` must then name the label
    column.  LIBSVM files carry their labels, so ``y`` must be None.
    A name with ``*``, ``?`` or ``[`` is a glob unless a file has that name.
    """
    import dask.dataframe as dd

    text = os.fspath(path)
    lower = text.lower()
    is_table = lower.endswith((".parquet", ".pq", ".csv", ".csv.gz", ".csv.bz2")) or os.path.isdir(text)
    if is_table and not isinstance(y, str):
        raise ValueError(f"{text!r} is a table: pass the label column's name as y, got y={y!r}.")
    names = sorted(glob(text)) if _is_glob(text) else [text]
    if not names and "://" not in text:  # a pattern no local file matches: said as the CLI says it
        raise FileNotFoundError(f"no file matches {text!r}")
    for name in names:
        check_input_path(name)
    if lower.endswith((".parquet", ".pq")) or os.path.isdir(text):
        frame = dd.read_parquet(text)
    elif lower.endswith((".csv", ".csv.gz", ".csv.bz2")):
        frame = dd.read_csv(text)
    elif lower.endswith(LIBSVM_SUFFIXES) or _is_glob(text):
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

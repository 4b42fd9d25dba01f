"""A binary spill of text sources: parse once, read the arrays back on every later pass.

A streaming fit reads its collection once a pass.  For LIBSVM and CSV text
each read parses the text again, which costs several times the bytes'
read from disk (about 3 s for 500 MB of LIBSVM text).  Vowpal Wabbit's
cache file and LIBLINEAR cdblock's binary blocks answer this the same way:
the first read writes each parsed, checked partition in the layout the
kernels read (CSR ``data``, ``indices``, ``indptr`` or the C-ordered dense
rows, then the labels and weights) to a file of its own in a private
temporary directory, and later reads load those arrays with one read call
each.  The directory goes when the fit ends, normally, with an error or on
Ctrl-C (and, should the process die first, at its exit where Python still
runs its finalisers).

Only what the disk has room for is spilled: a partition is written when
the free space after it stays above :data:`RESERVE_BYTES`; past that, its
partitions are parsed on every read as without a spill.
"""

import os
import shutil
import tempfile
import threading
import weakref

import numpy as np
import scipy.sparse as sp

RESERVE_BYTES = 1 << 30  # free disk space a spill never takes


def text_source(X):
    """Whether Dask collection ``X`` parses text when computed: LIBSVM (:func:`~..io.read_libsvm`) or CSV."""
    from dask.utils import key_split

    expr = getattr(X, "expr", None)
    if expr is not None and hasattr(expr, "walk"):
        readers = ("read-csv", "read-table", "read-fwf", "read-json")
        if any(key_split(e._name) in readers for e in expr.walk()):
            return True
    try:
        graph = X.__dask_graph__()
    except Exception:  # pragma: no cover - a collection without a graph to look at
        return False
    # read_libsvm's parse tasks; a high-level graph names its layers, so no task is materialised.
    names = graph.layers if hasattr(graph, "layers") else graph.keys()
    return any(key_split(k) == "read-libsvm" for k in names)


class Spill:
    """Checked blocks of partitions, written once to ``directory`` (a new temporary one inside it).

    Thread-safe: the reader thread and the tasks of the label count write
    partitions at once.  :meth:`close` removes the directory.
    """

    def __init__(self, directory=None, reserve=None):
        self.path = tempfile.mkdtemp(prefix="dask_streamsvm-spill-", dir=directory)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)
        self.reserve = RESERVE_BYTES if reserve is None else reserve
        self.bytes = 0  # bytes written
        self.full = False  # the disk had no room for a partition: the rest are parsed again
        self._held = {}  # partition -> (file, layout)
        self._lock = threading.Lock()

    def __contains__(self, partition):
        return partition in self._held

    def put(self, block):
        """Write checked ``block`` (a :class:`~.source.Block`) unless held already or the disk has no room."""
        X = block.X
        sparse = sp.issparse(X)
        arrays = [X.data, X.indices, X.indptr] if sparse else [np.ascontiguousarray(X)]
        arrays += [block.y, block.sample_weight]
        size = sum(a.nbytes for a in arrays)
        with self._lock:
            if block.partition in self._held or self.full:
                return False
            if shutil.disk_usage(self.path).free < size + self.reserve:
                self.full = True
                return False
        name = os.path.join(self.path, f"partition-{block.partition}.bin")
        partial = f"{name}.{threading.get_ident()}.part"
        with open(partial, "wb") as f:
            for a in arrays:
                np.save(f, a, allow_pickle=a.dtype.hasobject)  # string labels: pickled, in our own file
        os.replace(partial, name)  # a later read never sees half a partition
        layout = (sparse, X.shape, block.n_skipped)
        with self._lock:
            self._held[block.partition] = (name, layout)
            self.bytes += os.path.getsize(name)
        return True

    def get(self, partition):
        """``(X, y, sample_weight, n_skipped)`` of ``partition`` as written, or None if it was not spilled."""
        held = self._held.get(partition)
        if held is None:
            return None
        name, (sparse, shape, skipped) = held
        with open(name, "rb") as f:
            arrays = [np.load(f, allow_pickle=True) for _ in range(5 if sparse else 3)]
        if sparse:
            X = sp.csr_matrix(tuple(arrays[:3]), shape=shape, copy=False)
            X.has_canonical_format = True  # it was canonical when written
        else:
            X = arrays[0]
        return X, arrays[-2], arrays[-1], skipped

    def close(self):
        """Remove the directory and everything in it."""
        self._cleanup()
        self._held = {}

"""A binary spill of text sources: parse once, read the arrays back on every later pass.

A streaming fit reads its collection once a pass.  For LIBSVM and CSV text
each read parses the text again, which costs several times the bytes'
read from disk (about 3 s for 500 MB of LIBSVM text).  Vowpal Wabbit's
cache file and LIBLINEAR cdblock's binary blocks answer this the same way:
the first read writes each parsed, checked partition in the layout the
kernels read (CSR ``data``, ``indices``, ``indptr`` or the C-ordered dense
rows, then the labels and weights) to a file of its own in a private
temporary directory, and later reads load those arrays with one read call
each.  The directory goes when the fit ends, normally, with an error, on
Ctrl-C or on SIGTERM (:mod:`..._fit_context`), and, should the process die
first, at its exit where Python still runs its finalisers.  A process
killed outright (SIGKILL, a crash) cannot remove it: its name carries the
owner's pid (:func:`~..store.archive.owned_prefix`), and the next spill in the
same directory removes those whose process is gone.

Only what the disk has room for is spilled: a partition is written when
the free space after it stays above :data:`RESERVE_BYTES`; past that, its
partitions are parsed on every read as without a spill.  Free space is
not a promise (other writers, quotas), so any ``OSError`` while the spill
is written or read back (a full disk, a quota, a short write, an I/O
error, a file removed by a cleaner) drops the whole spill: its files are
removed and every later read parses the source again, which gives the
same blocks, so the model is that of a fit without a spill.  The fit says
so once, with a warning, when it ends.
"""

import contextlib
import os
import pickle
import shutil
import tempfile
import threading
import warnings
import weakref

import numpy as np
import scipy.sparse as sp

from ..store.archive import owned_prefix, prepare_directory, stale_entries

RESERVE_BYTES = 1 << 30  # free disk space a spill never takes
# np.load parses each array's header with ast.literal_eval, and CPython 3.11 keeps the AST
# constructor's recursion depth in the interpreter's state, not the thread's: two threads building
# ASTs at once can raise "SystemError: AST constructor recursion depth mismatch" (as two of the
# reader's reads ahead of the spill did in a make test, Python 3.11.7).  Spill reads load one at a time.
_LOADING = threading.Lock()
STEM = "dask_streamsvm-spill-"  # a spill directory's name: STEM, the owner's host and pid, random


def check_spill_dir(spill_dir):
    """``spill_dir`` as a str (None stays None), created if missing and proven writable.

    The check of ``checkpoint_dir`` (:func:`~..store.archive.prepare_directory`):
    ValueError naming ``spill_dir``, its value and the fix for a path that
    cannot be used, TypeError for a value that is no path; done before any
    read.
    """
    return None if spill_dir is None else prepare_directory(spill_dir, "spill_dir", STEM.rstrip("-"))


def remove_stale_spills(directory, stem=STEM):
    """Remove the spill directories in ``directory`` whose owning process, on this machine, is gone.

    ``stem``: how their names begin (:func:`~..store.archive.owned_prefix`): :data:`STEM`, or a
    cluster worker's part spill's (:class:`~..cluster.products.RowSpill`).  Best effort: a
    directory another user owns, or one that cannot be removed, stays.  A live process's spills
    (this one's included) are never touched, nor names of another form.
    """
    for entry in stale_entries(directory, stem):
        try:
            if entry.is_dir(follow_symlinks=False):  # a planted symlink is left alone
                shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:  # pragma: no cover - gone meanwhile, or not ours to look at
            pass


def write_arrays(file, arrays):
    """Write ``arrays`` to the open ``file`` one after the other, in NumPy's ``.npy`` format."""
    for a in arrays:
        np.save(file, a, allow_pickle=a.dtype.hasobject)  # string labels: pickled, in our own file


@contextlib.contextmanager
def opened(spill_dir):
    """A new :class:`Spill` in ``spill_dir`` for the ``with`` block, closed (removed) however it ends.

    None if its directory cannot be created, which a warning says at once;
    a spill dropped on the way is said once, as the block ends without an
    error.
    """
    try:
        spill = Spill(spill_dir)
    except OSError as exc:
        _warn_dropped(spill_dir or tempfile.gettempdir(), exc)
        yield None
        return
    try:
        yield spill
    finally:
        spill.close()
    if spill.error is not None:
        _warn_dropped(spill.path, spill.error)


def _warn_dropped(where, error):
    warnings.warn(
        f"the spill in {where} was dropped after an I/O error ({type(error).__name__}: {error}); the fit "
        "reads its partitions from the source instead, parsing them on every read, and trains the "
        "same model. Free space there, give spill_dir a directory with room, or pass spill=False.",
        UserWarning,
        stacklevel=5,
    )


def text_source(X):
    """Whether Dask collection ``X`` parses text when computed: LIBSVM (:func:`~...io.read_libsvm`) or CSV."""
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
    partitions at once.  An ``OSError`` while writing or reading drops the
    spill (``error`` holds it): its files go, and :meth:`put` and
    :meth:`get` do nothing from then on.  :meth:`close` removes the
    directory.  Creating one first removes the stale spills in
    ``directory`` (:func:`remove_stale_spills`).
    """

    def __init__(self, directory=None, reserve=None):
        parent = tempfile.gettempdir() if directory is None else os.fspath(directory)
        remove_stale_spills(parent)
        self.path = tempfile.mkdtemp(prefix=owned_prefix(STEM), dir=parent)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)
        self.reserve = RESERVE_BYTES if reserve is None else reserve
        self.bytes = 0  # bytes written
        self.full = False  # the disk had no room for a partition: the rest are parsed again
        self.error = None  # the OSError that dropped the spill: every partition is parsed again
        self.closed = False
        self._held = {}  # partition -> (file, layout)
        self._lock = threading.Lock()

    def __contains__(self, partition):
        return partition in self._held

    def put(self, block):
        """Write checked ``block`` (a :class:`~.source.Block`) unless held already or the disk has no room.

        Whether it was written; an ``OSError`` on the way drops the spill (:meth:`drop`).  Files
        are created and renamed under the lock, never once the spill is dropped or closed, so that
        removing the directory then removes all of it.
        """
        X = block.X
        sparse = sp.issparse(X)
        arrays = [X.data, X.indices, X.indptr] if sparse else [np.ascontiguousarray(X)]
        arrays += [block.y, block.sample_weight]
        size = sum(a.nbytes for a in arrays)
        name = os.path.join(self.path, f"partition-{block.partition}.bin")
        partial = f"{name}.{threading.get_ident()}.part"
        try:
            with self._lock:
                if block.partition in self._held or self.full or not self._open:
                    return False
                if shutil.disk_usage(self.path).free < size + self.reserve:
                    self.full = True
                    return False
                file = open(partial, "wb")  # created here, written outside the lock
            with file:
                write_arrays(file, arrays)
            with self._lock:
                if not self._open:  # dropped or closed while this one was written
                    os.remove(partial)
                    return False
                os.replace(partial, name)  # a later read never sees half a partition
                self._held[block.partition] = (name, (sparse, X.shape, block.n_skipped))
                self.bytes += os.path.getsize(name)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(partial)
            self.drop(exc)
            return False
        return True

    def get(self, partition):
        """``(X, y, sample_weight, n_skipped)`` of ``partition`` as written, or None if it was not
        spilled (or the spill was dropped: an ``OSError`` reading it, or a file cut short by a
        write that failed without an error, drops it)."""
        held = self._held.get(partition)
        if held is None:
            return None
        name, (sparse, shape, skipped) = held
        try:
            with open(name, "rb") as f, _LOADING:
                arrays = [np.load(f, allow_pickle=True) for _ in range(5 if sparse else 3)]
        except (OSError, ValueError, EOFError, pickle.UnpicklingError) as exc:  # a file cut short reads as
            self.drop(exc)  # ValueError ("Failed to read all data"), EOFError or UnpicklingError
            return None
        if sparse:
            X = sp.csr_matrix(tuple(arrays[:3]), shape=shape, copy=False)
            X.has_canonical_format = True  # it was canonical when written
        else:
            X = arrays[0]
        return X, arrays[-2], arrays[-1], skipped

    @property
    def _open(self):
        return self.error is None and not self.closed

    def drop(self, error):
        """Give the spill up after ``error`` (the first one is kept; none once closed): forget its
        partitions and remove its directory, so that every later read parses the source again."""
        with self._lock:
            if not self._open:
                return
            self.error = error
            self._held = {}
            self.bytes = 0
        shutil.rmtree(self.path, ignore_errors=True)

    def close(self):
        """Remove the directory and everything in it."""
        with self._lock:
            self.closed = True
            self._held = {}
        self._cleanup()

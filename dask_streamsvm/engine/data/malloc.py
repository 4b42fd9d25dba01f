"""Handing freed memory back to the operating system between partitions, and keeping what a read reuses.

glibc's allocator keeps the memory of freed arrays below its (adaptive)
mmap threshold in its heaps, and with several threads allocating, in
several heaps: after a few partitions of tens of MB have come and gone,
the process holds hundreds of MB it does not use.  Two things make that so:

- the threshold adapts: once an mmapped array of ``S`` bytes (up to 32 MB)
  is freed, later arrays below ``S`` come from the heaps instead of their
  own mappings; a partition of 24 MB then lives in a heap once freed;
- a thread's heap (an *arena*: glibc makes up to 8 per core) gives back
  the free memory at its top only above the trim threshold, which the
  adaptation raises to twice the mmap threshold: up to 64 MB per arena
  stay resident, and ``malloc_trim`` trims only the main heap's top.

Measured on 2M x 60 float32 rows in 20 Parquet files (partitions of 24 MB):
after one read with ``prefetch=2`` and ``malloc_trim(0)``, 16 arenas held
about 230 MB free, and a StreamSVM fit peaked 215 MB above the memory
guide's formula.  :func:`bound_retention` fixes the mmap threshold at
:data:`MMAP_THRESHOLD` (which also stops the adaptation) and the trim
threshold at :data:`TRIM_THRESHOLD`, so that partitions and blocks have
mappings of their own and go back to the system when freed, while the
decoded columns a read makes and frees for every group of columns
(``parquet.GROUP_BYTES``) stay in the heap of the thread that reads, for
the next group and the next partition.  The reader calls ``malloc_trim(0)``
once a pass (before the next pass's first read, and as its thread ends), and
the label count after its pass (:func:`release_free_memory`): what the heaps
kept during a pass leaves then.
Elsewhere than glibc both do nothing.
"""

import contextlib
import ctypes
import ctypes.util
import os
import sys

from .waiting import OnThread

# From 8 MiB an allocation is a mapping of its own (glibc: 128 KiB, adaptive): partitions of tens of MB
# go back to the system when freed, and the solvers' vectors below it (a band's 200,000 to 300,000
# rows' margins and costs, 1.6-2.4 MB, made anew at every Newton step) come from the heaps instead
# of fresh pages faulted in each time.  The band from a sample (primal/sample_band.py), 2M x 60 float32
# at cache 10%, took 2.87 s where 3.35 s at 1 MiB, and 3.53 s where 3.89 s in a slower hour (medians
# of 5 and 4 fresh processes, alternated, 2026-12-03), peaking 20-30 MB higher (of 580); bench_memory's fits
# peaked within 11 MB of 1 MiB's (partitions of 25 and 5 MB, docs/guide/memory.md).  A 200,000-row
# smoothed solve alone took 0.24 s where 0.37 s (0.16 s with glibc's adaptive thresholds: the rest is
# the trim threshold's, which a heap's top above it gives back at every free).
MMAP_THRESHOLD = 8 << 20
# A heap's free top up to 16 MiB stays in it (glibc's default is 128 KiB): twice the decoded columns of a
# Parquet read's group (parquet.GROUP_BYTES, 8 MiB, 400 KB a column of 100,000 float32 rows), which a
# read frees and makes again for every group of every partition.  With 128 KiB each group's columns
# were pages faulted in afresh (about 117,000 faults a read of the 2M x 60 raw set, 480 MB) and the
# reader's malloc_trim before each partition gave back the rest: a read of it through the Reader took
# 0.51-0.64 s and 0.82-1.01 CPU-s, with 16 MiB and the trim once a pass 0.41-0.47 s and
# 0.64-0.72 CPU-s (8,000-15,000 faults), peaking 30 MB higher (reads alone, the 2nd to 6th of each
# fresh process, 5 processes alternated, 2026-12-04 05:51 UTC, load 0.9).  12 MiB kept fewer of them
# (up to 24,000 faults a read).  The fits: docs/benchmarks.md, "Reads that keep their decoded columns'
# pages".
TRIM_THRESHOLD = 16 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
# glibc's own settings: a user who sets any of them keeps them.
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")

_libc = _trim = _mallopt = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _trim = _libc.malloc_trim
        _trim.argtypes = [ctypes.c_size_t]
        _trim.restype = ctypes.c_int
        _mallopt = _libc.mallopt
        _mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        _mallopt.restype = ctypes.c_int
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        _trim = _mallopt = None

_bounded = None  # the result of the first bound_retention() call


def release_free_memory():
    """Return the allocator's free pages to the operating system (glibc); True if it could."""
    if _trim is None:
        return False
    _trim(0)
    return True


def bound_retention():
    """Fix glibc's mmap and trim thresholds (see the module's docstring), once per process.

    True if they were set; False where there is no glibc, or where the
    environment already sets glibc's own (``MALLOC_MMAP_THRESHOLD_`` and
    the others in :data:`_USER_SETTINGS`), which are then left as they are.
    """
    global _bounded
    if _bounded is None:
        _bounded = False
        if _mallopt is not None and not any(name in os.environ for name in _USER_SETTINGS):
            _bounded = bool(_mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
                _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
            )
    return _bounded


# Arrays of at least this many bytes that a fit fills once and holds (:func:`held_empty`) are backed by
# small pages.
HELD_SMALL_PAGES = 64 << 20
# Each block of at least this many bytes that a read makes to be held as read (a cluster's part keeping
# its rows, :meth:`~.source.DaskSource.holding`) is backed by small pages: NumPy's own threshold for
# asking for huge pages.  A fresh process that kept the 2M x 60 float32 set's 20 partitions of 24 MB
# as read took 2.08-2.60 s to read them on huge pages, 1.44-1.56 s on small ones, and 1.23-1.37 s to
# read them without keeping them (2026-12-06, two fresh processes each; docs/benchmarks.md, "The
# parts' held rows on small pages").
HELD_BLOCK_PAGES = 4 << 20


def held_empty(shape, dtype, small_from=HELD_SMALL_PAGES):
    """``np.empty(shape, dtype)`` for rows a fit fills once and then holds (a sample of every row), backed
    by pages of the usual size where it is ``small_from`` bytes or larger (Linux): by default
    :data:`HELD_SMALL_PAGES`, for one array of all the rows held; :data:`HELD_BLOCK_PAGES` for each
    of the many blocks a read holds as it made them.

    NumPy asks for transparent huge pages on every array of 4 MB or more (``madvise``); where the
    kernel's ``defrag`` setting is ``madvise`` (Ubuntu's default), each 2 MB page faulted in may wait
    for the kernel to compact memory first.  Partitions that come and go reuse the huge pages freed
    before them, but hundreds of MB filled at once need new ones: on this project's 2-core VM, 480 MB
    took 2.7 s to fill where small pages took 0.25 s (``NUMPY_MADVISE_HUGEPAGE=0``).  The array is
    a private anonymous mapping of its own advised ``MADV_NOHUGEPAGE`` (where the kernel has
    transparent huge pages), freed when the array and its views are.  Arrays of objects are
    NumPy's own.
    """
    import mmap

    import numpy as np

    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    advise = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if nbytes < max(small_from, 1) or advise is None or dtype.hasobject:  # objects: NumPy's memory only
        return np.empty(shape, dtype)
    pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with contextlib.suppress(OSError):  # a kernel without transparent huge pages refuses the advice
        pages.madvise(advise)
    return np.frombuffer(pages, dtype=dtype).reshape(shape)


FREEING_NAME = "dask-streamsvm-free"  # a kept thread's name while it drops what :func:`let_go` handed it


def let_go(held):
    """Drop what the list ``held`` holds on a kept thread (:class:`~.waiting.OnThread`), not the
    caller's: the caller hands over its last references (it keeps none of the objects itself).

    Rows a fit filled and held whole (:func:`held_empty`: small pages) go back to the system when
    their mapping is unmapped, page by page: 27-28 ms for the 480 MB of 2M x 60 float32 rows
    (2026-12-05), at the end of the default fit that kept every row, where its caller waits.  On
    another thread the unmapping runs beside the rest of the fit (CPython releases the GIL around
    ``munmap``), and the thread is kept for the next read."""
    OnThread(held.clear, name=FREEING_NAME)

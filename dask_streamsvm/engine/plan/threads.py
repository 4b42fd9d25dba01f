"""The threads of a fit: BLAS on one, unless the user chose or a wide in-memory Gram matrix pays for more;
and row threads, a core each, for the dense rows of in-memory fits.

A fit already runs its own threads: the trainer (numba kernels, no ``parallel=True``), and, when it
streams, the reader thread that computes and decodes the next partitions.  OpenBLAS, left to itself,
starts a thread per core for every matrix product of the primal solver (its Gram matrices,
``rows.T @ rows``, and conjugate gradient's products): on two cores these threads and the reader
fight for the same two, and beside a busy process OpenBLAS's spinning threads wait for each other.
Measured on 2 cores (``benchmarks/bench_process.py``; the Gram matrix of a 16 MiB chunk of float64
rows, as :func:`~..primal.sums.chunk_rows` cuts them), one thread against two:

=========  ========  =========  ==========
 columns    rows      1 thread   2 threads
=========  ========  =========  ==========
 61         34,379    12.0 ms    19.6 ms
 256        8,192     42.7 ms    69.1 ms
 512        4,096     78.4 ms    76.7 ms
 1,024      2,048     181 ms     156 ms
 2,048      1,024     317 ms     239 ms
=========  ========  =========  ==========

So a fit runs its BLAS on one thread (:func:`blas_threads`, applied by the fit context of every
estimator), and the in-memory primal solver of a model at least :data:`WIDE_GRAM` columns wide,
which runs no reader, on the cores the process has (:func:`fit_cores`), unless its rows are CSR.
The in-memory primal solver below :data:`WIDE_GRAM` and the in-memory softmax model keep one BLAS thread (two
were about 1.6x faster for the softmax model on a quiet machine and 1.6x slower beside one busy
process, ``docs/guide/threads.md``) and split their dense rows between *row threads* instead
(:func:`row_threads`, :func:`memory_row_threads`): each sums its own runs of rows on one BLAS thread,
and their sums are added in order, so no thread waits on another inside a product and a thread that
shares its core with a busy process leaves its last runs to the others (``python -m
benchmarks.bench_products --part threads`` and ``--part primal``: 1.2-1.6x faster than one thread
quiet, 1.1x beside one busy process).

A user's own choice wins and is left alone: a BLAS thread count in the environment
(:data:`BLAS_ENVIRONMENT`, as a Dask worker's nanny sets ``OMP_NUM_THREADS=1``), or a
``threadpoolctl.threadpool_limits`` around the fit (BLAS threads other than those the process had
when ``dask_streamsvm`` was imported).
"""

import contextlib
import contextvars
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from threadpoolctl import ThreadpoolController

# Environment variables by which a user (or a Dask nanny) sets the BLAS libraries' threads.
BLAS_ENVIRONMENT = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

# Model columns from which the in-memory primal solver's Gram matrices run on every core: below,
# one BLAS thread makes a chunk's Gram matrix faster than two (the table above).  Not on CSR rows
# (:func:`primal_memory_threads`): their Hessian's products and the model's columns are SciPy's and
# numba's loops.  Measured (benchmarks/bench_l1_svc.py's 50,000 x 20,000 text rows,
# LinearSVC(penalty="l1") at C = 1, one process, 2026-12-01): 1.48-1.52 s on one thread and on two
# quiet; beside one busy process 1.41-1.50 s on one and 2.58-2.75 s on two.
WIDE_GRAM = 1024


# threadpoolctl's view of the process's libraries, made again only when a module was imported since
# (a new extension may bring its own BLAS): finding them walks every shared library loaded (3 ms a
# time, three times a fit: a fifth of a 0.04 s fit), their thread counts are read live.
_controller = [None, -1]  # [ThreadpoolController, len(sys.modules) when made]
_controller_lock = threading.Lock()


def _blas_controller():
    """The process's :class:`threadpoolctl.ThreadpoolController`, made again when modules were
    imported since the last one was made."""
    with _controller_lock:
        if _controller[0] is None or _controller[1] != len(sys.modules):
            _controller[0] = ThreadpoolController()
            _controller[1] = len(sys.modules)  # threadpoolctl's own imports counted
        return _controller[0]


def _blas_threads_now():
    """``{library path: threads}`` of the BLAS libraries loaded in this process."""
    return {
        info["filepath"]: info["num_threads"]
        for info in _blas_controller().info()
        if info["user_api"] == "blas"
    }


_AT_IMPORT = _blas_threads_now()  # what the process had before any fit: its defaults or the user's
_lock = threading.Lock()
_ours = 0  # limits of ours in force (threadpoolctl's limits are the process's, not a thread's)


def users_choice():
    """Whether the user has chosen the BLAS threads: in the environment, or by a limit (such as
    ``threadpool_limits``) that changed them since ``dask_streamsvm`` was imported."""
    if any(os.environ.get(name, "").strip() for name in BLAS_ENVIRONMENT):
        return True
    if _ours:
        return False
    now = _blas_threads_now()
    return any(now[path] != threads for path, threads in _AT_IMPORT.items() if path in now)


def fit_cores():
    """The cores this process may run on (its CPU affinity), shared by the threads of the Dask
    worker whose task calls it."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        try:
            worker = distributed.get_worker()
        except ValueError:  # not in a worker's task
            pass
        else:
            cores = max(1, cores // max(1, worker.state.nthreads))
    return max(1, cores)


@contextlib.contextmanager
def blas_threads(threads):
    """BLAS on ``threads`` threads within the block, unless the user chose (:func:`users_choice`);
    nested blocks of ours set their own count, and each restores what it found."""
    global _ours
    if users_choice():
        yield
        return
    with _blas_controller().limit(limits=int(threads), user_api="blas"):
        with _lock:
            _ours += 1
        try:
            yield
        finally:
            with _lock:
                _ours -= 1


def primal_memory_threads(width, sparse_rows=False):
    """BLAS threads of the in-memory primal solver on a model ``width`` columns wide: one on CSR rows
    (``sparse_rows``, without a feature map), whose products are SciPy's own loops, not BLAS; a
    second thread there only slows the vector operations beside a busy process (:data:`WIDE_GRAM`)."""
    return fit_cores() if width >= WIDE_GRAM and not sparse_rows else 1


# The row threads of the fit running in this context (:func:`row_threads`): 1 runs every chunk in
# the calling thread.  A context variable, so that the reader thread and a second fit in another
# thread keep their own.
_row_threads = contextvars.ContextVar("dask_streamsvm_row_threads", default=1)
# The executor the row threads run on, made again in a forked child (whose copy has no threads) or
# when a fit asks for more threads than it has: {"pid", "threads", "executor"}.
_row_pool = {"pid": None, "threads": 0, "executor": None}
_row_pool_lock = threading.Lock()


@contextlib.contextmanager
def row_threads(threads):
    """Within the block, the dense sums that split their rows (:func:`~..primal.sums.chunk_sums`,
    :func:`~..primal.sums.run_sums`) run on ``threads`` threads of one BLAS thread each."""
    token = _row_threads.set(max(1, int(threads)))
    try:
        yield
    finally:
        _row_threads.reset(token)


def row_pool():
    """``(executor, threads)`` of the row threads in force, or ``(None, 1)`` where there is one."""
    threads = _row_threads.get()
    if threads <= 1:
        return None, 1
    with _row_pool_lock:
        pool = _row_pool
        if pool["executor"] is None or pool["pid"] != os.getpid() or pool["threads"] < threads:
            prefix = "dask_streamsvm-rows"
            pool.update(pid=os.getpid(), threads=threads, executor=ThreadPoolExecutor(threads, prefix))
        return pool["executor"], threads


def memory_row_threads(sparse_rows=False):
    """Row threads of an in-memory fit that splits its dense rows' products (:func:`row_threads`):
    the cores the process has (:func:`fit_cores`), unless its rows are CSR (SciPy's products) or the
    user chose the BLAS threads (:func:`users_choice`), whose count then stands alone."""
    return 1 if sparse_rows or users_choice() else fit_cores()

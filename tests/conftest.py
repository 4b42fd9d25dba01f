"""Fixtures shared by the test files; shared data helpers and constants are in ``_helpers.py``."""

import logging
import os
import signal

import dask
import pytest

# The workers of the tests' in-process clusters do not sample their threads' stacks: on Python 3.11
# a worker's profiler (sys._current_frames, every 10 ms) can run Python code (a weakref callback of
# the garbage collector) while it holds the interpreter's lock of thread states, and a thread that
# starts then (the reader's) waits for that lock holding the GIL: the process deadlocks
# (python/cpython#106883).  A CI run on 2026-12-05 hung so in tests/test_streamsvm.py, the reader
# thread in Thread.start and the worker's IO loop in a weakref callback under trigger_profile.  The
# library now starts no thread per read (engine/data/waiting.py: on_spare_thread; tested in
# test_spare_threads.py), but Dask's workers and clients still start threads of their own.
dask.config.set({"distributed.worker.profile.enabled": False})


@pytest.fixture(scope="session")
def local_cluster():
    """An in-process ``dask.distributed`` cluster (one worker, two threads), started once per session."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        dashboard_address=":0",  # any free port: never 8787, which a user's cluster may hold
        silence_logs=logging.ERROR,
    ) as cluster:
        yield cluster


@pytest.fixture(params=["threads", "distributed"])
def scheduler(request):
    """Run the test once on Dask's threaded scheduler and once on a ``dask.distributed`` Client.

    As in dask-ml's ``tests/conftest.py``.  The distributed case connects a Client to the
    session's in-process cluster and makes it the default for this test only, as a user's
    ``Client()`` does; the test's ``compute`` calls and the streaming reader thread then all
    run on the cluster.  Yields ``"threads"`` or the Client.
    """
    if request.param == "threads":
        with dask.config.set(scheduler="threads"):
            yield "threads"
        return
    import distributed

    with distributed.Client(request.getfixturevalue("local_cluster")) as client:
        assert dask.config.get("scheduler") == "dask.distributed"
        yield client


@pytest.fixture
def partial_sample(monkeypatch):
    """The primal solver's warm start from a sample of 5 rows per column of the model (features
    plus bias), not the default's every row of a small set (nor every row within ``cache_bytes``):
    the Newton reads then stream."""
    from dask_streamsvm.engine.primal import warm

    monkeypatch.setattr(warm, "SAMPLE_MIN_ROWS", 0)
    monkeypatch.setattr(warm, "SAMPLE_ROWS_PER_WIDTH", 5)
    monkeypatch.setattr(warm, "EVERY_ROW_IN_BUDGET", False)


@pytest.fixture
def parses(monkeypatch):
    """Counts the LIBSVM blocks parsed (read_libsvm must be called after this fixture); a test counts
    them after :func:`~._helpers.reads_ended`."""
    from dask_streamsvm import io

    from ._helpers import reads_ended

    reads_ended()  # no read of an earlier test's fit is counted
    calls = []
    parse = io._parse_block

    def counted(*args):
        calls.append(1)
        return parse(*args)

    monkeypatch.setattr(io, "_parse_block", counted)
    return calls


def pytest_configure(config):
    """Ctrl-C as a terminal gives it. A shell that starts the tests in the background without job
    control (``make test &`` in a script) starts them with SIGINT ignored, and Python then keeps
    ignoring it: the tests that press Ctrl-C would wait for a fit that never hears it.

    Then, in the process that starts pytest-xdist's workers, the kernels compiled ahead
    (:func:`_compile_kernels_ahead`)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _compile_kernels_ahead(config)


def _compile_kernels_ahead(config):
    """Fill numba's cache before pytest-xdist's workers start (``-n 2``, as ``make test`` runs).

    Each worker would otherwise compile every kernel its tests call, most of them the same in both
    (about 450 CPU-seconds of a cold ``make test``); ``dask-streamsvm compile``'s step compiles each
    once, its groups of fits spread over the cores, and the workers load them (a second or so per
    fit's kernels).  A warm cache makes it a few seconds of loading.  Not in the workers, not in a
    run without xdist (one test file, ``make test-slow``: it compiles what it calls, as before), and
    not with ``DASK_STREAMSVM_TEST_COMPILE=0``.  A fit that fails here is printed in the header; its
    tests then fail on their own.
    """
    workers = getattr(config.option, "numprocesses", None)
    if os.environ.get("PYTEST_XDIST_WORKER") or not workers or config.option.collectonly:
        return
    if os.environ.get("DASK_STREAMSVM_TEST_COMPILE", "1") == "0":
        return
    from dask_streamsvm.precompile import compile_kernels, total_lines

    config.stash[_COMPILED] = total_lines(compile_kernels())


_COMPILED = pytest.StashKey()


def pytest_report_header(config):
    lines = config.stash.get(_COMPILED, None)
    return None if lines is None else [f"numba kernels ahead: {line}" for line in lines]

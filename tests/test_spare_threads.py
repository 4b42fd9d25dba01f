"""The read threads kept between reads (``engine/data/waiting.py``: ``on_spare_thread``, ``OnThread``).

A streamed fit reads each partition on a thread; starting a thread per read is what CPython 3.11
cannot always do beside a Dask worker's profiler (python/cpython#106883).  These tests pin that a
process's fits take kept threads and start none once the first fit started them, that a read given
up on keeps its own, and that a forked child starts its own.
"""

import contextvars
import os
import threading

import dask.array as da
import numpy as np
import pytest

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.data import waiting
from dask_streamsvm.engine.data.waiting import IDLE_NAME, SPARE_THREADS, OnThread, on_spare_thread
from tests._helpers import LIVENESS_GUARD, noisy_linear_data, wait_until

GUARD = LIVENESS_GUARD  # an event a working pool sets at once: a liveness guard, not a timing


@pytest.fixture
def fresh_spares(monkeypatch):
    """A pool of its own for the test (none idle), so that other tests' kept threads do not count."""
    monkeypatch.setattr(waiting, "_spare", {"pid": os.getpid(), "idle": []})
    return waiting._spare


def _starts(monkeypatch):
    """The names of the threads started from now on (every ``threading.Thread.start`` in the process)."""
    started = []
    start = threading.Thread.start

    def counted(thread):
        started.append(thread.name)
        return start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    return started


def test_a_thread_is_kept_after_its_work_and_taken_again(fresh_spares, monkeypatch):
    started = _starts(monkeypatch)
    seen, done = [], threading.Event()
    on_spare_thread(lambda: (seen.append(threading.current_thread()), done.set()))
    assert done.wait(GUARD)
    for _ in range(5):
        done.clear()
        wait_until(lambda: fresh_spares["idle"])  # the thread is kept once its work has returned
        on_spare_thread(lambda: (seen.append(threading.current_thread()), done.set()))
        assert done.wait(GUARD)
    assert len(started) == 1 and all(thread is seen[0] for thread in seen)


def test_a_read_that_hangs_keeps_its_thread_and_the_next_read_takes_another(fresh_spares):
    hung, release, later = threading.Event(), threading.Event(), threading.Event()
    threads = []
    on_spare_thread(lambda: (threads.append(threading.current_thread()), hung.set(), release.wait(GUARD)))
    assert hung.wait(GUARD)
    on_spare_thread(lambda: (threads.append(threading.current_thread()), later.set()))
    assert later.wait(GUARD)  # ran while the first still waits
    assert threads[0] is not threads[1]
    release.set()
    wait_until(lambda: len(fresh_spares["idle"]) == 2)  # both kept once the hung read ends


def test_at_most_spare_threads_are_kept_and_the_rest_end(fresh_spares):
    assert SPARE_THREADS == 8  # a fit's reader, its prefetch's reads and a second fit's, with room
    n = SPARE_THREADS + 3
    running, release = threading.Barrier(n + 1, timeout=GUARD), threading.Event()
    threads = []

    def work():
        threads.append(threading.current_thread())
        running.wait()
        release.wait(GUARD)

    for _ in range(n):
        on_spare_thread(work)
    running.wait()  # n threads at once: none was idle, so each started its own
    assert len(set(threads)) == n
    release.set()
    for thread in threads:
        thread.join(0.01)
    wait_until(lambda: len(fresh_spares["idle"]) == SPARE_THREADS)
    wait_until(lambda: sum(t.is_alive() for t in threads) == SPARE_THREADS)  # the other 3 ended


def test_each_work_runs_in_a_context_of_its_own_as_on_a_new_thread(fresh_spares):
    var = contextvars.ContextVar("var", default="unset")
    var.set("caller's")
    seen, done = [], threading.Event()
    on_spare_thread(lambda: (seen.append(var.get()), var.set("first work's"), done.set()))
    assert done.wait(GUARD)
    wait_until(lambda: fresh_spares["idle"])
    done.clear()
    on_spare_thread(lambda: (seen.append(var.get()), done.set()))
    assert done.wait(GUARD)
    assert seen == ["unset", "unset"]


def test_a_threads_name_is_its_works_while_it_runs_and_idle_after(fresh_spares):
    for _ in range(3):  # a new thread, then kept ones: named as the work from the hand-over on
        release = threading.Event()
        read = OnThread(lambda release=release: release.wait(GUARD), name="dask-streamsvm-reader")
        assert [t for t in threading.enumerate() if t.name == "dask-streamsvm-reader"]  # before it runs
        release.set()
        assert read.done.wait(GUARD)
        wait_until(lambda: fresh_spares["idle"])
    inside = []
    read = OnThread(lambda: inside.append(threading.current_thread().name) or 7, name="dask-streamsvm-read")
    assert read.done.wait(GUARD) and read.result() == 7 and not read.is_alive()
    assert inside == ["dask-streamsvm-read"]
    # done is set after the name is given back: a thread named as a read still runs one
    assert not [t for t in threading.enumerate() if t.name == "dask-streamsvm-read" and t.is_alive()]
    assert any(t.name == IDLE_NAME for t in threading.enumerate())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork: POSIX only")
# Python 3.12 and later warn of a fork beside threads; the child here runs no Python but the test's.
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*:DeprecationWarning")
def test_a_forked_child_starts_its_own_threads_not_its_parents(fresh_spares):
    done = threading.Event()
    on_spare_thread(done.set)
    assert done.wait(GUARD)
    wait_until(lambda: fresh_spares["idle"])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's idle thread is not here; a read must still run
        try:
            ran = threading.Event()
            on_spare_thread(ran.set)
            os.write(write, b"1" if ran.wait(GUARD) else b"0")
        finally:
            os._exit(0)
    os.close(write)
    got = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert got == b"1"


def test_a_second_streamed_fit_in_a_process_starts_no_thread(monkeypatch):
    """The first fit starts the reader's and the reads' threads (and Dask's threaded scheduler a pool
    for each thread that computes); a second fit takes them all again.  Before, each partition's read
    started a thread and Dask a pool of threads for it."""
    X, y = noisy_linear_data(4_000, 5)
    Xd, yd = da.from_array(X, chunks=500), da.from_array(y, chunks=500)
    fit = dict(solver="streamsvm", cache_bytes=20_000, max_iter=3, tol=1e-12, random_state=0)
    fit.update(deterministic=True)  # the same model twice (the asynchronous schedule's depends on timing)
    with pytest.warns(Warning):  # not converged in 3 passes
        first = LinearSVC(**fit).fit(Xd, yd)
    started = _starts(monkeypatch)
    with pytest.warns(Warning):
        second = LinearSVC(**fit).fit(Xd, yd)
    assert first.n_iter_ == second.n_iter_ == 3  # 24 partition reads in each
    np.testing.assert_array_equal(first.coef_, second.coef_)
    assert started == []


def test_a_reader_is_entered_once():
    """As a thread is started once: a Reader read to its end is not entered again (a new one reads)."""
    from dask_streamsvm.engine.data.reader import Reader
    from dask_streamsvm.engine.data.source import DaskSource

    X, y = noisy_linear_data(40, 3)
    reader = Reader(DaskSource(da.from_array(X, chunks=20), da.from_array(y, chunks=20)), prefetch=1,
                    max_passes=1, shuffle=False, seed=0)  # fmt: skip
    with reader:
        while reader.get(timeout=GUARD)[0] != "done":
            pass
    with pytest.raises(RuntimeError, match="reads once"):
        reader.__enter__()

"""Waiting for Dask without waiting forever: ``read_timeout`` and prompt stops.

Dask cannot stop a task half-way.  So a read the fit may have to give up
(a hung task, Ctrl-C) runs on a thread of its own while the caller waits in
short steps of :data:`POLL` seconds, watching its stop flag and the clock;
a read given up on is left to end on that thread when its task does.

The threads are kept between reads, idle (:data:`SPARE_THREADS` at most),
and a read takes an idle one before it starts another: a streamed fit reads
each partition on a thread, and starting a thread per read is what CPython
3.11 cannot always do beside ``sys._current_frames`` (a Dask worker's
profiler calls it every few milliseconds): python/cpython#106883, a
deadlock between the GIL and the interpreter's thread-state lock, seen here
in a fit on an in-process ``LocalCluster``.  With the threads kept, a process
starts its read threads in its first fit, not at every read.  A read given up
on keeps its thread until its task ends; the next read takes another.
"""

import contextlib
import contextvars
import os
import queue
import sys
import threading
import time

POLL = 0.05  # seconds between looks at the stop flag and the clock while waiting
# Idle threads kept for the next reads (:class:`OnThread`): a fit reads at most ``prefetch``
# partitions at once beside its reader thread (a fit of the default prefetch started 5 to 9,
# docs/guide/threads.md); 8 leave room for a larger prefetch or fits in several threads at once.  A
# thread beyond them ends when its read does.
SPARE_THREADS = 8
IDLE_NAME = "dask-streamsvm-idle"  # a kept thread's name while it waits for a read
_spare = {"pid": None, "idle": []}  # the idle threads (inbox, thread), of the process that kept them
_spare_lock = threading.Lock()
# How tasks are computed on a ``dask.distributed`` client: ``compute(client, tasks, stalled)``,
# installed by the cluster's runtime (:func:`~..cluster.runtime.compute`, which names a cluster with
# no worker left where Dask would wait for one forever) when it is imported, as every fit and
# ``read_libsvm`` import it; this room is below the cluster's and names none of it.
_ON_A_CLUSTER = []


def compute_on_clusters_with(compute):
    """Install ``compute(client, tasks, stalled)`` as the way :func:`watched_compute` computes on a
    ``dask.distributed`` client (the cluster's runtime, as it is imported)."""
    _ON_A_CLUSTER[:] = [compute]


class ReadTimeout(TimeoutError):
    """A partition's read took longer than ``read_timeout``; never retried."""


def on_spare_thread(fn, name=IDLE_NAME):
    """``fn()`` run on an idle daemon thread kept by an earlier call, or on a new one where none is
    idle; the thread is named ``name`` from now on (so that it is known by it before ``fn`` starts)
    and kept again when ``fn`` returns, unless :data:`SPARE_THREADS` already are.  ``fn`` must not
    raise (:class:`OnThread` catches what its function raises, and names the thread idle again)."""
    with _spare_lock:
        if _spare["pid"] != os.getpid():  # a forked child: its parent's threads are not in it
            _spare.update(pid=os.getpid(), idle=[])
        kept = _spare["idle"].pop() if _spare["idle"] else None
    if kept is None:
        inbox = queue.SimpleQueue()
        thread = threading.Thread(target=_serve, args=(inbox,), name=name, daemon=True)
        thread.start()
    else:
        inbox, thread = kept
        thread.name = name
    inbox.put(fn)


def _serve(inbox):
    """A kept thread: run what arrives in ``inbox``, each in a context of its own (as on a new
    thread), then wait idle for the next, or end where :data:`SPARE_THREADS` wait already."""
    while True:
        contextvars.Context().run(inbox.get())
        with _spare_lock:
            if _spare["pid"] != os.getpid() or len(_spare["idle"]) >= SPARE_THREADS:
                return
            _spare["idle"].append((inbox, threading.current_thread()))


class OnThread:
    """``fn()`` started on a daemon thread (:func:`on_spare_thread`) named ``name`` while it runs;
    ``done`` is set when it returns or raises, and then ``on_done()`` called (if given) on that
    thread."""

    def __init__(self, fn, on_done=None, name="dask-streamsvm-read"):
        self.done, self._out = threading.Event(), {}

        def run():
            try:
                self._out["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised by result()
                self._out["error"] = exc
            finally:
                threading.current_thread().name = IDLE_NAME  # before done: a thread by the name still works
                self.done.set()
                if on_done is not None:
                    on_done()

        on_spare_thread(run, name)

    def is_alive(self):
        """Whether ``fn`` still runs (as :meth:`threading.Thread.is_alive`)."""
        return not self.done.is_set()

    def result(self):
        """What ``fn`` returned, or its exception raised again (once ``done`` is set)."""
        if "error" in self._out:
            raise self._out["error"]
        return self._out["value"]


def computed(tasks):
    """``dask.compute(*tasks)``; on a ``dask.distributed`` client, through
    :func:`~..cluster.runtime.compute`, which raises an error naming the cluster when it has no
    worker left, where Dask would wait for one forever.  Items that are not Dask collections (None,
    arrays) come back as they are."""
    from dask import is_dask_collection

    tasks = list(tasks)
    lazy = [i for i, task in enumerate(tasks) if is_dask_collection(task)]
    values = watched_compute([tasks[i] for i in lazy], None, None) if lazy else ()
    for i, value in zip(lazy, values, strict=True):
        tasks[i] = value
    return tuple(tasks)


def watched_compute(tasks, ids, read_timeout):
    """``dask.compute(*tasks)``, one task per partition (``ids``), with ``read_timeout`` for each.

    With a timeout, when none has finished for ``read_timeout`` seconds while
    some are left, a :class:`ReadTimeout` names the partitions not read.  On a
    ``dask.distributed`` client the tasks are waited for as a cluster fit's are
    (:func:`compute_on_clusters_with`): a cluster with no worker left raises
    an error naming it, with or without a timeout, and a failed wait cancels
    the tasks.  Elsewhere, with a timeout, they are computed on a thread of
    their own, left to end when its tasks do (Dask cannot stop a running
    task).
    """
    import dask

    client = _distributed_client()
    if client is not None and _ON_A_CLUSTER:
        return _ON_A_CLUSTER[0](client, tasks, None if read_timeout is None else (read_timeout, ids))
    if read_timeout is None:
        return dask.compute(*tasks)
    marks = [False] * len(tasks)  # a marker task after each partition's says it is done

    def mark(i, value):
        marks[i] = True
        return value

    marked = [dask.delayed(mark, pure=False)(i, task) for i, task in enumerate(tasks)]
    read = OnThread(lambda: dask.compute(*marked))
    last, count = time.monotonic(), 0
    while not read.done.wait(POLL):
        now, n = time.monotonic(), sum(marks)
        if n != count:
            last, count = now, n
        elif now - last >= read_timeout:
            raise stalled_reads([ids[i] for i, done in enumerate(marks) if not done], read_timeout)
    return read.result()


def stalled_reads(pending, read_timeout):
    """The :class:`ReadTimeout` for partitions ``pending`` when none finished in ``read_timeout`` s."""
    shown = ", ".join(map(str, pending[:10])) + (", ..." if len(pending) > 10 else "")
    return ReadTimeout(
        f"partition(s) {shown} were not read within read_timeout={read_timeout} s (no partition "
        "finished in that time): their tasks are hung or slower than allowed. Raise read_timeout "
        "(or pass None to wait without limit), or check the source of those partitions."
    )


def _distributed_client():
    """The ``dask.distributed`` client ``dask.compute`` would use now, or None."""
    if "distributed" not in sys.modules:
        return None
    from dask.base import get_scheduler

    client = getattr(get_scheduler(), "__self__", None)
    return client if type(client).__name__ == "Client" else None


@contextlib.contextmanager
def seceded():
    """Inside a ``dask.distributed`` task, leave the worker's thread pool until the block ends.

    A fit run as a task waits for the partitions it reads, which are tasks
    of the same cluster: holding a worker thread while waiting would
    deadlock a worker with one thread (and starve others).  Seceding, as
    ``worker_client`` does, frees the thread's slot; the task rejoins the
    pool at the end.  Outside a task this does nothing.
    """
    if "distributed" not in sys.modules:
        yield
        return
    from distributed import get_worker, rejoin, secede

    try:
        get_worker()
        on_worker = True
    except ValueError:  # not on a worker's task thread ("No worker found")
        on_worker = False
    # The block runs outside the handler: an error it raises is not chained to "No worker found".
    if not on_worker:
        yield
        return
    secede()
    try:
        yield
    finally:
        rejoin()

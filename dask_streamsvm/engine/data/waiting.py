"""Waiting for Dask without waiting forever: ``read_timeout`` and prompt stops.

Dask cannot stop a task half-way.  So a read the fit may have to give up
(a hung task, Ctrl-C) runs on a thread of its own while the caller waits in
short steps of :data:`POLL` seconds, watching its stop flag and the clock;
a read given up on is left to end on that thread when its task does.
"""

import contextlib
import sys
import threading
import time

POLL = 0.05  # seconds between looks at the stop flag and the clock while waiting


class ReadTimeout(TimeoutError):
    """A partition's read took longer than ``read_timeout``; never retried."""


class OnThread:
    """``fn()`` started on a daemon thread of its own; ``done`` is set when it returns or raises."""

    def __init__(self, fn):
        self.done, self._out = threading.Event(), {}

        def run():
            try:
                self._out["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised by result()
                self._out["error"] = exc
            finally:
                self.done.set()

        threading.Thread(target=run, name="dask-streamsvm-read", daemon=True).start()

    def result(self):
        """What ``fn`` returned, or its exception raised again (once ``done`` is set)."""
        if "error" in self._out:
            raise self._out["error"]
        return self._out["value"]


def watched_compute(tasks, ids, read_timeout):
    """``dask.compute(*tasks)``, one task per partition (``ids``), with ``read_timeout`` for each.

    With a timeout, the tasks are computed on a thread of their own; when
    none has finished for ``read_timeout`` seconds while some are left, a
    :class:`ReadTimeout` names the partitions not read.  The thread is left
    to end when its tasks do (Dask cannot stop a running task).
    """
    import dask

    if read_timeout is None:
        return dask.compute(*tasks)
    client = _distributed_client()
    if client is not None:  # the futures say which partitions are done
        futures = client.compute(list(tasks))
        finished = [f.done for f in futures]
        collect = lambda: tuple(client.gather(futures))  # noqa: E731
    else:  # a marker task after each partition's says it is done
        marks = [False] * len(tasks)

        def mark(i, value):
            marks[i] = True
            return value

        finished = [lambda i=i: marks[i] for i in range(len(tasks))]
        marked = [dask.delayed(mark, pure=False)(i, task) for i, task in enumerate(tasks)]
        collect = lambda: dask.compute(*marked)  # noqa: E731
    read = OnThread(collect)
    last, count = time.monotonic(), 0
    while not read.done.wait(POLL):
        now, n = time.monotonic(), sum(f() for f in finished)
        if n != count:
            last, count = now, n
        elif now - last >= read_timeout:
            pending = [ids[i] for i, f in enumerate(finished) if not f()]
            shown = ", ".join(map(str, pending[:10])) + (", ..." if len(pending) > 10 else "")
            raise ReadTimeout(
                f"partition(s) {shown} were not read within read_timeout={read_timeout} s (no partition "
                "finished in that time): their tasks are hung or slower than allowed. Raise read_timeout "
                "(or pass None to wait without limit), or check the source of those partitions."
            )
    return read.result()


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

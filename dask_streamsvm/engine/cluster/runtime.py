"""The cluster's runtime: the client, its workers, tasks submitted and gathered, lost workers and
a lost scheduler.

Every task of a cluster fit goes through :func:`submit` (a preferred worker, never the client)
and comes back through :func:`gather` or :func:`wait`, which poll the cluster while they wait: a
worker of the fit that leaves raises :class:`WorkerLost` (CoCoA+ recovers from it), no worker
left raises an error instead of hanging, a read slower than ``read_timeout`` raises
:class:`~..waiting.ReadTimeout`, and a client that lost its scheduler raises
:class:`SchedulerLost`.  A task argument whose data the cluster holds (a :class:`TaskInput`)
brings those futures as the task's dependencies.
"""

import time

from ..waiting import ReadTimeout

# Seconds between checks that the cluster still has workers while a round runs.
POLL_SECONDS = 2.0
# Seconds to hand an array to a worker before its loss is assumed.
_SCATTER_SECONDS = 60
# Seconds a fit that finds no worker left waits for the client to notice a lost scheduler.
_SCHEDULER_GRACE = 5.0


def resolve_client(client):
    """``client``, or the active ``dask.distributed`` client; a clear error when there is none."""
    if client is not None:
        return client
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError) as exc:
        raise ValueError(
            "cluster=... trains on a dask.distributed cluster, but no Client is active: create one "
            "(from distributed import Client; client = Client(...)) or pass client= to fit."
        ) from exc


def synchronous():
    """Dask's synchronous scheduler while in the block: a worker's task computes its partitions
    itself, on its own thread, rather than asking the cluster."""
    import dask

    return dask.config.set(scheduler="sync")


class SchedulerLost(RuntimeError):
    """The client lost its connection to the Dask scheduler: the cluster fit cannot go on."""


class WorkerLost(RuntimeError):
    """A worker that held a part left the cluster while a round waited for it."""


def scheduler_lost(client, cause=None):
    """:class:`SchedulerLost` naming ``client``'s scheduler if the client lost it, else None."""
    status = getattr(client, "status", "running")
    if status == "running":
        return None
    address = getattr(getattr(client, "scheduler", None), "address", None)
    detail = f": {type(cause).__name__}" if cause is not None else ""
    return SchedulerLost(
        f"lost the Dask scheduler at {address} (the client is {status!r}{detail}); the cluster fit cannot "
        "go on. Restart the scheduler (and its workers) and fit again."
    )


def live_workers(client):
    """The addresses of ``client``'s workers, sorted; :class:`SchedulerLost` if the scheduler sends none."""
    workers = client.scheduler_info().get("workers")
    if workers is None:
        raise scheduler_lost(client) or SchedulerLost(
            "the Dask scheduler sent no list of workers; it may have been lost. Check it and fit again."
        )
    return sorted(workers)


class TaskInput:
    """A task argument whose data the cluster may hold.

    ``held``: futures of that data (None where the argument carries all it needs), which
    :func:`submit` makes the task's dependencies; on the worker, the task finds their results in
    ``given``.  Neither travels inside the pickled argument.
    """

    held = None
    given = None

    def __getstate__(self):  # the futures travel as the task's dependencies, not inside it
        return {**self.__dict__, "held": None, "given": None}


def submit(client, func, *args, worker=None):
    """A task on ``worker`` (or another worker if it is gone); never run on the client.

    A :class:`TaskInput` whose data the cluster holds brings its futures as the task's
    dependencies: Dask hands the task their data (from its own worker's memory when the part was
    placed where its data is, :func:`~.parts.make_parts`).
    """
    held = next((a.held for a in args if isinstance(a, TaskInput) and a.held is not None), None)
    if held is not None:
        func, args = _with_held, (func, args, held)
    return client.submit(
        func, *args, workers=None if worker is None else [worker], allow_other_workers=True, pure=False
    )


def _with_held(func, args, held):
    """``func(*args)`` with the :class:`TaskInput` of ``args`` reading ``held``, its data."""
    for arg in args:
        if isinstance(arg, TaskInput):
            arg.given = held
    return func(*args)


def scatter(client, value, worker):
    """A future of ``value`` placed on ``worker`` (a lost worker raises after a minute, not never)."""
    return client.scatter(value, workers=[worker], hash=False, timeout=_SCATTER_SECONDS)


def gather(client, futures, placed=(), reads=None):
    """Results of ``futures``: the first task's error is raised, and so is :class:`WorkerLost`
    when a worker of ``placed`` leaves, or an error when no worker is left: never a hang.

    ``reads``, for tasks that read parts, is ``(seconds, partitions)``: how
    long they may take, and the partitions each future reads; a
    :class:`~..waiting.ReadTimeout` names those not read in time.
    """
    wait(client, futures, placed, reads)
    return client.gather(futures)


def wait(client, futures, placed=(), reads=None):
    """Wait for ``futures`` as :func:`gather` does, without gathering them."""
    from distributed import wait as wait_futures

    start = time.monotonic()
    while True:
        try:
            wait_futures(futures, timeout=POLL_SECONDS if reads is None else min(POLL_SECONDS, reads[0]))
            return
        except TimeoutError:
            if reads is not None and time.monotonic() - start >= reads[0]:
                late = [ids for f, ids in zip(futures, reads[1], strict=True) if not f.done()]
                raise ReadTimeout(
                    f"the cluster's parts of partitions {late} were not read within read_timeout times "
                    f"the partitions of a part ({reads[0]:g} s): a task is hung or slower than allowed. "
                    "Raise read_timeout (or pass None to wait without limit), or check their source."
                ) from None
            alive = set(live_workers(client))
            if not alive:
                raise no_workers(client) from None
            gone = sorted(set(placed) - alive)
            if gone:
                raise WorkerLost(f"workers {gone} left the cluster") from None


def no_workers(client):
    """The error when no worker is left: a lost scheduler, which drops every worker at once, if the
    client notices it within :data:`_SCHEDULER_GRACE` seconds (it sees the workers go first)."""
    deadline = time.monotonic() + _SCHEDULER_GRACE
    while time.monotonic() < deadline:
        lost = scheduler_lost(client)
        if lost is not None:
            return lost
        time.sleep(0.1)
    return RuntimeError("every Dask worker is gone; the cluster fit cannot go on.")

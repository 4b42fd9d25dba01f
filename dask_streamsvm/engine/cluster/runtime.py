"""The cluster's runtime: the client, its workers, tasks submitted and gathered, lost workers and
a lost scheduler.

Every task of a cluster fit goes through :func:`submit` (a preferred worker, never the client)
and comes back through :func:`gather` or :func:`wait`, which watch the cluster while they wait
(:class:`WorkerWatch`): a worker of the fit that leaves raises :class:`WorkerLost` (CoCoA+
recovers from it), no worker left raises an error instead of hanging, a read slower than
``read_timeout`` raises :class:`~..data.waiting.ReadTimeout`, and a client that lost its scheduler
raises :class:`SchedulerLost`.  A task argument whose data the cluster holds (a
:class:`TaskInput`) brings those futures as the task's dependencies.  What is computed on the
cluster outside a fit's tasks (the width scan of :func:`~dask_streamsvm.io.read_libsvm`, a count
of labels) goes through :func:`compute`, which waits the same way; a fit refuses a cluster that
has no worker at its start (:func:`require_workers`).

A worker its nanny restarted for memory (distributed's ``"worker-restart-memory"`` event, which
the nanny logs on the scheduler when the process passes ``distributed.worker.memory.terminate``
of its ``memory_limit``) is named as such in the errors of lost workers, with what to change
(:func:`memory_hint`): the scheduler's own removal of the worker gives no reason, and a
:class:`distributed.KilledWorker` only says that workers died.

A busy worker is not a lost one.  Whether a worker is there is the scheduler's own answer,
asked fresh each time (:func:`scheduler_workers`): the scheduler drops a worker when its
connection closes or its heartbeats stop for ``distributed.scheduler.worker-ttl``, never for
being busy.  ``Client.scheduler_info()`` is not that answer: it returns the client's cached
identity, which the client's own periodic update (``scheduler-info-interval``) refreshes with
``n_workers=0``, that is with an empty ``"workers"``; a slow reply, or that update landing
between the fresh request and the read, gives an empty list of a cluster whose workers are all
there.  A worker counts as gone only when :data:`CONFIRM_POLLS` answers in a row lack it; a
request the scheduler does not answer is no evidence either way.

A failed fit leaves nothing behind (:func:`cancelled_on_error`): every future it made is
cancelled, and a task that is running when its future is cancelled stops at its next
partition or block (:func:`cancel_check`), so that the next fit's tasks do not queue behind it.
"""

import contextlib
import contextvars
import itertools
import threading
import time
import weakref

from ..data.waiting import ReadTimeout, compute_on_clusters_with, stalled_reads

# Seconds between checks that the cluster still has workers while a round runs.
POLL_SECONDS = 2.0
# Answers of the scheduler in a row that must lack a worker before it counts as gone.
CONFIRM_POLLS = 2
# While it waits for a task, :func:`wait` looks at the futures after FIRST_LOOK seconds, then at
# twice the pause each time, at most LOOK_SECONDS apart (:func:`_first_done`): a task is seen done
# within 2 ms of its end (or as soon, for one shorter than that).
FIRST_LOOK = 0.0005
LOOK_SECONDS = 0.002
# Seconds to hand an array to a worker before its loss is assumed.
_SCATTER_SECONDS = 60
# Seconds one request for the scheduler's workers may take before it counts as unanswered.
_ANSWER_SECONDS = 30.0
# Seconds without any answer from a scheduler the client still calls connected before giving up.
_SILENT_SECONDS = 300.0
# The topic of the event a nanny logs on the scheduler when it restarts its worker for memory.
MEMORY_EVENT = "worker-restart-memory"
# Seconds before a fit's start (or a wait's, outside a fit) from which a memory restart is its
# cause: the event's time is the scheduler's clock, the start the client's.
_MEMORY_SLACK_SECONDS = 5.0


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


# The tasks inside synchronous() blocks now, and the setting the first of them made (its exit
# restores what was there before).  Dask's configuration is the process's: on an in-process cluster
# (LocalCluster(processes=False)) the workers' threads and the client share it.
_SYNCHRONOUS_LOCK = threading.Lock()
_synchronous_blocks = {"inside": 0, "setting": None}


@contextlib.contextmanager
def synchronous():
    """Dask's synchronous scheduler while in the block: a worker's task computes its partitions
    itself, on its own thread (and the threads it reads on), rather than asking the cluster.

    Dask's configuration belongs to the process, and the workers of an in-process cluster are
    threads of the client's: blocks of several tasks overlap there.  Nested
    ``dask.config.set`` blocks that end in another order than they began restore each other's
    settings (the second to begin, ending last, restored its start's "sync": every later fit in
    that process then trained there, not on the cluster), so the blocks are counted and the last to
    end restores what the first found."""
    import dask

    with _SYNCHRONOUS_LOCK:
        if _synchronous_blocks["inside"] == 0:
            _synchronous_blocks["setting"] = dask.config.set(scheduler="sync")
        _synchronous_blocks["inside"] += 1
    try:
        yield
    finally:
        with _SYNCHRONOUS_LOCK:
            _synchronous_blocks["inside"] -= 1
            if _synchronous_blocks["inside"] == 0:
                _synchronous_blocks.pop("setting").__exit__(None, None, None)
                _synchronous_blocks["setting"] = None


class SchedulerLost(RuntimeError):
    """The client lost its connection to the Dask scheduler: the cluster fit cannot go on."""


class WorkerLost(RuntimeError):
    """Workers of the fit left the cluster while it waited for them; ``workers`` names them."""

    def __init__(self, workers, detail=""):
        self.workers = sorted(workers)
        super().__init__(
            f"workers {self.workers} left the cluster{detail}. Their parts are read again on a live "
            "worker where the method can (cluster='cocoa' does); otherwise restart the lost workers "
            "(a LocalCluster's nannies do it) and fit again."
        )


class TaskCancelled(RuntimeError):
    """Raised on a worker by a running task whose future was cancelled (its fit failed)."""


def scheduler_lost(client, cause=None):
    """:class:`SchedulerLost` naming ``client``'s scheduler if the client lost it, else None."""
    status = getattr(client, "status", "running")
    if status == "running":
        return None
    detail = f": {type(cause).__name__}" if cause is not None else ""
    return SchedulerLost(
        f"lost the Dask scheduler at {_address(client)} (the client is {status!r}{detail}); the cluster "
        "fit cannot go on. Restart the scheduler (and its workers) and fit again."
    )


def _address(client):
    return getattr(getattr(client, "scheduler", None), "address", None)


def scheduler_workers(client):
    """The scheduler's workers as it sees them now, ``{address: identity}``, asked fresh (never
    ``Client.scheduler_info()``'s cache: see the module docstring); None when the scheduler did
    not answer in :data:`_ANSWER_SECONDS`, or sent a list shorter than its own count.  Raises
    :class:`SchedulerLost` once the client lost the scheduler."""
    lost = scheduler_lost(client)
    if lost is not None:
        raise lost
    try:
        info = client.sync(client.scheduler.identity, n_workers=-1, callback_timeout=_ANSWER_SECONDS)
    except OSError as exc:  # no answer: a closed connection or a timeout (TimeoutError is an OSError)
        lost = scheduler_lost(client, exc)
        if lost is not None:
            raise lost from exc
        return None
    workers = info.get("workers") if isinstance(info, dict) else None
    if workers is None or len(workers) < info.get("n_workers", 0):
        return None
    return workers


def live_workers(client):
    """The addresses of ``client``'s workers, sorted, as the scheduler answers (asked again while it
    does not answer); :class:`SchedulerLost` if the client lost it, an error naming it after
    :data:`_SILENT_SECONDS` of silence."""
    start = time.monotonic()
    while True:
        workers = scheduler_workers(client)
        if workers is not None:
            return sorted(workers)
        if time.monotonic() - start >= _SILENT_SECONDS:
            raise _silent(client, start)
        time.sleep(POLL_SECONDS)


def _silent(client, since):
    return SchedulerLost(
        f"the Dask scheduler at {_address(client)} sent no list of its workers for "
        f"{time.monotonic() - since:.0f} s; it may be hung or lost. Check it and fit again."
    )


class WorkerWatch:
    """Which of the fit's workers (``placed``) left, decided from the scheduler's answers:
    :meth:`poll` raises :class:`WorkerLost` for a worker absent from :data:`CONFIRM_POLLS`
    answers in a row, and :func:`no_workers`'s error when as many answers list no worker at all.
    Unanswered requests count for nothing (but :data:`_SILENT_SECONDS` of them end the fit).

    It also raises :class:`WorkerLost` for tasks stranded by a worker that left (:meth:`poll`'s
    ``pending``): a task placed on a worker (:func:`submit`, :func:`compute_on`) that lost every
    worker at once waits in Dask's ``"no-worker"`` state, and the scheduler never gives it to the
    workers that join afterwards (``bulk_schedule_unrunnable_after_adding_worker`` asks only
    whether the new worker is one the task names, not whether the restriction is loose), so the
    fit would wait forever; nannies that restart every worker for memory at once do just that.  Such a
    task is stranded when its worker is absent from the answer and the scheduler gives its state
    as ``"no-worker"``, :data:`CONFIRM_POLLS` answers in a row: a paused worker is listed, and
    its tasks wait for it."""

    def __init__(self, client, placed=()):
        self.client, self.placed = client, sorted(set(placed))
        self.absent = dict.fromkeys(self.placed, 0)  # answers in a row without the worker
        self.empty = 0  # answers in a row with no worker at all
        self.stranded = 0  # answers in a row with a pending task stranded by its worker
        self.answered = time.monotonic()
        self.since = _started()  # memory restarts from then on are this wait's
        self.limits = {}  # the memory_limit of every worker listed, for the memory hint

    def poll(self, pending=()):
        """Raise as the class says; ``pending``: the futures still waited for."""
        workers = scheduler_workers(self.client)
        if workers is None:
            if time.monotonic() - self.answered >= _SILENT_SECONDS:
                raise _silent(self.client, self.answered)
            return
        self.answered = time.monotonic()
        self.limits.update(_memory_limits(workers))
        self.empty = 0 if workers else self.empty + 1
        if self.empty >= CONFIRM_POLLS:
            raise no_workers(self.client, self.since, self.limits)
        for worker in self.placed:
            self.absent[worker] = 0 if worker in workers else self.absent[worker] + 1
        gone = [worker for worker, n in self.absent.items() if n >= CONFIRM_POLLS]
        if gone:
            self._lost(gone, f" (the scheduler listed them in none of its last {CONFIRM_POLLS} answers)")
        stranded = self._stranded_by(workers, pending)
        if stranded is None:  # no answer on the tasks: no evidence either way
            return
        self.stranded = self.stranded + 1 if stranded else 0
        if self.stranded >= CONFIRM_POLLS:
            self._lost(
                stranded,
                " while no other worker could take their tasks, which wait in Dask's 'no-worker' "
                "state: the scheduler does not give them to the workers that joined since",
            )

    def _stranded_by(self, workers, pending):
        """The workers absent from ``workers`` whose tasks among ``pending`` the scheduler holds in
        the ``"no-worker"`` state, sorted; None where it did not answer."""
        named = {f.key: _PLACED_ON.get(f) for f in pending}
        named = {key: worker for key, worker in named.items() if worker is not None and worker not in workers}
        if not named:
            return []
        states = task_states(self.client, list(named))
        if states is None:
            return None
        return sorted({worker for key, worker in named.items() if states.get(key) == "no-worker"})

    def _lost(self, workers, detail):
        hint = memory_note(self.client, self.since, self.limits)
        raise WorkerLost(workers, detail + (f"; {hint.rstrip('.')}" if hint else ""))


def task_states(client, keys):
    """``{key: state}`` of ``keys`` as the scheduler holds them (None: a key it forgot), or None
    where it did not answer in :data:`_ANSWER_SECONDS`."""
    try:
        return client.sync(client.scheduler.get_task_status, keys=keys, callback_timeout=_ANSWER_SECONDS)
    except OSError:  # no answer: a closed connection or a timeout (TimeoutError is an OSError)
        return None


class HeldState:
    """A state a fit keeps on one worker from task to task (a future's result that each task
    changes in place, under ``_lock``).  It pickles without its lock: a worker short of memory may
    spill it to disk between two tasks, and the copy read back goes on as the state would have."""

    def __init__(self):
        self._lock = threading.Lock()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


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


# The futures of the fit running in this context (:func:`cancelled_on_error`), weakly, by the order
# they were made in: a future the fit dropped is released by Dask already, and one it holds is
# cancelled if the fit fails, the newest first (:func:`cancel`).
_FIT_FUTURES = contextvars.ContextVar("dask_streamsvm_fit_futures", default=None)
_MADE = itertools.count()
# When the fit running in this context started (``time.time()``), for the memory hint.
_FIT_STARTED = contextvars.ContextVar("dask_streamsvm_fit_started", default=None)
# The worker each task was placed on (:func:`submit`, :func:`compute_on`), by its future, weakly:
# what :class:`WorkerWatch` names when the task is stranded by that worker's loss.
_PLACED_ON = weakref.WeakKeyDictionary()


def _started():
    """When the fit running in this context started, else now (``time.time()``)."""
    started = _FIT_STARTED.get()
    return time.time() if started is None else started


def _made(future):
    futures = _FIT_FUTURES.get()
    if futures is not None:
        futures[next(_MADE)] = future
    return future


@contextlib.contextmanager
def cancelled_on_error(client):
    """Every future :func:`submit` and :func:`scatter` make in the block is cancelled if the block
    raises (a block inside another adds its futures to the outer one's): the failed fit leaves no
    task queued, and its running tasks stop at their next :func:`cancel_check`."""
    if _FIT_FUTURES.get() is not None:
        yield
        return
    futures = weakref.WeakValueDictionary()
    token, started = _FIT_FUTURES.set(futures), _FIT_STARTED.set(time.time())
    try:
        yield
    except BaseException:
        cancel(client, list(futures.values()))
        raise
    finally:
        _FIT_FUTURES.reset(token)
        _FIT_STARTED.reset(started)


def cancel(client, futures):
    """``client.cancel`` of ``futures`` (in the order they were made), quietly: nothing to do
    without a scheduler, and a failed cancel must not hide the error that called it.

    One future at a time, the newest first.  The scheduler cancels a key's dependents with it, and
    a dependent no client wants (a task whose future the fit dropped, kept because a task it still
    holds needs it: a level of :func:`~.tree.tree_sum`) fails its ``assert ts.who_wants``
    (distributed 2026.8): the scheduler then drops the client's connection, and every future
    of that client, the user's own included, is cancelled ("scheduler-connection-lost").  Each
    such task was made before the task that needs it and after the tasks it needs, so that
    cancelling the newest first releases it, with the last task that needs it, before the cancel
    of any task it depends on reaches the scheduler (messages it handles in their order).
    """
    futures = [f for f in futures if f is not None]
    if not futures or getattr(client, "status", "running") != "running":
        return
    cancelled = set()
    with contextlib.suppress(Exception):
        for future in reversed(futures):
            if future.key not in cancelled:
                cancelled.add(future.key)
                client.cancel([future], reason="a dask-streamsvm fit failed", msg="its fit failed")


def cancel_check():
    """A callable that raises :class:`TaskCancelled` once the task running now (on a worker) has
    been cancelled: a long task calls it at each partition or block (from any thread).  Outside a
    worker's task it never raises."""
    try:
        from distributed import get_worker
        from distributed.worker import thread_state

        worker, key = get_worker(), thread_state.key
    except (ImportError, ValueError, AttributeError):
        return _never
    state = worker.state

    def check(*_):
        task = state.tasks.get(key)
        if task is None or task.state in ("cancelled", "released", "forgotten"):
            raise TaskCancelled(f"task {key!r} was cancelled (its fit failed or stopped); it stops here.")
        return False

    return check


def _never(*_):
    return False


def submit(client, func, *args, worker=None):
    """A task on ``worker`` (or another worker if it is gone); never run on the client.

    A :class:`TaskInput` whose data the cluster holds brings its futures as the task's
    dependencies: Dask hands the task their data (from its own worker's memory when the part was
    placed where its data is, :func:`~.parts.make_parts`).
    """
    held = next((a.held for a in args if isinstance(a, TaskInput) and a.held is not None), None)
    if held is not None:
        func, args = _with_held, (func, args, held)
    return _placed(
        client.submit(
            func, *args, workers=None if worker is None else [worker], allow_other_workers=True, pure=False
        ),
        worker,
    )


def compute_on(client, value, worker):
    """A future of the Dask collection or delayed ``value`` computed on ``worker`` (or another
    worker if it is gone), as :func:`submit` places a task."""
    return _placed(client.compute(value, workers=[worker], allow_other_workers=True), worker)


def _placed(future, worker):
    """``future``, made by the fit (:func:`cancelled_on_error`) and placed on ``worker`` (None:
    anywhere)."""
    if worker is not None:
        _PLACED_ON[future] = worker
    return _made(future)


def _with_held(func, args, held):
    """``func(*args)`` with the :class:`TaskInput` of ``args`` reading ``held``, its data."""
    for arg in args:
        if isinstance(arg, TaskInput):
            arg.given = held
    return func(*args)


def scatter(client, value, worker):
    """A future of ``value`` placed on ``worker``; :class:`WorkerLost` naming it if it left (the
    scheduler's own ``scatter`` raises a bare ``KeyError`` of its address), or after a minute."""
    try:
        return _made(client.scatter(value, workers=[worker], hash=False, timeout=_SCATTER_SECONDS))
    except KeyError as exc:
        if worker not in exc.args:
            raise
        raise WorkerLost([worker], " before the fit could place an array on it") from None
    except TimeoutError as exc:  # the scheduler found no running worker of those named
        lost = scheduler_lost(client, exc)
        if lost is not None:
            raise lost from exc
        raise WorkerLost([worker], f" (no array could be placed on it in {_SCATTER_SECONDS} s)") from exc


def gather(client, futures, placed=(), reads=None, on_done=None):
    """Results of ``futures``: the first task's error is raised, and so is :class:`WorkerLost`
    when a worker of ``placed`` leaves, or an error when no worker is left: never a hang.

    ``reads``, for tasks that read parts, is ``(seconds, partitions)``: how
    long they may take, and the partitions each future reads; a
    :class:`~..data.waiting.ReadTimeout` names those not read in time.
    ``on_done(i)`` is called as each future ``futures[i]`` finishes, in the order they finish.
    """
    wait(client, futures, placed, reads, on_done=on_done)
    return client.gather(futures)


def compute(client, tasks, stalled=None):
    """``dask.compute(*tasks)`` (Dask collections or delayed values) on ``client``'s cluster, waited
    for as :func:`wait` waits: with no worker left it raises :func:`no_workers`'s error within
    :data:`CONFIRM_POLLS` times :data:`POLL_SECONDS`, where Dask would wait for a worker forever.

    ``stalled``, ``(seconds, ids)`` with one id per task: a :class:`~..data.waiting.ReadTimeout`
    names the ids not computed when no task finished for that long.  On any error the futures
    are cancelled: nothing of the call stays queued on the cluster for the next.
    """
    futures = [_made(future) for future in client.compute(list(tasks))]
    try:
        wait(client, futures, stalled=stalled)
        return tuple(client.gather(futures))
    except BaseException:
        cancel(client, futures)
        raise


compute_on_clusters_with(compute)  # the data room's reads, on a distributed client


def wait(client, futures, placed=(), reads=None, stalled=None, on_done=None):
    """Wait for ``futures`` as :func:`gather` does, without gathering them: a task's error is
    raised as soon as it comes (the fit then cancels the others, :func:`cancelled_on_error`).
    ``stalled`` and ``on_done``: as :func:`compute`'s and :func:`gather`'s.

    Between waits of :data:`POLL_SECONDS` the :class:`WorkerWatch` asks the scheduler for its
    workers: a slow or busy cluster only waits longer."""
    start = finished = time.monotonic()
    watch = WorkerWatch(client, placed)
    pending = list(futures)
    step = min([POLL_SECONDS] + [limit[0] for limit in (reads, stalled) if limit is not None])
    while pending:
        if not _first_done(pending, step):
            now = time.monotonic()
            if reads is not None and now - start >= reads[0]:
                late = [ids for f, ids in zip(futures, reads[1], strict=True) if not f.done()]
                raise ReadTimeout(
                    f"the cluster's parts of partitions {late} were not read within read_timeout times "
                    f"the partitions of a part ({reads[0]:g} s): a task is hung or slower than allowed. "
                    "Raise read_timeout (or pass None to wait without limit), or check their source."
                ) from None
            if stalled is not None and now - finished >= stalled[0]:
                late = [i for f, i in zip(futures, stalled[1], strict=True) if not f.done()]
                raise stalled_reads(late, stalled[0]) from None
            watch.poll(pending)
            continue
        for future in pending:  # the first task that failed ends the wait at once, with its error
            if future.status == "error":
                _raise_task_error(client, future, watch)
            if future.status == "cancelled":  # distributed's CancelledError, naming the reason
                future.result()
        left = [future for future in pending if not future.done()]
        if len(left) < len(pending):
            finished = time.monotonic()
            if on_done is not None:
                for future in pending:
                    if future.done():
                        on_done(futures.index(future))
        pending = left


def _first_done(futures, seconds):
    """Whether one of ``futures`` is done within ``seconds``: their states looked at in pauses
    from :data:`FIRST_LOOK` to :data:`LOOK_SECONDS` seconds.

    Not ``distributed.wait(futures, timeout)``: its ``TimeoutError`` leaves the futures in a
    reference cycle (``distributed.utils.sync`` keeps the error in a closure's cell, and the
    error's traceback the frames that hold the futures), which only Python's full collection of
    cycles frees.  Until then the client holds the futures, so the scheduler keeps their tasks and
    the workers their results (data the graph holds, computed on the workers for the fit): after a
    fit whose tasks outlasted a wait's step, in a process where that collection seldom runs."""
    end = time.monotonic() + seconds
    pause = FIRST_LOOK
    while not any(future.done() for future in futures):
        left = end - time.monotonic()
        if left <= 0.0:
            return False
        time.sleep(min(pause, left))
        pause = min(2.0 * pause, LOOK_SECONDS)
    return True


def _raise_task_error(client, future, watch):
    """``future``'s error raised; a :class:`distributed.KilledWorker` (its workers died running it)
    with the memory hint when their nannies restarted workers for memory."""
    from distributed import KilledWorker

    try:
        future.result()
    except KilledWorker as exc:
        hint = memory_note(client, watch.since, watch.limits)
        if not hint:
            raise
        raise RuntimeError(f"{exc} The cause: {hint}") from exc


def require_workers(client):
    """The addresses of ``client``'s workers, as :func:`live_workers`; :func:`no_workers`'s error,
    promptly, when :data:`CONFIRM_POLLS` answers :data:`POLL_SECONDS` apart list none: a fit
    refuses a cluster without workers at its start, where Dask would queue its tasks forever."""
    for answer in range(CONFIRM_POLLS):
        workers = live_workers(client)
        if workers:
            return workers
        if answer + 1 < CONFIRM_POLLS:
            time.sleep(POLL_SECONDS)
    raise no_workers(client)


def no_workers(client, since=None, limits=None):
    """The error when the scheduler lists no worker in :data:`CONFIRM_POLLS` answers in a row, with
    the memory hint where nannies restarted workers for memory since ``since`` (``time.time()``;
    None: the start of the fit running in this context); ``limits``: the workers' memory_limit,
    as last listed."""
    hint = memory_note(client, _started() if since is None else since, limits)
    return RuntimeError(
        f"the Dask scheduler at {_address(client)} lists no worker in {CONFIRM_POLLS} answers "
        f"{POLL_SECONDS:g} s apart: every Dask worker is gone, and the cluster fit cannot go on. "
        + (f"The cause: {hint}" if hint else "Start workers (or restart the cluster) and fit again.")
    )


def memory_note(client, since, limits=None):
    """:func:`memory_hint` of the memory restarts since ``since`` (:func:`memory_restarts`), or None;
    ``limits``: ``{worker: memory_limit}`` as last listed (where empty, the workers listed now)."""
    restarts = memory_restarts(client, since)
    if not restarts:
        return None
    if not limits:
        with contextlib.suppress(Exception):  # a hint never hides an error
            limits = _memory_limits(scheduler_workers(client) or {})
    return memory_hint(restarts, limits or {})


def _memory_limits(workers):
    """``{worker: memory_limit}`` of the scheduler's answer ``workers`` (:func:`scheduler_workers`)."""
    return {w: info.get("memory_limit") for w, info in workers.items() if isinstance(info, dict)}


def memory_restarts(client, since):
    """The events (dicts of ``worker``, ``pid``, ``rss``) of nannies that restarted their worker for
    memory since ``since`` (``time.time()``, less :data:`_MEMORY_SLACK_SECONDS` for the scheduler's
    clock), oldest first; empty where the scheduler does not answer (a hint never hides an
    error)."""
    try:
        events = client.sync(client.scheduler.events, topic=MEMORY_EVENT, callback_timeout=_ANSWER_SECONDS)
    except Exception:  # noqa: BLE001 - no answer, no hint
        return []
    return [
        msg for stamp, msg in events or () if isinstance(msg, dict) and stamp >= since - _MEMORY_SLACK_SECONDS
    ]


def memory_hint(restarts, limits):
    """What the memory restarts ``restarts`` (:func:`memory_restarts`) say and what to change, or
    None without any; ``limits``: ``{worker: memory_limit}`` as the scheduler listed them (the
    restarted workers', else any: shown where they agree)."""
    if not restarts:
        return None
    import dask
    from dask.utils import format_bytes

    workers = sorted({str(event.get("worker")) for event in restarts})
    largest = max(restarts, key=lambda event: event.get("rss") or 0)
    known = {limits[w] for w in workers if limits.get(w)} or {v for v in limits.values() if v}
    limit = known.pop() if len(known) == 1 else None  # one limit for every worker, or none shown
    reached = f"a process reached {format_bytes(largest['rss'])}" if largest.get("rss") else "a process grew"
    share = dask.config.get("distributed.worker.memory.terminate", None)
    share = f" ({share:g})" if isinstance(share, int | float) and not isinstance(share, bool) else ""
    of_limit = f"its memory_limit of {format_bytes(limit)}" if limit else "its memory_limit"
    times = "once" if len(restarts) == 1 else f"{len(restarts)} times"
    return (
        f"the nannies restarted workers {workers} for memory ({times}; {reached}, past "
        f"distributed.worker.memory.terminate{share} of {of_limit}): a part of the fit needs more "
        "memory than a worker has. "
        "Give the workers a larger memory_limit (LocalCluster(memory_limit=...), dask worker "
        "--memory-limit), or make the parts smaller: more, smaller partitions (read_libsvm's blocksize, "
        "X.rechunk, ddf.repartition) or more workers; and a smaller cache_bytes."
    )


def held(client, future):
    """Whether a worker holds ``future``'s result (false for a cancelled or forgotten one)."""
    if future.status in ("error", "cancelled", "lost"):
        return False
    try:
        return bool(client.who_has([future]).get(future.key))
    except Exception:  # noqa: BLE001 - the scheduler forgot it meanwhile
        return False

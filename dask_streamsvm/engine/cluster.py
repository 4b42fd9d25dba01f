"""Cluster mode: one model per Dask worker, averaged, or combined to the optimum by CoCoA+.

``LinearSVC(cluster="average")`` and ``LinearSVC(cluster="cocoa")`` train
on a ``dask.distributed`` cluster through :func:`fit_cluster`, with the
estimator's :class:`~.problem.FitPlan`.  The collection's partitions are split
into ``K`` parts, one per worker (partition ``p`` goes to part ``p mod K``);
each part is a :meth:`DaskSource.subset <dask_streamsvm.engine.source.DaskSource.subset>`,
pickled once on the client (:class:`Packed`), that ships its partitions'
*graphs* to its worker, where a task computes
them with Dask's synchronous scheduler: the data are read where the task
runs, and only models, updates and certificate sums come back to the
client.

``"average"`` (StreamSVM section 1.3): each part trains the full
out-of-core engine (:func:`~.schedules.fit_stream`, the entry every
streaming fit goes through) on its partitions with its own ``cache_bytes``, and the
client averages the weight vectors with the parts' row counts as weights.
One more read computes the averaged model's primal objective; its dual is
bounded from below by the parts' duals (``alpha / K``-style scaling of the
parts' dual variables gives the averaged ``w`` exactly), so ``duality_gap_``
bounds its suboptimality (exactly so for the hinge loss).

``"cocoa"`` (CoCoA+, Ma, Smith, Jaggi et al. 2015, adding with ``sigma' =
K``): each part keeps its dual variables on its worker, and its rows when
they fit in ``cache_bytes`` (a larger part is read every round by SBM on
the local subproblem, :mod:`.cocoa_local`).  Every round each part fetches
``w`` (the columns its rows touch, when they are few: sparse data),
computes its share of the certificate at ``w`` (loss sum, ``sum alpha``,
``sum D alpha^2``), runs ``inner_iter`` DCD passes of its local subproblem
(steps scaled by ``sigma'``, :func:`~dask_streamsvm.kernels.dcd.dcd_passes`),
and sends its change of ``w`` up a tree of additions on the workers
(:class:`Change`: only the touched columns, when they are few); at the
root the next ``w`` is made and only the certificate's sums go to the
client.  The exact duality gap of the broadcast ``w`` is known every
round, and the fit stops at ``tol``: the result is the single-machine
optimum.

Tasks are pure functions of their inputs (the dual variables are copied
before a round changes them, seeds are fixed), so Dask may retry them;
a part read every round changes in place, and its rounds name its version.  A
worker lost in a CoCoA+ round is survived: parts whose state was on it are
read again from the collection on a live worker with ``alpha = 0``, ``w``
is rebuilt exactly from every part's ``alpha``, and the rounds go on.
"""

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..kernels.dcd import ProblemArrays, Shrinking, dcd_passes, row_sqnorms
from ..kernels.objective import add_weighted_rows, upper_and_diag_arrays, weighted_loss_sum
from ..kernels.rng import make_state
from .cache import row_bytes, share_bytes, stored_bytes
from .certificate import Certificate, check_gap
from .cocoa_local import StreamingPart, synchronous
from .layout import as_kernel_rows, kernel_rows
from .problem import class_index, encode_block, unconverged_message
from .schedules import fit_stream
from .source import _culled, merge_label_counts
from .waiting import ReadTimeout

CLUSTER_MODES = ("average", "cocoa")

# Seconds between checks that the cluster still has workers while a round runs.
_POLL_SECONDS = 2.0
# Seconds to hand w to a worker before its loss is assumed.
_SCATTER_SECONDS = 60
# Seconds a fit that finds no worker left waits for the client to notice a lost scheduler.
_SCHEDULER_GRACE = 5.0
# A fit gives up after this many rounds lost to failed workers.
_MAX_RECOVERIES = 3


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


def assign_parts(n_partitions, workers):
    """``[(worker, partitions)]``: part ``k`` holds partitions ``k, k + K, ...``.

    ``K`` is the number of workers, or of partitions if there are fewer.
    """
    if not workers:
        raise ValueError("the Dask cluster has no workers; start some before fitting.")
    n_parts = min(len(workers), n_partitions)
    return [(workers[k], list(range(k, n_partitions, n_parts))) for k in range(n_parts)]


class SchedulerLost(RuntimeError):
    """The client lost its connection to the Dask scheduler: the cluster fit cannot go on."""


def _scheduler_lost(client, cause=None):
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


def _workers(client):
    workers = client.scheduler_info().get("workers")
    if workers is None:
        raise _scheduler_lost(client) or SchedulerLost(
            "the Dask scheduler sent no list of workers; it may have been lost. Check it and fit again."
        )
    return sorted(workers)


def _submit(client, func, *args, worker=None):
    """A task on ``worker`` (or another worker if it is gone); never run on the client.

    A :class:`Packed` part whose data the cluster holds brings its futures as the task's
    dependencies: Dask hands the task their data (from its own worker's memory when the part was
    placed where its data is, :func:`make_parts`).
    """
    held = next((a.held for a in args if isinstance(a, Packed) and a.held is not None), None)
    if held is not None:
        func, args = _with_held, (func, args, held)
    return client.submit(
        func, *args, workers=None if worker is None else [worker], allow_other_workers=True, pure=False
    )


def _with_held(func, args, held):
    """``func(*args)`` with the :class:`Packed` of ``args`` reading ``held``, its partitions' data."""
    for arg in args:
        if isinstance(arg, Packed):
            arg.given = held
    return func(*args)


class WorkerLost(RuntimeError):
    """A worker that held a part left the cluster while a round waited for it."""


def _gather(client, futures, placed=(), reads=None):
    """Results of ``futures``: the first task's error is raised, and so is :class:`WorkerLost`
    when a worker of ``placed`` leaves, or an error when no worker is left: never a hang.

    ``reads``, for tasks that read parts, is ``(seconds, partitions)``: how
    long they may take, and the partitions each future reads; a
    :class:`~.waiting.ReadTimeout` names those not read in time.
    """
    _wait(client, futures, placed, reads)
    return client.gather(futures)


def _wait(client, futures, placed=(), reads=None):
    """Wait for ``futures`` as :func:`_gather` does, without gathering them."""
    from distributed import wait

    start = time.monotonic()
    while True:
        try:
            wait(futures, timeout=_POLL_SECONDS if reads is None else min(_POLL_SECONDS, reads[0]))
            return
        except TimeoutError:
            if reads is not None and time.monotonic() - start >= reads[0]:
                late = [ids for f, ids in zip(futures, reads[1], strict=True) if not f.done()]
                raise ReadTimeout(
                    f"the cluster's parts of partitions {late} were not read within read_timeout times "
                    f"the partitions of a part ({reads[0]:g} s): a task is hung or slower than allowed. "
                    "Raise read_timeout (or pass None to wait without limit), or check their source."
                ) from None
            alive = set(_workers(client))
            if not alive:
                raise _no_workers(client) from None
            gone = sorted(set(placed) - alive)
            if gone:
                raise WorkerLost(f"workers {gone} left the cluster") from None


def _no_workers(client):
    """The error when no worker is left: a lost scheduler, which drops every worker at once, if the
    client notices it within :data:`_SCHEDULER_GRACE` seconds (it sees the workers go first)."""
    deadline = time.monotonic() + _SCHEDULER_GRACE
    while time.monotonic() < deadline:
        lost = _scheduler_lost(client)
        if lost is not None:
            return lost
        time.sleep(0.1)
    return RuntimeError("every Dask worker is gone; the cluster fit cannot go on.")


# -- tasks that run on the workers ---------------------------------------------------------


class Packed:
    """A part's source, pickled once on the client: every task that reads the part gets these bytes.

    ``nbytes`` is what one task carries to its worker.  ``held``: per partition, the futures of
    its ``(x, y, w)`` (None where it has none) when the cluster holds the data (a persisted or
    in-memory collection, :func:`make_parts`); the source then carries no graph, and each task
    gets the data from Dask (``given``, on the worker).
    """

    def __init__(self, source, held=None):
        import cloudpickle

        self.data = cloudpickle.dumps(source)
        self.n_partitions = source.n_partitions
        self.held = held
        self.given = None

    def __getstate__(self):  # the futures travel as the task's dependencies, not inside it
        return {**self.__dict__, "held": None, "given": None}

    @property
    def nbytes(self):
        return len(self.data)

    def source(self):
        import pickle

        source = pickle.loads(self.data)  # noqa: S301 - our own bytes, made by the client of this fit
        if self.given is not None:
            source.use_data(self.given)
        return source


def make_parts(client, source, read_timeout=None):
    """The fit's parts: ``[(worker, Packed)]`` and, per part, its partitions (this source's numbers).

    Where the cluster holds the data already (persisted: ``X.persist()``), the collection is split
    by where its partitions are (``client.who_has``): every worker trains on the partitions it
    holds, and no rows move.  Data the graph holds (``da.from_array``, ``dd.from_pandas``) is
    computed once on the workers, partition ``p`` on worker ``p mod K``; the tasks of the fit
    then take it from their worker's memory instead of carrying it.  Otherwise (files, tasks)
    partition ``p`` is read on worker ``p mod K`` every time (:func:`assign_parts`), so that the
    cluster trains on more than its memory; each of ``x``, ``y`` and the weights is treated so
    on its own (labels in memory do not pull lazy rows into memory).  ``read_timeout``: seconds
    a partition may take to compute.
    """
    workers = _workers(client)
    kinds = source.held()
    given = tuple(kind is not None for kind in kinds)
    if not any(given):
        assignment = assign_parts(source.n_partitions, workers)
        return [(w, Packed(source.subset(ids))) for w, ids in assignment], [ids for _, ids in assignment]
    futures = _held_futures(client, source, kinds, workers)
    flat = [(f, source.partition_id(p)) for p, part in enumerate(futures) for f in part if f is not None]
    seconds = None if read_timeout is None else read_timeout * -(-len(futures) // len(workers))
    _wait(client, [f for f, _ in flat], reads=None if seconds is None else (seconds, [p for _, p in flat]))
    first = [next(f for f in part if f is not None) for part in futures]
    for part in futures:  # a partition that failed raises its error here
        for future in part:
            if future is not None and future.status == "error":
                future.result()
    n_parts = min(len(workers), len(futures))
    by_worker = {}
    who = client.who_has(first) if kinds[0] == "persisted" else {}
    for p, future in enumerate(first):
        holders = sorted(who.get(future.key) or [workers[p % n_parts]])
        by_worker.setdefault(holders[0], []).append(p)
    assignment = sorted(by_worker.items())
    parts = [(w, Packed(source.subset(ids, given), held=[futures[p] for p in ids])) for w, ids in assignment]
    return parts, [ids for _, ids in assignment]


def _held_futures(client, source, kinds, workers):
    """Per partition, futures of its ``x, y, w`` computed on the cluster where ``kinds`` (from
    :meth:`~.source.DaskSource.held`) says the cluster or the graph holds them (None elsewhere):
    persisted ones where they are, the others partition ``p`` on worker ``p mod K`` (its culled
    graph goes to the scheduler once).  The futures keep their graphs: Dask computes again what
    a lost worker held."""
    n_parts = min(len(workers), source.n_partitions)
    futures = []
    for p, part in enumerate(source._parts):
        held = [d if kind is not None else None for d, kind in zip(part, kinds, strict=True)]
        culled = _culled(tuple(held))
        row = []
        for d, kind in zip(culled, kinds, strict=True):
            if d is None:
                row.append(None)
            elif kind == "persisted":
                row.append(client.compute(d))
            else:
                row.append(client.compute(d, workers=[workers[p % n_parts]], allow_other_workers=True))
        futures.append(tuple(row))
    return futures


def part_row_bytes(packed, plan):
    """Bytes per row of a part as the row cache stores them (:func:`~.cache.row_bytes`)."""
    with synchronous():
        return row_bytes(packed.source(), plan.n_problems, plan.feature_map)


def count_labels(packed):
    """Per partition of a part, ``(classes, counts, weighted classes)`` (empty arrays for none)."""
    with synchronous():
        return packed.source().label_counts(allow_empty=True, merged=False)


def train_part(plan, packed):
    """Fit the out-of-core engine on one part: ``(W, primal, dual, passes, seconds, warnings,
    dual sums)``, the last per problem ``(sum alpha, sum D alpha^2)`` of the part's certified duals."""
    start = time.perf_counter()
    with synchronous():
        result = fit_stream(packed.source(), plan, clock_start=start)
    primal = np.array([c.primal for c in result.certificates])
    dual = np.array([c.dual for c in result.certificates])
    messages = [] if result.converged else [unconverged_message(plan, result.certificates, result.converged)]
    seconds = time.perf_counter() - start
    return result.W, primal, dual, int(result.passes), seconds, messages, result.dual_sums


class Part:
    """A part's rows, labels, costs and dual variables, kept in its worker's memory.

    ``Y``, ``cost``, ``upper``, ``diag``, ``qd`` and ``alpha`` are
    ``(problems, rows)``; ``qd`` holds ``sigma ||[x_i, b]||^2 + D_ii``.
    """

    def __init__(self, rows, Y, cost, squared, bias, sigma, n_features):
        self.rows, self.Y, self.cost = rows, Y, cost
        self.squared, self.bias, self.sigma, self.n_features = squared, bias, sigma, n_features
        self.upper, self.diag = upper_and_diag_arrays(cost, squared)
        sq = np.empty(cost.shape[1])
        row_sqnorms(rows, bias, sq)
        self.qd = sigma * sq[None, :] + self.diag
        self.alpha = np.zeros_like(cost)
        self.update = None
        self.cols = touched_columns(rows, bias, n_features)

    @property
    def n_rows(self):
        return self.cost.shape[1]

    def with_alpha(self, alpha, update):
        new = object.__new__(Part)
        new.__dict__.update(self.__dict__)
        new.alpha, new.update = alpha, update
        return new


def load_part(packed, plan, sigma, n_features):
    """Read a part's partitions on this worker: a :class:`Part` with ``alpha = 0``, or, once they
    pass ``plan.cache_bytes`` (counted as the row cache stores rows), a
    :class:`~.cocoa_local.StreamingPart` that reads them every round."""
    source = packed.source()
    blocks, held = [], 0
    with synchronous():
        for p in range(source.n_partitions):
            block = source.load(p)
            held += _stored(block, plan.n_problems)
            if held > plan.cache_bytes:
                del blocks, block
                return StreamingPart(source, plan, sigma, n_features)
            if block.n_rows > 0:
                blocks.append(block)
    if not blocks:
        empty = np.zeros((plan.n_problems, 0))
        return Part(as_kernel_rows(np.zeros((0, 1))), empty, empty, plan.squared, 0.0, sigma, n_features)
    if any(sp.issparse(b.X) for b in blocks):
        X = sp.vstack([sp.csr_matrix(b.X) for b in blocks], format="csr")
    else:
        X = np.vstack([b.X for b in blocks])
    y = np.concatenate([b.y for b in blocks])
    weight = np.concatenate([b.sample_weight for b in blocks])
    y_index = class_index(
        plan.classes, y,
        lambda label: (
            f"label {label!r} is not among the classes {plan.classes.tolist()} counted before training; "
            "the collection changed between reads."
        ),
    )  # fmt: skip
    rows = kernel_rows(X, plan.feature_map)
    cost = plan.costs[:, y_index] * weight
    return Part(rows, plan.signs[:, y_index], cost, plan.squared, plan.bias, sigma, n_features)


def _stored(block, k):
    """Bytes ``block``'s rows take in a row cache (:func:`~.cache.stored_bytes`)."""
    X = block.X
    if sp.issparse(X):
        return stored_bytes(block.n_rows, X.nnz, k, X.dtype, True)
    return stored_bytes(block.n_rows, X.size, k, X.dtype, False)


def local_round(part, W, passes, seed, version):
    """A part's CoCoA+ round at ``W``: :func:`cocoa_round` for a part in memory, one read of its
    partitions for a :class:`~.cocoa_local.StreamingPart` (at its ``version``); the part after it."""
    if isinstance(part, StreamingPart):
        part.run_round(W, version)
        return part
    return cocoa_round(part, W, passes, seed)


def cocoa_round(part, W, passes, seed):
    """Certificate sums of ``part`` at ``W``, then ``passes`` local DCD passes: the new part.

    ``part.update`` of the result is ``(dW, sums)``: the part's change of
    ``W`` and, per problem, ``(loss sum at W, sum alpha, sum D alpha^2)``.
    """
    W = widened(W, part.n_features + 1)
    k = W.shape[0]
    alpha = part.alpha.copy()  # the input part stays as it was: the task can be retried
    sums = np.zeros((k, 3))
    dW = np.zeros_like(W)
    for c in range(k):
        if part.n_rows == 0:
            continue
        w = np.ascontiguousarray(W[c], dtype=np.float64)
        sums[c, 0] = weighted_loss_sum(part.rows, part.Y[c], part.cost[c], w, part.bias, part.squared)
        sums[c, 1] = alpha[c].sum()
        sums[c, 2] = float(np.dot(part.diag[c], alpha[c] * alpha[c]))
        index = np.flatnonzero(part.cost[c] > 0.0).astype(np.int64)
        v = w.copy()
        a = alpha[c].copy()
        problem = ProblemArrays(part.Y[c], part.upper[c], part.diag[c], part.qd[c])
        shrinking = Shrinking(index.shape[0], np.inf, -np.inf)
        rng_state = make_state(seed + c)
        dcd_passes(part.rows, problem, index, a, v, part.bias, passes, 0.0, shrinking, rng_state, part.sigma)
        alpha[c] = a
        dW[c] = (v - w) / part.sigma
    change = dW if part.cols is None else Change(part.cols, dW[:, part.cols], dW.shape[1])
    return part.with_alpha(alpha, (change, sums))


def update_of(part):
    """A part's ``(change of W, certificate sums, bytes moved between workers so far)``: a leaf
    of CoCoA+'s tree."""
    change, sums = part.update
    return change, sums, 0


class Change:
    """A change of ``W`` on some of its columns only: ``values[:, i]`` is column ``cols[i]``'s
    (``width`` columns in all).  What a part whose rows touch few of the columns sends up
    CoCoA+'s tree, and the part of ``w`` it is sent: bytes in proportion to its columns."""

    def __init__(self, cols, values, width):
        self.cols, self.values, self.width = cols, values, int(width)

    @property
    def nbytes(self):
        return self.cols.nbytes + self.values.nbytes

    def dense(self):
        out = np.zeros((self.values.shape[0], self.width))
        out[:, self.cols] = self.values
        return out


def touched_columns(rows, bias, n_features):
    """The columns of ``W`` a part's rows touch (the bias's too), int64 and sorted; None when
    more than a third of them, where sending whole vectors costs about as much."""
    if not isinstance(rows, tuple) or len(rows) != 3:  # dense rows (or a feature map's): all
        return None
    cols = np.unique(rows[1])
    if bias != 0.0:
        cols = np.append(cols, n_features)
    cols = cols.astype(np.int64)
    return cols if 3 * cols.size <= n_features + 1 else None


def widened(W, width):
    """``W`` as a dense ``(k, width)`` array (zeros outside a :class:`Change`'s columns)."""
    return W.dense() if isinstance(W, Change) else W


def narrow(W, cols):
    """The columns ``cols`` of ``W``, as a :class:`Change` (run where ``W`` is: what the part
    whose rows touch them fetches)."""
    return Change(cols, W[:, cols], W.shape[1])


def nbytes_of(change):
    return change.nbytes


def add_changes(first, second):
    """The sum of two changes of ``W``, dense or :class:`Change`; a :class:`Change` while the
    union of their columns stays under a third of ``W``'s."""
    if isinstance(first, Change) and isinstance(second, Change):
        cols = np.union1d(first.cols, second.cols)
        if 3 * cols.size <= first.width:
            values = np.zeros((first.values.shape[0], cols.size))
            values[:, np.searchsorted(cols, first.cols)] += first.values
            values[:, np.searchsorted(cols, second.cols)] += second.values
            return Change(cols, values, first.width)
    return widened(first, None) + widened(second, None)


def part_weights(part):
    """``(sum_i alpha_i y_i [x_i, b] per problem, version)`` of a part: its exact share of ``W``, and
    the version its next round must name (:class:`~.cocoa_local.StreamingPart`; 0 in memory)."""
    if isinstance(part, StreamingPart):
        return part.weights()
    W = np.zeros((part.cost.shape[0], part.n_features + 1))
    for c in range(W.shape[0]):
        if part.n_rows:
            add_weighted_rows(part.rows, part.Y[c], part.alpha[c], W[c], part.bias)
    return W, 0


def part_loss(packed, W, plan):
    """Per problem, the weighted loss sum of a part's rows at ``W`` (one read, a partition at a time)."""
    source = packed.source()
    total = np.zeros(W.shape[0])
    with synchronous():
        for p in range(source.n_partitions):
            block = source.load(p)
            if block.n_rows == 0:
                continue
            y_pm, cost = encode_block(plan, block)
            rows = kernel_rows(block.X, plan.feature_map)  # CSR for a feature map
            for c in range(W.shape[0]):
                total[c] += weighted_loss_sum(
                    rows, y_pm[c], cost[c], np.ascontiguousarray(W[c]), plan.bias, plan.squared
                )
    return total


# -- the client side -----------------------------------------------------------------------


@dataclass
class ClusterResult:
    """What a cluster fit returns: the plan with its labels, the model and its certificates."""

    plan: object
    W: np.ndarray
    certificates: list
    passes: int
    history: list
    converged: bool
    stopped: bool  # a callback stopped CoCoA+; averaging reports its gap and never warns
    messages: list  # the workers' convergence warnings (averaging)
    parts: list = None  # per part: its worker, its partitions (numbers in the collection), its rows


def fit_cluster(client, source, plan, mode, *, clock_start, on_round=None, cache_share=None):
    """Train ``plan`` (without labels yet) on ``source`` over ``client``'s workers: a :class:`ClusterResult`.

    ``mode`` is ``"average"`` or ``"cocoa"``; the parts' labels are counted
    on their workers first.  ``on_round(record)``, after every CoCoA+ round,
    stops the rounds with a true value.  ``cache_share``: ``(share, replan)`` for
    ``cache_bytes="10%"``, the share of the largest part's bytes each worker's cache gets, and
    the plan for a number of bytes (measured on the first part's worker once labels are counted).
    """
    try:
        return _fit_cluster(client, source, plan, mode, clock_start, on_round, cache_share)
    except Exception as exc:
        lost = _scheduler_lost(client, exc)
        if lost is None:
            raise
        raise lost from exc


def _fit_cluster(client, source, plan, mode, clock_start, on_round, cache_share=None):
    parts, part_ids = make_parts(client, source, plan.read_timeout)
    reads = _read_limits(plan, source, part_ids)
    counts = _gather(client, [_submit(client, count_labels, s, worker=w) for w, s in parts], reads=reads)
    plan = plan.with_labels(*merge_label_counts([c for part in counts for c in part]))
    part_counts = [merge_label_counts(part, allow_empty=True) for part in counts]
    skew = skewed_parts(part_counts, plan.classes, [w for w, _ in parts], mode)
    if skew and not any(source.held()):  # read from files every time: deal the partitions anew
        parts, part_ids, part_counts = _mixed_parts(source, parts, part_ids, counts, plan.classes)
        skew = skewed_parts(part_counts, plan.classes, [w for w, _ in parts], mode)
        reads = _read_limits(plan, source, part_ids)
    if cache_share is not None:
        share, replan = cache_share
        worker, packed = parts[0]
        per_row = _gather(client, [_submit(client, part_row_bytes, packed, plan, worker=worker)], [worker])[0]
        largest = max(int(np.sum(c[1])) for c in part_counts)
        plan = replan(share_bytes(share, largest, per_row)).with_labels(
            plan.classes, plan.counts, plan.weighted_classes
        )
    if mode == "average":
        rows = [int(np.sum(c[1])) for c in part_counts]
        W, primal, dual, history, messages = fit_average(client, parts, rows, plan, clock_start)
        passes = max(r.get("passes", 0) for r in history)
        converged, stopped = True, True  # the average's gap is reported (and warned of), not a target
    else:
        width = plan.model_width(source.n_features)
        W, primal, dual, passes, history, converged, stopped, local = fit_cocoa(
            client, parts, plan, width, clock_start, on_round=on_round, reads=reads
        )
        messages = []
    messages = ([skew] if skew else []) + messages
    certificates = [
        check_gap(Certificate(primal=float(p), dual=float(d)), f"class {label!r}")
        for p, d, label in zip(primal, dual, plan.labels, strict=True)
    ]
    placement = _placement(parts, part_ids, part_counts, source)
    if mode == "cocoa":
        for entry, stats in zip(placement, local, strict=True):
            entry.update(stats)
    return ClusterResult(plan, W, certificates, passes, history, converged, stopped, messages, placement)


def _placement(parts, part_ids, part_counts, source):
    """``cluster_parts_``: per part, its worker, its partitions' numbers and its rows."""
    return [
        {"worker": w, "partitions": [source.partition_id(i) for i in ids], "rows": int(np.sum(counts[1]))}
        for (w, _), ids, counts in zip(parts, part_ids, part_counts, strict=True)
    ]


def _mixed_parts(source, parts, part_ids, counts, classes):
    """Parts dealt anew so that their label mixes are alike: ``(parts, part ids, part counts)``.

    The partitions, sorted by their share of the first class (ties by the next), are dealt to
    the parts back and forth (0, 1, ..., K-1, K-1, ..., 0, ...), so each part gets partitions
    from every stretch of the order.  For data read from files on every read, where a
    partition's worker does not matter."""
    workers = [w for w, _ in parts]
    ids = [p for part in part_ids for p in part]
    per_partition = [c for part in counts for c in part]
    order = np.lexsort(class_shares(per_partition, classes).T[::-1])  # by the first class's share, ...
    K = len(workers)
    dealt = [[] for _ in range(K)]
    for rank, i in enumerate(order):
        lap, place = divmod(rank, K)
        dealt[place if lap % 2 == 0 else K - 1 - place].append(i)
    new_ids = [sorted(ids[i] for i in part) for part in dealt]
    new_parts = [(w, Packed(source.subset(part))) for w, part in zip(workers, new_ids, strict=True)]
    position = {p: i for i, p in enumerate(ids)}
    new_counts = [
        merge_label_counts([per_partition[position[p]] for p in part], allow_empty=True) for part in new_ids
    ]
    return new_parts, new_ids, new_counts


def _read_limits(plan, source, part_ids):
    """``reads`` for :func:`_gather`: the seconds a part may take to read its partitions one after
    the other, and their numbers; None without ``plan.read_timeout``."""
    if plan.read_timeout is None:
        return None
    seconds = plan.read_timeout * max(len(ids) for ids in part_ids)
    return seconds, [[source.partition_id(i) for i in ids] for ids in part_ids]


def fit_average(client, parts, rows, plan, clock_start):
    """The parts' models averaged, weighted by ``rows``: ``(W, primal, dual, history, messages)``."""
    # Every part draws its seeds from the fit's seed, as a fit with random_state=plan.seed does.
    part_seed = int(np.random.RandomState(plan.seed).randint(np.iinfo(np.int64).max, dtype=np.int64))
    part_plan = plan.replace(seed=part_seed, calibration_seed=None)
    futures = [_submit(client, train_part, part_plan, source, worker=worker) for worker, source in parts]
    results = _gather(client, futures)
    sent = 3 * sum(packed.nbytes for _, packed in parts)  # counting labels, training, certifying
    received = sum(r[0].nbytes for r in results)
    rows = np.asarray(rows, dtype=float)
    share = rows / rows.sum()
    W = sum(s * r[0] for s, r in zip(share, results, strict=True))
    half_sq = 0.5 * np.einsum("ij,ij->i", W, W)
    # The duals' own weights (a part's model may be an earlier, better pass's) and their sums.
    dual, scales = combined_dual([r[6][0] for r in results], [r[6][1] for r in results], share, plan.squared)
    losses = _gather(
        client,
        [_submit(client, part_loss, source, W, plan, worker=worker) for worker, source in parts],
    )
    primal = half_sq + np.sum(losses, axis=0)
    history = [
        {
            "part": k,
            "worker": worker,
            "partitions": source.n_partitions,
            "rows": int(n),
            "random_state": plan.seed,
            "passes": r[3],
            "seconds": r[4],
            "primal": float(np.sum(r[1])),
            "dual": float(np.sum(r[2])),
            "dual_scale": scales[:, k].tolist(),
        }
        for k, ((worker, source), n, r) in enumerate(zip(parts, rows, results, strict=True))
    ]
    gap = _relative_gap(primal, dual)
    history.append(
        {
            "part": "average",
            "seconds": time.perf_counter() - clock_start,
            "bytes_sent": sent + W.nbytes * len(parts),
            "bytes_received": received + sum(np.asarray(x).nbytes for x in losses),
            "primal": float(primal.sum()),
            "dual": float(dual.sum()),
            "gap": float(gap.max()),
        }
    )
    messages = sorted({f"on a worker: {m}" for r in results for m in r[5]})
    if gap.max() > plan.tol:
        messages.append(
            f"cluster='average' certified a relative duality gap of {gap.max():.3g} for the averaged "
            f"model, above tol={plan.tol:g}: the average of the parts' models is not the optimum of "
            "all the rows. Use cluster='cocoa', which trains to tol."
        )
    return W, primal, dual, history, messages


# Parts whose shares of a class differ by more than this are "skewed" (:func:`skewed_parts`).
SKEW = 0.25


def class_shares(counts, classes):
    """``(len(counts), len(classes))``: each ``(labels, counts, _)``'s share of each class."""
    shares = np.zeros((len(counts), len(classes)))
    column = {label: j for j, label in enumerate(classes.tolist())}
    for i, (labels, n, _) in enumerate(counts):
        total = max(int(np.sum(n)), 1)
        for label, count in zip(labels.tolist(), np.asarray(n).tolist(), strict=True):
            shares[i, column[label]] = count / total
    return shares


def skewed_parts(part_counts, classes, workers, mode):
    """The warning for parts whose label mixes differ strongly (None if they are alike): a part
    without a class that is 1% of the rows or more, or a class whose share differs by more than
    :data:`SKEW` between parts.
    Each part's model (averaging) or local steps (CoCoA+) then pull far from the others', and
    the fit needs far more rounds, or averages to a poor model."""
    if len(part_counts) < 2:
        return None
    shares = class_shares(part_counts, classes)
    spread = shares.max(axis=0) - shares.min(axis=0)
    rows = np.array([float(np.sum(c[1])) for c in part_counts])
    overall = rows @ shares / max(rows.sum(), 1.0)
    missing = (shares.min(axis=0) == 0.0) & (overall >= 0.01)
    if spread.max() <= SKEW and not missing.any():
        return None
    c = int(np.argmax(np.where(missing, np.inf, spread)))
    lo, hi = int(np.argmin(shares[:, c])), int(np.argmax(shares[:, c]))
    return (
        f"the cluster's parts hold different label mixes: class {classes[c]!r} is "
        f"{shares[lo, c]:.0%} of the rows on worker {workers[lo]} and {shares[hi, c]:.0%} on "
        f"{workers[hi]}. cluster={mode!r} then needs many more rounds or returns a worse model. "
        "Shuffle the rows before fitting (for a DataFrame: ddf.sample(frac=1, random_state=0), "
        "or sort by a random key) so that every partition mixes the classes."
    )


# Coordinate-descent sweeps of :func:`combined_dual`'s small quadratic (K variables per problem).
_SCALE_SWEEPS = 200


def combined_dual(Ws, dual_sums, share, squared):
    """The best dual value of the union of the parts' dual variables, each part's scaled by its
    own ``t_k``: ``(dual per problem, t (problems, K))``.

    Part ``k``'s certified duals ``alpha_k`` (on disjoint rows) have ``sum_i alpha_i y_i x_i = W_k``,
    ``A_k = sum alpha`` and ``E_k = sum D_ii alpha_i^2`` (``dual_sums[k]``, per problem), so the
    union scaled by ``t`` has dual value

        D(t) = sum_k t_k A_k - 1/2 ||sum_k t_k W_k||^2 - 1/2 sum_k t_k^2 E_k,

    feasible for ``0 <= t_k`` (and ``t_k <= 1`` for the hinge, whose ``alpha <= C``): a concave
    quadratic in ``K`` variables, maximised here by exact coordinate steps from ``t = share``
    (the shares' point, whose ``w`` is the average: the bound :func:`fit_average` gave before).
    Any feasible ``t`` bounds the optimum from below, so the gap of the averaged model against it
    is a true bound; at ``t = share`` that gap is about ``1 - 1/K`` whatever the average's
    quality, at the best ``t`` it tracks the average's true distance to the optimum.
    """
    K, problems = len(Ws), Ws[0].shape[0]
    upper = np.inf if squared else 1.0
    duals, scales = np.empty(problems), np.empty((problems, K))
    for c in range(problems):
        V = np.array([W[c] for W in Ws])  # (K, D)
        A = np.array([sums[c, 0] for sums in dual_sums])
        Q = V @ V.T + np.diag([sums[c, 1] for sums in dual_sums])
        t = np.minimum(np.asarray(share, dtype=float), upper)
        for _ in range(_SCALE_SWEEPS):
            for k in range(K):
                if Q[k, k] > 0.0:
                    t[k] = min(max(t[k] + (A[k] - Q[k] @ t) / Q[k, k], 0.0), upper)
        duals[c] = float(t @ A - 0.5 * t @ Q @ t)
        scales[c] = t
    return duals, scales


def _relative_gap(primal, dual):
    return np.where(primal != 0.0, (primal - dual) / np.abs(np.where(primal != 0.0, primal, 1.0)), 0.0)


def fit_cocoa(client, parts, plan, n_features, clock_start, on_round=None, reads=None):
    """CoCoA+ rounds to the relative gap ``plan.tol``, at most ``plan.max_iter`` of ``plan.inner_iter``
    local passes: ``(W, primal, dual, rounds, history, converged, stopped)``."""
    k, tol, max_iter, passes, seed = plan.n_problems, plan.tol, plan.max_iter, plan.fixed_passes, plan.seed
    sigma = float(len(parts))
    placed = [worker for worker, _ in parts]

    def load(j, worker):
        source = parts[j][1]
        return _submit(client, load_part, source, plan, sigma, n_features, worker=worker)

    states = [load(j, worker) for j, worker in enumerate(placed)]
    _wait(client, states, placed, reads)  # the parts' one read (up to cache_bytes of each)
    versions = [0] * len(states)  # rounds each part has done: a part read every round checks it
    W = np.zeros((k, n_features + 1))
    w_bytes = W.nbytes
    history, converged, stop, recoveries = [], False, False, 0
    primal = dual = np.full(k, np.nan)
    rounds = 0
    # w lives on the workers: the parts' changes are added in a tree there, the new w is made at
    # the root and fetched from it by the other parts' workers; the client gets the certificate.
    W_at = client.scatter(W, workers=[placed[0]], hash=False, timeout=_SCATTER_SECONDS)
    sent = w_bytes
    cols, fetched = _touched(client, states, placed, k)
    while rounds < max_iter:
        start = time.perf_counter()
        try:
            # A part whose rows touch few columns fetches those of w only (sparse data).
            views = [W_at if c is None else _submit(client, narrow, W_at, c, worker=placed[0]) for c in cols]
            new_states = [
                _submit(client, local_round, state, views[j], passes, seed + 1_000_003 * rounds + 7919 * j,
                        versions[j], worker=placed[j])
                for j, state in enumerate(states)
            ]  # fmt: skip
            updates = [_submit(client, update_of, s, worker=placed[j]) for j, s in enumerate(new_states)]
            root = tree_sum(client, updates, placed, add=add_updates)
            next_W = _submit(client, apply_update, W_at, root, worker=placed[0])
            certify = _submit(client, round_sums, W_at, root, worker=placed[0])
            half_sq, sums, tree_bytes = _gather(client, [certify], placed)[0]
        except Exception as exc:  # noqa: BLE001 - a lost worker shows as many kinds of error
            if not _lost_worker(client, states, placed) or recoveries >= _MAX_RECOVERIES:
                raise
            recoveries += 1
            states, W, versions = _recover(client, states, placed, load)
            cols, fetched = _touched(client, states, placed, k)
            W_at = client.scatter(W, workers=[placed[0]], hash=False, timeout=_SCATTER_SECONDS)
            sent += w_bytes
            history.append(
                {"round": rounds, "recovered": repr(exc)[:200], "seconds": time.perf_counter() - clock_start}
            )
            continue
        rounds += 1
        primal = half_sq + sums[:, 0]
        dual = sums[:, 1] - half_sq - 0.5 * sums[:, 2]
        gap = _relative_gap(primal, dual)
        record = {
            "round": rounds,
            "seconds": time.perf_counter() - clock_start,
            "round_seconds": time.perf_counter() - start,
            "bytes_sent": sent,
            "bytes_received": half_sq.nbytes + sums.nbytes,
            # the tree's edges carry changes of w (counted on the way), and every part's worker but
            # the root's fetches its columns of the new w (all of them, unless its rows touch few)
            "bytes_between_workers": int(tree_bytes)
            + sum(w_bytes if f is None else f for j, f in enumerate(fetched) if placed[j] != placed[0]),
            "primal": float(primal.sum()),
            "dual": float(dual.sum()),
            "gap": float(gap.max()),
        }
        sent = 0
        history.append(record)
        converged = gap.max() <= tol
        stop = on_round is not None and on_round(record)
        if converged or stop or rounds == max_iter:
            break  # W_at is the certified one
        W_at, states = next_W, new_states
        versions = [v + 1 for v in versions]
    W = _gather(client, [W_at], placed)[0]
    local = _gather(client, [_submit(client, part_stats, s, worker=placed[j]) for j, s in enumerate(states)])
    return W, primal, dual, rounds, history, converged, bool(stop), local


def _touched(client, states, placed, k):
    """Per part, a future of the columns of ``W`` its rows touch (None: all, or too many to send
    apart), and the bytes of those columns of ``W`` (None: the whole ``W``)."""
    cols = [_submit(client, touched_of, s, worker=placed[j]) for j, s in enumerate(states)]
    sizes = [_submit(client, _size_or_none, c, worker=placed[j]) for j, c in enumerate(cols)]
    counts = _gather(client, sizes)
    cols = [None if n is None else c for c, n in zip(cols, counts, strict=True)]
    return cols, [None if n is None else n * (8 + 8 * k) for n in counts]


def touched_of(part):
    """A part's :func:`touched_columns` (None for a part read every round: it fetches all of ``w``)."""
    return getattr(part, "cols", None)


def _size_or_none(cols):
    return None if cols is None else int(cols.size)


def part_stats(part):
    """``cluster_parts_``'s entries of a CoCoA+ part: whether it is read every round, and the
    most bytes its row memory allocated (the rows themselves, for a part held in memory)."""
    if isinstance(part, StreamingPart):
        return {"out_of_core": True, "memory_bytes": int(part.stats["memory_bytes"])}
    return {"out_of_core": False, "memory_bytes": int(_rows_nbytes(part.rows))}


def _rows_nbytes(rows):
    arrays = rows if isinstance(rows, tuple) else (rows,)
    return sum(a.nbytes for a in arrays if isinstance(a, np.ndarray))


def add_updates(first, second):
    """Two ``(change of W, certificate sums, bytes moved)`` added: a node of CoCoA+'s tree, on the
    worker of ``first``; ``second`` came from another worker (its change and sums moved)."""
    moved = first[2] + second[2] + second[0].nbytes + second[1].nbytes
    return add_changes(first[0], second[0]), first[1] + second[1], moved


def apply_update(W, update):
    """The next round's ``W``: this one plus the sum of the parts' changes (on the tree's root)."""
    return W + widened(update[0], W.shape[1])


def round_sums(W, update):
    """What the client needs to certify ``W``: ``(1/2 ||W_c||^2, sums, bytes moved up the tree)``."""
    return 0.5 * np.einsum("ij,ij->i", W, W), update[1], update[2]


def _lost_worker(client, states, placed):
    """Whether a part's worker is gone (rather than a task failing on its own)."""
    alive = set(_workers(client))
    return any(worker not in alive for worker in placed) or any(
        s.status in ("lost", "cancelled") for s in states
    )


def _held(client, future):
    """Whether a worker holds ``future``'s result (false for a cancelled or forgotten one)."""
    if future.status in ("error", "cancelled", "lost"):
        return False
    try:
        return bool(client.who_has([future]).get(future.key))
    except Exception:  # noqa: BLE001 - the scheduler forgot it meanwhile
        return False


def _recover(client, states, placed, load):
    """Parts of lost workers read again (``alpha = 0``) on live ones; ``W`` rebuilt from all alphas.

    The scheduler may learn of a death after the client does: the parts are
    checked again, and their weights gathered, up to three times.
    """
    fresh = set()  # parts read again here: pending, not lost
    for attempt in range(3):
        alive = _workers(client)
        if not alive:
            raise RuntimeError("every Dask worker is gone; the cluster fit cannot go on.")
        for j, state in enumerate(states):
            if j not in fresh and (placed[j] not in alive or not _held(client, state)):
                placed[j] = alive[j % len(alive)]
                states[j] = load(j, placed[j])
                fresh.add(j)
        try:
            shares = _gather(
                client,
                [_submit(client, part_weights, s, worker=placed[j]) for j, s in enumerate(states)],
                placed,
            )
            return states, np.sum([w for w, _ in shares], axis=0), [v for _, v in shares]
        except Exception:  # noqa: BLE001 - another part was lost meanwhile: look again
            if attempt == 2:
                raise
            time.sleep(_POLL_SECONDS)
    raise AssertionError("unreachable")


# -- the primal Newton solver on a cluster (dual=False) --------------------------------------


def part_sums(packed, plan, W, S, todo):
    """The :class:`~.primal.Sums` of one part's rows at ``W + S`` (one read of its partitions)."""
    from .primal import stream_read

    with synchronous():
        return stream_read(packed.source(), plan)(W, S, todo)


def add_sums(first, second):
    """Two parts' sums added: a node of the tree reduction, run on a worker."""
    return first.add(second)


def tree_sum(client, futures, workers, add=add_sums):
    """The sum of ``futures`` (each on the worker of the same index) added in pairs on the workers
    by ``add``, ``ceil(log2 K)`` levels deep: a future of the root, on ``workers[0]``."""
    level = list(zip(futures, workers, strict=True))
    while len(level) > 1:
        paired = []
        for i in range(0, len(level) - 1, 2):
            (first, worker), (second, _) = level[i], level[i + 1]
            paired.append((_submit(client, add, first, second, worker=worker), worker))
        level = paired + level[len(paired) * 2 :]  # an odd one out moves up a level as it is
    return level[0][0]


def fit_primal_cluster(client, source, plan, *, clock_start, on_pass=None):
    """``dual=False`` on a cluster: every Newton step is one read of every part on its worker,
    the parts' sums reduced on the workers; ``(plan with labels, PrimalResult)``.

    Exact as on one machine (the sums are the data's sums), and what moves per step is ``W`` and
    ``S`` out to each part and one :class:`~.primal.Sums` (``O(k D^2)`` floats) per tree edge.
    """
    from .primal import solve_primal

    parts, part_ids = make_parts(client, source, plan.read_timeout)
    reads = _read_limits(plan, source, part_ids)
    counts = _gather(client, [_submit(client, count_labels, s, worker=w) for w, s in parts], reads=reads)
    plan = plan.with_labels(*merge_label_counts([c for part in counts for c in part]))
    part_counts = [merge_label_counts(part, allow_empty=True) for part in counts]
    moved = {"bytes_sent": 0, "bytes_received": 0}

    def read(W, S, todo):
        futures = [_submit(client, part_sums, packed, plan, W, S, todo, worker=w) for w, packed in parts]
        _wait(client, futures, [w for w, _ in parts], reads)
        root = tree_sum(client, futures, [w for w, _ in parts])
        total = _gather(client, [root], [w for w, _ in parts])[0]
        moved["bytes_sent"] += sum(packed.nbytes + W.nbytes + S.nbytes for _, packed in parts)
        moved["bytes_received"] += total.v.nbytes + total.hessian.nbytes + total.trial.nbytes
        return total

    def on_read(records, W):
        for record in records:
            record.update(moved, parts=len(parts))
        return on_pass is not None and on_pass(records, W)

    width = plan.model_width(source.n_features)
    result = solve_primal(read, plan, width, clock_start=clock_start, on_pass=on_read, source=source)
    result.parts = _placement(parts, part_ids, part_counts, source)
    return plan, result

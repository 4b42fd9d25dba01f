"""The one entry of every fit: :func:`fit`, and the choice of method it makes.

An estimator validates its parameters, builds one
:class:`~.problem.FitPlan`, turns its input into :class:`MemoryData` or a
:class:`~.source.DaskSource`, and calls :func:`fit`, which returns one
:class:`~.result.FitResult`.  Everything between is decided here:

- **where** (:func:`~.choice.where_to_fit`, :func:`~.choice.streams`): on a cluster
  (``plan.cluster``, ``"auto"`` resolved to the active client's cluster or this process, its method
  :func:`~.choice.cluster_method`), streaming or in memory;
- **primal or dual** (:func:`~.choice.use_primal`): the primal Newton solver (:mod:`.primal`) with
  ``dual=False``, or with ``"auto"`` on tall data where it applies; the dual solvers otherwise;
- **which schedule**: the plan's, ``"streamsvm"`` for ``"auto"``
  (:data:`.schedules.TRAINERS`);
- the reads around the solve: the one that learns
  :class:`~dask_streamsvm.features.Standardize`'s scales, the one that
  counts the classes (the primal solver's first Newton read where it
  can be: :func:`first_read_trains`; for text, the dual solvers' first
  training read: :func:`_fit_stream_counting`), a share of memory resolved
  once the rows are counted, and Platt's sigmoids (cross-fitted folds in
  memory, held-out rows streaming).
- what a fit stopped before any read certified a trained model returns:
  the trained model, uncertified (:meth:`~.result.FitResult.prefer_trained`).

The one path of a fit::

    estimator.fit -> where_to_fit -> check -> fit
                                  -> _fit_cluster -> cluster.fit_cluster / fit_(primal|products)_cluster
                                  -> _fit_memory  -> memory.solve_problems / primal.solve_primal
                                  -> _fit_stream  -> schedules.fit_stream / primal.solve_primal
    estimator.partial_fit -> fit_partial -> schedules.fit_stream (one pass)
"""

import time
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from .choice import cluster_method, first_read_trains, streams, use_primal, where_to_fit
from .cluster import CLUSTER_MODES, fit_cluster, fit_primal_cluster, fit_products_cluster, resolve_client
from .cluster.moments import prepared_scaler
from .cluster.runtime import cancelled_on_error, scheduler_lost
from .data.labels import LabelTally, UnseenClass, count_labels_of
from .data.reader import read_blocks
from .data.spill import check_spill_dir
from .dual.memory import solve_problems
from .dual.partial import OnePassSBM
from .dual.schedules import fit_stream, memory_blocks
from .plan.calibration import N_FOLDS, folds, platt_sigmoids
from .plan.layout import kernel_rows
from .plan.problem import (
    CACHE_POLICIES,
    LOGISTIC_LOSS,
    LOSSES,
    SOLVERS,
    STREAMING_SOLVERS,
    SVM_LOSSES,
    column_max_abs,
    cs_model,
    linear_scores,
)
from .plan.sizes import CacheShare, row_bytes, share_bytes
from .primal.newton import (
    band_share,
    check_width,
    first_read,
    memory_read,
    memory_start,
    sample_rows,
    solve_primal,
    stream_read,
    warm_start,
)
from .store.checkpoint import Checkpoints, data_fingerprint
from .termination import sigterm_unwinds

__all__ = [
    "CACHE_POLICIES", "CLUSTER_MODES", "LOGISTIC_LOSS", "LOSSES", "SOLVERS", "SVM_LOSSES", "CacheShare",
    "Checkpoints", "MemoryData",
    "check", "check_partial", "data_fingerprint", "fit", "fit_partial", "streams", "use_primal",
    "where_to_fit",
]  # fmt: skip

# The schedule a streaming fit runs when the plan says "auto".
DEFAULT_STREAMING = STREAMING_SOLVERS[0]
_INT64_MAX = np.iinfo(np.int64).max


@dataclass
class MemoryData:
    """In-memory training rows, validated: ``X`` (2-D array or CSR), labels ``y``, ``sample_weight``,
    and the rows ``on_invalid="skip"`` dropped before (counted in the history)."""

    X: object
    y: np.ndarray
    sample_weight: np.ndarray
    skipped: int = 0


def check(plan, *, out_of_core, input_name, checkpointing=False, resume=False, validating=False, client=None):
    """What ``plan`` cannot do with this input, as a ValueError, before any read; the cluster's
    client for a cluster fit (``client`` or the active one), else None.

    ``checkpointing``: a ``checkpoint_dir`` is set; ``validating``: ``validation_data`` is.
    ``plan.spill_dir`` is checked as ``checkpoint_dir`` is (:func:`~.spill.check_spill_dir`).
    """
    check_spill_dir(plan.spill_dir)
    streaming = streams(plan, out_of_core)
    if (checkpointing or resume) and (plan.cluster is not None or not streaming):
        raise ValueError(
            "checkpoint_dir and resume=True apply to the streaming solvers (solver='streamsvm', 'sbm' "
            "or 'bm', or 'auto' on a Dask collection or path) without cluster; this fit is "
            f"solver={plan.solver!r}, cluster={plan.cluster!r} on {input_name}."
        )
    if resume and not checkpointing:
        raise ValueError("resume=True needs checkpoint_dir, the directory the checkpoint is in.")
    if plan.dual is False:
        use_primal(plan, 0, 0, streaming=streaming, checkpointing=checkpointing)
    if plan.scaler is not None:
        _check_scaler(plan, validating)
    if plan.cluster is None:
        return None
    unsupported = {
        "multi_class='crammer_singer'": plan.crammer_singer,
        "probability=True": plan.probability,
        "validation_data": validating,
    }
    for what, used in unsupported.items():
        if used:
            raise ValueError(f"cluster={plan.cluster!r} does not support {what} yet; use cluster=None.")
    return resolve_client(client)


def check_partial(plan, *, checkpointing=False):
    """What ``partial_fit`` cannot do with ``plan``: a clear error, before any read (``spill_dir``
    is checked as in :func:`check`, though one pass writes no spill)."""
    check_spill_dir(plan.spill_dir)
    if isinstance(plan.class_weight, str):
        raise ValueError(
            "class_weight='balanced' needs the class counts of the whole stream, which partial_fit "
            "does not see; pass a dict of weights or compute them first."
        )
    if plan.probability:
        raise ValueError("probability=True is not supported by partial_fit; use fit.")
    if plan.scaler is not None:
        raise ValueError(
            "feature_map=Standardize() learns the scales from the whole training data, which "
            "partial_fit does not see; scale the features first (or use fit)."
        )
    if checkpointing:
        raise ValueError(
            "partial_fit writes no checkpoints: the model after each call is its whole state. Save it "
            "with save() (or pickle) between calls, and leave checkpoint_dir=None."
        )


def _check_scaler(plan, validating):
    """What ``feature_map=Standardize()`` cannot train with: a clear error, before any read."""
    if validating:
        raise ValueError(
            "feature_map=Standardize() does not support validation_data yet (its rows would be scored "
            "before scaling); score a held-out set after the fit instead."
        )
    if plan.scaler.with_mean is True and plan.bias == 0.0:
        raise ValueError(
            "Standardize(with_mean=True) with fit_intercept=False: centring the features adds an "
            "intercept to the raw features' model. Use with_mean='auto' (no centring without an "
            "intercept) or fit_intercept=True."
        )


def fit(data, plan, hooks, *, client=None, checkpoints=None, resume=False, clock_start=None):
    """Train ``plan`` on ``data``: one :class:`~.result.FitResult`, its ``plan`` with the labels.

    Parameters
    ----------
    data : :class:`MemoryData` or :class:`~.source.DaskSource`
    plan : :class:`~.problem.FitPlan` without labels (:func:`check` passed)
    hooks : the estimator's pass hooks (``start``, ``on_pass``, ``on_block``, ``memory``...)
    client : distributed.Client, for ``plan.cluster``
    checkpoints, resume : a :class:`~.checkpoint.Checkpoints`, and whether to go on from it
    clock_start : ``time.perf_counter()`` at the start of the fit (None: now)

    SIGTERM unwinds the fit as Ctrl-C would, so that it removes its spill and
    temporary files, then ends the process (:mod:`.termination`).
    """
    clock_start = time.perf_counter() if clock_start is None else clock_start
    with sigterm_unwinds():
        if plan.cluster is not None:
            result = _fit_cluster(data, plan, hooks, client, clock_start)
        elif isinstance(data, MemoryData):
            result = _fit_memory(data, plan, hooks, clock_start)
        else:
            result = _fit_stream(data, plan, hooks, checkpoints, resume, clock_start)
    result.stopped = result.stopped or hooks.stopped
    result.prefer_trained()
    return result


def _seeds(plan):
    """A streaming fit's seed, and Platt's held-out seed with ``probability=True``."""
    rng = check_random_state(plan.random_state)
    seed = int(rng.randint(_INT64_MAX, dtype=np.int64))
    return seed, int(rng.randint(_INT64_MAX)) if plan.probability else None


def _learned_scaler(plan, blocks, n_features):
    """A copy of ``plan.scaler`` (:class:`~dask_streamsvm.features.Standardize`) with its scales
    learned from ``blocks`` (:func:`~.cluster.moments.prepared_scaler`)."""
    return prepared_scaler(plan).learn(blocks, n_features)


def _fit_memory(data, plan, hooks, clock_start):
    """Every problem solved on in-memory rows: cross-fitted Platt folds first with ``probability``."""
    X, y, sample_weight = data.X, data.y, data.sample_weight
    scaler = None
    if plan.scaler is not None:
        scaler = _learned_scaler(plan, [X[sample_weight > 0]], X.shape[1])
        X = scaler.scale_rows(X)
    classes, counts = np.unique(y, return_counts=True)
    rng = check_random_state(plan.random_state)
    seeds = rng.randint(_INT64_MAX, size=max(classes.shape[0], 1), dtype=np.int64)
    trained = sample_weight > 0
    weighted_classes = np.unique(y[trained]) if trained.any() else classes[:0]
    primal = use_primal(plan, X.shape[0], X.shape[1], streaming=False)
    plan = plan.replace(solver="memory").with_labels(classes, counts, weighted_classes)
    hooks.start(plan)
    y_index = np.searchsorted(classes, y)
    width = plan.model_width(X.shape[1])
    if primal:
        solve = lambda weights, hooks=None: _solve_primal_memory(  # noqa: E731
            X, y_index, weights, plan, width, hooks, clock_start
        )
    else:
        rows = kernel_rows(X, plan.feature_map)
        solve = lambda weights, hooks=None: solve_problems(  # noqa: E731
            rows, y_index, weights, plan, width=width, seeds=seeds, clock_start=clock_start, hooks=hooks
        )
    platt = None
    if plan.probability:
        # libsvm's recipe: cross-fitted decision values for the sigmoid, then the model on all rows.
        fold = folds(X.shape[0], int(rng.randint(_INT64_MAX)))
        scores = None
        for f in range(N_FOLDS):
            W = solve(sample_weight * (fold != f)).W
            W = cs_model(W) if plan.crammer_singer else W
            if scores is None:
                scores = np.empty((X.shape[0], W.shape[0]))
            scores[fold == f] = linear_scores(X[fold == f], W, plan.bias, plan.feature_map)
        platt = platt_sigmoids(scores[trained], y[trained], classes)
    result = solve(sample_weight, hooks)
    if not primal and not np.all(result.converged):
        result.feature_max = column_max_abs(X[trained])  # the advice of the warning
    if data.skipped:
        for record in result.history:
            record["rows_skipped"] = data.skipped
    result.plan, result.scaler, result.platt = plan, scaler, platt
    return result


def _solve_primal_memory(X, y_index, weights, plan, width, hooks, clock_start):
    """The primal Newton solver on in-memory rows; ``hooks`` see each problem's records as the
    dual solvers give them (None: no hooks)."""
    on_pass = None
    if hooks is not None:
        per_problem = [hooks.memory(c) for c in range(plan.n_problems)]

        def on_pass(records, W):
            return any([per_problem[c](record, W[c]) for c, record in enumerate(records)])

    read = memory_read(X, y_index, weights, plan)
    start, notes = memory_start(X, y_index, weights, plan, width, clock_start)
    return solve_primal(
        read, plan, width, clock_start=clock_start, on_pass=on_pass, start=start, notes=notes,
        start_read=False,
    )


def _fit_stream(source, plan, hooks, checkpoints, resume, clock_start):
    """A streamed fit: the scales' read, the read that counts the classes, then the primal solver or
    a streaming schedule (:func:`~.schedules.fit_stream`)."""
    checkpointing = checkpoints is not None
    saved = checkpoints.load() if checkpointing and resume else None
    with source.spilling(plan.spill, plan.spill_dir):
        scaler = None
        if plan.scaler is not None:  # one read for the scales, then scaled reads
            source.scaled = True  # the rows' x . x is checked once scaled (Standardize.scale_rows)
            blocks = read_blocks(
                source, prefetch=plan.prefetch, retries=plan.retries, read_timeout=plan.read_timeout
            )
            rows = (b.X[b.sample_weight > 0] for _, b in blocks)
            scaler = _learned_scaler(plan, rows, source.n_features)
            source.row_transform = scaler.scale_rows
        primal_plan = plan.replace(solver=DEFAULT_STREAMING, seed=0, calibration_seed=None)
        result = None
        if saved is None and _trains_while_counting(source, plan, checkpointing):  # text: one read
            result = _fit_stream_counting(source, plan, hooks, clock_start)
        if result is not None:
            plan = result.plan
        else:
            labels, first = _count_classes(source, plan, primal_plan, hooks, saved, checkpointing)
            if use_primal(plan, int(np.sum(labels[1])), source.n_features, checkpointing=checkpointing):
                plan = primal_plan.with_labels(*labels)
                result = _solve_primal_stream(source, plan, hooks, first, clock_start)
            else:
                plan = _dual_plan(source, plan, labels)
                hooks.start(plan, n_partitions=source.n_partitions, cache_bytes=plan.cache_bytes or None)
                result = fit_stream(
                    source, plan, hooks, clock_start=clock_start, checkpoints=checkpoints, resume=saved
                )
    if plan.probability:  # the last read certified the model: its held-out scores are the model's
        result.platt = platt_sigmoids(result.held_scores, result.held_y, plan.classes)
    result.plan, result.scaler = plan, scaler
    return result


def _trains_while_counting(source, plan, checkpointing):
    """Whether the first read of ``source`` trains while it counts the classes
    (:func:`_fit_stream_counting`): text, whose every read parses it, for the dual solvers whatever
    the rows' count, with costs that do not depend on the counts (no ``class_weight="balanced"``)
    and no scales to learn first (their read leaves the text spilled, and the count cheap)."""
    return (
        bool(source.text)
        and plan.scaler is None
        and not checkpointing
        and not isinstance(plan.class_weight, str)
        and not use_primal(plan, _INT64_MAX, source.n_features, checkpointing=checkpointing)
    )


def _fit_stream_counting(source, plan, hooks, clock_start):
    """A streaming fit whose first read counts the classes as it trains: its result, or None.

    The classes are guessed from the first partition with rows (from then on in the spill): the
    first read trains with them and counts every block's labels (:class:`~.labels.LabelTally`).
    Once that read is whole the counts are the collection's, and the fit goes on as if counted
    before.  A label outside the guess stops the fit (None): the caller counts the classes, from
    the spill where the partitions are in it, and trains from the start.  With
    ``cache_bytes="10%"`` the rows are not known yet: the share is of the first partition's rows
    times the number of partitions.  None too if that partition shows fewer than two classes of
    positive weight.
    """
    for p in range(source.n_partitions):
        block = source.load(p)
        if block.n_rows:
            break
    else:
        return None
    classes, counts, weighted = count_labels_of(block.partition, block.y, block.sample_weight)
    if weighted.shape[0] < 2:
        return None
    plan = _dual_plan(source, plan, (classes, counts, weighted), n_rows=block.n_rows * source.n_partitions)
    tally = LabelTally(hooks, plan.classes)
    hooks.start(plan, n_partitions=source.n_partitions, cache_bytes=plan.cache_bytes or None)
    try:
        result = fit_stream(source, plan, tally, clock_start=clock_start)
    except UnseenClass:
        return None
    result.plan = plan.with_labels(*tally.labels())
    return result


def _count_classes(source, plan, primal_plan, hooks, saved, checkpointing):
    """``(labels, first)``: the classes, their row counts and the classes of positive weight, from
    the checkpoint ``saved`` (no read), from the primal solver's first read (``first`` what it kept
    for the solver, a :class:`~.primal_reads.FirstRead`), or from a read of the labels (``first``
    None)."""
    if saved is not None:  # the classes counted by the fit that wrote it: no read to count them
        return tuple(saved[1][k] for k in ("classes", "class_counts", "weighted_classes")), None
    width = plan.model_width(source.n_features)
    known = _known_rows(source)
    if not first_read_trains(plan, width, known, source.n_features, checkpointing):
        return source.label_counts(read_timeout=plan.read_timeout), None
    # The read that counts the classes keeps the sample of the primal solver's warm start.
    hooks.start(primal_plan, n_partitions=source.n_partitions)
    on_block = None  # with "auto" the read may count for the dual solvers: no bar yet
    if plan.dual is False:
        on_block = lambda k, block: hooks.on_block(k, block, None, None)  # noqa: E731
    budget = {"sample_rows": sample_rows(width), "sample_bytes": plan.cache_bytes, "expected": known}
    first = first_read(source, primal_plan, width, on_block=on_block, **budget)
    return first.labels, first


def _known_rows(source):
    """The rows of ``source`` before any read: a Dask Array's chunks, or, for Parquet files read by
    the fast path (:mod:`.parquet`), the row counts their footers give (None if unknown: with
    ``on_invalid="skip"`` rows may be dropped, which only a read finds).  Footers are a few kB a
    file, read once."""
    if source.known_rows is not None or source.parquet_plan is None or source.on_invalid != "raise":
        return source.known_rows
    import pyarrow.parquet as pq

    plan, rows = source.parquet_plan, 0
    try:
        for pieces in plan.parts:
            for path, groups in pieces:
                with plan.fs.open(path, "rb") as f:
                    meta = pq.ParquetFile(f).metadata
                rows += meta.num_rows if groups is None else sum(meta.row_group(g).num_rows for g in groups)
    except (OSError, ValueError):  # the read will name what is wrong with the file
        return None
    return rows


def _dual_plan(source, plan, labels, n_rows=None):
    """The plan of a streaming schedule: its solver, seeds and labels, and a share of memory
    resolved, now that the rows are counted (or estimated: ``n_rows``), as bytes of rows as the
    cache stores them."""
    solver = plan.solver if plan.solver in STREAMING_SOLVERS else DEFAULT_STREAMING
    seed, calibration_seed = _seeds(plan)
    plan = plan.replace(solver=solver, seed=seed, calibration_seed=calibration_seed).with_labels(*labels)
    if plan.cache_share is None:
        return plan
    per_row = row_bytes(source, plan.n_problems, plan.feature_map)
    n_rows = int(np.sum(plan.counts)) if n_rows is None else n_rows
    return plan.with_cache_bytes(share_bytes(plan.cache_share, n_rows, per_row))


def _solve_primal_stream(source, plan, hooks, first, clock_start):
    """The primal Newton solver streaming ``source``, a read per step.

    ``first`` (a :class:`~.primal_reads.FirstRead`, or None): what the read that counted the
    classes kept: a sample of the rows, whose problem solved in memory is the first full read's
    point (:func:`~.primal.warm_start`; the fit itself if the sample holds every row), or the
    classes' moments, from which the first Newton step follows without another read.
    """
    hooks.start(plan, n_partitions=source.n_partitions)
    on_block = lambda k, block: hooks.on_block(k, block, None, None)  # noqa: E731
    width = plan.model_width(source.n_features)
    check_width(plan, width + 1)  # out of core the solver forms the Hessian
    start = notes = None
    if first is not None and first.sample is not None:
        totals = first.totals
        counted = {
            "rows_read": totals.rows, "bytes_read": totals.bytes, "rows_skipped": totals.skipped,
            "read_retries": totals.retries, "spill_bytes": source.spill_bytes,
        }  # fmt: skip

        def on_pass(records, W):  # the sample's steps, after the one read: numbered 0 as that read
            for record in records:
                record.update(counted, **{"pass": 0})
            return hooks.on_pass(records, W)

        start, notes, result = warm_start(first.sample, plan, width, clock_start, on_pass)
        first.sample = None  # the reads that follow keep their band instead
        if result is not None:  # the sample is every row: its problem is the data's, solved
            result.passes = 0
            if result.history:
                result.history[0].update(notes)
            return result
    # The read before counted the rows and checked their values, unless it found a value too large.
    known = first is not None and first.clean
    # Each read keeps its band (primal.band_step): a share of the rows, within the budget.
    rows = int(np.sum(plan.counts))
    band = {"band_rows": int(band_share(plan) * rows), "band_bytes": None, "rows": rows}
    if plan.cache_bytes is not None:
        band["band_bytes"] = plan.cache_bytes // plan.n_problems
    read = stream_read(source, plan, on_block, start=1 if known else 0, **band)
    initial = first.sums(plan) if known else None  # read 0 certifies w = 0
    return solve_primal(
        read, plan, width, clock_start=clock_start, on_pass=hooks.on_pass, source=source, initial=initial,
        start=start, notes=notes, before=first.totals if known and initial is None else None,
    )  # fmt: skip


def _fit_cluster(source, plan, hooks, client, clock_start):
    """``plan.cluster`` on ``client``'s workers, by the method :func:`~.cluster.cluster_method` picks:
    Newton steps summed in a tree (the Hessian formed, or its products on wide data), else
    averaging or CoCoA+ (:mod:`.cluster`).  Every history record names the method."""
    method = cluster_method(plan, source.n_features)
    source.scaled = plan.scaler is not None  # the rows' x . x is checked once scaled, as on one machine
    solver = plan.solver if plan.solver in STREAMING_SOLVERS else DEFAULT_STREAMING
    seed = int(check_random_state(plan.random_state).randint(np.iinfo(np.int32).max))
    plan = plan.replace(solver=solver, seed=seed)

    def named(records):
        for record in records:
            record["method"] = method
        return records

    with cancelled_on_error(client):  # a failed fit leaves no task of it on the cluster
        try:
            result = _cluster_method(method, source, plan, hooks, client, clock_start, named)
        except Exception as exc:
            lost = scheduler_lost(client, exc)
            if lost is None:
                raise
            raise lost from exc
    named(result.history)  # records the hooks did not see too (a warm start that solved all)
    return result


def _cluster_method(method, source, plan, hooks, client, clock_start, named):
    if method in ("newton", "truncated_newton"):  # each step one read (or evaluation) of every part
        newton = fit_primal_cluster if method == "newton" else fit_products_cluster

        def on_pass(records, W):
            return hooks.on_pass(named(records), W)

        return newton(client, source, plan, clock_start=clock_start, on_pass=on_pass)
    on_round = None
    if hooks.callbacks or hooks.verbose:

        def on_round(record):
            return hooks.on_round(named([record])[0])

    plan = plan.replace(cluster=method)
    return fit_cluster(client, source, plan, clock_start=clock_start, on_round=on_round)


def fit_partial(data, plan, state=None, start_from=None, clock_start=None):
    """``partial_fit``'s pass over ``data`` (:class:`MemoryData` or a source) with ``plan`` (solver
    ``"partial"``, its labels set): a :class:`~.result.FitResult` whose ``state`` is the stream to go
    on with (``state``, or a new one started from ``start_from = (coef, intercept)`` if given)."""
    clock_start = time.perf_counter() if clock_start is None else clock_start
    if isinstance(data, MemoryData):
        n_features = data.X.shape[1]
        data = memory_blocks(data.X, data.y, data.sample_weight, data.skipped)
    else:
        n_features = data.n_features
    if state is None:
        state = OnePassSBM(plan, n_features)
        if start_from is not None:  # go on from the model fit() trained
            state.start_from(*start_from)
    result = fit_stream(data, plan, clock_start=clock_start, state=state)
    result.plan = plan
    return result

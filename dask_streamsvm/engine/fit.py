"""The one door of every fit: :func:`fit`, which chooses once and runs what it chose.

An estimator validates its parameters into one :class:`~.plan.problem.FitPlan`, asks
:func:`~.choice.place` where the fit runs, opens its input for that place (:class:`MemoryData`, or
a :class:`~.data.source.DaskSource` streamed or on a cluster), and calls :func:`fit`, which returns
one :class:`~.plan.result.FitResult`.  In between, :func:`fit`

1. asks :func:`~.choice.choose` for the fit's :class:`~.choice.Method`, once;
2. prepares: the read that learns :class:`~dask_streamsvm.features.Standardize`'s scales, the
   classes counted (in memory; from a checkpoint; by the read that trains the dual solvers on text
   as it counts, :func:`_fit_stream_counting`; by the primal solver's first read; or from the labels
   alone, as the method says), the second stage of the choice once the rows are counted
   (:func:`~.choice.after_count`), a share of memory resolved as bytes, Platt's folds in memory;
3. runs the method: ``METHODS[method.where](...)``, the primal or dual solver of that place.

The one path of a fit::

    estimator.fit -> choice.place -> (the input opened) -> fit -> choice.choose
        -> METHODS["memory"]  -> dual.memory.solve_problems / primal.fit.fit_primal_memory
        -> METHODS["stream"]  -> (count, choice.after_count) -> dual.schedules.fit_stream
                                                             / primal.fit.fit_primal_stream
        -> METHODS["cluster"] -> cluster.fit.fit_on_cluster
    estimator.partial_fit -> check_partial -> fit_partial -> dual.schedules.fit_stream (one pass)

What a fit stopped before any read certified a trained model returns: the trained model,
uncertified (:meth:`~.plan.result.FitResult.prefer_trained`).
"""

import time
from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.utils import check_random_state

from .choice import Method, after_count, band_applies, choose, dual_schedule, settle_multinomial
from .cluster.fit import fit_on_cluster
from .cluster.moments import prepared_scaler
from .data.labels import LabelTally, UnseenClass, count_labels_of
from .data.reader import read_blocks
from .data.spill import check_spill_dir
from .dual.memory import solve_problems
from .dual.offset import solve_with_offset
from .dual.partial import OnePassSBM
from .dual.schedules import fit_stream, memory_blocks
from .plan.calibration import N_FOLDS, folds, platt_sigmoids
from .plan.layout import kernel_rows
from .plan.problem import BAND_SOLVER, STREAMING_SOLVERS, column_max_abs, cs_model, linear_scores
from .plan.sizes import row_bytes, share_bytes
from .primal.fit import count_with_first_read, fit_primal_memory, fit_primal_stream, stalled_steps
from .primal.l1 import SOLVER_NAME as L1_SOLVER
from .primal.l1 import solve_l1_problems
from .primal.multinomial import SOLVER_NAME as MULTINOMIAL_SOLVER
from .primal.multinomial import solve_multinomial
from .primal.multinomial_reads import READS_SCHEDULE as MULTINOMIAL_READS
from .primal.multinomial_reads import (
    auto_softmax,
    fit_multinomial_stream,
    softmax_columns,
    solve_softmax_reads,
)
from .primal.sample_band import BandStalled, band_note, fit_band_memory, fit_band_stream
from .primal.sums import BeyondPrimal
from .store.checkpoint import Checkpoints, data_fingerprint

_INT64_MAX = np.iinfo(np.int64).max


@dataclass
class MemoryData:
    """In-memory training rows, validated: ``X`` (2-D array or CSR), labels ``y``, ``sample_weight``,
    and the rows ``on_invalid="skip"`` dropped before (counted in the history)."""

    X: object
    y: np.ndarray
    sample_weight: np.ndarray
    skipped: int = 0
    _labels: tuple = field(default=None, init=False, repr=False, compare=False)

    def labels(self):
        """:func:`~.data.labels.count_labels_of` of the rows' labels and weights, counted once: the
        door (:func:`~.choice.choose`, :func:`~.choice.settle_multinomial`) and the fit both ask."""
        if self._labels is None:
            self._labels = count_labels_of("in memory", self.y, self.sample_weight)
        return self._labels


def fit(data, plan, hooks, *, placement, checkpoint=None, resume=False, clock_start=None):
    """Train ``plan`` on ``data``: one :class:`~.plan.result.FitResult`, its ``plan`` with the labels.

    Parameters
    ----------
    data : :class:`MemoryData` or :class:`~.data.source.DaskSource`, opened for ``placement.where``
    plan : :class:`~.plan.problem.FitPlan` without labels: ``placement.plan`` with its feature map's spec
    hooks : the estimator's pass hooks (``start``, ``on_pass``, ``on_block``, ``memory``...)
    placement : :class:`~.choice.Placement`, from :func:`~.choice.place`
    checkpoint : ``(directory, every, params)``: a checkpoint after every pass (streaming), of a fit
        of these estimator parameters on ``data``; None: no checkpoints
    resume : go on from the checkpoint, if there is one
    clock_start : ``time.perf_counter()`` at the start of the fit (None: now)
    """
    clock_start = time.perf_counter() if clock_start is None else clock_start
    plan = settle_multinomial(placement, plan, data)
    method = choose(placement, plan, data)
    checkpoints = None
    if checkpoint is not None:
        directory, every, params = checkpoint
        # The schedule is the checkpoint's too: "auto" chose StreamSVM before SBM (choice.AUTO_SCHEDULE),
        # and a trainer's state is its own schedule's.
        fingerprint = {**data_fingerprint(params, data), "schedule": method.schedule}
        checkpoints = Checkpoints(directory, every, fingerprint)
    run = METHODS[method.where]
    result = run(data, plan, method, hooks, placement=placement, checkpoints=checkpoints, resume=resume,
                 clock_start=clock_start)  # fmt: skip
    result.stopped = result.stopped or hooks.stopped
    result.prefer_trained()
    return result


def _polished(result, X, y_index, weights, plan, seeds, clock_start, hooks):
    """A sparse penalty's Newton steps on in-memory rows, where they stopped above ``tol`` (at
    ``max_iter``) or stalled (:func:`~.primal.fit.stalled_steps`: the damped orthant steps of pure L1
    hold its gap near 1e-9 where the point no longer moves, tests/test_l1.py): coordinate descent
    (CDN) from their point with the passes left, its records after theirs."""
    left = plan.max_iter - result.passes
    stopped = result.stopped or getattr(hooks, "stopped", False)  # a callback's stop ends the fit
    if np.all(result.converged) or stopped or result.interrupted or left <= 0:
        return result
    polish = solve_l1_problems(
        X, y_index, weights, plan.replace(max_iter=left), seeds=seeds, clock_start=clock_start,
        hooks=hooks, start=result.W,
    )  # fmt: skip
    return replace(polish, passes=result.passes + polish.passes, history=result.history + polish.history)


def _seeds(plan):
    """A streaming fit's seed, and Platt's held-out seed with ``probability=True``."""
    rng = check_random_state(plan.random_state)
    seed = int(rng.randint(_INT64_MAX, dtype=np.int64))
    return seed, int(rng.randint(_INT64_MAX)) if plan.probability else None


def _fit_memory(data, plan, method, hooks, *, clock_start, **_):
    """Every problem solved on in-memory rows, by the primal or the dual solver as ``method`` says:
    cross-fitted Platt folds first with ``probability``."""
    X, y, sample_weight = data.X, data.y, data.sample_weight
    scaler = None
    if plan.scaler is not None:
        scaler = prepared_scaler(plan).learn([X[sample_weight > 0]], X.shape[1])
        X = scaler.scale_rows(X)
    labels = data.labels()  # (classes, counts, weighted, totals)
    classes = labels[0]
    rng = check_random_state(plan.random_state)
    seeds = rng.randint(_INT64_MAX, size=max(classes.shape[0], 1), dtype=np.int64)
    trained = sample_weight > 0
    plan = plan.replace(solver="memory").with_labels(*labels)
    hooks.start(plan)
    y_index = np.searchsorted(classes, y)
    width = plan.model_width(X.shape[1])
    if method.schedule == L1_SOLVER:
        solve = lambda weights, hooks=None: solve_l1_problems(  # noqa: E731
            X, y_index, weights, plan, seeds=seeds, clock_start=clock_start, hooks=hooks
        )
    elif method.schedule == MULTINOMIAL_SOLVER:
        solve = lambda weights, hooks=None: solve_multinomial(  # noqa: E731
            X, y_index, weights, plan, clock_start=clock_start, hooks=hooks
        )
    elif method.schedule == MULTINOMIAL_READS:
        solve = lambda weights, hooks=None: solve_softmax_reads(  # noqa: E731
            X, y_index, weights, plan, clock_start=clock_start, hooks=hooks
        )
    elif method.primal and plan.sparse_penalty:

        def solve(weights, hooks=None):
            result = fit_primal_memory(X, y_index, weights, plan, width, hooks, clock_start, stalled_steps())
            return _polished(result, X, y_index, weights, plan, seeds, clock_start, hooks)

    elif method.primal:
        solve = lambda weights, hooks=None: fit_primal_memory(  # noqa: E731
            X, y_index, weights, plan, width, hooks, clock_start
        )
    else:
        rows = kernel_rows(X, plan.feature_map)
        solve = lambda weights, hooks=None: solve_problems(  # noqa: E731
            rows, y_index, weights, plan, width=width, seeds=seeds, clock_start=clock_start, hooks=hooks
        )
        if method.schedule == BAND_SOLVER:
            solve = _band_or(solve, X, y_index, plan, clock_start)
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
    if (not method.primal or method.schedule == L1_SOLVER) and not np.all(result.converged):
        result.feature_max = column_max_abs(X[trained])  # the advice of the warning
    if data.skipped:
        for record in result.history:
            record["rows_skipped"] = data.skipped
    result.plan, result.scaler, result.platt = plan, scaler, platt
    if method.note is not None:
        result.messages.append(method.note)
    return result


def _band_or(dual, X, y_index, plan, clock_start):
    """``solve(weights, hooks)`` of the hinge on in-memory rows by the band from a sample
    (:func:`~.primal.sample_band.fit_band_memory`), or by ``dual`` (the dual coordinate descent)
    where the band gives up after its first pass (:class:`~.primal.sample_band.BandStalled`): its
    records after the band's, and the user told why."""

    def solve(weights, hooks):  # the door keeps probability's folds (no hooks) off the band
        band_plan = plan.replace(solver=BAND_SOLVER)
        try:
            result = fit_band_memory(X, y_index, weights, band_plan, hooks, clock_start, give_up=True)
        except BandStalled as stalled:
            result = dual(weights, hooks)
            result.history[:0] = stalled.history
            why = (
                f"the bound certified only {stalled.reach:.2g} of the band's step (more rows lie near the "
                "margin than the band holds, within cache_bytes, or they tie there); solver='memory' "
                "trains by dual coordinate descent from the start"
            )
            result.messages.append(band_note(stalled.reach, "dual coordinate descent", why, "one pass"))
        return result

    return solve


def _fit_stream(source, plan, method, hooks, *, checkpoints, resume, clock_start, **_):
    """A streamed fit: the scales' read, the read that counts the classes (as ``method`` says), the
    choice's second stage, then the primal solver or a streaming schedule
    (:func:`~.dual.schedules.fit_stream`)."""
    saved = checkpoints.load() if checkpoints is not None and resume else None
    with source.spilling(plan.spill, plan.spill_dir):
        scaler = None
        if plan.scaler is not None:  # one read for the scales, then scaled reads
            source.scaled = True  # the rows' x . x is checked once scaled (Standardize.scale_rows)
            blocks = read_blocks(
                source, prefetch=plan.prefetch, retries=plan.retries, read_timeout=plan.read_timeout
            )
            rows = (b.X[b.sample_weight > 0] for _, b in blocks)
            scaler = prepared_scaler(plan).learn(rows, source.n_features)
            source.row_transform = scaler.scale_rows
        primal_plan = plan.replace(solver=dual_schedule(plan), seed=0, calibration_seed=None)
        result, spent = None, []
        if saved is None and method.first_read == "trains":  # text: one read parses, counts and trains
            result = _fit_stream_counting(source, plan, hooks, clock_start)
        if result is not None:
            plan = result.plan
        else:
            labels, first = _count_classes(source, plan, primal_plan, method, hooks, saved)
            beyond = None if first is None else first.beyond
            if plan.multinomial_auto:  # multi_class="auto", decided by the classes counted
                columns = softmax_columns(plan, source.n_features)
                softmax = beyond is None and auto_softmax(labels[0].shape[0], columns)
                if softmax and first is None:  # the labels alone were counted: a read keeps the sample
                    first = count_with_first_read(source, primal_plan, hooks, None, announce=True)
                    beyond = first.beyond
                    softmax = beyond is None  # else one-vs-rest, its values checked as by that read
                plan, primal_plan = plan.settled(softmax), primal_plan.settled(softmax)
                if softmax:
                    method = Method("stream", True, schedule=MULTINOMIAL_SOLVER, first_read="primal")
            undecided, n_rows = method, int(np.sum(labels[1]))
            method = after_count(undecided, plan, n_rows, source.n_features, beyond)
            sampled = first is not None and first.sample is not None
            if (
                method.schedule == BAND_SOLVER
                and sampled
                and not band_applies(plan, n_rows, source.n_features, first.sample.complete)
            ):
                method = method.replace(schedule=dual_schedule(plan))
            if method.schedule == BAND_SOLVER and sampled:
                band_plan = primal_plan.replace(solver=BAND_SOLVER).with_labels(*labels)
                try:
                    result = fit_band_stream(
                        source, band_plan, hooks, first, clock_start, give_up=plan.solver == "auto",
                        wide=solve_with_offset,
                    )  # fmt: skip
                    plan = band_plan
                except BandStalled as stalled:  # the dual schedules train instead, and say so
                    method = method.replace(
                        schedule=dual_schedule(plan, gave_way=True),
                        note=band_note(
                            stalled.reach,
                            f"solver={dual_schedule(plan, gave_way=True)!r}",
                            stalled.why,
                            stalled.after,
                        ),
                    )
                    spent = stalled.history
            elif method.schedule == MULTINOMIAL_SOLVER:
                plan = primal_plan.with_labels(*labels)
                result = fit_multinomial_stream(source, plan, hooks, first, clock_start)
            elif method.primal:
                counted = primal_plan.with_labels(*labels)
                try:
                    result, plan = fit_primal_stream(source, counted, hooks, first, clock_start), counted
                except BeyondPrimal as exc:  # the first Newton read, at w = 0, checks what a count did not
                    if undecided.primal is not None:  # dual=False: its error stands
                        raise
                    method = after_count(undecided, plan, n_rows, source.n_features, str(exc))
            if result is None and not method.primal:
                if first is not None:  # its sample (up to cache_bytes) is not the dual solvers'
                    first.sample = None
                plan = _dual_plan(source, plan, labels, schedule=method.schedule)
                hooks.start(plan, n_partitions=source.n_partitions, cache_bytes=plan.cache_bytes or None)
                result = fit_stream(
                    source, plan, hooks, clock_start=clock_start, checkpoints=checkpoints, resume=saved
                )
                result.history[:0] = spent  # the band's reads, before it gave up
    if plan.probability:  # the last read certified the model: its held-out scores are the model's
        result.platt = platt_sigmoids(result.held_scores, result.held_y, plan.classes)
    result.plan, result.scaler = plan, scaler
    if method.note is not None:
        result.messages.append(method.note)
    return result


def _fit_stream_counting(source, plan, hooks, clock_start):
    """A streaming fit whose first read counts the classes as it trains: its result, or None.

    The classes are guessed from the first partition with rows (from then on in the spill): the
    first read trains with them and counts every block's labels (:class:`~.data.labels.LabelTally`).
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
    classes, counts, weighted, totals = count_labels_of(block.partition, block.y, block.sample_weight)
    if weighted.shape[0] < 2:
        return None
    plan = _dual_plan(
        source, plan, (classes, counts, weighted, totals), n_rows=block.n_rows * source.n_partitions
    )
    tally = LabelTally(hooks, plan.classes)
    hooks.start(plan, n_partitions=source.n_partitions, cache_bytes=plan.cache_bytes or None)
    try:
        result = fit_stream(source, plan, tally, clock_start=clock_start)
    except UnseenClass:
        return None
    result.plan = plan.with_labels(*tally.labels())
    return result


def _count_classes(source, plan, primal_plan, method, hooks, saved):
    """``(labels, first)``: the classes, their row counts and the classes of positive weight, from
    the checkpoint ``saved`` (no read), from the primal solver's first read (``first`` what it kept
    for the solver, a :class:`~.primal.reads.FirstRead`), or from a read of the labels (``first``
    None)."""
    if saved is not None:  # the classes counted by the fit that wrote it: no read to count them
        # (a checkpoint written before the classes' weights were kept: None, their rows weigh 1 each)
        names = ("classes", "class_counts", "weighted_classes", "class_totals")
        return tuple(saved[1].get(k) for k in names), None
    if method.first_read != "primal":
        return source.label_counts(read_timeout=plan.read_timeout), None
    # The read that counts the classes keeps the sample of the primal solver's warm start.
    announce = plan.dual is False or plan.multinomial  # its first read is the Newton reads' for sure
    band = method.schedule == BAND_SOLVER
    first = count_with_first_read(source, primal_plan, hooks, method.known_rows, announce=announce, band=band)
    return first.labels, first


def _dual_plan(source, plan, labels, n_rows=None, schedule=None):
    """The plan of a streaming schedule: its solver, seeds and labels, and a share of memory
    resolved, now that the rows are counted (or estimated: ``n_rows``), as bytes of rows as the
    cache stores them.  ``schedule``: the one chosen (:func:`~.choice.dual_schedule`), or None."""
    seed, calibration_seed = _seeds(plan)
    plan = plan.replace(seed=seed, calibration_seed=calibration_seed).with_labels(*labels)
    if plan.cache_share is not None:
        per_row = row_bytes(source, plan.n_problems, plan.feature_map)
        n_rows = int(np.sum(plan.counts)) if n_rows is None else n_rows
        plan = plan.with_cache_bytes(share_bytes(plan.cache_share, n_rows, per_row))
    return plan.scheduled(schedule if schedule in STREAMING_SOLVERS else dual_schedule(plan))


def _fit_cluster(source, plan, method, hooks, *, placement, clock_start, **_):
    """``plan.cluster`` on the placement's client's workers, by the method chosen
    (:func:`~.cluster.fit.fit_on_cluster`)."""
    return fit_on_cluster(placement.client, source, plan, method.cluster, hooks, clock_start)


# What the door runs, by where the method runs (:data:`~.choice.WHERE`): each takes the opened data,
# the plan, the method and the hooks.
METHODS = {"memory": _fit_memory, "stream": _fit_stream, "cluster": _fit_cluster}


def check_partial(plan, *, checkpointing=False):
    """What ``partial_fit`` cannot do with ``plan``: a clear error, before any read (``spill_dir``
    is checked as in :func:`~.choice.place`, though one pass writes no spill)."""
    check_spill_dir(plan.spill_dir)
    if isinstance(plan.class_weight, str):
        raise ValueError(
            "class_weight='balanced' needs the class counts of the whole stream, which partial_fit "
            "does not see; pass a dict of weights or compute them first."
        )
    if plan.probability:
        raise ValueError("probability=True is not supported by partial_fit; use fit.")
    if plan.sparse_penalty:
        raise ValueError(
            f"{plan.penalty} is not supported by partial_fit (its solver needs every row at once); "
            "use fit, or penalty='l2' (l1_ratio=0) to stream."
        )
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


def fit_partial(data, plan, state=None, start_from=None, clock_start=None):
    """``partial_fit``'s pass over ``data`` (:class:`MemoryData` or a source) with ``plan`` (solver
    ``"partial"``, its labels set): a :class:`~.plan.result.FitResult` whose ``state`` is the stream
    to go on with (``state``, or a new one started from ``start_from = (coef, intercept)`` if given)."""
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

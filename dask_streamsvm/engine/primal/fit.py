"""The primal solver's two fits, as the door runs them: on in-memory rows
(:func:`fit_primal_memory`) and streamed, a read per Newton step (:func:`fit_primal_stream`), with
the read that counts the classes as its first read where the door chose so
(:func:`count_with_first_read`)."""

import contextlib

import numpy as np
import scipy.sparse as sp

from ..data.malloc import let_go
from ..data.source import rows_trained
from ..plan.losses import loss_of
from ..plan.problem import column_max_abs
from ..plan.threads import blas_threads, memory_row_threads, primal_memory_threads, row_threads
from .newton import band_share, check_width, solve_primal
from .reads import band_metric, columns_metric, first_read, memory_read, metric_row_norm, stream_read
from .sums import CG_WIDTH
from .warm import memory_start, sample_rows, warm_start, whole_sample

# In memory, the metric of the rows' length (the step dual's reach) is the columns' mean and spread over
# about this many of the rows, evenly spaced.
METRIC_ROWS = 100_000


# A sparse penalty's Newton steps on in-memory rows end, for coordinate descent to go on from their
# point (engine/fit.py, _polished), once their largest gap is at most STALL_GAP and has not halved in
# STALL_STEPS steps: the damped orthant steps from the Hessian's products held pure L1's gap near 1e-9
# where its point no longer moved (tests/test_l1.py), and one pass of coordinate descent from there
# closed it to 1e-12.  Above
# STALL_GAP they go on: pure L1 on 50,000 x 20,000 text rows at C = 10 reached 1e-3 in 362 steps
# (5.5 s) through stretches of 50 steps without halving, where coordinate descent from the 50th step
# of such a stretch took 50 s (benchmarks/bench_l1_shapes.py).
STALL_STEPS = 50
STALL_GAP = 1e-6


def stalled_steps(steps=STALL_STEPS):
    """``stalled(records)``, true once the largest gap of the records it was given is at most
    :data:`STALL_GAP` and has not halved in the last ``steps`` of them (:data:`STALL_STEPS`)."""
    gaps = []

    def stalled(records):
        gaps.append(max(float(record["gap"]) for record in records))
        return len(gaps) > steps and gaps[-1] <= STALL_GAP and not gaps[-1] < 0.5 * gaps[-1 - steps]

    return stalled


def memory_threads(X, plan, width):
    """``(BLAS threads, row threads)`` of the Newton steps on rows ``X`` in memory, no reader
    running: a wide Gram matrix takes the cores on BLAS's threads (not CSR rows', made without
    BLAS), narrower dense rows on row threads of one BLAS thread each."""
    sparse_rows = sp.issparse(X) and plan.feature_map is None
    blas = primal_memory_threads(width, sparse_rows)
    return blas, (memory_row_threads(sparse_rows) if blas == 1 else 1)


def fit_primal_memory(X, y_index, weights, plan, width, hooks, clock_start, stalled=None):
    """The primal Newton solver on in-memory rows; ``hooks`` see each problem's records as the
    dual solvers give them (None: no hooks); ``stalled(records)``: true ends the steps
    (:func:`stalled_steps`), or None."""
    per_problem = [] if hooks is None else [hooks.memory(c) for c in range(plan.n_problems)]

    def on_pass(records, W):
        stop = bool(per_problem) and any([per_problem[c](record, W[c]) for c, record in enumerate(records)])
        return stop or (stalled is not None and stalled(records))

    blas, rows = memory_threads(X, plan, width)
    with blas_threads(blas), row_threads(rows):
        metric = row_norm = None
        if plan.feature_map is None and not loss_of(plan.loss).piecewise_quadratic:
            # a smooth loss's step dual bounds its reach by the rows' length in a metric (any metric
            # bounds it; the columns' mean and spread over METRIC_ROWS of them make it tight)
            metric = columns_metric(X[:: max(1, X.shape[0] // METRIC_ROWS)])
            row_norm = metric_row_norm(X, metric)
        # The sparse penalties hold the Hessian as its active rows and form it on their free weights
        # only (penalties.Sparse.free_direction); a feature map's features are never held: the
        # formed Hessian, below CG_WIDTH.
        products = (plan.feature_map is None or X.shape[1] + 1 > CG_WIDTH) if plan.sparse_penalty else None
        read = memory_read(X, y_index, weights, plan, products=products, row_norm=row_norm)
        start, notes = memory_start(X, y_index, weights, plan, width, clock_start)
        columns = None
        if plan.feature_map is None:  # the rows' largest values bound a step's change of a margin
            columns = np.append(column_max_abs(X), abs(float(plan.bias)))
        return solve_primal(
            read,
            plan,
            width,
            clock_start=clock_start,
            on_pass=on_pass,
            start=start,
            notes=notes,
            start_read=False,
            column_max=columns,
            metric=metric,
        )


def count_with_first_read(source, plan, hooks, known_rows, *, announce, band=False):
    """The read that counts the classes as the primal solver's first read: a
    :class:`~.reads.FirstRead` holding the labels and the sample of the warm start.  ``plan``: the
    primal solver's plan (no labels yet); ``known_rows``: the rows known before the read;
    ``announce``: the read is the primal solver's for sure (``dual=False``), so the progress bar
    shows it (with ``"auto"`` it may count for the dual solvers: no bar yet); ``band``: the band from a
    sample trains (:func:`~.warm.whole_sample`)."""
    width = plan.model_width(source.n_features)
    hooks.start(plan, n_partitions=source.n_partitions)
    on_block = None
    if announce:
        on_block = lambda k, block: hooks.on_block(k, block, None, None)  # noqa: E731
    expected = rows_trained(source, known_rows)  # the rows the read will give: virtual examples too
    budget = {
        "sample_rows": sample_rows(width), "sample_bytes": plan.cache_bytes, "expected": expected,
        "whole": whole_sample(plan, expected, width, band),
    }  # fmt: skip
    return first_read(source, plan, width, on_block=on_block, **budget)


def fit_primal_stream(source, plan, hooks, first, clock_start):
    """The primal Newton solver streaming ``source``, a read per step.

    ``first`` (a :class:`~.reads.FirstRead`, or None): what the read that counted the
    classes kept: a sample of the rows, whose problem solved in memory is the first full read's
    point (:func:`~.warm.warm_start`; the fit itself if the sample holds every row), or the
    classes' moments, from which the first Newton step follows without another read.
    """
    hooks.start(plan, n_partitions=source.n_partitions)
    on_block = lambda k, block: hooks.on_block(k, block, None, None)  # noqa: E731
    width = plan.model_width(source.n_features)
    check_width(plan, width + 1)  # out of core the solver forms the Hessian
    # The read before counted the rows and checked their values, unless it found a value too large.
    known = first is not None and first.clean
    # Each read keeps its band (newton.band_step): a share of the rows, within the budget; its keys'
    # metric comes from the warm start's sample (reads.band_metric), set once it is solved.
    rows = int(np.sum(plan.counts))
    band = {"band_rows": int(band_share(plan) * rows), "band_bytes": None, "rows": rows}
    if plan.cache_bytes is not None:
        band["band_bytes"] = plan.cache_bytes // plan.n_problems
    read = stream_read(source, plan, on_block, start=1 if known else 0, **band)
    # Where the sample's solve comes first and is not the fit, the reader reads the first Newton
    # read's partitions meanwhile (``prefetch`` of them: it then waits for room).
    early = first is not None and first.sample is not None and not first.sample.complete
    with read if early else contextlib.nullcontext():
        start = notes = None
        if first is not None and first.sample is not None:
            totals = first.totals
            counted = {
                "rows_read": totals.rows, "bytes_read": totals.bytes, "rows_skipped": totals.skipped,
                "read_retries": totals.retries, "spill_bytes": source.spill_bytes,
            }  # fmt: skip

            # The sample's steps, after the one read: numbered 0 as that read (a record's pass is the
            # read it trained on: the progress bar shows them as steps of read 0 that read nothing).
            def on_pass(records, W):
                for record in records:
                    record.update(counted, **{"pass": 0})
                return hooks.on_pass(records, W)

            # a sample of every row is the fit, solved with no read in flight: its rows take the cores
            # as in memory (else the first Newton read's reader shares them)
            blas, rows = memory_threads(first.sample.X, plan, width) if not early else (1, 1)
            with blas_threads(blas), row_threads(rows):
                columns = first.column_max if known else None
                start, notes, result = warm_start(first.sample, plan, width, clock_start, on_pass, columns)
            if result is None:  # the columns' center and scale, for the band's keys
                read.band_metric = band_metric(first.sample)
            # the reads that follow keep their band instead; a sample of every row (480 MB of small
            # pages on the tall sets) is unmapped on another thread, beside the rest of the fit
            held, first.sample = [first.sample], None
            let_go(held)
            if result is not None:  # the sample is every row: its problem is the data's, solved
                # n_iter_: the Newton steps on the rows the read kept (the records after the first),
                # as in memory (issue 50: it said 0 after 1,001 records).
                result.passes -= 1
                if result.history:
                    result.history[0].update(notes)
                return result
        initial = first.sums(plan) if known else None  # read 0 certifies w = 0
        return solve_primal(
            read, plan, width, clock_start=clock_start, on_pass=hooks.on_pass, source=source,
            initial=initial, start=start, notes=notes,
            before=first.totals if known and initial is None else None,
            column_max=first.column_max if known else None, metric=read.band_metric,
        )  # fmt: skip

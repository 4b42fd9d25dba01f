"""The reads from a sample on a cluster: the primal Newton solver with formed Hessians (narrow data),
and the band from a sample (the hinge loss), every step one read of every part on its worker.

Newton: the parts' :class:`~..primal.sums.Sums` (gradient, Hessian, certificate) added up the tree
(:func:`~.tree.tree_sum` with :func:`~.tree.add_sums`), after a first read that counts the labels
and keeps a sample of each part's rows for the warm start, the samples joined and solved on a worker
(:func:`_warm_start_on_worker`).

The band (:func:`fit_band_cluster`): the same first read and samples, joined and solved on a worker
(:func:`_band_warm_start_on_worker`); each read then computes every part's rows' margins at the
point: the sums of the rows held on their piece (one vector a problem) and the loss are added up the
tree, the parts' bands joined (each part keeps the rows of smallest keys of its own rows; a row no
part kept has a key at least the smallest any part left out, so the bound holds for the join as for
one machine), and the band's problem is solved on the worker that holds the join, the tree's root
(:func:`_take_band_steps_on_worker`), as one machine solves it: the band never moves to the client.
After the first read every row keeps its dual value (:class:`~..primal.sample_band.KeptAlphas`): the values a
band solve gave are listed by the rows' ids (a row's id names its part) on that worker, from read to
read, and each part's read gets its own rows' (16 bytes a row a band held).
The reads of either do not grow with the workers: the sums are the data's.

The multinomial model (:func:`fit_softmax_cluster`): the same first read and samples, joined and
solved on a worker; each read then sums every part's
:class:`~..primal.multinomial_reads.SoftmaxSums` at the point (one read of its partitions) and adds
them up the tree, ``O((K D)^2)`` floats per edge, the reads of
:func:`~..primal.multinomial_reads.newton_reads` driven from the client.  Where the ``K`` classes'
rows are wider than the formed Hessian (:data:`~..primal.newton.MAX_WIDTH`), the parts are read again
and held on their workers, and the same loop takes its steps by the Hessian's products
(:func:`~.products.softmax_products`) from the samples' solution.

Every read is a task with a source of its own: the first read's fingerprints of each part come back
to the client and go out with every later read of it (:func:`~.parts.part_source`), so a partition
that gives other rows on a later read stops the fit with the error of one machine."""

import contextlib
import copy
import time
from dataclasses import replace
from functools import partial

import numpy as np

from ..data.labels import merge_label_counts
from .moments import scaled_parts
from .parts import part_source, parts_of, read_prints
from .runtime import gather, submit, synchronous, wait
from .tree import add_softmax_sums, tree_sum

# Whether the band's first step certified on less than BAND_MIN_REACH of its length gives the band up
# (BandStalled), as one machine's solver="auto" does: SBM on one worker trains then (cluster.fit).
GIVE_UP = True


def part_sums(packed, plan, W, S, todo, band_rows=0, band_bytes=None, band_metric=None, prints=None):
    """The :class:`~..primal.sums.Sums` of one part's rows at ``W + S`` (one read of its partitions),
    with the part's band of ``band_rows`` rows per problem (its keys in ``band_metric``,
    :func:`~..primal.reads.band_metric`); ``prints``: the fingerprints of the
    part's first read (:func:`part_first_read`), which every block read must match."""
    from ..primal.reads import stream_read

    source = part_source(packed, prints)
    with (
        synchronous(),
        stream_read(
            source, plan, reads=1, band_rows=band_rows, band_bytes=band_bytes, band_metric=band_metric
        ) as read,
    ):
        return read(W, S, todo)


def part_first_read(packed, plan, width, sample_rows, sample_bytes, keep=False):
    """One part's :class:`~..primal.reads.FirstRead`: its labels counted (a part of no rows counts
    none), its rows checked, a uniform sample of them, and its blocks' fingerprints (``prints``,
    :func:`~.parts.read_prints`), which every later read of the part must match.  ``keep``: its
    rows also kept as read where they fit the part's budget (:func:`~.products.part_budget`:
    ``cache_bytes``, else a share of the worker's memory), so that the Newton steps pass over them
    (:func:`part_held_sums`) instead of reading the part again; never where ``cache_bytes`` is a
    share of the rows below all of them (``"10%"``).  The sample is told the part's rows where they
    are known before the read (:func:`~..data.parquet.footer_rows`: its chunks, or its own files'
    footers), so that it copies about the rows it keeps, as one machine's first read does, where it
    copied every row until its first cuts (docs/benchmarks.md, "The parts' samples told their rows").
    Where those rows, at their dtype's bytes a value and 16 bytes for a label and a weight, fit the
    budget, the read makes its blocks on small pages (:meth:`~..data.source.DaskSource.holding`): kept
    to the fit's end, on NumPy's huge pages they cost a fresh worker more than the read
    (docs/benchmarks.md, "The parts' held rows on small pages")."""
    from ..data.parquet import footer_rows
    from ..primal.reads import first_read
    from .products import part_budget

    source = part_source(packed)
    keep_bytes = None
    if keep and (plan.cache_share is None or plan.cache_share >= 1):
        budget = part_budget(plan)
        keep_bytes = float("inf") if budget is None else budget
    expected = footer_rows(source)
    held = (
        keep_bytes is not None
        and expected is not None
        and expected * (source.dtype.itemsize * source.n_features + 16) <= keep_bytes
    )
    with synchronous(), source.holding() if held else contextlib.nullcontext():
        first = first_read(
            source, plan, width, sample_rows=sample_rows, sample_bytes=sample_bytes, allow_empty=True,
            keep_bytes=keep_bytes, expected=expected,
        )  # fmt: skip
    first.prints = read_prints(source)
    return first


def part_held(first):
    """The rows a part's first read kept (:class:`~..primal.reads.HeldRows`), on its worker: they
    stay there once the read's sample is dropped."""
    return first.held


def part_held_sums(held, plan, W, S, todo, metric=None):
    """:func:`part_sums` of the rows a part holds (:func:`part_held`): a pass over them, no read, and
    no band (``metric``: the rows' lengths are measured in it, for a smooth loss's step dual).

    Each pass is cheap where a read was not, and a band costs more than the passes it spares: its
    step certified the tall fit one pass earlier, but a pass that keeps and joins it took 0.51-0.57 s
    where a pass 0.24-0.27 s, even with its step taken on the first worker (:class:`RootBand`), and
    the fits were no faster (docs/benchmarks.md, "The Newton steps' band kept on the first worker";
    before, its rows also went to the client: "The parts' rows held on their workers").  Since the
    passes carry their Hessian (:meth:`~..primal.reads.HeldRows.carried`) a pass after the first
    takes 0.13-0.17 s ("The Hessian carried over the parts' held rows"): a band spares less still."""
    from ..primal.reads import HeldRead

    return HeldRead(held, plan, metric)(W, S, todo)


def _initial_sums(firsts, plan):
    """The sums at ``w = 0`` of the parts' first reads together (None if a part has no moments);
    the reads are left as they are."""
    from ..primal.reads import FirstRead

    if any(f.moments is None for f in firsts):
        return None
    totals, moments = copy.deepcopy(firsts[0].totals), {}
    for first in firsts[1:]:
        totals.add(first.totals)
    for first in firsts:
        for label, (weight, rows, sums) in first.moments.items():
            kept = moments.setdefault(label, [0.0, 0, np.zeros_like(sums)])
            kept[0], kept[1], kept[2] = kept[0] + weight, kept[1] + rows, kept[2] + sums
    return FirstRead(None, totals=totals, moments=moments).sums(plan)


def _without_sample(first):
    """A part's :class:`~..primal.reads.FirstRead` for the client: all of it but the sample's rows
    and the rows it kept (its labels, totals, moments and fingerprints, and whether it kept its
    rows), run on the part's worker."""
    stripped = copy.copy(first)
    stripped.sample = stripped.held = None
    stripped.holds_rows = first.held is not None
    return stripped


def _keeps_rows():
    """Whether the Newton steps' parts keep their rows where they fit their budget: as one machine's
    first read keeps every row (:data:`~..primal.warm.EVERY_ROW_IN_BUDGET`, which turns both off)."""
    from ..primal import warm

    return warm.EVERY_ROW_IN_BUDGET


def _without_rows(first):
    """A part's :class:`~..primal.reads.FirstRead` without the rows it kept, on its worker."""
    stripped = copy.copy(first)
    stripped.held, stripped.holds_rows = None, False
    return stripped


def _samples_of(client, futures, workers, firsts):
    """The parts' first reads as a warm start takes them: without the rows they kept where any did
    (only the samples move to the first worker)."""
    if not any(first.holds_rows for first in firsts):
        return futures
    return [submit(client, _without_rows, f, worker=w) for f, w in zip(futures, workers, strict=True)]


def _held_parts(client, futures, workers):
    """The rows each part's first read kept (:func:`part_held`), futures on their workers."""
    return [submit(client, part_held, f, worker=w) for f, w in zip(futures, workers, strict=True)]


def _warm_start_on_worker(plan, width, elapsed, *firsts):
    """The warm start of :func:`fit_primal_cluster` on a worker: the parts' samples joined there
    (:func:`cluster_sample`: they move between workers, never to the client) and solved;
    ``(start, notes, result, metric, rows_seen, initial)`` as :func:`~..primal.warm.warm_start`
    gives them, the band's metric (:func:`~..primal.reads.band_metric`), the rows the samples were
    drawn from and the sums at ``w = 0`` (:func:`_initial_sums`); the first five None (and 0 rows)
    where a part kept no sample.  ``elapsed``: the fit's seconds so far on the client, from which the
    records' seconds count on.  The sums at ``w = 0`` are made here, where the workers' kernels are
    loaded: on the client they were its only compiled calls, and their first in a process loaded
    Numba's typing for 0.23-0.33 s (docs/benchmarks.md, "The sums at w = 0 on the first worker")."""
    from ..primal.reads import band_metric
    from ..primal.warm import warm_start

    initial = _initial_sums(firsts, plan)
    sample = cluster_sample(firsts)
    if sample is None:
        return None, None, None, None, 0, initial
    start, notes, result = warm_start(sample, plan, width, time.perf_counter() - elapsed)
    metric = None if result is not None else band_metric(sample)
    return start, notes, result, metric, sample.rows_seen, initial


def cluster_sample(firsts):
    """The parts' samples as one sample of the data: each part's rows weighted by its rows over its
    sample's (a stratified sample, its loss an estimate of the data's), or None."""
    from ..primal.reads import Sample, joined_pieces

    samples = [(f.sample, f.totals.rows) for f in firsts if f.sample is not None]
    if not samples or not all(f.clean for f in firsts):
        return None
    rows = sum(f.totals.rows for f in firsts)
    m = sum(sample.n_rows for sample, _ in samples)
    pieces = [
        (
            np.zeros(sample.n_rows),
            sample.X,
            sample.y,
            sample.sample_weight * (seen / sample.n_rows) * (m / rows),
        )
        for sample, seen in samples
    ]  # warm_start scales every row by rows / m: each part's rows count rows_p / m_p
    _, X, y, w = joined_pieces(pieces)
    return Sample(X, y, w, rows)


def sampled_parts(client, source, plan, placement, keep=False):
    """The parts' first read: ``(plan, placement, scaler, futures, firsts)``, the labels counted by it
    (as on one machine), the parts scaled where the plan says, and each part's
    :class:`~..primal.reads.FirstRead`: ``futures`` of them on their workers (with the samples),
    ``firsts`` on the client (without).

    The read counts the labels, checks the values, keeps the samples and fingerprints the rows, one
    read of every part (with ``plan.scaler``, of the rows scaled: the scales' read comes first).
    Until 2026-12-05 a read of its own counted the labels before it: on a 2-worker ``LocalCluster``
    the tall hinge (2M x 60 Parquet rows) read every partition three times, where twice now.
    ``keep``: each part also keeps its rows where they fit its budget (:func:`part_first_read`)."""
    from ..primal.warm import sample_rows

    placement = parts_of(client, source, plan) if placement is None else placement
    scaler, placement = scaled_parts(client, source, plan, placement)
    parts, workers = placement.parts, placement.workers
    width = plan.model_width(source.n_features)
    K = len(parts)
    # A read of every part that counts its labels, checks its values and keeps a sample of its rows.
    budget = (-(-sample_rows(width) // K), None if plan.cache_bytes is None else plan.cache_bytes // K)
    futures = [
        submit(client, part_first_read, packed, plan, width, *budget, keep, worker=w) for w, packed in parts
    ]
    wait(client, futures, workers, placement.reads)
    # The client gets each part's counts and fingerprints; the samples go to the first worker, which
    # joins and solves them (a 61 MB sample of 2M x 60 rows took half the fit on the client).
    stripped = [submit(client, _without_sample, f, worker=w) for f, w in zip(futures, workers, strict=True)]
    firsts = gather(client, stripped, workers)
    # the labels this read counted: the plan's, and each part's
    counts = [c for first in firsts for c in first.partition_counts]
    ids = [i for first in firsts for i in first.partition_ids]
    plan = plan.with_labels(*merge_label_counts(counts, partitions=ids))
    part_counts = [merge_label_counts(f.partition_counts, allow_empty=True) for f in firsts]
    placement = replace(placement, counts=part_counts)
    return plan, placement, scaler, futures, firsts


def settled_parts(client, source, plan, placement):
    """:func:`sampled_parts` for ``multi_class="auto"``: its plan decided by the classes the parts'
    first read counted (:func:`~..primal.multinomial_reads.auto_softmax`; one-vs-rest where a part
    found values too large for the softmax model's reads), the softmax model's or the one-vs-rest
    problems' Newton reads going on from that read (which keeps the parts' rows for them where they
    fit: :func:`fit_primal_cluster`, :func:`fit_softmax_cluster`)."""
    from ..primal.multinomial_reads import auto_softmax

    counted, placement, scaler, futures, firsts = sampled_parts(
        client, source, plan, placement, keep=_keeps_rows()
    )
    clean = all(first.beyond is None for first in firsts)
    softmax = clean and auto_softmax(counted.classes.shape[0])  # any width: Newton-CG beyond the reads'

    return counted.settled(softmax), placement, scaler, futures, firsts


def fit_primal_cluster(client, source, plan, *, clock_start, on_pass=None, placement=None, sampled=None):
    """``dual=False`` on a cluster: every Newton step is one read of every part on its worker,
    the parts' sums reduced on the workers; a :class:`~..plan.result.FitResult` with its ``plan``
    (labels counted on the workers) and ``parts``.  Where every part's rows fit its budget
    (:func:`part_first_read`'s ``keep``), its first read keeps them on its worker and each step is a
    pass over them instead (:func:`part_held_sums`): the same sums and steps, no band (the next pass
    certifies), and the parts read once (on the 2M x 60 tall set on 2 worker processes,
    docs/benchmarks.md, "The parts' rows held on their workers"); a dense partition's Hessian is
    carried from pass to pass where it fits the budget (:meth:`~..primal.reads.HeldRows.carried`).

    Exact as on one machine (the sums are the data's sums), and what moves per step is ``W`` and
    ``S`` out to each part and one :class:`~..primal.sums.Sums` (``O(k D^2)`` floats) per tree edge.
    ``sampled``: :func:`sampled_parts`' read where it was made before (None: made here).
    """
    from ..primal.newton import band_share, solve_primal

    plan, placement, scaler, futures, firsts = sampled or sampled_parts(
        client, source, plan, placement, keep=_keeps_rows()
    )
    parts, workers = placement.parts, placement.workers
    moved = {"bytes_sent": 0, "bytes_received": 0}
    width = plan.model_width(source.n_features)
    K = len(parts)
    elapsed = time.perf_counter() - clock_start
    samples = _samples_of(client, futures, workers, firsts)
    warm = submit(client, _warm_start_on_worker, plan, width, elapsed, *samples, worker=workers[0])
    start, notes, result, metric, rows_seen, initial = gather(client, [warm], workers)[0]
    held = None  # where every part holds its rows: the Newton steps pass over them, no read
    if result is None and all(first.holds_rows for first in firsts):
        held = _held_parts(client, futures, workers)
    del futures, samples, warm  # the parts' samples are not needed any more (their rows, where held, are)
    if result is not None:  # every row came in the samples: their problem is the data's, solved
        # n_iter_: its Newton steps on the rows held after the one read (the records after the
        # first), each record numbered 0 as that read, as fit_primal_stream does.
        result.passes -= 1
        for record in result.history:
            record.update(moved, parts=len(parts), rows_read=rows_seen, **{"pass": 0})
        result.history[0].update(notes)
        if on_pass is not None:
            on_pass(result.history[-1:], result.W)
        return replace(result, plan=plan, parts=placement.record(), scaler=scaler)
    prints = [first.prints for first in firsts]  # every later read of a part must match its first
    rows = sum(f.totals.rows for f in firsts)
    band = (
        -(-int(band_share(plan, capped=False) * rows) // K),
        None if plan.cache_bytes is None else plan.cache_bytes // (K * plan.n_problems),
        metric,
    )

    def read(W, S, todo):
        if held is not None:  # a pass over the rows each part holds
            futures = [
                submit(client, part_held_sums, part, plan, W, S, todo, metric, worker=w)
                for part, w in zip(held, workers, strict=True)
            ]
            wait(client, futures, workers)
            moved["bytes_sent"] += K * (W.nbytes + S.nbytes)
        else:  # a read of every part
            futures = [
                submit(client, part_sums, packed, plan, W, S, todo, *band, table, worker=w)
                for (w, packed), table in zip(parts, prints, strict=True)
            ]
            wait(client, futures, workers, placement.reads)
            moved["bytes_sent"] += sum(
                packed.nbytes + W.nbytes + S.nbytes + table.nbytes
                for (_, packed), table in zip(parts, prints, strict=True)
            )
        root = tree_sum(client, futures, workers)
        if held is not None:  # no band: the sums come to the client as they are
            total = gather(client, [root], workers)[0]
        else:  # the band stays on the root's worker, its steps taken there (RootBand)
            stripped = submit(client, _without_band, root, worker=workers[0])
            total, banded = gather(client, [stripped], workers)[0]
            if any(banded):
                total.band = [
                    RootBand(client, root, c, workers, moved) if b else None for c, b in enumerate(banded)
                ]
        moved["bytes_received"] += total.v.nbytes + total.hessian.nbytes + total.trial.nbytes
        return total

    def on_read(records, W):
        for record in records:
            record.update(moved, parts=len(parts))
        return on_pass is not None and on_pass(records, W)

    columns = None  # every part's largest values: a step's change of any margin (step_dual)
    if all(f.column_max is not None for f in firsts):
        columns = np.max([f.column_max for f in firsts], axis=0)
    result = solve_primal(
        read, plan, width, clock_start=clock_start, on_pass=on_read, source=source, initial=initial,
        start=start, notes=notes, column_max=columns, metric=metric,
    )  # fmt: skip
    return replace(result, plan=plan, parts=placement.record(), scaler=scaler)


def _without_band(total):
    """The root's :class:`~..primal.sums.Sums` for the client: all but the band's rows, and whether
    each problem has a band, on the root's worker."""
    bands = total.band or []
    stripped = copy.copy(total)
    stripped.band = None
    return stripped, [band is not None for band in bands]


class RootBand:
    """A Newton read's band of problem ``index`` where the tree joined it, on the root's worker
    (``workers[0]``): :func:`~..primal.newton.band_step` and :func:`~..primal.newton.band_certificate`
    run there (:meth:`call`), so that the band (a share of the rows: 79 MB of the 2M x 60 tall set at
    a 10% cache) never moves to the client; what moves is the point, the gradient and the Hessian
    out, the step or the certificate back (``moved`` counts them)."""

    def __init__(self, client, root, index, workers, moved):
        self.client, self.root, self.index, self.workers, self.moved = client, root, index, workers, moved

    def call(self, function, *args):
        """``function(*args)`` with this band in its place among ``args``, on the root's worker."""
        at = next(i for i, arg in enumerate(args) if arg is self)
        args = args[:at] + (None,) + args[at + 1 :]
        self.moved["bytes_sent"] += sum(arg.nbytes for arg in args if isinstance(arg, np.ndarray))
        future = submit(
            self.client, _on_root_band, function, self.root, self.index, at, args, worker=self.workers[0]
        )
        result = gather(self.client, [future], self.workers)[0]
        self.moved["bytes_received"] += getattr(result, "nbytes", 0)
        return result


def _on_root_band(function, total, index, at, args):
    """``function(*args)`` with problem ``index``'s band of the root's ``total`` at ``args[at]``."""
    return function(*args[:at], total.band[index], *args[at + 1 :])


# -- the band from a sample (:mod:`~..primal.sample_band`) on a cluster ----------------------------


def part_band_sums(packed, plan, W, todo, band_rows, band_bytes, metric, prints, kept=None, part=0):
    """Part ``part``'s read at the points ``W`` of the problems ``todo``: its
    :class:`~..primal.sample_band.BandSums` per problem and its counts; ``kept``: per problem, its
    rows' dual values on this part (:class:`~..primal.sample_band.KeptAlphas`) or None."""
    from ..primal.sample_band import BandRead

    source = part_source(packed, prints)
    read = BandRead(source, plan, reads=1, band_rows=band_rows, band_bytes=band_bytes, band_metric=metric)
    read.part = part
    with synchronous(), read:
        return read(W, todo, kept)


def part_held_band_sums(held, plan, W, todo, band_rows, band_bytes, metric, kept=None, part=0):
    """:func:`part_band_sums` of the rows a part holds (:func:`part_held`): a pass over them, no read."""
    from ..primal.sample_band import HeldBandRead

    read = HeldBandRead(held, plan, band_rows=band_rows, band_bytes=band_bytes, band_metric=metric)
    read.part = part
    return read(W, todo, kept)


def add_band_sums(first, second, band_rows=None, band_bytes=None):
    """Two parts' reads added (a node of the tree, on a worker): each problem's sums and bands, the
    joined band cut to its ``band_rows`` rows (``band_bytes``) of smallest keys."""
    sums = [a.add(b, band_rows, band_bytes) for a, b in zip(first[0], second[0], strict=True)]
    counts = first[1]
    for name in ("rows", "bytes", "retries", "skipped"):
        setattr(counts, name, getattr(counts, name) + getattr(second[1], name))
    return sums, counts


# Each of K parts keeps up to this many times its share (1 / K) of the band, at most the whole band,
# and the tree cuts the join to the whole band's rows of smallest keys.  The joined band's bound is
# the smallest key any part left out: with each part's share alone it is the least of K parts'
# (1 / K)-quantiles, far below the band's own on many small parts (ijcnn1, C = 1, 10% cache: the
# first step certified on 0.08% of its length at K = 100, 7-9% at K = 8 and 32, 21 reads to 1e-3;
# with four times the share, 0.23% at K = 100 (9 reads to 1e-3 where each read went to the band's
# solution; 2.4e-3 after 10 with STEP_SHRINK's line search), 12-20% at K = 8 and 32).
BAND_OVERSAMPLE = 4


def part_band_budget(plan, rows, K):
    """``((rows, bytes) of the whole band, (rows, bytes) of a part's)`` on ``K`` parts of ``rows``
    rows in all (bytes None without ``cache_bytes``): a part keeps :data:`BAND_OVERSAMPLE` times
    its share, within the whole band's."""
    from ..primal.newton import band_share

    whole_rows = int(band_share(plan) * rows)
    whole_bytes = None if plan.cache_bytes is None else plan.cache_bytes // plan.n_problems
    part_rows = min(BAND_OVERSAMPLE * -(-whole_rows // K), whole_rows)
    part_bytes = None if whole_bytes is None else min(BAND_OVERSAMPLE * whole_bytes // K, whole_bytes)
    return (whole_rows, whole_bytes), (part_rows, part_bytes)


def _band_warm_start_on_worker(plan, elapsed, wide, *firsts):
    """The parts' samples joined and solved on a worker: ``(W0, records, metric, complete)`` as
    :func:`~..primal.sample_band.warm_starts` gives them (to ``plan.tol`` where the samples hold
    every row; rows too wide for the smoothed Newton's Hessian by dual coordinate descent), with the
    band's metric; None where a part kept no sample.  ``wide``: the rows are wider than the band
    reads on a cluster (:data:`~..primal.sums.CG_WIDTH`), which then solves only samples of every
    row: else ``W0`` is None and the records say the sample's size (nothing solved)."""
    from ..dual.offset import solve_with_offset
    from ..plan.problem import BAND_SOLVER
    from ..primal.reads import band_metric
    from ..primal.sample_band import WARM_TOL, warm_starts

    samples = [f.sample for f in firsts if f.sample is not None]
    if not samples or not all(f.clean for f in firsts):  # as cluster_sample: no sample to solve
        return None
    rows = sum(f.totals.rows for f in firsts)
    complete = len(samples) == len(firsts) and all(s.complete for s in samples)
    counted = {
        "rows_read": int(rows),
        "bytes_read": int(sum(f.totals.bytes for f in firsts)),
        "read_retries": 0,
    }
    clock = time.perf_counter() - elapsed
    if wide and not complete:  # the parts' samples are not joined: nothing is solved
        records = [
            {"pass": 0, "seconds": clock, "solver": BAND_SOLVER, "class": plan.labels[c],
             "sample_rows": int(sum(s.n_rows for s in samples)),
             "sample_bytes": int(sum(s.nbytes for s in samples)), **counted}
            for c in range(plan.n_problems)
        ]  # fmt: skip
        return None, records, None, False
    sample = cluster_sample(firsts)
    tol = plan.tol if complete else WARM_TOL
    starts, records = warm_starts(sample, plan, clock, counted, tol, wide=solve_with_offset)
    return starts, records, (None if complete else band_metric(sample)), complete


def _band_counts(root):
    """The counts of a read's joined ``(sums, counts)``: all the client gathers of it."""
    return root[1]


def _take_band_steps_on_worker(problems, root, plan, held=None, todo=()):
    """The band's step of each of ``problems`` (those of ``todo``) from the read's joined sums, on the
    worker that holds them (:func:`~..primal.sample_band.take_band_steps`): the joined band never
    moves to the client.  ``held``: the problems' kept dual values (:func:`_kept_held`), which stay
    on this worker from read to read, given back to ``problems`` (the client's copies carry none)."""
    from ..primal.sample_band import take_band_steps

    if held is not None:
        for c, problem in zip(todo, problems, strict=True):
            problem.kept = held[c]
    return take_band_steps(problems, root[0], plan)


def _kept_held(stepped, todo, held):
    """``held`` (a dict of each problem's :class:`~..primal.sample_band.KeptAlphas` by its index, or
    None) with those of ``stepped``, the problems of ``todo``: what the root worker keeps."""
    return {**(held or {}), **{c: problem.kept for c, problem in zip(todo, stepped, strict=True)}}


def _without_kept(stepped):
    """Copies of ``stepped`` without their kept dual values: what the client receives."""
    light = [copy.copy(problem) for problem in stepped]
    for problem in light:
        problem.kept = None
    return light


def _kept_of_part(held, todo, part):
    """Of ``held`` (:func:`_kept_held`), the kept values of part ``part``'s rows for each problem of
    ``todo``: what its read gets, from the root worker."""
    return [held[c].of_part(part) for c in todo]


def fit_band_cluster(client, source, plan, *, clock_start, on_pass=None, placement=None):
    """The band from a sample over ``client``'s workers: a :class:`~..plan.result.FitResult` with its
    ``plan`` (labels counted on the workers) and ``parts``.  It raises
    :class:`~..primal.sample_band.BandStalled` where it cannot read on (a value beyond the sums'
    range; rows too wide for its reads; a read that gains nothing, :func:`~..primal.sample_band.gained`),
    and, as one machine's ``solver="auto"``, where its first step is certified on less than
    :data:`~..primal.sample_band.BAND_MIN_REACH` of its length: SBM's trainer on one worker trains on
    (:mod:`.root_sbm`), whose passes do not grow with the parts either: at a 10% cache on K = 2..100
    workers a9a then took 4 reads after the first where the band read on for 13-20, ijcnn1 2-4, w8a
    6-8 where 6 (docs/benchmarks.md, "The hinge on a cluster of K parts: cluster='auto'").  (Until
    CoCoA+ was replaced there, whose rounds grow with the parts, the band never gave up by its reach
    on a cluster.)  What moves per read: ``W`` out to
    each part with its rows' kept values, the parts' sums and bands up the tree to the first worker,
    which solves the band's problems and keeps every row's dual value from read to read (each part's
    read gets its own rows' from it); each problem's points (a few vectors) to it and back.  Where
    every part's rows fit its budget, each read is a pass over the rows its first read kept
    (:func:`part_held_band_sums`), as :func:`fit_primal_cluster`'s steps."""
    from ..primal.sample_band import BandStalled, band_reads, solved_sample
    from ..primal.sums import CG_WIDTH

    plan, placement, scaler, futures, firsts = sampled_parts(
        client, source, plan, placement, keep=_keeps_rows()
    )
    parts, workers = placement.parts, placement.workers
    K = len(parts)
    learned = (plan, placement, scaler)  # what the method the band gives way to needs not read again
    if not all(f.clean for f in firsts):  # a value beyond the sums' range: the dual methods train
        raise BandStalled([], 0.0, counted=learned)
    elapsed = time.perf_counter() - clock_start
    width = plan.model_width(source.n_features) + 1
    wide = width > CG_WIDTH
    samples = _samples_of(client, futures, workers, firsts)
    warm = submit(client, _band_warm_start_on_worker, plan, elapsed, wide, *samples, worker=workers[0])
    starts, history, metric, complete = gather(client, [warm], workers)[0]
    held_rows = None  # where every part holds its rows: each read is a pass over them
    if starts is not None and not complete and all(first.holds_rows for first in firsts):
        held_rows = _held_parts(client, futures, workers)
    del futures, samples, warm  # the parts' samples are not needed any more (their rows, where held, are)
    moved = {"bytes_sent": 0, "bytes_received": 0, "parts": K}
    for record in history:
        record.update(moved)
    if starts is None:  # rows too wide for the band's reads, more than cache_bytes holds
        raise BandStalled(history, 0.0, why=(
            f"the model is {width} wide (the features and the intercept), beyond the {CG_WIDTH} the band "
            "reads on a cluster, and cache_bytes did not hold every row, whose problem one worker then "
            "solves. A cache_bytes of the rows' size lets it."
        ), counted=learned)  # fmt: skip
    if complete:  # every row came in the samples: their problem is the data's, solved
        if on_pass is not None:
            on_pass(history, starts)
        return replace(
            solved_sample(starts, history, plan), plan=plan, parts=placement.record(), scaler=scaler
        )
    prints = [first.prints for first in firsts]
    rows = sum(f.totals.rows for f in firsts)
    whole, band = part_band_budget(plan, rows, K)
    band = (*band, metric)
    add = partial(add_band_sums, band_rows=whole[0], band_bytes=whole[1])

    # The problems' kept dual values after their first step: a future on the root worker, where the
    # steps are taken; each read's part gets its own rows' from there, never through the client.
    state = {"held": None, "todo": None}

    def read(W, todo, kept=None):
        # Each part gets its own rows' kept dual values only (sample_band.block_base: an id names its part).
        state["todo"], held = todo, state["held"]
        if held is None:  # the first read: each row at its piece at its point (no listed row)
            mine = [None if kept is None else [k and k.of_part(j) for k in kept] for j in range(K)]
            moved["bytes_sent"] += sum(k.nbytes for m in mine if m for k in m if k is not None)
        else:
            mine = [submit(client, _kept_of_part, held, todo, j, worker=workers[0]) for j in range(K)]
        if held_rows is not None:  # a pass over the rows each part holds
            parts_read = [
                submit(client, part_held_band_sums, rows_j, plan, W, todo, *band, mine[j], j, worker=w)
                for j, (rows_j, w) in enumerate(zip(held_rows, workers, strict=True))
            ]
            wait(client, parts_read, workers)
            moved["bytes_sent"] += K * W.nbytes
        else:
            parts_read = [
                submit(client, part_band_sums, packed, plan, W, todo, *band, table, mine[j], j, worker=w)
                for j, ((w, packed), table) in enumerate(zip(parts, prints, strict=True))
            ]
            wait(client, parts_read, workers, placement.reads)
            moved["bytes_sent"] += sum(packed.nbytes + W.nbytes for _, packed in parts)
        root = tree_sum(client, parts_read, workers, add=add)  # on workers[0]
        counts = gather(client, [submit(client, _band_counts, root, worker=workers[0])], workers)[0]
        return root, counts

    def take(problems, root, plan):  # the band's problems solved where the tree joined the bands
        held, todo, first = state["held"], state["todo"], workers[0]
        stepped = submit(client, _take_band_steps_on_worker, problems, root, plan, held, todo, worker=first)
        state["held"] = submit(client, _kept_held, stepped, todo, held, worker=first)
        moved["bytes_sent"] += sum(p.nbytes for p in problems)
        problems = gather(client, [submit(client, _without_kept, stepped, worker=first)], workers)[0]
        moved["bytes_received"] += sum(p.nbytes for p in problems)
        return problems

    counted = {key: history[0][key] for key in ("rows_read", "bytes_read", "read_retries")}

    def on_read(records, W):
        return on_pass is not None and on_pass(records, W)

    try:
        result = band_reads(
            read, plan, starts, history, on_read, clock_start, counted, lambda: dict(moved), GIVE_UP,
            take=take,
        )  # fmt: skip
    except BandStalled as stalled:
        stalled.counted = learned
        raise
    finally:
        state.clear()  # the kept values leave the root worker with the fit
    return replace(result, plan=plan, parts=placement.record(), scaler=scaler)


# -- the multinomial (softmax) model's Newton reads (:mod:`~..primal.multinomial_reads`) ---------------


def part_softmax_sums(packed, problem, W, prints=None):
    """One part's ``(sums, counts)`` at ``W``: its :class:`~..primal.multinomial_reads.SoftmaxSums`
    (one read of its partitions, whose fingerprints must match ``prints``) and its rows, bytes,
    skipped rows and retries (a :class:`~..primal.sums.Sums`)."""
    from ..primal.multinomial_reads import sum_blocks
    from ..primal.reads import read_once
    from ..primal.sums import Sums

    source = part_source(packed, prints)
    counts = Sums.zeros(0, 0)
    with synchronous():
        sums = sum_blocks(read_once(source, problem.plan, counts), problem, W)
    return sums, counts


def part_held_softmax_sums(held, problem, W):
    """:func:`part_softmax_sums` of the rows a part holds (:func:`part_held`): a pass over them, no
    read (its counts: no rows, bytes or retries read; the rows the first read skipped)."""
    from ..primal.multinomial_reads import sum_blocks
    from ..primal.reads import pass_over, read_nothing
    from ..primal.sums import Sums

    counts = Sums.zeros(0, 0)
    sums = sum_blocks(pass_over(held, counts), problem, W)
    return sums, read_nothing(counts)


def _softmax_warm_start_on_worker(problem, elapsed, *firsts):
    """The parts' samples joined on this worker and solved (:func:`~..primal.multinomial_reads.warm_start`):
    ``(W0, notes, result, rows_seen, metric)``, ``metric`` the sample's
    (:func:`~..primal.reads.band_metric`).  ``elapsed``: the fit's seconds so far on the client."""
    from ..primal.multinomial_reads import warm_start
    from ..primal.reads import band_metric

    sample = cluster_sample(firsts)
    if sample is None:  # no part kept rows: the reads start from 0
        return None, {}, None, 0, None
    W0, notes, result = warm_start(sample, problem, time.perf_counter() - elapsed)
    return W0, notes, result, sample.rows_seen, band_metric(sample)


def fit_softmax_cluster(client, source, plan, *, clock_start, on_pass=None, placement=None, sampled=None):
    """``multi_class="multinomial"`` on a cluster: a :class:`~..plan.result.FitResult` with its
    ``plan`` (labels counted on the workers) and ``parts`` (module docstring).  ``sampled``:
    :func:`sampled_parts`' read where it was made before (None: made here).  Where every part's
    rows fit its budget and the reads form the Hessian, each read after the first is a pass over the
    rows the parts' first read kept (:func:`part_held_softmax_sums`), as :func:`fit_primal_cluster`'s."""
    from ..primal.multinomial_reads import first_totals, newton_reads, softmax_columns, softmax_model
    from ..primal.newton import MAX_WIDTH

    plan, placement, scaler, futures, firsts = sampled or sampled_parts(
        client, source, plan, placement, keep=_keeps_rows()
    )
    parts, workers = placement.parts, placement.workers
    # The classes' weights of every part, for the model's costs (class_weight="balanced").
    weights = dict.fromkeys(plan.classes.tolist(), 0.0)
    for first in firsts:
        for label, (weight, *_) in (first.moments or {}).items():
            weights[label] += weight
    beyond = next((f.beyond for f in firsts if f.beyond is not None), None)
    totals = firsts[0].totals
    for first in firsts[1:]:
        totals.add(first.totals)
    K, D = plan.classes.shape[0], softmax_columns(plan, source.n_features)
    products = K * D > MAX_WIDTH  # wider than the reads' formed Hessian: Newton-CG on the parts read
    problem = softmax_model(plan, source.n_features, list(weights.values()), beyond, products=products)
    moved = {"bytes_sent": 0, "bytes_received": 0}
    elapsed = time.perf_counter() - clock_start
    samples = _samples_of(client, futures, workers, firsts)
    warm = submit(client, _softmax_warm_start_on_worker, problem, elapsed, *samples, worker=workers[0])
    W, notes, result, rows_seen, problem.metric = gather(client, [warm], workers)[0]
    held = None  # where every part holds its rows (and the reads form the Hessian): passes over them
    if result is None and not products and all(first.holds_rows for first in firsts):
        held = _held_parts(client, futures, workers)
    del futures, samples, warm  # the parts' samples are not needed any more (their rows, where held, are)
    if W is None:
        W = np.zeros((plan.classes.shape[0], problem.penalised.shape[0]))
    counted = first_totals(totals)
    if result is not None:  # every row came in the samples: their problem is the data's, solved
        for record in result.history:
            record.update({**counted, **moved}, parts=len(parts), rows_read=rows_seen, **{"pass": 0})
        if on_pass is not None and result.history:
            on_pass(result.history[-1:], result.W)
        return replace(result, plan=plan, parts=placement.record(), scaler=scaler)
    if products:  # the parts read again, held on their workers, and Newton-CG from the warm start
        from .products import TruncatedNewton, softmax_products

        driver = TruncatedNewton(client, placement, plan, source.n_features, clock_start)
        driver.count()
        result = softmax_products(
            driver, plan, source.n_features, (W, problem), {**counted, "notes": notes}, on_pass, clock_start
        )
        return replace(result, plan=plan, parts=placement.record(), scaler=scaler)
    prints = [first.prints for first in firsts]  # every later read of a part must match its first

    def evaluate(point):
        if held is not None:  # a pass over the rows each part holds
            futures = [
                submit(client, part_held_softmax_sums, rows, problem, point, worker=w)
                for rows, w in zip(held, workers, strict=True)
            ]
            wait(client, futures, workers)
            moved["bytes_sent"] += len(parts) * point.nbytes
        else:
            futures = [
                submit(client, part_softmax_sums, packed, problem, point, table, worker=w)
                for (w, packed), table in zip(parts, prints, strict=True)
            ]
            wait(client, futures, workers, placement.reads)
            moved["bytes_sent"] += sum(
                packed.nbytes + point.nbytes + table.nbytes
                for (_, packed), table in zip(parts, prints, strict=True)
            )
        root = tree_sum(client, futures, workers, add=add_softmax_sums)
        sums, counts = gather(client, [root], workers)[0]
        moved["bytes_received"] += sums.hessian.nbytes + sums.gradient.nbytes
        return sums, counts, {**moved, "parts": len(parts)}

    result = newton_reads(
        evaluate, problem, W, {**counted, "notes": notes}, on_pass or (lambda records, W: False), clock_start
    )
    return replace(result, plan=plan, parts=placement.record(), scaler=scaler)


def _register_sizes():
    """Dask's memory accounting of a worker counts the rows a part holds by their bytes."""
    from dask.sizeof import sizeof

    from ..primal.reads import HeldRows

    sizeof.register(HeldRows)(lambda held: held.nbytes)


_register_sizes()

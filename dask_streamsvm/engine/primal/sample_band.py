"""The hinge loss out of core: SBM's informative cache chosen from a sample, certified in few reads.

The dual solvers' caches (StreamSVM, SBM) learn which rows are informative by visiting them many
times a read.  Here a read finds them at once, from a point close to the optimum (issue 52):

1. the read that counts the classes keeps a uniform sample (:func:`~.reads.first_read`); its hinge
   problem, its costs scaled to the rows read, is solved in memory (:func:`solve_band_problem`:
   the smoothed Newton, from the solution of the sample's own random tenth, :func:`warm_starts`;
   or dual coordinate descent on rows too wide for its Hessian), and its solution ``w0`` is the
   first point read;
2. a read at a point ``w`` computes every row's shortfall ``s_i = 1 - m_i``
   (:func:`~...kernels.band.piece_rows`): the rows nearest the hinge point, by the key
   ``|s_i| / ||x~_i||`` in the band's metric (:func:`~.reads.band_metric`), go to the band (within
   ``cache_bytes``), every other row is held on its piece: at ``alpha_i = C_i`` where ``s_i > 0``,
   whose sums ``u = sum C_i y_i x~_i`` and ``S = sum C_i`` are all the read keeps of them (one
   vector, so that this works for wide rows too), and at ``alpha_i = 0`` elsewhere; the read's
   primal value at ``w`` is exact;
3. the band's problem with those rows as an offset (:func:`solve_band_problem`) is solved in
   memory.  Its dual point, the band's ``alpha`` with the held rows' ``C_i`` and 0, is feasible for
   the data's dual: its value is a lower bound on the data's optimum, without a read.  Its primal
   at the band's solution ``w1`` is the data's primal there wherever no held row changes piece on
   the step from ``w`` to ``w1``: the bound of the squared hinge's band
   (:func:`~.newton.band_holds`: the step's length in the band's metric below the smallest key
   left out).  Then the gap is exact and the fit ends after two reads; else the next read is made
   at ``w1``, certifies it, and its band takes in the rows that changed piece.

4. where that step does not converge, every row keeps its dual value from then on (streamed and on a
   cluster; :class:`KeptAlphas`): its piece at the first point read, unless a band solve gave it
   another, listed by the row's id (8 bytes of id and 8 of value a row a band ever held, with the
   problem).  Holding the rows outside each band on their piece anew at every read, as step 2
   does, loses the values the solves gave the rows that leave the band, and the dual stalls (a9a
   and w8a in a 10% cache, C = 1: a relative gap of 3.6 and 1.7 after any number of reads in a
   prototype, docs/benchmarks.md, "The hinge at a 10% cache: every row's alpha kept").  Each later
   read at ``w`` sums every row's loss at ``w`` (the primal there, exact), its ``alpha_i`` and
   ``alpha_i y_i x~_i`` (the offset, exact for any feasible point), and keeps in the band the rows
   that most violate the dual's optimality at ``w`` (:func:`band_keys`); the band is solved from
   its kept values with every other row as the offset, the best dual point between its kept
   values and the solve's kept (:func:`dual_on_segment`: the kept point's dual never falls), and
   the next read is made at the solve's solution.  The reads do not grow with a cluster's parts,
   the band being solved on one worker.  Reads that leave the point and the values as they were
   (:data:`STALL_READS` in a row) are a fixed point: the band gives way (:class:`BandStalled`).

The certificate never claims more than it proved: the dual value is always a feasible point's, and
the primal value either a read's or the bound's.
"""

import time

import numpy as np
import scipy.sparse as sp

from ..data.malloc import let_go
from ..plan.certificate import Certificate, check_gap
from ..plan.problem import BAND_SOLVER, encode_block
from ..plan.result import FitResult
from ..plan.threads import memory_row_threads, row_threads
from .newton import MAX_WIDTH, band_reach, band_share
from .reads import Sample, Sampler, StreamRead, band_metric, pass_over, read_nothing
from .smoothed import Rows, offset_primal, solve_smoothed
from .sums import Sums, chunk_rows
from .warm import BAND_ROW_EXTRA, memory_sample, sample_rows

# The band's problem is solved to this share of the fit's tolerance, so that what it leaves adds
# little to the gap the certificate proves.
BAND_TOL_SHARE = 0.1
# solver="auto" gives the band up after its first read (BandStalled) where less than this share of
# the band's step is certified (band_reach).  Measured (tol 1e-3): 0.62-0.64 on the tall 2M x 60
# sets in a 10% cache (C = 0.01 and 1), which converge after that read; at C = 1, 0.02-0.3 on ijcnn1
# (10-50% caches) and a9a (30-50%), which then gain 20-50% of the gap a read; 0 on a9a at 10% and
# 0.001-0.003 on w8a (gap 0.1-39, a few percent gained a read), where the dual schedules converge in
# fewer reads.  (Those gains are the certified points'; ijcnn1 at 10% gains more where the reads go
# beyond them, _Problem._next_point.)
BAND_MIN_REACH = 0.05
# Where a read beyond a band step's certified part finds no lower primal, the next is this many
# times nearer along the step (_Problem._next_point).  Measured (C = 1, 10% cache, tol 1e-3, ijcnn1
# in 1, 2, 8 and 16 partitions; a9a, gap after 12 reads): 4 gave 6, 3, 3, 2 reads and a9a 0.03-0.08;
# 2: 6, 3, 3, 2 and 0.03-5.1; 8: 4, 4, 3, 2 and 0.03-0.08.  Reading the certified ends only took 9
# reads on ijcnn1 in 8 partitions (a9a 0.13); the solutions until one gained nothing, then the
# certified ends, 7, 5, 3, 2 (a9a 0.11-0.2).
STEP_SHRINK = 4
# Reads after the first, the rows keeping their dual values, that leave every problem's point
# where it was read and its best primal and dual values as they were, this many in a row, have
# reached a fixed point of the band's choice: the next read would find the same rows and solve the
# same band (one such read may still have moved the kept values, on a tie of the segment's ends).
# Measured (C = 0.5, sparse 1,000 x 200 and 3,000 x 1,000 rows, a 10% cache: a band of fewer
# rows than the model is wide, filled by its free rows, which it takes first): from read 21-24 on
# the point and the values stood still to the last digit, at gaps of 0.65-1.6, until max_iter.
STALL_READS = 2
# The sample's problem (the first point read) is solved to this relative gap: the sample's own
# distance from the data's optimum is far larger.
WARM_TOL = 1e-4
# A sample of every row (its solve is the fit) of fewer rows than this many times the model's width
# is solved by dual coordinate descent (``wide``), as the door solves such rows in memory, not by the
# smoothed Newton: on sparse rows 1 to 16 times as many as their 401 columns (C = 0.5, tol
# 1e-6), the smoothed Newton took 136-664 steps and 0.6-5.5 s where the dual took 0.01-0.03 s (to
# 1e-6 at 1 to 4 times; at 8 and 16 it stopped at 4e-6 and 1.8e-5 after its 1,000 passes, and the
# smoothed Newton goes on from its point: solve_band_problem); on 3,000 rows of 1,500 columns 639
# steps and 84 s, stopping at a gap of 0.145.  The door's tall rule (choice.PRIMAL_RATIO); every
# complete sample measured in docs/benchmarks.md is taller.
SMOOTHED_MIN_RATIO = 100


# -- every row's dual value, kept from read to read (the module docstring's step 4) --------------

# A row's id: its part (a cluster's; 0 on one machine), its partition in the part, and its place in
# the partition, in the bits below each.
PART_SHIFT = 48
PARTITION_SHIFT = 32

# A band row's values kept beside it (:class:`~.reads.Sampler`'s ``extra``): its shortfall at the
# point read, its kept ``alpha_i`` and its id.
BAND_ROW = np.dtype([("shortfall", np.float64), ("alpha", np.float64), ("id", np.int64)])


def block_base(part, partition):
    """The id of the first row of ``partition`` of ``part``."""
    return (int(part) << PART_SHIFT) | (int(partition) << PARTITION_SHIFT)


class KeptAlphas:
    """One problem's dual point: every row at its piece at ``reference`` (the model's point, the
    bias last) unless ``ids`` (sorted) lists it with its value in ``alpha``."""

    def __init__(self, reference, ids=None, alpha=None):
        self.reference = np.array(reference, dtype=np.float64)
        self.ids = np.zeros(0, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
        self.alpha = np.zeros(0) if alpha is None else np.asarray(alpha, dtype=np.float64)

    def fresh_at(self, w):
        """Whether a read at ``w`` finds every row at its piece there: no row listed, and ``w`` the
        reference (the first band's read, whose keys and bound are the held band's)."""
        return not self.ids.size and np.array_equal(self.reference, w)

    @property
    def nbytes(self):
        return self.reference.nbytes + self.ids.nbytes + self.alpha.nbytes

    def merged(self, ids, alpha):
        """A copy with the rows ``ids`` at ``alpha`` (a row listed before takes the new value)."""
        ids = np.asarray(ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        ids, alpha = ids[order], np.asarray(alpha, dtype=np.float64)[order]
        if ids.size and np.any(ids[1:] == ids[:-1]):
            raise ValueError("a band holds a row twice")
        keep = ~np.isin(self.ids, ids, assume_unique=True)
        all_ids = np.concatenate([self.ids[keep], ids])
        values = np.concatenate([self.alpha[keep], alpha])
        order = np.argsort(all_ids, kind="stable")
        return KeptAlphas(self.reference, all_ids[order], values[order])

    def of_part(self, part):
        """The rows of ``part`` only: what that part's read needs."""
        lo, hi = np.searchsorted(self.ids, [block_base(part, 0), block_base(part + 1, 0)])
        return KeptAlphas(self.reference, self.ids[lo:hi], self.alpha[lo:hi])

    def of_block(self, base, n):
        """``(places, values)`` of the listed rows among the ``n`` rows from the id ``base``."""
        lo, hi = np.searchsorted(self.ids, [base, base + n])
        return self.ids[lo:hi] - base, self.alpha[lo:hi]


def _margins(X, w, bias):
    return np.asarray(X @ w[:-1]).ravel() + float(bias) * float(w[-1])


def block_alphas(at_reference, cost, kept, base):
    """The kept ``alpha_i`` of a block's rows whose shortfalls at ``kept.reference`` are
    ``at_reference`` (costs ``cost``, the first id ``base``): ``C_i`` where that shortfall is
    positive, 0 elsewhere, or the row's listed value."""
    alpha = np.where((cost > 0.0) & (at_reference > 0.0), cost, 0.0)
    places, values = kept.of_block(base, at_reference.shape[0])
    alpha[places] = values
    return alpha


def band_keys(shortfall, alpha, cost, lengths):
    """Each row's key for the band (smallest first): the free rows (``0 < alpha_i < C_i``) at
    ``-inf``; a row whose ``alpha_i`` violates optimality at the point read (at 0 with a positive
    shortfall, at ``C_i`` with a negative one) at minus its violation over its length; every other
    row at its distance from the margin over its length; a row of no cost never (inf)."""
    at_zero, at_top = alpha <= 0.0, alpha >= cost
    violation = np.where(
        at_zero, np.maximum(shortfall, 0.0), np.where(at_top, np.maximum(-shortfall, 0.0), np.abs(shortfall))
    )
    keys = np.where(violation > 0.0, -violation / lengths, np.abs(shortfall) / lengths)
    keys = np.where(at_zero | at_top, keys, -np.inf)
    return np.where(cost > 0.0, keys, np.inf)


def band_rows(shortfall, cost, base):
    """The :data:`BAND_ROW` of rows whose shortfalls ``shortfall`` (and costs ``cost``) a read at
    their reference point took: each at its piece there, its id from ``base``."""
    extra = np.empty(shortfall.shape[0], dtype=BAND_ROW)
    extra["shortfall"] = shortfall
    extra["alpha"] = np.where((cost > 0.0) & (shortfall > 0.0), cost, 0.0)
    extra["id"] = base + np.arange(shortfall.shape[0], dtype=np.int64)
    return extra


def metric_lengths(X, metric):
    """Each row's ``||x~_i||`` in the band's ``metric`` ``(center, scale)``: ``((x_i - center) /
    scale, 1)``, sparse rows without the center (:func:`~.reads.band_metric` gives them none)."""
    center, scale = metric
    inv = 1.0 / scale
    if sp.issparse(X):
        return np.sqrt(1.0 + np.asarray(X.multiply(X) @ (inv * inv)).ravel())
    out = np.empty(X.shape[0])
    step = max(1, (1 << 22) // max(1, X.shape[1]))  # a temporary of 32 MiB at most
    for lo in range(0, X.shape[0], step):
        t = (X[lo : lo + step] - center) * inv
        out[lo : lo + step] = np.sqrt(1.0 + np.einsum("ij,ij->i", t, t))
    return out


def add_kept_rows(sampler, X, partition, base, y, cost, w, bias, kept, metric, u, totals):
    """Rows ``X`` of ``partition`` (their first id ``base``) at ``w`` for one problem whose dual
    point is ``kept``: the loss at ``w`` (``totals[0]``), ``sum alpha_i`` (``totals[1]``) and ``sum
    alpha_i y_i x~_i`` (``u``) of every row, and the rows to ``sampler`` by :func:`band_keys`
    (lengths in the band's ``metric``), each with its :data:`BAND_ROW`.  Dense rows in one compiled
    pass (:func:`~...kernels.band.kept_rows`, each row at its piece at the reference, float32 rows
    without a float64 copy), the listed rows' own values then put in their pieces' place."""
    from ...kernels.band import kept_rows

    rows, n = X, X.shape[0]
    places, values = kept.of_block(base, n)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        shortfall = 1.0 - y * _margins(X, w, bias)
        at_reference = 1.0 - y * _margins(X, kept.reference, bias)
        lengths = metric_lengths(X, metric)
        alpha = block_alphas(at_reference, cost, kept, base)
        totals[0] += float(np.sum(np.where(cost > 0.0, cost * np.maximum(shortfall, 0.0), 0.0)))
        totals[1] += float(alpha.sum())
        ay = alpha * y
        u[:-1] += np.asarray(X.T @ ay).ravel()
        u[-1] += float(bias) * float(ay.sum())
    else:
        X = X if X.dtype in (np.float32, np.float64) else np.asarray(X, dtype=np.float64)
        X = np.ascontiguousarray(X)
        center, scale = metric
        shortfall, at_reference, lengths = terms = np.empty((3, n))
        kept_rows(X, y, cost, w, kept.reference, float(bias), center, 1.0 / scale, terms, u, totals)
        alpha = np.where((cost > 0.0) & (at_reference > 0.0), cost, 0.0)
        if places.size:  # the listed rows: their values where the pass summed their pieces'
            change = values - alpha[places]
            alpha[places] = values
            f = change * y[places]
            u[:-1] += np.asarray(X[places].T @ f, dtype=np.float64).ravel()
            u[-1] += float(bias) * float(f.sum())
            totals[1] += float(change.sum())
    keys = band_keys(shortfall, alpha, cost, lengths)
    extra = np.empty(n, dtype=BAND_ROW)
    extra["shortfall"], extra["alpha"] = shortfall, alpha
    extra["id"] = base + np.arange(n, dtype=np.int64)
    sampler.add_rows(partition, rows, y, cost, keys, extra=extra)


class BandRead(StreamRead):
    """``read(W, todo)`` for the hinge band: one read of every partition at the points ``W`` of the
    problems ``todo``, per problem a :class:`BandSums` (the read's hinge loss, the sums of the rows
    on the linear piece and the band, with its rows' shortfalls).  The reader, its overlap and its
    context are :class:`~.reads.StreamRead`'s."""

    part = 0  # the part of a cluster this read is (its rows' ids: block_base)

    def __call__(self, W, todo, kept=None):
        """``kept``: per problem of ``todo``, its :class:`KeptAlphas` (None: its rows held on
        their piece at its point, the held band's read)."""
        plan = self.plan
        k, D = len(todo), W.shape[1]
        kept = [None] * k if kept is None else kept
        totals = np.zeros((k, 2))
        u = np.zeros((k, D))
        counts = Sums.zeros(0, 0)
        bands = [Sampler(self.band_rows, self.band_bytes, expected=self.rows or None) for _ in todo]
        metric = self._metric(D - 1)
        for block in self.blocks(counts):
            if block.n_rows:
                Y, cost = encode_block(plan, block)
                base = block_base(self.part, block.partition)
                for j, c in enumerate(todo):
                    if kept[j] is None or kept[j].fresh_at(W[j]):  # every row at its piece at W[j]
                        ids = None if kept[j] is None else base
                        args = (plan.bias, metric, u[j], totals[j], ids)
                        _add_rows(bands[j], block, Y[c], cost[c], W[j], *args)
                    else:
                        add_kept_rows(
                            bands[j], block.X, block.partition, base, Y[c], cost[c], W[j], plan.bias,
                            kept[j], metric, u[j], totals[j],
                        )  # fmt: skip
        self.rows = counts.rows
        out = _read_band_sums(bands, totals, u, metric, [k is not None for k in kept])
        kept = [b.band for b in out if b.band is not None]
        self._band = (sum(b.n_rows for b in kept), sum(b.nbytes for b in kept))
        return out, counts


class HeldBandRead(BandRead):
    """:class:`BandRead` over rows a first read kept (:class:`~.reads.HeldRows`, a cluster's part on
    its worker): each call a pass over them, the same :class:`BandSums`, and counts of no rows,
    bytes or retries read (the rows the first read skipped, as every read of them would)."""

    def __init__(self, held, plan, band_rows=0, band_bytes=None, band_metric=None):
        self.held, self.plan, self.band_metric = held, plan, band_metric
        self.band_rows = band_rows if plan.feature_map is None else 0
        self.band_bytes = band_bytes
        self.rows, self._band = held.n_rows, (0, 0)

    def blocks(self, counts):
        return pass_over(self.held, counts)

    def __call__(self, W, todo, kept=None):
        out, counts = super().__call__(W, todo, kept)
        return out, read_nothing(counts)


class MemoryBandRead:
    """:class:`BandRead`'s ``read(W, todo)`` on in-memory rows ``X`` (dense, the labels' indices
    ``y_index`` in ``plan.classes``, the rows' ``weights``): one pass over them per problem, its
    :class:`BandSums` as a read's.  The band is chosen exactly, from every row's key: the
    ``band_rows`` rows of smallest keys (fewer where ``band_bytes`` holds fewer), in their order, and
    ``outside`` the smallest key of the rest, whatever the rows' order (a read's :class:`Sampler`
    estimates its threshold from the partitions so far).  Beside ``X`` it holds each row's shortfall
    and key (16 bytes a row) while a problem is read; ``held``: the last pass's bands' rows and
    bytes, over its problems, for the records.  ``reads``: whether a pass counts as a read of
    the rows (not where they are what a read kept: :func:`fit_band_memory`'s ``counted``)."""

    def __init__(self, X, y_index, weights, plan, band_rows, band_bytes, metric, reads=True):
        self.X, self.y_index, self.weights, self.plan = X, y_index, weights, plan
        self.band_rows, self.band_bytes, self.reads = band_rows, band_bytes, reads
        self.held = {"band_rows": 0, "band_bytes": 0}  # the last pass's bands, over its problems
        self.metric = tuple(np.asarray(part, dtype=np.float64) for part in metric)

    def __call__(self, W, todo):
        from ...kernels.band import piece_rows

        plan, X = self.plan, self.X
        n = X.shape[0]
        center, scale = self.metric
        inv_scale = 1.0 / scale
        shortfall, keys = np.empty(n), np.empty(n)
        step = chunk_rows(W.shape[1])  # the rows' signs and costs made a chunk at a time
        out = []
        for j, c in enumerate(todo):
            signs, costs = plan.signs[c], plan.costs[c]
            u, totals = np.zeros(W.shape[1]), np.zeros(2)
            for lo in range(0, n, step):
                hi = min(lo + step, n)
                index = self.y_index[lo:hi]
                cost = costs[index] * self.weights[lo:hi]
                piece_rows(
                    X[lo:hi], signs[index], cost, W[j], float(plan.bias), center, inv_scale,
                    shortfall[lo:hi], keys[lo:hi], u, totals,
                )  # fmt: skip
            band, outside = self._band(keys, shortfall, c)
            out.append(BandSums(float(totals[0]), float(totals[1]), u, band, outside))
        kept = [b.band for b in out if b.band is not None]
        self.held = {"band_rows": sum(b.n_rows for b in kept), "band_bytes": sum(b.nbytes for b in kept)}
        counts = Sums.zeros(0, 0)
        if self.reads:
            counts.rows, counts.bytes = n, int(X.nbytes)
        return out, counts

    def _band(self, keys, shortfall, c):
        """Problem ``c``'s band from every row's key and shortfall: ``(Sample or None, outside)``."""
        X, n = self.X, self.X.shape[0]
        rows = self.band_rows
        if self.band_bytes is not None:  # a row's values, and its sign, cost, shortfall and key
            rows = min(rows, int(self.band_bytes // (X.itemsize * X.shape[1] + BAND_ROW_EXTRA)))
        finite = int(np.count_nonzero(keys < np.inf))
        if rows <= 0 or not finite:
            return None, float(np.min(keys)) if n else np.inf
        if finite <= rows:
            taken, outside = np.flatnonzero(keys < np.inf), np.inf
        else:
            order = np.argpartition(keys, rows)
            taken, outside = np.sort(order[:rows]), float(keys[order[rows]])
        index = self.y_index[taken]
        band = Sample(
            X[taken], self.plan.signs[c, index], self.plan.costs[c, index] * self.weights[taken], n,
            outside, self.metric, shortfall=shortfall[taken], keys=keys[taken],
        )  # fmt: skip
        return band, outside


def _read_band_sums(bands, totals, u, metric, kept):
    """Each problem's :class:`BandSums` from its read's band (a :class:`~.reads.Sampler`),
    ``totals`` (its loss and held cost) and ``u``; the band's keys measured in ``metric``;
    ``kept``: per problem, whether its rows' dual point was kept (:class:`KeptAlphas`)."""
    out = []
    for j, sampler in enumerate(bands):
        band = sampler.sample()
        if band is not None:
            band.outside, band.metric = sampler.outside, metric
        sums = BandSums(float(totals[j, 0]), float(totals[j, 1]), u[j], band, sampler.outside, kept[j])
        out.append(sums)
    return out


class BandSums:
    """One problem's read at ``w``: ``loss``, the hinge loss ``sum C_i max(0, s_i)``; ``held``, the
    sum of ``C_i``, and ``u``, of ``C_i y_i x~_i``, over the rows of ``s_i > 0``; ``band``, the rows
    nearest the hinge point (a :class:`~.reads.Sample` with their ``shortfall``, or None), and
    ``outside``, the smallest key of a row it left out.

    ``kept``: the read of a problem whose rows keep their dual values (:class:`KeptAlphas`): then
    ``held`` and ``u`` are the sums of ``alpha_i`` and ``alpha_i y_i x~_i`` over every row, and each
    band row's ``shortfall`` is a :data:`BAND_ROW` (its shortfall, alpha and id)."""

    def __init__(self, loss, held, u, band, outside=np.inf, kept=False):
        self.loss, self.held, self.u, self.band, self.kept = loss, held, u, band, kept
        self.outside = outside if band is None else band.outside  # the smallest key left out

    def add(self, other, band_rows=None, band_bytes=None):
        """This part's sums and another's (a cluster's tree node): their bands joined, the smaller of
        their smallest keys left out (one metric for both); with ``band_rows`` (and ``band_bytes``),
        the join cut to its rows of smallest keys within them (:meth:`~.reads.Sample.smallest`).
        A row cut is held on its piece as if its part had left it out: the bound counts its key."""
        outside = min(self.outside, other.outside)
        bands = [b for b in (self.band, other.band) if b is not None]
        band = bands[0] if bands else None
        if len(bands) == 2:
            a, b = bands
            X = sp.vstack([a.X, b.X], format="csr") if sp.issparse(a.X) else np.concatenate([a.X, b.X])
            band = Sample(
                X, np.concatenate([a.y, b.y]), np.concatenate([a.sample_weight, b.sample_weight]),
                a.rows_seen + b.rows_seen, outside, a.metric,
                shortfall=np.concatenate([a.shortfall, b.shortfall]), keys=np.concatenate([a.keys, b.keys]),
            )  # fmt: skip
        elif band is not None:
            band.outside = outside
        if band is not None and band_rows is not None:
            band = band.smallest(band_rows, band_bytes)
            outside = band.outside
            if not band.n_rows:
                band = None
        loss, held, u = self.loss + other.loss, self.held + other.held, self.u + other.u
        return BandSums(loss, held, u, band, outside, self.kept)

    def offset(self, bias):
        """``(u, S)`` of the rows held at ``alpha_i = C_i``: the read's less the band's own rows of
        ``s_i > 0`` (by the shortfalls the read computed: the same rows, whatever the rounding); of
        a ``kept`` read, the sums of every row's kept ``alpha_i`` less the band's own."""
        if self.band is None:
            return self.u.copy(), self.held
        band = self.band
        if self.kept:  # the band's own kept values taken out of the sums of every row
            on = band.shortfall["alpha"]
        else:
            on = np.where(band.shortfall > 0.0, band.sample_weight, 0.0)
        rows = Rows(band.X, band.y, band.sample_weight, bias)
        return self.u - rows.weighted_sum(on), self.held - float(on.sum())


def _add_rows(sampler, block, y, cost, w, bias, metric, u, totals, ids=None):
    """A block's rows at ``w`` for one problem: their shortfalls, keys and sums
    (:func:`~...kernels.band.piece_rows`) into ``u`` and ``totals``, the rows to ``sampler``; with
    ``ids`` (the block's first row's id), each row with its :data:`BAND_ROW` (its
    shortfall, its piece and its id), for a problem that keeps its rows' dual values."""
    X = block.X
    center, scale = metric
    n = X.shape[0]
    shortfall, keys = np.empty(n), np.empty(n)
    if sp.issparse(X):  # sparse rows keep their zeros: no center (band_metric gives them none)
        X = sp.csr_matrix(X)
        inv = 1.0 / scale
        lengths = np.sqrt(1.0 + np.asarray(X.multiply(X) @ (inv * inv)).ravel())
        shortfall[:] = 1.0 - y * (np.asarray(X @ w[:-1]).ravel() + float(bias) * w[-1])
        keys[:] = np.where(cost > 0.0, np.abs(shortfall) / lengths, np.inf)
        on = np.where((cost > 0.0) & (shortfall > 0.0), cost, 0.0)
        u[:-1] += np.asarray(X.T @ (on * y)).ravel()
        u[-1] += float(bias) * float(on @ y)
        totals[0] += float(on @ shortfall)
        totals[1] += float(on.sum())
    else:
        from ...kernels.band import piece_rows

        X = np.ascontiguousarray(X) if X.dtype in (np.float32, np.float64) else np.asarray(X, np.float64)
        piece_rows(X, y, cost, w, float(bias), center, 1.0 / scale, shortfall, keys, u, totals)
    extra = shortfall if ids is None else band_rows(shortfall, cost, ids)
    sampler.add_rows(block.partition, block.X, y, cost, keys, extra=extra)


class _Problem:
    """One binary problem's state: the point read next, the best certified point and values."""

    def __init__(self, w, wide=None):
        self.w = np.array(w, dtype=np.float64)
        self.wide = wide  # the solver of rows too wide for the Hessian (solve_band_problem)
        self.best_w, self.best_primal, self.best_dual = self.w.copy(), np.inf, -np.inf
        self.certified_step = False  # whether the last band's solution was certified by the bound
        self.reach = 0.0  # the share of the last band's step certified by the bound
        self.band_rows = 0
        self.step = None  # the last band's step: (its start, the band's solution, its reach)
        self.fraction = 1.0  # how far along a step its uncertified part is read (_next_point)
        self.trial = False  # whether self.w is such a point, its primal not known before its read
        self.kept = None  # its rows' dual point after the first band's read (KeptAlphas)

    @property
    def certificate(self):
        return Certificate(primal=self.best_primal, dual=self.best_dual)

    @property
    def nbytes(self):
        """The bytes of its points: what moves with it between machines."""
        points = [self.w, self.best_w, *([] if self.step is None else self.step[:2])]
        return sum(point.nbytes for point in points) + (0 if self.kept is None else self.kept.nbytes)

    def keep_alphas(self):
        """Its rows keep their dual values from its next read on (:class:`KeptAlphas`): each row at
        its piece at that read's point until a band solve gives it another."""
        self.kept = KeptAlphas(self.w)

    def take(self, sums, plan, tol):
        """The read's sums at ``self.w``: certify it, solve the band's problem, certify its solution
        where the bound holds; ``self.w`` becomes the next read's point (:meth:`_next_point`)."""
        w = self.w
        primal = 0.5 * float(w @ w) + sums.loss
        self.certified_step = False
        if self.kept is not None and not self.kept.fresh_at(w):
            return self._take_kept(sums, plan, tol, primal)
        if self.trial and primal >= self.best_primal:
            # The step's uncertified point, read, is no better than the best certified one: rows held
            # at the step's start crossed before it.  The next read is nearer along the same step.
            self.fraction /= STEP_SHRINK
            self.reach, self.band_rows = 0.0, 0  # no band solved at this read: its record says so
            self.w, self.trial = self._next_point()
            return
        if primal < self.best_primal:
            self.best_primal, self.best_w = primal, w.copy()
        band = sums.band
        if band is None:  # every row held: w is where the read found them
            return
        u, S = sums.offset(plan.bias)
        rows = Rows(band.X, band.y, band.sample_weight, plan.bias)
        self.band_rows = band.n_rows
        target = BAND_TOL_SHARE * tol
        w1, restricted, info = solve_band_problem(rows, plan.loss, target, (u, S), w, self.wide)
        self.best_dual = max(self.best_dual, restricted.dual)
        # On the part of the step no held row can change its piece on, the band's problem is the
        # data's: its primal there is exact, and no more than the chord's from w's to w1's.
        t = band_reach(w, w1 - w, band, plan.bias)
        self.reach = float(t)
        if t == 1.0:
            self.certified_step, point, value = True, w1, restricted.primal
        elif t > 0.0:
            point = w + t * (w1 - w)
            value = offset_primal(rows, point, (u, S))
        if t > 0.0 and value < self.best_primal:
            self.best_primal, self.best_w = value, point.copy()
        self.step = (w, w1, float(t))
        self.w, self.trial = self._next_point()
        if self.kept is not None and not self.certificate.relative_gap <= tol:
            # Not converged: the band's dual values (those of its solve's dual value) are kept with
            # the rows' ids, and the next read is made at the band's solution (:class:`KeptAlphas`).
            self.kept = self.kept.merged(band.shortfall["id"], info["alpha"])
            self.w, self.trial, self.step = w1, False, None

    def _dual_scale(self, total, w):
        """The share of a band solve's own tolerance that leaves a gap within the same share of the
        data's primal: its gap is relative to its own values, whose scale is the dual's at its start
        (``total``, the sum of every ``alpha_i``, and ``w``, theirs), far below the data's optimum
        early on."""
        start = abs(total - 0.5 * float(w @ w))
        return abs(self.best_primal) / max(start, abs(self.best_primal))

    def _take_kept(self, sums, plan, tol, primal):
        """:meth:`take` of a read whose rows kept their dual values: the read's primal at ``self.w``
        certified; the band's rows solved with every other row's kept value in the offset (by the
        smoothed Newton from ``self.w``, rows too wide for its Hessian by ``wide`` from their kept
        values: :func:`solve_band_problem`); the dual point of the solve's dual value kept
        (:class:`KeptAlphas`), a feasible point's, and the next read made at the solve's ``w``."""
        self.reach, self.band_rows = 0.0, 0
        if primal < self.best_primal:
            self.best_primal, self.best_w = primal, self.w.copy()
        band = sums.band
        if band is None:  # no row of a cost: nothing to solve
            return
        self.band_rows = band.n_rows
        offset = sums.offset(plan.bias)
        target = BAND_TOL_SHARE * tol * self._dual_scale(sums.held, sums.u)
        rows = Rows(band.X, band.y, band.sample_weight, plan.bias)
        # The smoothed Newton, which does not care how the columns are scaled; rows too wide for its
        # Hessian by dual coordinate descent from the band's kept values.
        start = band.shortfall["alpha"]
        w1, restricted, info = solve_band_problem(
            rows, plan.loss, target, offset, self.w, self.wide, alpha=start
        )
        # The values kept: the best dual point between the kept values and the solve's, so that the
        # kept point's dual never falls from read to read (the smoothed Newton does not start from
        # the kept values, and stops within its tolerance of the band's optimum, not above them).
        alpha, dual = dual_on_segment(rows, offset, start, info["alpha"])
        self.best_dual = max(self.best_dual, restricted.dual, dual)
        if self.certificate.relative_gap <= tol:  # converged: no read follows, nothing to keep
            return
        self.kept = self.kept.merged(band.shortfall["id"], alpha)
        self.w = w1

    def _next_point(self):
        """``(point, whether its primal is unknown until read)``: along the last band's step, where
        its certified part ends or, further, ``fraction`` of the way to the band's solution.

        The rows that cross on the step join the next band at the point read, so reading beyond
        the certified part gains where the step is good past it; where such a read finds a primal no
        lower than the best certified one, ``fraction`` is divided by :data:`STEP_SHRINK` and the
        next read is nearer along the same step (a line search of one read a trial), until it is
        within the certified part."""
        start, w1, t = self.step
        if t == 1.0:
            return w1, False
        share = max(t, self.fraction)
        return start + share * (w1 - start), share > t


def dual_on_segment(rows, offset, start, end):
    """``(alpha, dual)``: of the dual points ``start + theta (end - start)``, ``0 <= theta <= 1``, of
    ``rows`` (a :class:`~.smoothed.Rows`) with every other row's values as ``offset = (u, S)``, the
    best one's values and its dual value ``S + sum alpha_i - 1/2 ||u + sum alpha_i y_i x~_i||^2``.
    Every such point is feasible (both ends are in the box); the dual is a concave quadratic in
    ``theta``, whose maximiser is closed form.  Of the ends and that maximiser, the one of the
    highest value computed wins, ``end`` on a tie: so the dual at the values kept is at least
    ``start``'s (the kept point's) and ``end``'s (the solve's)."""
    u, S = offset
    delta = np.asarray(end, dtype=np.float64) - start
    v = u + rows.weighted_sum(start)
    dv = rows.weighted_sum(delta)
    slope, curvature = float(delta.sum()) - float(v @ dv), float(dv @ dv)
    if curvature > 0.0:
        peak = min(max(slope / curvature, 0.0), 1.0)
    else:  # the dual is linear along the segment: its better end
        peak = 1.0 if slope >= 0.0 else 0.0
    best = None
    for theta in dict.fromkeys((1.0, peak, 0.0)):  # the solve's end first: it wins a tie
        if theta in (0.0, 1.0):
            alpha = end if theta else start
        else:  # within the box but for rounding
            alpha = np.clip(start + theta * delta, 0.0, rows.cost)
        w = u + rows.weighted_sum(alpha)
        value = S + float(np.sum(alpha)) - 0.5 * float(w @ w)
        if best is None or value > best[1]:
            best = (np.array(alpha, dtype=np.float64), value)
    return best


def solve_band_problem(rows, loss, tol, offset=None, start=None, wide=None, short=False, alpha=None):
    """The problem of ``rows`` (a :class:`~.smoothed.Rows`) with ``offset = (u, S)`` to a relative gap of
    ``tol``, from ``start``: ``(w, certificate, info)``.  By the smoothed Newton
    (:func:`~.smoothed.solve_smoothed`) where the model is at most :data:`~.newton.MAX_WIDTH` wide
    and the rows are not ``short``; else by ``wide``, the door's dual coordinate descent with an
    offset (:func:`~..dual.offset.solve_with_offset`, of ``loss``), its rows of positive shortfall at
    ``start`` starting at their bound.  ``short`` rows (:data:`SMOOTHED_MIN_RATIO`) at most
    :data:`~.newton.MAX_WIDTH` wide go on by the smoothed Newton from the descent's point where it
    stops short of ``tol`` (dense rows at a tight ``tol``: 9e-6 on 499 x 4 Gaussian rows at 1e-8).
    ``alpha``: the rows' dual values ``wide`` starts from instead (the band's kept values).
    ``info["alpha"]``: the rows' dual point whose value is the certificate's dual."""
    if short and wide is not None:
        w, certificate, info = _solve_wide(rows, loss, tol, offset, start, wide)
        if certificate.relative_gap <= tol or rows.width > MAX_WIDTH:
            return w, certificate, info
        # coordinate descent stopped short (dense rows, a tight tol): the smoothed Newton goes on
        # from its point, and the certificate keeps the better primal and the better dual of both
        w2, second, info2 = solve_smoothed(rows, tol=tol, offset=offset, start=w)
        alpha = info["alpha"] if certificate.dual >= second.dual else info2["alpha"]  # the dual kept's
        w, both = better_of((w, certificate), (w2, second))
        return w, both, {**info2, "dcd_passes": info["dcd_passes"], "alpha": alpha}
    if rows.width <= MAX_WIDTH:
        # The rows' margins and sums split between the cores (row threads: kernels/band.py's
        # row_margins and weighted_rows on 200,000 x 60 float32 rows 1.0-1.2 ms where 1.7-1.9 ms);
        # a reader reading ahead meanwhile reads its few partitions.
        with row_threads(memory_row_threads(sp.issparse(rows.X))):
            return solve_smoothed(rows, tol=tol, offset=offset, start=start)
    if wide is None:
        raise ValueError(
            f"the band's model is {rows.width} wide, beyond the {MAX_WIDTH} whose Hessian its Newton "
            "steps form, and no solver of wider rows was given"
        )
    return _solve_wide(rows, loss, tol, offset, start, wide, alpha)


def better_of(first, second):
    """Of two solves ``(w, certificate)`` of one problem: the point of the lower primal, certified by
    the lower primal and the higher dual of both (each dual a feasible point's, so the pair is a true
    bound)."""
    (w1, c1), (w2, c2) = first, second
    w = w2 if c2.primal < c1.primal else w1
    return w, Certificate(primal=min(c1.primal, c2.primal), dual=max(c1.dual, c2.dual))


def _solve_wide(rows, loss, tol, offset, start, wide, alpha=None):
    """:func:`solve_band_problem` by ``wide``, from ``alpha`` or, without, its rows of positive
    shortfall at ``start`` at their bound."""
    if alpha is not None:
        return wide(rows.X, rows.y, rows.cost, rows.bias, loss=loss, tol=tol, offset=offset, alpha=alpha)
    margins = None if start is None else rows.margins(np.asarray(start, dtype=np.float64))
    return wide(rows.X, rows.y, rows.cost, rows.bias, loss=loss, tol=tol, offset=offset, margins=margins)


class BandStalled(Exception):
    """The band gives way: the first band's step was certified on less than :data:`BAND_MIN_REACH`
    of its length (the rows near the hinge point outnumber the band the budget holds, and the reads
    would make little progress each), its reads reached a fixed point (:data:`STALL_READS`), or it
    cannot read on (``why``).  ``history``: the records of the reads made; ``reach``: the share certified;
    ``why``: the user's sentence where the band gave way for another reason (None: the reach);
    ``after``: when, in words (:func:`band_note`'s); ``counted``: on a cluster, what the parts' first
    read learned, ``(plan with its labels, placement with its label counts and scaled parts, scaler)``,
    so that the method it gives way to reads neither the labels nor the scales again (None: nothing)."""

    def __init__(self, history, reach, why=None, after="one read", counted=None):
        super().__init__(why or f"the band certified {reach:.3g} of its step")
        self.history, self.reach, self.why, self.after = history, reach, why, after
        self.counted = counted


def band_note(reach, instead, why=None, after="one read"):
    """What the user is told where ``"auto"`` gave the band up (:class:`BandStalled`) for ``instead``
    ``after`` its first read (in memory: its first pass over the rows)."""
    if why is not None:
        return f"the band from a sample gave way to {instead} after {after}: {why}"
    return (
        f"the band from a sample gave way to {instead} after {after}: the bound certified only {reach:.2g} "
        "of the band's step (more rows lie near the margin than cache_bytes holds, or they tie there). A "
        "larger cache_bytes lets the band train."
    )


def fit_band_stream(source, plan, hooks, first, clock_start, give_up=False, wide=None):
    """The hinge band (module docstring) streaming ``source``: a :class:`~..plan.result.FitResult`.
    ``first``: the :class:`~.reads.FirstRead` that counted the classes and kept the sample.  The
    reader reads the first band's partitions while the sample's problem is solved.  ``give_up``:
    raise :class:`BandStalled` where the first band's step is certified on less than
    :data:`BAND_MIN_REACH` of its length (``solver="auto"``: the dual schedules train instead);
    ``wide``: the solver of rows too wide for the Hessian (:func:`solve_band_problem`)."""
    hooks.start(plan, n_partitions=source.n_partitions)
    totals = first.totals
    counted = {
        "rows_read": int(totals.rows),
        "bytes_read": int(totals.bytes),
        "read_retries": int(totals.retries),
    }
    sample = first.sample
    width = plan.model_width(sample.X.shape[1])
    # A sample of every row taller than the sample the read keeps was kept whole (warm.whole_sample;
    # the rows read may be fewer than those counted before it, rows skipped as invalid): the band's
    # passes over them are its reads.
    if sample.complete and width + 1 <= MAX_WIDTH and sample.n_rows > sample_rows(width):
        held, first.sample, sample = [sample], None, None  # held here until the fit ends
        y_index = np.searchsorted(plan.classes, held[0].y)
        skipped = int(totals.skipped)
        try:
            return fit_band_memory(
                held[0].X, y_index, held[0].sample_weight, plan, hooks, clock_start, give_up,
                counted={**counted, "rows_skipped": skipped}, held_bytes=held[0].nbytes,
                fields=lambda: {"spill_bytes": source.spill_bytes, "rows_skipped": skipped},
            )  # fmt: skip
        finally:  # the rows unmapped on another thread (:func:`~..data.malloc.let_go`)
            let_go(held)
    if sample.complete:  # the sample is every row: its problem is the data's, solved and certified
        starts, records = warm_starts(sample, plan, clock_start, counted, plan.tol, wide)
        hooks.on_pass(records, starts)
        return solved_sample(starts, records, plan)
    rows = int(np.sum(plan.counts))
    band = {"band_rows": int(band_share(plan) * rows), "band_bytes": None, "rows": rows}
    if plan.cache_bytes is not None:
        band["band_bytes"] = plan.cache_bytes // plan.n_problems
    on_block = lambda k, block: hooks.on_block(k, block, None, None)  # noqa: E731
    read = BandRead(source, plan, on_block, start=1, band_metric=band_metric(sample), **band)
    with read:
        starts, history = warm_starts(sample, plan, clock_start, counted, WARM_TOL, wide)
        first.sample = sample = None  # the reads keep their band instead

        def fields():
            return {"spill_bytes": source.spill_bytes, **read.overlap}

        return band_reads(
            read, plan, starts, history, hooks.on_pass, clock_start, counted, fields, give_up, wide
        )


def fit_band_memory(
    X, y_index, weights, plan, hooks, clock_start, give_up=False, counted=None, held_bytes=0, fields=dict
):  # fmt: skip
    """The hinge band (module docstring) on dense in-memory rows ``X`` (at most
    :data:`~.newton.MAX_WIDTH` wide, enough for a sample: the door's ``memory_band``), the labels'
    indices ``y_index`` in ``plan.classes`` and the rows' ``weights``: a
    :class:`~..plan.result.FitResult`.  The sample is a random share of the rows (as the squared
    hinge's in memory, :func:`~.warm.memory_sample`), each read a pass over ``X``; the band is within
    ``cache_bytes`` as streamed.  ``give_up``: as :func:`fit_band_stream`'s.

    ``counted``: the rows, bytes and retries of the read that kept ``X``, where the rows are every
    row a streamed fit read (:func:`fit_band_stream`): the passes over them then read nothing, and
    their records count that read's rows and bytes (numbered as passes, as in memory); ``X`` is then
    ``held_bytes`` of ``cache_bytes``, and the bands get what is left.  ``fields()``: more of each
    record, beside the bands' rows and bytes."""
    sample = memory_sample(X, y_index, weights, plan, plan.model_width(X.shape[1]))
    if sample is None:
        raise ValueError(f"{X.shape[0]} rows are too few for the band's sample in memory")
    n = X.shape[0]
    band_bytes = None
    if plan.cache_bytes is not None:
        band_bytes = max(0, plan.cache_bytes - held_bytes) // plan.n_problems
    read = MemoryBandRead(
        X, y_index, weights, plan, int(band_share(plan) * n), band_bytes, band_metric(sample),
        reads=counted is None,
    )  # fmt: skip
    counted = {"rows_read": 0, "bytes_read": 0, "read_retries": 0} if counted is None else dict(counted)
    starts, history = warm_starts(sample, plan, clock_start, counted, WARM_TOL)
    del sample

    def more():
        return {**fields(), **read.held}

    return band_reads(
        read, plan, starts, history, hooks.on_pass, clock_start, counted, more, give_up, keep_alphas=False
    )


def solved_sample(starts, records, plan):
    """The :class:`~..plan.result.FitResult` of a sample that holds every row: its solve is the fit."""
    certificates = [Certificate(primal=r["primal"], dual=r["dual"]) for r in records]
    converged = [c.relative_gap <= plan.tol for c in certificates]
    return FitResult(W=starts, certificates=certificates, passes=0, history=records, converged=converged)


def take_band_steps(problems, sums, plan):
    """Each of ``problems`` (:class:`_Problem`) takes its read's :class:`BandSums` of ``sums``: its
    read certified, its band's problem solved (:meth:`_Problem.take`).  The problems, stepped."""
    for problem, problem_sums in zip(problems, sums, strict=True):
        problem.take(problem_sums, plan, plan.tol)
    return problems


def gained(before, after):
    """Whether a problem's read gained: ``before`` and ``after`` its ``(point read, best primal, best
    dual)`` and ``(next point, best primal, best dual)``: the point moved, or a value improved."""
    (w, primal, dual), (w_next, new_primal, new_dual) = before, after
    return bool(new_primal < primal or new_dual > dual or not np.array_equal(w, w_next))


def band_reads(
    read, plan, starts, history, on_pass, clock_start, counted, fields, give_up, wide=None,
    take=take_band_steps, keep_alphas=True,
):  # fmt: skip
    """The reads of the band from the points ``starts`` until every problem's gap is within
    ``plan.tol`` or ``plan.max_iter`` reads: a :class:`~..plan.result.FitResult` whose ``history``
    follows ``history`` (the warm start's records).  ``read(W, todo)`` returns the read's sums and
    counts (rows, bytes, retries, skipped), streamed (:class:`BandRead`: each problem's
    :class:`BandSums`) or added up a cluster's tree (a future of them); ``take(problems, sums,
    plan)`` returns the problems of ``todo`` stepped from them (:func:`take_band_steps`, here or
    where the sums are); ``counted``: the rows, bytes and retries read so far, which the records
    count on; ``fields()``: more of each record; ``on_pass(records, W)`` stops the reads with a true
    value; ``give_up``: :class:`BandStalled` as :func:`fit_band_stream`; ``wide``: as
    :func:`solve_band_problem`'s; ``keep_alphas``: the problems keep their rows' dual values
    (:class:`KeptAlphas`), and ``read`` takes them (``read(W, todo, kept)``).

    :data:`STALL_READS` reads in a row after the first that gain nothing (:func:`gained`) for every
    problem not converged are a fixed point of the band's choice: :class:`BandStalled` says why (the
    caller trains on by another method)."""
    k = plan.n_problems
    problems = [_Problem(w, wide) for w in starts]
    if keep_alphas:
        for problem in problems:
            problem.keep_alphas()
    converged, interrupted, reads, still = [False] * k, False, 0, 0
    while reads < plan.max_iter and not all(converged):
        todo = [c for c in range(k) if not converged[c]]
        try:
            W = np.array([problems[c].w for c in todo])
            sums, counts = read(W, todo, [problems[c].kept for c in todo]) if keep_alphas else read(W, todo)
        except KeyboardInterrupt:
            interrupted = True
            break
        reads += 1
        for name, value in (
            ("rows_read", counts.rows),
            ("bytes_read", counts.bytes),
            ("read_retries", counts.retries),
        ):
            counted[name] += int(value)
        base = {
            "pass": reads,
            "solver": BAND_SOLVER,
            **counted,
            "rows_skipped": int(counts.skipped),
        }
        before = [(problems[c].w.copy(), problems[c].best_primal, problems[c].best_dual) for c in todo]
        kept_read = keep_alphas and reads >= 2  # after the first read, every row keeps its value
        try:
            for c, problem in zip(todo, take([problems[c] for c in todo], sums, plan), strict=True):
                problems[c] = problem
        except KeyboardInterrupt:  # the read certified its point; the band's step is lost
            interrupted = True
        sums = None  # the bands taken: the next read's are made without them
        base.update(fields())  # after the steps: what they moved counts too
        records = []
        for c, problem in enumerate(problems):
            best = check_gap(problem.certificate, f"read {reads}")
            converged[c] = best.relative_gap <= plan.tol
            records.append({
                **base, "seconds": time.perf_counter() - clock_start, "class": plan.labels[c],
                "primal": best.primal, "dual": best.dual, "gap": best.relative_gap,
                "active": problem.band_rows, "band_certified": problem.certified_step,
                "band_reach": problem.reach,
            })  # fmt: skip
        history.extend(records)
        if give_up and reads == 1 and not all(converged):
            reach = min(problems[c].reach for c in range(k) if not converged[c])
            if reach < BAND_MIN_REACH:
                raise BandStalled(history, reach)
        after = [(problems[c].w, problems[c].best_primal, problems[c].best_dual) for c in todo]
        pending = [(b, a) for b, a, c in zip(before, after, todo, strict=True) if not converged[c]]
        still = still + 1 if kept_read and pending and not any(gained(b, a) for b, a in pending) else 0
        if still >= STALL_READS and not interrupted:
            why = (
                f"its reads {reads - STALL_READS + 1} to {reads} gained nothing (the band, within "
                "cache_bytes, holds fewer rows than lie on the margin, and solves the same rows again). A "
                "larger cache_bytes lets the band train"
            )
            raise BandStalled(history, 0.0, why=why, after=f"{reads} reads")

        if interrupted or on_pass(records, np.array([p.best_w for p in problems])):
            break
    return FitResult(
        W=np.array([p.best_w for p in problems]),
        certificates=[p.certificate for p in problems],
        passes=reads,
        history=history,
        converged=converged,
        interrupted=interrupted,
    )


def warm_starts(sample, plan, clock_start, counted, tol, wide=None):
    """``(W0, records)``: each problem's hinge problem on the sample, its costs scaled by the rows
    read over the sample's, solved in memory to the relative gap ``tol``; the records of read 0 (with
    the sample's certificate where the sample is every row, :attr:`~.reads.Sample.complete`);
    ``wide``: as :func:`solve_band_problem`'s, which also solves a sample of every row shorter than
    :data:`SMOOTHED_MIN_RATIO` times its width.  The smoothed Newton starts from the solution of the
    sample's own sample (:func:`~.warm.memory_sample`: a random tenth, at least 50 rows a column of
    the model, where that is at most a quarter of the rows), solved so in turn, to :data:`WARM_TOL`
    (``tol`` where looser): on a sample of 200,000 rows of the tall sets (C = 0.01 and 1, to 1e-4),
    6-7 steps from it where 9-16 from ``w = 0``, 0.19-0.27 s in all where 0.29-1.6 s
    (/tmp/exp/subsample.py, 2026-12-02, load 1.1, not committed).  Where that start stops short of
    ``tol``, the sample is solved again from 0, and the better primal and dual of both are kept.  A
    record's ``newton_steps`` counts every solve's steps, its own samples' too."""
    started = time.perf_counter()
    y_index = np.searchsorted(plan.classes, sample.y)
    weights = sample.sample_weight * (sample.rows_seen / sample.n_rows)
    starts, records = [], []
    short = sample.complete and sample.n_rows < SMOOTHED_MIN_RATIO * (sample.X.shape[1] + 1)
    inner = None  # the sample's own sample, whose solution the smoothed Newton starts from
    if sample.X.shape[1] + 1 <= MAX_WIDTH:
        inner = memory_sample(sample.X, y_index, weights, plan, plan.model_width(sample.X.shape[1]))
    inner_steps = [0] * plan.n_problems
    if inner is not None:
        inner, inner_records = warm_starts(inner, plan, clock_start, counted, max(tol, WARM_TOL), wide)
        inner_steps = [r["newton_steps"] for r in inner_records]
    for c in range(plan.n_problems):
        rows = Rows(sample.X, plan.signs[c, y_index], plan.costs[c, y_index] * weights, plan.bias)
        start = None if inner is None else inner[c]
        w, certificate, info = solve_band_problem(rows, plan.loss, tol, start=start, wide=wide, short=short)
        steps = info["newton_steps"] + inner_steps[c]
        if start is not None and not certificate.relative_gap <= tol:
            # The start stopped short (a Hessian beyond its factorization at the start's smoothing,
            # on rows of extreme weights): solved again from 0, the better primal and dual of both kept.
            w0, cold, info = solve_band_problem(rows, plan.loss, tol, wide=wide, short=short)
            steps += info["newton_steps"]
            w, certificate = better_of((w, certificate), (w0, cold))
        starts.append(w)
        record = {
            "pass": 0, "seconds": time.perf_counter() - clock_start, "solver": BAND_SOLVER,
            "class": plan.labels[c], "sample_rows": int(sample.n_rows), "sample_bytes": sample.nbytes,
            "warm_start_s": time.perf_counter() - started, "newton_steps": steps,
            "dcd_passes": info.get("dcd_passes", 0), **counted,
        }  # fmt: skip
        if sample.complete:
            record.update(primal=certificate.primal, dual=certificate.dual, gap=certificate.relative_gap)
        records.append(record)
    return np.array(starts), records

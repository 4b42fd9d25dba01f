"""The primal Newton solver's reads of a Dask source: the first read, and one read per Newton step.

:func:`first_read` is the read that counts the classes, made the primal
solver's first read; :func:`stream_read` is the ``read`` that
:func:`~.newton.solve_primal` calls on a :class:`~..data.source.DaskSource`.  The
sums of each block are :func:`~.sums.block_sums`.
"""

import sys
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ...kernels.layout import dense_nonzeros, dense_to_csr
from ...kernels.losses import newton_dual_term, newton_terms
from ..data.malloc import held_empty
from ..data.source import Block
from ..plan.losses import loss_of
from ..plan.problem import column_max_abs, encode_block, signs_and_costs
from .carried import CarriedHessian
from .penalties import penalty_of
from .sums import (
    CG_WIDTH,
    DENSE_CHUNK_WIDTH,
    DENSE_FILL,
    FILL_SAMPLE,
    SPARSE_HESSIAN_PAIRS,
    STEPS,
    ProductRead,
    Sums,
    augmented_rows,
    block_sums,
    chunk_rows,
    memory_block_sums,
    too_large,
    value_reason,
    without_dual,
)


def read_once(source, plan, counts):
    """The blocks of one read of ``source`` with ``plan``'s reader settings; each block's rows,
    bytes, skipped rows and retries are added to ``counts`` (a :class:`Sums`) as it passes."""
    from ..data.reader import read_blocks

    blocks = read_blocks(source, prefetch=plan.prefetch, retries=plan.retries, read_timeout=plan.read_timeout)
    for _, block in blocks:
        count_block(counts, block)
        yield block


def count_block(counts, block):
    counts.skipped += block.n_skipped
    counts.retries += block.retries
    counts.rows += block.n_rows
    counts.bytes += block.nbytes if block.n_rows else 0


class BlocksRead:
    """What a Newton read makes of its blocks, wherever they come from (:meth:`blocks`): every
    problem's :class:`Sums` at ``W + S`` and, with ``band_rows``, each problem's band
    (:class:`StreamRead` reads a source; :class:`HeldRead` passes over rows a first read kept)."""

    band_rows, band_bytes, band_metric, rows, k = 0, None, None, 0, 1

    def _metric(self, width):
        """The band's ``(center, scale)`` of ``width`` columns, float64 (None: 0 and 1)."""
        if self.band_metric is None:
            return np.zeros(width), np.ones(width)
        return tuple(np.asarray(part, dtype=np.float64) for part in self.band_metric)

    def blocks(self, counts):  # pragma: no cover - each read has its own
        raise NotImplementedError

    def __call__(self, W, S, todo):
        plan = self.plan
        total = Sums.zeros(len(todo), W.shape[1])
        counts = Sums.zeros(0, 0)
        where_first = self.k == 0
        expected = self.rows or None  # the rows of the read before
        bands = (
            [Sampler(self.band_rows, self.band_bytes, expected=expected) for _ in todo]
            if self.band_rows
            else None
        )
        # A smooth loss's step dual bounds every margin's move by the rows' length in the sample's metric.
        lengths = (
            self.band_metric is not None
            and plan.feature_map is None
            and not loss_of(plan.loss).piecewise_quadratic
        )
        metric = self._metric(W.shape[1] - 1) if bands is not None or lengths else None
        for index, block in enumerate(self.blocks(counts)):
            if block.n_rows:
                Y, cost = encode_block(plan, block)
                where = f"partition {block.partition}: " if where_first else None
                args = (plan.bias, plan.loss_code, plan.feature_map, where)
                taken = None if bands is None else np.empty((len(todo), block.n_rows))
                sums = self.block_sums(index, block, Y[todo], cost[todo], W, S, todo, args, taken)
                if lengths:
                    sums.row_norm = metric_row_norm(block.X, metric)
                total.add(sums)
                if bands is not None:
                    _add_band(bands, block, Y[todo], cost[todo], W + S, plan.bias, metric, taken)
        for name in ("rows", "skipped", "retries", "bytes"):
            setattr(total, name, getattr(counts, name))
        total.band = None if bands is None else [_band_of(band, metric) for band in bands]
        kept = [b for b in total.band or [] if b is not None]
        self._band = (sum(b.n_rows for b in kept), sum(b.nbytes for b in kept))
        self.rows = counts.rows
        return total

    def block_sums(self, index, block, Y, cost, W, S, todo, args, taken):
        """The :class:`Sums` of the ``index``-th block of the read (:func:`~.sums.block_sums`, ``args``
        its ``bias, loss, feature_map, where``; ``taken``: its rows' shortfalls, or None)."""
        return block_sums(block.X, Y, cost, W, S, *args, shortfall=taken)


class StreamRead(BlocksRead):
    """``read`` for :func:`~.newton.solve_primal` on a :class:`~..data.source.DaskSource`: one read of
    every partition per call, the sums of each block added as it arrives.

    One :class:`~..data.reader.Reader` serves every read of the fit: while the sums of a block are
    computed, the reader thread reads and decodes the next partitions (up to ``plan.prefetch``
    ahead); at a read's end it waits until the next read is asked for (the reader's ``hold``: a fit
    that its last read certified reads nothing more) (``reads``: the most reads it serves,
    ``plan.max_iter + 1`` by default).
    ``on_block(k, block)`` is called for every block of read ``k`` (from ``start``).
    Read 0 (``start=0``: no :func:`first_read` before) checks the values (:func:`too_large`), naming
    the partition.  ``band_rows``: each read also keeps, per problem, this many rows of margin
    nearest 1 at the point it evaluates (within ``band_bytes``), as the :class:`Sums`' ``band``
    (a :class:`Sample` per problem, signs as labels and costs as weights), from which the solver
    takes its next step (:func:`~.newton.band_step`) and, where no row outside it can change its
    piece, certifies that step without another read (:func:`~.newton.band_certificate`);
    ``band_metric``: the ``(center, scale)`` of the columns in which the rows' keys are measured
    (:func:`band_metric`; None: center 0, scale 1).  Use as a context manager (leaving it stops
    the reader thread).

    :attr:`overlap` holds the seconds, since the fit's first Newton read, that the reader was busy
    reading (``reader_busy_s``) and waited for room (``reader_wait_s``: for the arithmetic), and that
    the arithmetic was busy (``trainer_busy_s``) and waited for blocks (``trainer_wait_s``), and the
    last read's band (``band_rows``, ``band_bytes``).
    """

    def __init__(
        self, source, plan, on_block=None, start=0, reads=None, band_rows=0, band_bytes=None, rows=0,
        band_metric=None,
    ):  # fmt: skip
        from ..data.reader import Reader

        reads = plan.max_iter + 1 if reads is None else reads
        # The band: per problem, the rows of margin nearest 1 at the point a read evaluates.
        self.band_rows = band_rows if plan.feature_map is None else 0
        self.band_bytes = band_bytes
        self.band_metric = band_metric  # (center, scale) of the band's keys (:func:`band_metric`)
        self._band = (0, 0)  # the last read's band: rows and bytes, over its problems
        self.rows = rows  # rows of the last read (``rows``: of the read before the first, if known)
        self.source, self.plan, self.on_block, self.k = source, plan, on_block, start
        self._reader = Reader(
            source, prefetch=plan.prefetch, max_passes=start + reads, shuffle=False, seed=0,
            start_pass=start, retries=plan.retries, read_timeout=plan.read_timeout, hold=True,
        )  # fmt: skip
        self._busy = self._waited = 0.0
        self._entered = 0  # nested entries: the fit's (reading during the warm start) and the solve's

    def __enter__(self):
        if not self._entered:
            self._reader.__enter__()
        self._entered += 1
        return self

    def __exit__(self, *exc):
        self._entered -= 1
        return False if self._entered else self._reader.__exit__(*exc)

    @property
    def overlap(self):
        return {
            "reader_busy_s": self._reader.busy_seconds,
            "reader_wait_s": self._reader.wait_for_room,
            "trainer_busy_s": self._busy,
            "trainer_wait_s": self._waited,
            "band_rows": self._band[0],
            "band_bytes": self._band[1],
        }

    def _next(self):
        start = time.perf_counter()
        item = self._reader.get()
        self._waited += time.perf_counter() - start
        return item

    def blocks(self, counts):
        """The blocks of the next read, each counted into ``counts`` (a :class:`Sums`) as it comes:
        the time the caller takes over one is the arithmetic's busy time, and ``on_block`` sees it
        after."""
        while (item := self._next())[0] == "block":
            block = item[2]
            start = time.perf_counter()
            count_block(counts, block)
            yield block
            self._busy += time.perf_counter() - start
            if self.on_block is not None:
                self.on_block(self.k, block)
        if item[0] != "end":  # pragma: no cover - the reader reads more passes than the fit asks
            raise RuntimeError(f"the reader ended before read {self.k}")
        self.k += 1


class HeldRows:
    """The blocks a first read kept whole (:func:`first_read`'s ``keep_bytes``: a cluster's part, on
    its worker), each as its reader gave it: no copy of the rows; and, of each dense block of a
    piecewise-quadratic loss, the Hessian its last pass made (:meth:`carried`), where it fits
    ``budget`` beside the rows.  The Hessians stay on the worker (a copy of the rows carries none:
    its next pass forms them again)."""

    def __init__(self, blocks, budget=float("inf")):
        self.blocks, self.budget = blocks, budget
        self._carried, self._carried_bytes = {}, 0

    def carried(self, index, bias, k):
        """The :class:`~.carried.CarriedHessian` of block ``index`` (bias ``bias``, ``k`` problems),
        made at its first pass; None where it would take the rows held and the blocks' Hessians so
        far past ``budget`` (:func:`carried_bytes`): that block's passes form its Hessian."""
        if index not in self._carried:
            block = self.blocks[index]
            need = carried_bytes(block.n_rows, k, block.X.shape[1] + 1)
            if self.nbytes + self._carried_bytes + need > self.budget:
                return None
            self._carried[index] = CarriedHessian(block.X, bias)
            self._carried_bytes += need
        return self._carried[index]

    def __getstate__(self):
        return {**self.__dict__, "_carried": {}, "_carried_bytes": 0}

    @property
    def n_rows(self):
        return sum(block.n_rows for block in self.blocks)

    @property
    def nbytes(self):
        return sum(block.nbytes for block in self.blocks if block.n_rows)


def carried_bytes(n_rows, k, D):
    """What a :class:`~.carried.CarriedHessian` of ``n_rows`` rows holds for ``k`` problems of ``D``
    weights: each row's shortfall (float64) and piece (bool) per problem, and each problem's Hessian."""
    return 9 * k * n_rows + 8 * k * D * D


class HeldRead(BlocksRead):
    """``read`` for :func:`~.newton.solve_primal` over :class:`HeldRows`: each call a pass over the
    rows held, which makes the sums a :class:`StreamRead` of them makes (no band: the next pass
    certifies), and reads nothing (its :class:`Sums` count no rows, bytes or retries read; the rows
    the first read skipped, as every read of them would).  ``band_metric``: the metric a smooth
    loss's rows' lengths are measured in (:func:`band_metric`)."""

    def __init__(self, held, plan, band_metric=None):
        self.held, self.plan, self.band_metric = held, plan, band_metric
        self.rows = held.n_rows
        self._band = (0, 0)
        # Dense rows of a piecewise-quadratic loss carry their Hessian from pass to pass, as one
        # machine's rows in memory do (memory_read)
        self.carries = plan.feature_map is None and loss_of(plan.loss).piecewise_quadratic

    def blocks(self, counts):
        return pass_over(self.held, counts)

    def block_sums(self, index, block, Y, cost, W, S, todo, args, taken):
        """A dense block's sums with the Hessian carried from its last pass where that fits the
        part's budget (:meth:`HeldRows.carried`; its rows' shortfalls not passed on: no band is cut
        from them); the others' as a read's."""
        carried = None
        if self.carries and taken is None and not sp.issparse(block.X):
            carried = self.held.carried(index, args[0], len(todo))
        if carried is None:
            return super().block_sums(index, block, Y, cost, W, S, todo, args, taken)
        sums = carried.read(Y, cost, W, S, todo, args[1], args[3])
        sums.held = None
        return sums

    def __call__(self, W, S, todo):
        return read_nothing(super().__call__(W, S, todo))


def pass_over(held, counts):
    """The blocks of :class:`HeldRows` ``held``, each counted into ``counts`` (a :class:`Sums`) as a
    read counts it; :func:`read_nothing` then says that no row was read."""
    for block in held.blocks:
        count_block(counts, block)
        yield block


def read_nothing(counts):
    """``counts`` (a :class:`Sums`) of a pass over held rows: no rows, bytes or retries read, the
    rows the first read skipped kept (every read of them skips them)."""
    counts.rows = counts.bytes = counts.retries = 0
    return counts


def _add_band(bands, block, Y, cost, points, bias, metric, shortfall):
    """Each problem's rows nearest the hinge point at its point (of ``points``), to ``bands``: the
    rows whose loss may change its piece when the point moves (:func:`~.newton.band_step`), by their
    keys, ``|y_i w . x_i - 1| / ||x~_i||`` (:func:`~...kernels.band.margin_keys`; ``metric``: the
    ``(center, scale)`` of ``x~``, :func:`band_metric`), each kept with its ``shortfall`` as the
    read's sums took it (:func:`~.sums.shortfall_sums`)."""
    from ...kernels.band import margin_keys

    X = block.X
    center, inv_scale = metric[0], 1.0 / metric[1]
    if sp.issparse(X):  # sparse rows keep their zeros: no center (band_metric gives them none)
        lengths = np.sqrt(1.0 + np.asarray(X.multiply(X) @ (inv_scale * inv_scale)).ravel())
    for j, band in enumerate(bands):
        if sp.issparse(X):
            z = np.asarray(X @ points[j][:-1]).ravel() + points[j][-1] * bias
            keys = np.abs(Y[j] * z - 1.0) / lengths
            keys[cost[j] <= 0] = np.inf  # a row of no weight adds nothing to the loss
        else:
            keys = np.empty(X.shape[0])
            margin_keys(X, Y[j], cost[j], points[j], float(bias), center, inv_scale, keys)
        band.add_rows(block.partition, X, Y[j], cost[j], keys, extra=shortfall[j])


def metric_row_norm(X, metric):
    """The largest ``||(x_i - center) / scale||`` of the rows of ``X`` (dense, or CSR: center 0, as
    :func:`band_metric` gives sparse rows) in ``metric``, ``(center, scale)`` in float64."""
    from ...kernels.band import csr_metric_norm, metric_norm

    center, inv_scale = metric[0], 1.0 / metric[1]
    if not X.shape[0]:
        return 0.0
    if sp.issparse(X):  # the rows as they are, no copy (a wide CSR in memory may be most of it)
        X = X.tocsr()
        return float(np.sqrt(csr_metric_norm(X.data, X.indices, X.indptr, inv_scale)))
    return float(np.sqrt(metric_norm(X, center, inv_scale)))


def _band_of(sampler, metric):
    """A problem's band (a :class:`Sample`, or None), with the smallest key of the rows it left
    out and the metric of its keys, for :func:`~.newton.band_certificate`."""
    band = sampler.sample()
    if band is not None:
        band.outside, band.metric = sampler.outside, metric
    return band


def band_metric(sample):
    """``(center, scale)`` of the band's keys from the warm start's :class:`Sample`: each column's
    mean and standard deviation over the sample's rows (a column of none: 1), dense rows; sparse
    rows keep center 0 (their zeros) and scale by each column's root mean square.

    Any fixed center and scale make :func:`~.newton.band_certificate` exact; these make its bound
    tight where features have an offset and scales of their own (raw 0..255 values): a step's
    change of a row's margin is ``x~ . d~`` with ``x~ = ((x - center) / scale, 1)`` and
    ``d~ = (scale d_x, center . d_x + bias d_b)``, of about the same size for every row."""
    return columns_metric(sample.X)


def columns_metric(X):
    """:func:`band_metric` of the rows ``X`` (dense or CSR)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        center = np.zeros(X.shape[1])
        scale = np.sqrt(np.asarray(X.multiply(X).mean(axis=0)).ravel())
    else:  # two compiled passes in float64: the sample is never copied
        from ...kernels.band import column_moments

        X = np.asarray(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        center, scale = np.zeros(X.shape[1]), np.zeros(X.shape[1])
        column_moments(X, center, scale)
    scale[~(scale > 0)] = 1.0
    return center, scale


def stream_read(
    source, plan, on_block=None, start=0, reads=None, band_rows=0, band_bytes=None, rows=0, band_metric=None
):
    """A :class:`StreamRead` of ``source`` (enter it before the first read, or let
    :func:`~.newton.solve_primal` do it)."""
    return StreamRead(source, plan, on_block, start, reads, band_rows, band_bytes, rows, band_metric)


KEY_STRIDE = 16  # the band's threshold is estimated from every 16th key (:meth:`Sampler._bound`)
SAMPLE_SEED = 0x5A3F1E  # the sample's keys: drawn per partition, the same in every fit of the same rows


@dataclass
class Sample:
    """A uniform sample of the rows one read saw, without replacement: ``X`` (2-D array or CSR),
    labels ``y``, ``sample_weight``, and ``rows_seen``, the rows it was drawn from."""

    X: object
    y: np.ndarray
    sample_weight: np.ndarray
    rows_seen: int
    # A band's (:class:`StreamRead`): the smallest key of a row read but not kept (inf: none left
    # out), and the ``(center, scale)`` its keys were measured in (:func:`band_metric`).
    outside: float = np.inf
    metric: tuple = None
    # What :func:`~.newton.band_step` summed of the band: (w, d, Sums at w, Sums at w + d).
    evaluated: tuple = field(default=None, repr=False)
    # A band's (:class:`~.sample_band.BandRead`, :class:`StreamRead`): each row's shortfall
    # ``1 - m_i`` at the point read, from the arithmetic that summed the read's totals.
    shortfall: np.ndarray = field(default=None, repr=False)
    # A band's: each row's key (the order the band was chosen in), None for a uniform sample.
    keys: np.ndarray = field(default=None, repr=False)
    # A step's band cut from every row's shortfall in memory (:func:`~.newton.step_band`): each row
    # left out has ``|1 - m_i|`` above ``shortfall_out``; ``column_max`` bounds how far a step moves
    # a margin, ``rounding`` the margins' rounding at the read (None: a band chosen by its keys).
    shortfall_out: float = None
    column_max: np.ndarray = field(default=None, repr=False)
    rounding: float = 0.0

    @property
    def n_rows(self):
        return self.X.shape[0]

    @property
    def complete(self):
        """Whether it holds every row read (then it is the data, not a sample of it)."""
        return self.n_rows == self.rows_seen

    @property
    def nbytes(self):
        """The bytes of its rows, labels and weights, and of the shortfalls where it keeps them (the
        keys not: :class:`Sampler` counts 8 bytes a row more for them)."""
        extra = 0 if self.shortfall is None else self.shortfall.nbytes
        return int(
            _nbytes(self.X) + self.y.shape[0] * _label_bytes(self.y) + self.sample_weight.nbytes + extra
        )

    def smallest(self, rows, max_bytes=None):
        """This band cut to its ``rows`` rows of smallest keys (fewer where ``max_bytes`` holds fewer,
        at its bytes a row as :class:`Sampler` counts them), in their order; its ``outside`` the
        smaller of its own and the smallest key cut.  Itself where it holds no more."""
        n = self.n_rows
        if max_bytes is not None and n:
            rows = min(rows, int(max_bytes // (self.nbytes / n + 8)))
        if n <= rows:
            return self
        keep = np.zeros(n, dtype=bool)
        if rows > 0:
            keep[np.argpartition(self.keys, rows - 1)[:rows]] = True
        take = np.flatnonzero(keep)
        outside = min(self.outside, float(self.keys[~keep].min()))
        shortfall = None if self.shortfall is None else self.shortfall[take]
        return Sample(
            self.X[take], self.y[take], self.sample_weight[take], self.rows_seen, outside, self.metric,
            shortfall=shortfall, keys=self.keys[take],
        )  # fmt: skip


def _nbytes(X):
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X) else X.nbytes


class Sampler:
    """The rows of smallest random keys among those added (a uniform sample of ``capacity`` rows),
    or of smallest given keys (:meth:`add_rows`: the Newton reads' band, :class:`StreamRead`).

    Each row gets a key, uniform in [0, 1), drawn from the seed and its partition; the sample is
    the ``capacity`` rows of smallest keys, whatever the order the partitions come in.  A row is
    kept only if its key is below the largest key kept once the sample is full, so after the first
    partitions few rows are copied; the pieces are cut back to ``capacity`` whenever they pass
    1.5 times it (the most rows held at once).  ``max_bytes``: the sample's most bytes (the rows'
    values and indices, labels, weights and keys), which lowers ``capacity`` at the bytes a row of
    each block; ``share``: its most rows as a share of the rows read, applied at the end;
    ``expected``: the rows that will be added, if known, from which a bound on the keys kept is
    set before the end (:meth:`_bound`).

    ``whole``: where the ``expected`` rows are dense and all of them fit ``max_bytes`` (and no
    ``share`` is set), keep every row, written in place into arrays of that many rows (no pieces
    joined at the end, no keys, so the rows held are the budget's at most): the sample is then the
    data (:attr:`Sample.complete`).  More rows than expected turn the arrays into a piece (its keys
    drawn as they would have been) and the sample is cut to ``capacity`` as usual.  ``whole`` may be
    a function of a row's bytes (values, label and weight), the row memory each row will take in the
    fit that trains on them (:func:`~.warm.band_held_bytes`): the rows are then kept whole where
    that fits ``max_bytes``.
    """

    def __init__(self, capacity, max_bytes=None, share=None, expected=None, whole=False):
        self.capacity = int(capacity)
        self.max_bytes, self.share = max_bytes, share
        self.whole = bool(whole) and max_bytes is not None and share is None and bool(expected)
        self._held = whole if callable(whole) else (lambda row_bytes: row_bytes)  # a row's, with ``whole``
        self.rows = None  # with ``whole``: (X, y, w) of the expected rows, filled in order
        self._filled = []  # with ``whole``: (partition, rows) of each block kept, whose keys are drawn again
        self.pieces = []  # (keys, X, y, w)
        self.count = self.seen = 0
        self.threshold = np.inf
        self.outside = np.inf  # the smallest given key of a row added and not kept
        self.expected = expected  # the rows to come, if known
        self._keys = []  # the given keys seen, to estimate the threshold
        self.given = False  # whether the keys are given (a band's), not drawn (a uniform sample)

    def _bound(self, keys, random):
        """A key below which the rows of smallest keys will be, estimated before the end so that
        few rows are copied: with random keys, where ``expected`` rows give ``capacity`` and a
        margin of 5 standard deviations; with given keys, their quantile so far at 1.25 times the
        share ``capacity / expected`` (the rows kept are then those of smallest keys among the
        rows below it)."""
        if self.expected is None or not self.expected:
            return np.inf
        if random:
            slack = self.capacity + 5.0 * np.sqrt(self.capacity) + 10.0
            return slack / self.expected if slack < self.expected else np.inf
        self._keys.append(keys[::KEY_STRIDE].astype(np.float32))  # enough for a quantile
        share = 1.25 * self.capacity / self.expected
        if share >= 1.0:
            return np.inf
        seen = np.concatenate(self._keys)
        self._keys = [seen]
        at = int(share * seen.shape[0])
        return float(np.partition(seen, at)[at]) if at < seen.shape[0] else np.inf

    def add(self, block):
        self.add_rows(block.partition, block.X, block.y, block.sample_weight)

    def add_rows(self, partition, X, y, w, keys=None, extra=None):
        """Rows ``X`` with their labels ``y`` and weights ``w``; ``keys``: theirs (a row of key
        inf is never kept), else drawn from the seed and ``partition``; ``extra``: a value per row
        kept with it (the sample's ``shortfall``)."""
        n = X.shape[0]
        self.seen += n
        if not n or (not self.capacity and not self.whole):
            return
        if self.whole and keys is None and self._keep_whole(partition, X, y, w):
            return
        if self.max_bytes is not None:  # the budget in rows, at this block's bytes a row, key and extra
            per_row = _row_bytes(X, y, w) + 8 + (0 if extra is None else extra.itemsize)
            self.capacity = min(self.capacity, int(self.max_bytes // per_row))
            if not self.capacity:
                return
        random = keys is None
        if random:
            keys = _random_keys(partition, n)
        self.given = not random
        kept = keys < min(self.threshold, self._bound(keys, random))
        take = np.flatnonzero(kept)
        if not random and take.size < n:
            self.outside = min(self.outside, float(keys[~kept].min()))
        if take.size:
            more = () if extra is None else (extra[take],)
            self.pieces.append((keys[take], X[take], y[take], w[take], *more))
            self.count += take.size
        if self.count > 1.5 * self.capacity:
            self._cut()

    def _keep_whole(self, partition, X, y, w):
        """Whether the block's rows were written into the arrays of every row (``whole``): made at
        the first block where the expected rows are dense and fit ``max_bytes`` at its bytes a
        row (as the fit will hold it: ``whole``); else, or once more rows come than expected,
        ``whole`` ends (the arrays become a piece) and the rows are sampled as usual."""
        n, filled = X.shape[0], self.count
        if self.rows is None:
            if filled or sp.issparse(X) or self.expected * self._held(_row_bytes(X, y, w)) > self.max_bytes:
                self.whole = False
                return False
            self.rows = tuple(held_empty((self.expected, *a.shape[1:]), a.dtype) for a in (X, y, w))
        if filled + n > self.expected:  # more rows than counted (a file grown since its footer): sampled
            if filled:
                keys = np.concatenate([_random_keys(p, k) for p, k in self._filled])
                self.pieces = [(keys, *(part[:filled] for part in self.rows))]
            self.rows, self.whole = None, False
            return False
        for target, part in zip(self.rows, (X, y, w), strict=True):
            target[filled : filled + n] = part
        self._filled.append((partition, n))
        self.count += n
        return True

    def _cut(self):
        """The pieces as one, cut back to the ``capacity`` rows of smallest keys: which rows is
        chosen from the keys alone, and each piece's rows are copied once into the result."""
        keys = np.concatenate([p[0] for p in self.pieces])
        if keys.shape[0] <= self.capacity:
            self.pieces = [joined_pieces(self.pieces)]
            return
        keep = np.zeros(keys.shape[0], dtype=bool)
        keep[np.argpartition(keys, self.capacity - 1)[: self.capacity]] = True
        self.threshold = float(keys[keep].max())
        self.outside = min(self.outside, float(keys[~keep].min()))
        first = self.pieces[0]
        dense = not sp.issparse(first[1])
        out = [np.empty((self.capacity, *part.shape[1:]), part.dtype) for part in first] if dense else None
        cut, at, filled = [], 0, 0
        while self.pieces:
            piece = self.pieces.pop(0)
            n = piece[0].shape[0]
            rows = np.flatnonzero(keep[at : at + n])
            at += n
            if rows.size and dense:  # straight into the result: no copy of the pieces joined
                for target, part in zip(out, piece, strict=True):
                    target[filled : filled + rows.size] = part[rows]
                filled += rows.size
            elif rows.size:
                cut.append(tuple(part[rows] for part in piece))
            del piece
        self.pieces = [tuple(out)] if dense else [joined_pieces(cut)]
        self.count = self.capacity

    def sample(self):
        """The :class:`Sample`, or None if no row was kept."""
        if self.rows is not None:  # every row, kept whole (``whole``)
            if not self.count:
                return None
            X, y, w = (part[: self.count] for part in self.rows)
            return Sample(X, y, w, self.seen)
        if self.share is not None:  # a share of the rows read (the keys' order keeps it uniform)
            self.capacity = min(self.capacity, int(float(self.share) * self.seen))
        if not self.count or not self.capacity:
            return None
        self._cut()
        keys, X, y, w, *extra = self.pieces[0]
        return Sample(
            X, y, w, self.seen, shortfall=extra[0] if extra else None, keys=keys if self.given else None
        )


def _row_bytes(X, y, w):
    """The bytes a row of the block ``(X, y, w)`` takes in a sample: its values (and indices), label
    (:func:`_label_bytes`) and weight."""
    return _nbytes(X) / X.shape[0] + _label_bytes(y) + w.itemsize


LABEL_PROBE = 64  # the labels of object dtype whose Python objects are measured (_label_bytes)


def _label_bytes(y):
    """The bytes a label of ``y`` takes: its item, and for labels of object dtype (strings, read from
    Parquet one object a row) the largest of the first :data:`LABEL_PROBE` objects' own bytes."""
    if y.dtype != object or not y.shape[0]:
        return y.itemsize
    return y.itemsize + max(sys.getsizeof(label) for label in y[:LABEL_PROBE])


def _random_keys(partition, n):
    """The uniform sample's keys of a partition's ``n`` rows: drawn from the seed and the partition."""
    return np.random.default_rng([SAMPLE_SEED, int(partition)]).random(n)


def joined_pieces(pieces):
    """The kept pieces ``(keys, X, y, w, *extra)`` as one piece, in their order."""
    if len(pieces) == 1:
        return pieces[0]
    Xs = [p[1] for p in pieces]
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.concatenate(Xs)
    rest = [np.concatenate([p[j] for p in pieces]) for j in range(2, len(pieces[0]))]
    return np.concatenate([p[0] for p in pieces]), X, *rest


@dataclass
class FirstRead:
    """What the read that counted the classes kept for the primal solver (:func:`first_read`)."""

    labels: tuple  # (classes, counts, weighted classes, totals), as DaskSource.label_counts
    sample: Sample = None  # rows for the warm start (:func:`~.warm.warm_start`), or None
    totals: Sums = None  # the read's rows, skipped rows, retries and bytes
    clean: bool = True  # every value is one the primal solver trains on (:func:`too_large`)
    beyond: str = None  # else why not: the first block's reason, naming its partition
    # label -> [sum of weights, rows of weight > 0, sum w x (with the bias)]; None for a loss without
    # Newton steps (nothing certifies w = 0 from them) or values the primal solver cannot train on.
    moments: dict = None
    # Each column's largest |value| over the rows read (the bias column's: |bias|), or None: what
    # bounds a step's change of any row's margin (newton._Problem.step_dual).
    column_max: np.ndarray = None
    # Each partition's label counts (count_labels_of's) and its number, in the order read: a
    # cluster's parts merge them into the data's (cluster/newton.py: sampled_parts).
    partition_counts: list = None
    partition_ids: list = None
    # Every block as read, where ``keep_bytes`` held them all (:class:`HeldRows`), else None; on the
    # client (a cluster's part stripped of its rows) ``holds_rows`` says whether its worker holds them.
    held: HeldRows = None
    holds_rows: bool = False

    def sums(self, plan):
        """Every problem's sums at ``w = 0`` (no Hessian), from the classes' moments: at ``w = 0``
        every row is active with shortfall 1, so the certificate there needs only them."""
        if self.moments is None:
            return None
        k, D = plan.n_problems, self.totals.v.shape[1]
        sums = Sums(np.zeros(k), np.zeros(k), np.zeros((k, D)), None, np.zeros(k, dtype=np.int64),
                    np.zeros((k, len(STEPS))))  # fmt: skip
        for name in ("rows", "skipped", "retries", "bytes"):
            setattr(sums, name, getattr(self.totals, name))
        for j, label in enumerate(plan.classes.tolist()):
            weight, weighted_rows, first = self.moments[label]
            for c in range(k):
                cost = plan.costs[c, j]
                loss, factor, _ = newton_terms(plan.loss_code, cost, 1.0)  # every row's, at w = 0
                sums.loss[c] += cost * loss * weight
                sums.alpha[c] += newton_dual_term(plan.loss_code, cost, 1.0, factor) * weight
                sums.v[c] += factor * plan.signs[c, j] * first
                sums.active[c] += weighted_rows if cost > 0 else 0
        return sums


def first_read(
    source, plan, width, on_block=None, sample_rows=0, sample_bytes=None, expected=None, whole=False,
    allow_empty=False, keep_bytes=None,
):  # fmt: skip
    """The read that finds the classes, made the primal solver's first read: a :class:`FirstRead`.

    Counts the labels of every partition as :meth:`~..data.source.DaskSource.label_counts` does, and
    keeps a uniform sample of ``sample_rows`` rows (:class:`Sample`; every row if there are no
    more), within ``sample_bytes`` and ``plan.cache_share`` of the rows (``expected``: the rows,
    if known before the read; ``whole``: every row where they all fit ``sample_bytes``,
    :class:`Sampler`), for the warm start of
    :func:`~.warm.warm_start`.  ``plan`` needs no labels; ``width`` is the model's width without
    the bias.  ``allow_empty``: a source of no rows is read (a cluster's part whose partitions are
    all empty: the parts' counts together are the data's), where it is otherwise an error.
    ``keep_bytes``: every block is also kept as read (:attr:`FirstRead.held`, no copy) where their
    rows, labels and weights come to at most that many bytes (a cluster's part: its later Newton
    reads are passes over them, :class:`HeldRead`).

    The read checks the values (:func:`~.sums.too_large`): with ``dual=False`` a value the
    primal solver cannot train on is a ValueError naming its partition and column; with ``"auto"``
    (the dual solvers may train) the sample is dropped, ``clean`` false and ``beyond`` says why:
    the door then trains the dual solvers (:func:`~...choice.after_count`).
    """
    from ..data.labels import label_index_of, merge_label_counts, tally_labels

    D = width + 1
    counts, ids = [], []
    sampler = Sampler(sample_rows, sample_bytes, plan.cache_share, expected, whole) if sample_rows else None
    totals = Sums.zeros(0, D)
    clean, moments, beyond = True, ({} if loss_of(plan.loss).newton else None), None
    columns = np.zeros(D)
    held, held_bytes = ([] if keep_bytes is not None else None), 0
    for block in read_once(source, plan, totals):
        classes, index = label_index_of(block.partition, block.y)
        counts.append(tally_labels(classes, index, block.sample_weight))
        ids.append(block.partition)
        if clean and block.n_rows:
            if (reason := _add_moments(moments, block, plan, D, columns, classes, index)) is not None:
                if plan.dual is False:
                    reason = without_dual(reason) if plan.sparse_penalty else reason
                    raise ValueError(f"partition {block.partition}: {reason}")
                clean, sampler, moments = False, None, None
                beyond = f"partition {block.partition}: {reason}"
            elif sampler is not None:
                sampler.add(block)
        if held is not None:  # the rows as read, until they pass keep_bytes (the row ids not kept)
            held_bytes += block.nbytes if block.n_rows else 0
            if held_bytes > keep_bytes:
                held = None
            else:
                held.append(
                    Block(block.partition, block.X, block.y, block.sample_weight, n_skipped=block.n_skipped)
                )
        if on_block is not None:
            on_block(0, block)
    labels = merge_label_counts(counts, allow_empty=allow_empty, partitions=ids)
    sample = None if sampler is None else sampler.sample()
    if clean:
        columns[-1] = abs(float(plan.bias))
    return FirstRead(
        labels, sample=sample, totals=totals, clean=clean, beyond=beyond, moments=moments,
        column_max=columns if clean else None, partition_counts=counts, partition_ids=ids,
        held=HeldRows(held, keep_bytes) if clean and held is not None else None,
    )  # fmt: skip


def _add_moments(moments, block, plan, D, columns, classes, index):
    """Each class's weights, rows of weight > 0 and ``sum w x`` (with the bias column, and the
    feature map's features) over the block's rows, added to ``moments``, summed in float64, each
    column's largest ``|x|`` folded into ``columns`` (its first ``D - 1``); and the reason the
    primal solver cannot train on the block's values (:func:`~.sums.too_large`), or None.  The
    block's labels come indexed (:func:`~..data.labels.label_index_of`: ``classes``, and each row's
    position among them).  Dense rows without a feature map take one pass of a kernel; others a
    chunk of rows at a time.  ``moments`` None (a loss without Newton steps, :func:`first_read`):
    the value check and ``columns`` alone (one pass of a kernel over dense rows; sparse rows without
    the product of the moments)."""
    from ...kernels.band import class_sums, column_tops

    X = block.X
    dense = plan.feature_map is None and not sp.issparse(X) and X.dtype in (np.float32, np.float64)
    if moments is None and plan.feature_map is None:
        top = np.zeros(D)
        if dense:
            column_tops(np.ascontiguousarray(X), top[:-1])
        else:
            top[:-1] = column_max_abs(X)
        top[-1] = abs(float(plan.bias))
        np.maximum(columns[:-1], top[:-1], out=columns[:-1])
        return value_reason(top, plan.bias, False)
    if moments is None:  # a feature map's features: the moments' path, its moments dropped
        moments = {}
    weights = block.sample_weight
    k = classes.shape[0]
    totals = np.bincount(index, weights=weights, minlength=k)
    positive = np.bincount(index[weights > 0], minlength=k)
    entries = [moments.setdefault(key, [0.0, 0, np.zeros(D)]) for key in classes.tolist()]
    for j, m in enumerate(entries):
        m[0] += float(totals[j])
        m[1] += int(positive[j])
        m[2][-1] += plan.bias * float(totals[j])
    if dense:
        first, top = np.zeros((len(entries), D - 1)), np.zeros(D)
        class_sums(np.ascontiguousarray(X), index, weights, first, top[:-1])
        top[-1] = abs(float(plan.bias))
        for j, m in enumerate(entries):
            m[2][:-1] += first[j]
        np.maximum(columns[:-1], top[:-1], out=columns[:-1])
        return value_reason(top, plan.bias, False)
    if (reason := _block_too_large(block, plan, D)) is not None:
        return reason
    if plan.feature_map is None and sp.issparse(X):
        np.maximum(columns[:-1], column_max_abs(X), out=columns[:-1])
        # One product for the whole block: chunks of augmented rows each cost a D-vector of the
        # transpose's product, which on wide text (200k columns) took 5 of a first read's 6 seconds.
        by_class = np.zeros((block.n_rows, len(entries)))
        by_class[np.arange(block.n_rows), index] = weights
        first = np.asarray(sp.csr_matrix(X).T @ by_class)
        for j, m in enumerate(entries):
            m[2][:-1] += first[:, j]
        return None
    step = chunk_rows(D)
    for lo in range(0, block.n_rows, step):
        hi = min(lo + step, block.n_rows)
        Xa = augmented_rows(X, lo, hi, plan.bias, plan.feature_map)
        np.maximum(columns[:-1], column_max_abs(Xa[:, :-1]), out=columns[:-1])
        for j, m in enumerate(entries):
            m[2][:-1] += np.asarray(Xa[:, :-1].T @ np.where(index[lo:hi] == j, weights[lo:hi], 0.0)).ravel()
    return None


def _block_too_large(block, plan, D):
    """:func:`~.sums.too_large` of a block's rows (the feature map's features, with one)."""
    if plan.feature_map is None:
        return too_large(block.X, plan.bias, augmented=False)
    step = chunk_rows(D)
    for lo in range(0, block.n_rows, step):
        Xa = augmented_rows(block.X, lo, min(lo + step, block.n_rows), plan.bias, plan.feature_map)
        if (reason := too_large(Xa, plan.bias, True)) is not None:
            return reason
    return None


def memory_read(X, y_index, weights, plan, products=None, row_norm=None):
    """``read`` for :func:`~.newton.solve_primal` on in-memory rows (a 2-D array or CSR).

    ``products``: whether the Newton directions come from Hessian products (conjugate gradient,
    :class:`ProductRead`) instead of the ``D x D`` Hessian; None picks by :func:`prefers_products`.
    ``row_norm``: the rows' largest length in a metric (:func:`metric_row_norm`), the same at every
    read, given to each read's sums.  Dense rows of a piecewise-quadratic loss carry their Hessian
    from read to read (:class:`~.carried.CarriedHessian`).
    """
    Y, cost = signs_and_costs(plan, y_index, weights)
    X = memory_layout(X)
    if products is None:
        products = prefers_products(X, plan)
    if products:  # the Hessian's identity term is the penalty's l2 part (1 for the L2 penalty)
        return ProductRead(X, Y, cost, plan.bias, plan.loss_code, identity=penalty_of(plan).l2)
    reads = [0]
    carried = None
    if not sp.issparse(X) and plan.feature_map is None and loss_of(plan.loss).piecewise_quadratic:
        carried = CarriedHessian(X, plan.bias)

    def read(W, S, todo):
        where = "" if reads[0] == 0 else None  # the first read checks the values (:func:`too_large`)
        reads[0] += 1
        if carried is not None:
            sums = carried.read(Y[todo], cost[todo], W, S, todo, plan.loss_code, where)
        else:
            args = (plan.bias, plan.loss_code, plan.feature_map, where)
            sums = memory_block_sums(X, Y[todo], cost[todo], W, S, *args)
        sums.row_norm = row_norm
        return sums

    return read


def memory_layout(X):
    """In-memory rows in the layout the reads take best, made once: CSR rows narrower than
    :data:`DENSE_CHUNK_WIDTH` and at least :data:`DENSE_FILL` full dense (float64, at most
    1/DENSE_FILL times their values' bytes: the reads would make every chunk of them dense anyway,
    at every read), and dense rows less full than that CSR (fewer bytes; a Hessian of their
    nonzero pairs, or its products, where BLAS would multiply every zero: w8a stored dense, 4%
    full, took 2.5 s to a 1e-6 gap, 9 times LIBLINEAR's, which makes it sparse too); others as
    they are.  A dense array's fill is estimated from up to :data:`FILL_SAMPLE` of its rows."""
    if sp.issparse(X):
        if X.shape[1] < DENSE_CHUNK_WIDTH and X.nnz >= DENSE_FILL * X.shape[0] * X.shape[1]:
            return np.ascontiguousarray(sp.csr_matrix(X, dtype=np.float64).toarray())
        return X
    X = np.asarray(X)
    step = max(1, X.shape[0] // FILL_SAMPLE)
    rows = X[::step]
    if rows.size and np.count_nonzero(rows) < DENSE_FILL * rows.size:
        return sparse_rows(X)
    return X


def sparse_rows(X):
    """The dense 2-D array ``X`` as a canonical CSR matrix of its dtype (two compiled passes,
    :func:`~...kernels.layout.dense_to_csr`; int32 column indices)."""
    X = np.ascontiguousarray(X)
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    nnz = dense_nonzeros(X, indptr)
    indices, data = np.empty(nnz, dtype=np.int32), np.empty(nnz, dtype=X.dtype)
    dense_to_csr(X, indptr, indices, data)
    return sp.csr_matrix((data, indices, indptr), shape=X.shape)


def prefers_products(X, plan):
    """Whether in-memory rows take Hessian products (conjugate gradient) rather than the Hessian:
    rows wider than :data:`CG_WIDTH`, and sparse rows whose pairs of nonzeros (the Hessian's
    terms, ``sum_i nnz_i^2 / 2``) outnumber their nonzeros (a product's) more than
    :data:`SPARSE_HESSIAN_PAIRS` times.  A feature map's features form the Hessian (they are made
    a chunk at a time, never held)."""
    if plan.feature_map is not None:
        return False
    if X.shape[1] + 1 > CG_WIDTH:
        return True
    if not sp.issparse(X):
        return False
    per_row = np.diff(sp.csr_matrix(X).indptr).astype(np.float64)
    return float(per_row @ per_row) / 2 > SPARSE_HESSIAN_PAIRS * max(X.nnz, 1)

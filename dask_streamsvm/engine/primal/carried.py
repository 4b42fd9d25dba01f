"""The in-memory Newton reads of the squared hinge: the Hessian carried from one read to the next.

The squared hinge's generalised Hessian ``sum_i D_ii x~_i x~_i^T`` (``x~_i = (x_i, bias)``) has
``D_ii = 2 C_i`` on the rows it counts active (shortfall ``1 - m_i > 0``, cost ``C_i > 0``) and 0
on the others (:func:`~...kernels.losses.newton_terms`): between two points it changes only by the
rows whose piece changed.  From a warm start the Newton reads after the first move few of them,
so a read of rows held in memory (:func:`~.reads.memory_read`) makes its certificate's sums, the
gradient and the trial losses in one pass without the Hessian, keeps which rows it counted active,
and makes its Hessian from the last read's: plus the rows that became active, less those that left
(:class:`CarriedHessian`).  That is the Hessian the read would have formed, up to its rounding; the
certificate is the read's own sums, untouched, and the Hessian only sets the next direction, whose
step the next read accepts or refuses by Armijo's rule as before.

Measured on 2M x 60 float32 rows in memory (2 row threads, every row active): the pass with the
Hessian 0.14 s, without it 0.073 s, and the Hessian's change from 20,000 rows that changed piece
0.007 s (2026-12-04, load 0.9); the tall sets' fits in memory took 0.78-0.92 of their seconds
before, the same reads (docs/benchmarks.md, "The squared hinge in memory: the Hessian carried from
read to read").  Where more rows changed piece than :data:`CHANGED_SHARE` of the
rows the read counts active, the Hessian is formed again from those rows instead (the rows' own
Gram matrix costs what their change would).
"""

import numpy as np

from .sums import (
    HESSIAN_IN_DATA_PRECISION,
    ExactGram,
    Sums,
    add_gram,
    block_sums,
    chunk_rows,
    chunk_sums,
    hessian_rows,
    run_sums,
    symmetrised,
)

# The Hessian of a read is formed again from its active rows, not carried, where the rows that
# changed piece since the last read number more than this share of them (the change would cost
# more than the rows' own Gram matrix).
CHANGED_SHARE = 0.5


class CarriedHessian:
    """The Hessians of the last in-memory read of rows ``X`` (dense, C-ordered or not), per problem,
    and which of the rows each counted active: :meth:`read` makes the next read's :class:`Sums`,
    their Hessian carried (:mod:`this module <.carried>`)."""

    def __init__(self, X, bias):
        self.X, self.bias = X, float(bias)
        self.hessians = {}  # problem -> its loss's Hessian (D x D) at the last read's point
        self.active = {}  # problem -> bool (n,): the rows that read counted active
        # (k, n) float64: each row's shortfall 1 - m_i at the last read's point, of the problems it
        # read, as its sums took it (Sums.held: the band of its step, newton.step_band)
        self.shortfall = None
        self.carried = self.formed = 0  # reads whose Hessians were carried, or formed from the rows
        # float32 rows: their Hessian formed exactly in float32 where they are integers (ExactGram)
        self.exact = None if HESSIAN_IN_DATA_PRECISION else ExactGram.of(X)

    def read(self, Y, cost, W, S, todo, loss, where=None):
        """The :class:`Sums` of the rows at ``W + S`` of the problems ``todo`` (labels ``Y`` and
        costs ``cost`` of those problems, (k, n)), with the Hessian: formed from the rows at the
        first read of a problem (and with ``where``, the first read's value check), else carried."""
        X = self.X
        n, k = X.shape[0], len(todo)
        if self.shortfall is None or self.shortfall.shape != (k, n):
            self.shortfall = np.empty((k, n))
        if where is not None or any(c not in self.hessians for c in todo):
            active = np.empty((k, n), dtype=bool)
            sums = self._sums(Y, cost, W, S, loss, where, active, hessian=True)
            for j, c in enumerate(todo):
                self.hessians[c], self.active[c] = sums.hessian[j].copy(), active[j]
            self.formed += 1
            return self._held(sums, Y, cost, W, S)
        active = np.empty((k, n), dtype=bool)
        sums = self._sums(Y, cost, W, S, loss, None, active, hessian=False)
        hessians = np.empty((k, W.shape[1], W.shape[1]))
        for j, c in enumerate(todo):
            hessians[j] = self._carried(c, active[j], cost[j])
            self.active[c] = active[j]
        sums.hessian = hessians
        self.carried += 1
        return self._held(sums, Y, cost, W, S)

    def _held(self, sums, Y, cost, W, S):
        """``sums`` with every row's labels, costs and shortfall at the read's point ``W + S``, and
        ``|W| + |S|``, which bounds the shortfalls' rounding (``Sums.held``)."""
        spread = np.abs(W) + np.abs(S)
        sums.held = [(self.X, Y[j], cost[j], self.shortfall[j], spread[j]) for j in range(Y.shape[0])]
        return sums

    def _sums(self, Y, cost, W, S, loss, where, active, hessian):
        """:func:`~.sums.block_sums` of every row on the row threads, ``active`` (k, n) set to the
        rows whose ``D_ii`` the sums counted (shortfall above 0, cost above 0), and the rows'
        shortfalls kept (``self.shortfall``)."""
        X, bias = self.X, self.bias
        step = chunk_rows(W.shape[1] * W.shape[0])
        shortfall = self.shortfall

        def run_sum(bounds):
            total = None
            for lo in range(bounds[0], bounds[1], step):
                hi = min(lo + step, bounds[1])
                taken = shortfall[:, lo:hi]
                args = (bias, loss, None, where, hessian, taken, self.exact)
                sums = block_sums(X[lo:hi], Y[:, lo:hi], cost[:, lo:hi], W, S, *args)
                np.logical_and(taken > 0.0, cost[:, lo:hi] > 0.0, out=active[:, lo:hi])
                total = sums if total is None else total.add(sums)
            return total

        return run_sums(X.shape[0], step, run_sum, Sums.add)

    def _carried(self, c, active, cost):
        """Problem ``c``'s Hessian at the read that counted ``active`` rows (costs ``cost``): the last
        read's, plus the rows that became active and less those that left; formed from the ``active``
        rows where more than :data:`CHANGED_SHARE` of them changed piece."""
        changed = np.flatnonzero(active != self.active[c])
        if changed.size > CHANGED_SHARE * np.count_nonzero(active):
            hessian = self._gram(np.flatnonzero(active), cost)
            self.hessians[c] = hessian
            return hessian.copy()
        entered = changed[active[changed]]
        left = changed[~active[changed]]
        hessian = self.hessians[c]
        if entered.size:
            hessian += self._gram(entered, cost)
        if left.size:
            hessian -= self._gram(left, cost)
        return hessian.copy()

    def _gram(self, rows, cost):
        """``sum_i 2 C_i x~_i x~_i^T`` (``D_ii = 2 C_i``, ``cost`` every row's ``C_i``) over the row
        indices ``rows``, a chunk of them at a time on the row threads, in the precision a read's
        Hessian is summed in (:data:`~.sums.HESSIAN_IN_DATA_PRECISION`, :func:`~.sums.add_gram`)."""
        X, bias = self.X, self.bias
        D = X.shape[1] + 1
        single = HESSIAN_IN_DATA_PRECISION and X.dtype == np.float32
        dtype = np.float32 if single else np.float64

        def chunk_sum(part):
            index = rows[part]
            scaled = np.empty((index.size, D), dtype=dtype) if single else hessian_rows((index.size, D))
            scaled[:, :-1] = X[index]
            scaled[:, -1] = bias
            scaled *= np.sqrt(2.0 * cost[index]).astype(dtype)[:, None]
            out = np.zeros((D, D))
            add_gram(scaled, out)
            return (out,)

        if not rows.size:
            return np.zeros((D, D))
        return symmetrised(chunk_sums(rows.size, chunk_rows(D), chunk_sum)[0])

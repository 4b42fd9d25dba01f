"""StreamSVM's dual cached loops (Matsushima, Vishwanathan & Smola, KDD 2012).

The reader thread (:class:`~.reader.Reader`) computes partitions ahead; this
module is the trainer, and the only writer of the cache, alpha and w.  Its
loop alternates

1. intake: take the next block and insert its rows in the cache, evicting a
   random cached row whenever the cache is full (Algorithm 1's reader);
2. sweeps: one DCD pass in random order over the cached rows of each
   problem (Algorithm 2's trainer), evicting the rows the paper calls
   uninformative: ``alpha = 0`` and ``G > eps``, or ``alpha = C`` and
   ``G < -eps``.  ``eps`` is the largest projected gradient of the previous
   sweep (``+inf`` at the start: Algorithm 2 prints it as "9"), multiplied
   by ``beta = 0.9`` after a sweep that found the cache over 90% full.
   The paper shrinks eps by beta at every step while the cache is over 90%
   full; once per sweep is our reading, which keeps eps from collapsing to
   zero within one sweep.  The shrink test is LIBLINEAR's, with
   ``(eps, -eps)`` as thresholds, so the kernel does the selection, and
   ``kernels.cache.evict_uninformative`` evicts the rows it shrank.

Between two intakes the trainer visits ``INNER_VISITS`` cached rows for
every row it inserted, then waits for the next block; the reader meanwhile
computes the next ``prefetch`` partitions.  A read costs far more than a
row visit (parsing, decoding, conversion), so it pays to work the cache
hard between reads: on a9a and on the synthetic benchmark 50 visits per
inserted row needed fewer reads and less time than 10 (SBM's inner
iterations) or 40, and about the time of 100.  The paper's trainer also sweeps
while it waits; that makes the model depend on timing, and a seed must fix
the model, so the schedule here depends on row counts only.
"""

import time

import numpy as np
import scipy.sparse as sp

from .cache import RowCache
from .trainer import PassCertifier

BETA = 0.9  # eps <- beta * eps after a sweep over a nearly full cache
NEARLY_FULL = 0.9
INNER_VISITS = 50  # cached-row visits owed per inserted row


class StreamSVMTrainer(PassCertifier):
    """The single writer of cache, alpha and w (see the module docstring)."""

    ROW_MEMORY = "cache"

    def __init__(self, source, plan, store, hooks=None, clock_start=None):
        super().__init__(source, plan, store, hooks, clock_start)
        self.cache_bytes = plan.cache_bytes
        self.eps = np.full(self.k, np.inf)
        self.cache = None
        self.pending = None  # (block, y, cost, next row) being inserted piecewise
        self.visits_owed = 0

    def run(self, reader):
        self.reader = reader
        idle = True
        while not self.done:
            if idle or self.visits_owed <= 0:
                self._intake()
                if self.done:
                    break
            if self.cache is None or self.cache.n_live == 0 or self.current >= self.max_iter:
                idle = True
                continue
            idle = not self._train()

    # -- intake: blocks, pass ends ---------------------------------------------------

    def _intake(self):
        """Insert the next piece of a block; True if rows came in.

        A partition larger than a quarter of the cache is inserted a piece
        at a time, with sweeps in between, so that its rows get trained
        before the next pieces evict them.
        """
        if self.pending is not None:
            self._insert_next_piece()
            return True
        start = time.perf_counter()
        item = self.reader.get()
        self.stats["wait_data"] += time.perf_counter() - start
        while item is not None:
            kind = item[0]
            if kind == "block":
                self._take_block(item[1], item[2])
                if self.pending is not None:
                    self._insert_next_piece()
                return True
            if kind == "end":
                self._certify()
            else:  # "done"
                self.done = True
            if self.done:
                return False
            item = self.reader.get()
        return False

    def _take_block(self, pass_k, block):
        if pass_k != self.current:  # first block of a pass: snapshot the state it certifies
            self._snapshot(pass_k, self.cache)
        fill = 0.0 if self.cache is None else self.cache.used_bytes / self.cache_bytes
        y_pm, cost = self._read(pass_k, block, fill)
        if self.current < self.max_iter and block.n_rows > 0:
            if self.cache is None:
                self.cache = _new_cache(block, self.cache_bytes, self.source, self.k, self.feature_map)
            self.pending = (block, y_pm, cost, 0)

    def _insert_next_piece(self):
        block, y_pm, cost, start = self.pending
        piece = max(1, self.cache.n_slots // 4)
        stop = min(start + piece, block.n_rows)
        rows = block.order[start:stop]  # this pass's row order
        self.visits_owed += INNER_VISITS * (stop - start)
        self.cache.insert(
            block.X[rows], block.row_ids[rows], y_pm[:, rows], cost[:, rows],
            self.squared, self.bias, self.store, self.rng_state,
        )  # fmt: skip
        self.pending = None if stop == block.n_rows else (block, y_pm, cost, stop)

    def _certify(self):
        cache = self.cache
        self._certify_pass(
            {
                "cache_rows": cache.n_live if cache is not None else 0,
                "cache_bytes": cache.used_bytes if cache is not None else 0,
                "insertions": cache.insertions if cache is not None else 0,
                "evictions": cache.evictions if cache is not None else 0,
            }
        )

    def checkpoint_state(self):
        state, arrays = super().checkpoint_state()
        state["visits_owed"] = int(self.visits_owed)  # pass ends come with no block half inserted
        arrays["eps"] = self.eps
        return state, arrays

    def restore(self, state, arrays):
        super().restore(state, arrays)
        if self.cache is not None:
            self.cache.check_dual(self.store)
        self.visits_owed = int(state["visits_owed"])
        self.eps[:] = arrays["eps"]

    # -- training ------------------------------------------------------------------

    def _train(self):
        """Sweep the cache until the visits owed are paid; False if nothing changed."""
        budget = max(self.visits_owed, 1)
        # Crammer-Singer: one joint problem, one eps (the first entry).
        visits, busy = self.cache.sweep(
            self.W, self.bias, self.eps, self.store, budget, self.rng_state,
            beta=BETA, full_at=NEARLY_FULL, crammer_singer=self.crammer_singer,
        )  # fmt: skip
        self.stats["visits"] += visits
        # A solved cache owes nothing more: new rows start a fresh account.
        self.visits_owed = self.visits_owed - visits if busy else 0
        return busy


def _new_cache(block, cache_bytes, source, k, feature_map):
    sparse = sp.issparse(block.X)
    nnz_per_row = block.X.nnz / max(block.n_rows, 1) if sparse else None
    return RowCache(cache_bytes, source.n_features, block.X.dtype, sparse, k, nnz_per_row, feature_map)

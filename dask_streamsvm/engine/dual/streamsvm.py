"""StreamSVM's dual cached loops (Matsushima, Vishwanathan & Smola, KDD 2012).

The reader thread (:class:`~..data.reader.Reader`) computes partitions ahead; this
module is the trainer, and the only writer of the cache, alpha and w.  Its
loop alternates

1. intake: take the next block and offer its rows to the cache (Algorithm
   1's reader), a quarter of the cache at a time;
2. sweeps: one pass in random order over the cached rows of each problem
   (Algorithm 2's trainer, :func:`~...kernels.cache.stream_sweep`), which
   evicts the rows the paper calls uninformative while the cache is over
   90% full: ``alpha = 0`` and ``G > eps``, or ``alpha = U`` and ``G <
   -eps``, with ``eps`` the largest projected gradient of the last n
   visits (n: the rows seen), multiplied by ``beta = 0.9`` at every visit
   over a nearly full cache, as the paper has it.  A cache with room
   evicts nothing: every row it keeps is a row no read has to bring back.

Which rows the cache keeps (``cache_policy="informative"``).  Every row's
share of the duality gap is known where it is seen (Dünner et al., NeurIPS
2017, :func:`~...kernels.losses.row_gap`): offered rows are scored under the
trainer's ``w`` as they arrive, cached rows at every sweep.  A full cache
evicts the rows with the smallest shares for offered rows with larger
ones, never a random row, and a row of share 0 (``alpha = 0``, margin
>= 1) takes only room nobody else needs (:meth:`.cache.RowCache.admit`).
``cache_policy="paper"`` is the paper's StreamSVM: the reader as printed
(a random cached row leaves for every row inserted into a full cache) and
the eps rule with ``beta = 0.9``; ``cache_policy="random"`` the same
reader without the eps rule.  (On a9a, ijcnn1 and w8a "paper" needed 2-4x
the reads of "informative" at a 10% cache and missed a 1e-3 gap in 50
reads at 1%: docs/papers/streamsvm.md.)

How long the trainer sweeps.  The cache is solved when its share of the
gap, as the last sweep measured it, is below ``KAPPA`` times the smaller
of the gap the cache had after its last intake and the last certified
gap (no lower than a tenth of what the stopping rule asks for).  Between
solves the two schedules keep different rhythms:

* ``deterministic=True``: each piece inserted gets one sweep; once the
  rows offered since the last solve fill the cache's slots (and at the
  end of a read), the trainer sweeps until the cache is solved,
  ``MAX_SWEEPS`` sweeps at most, before the next piece of the same block
  too (SBM's rhythm, one solve per cache-full of new rows), and waits.
  The work depends on the rows and the seed only: one seed, one model, bit
  for bit.  (A partition larger than the cache inserted with one sweep a
  piece and no solve needed 13 reads of the a9a file at a 10% cache;
  solving between its pieces, 5.  Solving after every piece cost 2.5-6.6x
  the visits with partitions smaller than the cache: 308 million against
  46 million on the dense 100k x 50 set with a 50% cache, 41 s against
  9 s.)
* asynchronous (the default; the paper's Algorithms 1 and 2): the trainer
  counts the rows the pieces *inserted*, not those offered: rows left out
  and rows already cached change nothing it knows.  When rows enter by
  their share of the gap (the default cache policy) it sweeps none
  between two solves and solves once per ``SOLVE_AFTER_ADMITTED`` (half)
  cache-full of inserted rows; with random eviction (``"paper"``,
  ``"random"``), whose pieces may evict rows no sweep has visited, it
  sweeps once the rows inserted since the last sweep are ``CHANGED`` (a
  quarter) of the cached rows, and solves once per cache-full.  While the
  reader has no block ready it sweeps what it has, ``IDLE_SWEEPS`` (1)
  time at most between two solves, and on a cache no row has entered
  since its last sweep only while the cache's gap is above ``KAPPA``
  times the target; then it blocks on the reader's queue, a real wait
  that leaves the core to the reader.  A solved cache has little left to
  teach: its gap is at most a tenth of the read's, so the certified gap
  hardly moves however long it is swept.  The model still depends on
  timing.  ``history_`` records the sweeps and visits made while the
  reader had nothing ready (``sweeps_waiting``, ``visits_waiting``) and
  those made only because it had nothing (``sweeps_idle``,
  ``visits_idle``).  Measured with benchmarks/bench_trainer_wait.py
  (docs/benchmarks.md): on a9a with a 1% cache in 200 partitions the old
  rhythm (a sweep after every piece, and sweeps on down to ``KAPPA`` times
  the target, ``MAX_SWEEPS`` at most, while the reader read) made 40,984
  sweeps, 11.7 million row visits, for 7 reads in 41 s; this one 6,469
  sweeps (2.1% idle), 1.8 million visits, for 6 reads in 33 s.  On the
  tall 2M x 60 set the first read visits each row 4.4 times instead of
  8.7, and a fit to 1e-3 takes 3 reads and 23 s instead of 3 reads and
  30 s.  (Solving once per
  cache-full of inserted rows visits the tall set's rows 2.2 times in its
  first read, but needs 4 reads there, 9-11 on a9a against 6-8.  Taking
  blocks as soon as they are ready, solved or not, as Algorithm 1 reads,
  needed 17 reads of a9a where solving first needs 6.)

No re-read when the cache holds everything.  A read that inserted every
row of positive weight and evicted none leaves the whole problem in the
cache: the next passes train and certify there (the cached rows' loss is
the primal's loss term), as the in-memory solver does, and the reader
stops.  Not with Platt scaling (its held-out rows are scored as they are
read) or Crammer-Singer.
"""

import time

import numpy as np
import scipy.sparse as sp

from ...kernels.cache import gap_scores
from .cache import RowCache
from .trainer import KAPPA, PassCertifier, fit_rows, reserve_full

BETA = 0.9  # eps <- beta * eps at every visit over a nearly full cache
NEARLY_FULL = 0.9
MAX_SWEEPS = 100  # deterministic: sweeps after one intake at most
SOLVE_AFTER = 1.0  # cache-fulls of rows offered (deterministic) or inserted between two solves of the cache
# The asynchronous schedule's own rhythm (module docstring); deterministic fits sweep after every piece.
SOLVE_AFTER_ADMITTED = 0.5  # cache-fulls of rows inserted between two solves, rows admitted by their gap
CHANGED = 0.25  # random eviction: a piece is swept once the rows inserted since the last sweep are this share
IDLE_SWEEPS = 1  # sweeps while the reader has nothing, at most, between two solves of the cache


class StreamSVMTrainer(PassCertifier):
    """The single writer of cache, alpha and w (see the module docstring)."""

    ROW_MEMORY = "cache"

    def __init__(self, source, plan, store, hooks=None, clock_start=None):
        super().__init__(source, plan, store, hooks, clock_start)
        self.cache_bytes = plan.cache_bytes
        # Rows admitted by their share of the gap; the paper's eviction of uninformative rows.
        self.informative = plan.cache_policy == "informative"
        self.eps_rule = plan.cache_policy in ("informative", "paper")
        self.deterministic = plan.deterministic
        self.eps = np.zeros((self.k, 3))  # per problem: eps, eps_new, visits since eps was set
        self.eps[:, 0] = np.inf
        self.cache = None
        self.pending = None  # (block, y, cost, next row) being inserted piecewise
        # The cache's gap as the last sweep measured it, after the last intake, and the
        # rows seen so far (the paper's n).
        self.gaps = np.array([np.inf, np.inf, 0.0])
        self.in_cache = False  # the cache holds every row: passes need no read
        self.piece_sweeps = 0  # sweeps since the last intake
        self.unsolved_rows = 0  # rows counted since the cache was last solved (or MAX_SWEEPS ended a solve)
        self.changed_rows = 0  # rows inserted since the last sweep (the next sweep is an intake)
        self.idle_sweeps = 0  # asynchronous: sweeps for want of a block since the last solve (IDLE_SWEEPS)
        self.pass_start = (0, 0)  # evictions and rows left out when this pass's first block came
        self.snapshot_gap = np.nan  # the cached rows' share of the gap of the state this pass certifies
        self.stats.update(
            sweeps=0, sweeps_waiting=0, visits_waiting=0, sweeps_idle=0, visits_idle=0, left_out=0
        )

    @property
    def cache_gap(self):
        return self.gaps[0]

    def run(self, reader):
        self.reader = reader
        if self.in_cache:  # restored from a checkpoint taken while training from the cache
            reader.close()
        while not self.done:
            if self.in_cache:
                self._pass_from_cache()
            elif self._solve_due():  # before the next piece of a block, too
                self._sweep(intake=self.changed_rows > 0)
            elif self.pending is not None:
                self._insert_next_piece()
                if self.changed_rows >= self._sweep_after():
                    self._sweep(intake=True)
            elif self._more_sweeps():
                self.idle_sweeps += 1
                self._sweep(intake=self.changed_rows > 0, idle=True)
            else:
                start = time.perf_counter()
                item = reader.get()
                self.stats["wait_data"] += time.perf_counter() - start
                self._handle(item)

    def _trainable(self):
        """Whether the cache has rows to sweep and the fit passes to train."""
        return self.cache is not None and self.cache.n_live > 0 and self.current < self.max_iter

    def _solve_due(self):
        """Whether a solve of the cache is under way: a cache-full of rows came in, and it is not solved."""
        if not self._trainable() or self.unsolved_rows < self._solve_after():
            return False
        if self.changed_rows:  # rows inserted since the last sweep: the gap it measured is stale
            return True
        if self.piece_sweeps >= MAX_SWEEPS or self.cache_gap <= self._target():  # as far as a solve goes
            self.unsolved_rows = 0
            self.idle_sweeps = 0  # a solved cache renews the idle budget
            return False
        return True

    def _admitted(self):
        """Whether rows enter the cache by their share of the gap (``cache_policy="informative"``)."""
        return self.informative and not self.crammer_singer

    def _solve_after(self):
        """Rows counted since the last solve that start the next (module docstring): offered rows in
        a deterministic fit, inserted rows in an asynchronous one, in cache-fulls of the slots."""
        share = SOLVE_AFTER_ADMITTED if self._admitted() and not self.deterministic else SOLVE_AFTER
        return int(np.ceil(share * self.cache.n_slots))

    def _sweep_after(self):
        """Rows inserted since the last sweep that buy a sweep of the whole cache after a piece
        (module docstring): none in a deterministic fit (every piece is swept); asynchronously,
        ``CHANGED`` of the cached rows when rows are evicted at random, rounded down so that whole
        pieces reach it, and no sweep between two solves when rows enter by their share of the gap."""
        if self.deterministic:
            return 0
        if self._admitted():
            return np.inf
        return max(1, int(CHANGED * self.cache.n_live))

    def _more_sweeps(self):
        """The asynchronous schedule: sweep while the reader has nothing ready, ``IDLE_SWEEPS``
        times at most between two solves of the cache, and on a cache no row entered since its last
        sweep only while it has something left to learn (module docstring); otherwise wait."""
        if self.deterministic or not self._trainable() or self.idle_sweeps >= IDLE_SWEEPS:
            return False
        if not self.changed_rows:  # the cache is as the last sweep left it
            if self.piece_sweeps >= MAX_SWEEPS or self.cache_gap <= KAPPA * self._target():
                return False
        return not self.reader.ready()

    def _handle(self, item):
        kind = item[0]
        if kind == "block":
            self._take_block(item[1], item[2])
        elif kind == "end":
            if self.cache is not None:  # solve the cache before the next pass (set before a checkpoint)
                self.unsolved_rows = max(self.unsolved_rows, self._solve_after())
                self.piece_sweeps = 0  # with MAX_SWEEPS of its own
            self._certify()
            if self.in_cache:
                self.reader.close()
        else:  # "done"
            self.done = True

    # -- intake: blocks, pass ends ---------------------------------------------------

    def _take_block(self, pass_k, block):
        if pass_k != self.current:
            self._start_pass(pass_k)
        fill = 0.0 if self.cache is None else self.cache.used_bytes / self.cache_bytes
        y_pm, cost = self._read(pass_k, block, fill)
        if block.n_rows:
            self.gaps[2] = max(self.gaps[2], float(block.row_ids.max()) + 1)
        if self.current < self.max_iter and block.n_rows > 0:
            if self.cache is None:
                self.cache = _new_cache(block, self.cache_bytes, self.source, self.k, self.feature_map)
                reserve_full(self.cache, fit_rows(self.plan, self.source))
            self.pending = (block, y_pm, cost, 0)

    def _start_pass(self, pass_k):
        """Snapshot the state the pass certifies, and the cached rows' share of its gap."""
        self._snapshot(pass_k, self.cache)
        cache = self.cache
        if cache is None:
            self.snapshot_gap = np.nan
        else:
            self.snapshot_gap = cache.objective(self.W_snap, self.bias, self.loss.code)[1]
        self.pass_start = (0 if cache is None else cache.evictions, self.stats["left_out"])

    def _insert_next_piece(self):
        block, y_pm, cost, start = self.pending
        stop = min(start + self._piece(), block.n_rows)
        before = self.cache.insertions
        rows = block.order[start:stop]  # this pass's row order
        ids, y, c = block.row_ids[rows], y_pm[:, rows], cost[:, rows]
        X, at = self.cache.readable(block.X, rows)  # sparse rows where they lie
        args = (self.loss.code, self.bias, self.store, self.rng_state)
        if self.informative and not self.crammer_singer:
            self.store.reserve(int(ids.max()) + 1)
            scores = np.empty(ids.shape[0])
            gap_scores(
                self.cache.piece_layout(X, at), y, c, self.store.alpha[:, ids], self.W, self.bias,
                self.loss.code, scores,
            )  # fmt: skip
            left = self.cache.admit(X, ids, y, c, scores, *args, rows=at)
            self.stats["left_out"] += left.size
        else:
            self.cache.insert(X, ids, y, c, *args, rows=at)
        inserted = self.cache.insertions - before  # rows left out, or already cached, change nothing
        self.changed_rows += inserted
        self.unsolved_rows += stop - start if self.deterministic else inserted
        self.pending = None if stop == block.n_rows else (block, y_pm, cost, stop)

    def _holds_everything(self):
        """Whether the pass just read left every row of positive weight in the cache."""
        cache = self.cache
        return (
            cache is not None
            and cache.n_live > 0
            and (cache.evictions, self.stats["left_out"]) == self.pass_start
            and not self.crammer_singer
            and self.plan.calibration_seed is None
        )

    def _pass_from_cache(self):
        """A pass with no read: train the cached rows, then certify the state from them."""
        self._solve_cache()
        self._snapshot(self.current + 1, self.cache)
        self.loss_sum, self.snapshot_gap = self.cache.objective(self.W_snap, self.bias, self.loss.code)
        self._certify()

    def _certify(self):
        cache, stats = self.cache, self.stats
        read = not self.in_cache
        # Decided before the certificate, so that a checkpoint of this pass resumes without a read.
        self.in_cache = self.in_cache or self._holds_everything()

        def fields(certificates):
            total = sum(c.primal - c.dual for c in certificates)
            return {
                "cache_rows": cache.n_live if cache is not None else 0,
                "cache_bytes": cache.used_bytes if cache is not None else 0,
                "insertions": cache.insertions if cache is not None else 0,
                "evictions": cache.evictions if cache is not None else 0,
                "rows_left_out": stats["left_out"],
                "sweeps": stats["sweeps"],
                "sweeps_waiting": stats["sweeps_waiting"],
                "visits_waiting": stats["visits_waiting"],
                "sweeps_idle": stats["sweeps_idle"],
                "visits_idle": stats["visits_idle"],
                "cache_gap_share": float(self.snapshot_gap / total) if total > 0 else np.nan,
                "in_cache": not read,
            }

        self._certify_pass(fields)

    def checkpoint_state(self):
        state, arrays = super().checkpoint_state()  # pass ends come with no block half inserted
        state["in_cache"], state["piece_sweeps"] = self.in_cache, self.piece_sweeps
        state["unsolved_rows"], state["changed_rows"] = self.unsolved_rows, self.changed_rows
        arrays["eps"], arrays["gaps"] = self.eps, self.gaps
        return state, arrays

    def restore(self, state, arrays):
        super().restore(state, arrays)
        if self.cache is not None:
            self.cache.check_dual(self.store)
        if np.shape(arrays["eps"]) != self.eps.shape or np.shape(arrays["gaps"]) != (3,):
            raise ValueError("the checkpoint's trainer state does not match this fit.")
        self.eps[:], self.gaps[:] = arrays["eps"], arrays["gaps"]
        self.in_cache = bool(state["in_cache"]) and self.cache is not None
        self.piece_sweeps = int(state["piece_sweeps"])
        self.unsolved_rows = int(state["unsolved_rows"])
        self.changed_rows = int(state.get("changed_rows", 0))  # absent from checkpoints before it

    # -- training ------------------------------------------------------------------

    def _piece(self):
        """Rows inserted at a time: a quarter of the cache's slots."""
        return max(1, self.cache.n_slots // 4)

    def _target(self):
        """The cache gap below which the cache counts as solved (module docstring)."""
        return self.solved_below(self.gaps[1])

    def _sweep(self, intake=False, idle=False):
        """One sweep of the cache.  ``intake``: the first since rows entered it (its gap is the one
        a solve starts from); ``idle``: made only because the reader had nothing ready."""
        self.changed_rows = 0
        # A cache that holds every row keeps them all: the certificate's loss is the cached rows' loss.
        visits, self.gaps[0] = self.cache.sweep(
            self.W, self.bias, self.eps, self.store, self.rng_state, beta=BETA, full_at=NEARLY_FULL,
            window=max(self.gaps[2], 1.0), rule=self.eps_rule and not self.in_cache,
            crammer_singer=self.crammer_singer,
        )  # fmt: skip
        self.stats["visits"] += visits
        self.stats["sweeps"] += 1
        self.piece_sweeps = 1 if intake else self.piece_sweeps + 1
        if intake:
            self.gaps[1] = self.cache_gap
        if not self.deterministic and not self.reader.ready():
            self.stats["sweeps_waiting"] += 1
            self.stats["visits_waiting"] += visits
        if idle:
            self.stats["sweeps_idle"] += 1
            self.stats["visits_idle"] += visits

    def _solve_cache(self):
        """Sweeps until the cache is solved (at most ``MAX_SWEEPS``): a pass with no read."""
        if self.cache.n_live == 0:
            return
        self._sweep(intake=True)
        while self.piece_sweeps < MAX_SWEEPS and self.cache_gap > self._target():
            self._sweep()


def _new_cache(block, cache_bytes, source, k, feature_map):
    sparse = sp.issparse(block.X)
    nnz_per_row = block.X.nnz / max(block.n_rows, 1) if sparse else None
    return RowCache(cache_bytes, source.n_features, block.X.dtype, sparse, k, nnz_per_row, feature_map)

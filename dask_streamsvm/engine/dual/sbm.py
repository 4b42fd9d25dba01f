"""Selective block minimization (Chang & Roth, KDD 2011) and block minimization.

SBM's Algorithm 1, on partitions that a reader thread streams in::

    alpha = 0, cache = {}
    for each reader pass t:
        for each block B_j (partitions gathered up to ``block_bytes``):
            W = B_j + cache
            solve the dual on W, alpha outside W fixed: DCD passes to the gap rule
            cache <- the rows of W to keep, within ``cache_bytes`` (section 2.2)

Block minimization (Yu, Hsieh, Chang & Lin, KDD 2010) is the same loop with
no cache (``cache_bytes=0``).

Blocks.  Partitions arrive in each pass's (shuffled) order and are inserted in
the row memory as they come; when the next one would take the block past
``block_bytes``, the block is trained first.  A partition larger than
``block_bytes`` is cut into pieces of at most ``block_bytes`` (its rows in
runs of :data:`RUN_BYTES`, the runs in random order: :func:`piece_order`),
each trained as a block before the next is inserted, as the paper's data is
cut into random blocks of one size: the row memory holds the cache and one
block (a single row larger than a block is held whole while it trains).  The
last block of a pass is trained when the pass ends, so every pass trains every
row it reads (the condition of the paper's Theorem 1).  Bytes are counted as
the row cache counts them (:class:`~.cache.RowCache`: the row values and the
per-row solver state).

Row memory.  ``W`` lives in one :class:`~.cache.RowCache` of ``cache_bytes +
block_bytes`` (the DCD kernel reads its slots directly; its arrays grow with
the rows it holds, up to that budget); after each block the rows not selected
are evicted, which writes their alphas back to the
:class:`~.alpha_store.AlphaStore` and keeps the dual's sums exact.  A sparse
row memory splits its bytes between row slots and a value arena from a guess
of the nonzeros per row; a partition that does not fit that split (its rows
denser or sparser than the guess) has the row memory rebuilt with a split that
fits, as does a row larger than ``block_bytes`` (it grows the memory, which
then keeps its size).  A rebuild releases the old arrays before allocating the
new ones, so for a moment the rows in memory exist twice, in a compact copy.

Solve.  A block's DCD sweeps (:func:`solve_block`) run every problem in one
kernel call per sweep, keep LIBLINEAR's shrinking from sweep to sweep and
from block to block (rows whose gradient points out of the box at a bound
are skipped), and sum the gap shares of the rows they visit; those sums
say when to read the exact gap, whose read also gives the gradients the
cache selection ranks by.

Selection.  ``cache_policy="informative"`` ranks rows by the paper's
gradient score (unbounded rows first; :mod:`dask_streamsvm.kernels.sbm`);
``"random"`` keeps a random subset (the paper's SBM-rand).  Every decision
depends on the data and the seed only, never on timing: one seed, one model.

Certificate, history and hooks are those of every multi-pass trainer
(:mod:`.trainer`): each reader pass certifies the state at its start.
"""

import time

import numpy as np
import scipy.sparse as sp

from ...kernels.crammer_singer import cs_select_informative, cs_sweep
from ...kernels.dcd import Shrinking, dcd_passes
from ...kernels.sbm import block_sweep, gradients, gradients_and_gap, select_informative, select_random
from ..plan.sizes import stored_bytes
from .cache import RowCache
from .trainer import PassCertifier, fit_rows, reserve_full

# A block's sweeps end when a measure of its gap finds it above STALLED x the last measure's, taken
# at most half as many sweeps before (solve_block): the gap no longer halves when the sweeps double.
# Measured on a 1M x 100k sparse set (L1 loss, C = 1, cache 10%): without it, 7 of the 10 blocks of the
# third read ran the 100-sweep cap with their gap falling 694 -> 186 -> 148 -> 135 against a target
# of 102, 51M row visits of the fit's 82M.
STALLED = 0.5

# SBM's pieces of a partition take its rows in runs of consecutive rows of about this many bytes of
# values, the runs in random order (piece_order): random draws of the partition wherever its rows are
# stored by a key, in runs long enough for the memory's prefetch.  Measured (2026-12-06, one profile
# each): on 200,000 x 200,000 text at a 10% cache (600-byte rows: runs of 6) the insertion, eviction
# and norm kernels took 0.67 s of SBM's fit where 0.57 s in stored order, and 0.93-1.13 s one row a
# run; w8a (2,400-byte rows: one row a run) 3 passes at K = 1 and 2 on a cluster where 5 in stored
# order and 5 in runs of 64 rows, ijcnn1 2 and 5 (runs of 23) where 4 and 4.
RUN_BYTES = 4096

# Projected-gradient tolerance of a block's subproblem: passes end there at
# the latest (the gap rules of ``solve_block`` and ``passes_to_gap`` usually end them sooner).
INNER_EPS = 1e-6


def passes_to_gap(rows, problems, indices, alphas, W, bias, rng_state, inner_iter, measure, target):
    """DCD on rows in memory, one pass at a time, until their duality gap is ``target(first gap)``.

    ``problems``, ``indices`` and ``alphas`` hold each one-vs-rest problem's
    arrays; each problem keeps its own active set from pass to pass
    (LIBLINEAR's shrinking, continued) and stops at ``INNER_EPS``.  After
    passes 1, 2, 4, 8, 16, 24, ... ``measure()`` gives the rows' gap (it costs
    about half a pass, so at most 1 in 8 passes pays it); the passes end once
    it is at most ``target(gap after pass 1)``, or after ``inner_iter``.
    Returns ``(passes, visits)``.
    """
    k = len(problems)
    shrink = [Shrinking(i.shape[0], np.inf, -np.inf) for i in indices]
    done = np.zeros(k, dtype=bool)
    start_gap, check, visits = None, 1, 0
    for sweep in range(1, inner_iter + 1):
        for c in np.flatnonzero(~done):
            out = dcd_passes(
                rows, problems[c], indices[c], alphas[c], W[c], bias, 1, INNER_EPS, shrink[c], rng_state
            )
            visits += int(shrink[c].active_size)
            shrink[c] = Shrinking(int(out[1]), out[4], out[5])
            done[c] = out[6]
        if done.all():
            return sweep, visits
        if sweep == check:
            check = 2 * check if check < 8 else check + 8
            gap = measure()
            start_gap = gap if start_gap is None else start_gap
            if gap <= target(start_gap):
                return sweep, visits
    return inner_iter, visits


def solve_block(rows, memory, W, bias, loss, rng_state, inner_iter, thresholds, measure, target):
    """DCD sweeps on the rows in memory until their exact gap is ``target(gap the first sweep saw)``.

    ``memory`` is the :class:`~.cache.RowCache` (its slots ``live[:n]`` are
    the rows), ``loss`` the loss's code, ``thresholds`` a ``(k, 2)`` float
    array of each problem's shrinking thresholds, carried from block to
    block and updated in place (:func:`~...kernels.sbm.block_sweep`).
    Each sweep sums the gap shares of the rows it visits (the gap "seen");
    the first sweep's is the block's gap at its start.  After sweep ``p >=
    2`` the gap after it is predicted as ``seen_p^2 / seen_(p-1)`` (the
    last sweep's rate once more); when the prediction meets the target, or
    after sweep 1, ``measure()`` reads the rows' exact gap, and the sweeps
    end once it is at most ``target(seen_1)``.  After a measure that misses
    the target, the next waits for as many sweeps again; when that one
    finds the gap above ``STALLED`` times the last measure's, the sweeps
    end there too (the solve is in DCD's sublinear tail: its next halving
    would cost more sweeps than the block has taken).  The sweeps also
    end when every problem's active set is optimal to ``INNER_EPS``, or
    after ``inner_iter``.  The first sweep's gap is larger than the gap
    after it that :func:`passes_to_gap` starts from: a block new rows
    enter with a large gap ends sooner (one sweep where the rows barely
    interact, as on wide sparse data).

    Returns ``(sweeps, visits, measured)``: ``measured`` is true when the
    last ``measure()`` saw the state the sweeps end in.
    """
    n = memory.n_live
    k = thresholds.shape[0]
    index = np.empty((k, n), dtype=np.int64)
    index[:] = memory.live[:n]
    active = np.full(k, n, dtype=np.int64)
    done = np.zeros(k, dtype=np.bool_)
    slot_values = (memory.Y, memory.U, memory.D, memory.QD, memory.A)
    start = previous = last_gap = None
    visits, next_measure = 0, 1
    for sweep in range(1, inner_iter + 1):
        seen_visits, seen = block_sweep(
            rows, slot_values, W, bias, loss, index, active, thresholds, done, INNER_EPS, rng_state,
        )  # fmt: skip
        visits += seen_visits
        if done.all():
            return sweep, visits, False
        start = seen if start is None else start
        goal = target(start)
        predicted = seen if previous is None else seen * seen / max(previous, np.finfo(float).tiny)
        previous = seen
        if sweep == 1 or (sweep >= next_measure and predicted <= goal):
            gap = measure()
            if gap <= goal or (last_gap is not None and gap > STALLED * last_gap):
                return sweep, visits, True
            last_gap, next_measure = gap, 2 * sweep
    return inner_iter, visits, False


def piece_order(block):
    """The order SBM's pieces take ``block``'s rows in: runs of consecutive rows of about
    :data:`RUN_BYTES` of values each (one row where a row is larger), the runs in an order drawn
    from the pass's row order ``block.order`` (the stored order where it is None)."""
    n, X = block.n_rows, block.X
    if block.order is None or n == 0:
        return np.arange(n)
    row_bytes = (X.data.nbytes + X.indices.nbytes) / n if sp.issparse(X) else X.itemsize * X.shape[1]
    run = max(1, int(RUN_BYTES // max(row_bytes, 1.0)))
    n_runs = -(-n // run)
    starts = np.argsort(block.order[:n_runs], kind="stable") * run  # a random order of the runs
    lengths = np.minimum(starts + run, n) - starts
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(n)


class BlockTrainer(PassCertifier):
    """The single writer of the row memory, alpha and w (see the module docstring).

    ``plan.cache_bytes`` is the cache kept from one block to the next (0:
    block minimization), ``plan.block_bytes`` the bytes of partitions
    gathered into a block, ``plan.gap_ruled_passes`` the most DCD passes
    over block plus cache per block (:func:`passes_to_gap`; the paper runs
    10), ``plan.fixed_passes`` the Crammer-Singer method's.  Both byte counts count rows as
    the row cache stores them: values and column indices, plus per row
    ``32 + 40 k`` bytes of solver state (``+ 16`` when sparse); the row
    memory's fixed 48 bytes count against the block.

    Each history record holds StreamSVM's fields (``cache_rows`` and
    ``cache_bytes`` describe the cache kept after the pass's last block)
    and ``blocks`` (blocks trained so far), ``memory_bytes`` (the most the
    row memory allocated during the pass), ``peak_used_bytes`` (the most
    its rows occupied), both in the row cache's own accounting, and
    ``rebuilds`` (times the row memory was reallocated so far).  The
    ``fill`` given to ``on_block`` is the fraction of the row memory (cache
    plus block) in use when the partition arrives.
    """

    ROW_MEMORY = "memory"

    def __init__(self, source, plan, store, hooks=None, clock_start=None):
        super().__init__(source, plan, store, hooks, clock_start)
        self.cache_bytes, self.block_bytes = plan.cache_bytes, plan.block_bytes
        self.inner_iter, self.cs_passes = plan.gap_ruled_passes, plan.fixed_passes
        self.informative = plan.cache_policy == "informative"
        self.memory = None  # RowCache holding W = block + cache
        self.kept = np.empty(0, dtype=np.int64)  # global ids of the cached rows, best first
        self.block_used = 0  # bytes of the rows the current block added
        self.block_rows = 0  # rows of the current block in memory (some may have been cached)
        self.grad = None  # the rows' gradients in the order of memory.live, from the block's last measure
        # Each problem's shrinking thresholds (pg_max_old, pg_min_old), carried from block to block.
        self.thresholds = np.tile([np.inf, -np.inf], (self.k, 1))
        self.stats.update(blocks=0, insertions=0, evictions=0, rebuilds=0, memory_bytes=0, peak_used_bytes=0)

    def run(self, reader):
        self.reader = reader
        while not self.done:
            start = time.perf_counter()
            item = reader.get()
            self.stats["wait_data"] += time.perf_counter() - start
            self.feed(item)

    def feed(self, item):
        """One of the reader's items: ``("block", pass, block)`` taken into the row memory (trained
        once a block is full), ``("end", pass)`` the pass's last block trained and the pass
        certified, ``("done", None)`` the fit's end.  A cluster's SBM feeds its trainer so
        (:mod:`~..cluster.root_sbm`), the parts' blocks brought to its worker."""
        kind = item[0]
        if kind == "block":
            self._take_block(item[1], item[2])
        elif kind == "end":
            if self.block_rows > 0:
                self._train_block()
            self._certify()
        else:  # "done"
            self.done = True

    # -- a partition arrives -------------------------------------------------------

    def _take_block(self, pass_k, block):
        if pass_k != self.current:  # first partition of a pass: snapshot the state it certifies
            self._snapshot(pass_k, self.memory)
            self.stats["memory_bytes"] = self.memory.nbytes if self.memory is not None else 0
            self.stats["peak_used_bytes"] = self.memory.used_bytes if self.memory is not None else 0
        memory = self.memory
        fill = 0.0 if memory is None else memory.used_bytes / memory.cache_bytes
        y_pm, cost = self._read(pass_k, block, fill)
        if self.current < self.max_iter and block.n_rows > 0:
            self._add_to_block(block, y_pm, cost)

    def _incoming(self, block, cost, rows=None):
        """Rows, nonzeros and bytes that inserting ``block``'s rows (those at ``rows``, whose costs
        ``cost`` are; None: all) adds (weightless and cached rows skip)."""
        ids = block.row_ids if rows is None else block.row_ids[rows]
        new = (cost > 0.0).any(axis=0) & (self.store.slot_of[ids] < 0)
        n_rows = int(new.sum())
        X = block.X
        if sp.issparse(X):
            values = np.diff(X.indptr) if rows is None else X.indptr[rows + 1] - X.indptr[rows]
            nnz = int(values[new].sum())
            return n_rows, nnz, stored_bytes(n_rows, nnz, self.k, X.dtype, True)
        return n_rows, 0, stored_bytes(n_rows, n_rows * X.shape[1], self.k, X.dtype, False)

    def _add_to_block(self, block, y_pm, cost):
        self.store.reserve(int(block.row_ids.max()) + 1)
        room = self.block_bytes - RowCache.HEADER
        n_rows, nnz, nbytes = self._incoming(block, cost)
        if nbytes <= room and self.block_used > 0 and self.block_used + nbytes > room:
            self._train_block()  # the block is full: this partition starts the next one
            n_rows, nnz, nbytes = self._incoming(block, cost)  # its cached rows may have left
        if nbytes > room:  # (also where they left: they come back as new rows, in pieces)
            self._add_in_pieces(block, y_pm, cost, room)
            return
        self._insert(block, y_pm, cost, n_rows, nnz, nbytes)

    def _add_in_pieces(self, block, y_pm, cost, room):
        """A partition larger than a block, in pieces: each fills the block, which is trained before
        the next piece comes in, so that the row memory holds the cache and one block (SBM's blocks
        are of one size); the last piece's block stays open for the next partition.  A piece is the
        next rows of :func:`piece_order` (runs of rows in random order), inserted from where they
        lie: rows stored by a key (by label: every piece of one class) make pieces of a random draw
        of the partition, as the paper's random blocks are."""
        order = piece_order(block)
        X = block.X
        # The rows in the pass's order: their ids, whether they weigh, their stored values.
        ids, weighs = block.row_ids[order], (cost > 0.0).any(axis=0)[order]
        values = np.diff(X.indptr)[order] if sp.issparse(X) else np.full(order.size, X.shape[1])
        mean = stored_bytes(1, float(values.mean()), self.k, X.dtype, sp.issparse(X))  # a row's bytes
        start = 0
        while start < block.n_rows:
            end = self._piece_end(X, ids, weighs, values, mean, start, room - self.block_used)
            if end == start:
                if self.block_used > 0:
                    self._train_block()  # not one more row fits: the next piece starts a block
                    continue
                end = start + 1  # a row larger than a block is held whole while it trains
            rows = order[start:end]
            taken = (y_pm[:, rows], cost[:, rows])
            self._insert(block, *taken, *self._incoming(block, taken[1], rows), rows=rows)
            start = end

    def _piece_end(self, X, ids, weighs, values, mean, start, free):
        """The end of the rows from ``start`` (of ids ``ids``, weighing where ``weighs``, of
        ``values`` stored values) whose new rows take at most ``free`` bytes.  Rows are looked at
        in windows of twice the rows ``free`` holds at ``mean`` bytes a row, so that a piece costs
        its rows, not the partition's."""
        sparse, n = sp.issparse(X), ids.shape[0]
        stop, seen, taken = start, 0, np.zeros(0)
        while stop < n and seen <= free:
            lo, stop = stop, min(n, stop + 2 * int(max(free, 0) // mean) + 64)
            new = weighs[lo:stop] & (self.store.slot_of[ids[lo:stop]] < 0)
            more = np.cumsum(stored_bytes(new, new * values[lo:stop], self.k, X.dtype, sparse)) + seen
            taken, seen = np.concatenate([taken, more]), (more[-1] if more.size else seen)
        return start + int(np.searchsorted(taken, free, side="right"))

    def _insert(self, block, y_pm, cost, n_rows, nnz, nbytes, rows=None):
        """Insert ``block``'s rows (those at ``rows``, whose ``y_pm`` and ``cost`` are; None: all),
        ``n_rows`` new, ``nnz`` nonzeros, ``nbytes``, into the block."""
        ids = block.row_ids if rows is None else block.row_ids[rows]
        # Rows of this partition that are cached belong to the block now: they
        # are trained with it, so making room must not evict them.
        self.kept = self.kept[~np.isin(self.kept, ids)]
        if n_rows > 0:
            self._make_room(block, n_rows, nnz, nbytes)
            memory = self.memory
            before = memory.evictions
            inserted = memory.insert(
                block.X, ids, y_pm, cost, self.loss.code, self.bias, self.store, self.rng_state, rows=rows
            )
            if inserted != n_rows or memory.evictions != before:
                raise RuntimeError(
                    f"SBM inserted {inserted} of {n_rows} rows of partition {block.partition} with "
                    f"{memory.evictions - before} evictions; the row memory was miscounted."
                )
            self.stats["insertions"] += inserted
            self.block_used += nbytes
            self._note_memory()
        self.block_rows += int((self.store.slot_of[ids] >= 0).sum())

    def _note_memory(self):
        memory = self.memory
        self.stats["memory_bytes"] = max(self.stats["memory_bytes"], memory.nbytes)
        self.stats["peak_used_bytes"] = max(self.stats["peak_used_bytes"], memory.used_bytes)

    # -- row memory ---------------------------------------------------------------

    def _make_room(self, block, n_rows, nnz, nbytes):
        """Make the row memory ready to take ``n_rows`` new rows (``nnz`` nonzeros) whole."""
        need = self.cache_bytes + max(self.block_bytes, nbytes + RowCache.HEADER)
        if self.memory is None:
            dtype, sparse = block.X.dtype, sp.issparse(block.X)
            shape = (self.source.n_features, dtype, sparse, self.k, nnz / max(n_rows, 1))
            self._check_budget(RowCache.least_bytes(*shape))
            self.memory = RowCache(need, *shape, self.feature_map)
            reserve_full(self.memory, fit_rows(self.plan, self.source))
        elif self.memory.cache_bytes < need:
            self._rebuild(need, n_rows, nnz)  # a row larger than block_bytes
        self.memory.compact()
        if not self.memory.fits(n_rows, nnz):
            # The bytes fit (cache <= cache_bytes, block <= block_bytes), but a sparse
            # memory's split between slots and arena does not: split it anew.
            self._rebuild(self.memory.cache_bytes, n_rows, nnz)
        while not self.memory.fits(n_rows, nnz) and self.kept.size:
            # Rounding in the split: the lowest-ranked cached rows make room.
            worst, self.kept = self.kept[-1:], self.kept[:-1]
            self.memory.evict(self.store.slot_of[worst], self.store)
            self.stats["evictions"] += 1
            self.memory.compact()
        if not self.memory.fits(n_rows, nnz):
            raise RuntimeError(
                f"partition {block.partition}: {n_rows} rows with {nnz} nonzeros do not fit "
                f"the row memory of {self.memory.cache_bytes} bytes."
            )

    def _check_budget(self, least):
        """Refuse a budget that cannot hold one row (``least`` bytes), as StreamSVM's cache does.

        A partition larger than a block is trained a block-sized piece at a time; a budget below a
        single row cannot be cut so, and is a mistake (bytes meant as megabytes), refused before
        the first partition is held.
        """
        budget = self.cache_bytes + self.block_bytes
        if budget < least:
            raise ValueError(
                f"{budget} bytes of row memory (a cache of {self.cache_bytes} and blocks of "
                f"{self.block_bytes}, from cache_bytes and block_bytes) cannot hold a single row of "
                f"{self.source.n_features} features, which takes {least} bytes with its bookkeeping; "
                "give cache_bytes (or block_bytes) more."
            )

    def _rebuild(self, capacity, n_rows, nnz):
        """Move the rows in memory to a new RowCache of ``capacity`` bytes (:meth:`.cache.RowCache.rebuild`).

        Its slot/arena split fits the rows in memory plus ``n_rows`` rows of
        ``nnz`` nonzeros; the old arrays are released before the new ones
        are allocated.
        """
        old, self.memory = self.memory, None
        self.memory = old.rebuild(
            capacity, n_rows, nnz, self.store, self.loss.code, self.bias, self.rng_state
        )
        self.stats["rebuilds"] += 1
        self._note_memory()

    # -- a block is complete -----------------------------------------------------

    def _train_block(self):
        """Algorithm 1, steps (b)-(d): DCD on block + cache, then select the next cache."""
        memory = self.memory
        n = memory.n_live
        if self.crammer_singer:
            index = memory.live[:n].copy()
            shrinkable = np.empty(n, dtype=np.int64)
            for _ in range(self.cs_passes):
                worst = cs_sweep(
                    memory.layout, memory.Y, memory.U, memory.QD, memory.A, self.W, self.bias, index, n,
                    np.inf, shrinkable, self.rng_state,
                )  # fmt: skip
                self.stats["visits"] += n
                if worst <= INNER_EPS:
                    break
        else:
            self._solve_block(memory, n)
        self.stats["blocks"] += 1
        self._select_cache()
        self.grad = None
        self.block_used = self.block_rows = 0

    def _solve_block(self, memory, n):
        """DCD sweeps on block plus cache until its exact gap is ``solved_below`` (:func:`solve_block`).

        Each measure of the gap also gives every row's gradient
        (:func:`~...kernels.sbm.gradients_and_gap`); when the sweeps end at
        a measure, the cache selection ranks by those (``self.grad``).
        """
        slots = memory.live[:n].copy()
        grad = np.empty((self.k, n))
        layout, code = memory.layout, self.loss.code

        def measure():
            return gradients_and_gap(
                layout, memory.Y, memory.U, memory.D, memory.A, self.W, self.bias, code, slots, grad
            )

        _, visits, measured = solve_block(
            layout, memory, self.W, self.bias, code, self.rng_state, self.inner_iter, self.thresholds,
            measure, self.solved_below,
        )  # fmt: skip
        self.grad = grad if measured else None
        self.stats["visits"] += visits

    def _select_cache(self):
        memory = self.memory
        n = memory.n_live
        slots = memory.live[:n].copy()
        keep = np.empty(n, dtype=np.int64)
        n_keep = 0
        if self.cache_bytes > 0 and n > 0:
            sizes = memory.slot_bytes(slots)
            if self.informative and self.crammer_singer:
                # Section 3: informative rows have few shrinkable variables; ties
                # go to the larger violation of the optimality conditions.
                n_keep = cs_select_informative(
                    memory.layout, memory.Y, memory.U, memory.A, self.W, self.bias, slots, sizes,
                    self.cache_bytes, keep,
                )  # fmt: skip
            elif self.informative:
                grad = self.grad  # the last measure's, when it saw the state the block's solve ended in
                if grad is None:
                    grad = np.empty((self.k, n))
                    gradients(
                        memory.layout, memory.Y, memory.U, memory.D, memory.A, self.W, self.bias,
                        self.loss.code, slots, grad,
                    )  # fmt: skip
                n_keep = select_informative(
                    memory.A[:, slots], grad, memory.U[:, slots], sizes, self.cache_bytes, keep
                )
            else:
                n_keep = select_random(sizes, self.cache_bytes, self.rng_state, keep)
        kept_slots = slots[keep[:n_keep]]
        dropped = np.ones(n, dtype=bool)
        dropped[keep[:n_keep]] = False
        memory.evict(slots[dropped], self.store)
        self.stats["evictions"] += n - n_keep
        self.kept = memory.gid[kept_slots].copy()

    # -- checkpoints ---------------------------------------------------------------

    def checkpoint_state(self):
        # A pass ends with its last block trained: the row memory holds the cache only.
        state, arrays = super().checkpoint_state()
        arrays["kept"] = self.kept
        arrays["thresholds"] = self.thresholds
        return state, arrays

    def restore(self, state, arrays):
        super().restore(state, arrays)
        self.kept = arrays["kept"].astype(np.int64)
        if "thresholds" in arrays:  # saved before the thresholds were carried: none shrinks at first
            self.thresholds = np.array(arrays["thresholds"], dtype=np.float64).reshape(self.k, 2)
        memory = self.memory
        if memory is not None:
            memory.check_dual(self.store)
            if not np.isin(self.kept, memory.gid[memory.live[: memory.n_live]]).all():
                raise ValueError("the saved cache selection names rows that are not cached.")

    # -- pass end ----------------------------------------------------------------

    def _certify(self):
        memory, stats = self.memory, self.stats
        self._certify_pass(
            {
                "cache_rows": memory.n_live if memory is not None else 0,
                "cache_bytes": memory.used_bytes if memory is not None else 0,
                "insertions": stats["insertions"],
                "evictions": stats["evictions"],
                "blocks": stats["blocks"],
                "memory_bytes": stats["memory_bytes"],
                "peak_used_bytes": stats["peak_used_bytes"],
                "rebuilds": stats["rebuilds"],
            }
        )

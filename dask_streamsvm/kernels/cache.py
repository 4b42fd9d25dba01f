"""numba kernels of the row cache: insertion with random eviction, eviction, StreamSVM's trainer.

State (all allocated by ``engine.dual.cache.RowCache`` and ``engine.dual.alpha_store.AlphaStore``;
``k`` problems share the rows, one per one-vs-rest class).  The kernels take
it as two bundles of arrays, :data:`CacheArrays` (the budgeted cache) and
:data:`DualArrays` (every row seen)::

    CacheArrays
    meta              n_live, n_free, arena top, garbage, insertions, evictions
    gid[s]            global row id in slot s (-1: free)
    live[:n_live]     occupied slots;  pos[s] = position of s in live
    free              free slots (a stack, see below)
    Y, U, D, QD, A    (k, slots): y, upper bound U, D_ii, Qbar_ii, alpha
    GAP               the row's share of the duality gap (summed over problems)
    starts, ends, indices, data   sparse: the rows of the slots in an arena
    rows              dense: (slots, n_features), one row per slot
    n_slots, n_values the budget's slots and arena values (scalars)

    DualArrays (outside the budget)
    slot_of[g]        slot of global row g, or -1
    alpha[:, g]       alpha of every row seen
    sums[:, 0], sums[:, 1]   the dual's two running sums (:func:`~.losses.dual_sums_change`:
                      sum_g alpha[c, g] and sum_g D_g alpha[c, g]^2 for the hinges)
    loss              the loss's code (:mod:`.losses`): its leaves keep ``sums``
                      and score the rows' shares of the gap

A dense cache has empty ``starts``, ``ends``, ``indices`` and ``data``; a
sparse one an empty ``rows``.  The arena of a sparse cache grows with a bump
pointer; evicted rows leave garbage that :func:`compact` squeezes out when
the arena is full.  Insertion follows StreamSVM's reader (Matsushima et al.
2012, Algorithm 1): when the cache is full, a random cached row is evicted
to make room.  Evicting writes the row's alphas back to ``alpha`` and keeps
``sums`` exact for the dual.  StreamSVM's trainer (Algorithm 2) is
:func:`stream_sweep`, and its eviction rule :func:`evict_uninformative`;
the cache chosen by each row's share of the duality gap is
:func:`~.losses.row_gap`, :func:`gap_scores` and :func:`select_by_gap`.

Every decision (which slot a row takes, when the arena is full, which row
a full cache evicts) is made on the budget's sizes, ``n_slots`` slots and
``n_values`` arena values, as if the cache had allocated them all: the
arena's top and garbage in ``meta`` count in a budget-sized arena, and
``meta[N_FREE]`` counts the budget's free slots.  The arrays themselves
hold only what the caller allocated so far (``engine.dual.cache.RowCache``
grows them, before each insertion, to what the insertion can reach):

* slots: ``gid.shape[0]`` of them.  Free slots are taken from the top of
  a stack that starts as ``n_slots - 1, ..., 1, 0`` and takes evicted
  slots back on top, so a slot is first used only when every lower one is
  in use; ``free`` holds the top ``free.shape[0]`` entries of that stack,
  whose bottom entries (``n_slots - 1`` down to ``gid.shape[0]``) are
  implied.
* values: ``data.shape[0]`` of them.  Rows are stored from a top of their
  own (``insert_sparse``'s ``top``, never above the arena top in
  ``meta``); when a row does not fit there, :func:`pack` squeezes out the
  garbage, which changes where rows are stored, never which rows are
  cached.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .dcd import PG_SKIP
from .losses import (
    box_loss,
    dual_gradient,
    dual_step,
    dual_sums_change,
    row_gap,
    upper_and_diag,
)
from .rng import next_uint64, shuffle_prefix
from .rows import n_rows, prefetch, row_axpy, row_dot, row_prefetch, row_prefetch_start

# meta[0] = n_live, meta[1] = n_free, meta[2] = arena top (sparse), meta[3] = garbage nnz,
# meta[4] = insertions, meta[5] = evictions
N_LIVE, N_FREE, TOP, GARBAGE, INSERTED, EVICTED = range(6)
META_SIZE = 6

CacheArrays = namedtuple(
    "CacheArrays", "meta gid live pos free Y U D QD A GAP starts ends indices data rows n_slots n_values"
)
CacheArrays.__doc__ = "The row cache's arrays (module docstring), from ``engine.dual.cache.RowCache.arrays``."

DualArrays = namedtuple("DualArrays", "slot_of alpha sums loss")
DualArrays.__doc__ = "Every row's dual state and its loss (module docstring), from ``AlphaStore.arrays``."


@njit(cache=True, nogil=True, inline="always")
def _stack_index(cache, depth):
    """Index in ``free`` of the free stack's entry ``depth`` (0: the bottom, implied entries included)."""
    return depth - (cache.n_slots - cache.free.shape[0])


@njit(cache=True, nogil=True)
def write_back(s, cache, dual):
    """Copy the alphas of slot ``s`` to the store, keeping its dual sums exact (by the store's loss)."""
    A, U, D, alpha, sums = cache.A, cache.U, cache.D, dual.alpha, dual.sums
    g = cache.gid[s]
    for c in range(A.shape[0]):
        new = A[c, s]
        old = alpha[c, g]
        if new != old:
            change, weighted = dual_sums_change(dual.loss, new, old, U[c, s], D[c, s])
            sums[c, 0] += change
            sums[c, 1] += weighted
            alpha[c, g] = new


@njit(cache=True, nogil=True)
def evict(s, cache, dual):
    """Remove slot ``s`` from the cache (its alphas go back to the store)."""
    meta, gid, live, pos = cache.meta, cache.gid, cache.live, cache.pos
    write_back(s, cache, dual)
    dual.slot_of[gid[s]] = -1
    gid[s] = -1
    last = live[meta[N_LIVE] - 1]
    p = pos[s]
    live[p] = last
    pos[last] = p
    meta[N_LIVE] -= 1
    cache.free[_stack_index(cache, meta[N_FREE])] = s
    meta[N_FREE] += 1
    if cache.starts.shape[0] > 0:
        meta[GARBAGE] += cache.ends[s] - cache.starts[s]
        cache.starts[s] = 0
        cache.ends[s] = 0
    meta[EVICTED] += 1


# stable_order sorts by digits of this many bits (2**RADIX_BITS counters, one pass a digit).  Measured
# (2026-12-06) on the 17,600 row starts of a 200,000 x 200,000 text fit's cache: 0.12 ms where numba's
# stable mergesort took 1.6 ms.  pack sorts them at every compaction (316 times in a StreamSVM fit of
# that set, whose compactions took 0.84 s of its 5.7 s, 0.63 s with this sort), admit its gap shares.
RADIX_BITS = 11


@njit(cache=True, nogil=True)
def stable_order(keys):
    """``np.argsort(keys, kind="stable")`` of non-negative int64 ``keys``, in O(n) a digit: a least
    significant digit radix sort, :data:`RADIX_BITS` bits a digit, as many digits as the largest
    key has (one for all-zero keys)."""
    n = keys.shape[0]
    order = np.arange(n)
    spare = np.empty(n, dtype=np.int64)
    largest = 0
    for t in range(n):
        if keys[t] < 0:
            raise ValueError("stable_order takes non-negative keys")
        largest = max(largest, keys[t])
    mask = (1 << RADIX_BITS) - 1
    counts = np.empty(mask + 2, dtype=np.int64)
    shift = 0
    while True:
        counts[:] = 0
        for t in range(n):
            counts[((keys[order[t]] >> shift) & mask) + 1] += 1
        for b in range(mask + 1):
            counts[b + 1] += counts[b]
        for t in range(n):
            i = order[t]
            digit = (keys[i] >> shift) & mask
            spare[counts[digit]] = i
            counts[digit] += 1
        order, spare = spare, order
        shift += RADIX_BITS
        if shift >= 63 or (largest >> shift) == 0:
            return order


def descending_order(scores):
    """``np.argsort(-scores, kind="stable")`` (highest first, ties in input order) by
    :func:`stable_order`: non-negative finite float64s order as their bit patterns do (``-0.0``
    counts as ``0.0``, as the comparison has it); other scores take NumPy's sort."""
    scores = np.ascontiguousarray(scores, dtype=np.float64) + 0.0  # -0.0 + 0.0 is 0.0
    if scores.size == 0 or not (np.isfinite(scores).all() and scores.min() >= 0.0):
        return np.argsort(-scores, kind="stable")
    return stable_order(np.iinfo(np.int64).max - scores.view(np.int64))


@njit(cache=True, nogil=True)
def compact(cache):
    """Squeeze the garbage out of a sparse cache's arena (:func:`pack`); its top is then the live values."""
    top = pack(cache)
    cache.meta[TOP] = top
    cache.meta[GARBAGE] = 0
    return top


@njit(cache=True, nogil=True)
def pack(cache):
    """Move the live rows of a sparse cache to the front of the arena, in arena order; returns their values.

    Where rows are stored only: the arena's top and garbage in ``meta``
    are the caller's to set (:func:`compact`).
    """
    live, starts, ends = cache.live, cache.starts, cache.ends
    indices, data = cache.indices, cache.data
    n = cache.meta[N_LIVE]
    # By start (stable: the live rows' starts are distinct, bar empty rows, which keep live's order).
    keys = np.empty(n, dtype=np.int64)
    for t in range(n):
        keys[t] = starts[live[t]]
    by_start = stable_order(keys)
    order = np.empty(n, dtype=np.int64)
    for t in range(n):
        order[t] = live[by_start[t]]
    top = 0
    for t in range(n):
        s = order[t]
        lo = starts[s]
        m = ends[s] - lo
        for k in range(m):
            indices[top + k] = indices[lo + k]
            data[top + k] = data[lo + k]
        starts[s] = top
        ends[s] = top + m
        top += m
    return top


@njit(cache=True, nogil=True, inline="always")
def _evict_random(cache, dual, rng_state, victim):
    """Evict a random cached row (StreamSVM's reader, Algorithm 1) through :func:`write_back_many`.

    ``victim`` is a one-slot scratch array: insertion evicts by the kernel that every other
    eviction uses, so that a fit compiles one eviction, not this one besides.
    """
    n = np.uint64(cache.meta[N_LIVE])
    victim[0] = cache.live[np.int64(((next_uint64(rng_state) >> np.uint64(32)) * n) >> np.uint64(32))]
    write_back_many(victim, np.int64(1), cache, dual, np.bool_(True))  # the types Python passes: one variant


@njit(cache=True, nogil=True, inline="always")
def _take_slot(g, cache, dual):
    meta = cache.meta
    s = cache.free[_stack_index(cache, meta[N_FREE] - 1)]
    meta[N_FREE] -= 1
    cache.gid[s] = g
    dual.slot_of[g] = s
    cache.live[meta[N_LIVE]] = s
    cache.pos[s] = meta[N_LIVE]
    meta[N_LIVE] += 1
    meta[INSERTED] += 1
    return s


@njit(cache=True, nogil=True, inline="always")
def _set_problem_values(s, r, g, block_y, block_cost, loss, bias, sqnorm, cache, dual):
    """Slot ``s`` takes block row ``r`` (global row ``g``): its ``y``, ``U``, ``D``, ``Qbar`` and alpha."""
    Y, U, D, QD, A = cache.Y, cache.U, cache.D, cache.QD, cache.A
    for c in range(Y.shape[0]):
        Y[c, s] = block_y[c, r]
        U[c, s], D[c, s] = upper_and_diag(loss, block_cost[c, r])
        QD[c, s] = sqnorm + bias * bias + D[c, s]
        A[c, s] = dual.alpha[c, g]


@njit(cache=True, nogil=True, inline="always")
def _weightless(block_cost, r):
    for c in range(block_cost.shape[0]):
        if block_cost[c, r] > 0.0:
            return False
    return True


# insert_sparse announces the row this many steps ahead of the one it copies (_announce_row): its
# rows may come in any order (SBM's pieces), each a cache miss the hardware prefetcher cannot predict.
INSERT_AHEAD = 4


@njit(cache=True, nogil=True, inline="always")
def _announce_row(lo, hi, indices, data):
    """Announce every cache line of a row's values and column indices (:func:`~.rows.prefetch`; lines
    of 8 float64 values and 16 int32 indices: narrower types are announced twice a line)."""
    hi = min(hi, data.shape[0])
    for k in range(lo, hi, 8):
        prefetch(data, k)
    for k in range(lo, hi, 16):
        prefetch(indices, k)


@njit(cache=True, nogil=True, inline="always")
def _allocated_for(cache, dual, row_ids, block_cost, lengths):
    """Whether the arrays hold all that inserting the block's rows can reach (module docstring).

    The rows inserted are those not cached and of positive cost (``lengths``
    gives their values when sparse; empty when dense).  A cached row that an
    insertion evicts may come back, but then it left first: the live rows
    never outnumber those live now plus these, nor do their values, and the
    budget's sizes bound both.
    """
    rows = 0
    values = 0
    for r in range(row_ids.shape[0]):
        if dual.slot_of[row_ids[r]] < 0 and not _weightless(block_cost, r):
            rows += 1
            if lengths.shape[0] > 0:
                values += lengths[r]
    meta = cache.meta
    if min(cache.n_slots, meta[N_LIVE] + rows) > cache.gid.shape[0]:
        return False
    return min(cache.n_values, meta[TOP] - meta[GARBAGE] + values) <= cache.data.shape[0]


@njit(cache=True, nogil=True)
def insert_sparse(block, block_sq, row_ids, block_y, block_cost, loss, bias, cache, dual, rng_state, top):
    """Insert the rows of a sparse block; rows already cached or of zero cost are skipped.

    ``block`` is ``(starts, ends, indices, data)``: block row ``r`` is
    ``indices/data[starts[r]:ends[r]]`` (the slotted layout of
    :mod:`.rows`: a CSR matrix's ``indptr[:-1]`` and ``indptr[1:]``, or its
    rows at some positions, in any order, without copying their values);
    it is global row ``row_ids[r]`` with labels ``block_y[:, r]`` and costs
    ``block_cost[:, r]`` (one per problem), and ``block_sq[r]`` is
    ``||phi(x_r)||^2`` without the bias (``x_r . x_r`` unless a feature map
    applies).  ``U``, ``D`` and ``Qbar`` follow from the costs and the loss
    of code ``loss`` (:func:`~.losses.upper_and_diag`).

    ``top`` is where the next row is stored in ``data`` (module docstring:
    at most the arena top in ``meta``).  Returns ``(inserted, top)``: the
    number of rows inserted and the new ``top``; ``inserted`` is -1, and
    nothing changes, when the arrays are shorter than the insertion can
    reach (the caller grows them first).  A row larger than the whole
    arena cannot be cached: the caller checks that beforehand.
    """
    b_starts, b_ends, b_indices, b_data = block
    if not _allocated_for(cache, dual, row_ids, block_cost, b_ends - b_starts):
        return -1, top
    meta, indices, data = cache.meta, cache.indices, cache.data
    inserted = 0
    cap_nnz = cache.n_values
    victim = np.empty(1, dtype=np.int64)
    n = row_ids.shape[0]
    for r in range(n):
        if r + INSERT_AHEAD < n:  # rows taken in any order: announce the row INSERT_AHEAD steps on
            _announce_row(b_starts[r + INSERT_AHEAD], b_ends[r + INSERT_AHEAD], b_indices, b_data)
        g = row_ids[r]
        if dual.slot_of[g] >= 0 or _weightless(block_cost, r):
            continue
        lo = b_starts[r]
        m = b_ends[r] - lo
        while meta[N_FREE] == 0 or meta[TOP] + m > cap_nnz:
            # Compact only when it frees at least an eighth of the arena, so
            # its O(cache) cost is paid once per many insertions; otherwise
            # evict random rows until it does.
            room = cap_nnz - (meta[TOP] - meta[GARBAGE])
            if meta[N_FREE] > 0 and room >= m and room >= cap_nnz // 8:
                top = compact(cache)
            else:
                _evict_random(cache, dual, rng_state, victim)
        if top + m > data.shape[0]:
            top = pack(cache)  # the arrays are shorter than the budget's arena: the row fits now
        s = _take_slot(g, cache, dual)
        for k in range(m):
            indices[top + k] = b_indices[lo + k]
            data[top + k] = b_data[lo + k]
        cache.starts[s] = top
        cache.ends[s] = top + m
        top += m
        meta[TOP] += m
        _set_problem_values(s, r, g, block_y, block_cost, loss, bias, block_sq[r], cache, dual)
        inserted += 1
    return inserted, top


@njit(cache=True, nogil=True)
def insert_dense(X, block_sq, row_ids, block_y, block_cost, loss, bias, cache, dual, rng_state):
    """Insert the rows of a dense block; rows already cached or of zero cost are skipped.

    The arguments are those of :func:`insert_sparse`, with the block as a
    C-contiguous 2-D array ``X`` and no ``top``.  Returns the number of rows
    inserted, or -1, with nothing changed, when the arrays are shorter than
    the insertion can reach.
    """
    if not _allocated_for(cache, dual, row_ids, block_cost, np.empty(0, dtype=np.int64)):
        return -1
    rows = cache.rows
    inserted = 0
    victim = np.empty(1, dtype=np.int64)
    for r in range(row_ids.shape[0]):
        g = row_ids[r]
        if dual.slot_of[g] >= 0 or _weightless(block_cost, r):
            continue
        if cache.meta[N_FREE] == 0:
            _evict_random(cache, dual, rng_state, victim)
        s = _take_slot(g, cache, dual)
        for j in range(X.shape[1]):
            rows[s, j] = X[r, j]
        _set_problem_values(s, r, g, block_y, block_cost, loss, bias, block_sq[r], cache, dual)
        inserted += 1
    return inserted


@njit(cache=True, nogil=True)
def write_back_many(slots, n, cache, dual, leave):
    """Write back the alphas of ``slots[:n]`` and, with ``leave``, evict them: :func:`evict` of each.

    The one kernel that writes alphas back: insertion's random eviction,
    StreamSVM's and Crammer-Singer's eviction rules, :func:`evict_many` and
    :func:`write_back_all` all call it, so that a fit compiles it once
    (numba re-optimises a helper inside every kernel that calls it).
    ``cache`` and ``dual`` are the bundles (``CacheArrays``,
    ``DualArrays``).  Each slot's alphas go back to the
    store (its dual sums kept exact by the store's loss); with ``leave``
    its row leaves ``live`` (the last live slot takes its place) and its
    slot goes on top of the free stack, in the order of ``slots``: the
    state :func:`evict` of each slot in turn leaves, bit for bit.  Without
    ``leave`` the rows stay cached (``slots`` may then be ``live`` itself).
    The bundles' arrays are taken out once, not once per row (taking an
    array out of a bundle costs about 10x the rest of an eviction).
    """
    meta, gid, live, pos, free = cache.meta, cache.gid, cache.live, cache.pos, cache.free
    A, U, D, starts, ends = cache.A, cache.U, cache.D, cache.starts, cache.ends
    slot_of, alpha, sums, loss = dual.slot_of, dual.alpha, dual.sums, dual.loss
    sparse = starts.shape[0] > 0
    bottom = cache.n_slots - free.shape[0]  # free stack depth of free[0] (the implied entries below)
    for t in range(n):
        s = slots[t]
        g = gid[s]
        for c in range(A.shape[0]):
            new = A[c, s]
            old = alpha[c, g]
            if new != old:
                change, weighted = dual_sums_change(loss, new, old, U[c, s], D[c, s])
                sums[c, 0] += change
                sums[c, 1] += weighted
                alpha[c, g] = new
        if not leave:
            continue
        slot_of[g] = -1
        gid[s] = -1
        last = live[meta[N_LIVE] - 1]
        p = pos[s]
        live[p] = last
        pos[last] = p
        meta[N_LIVE] -= 1
        free[meta[N_FREE] - bottom] = s
        meta[N_FREE] += 1
        if sparse:
            meta[GARBAGE] += ends[s] - starts[s]
            starts[s] = 0
            ends[s] = 0
        meta[EVICTED] += 1


def evict_many(slots, cache, dual):
    """Evict ``slots`` (int64) from the row cache in one pass: :func:`write_back_many` of them all."""
    write_back_many(slots, np.int64(slots.shape[0]), cache, dual, True)


def write_back_all(cache, dual):
    """Write back the alphas of every cached row; the rows stay cached."""
    write_back_many(cache.live, np.int64(cache.meta[N_LIVE]), cache, dual, False)


@njit(cache=True, nogil=True, inline="always")
def nearly_full(cache, fraction):
    """Whether more than ``fraction`` of the budget's slots, or of its arena, is in use."""
    meta = cache.meta
    if meta[N_LIVE] > fraction * cache.n_slots:
        return True
    cap_nnz = cache.n_values
    return cap_nnz > 0 and meta[TOP] - meta[GARBAGE] > fraction * cap_nnz


@njit(cache=True, nogil=True, inline="always")
def evict_uninformative(cache, dual, shrunk, n_problems, gone):
    """Evict the rows uninformative for every problem (StreamSVM, Matsushima et al. 2012, Algorithm 2).

    Row ``i`` is uninformative for problem ``c`` when its dual variable sits
    at a bound and its gradient ``G_i = y_i w_c . [x_i, b] - 1 + D_ii
    alpha_i`` points out of the box by more than the sweep's tolerance
    ``eps_c``::

        alpha_i = 0     and  G_i >  eps_c,     or
        alpha_i = U_i   and  G_i < -eps_c

    (it would stay at that bound: Hsieh et al. 2008, Theorem 2).
    :func:`stream_sweep` marks these rows: ``shrunk[s]`` counts the
    problems in which the row of slot ``s`` was marked during the sweep.  Rows with ``shrunk[s] ==
    n_problems`` leave the cache (their alphas go to the store); every count
    of a live slot is reset to 0.  ``gone`` (at least the live rows long) is scratch space.
    Returns the number of rows evicted.
    """
    live = cache.live
    evicted = 0
    for t in range(cache.meta[N_LIVE] - 1, -1, -1):
        s = live[t]
        if shrunk[s] == n_problems:
            gone[evicted] = s
            evicted += 1
        shrunk[s] = 0
    # live changes under eviction, but only at positions already walked: the order above is the
    # order in which evicting during the walk, backwards, would evict
    write_back_many(gone, np.int64(evicted), cache, dual, np.bool_(True))
    return evicted


@njit(cache=True, nogil=True)
def gap_scores(X, block_y, block_cost, alpha, W, bias, loss, out):
    """``out[r] = sum_c gap_rc``: each row's share of the duality gap under ``W`` (:func:`~.losses.row_gap`).

    ``X`` is the rows' layout, ``block_y`` and ``block_cost`` ``(k, rows)``
    and ``alpha`` ``(k, rows)`` their dual variables now (0 for rows never
    seen), ``loss`` the loss's code.  Rows of no weight score 0.
    """
    k = W.shape[0]
    for r in range(n_rows(X)):
        total = 0.0
        for c in range(k):
            upper, diag = upper_and_diag(loss, block_cost[c, r])
            if upper == 0.0:
                continue
            a = alpha[c, r]
            m = block_y[c, r] * row_dot(X, r, W[c], bias)
            total += row_gap(loss, m, dual_gradient(loss, m, a, upper, diag), a, upper, diag)
        out[r] = total


@njit(cache=True, nogil=True)
def cache_objective(X, cache, W, bias, loss, loss_sums):
    """The cached rows' exact loss and share of the gap under ``W``; refreshes ``GAP``.

    ``loss_sums[c] = sum_s C_s loss(m_sc)`` over the live slots, for the
    loss of code ``loss`` (:func:`~.losses.box_loss`: ``C`` from ``U`` and
    ``D``), and ``GAP[s]`` becomes the row's :func:`~.losses.row_gap`
    summed over problems.  Returns ``sum_s GAP[s]``.  When the cache holds
    every row of positive weight, ``loss_sums`` is the primal's whole loss
    term.
    """
    k = W.shape[0]
    live, Y, U, D, A, GAP = cache.live, cache.Y, cache.U, cache.D, cache.A, cache.GAP
    loss_sums[:] = 0.0
    total = 0.0
    for t in range(cache.meta[N_LIVE]):
        s = live[t]
        gap = 0.0
        for c in range(k):
            upper, diag, a = U[c, s], D[c, s], A[c, s]
            if upper == 0.0:
                continue
            m = Y[c, s] * row_dot(X, s, W[c], bias)
            loss_sums[c] += box_loss(loss, 1.0 - m, upper, diag)
            gap += row_gap(loss, m, dual_gradient(loss, m, a, upper, diag), a, upper, diag)
        GAP[s] = gap
        total += gap
    return total


@njit(cache=True, nogil=True)
def select_by_gap(scores, lengths, n_slots, n_values, keep):
    """Greedily keep rows by ``scores``, highest first, within ``n_slots`` rows and ``n_values`` values.

    ``lengths`` are the rows' values (all 0 for a dense cache, whose slots
    are its only limit); ``scores`` must be sorted from high to low
    (ties keep their order).  ``keep`` is filled with booleans; returns
    the number kept.  A row that does not fit is skipped, and smaller ones
    after it may still fit.
    """
    rows = 0
    values = 0
    for r in range(scores.shape[0]):
        if rows < n_slots and values + lengths[r] <= n_values:
            keep[r] = True
            rows += 1
            values += lengths[r]
        else:
            keep[r] = False
    return rows


@njit(cache=True, nogil=True, inline="always")
def _nearly_full_without(cache, fraction, gone_rows, gone_values):
    """:func:`nearly_full` once ``gone_rows`` rows of ``gone_values`` values have left."""
    meta = cache.meta
    if meta[N_LIVE] - gone_rows > fraction * cache.n_slots:
        return True
    cap_nnz = cache.n_values
    return cap_nnz > 0 and meta[TOP] - meta[GARBAGE] - gone_values > fraction * cap_nnz


@njit(cache=True, nogil=True)
def stream_sweep(X, cache, dual, W, bias, eps, beta, full_at, window, rule, rng_state):
    """One sweep of StreamSVM's trainer (Algorithm 2) over the cached rows; ``(visits, cache_gap)``.

    For each problem ``c``, the cached rows are visited once in random
    order.  Each visit computes ``G = y w_c . [x, b] - 1 + D alpha``, adds
    the row's :func:`~.losses.row_gap` (of the loss ``dual.loss``) to ``GAP`` (``cache_gap`` is their sum: the
    cache's share of the gap, measured as the sweep goes) and, unless the
    row is uninformative, takes the DCD step.  With ``rule`` (StreamSVM's
    eviction, section 3, "Maintaining the active set"), while the cache is
    :func:`nearly_full` (more than ``full_at`` of its slots or arena in
    use, the rows marked so far not counted)

    * every visit first multiplies ``eps_c`` by ``beta`` (the paper's
      "aggressively shrink eps"; it compounds), and
    * a row with ``alpha = 0`` and ``G > eps_c``, or ``alpha = U`` and
      ``G < -eps_c``, is marked instead of updated: it would stay at its
      bound (Hsieh et al. 2008, Theorem 2).

    ``eps[c] = (eps_c, eps_new, count)``: every ``window`` visits (the
    paper's n, the rows seen) ``eps_c`` becomes the largest ``|PG|`` of
    those visits (Algorithm 2's ``eps_new``); it starts at ``+inf``
    (printed "9" in the paper's extracted text).  After the sweep the rows
    marked in every problem leave the cache (:func:`evict_uninformative`).
    A cache with room evicts nothing: every row it keeps saves a read.
    """
    meta, live = cache.meta, cache.live
    k = cache.Y.shape[0]
    n = meta[N_LIVE]
    allocated = cache.gid.shape[0]
    marked = np.zeros(allocated, dtype=np.int64)
    index = np.empty(n, dtype=np.int64)
    ends, starts = cache.ends, cache.starts
    sparse = starts.shape[0] > 0
    GAP = cache.GAP
    visits = 0
    cache_gap = 0.0
    for c in range(k):
        y, upper, diag, qd, alpha, w = cache.Y[c], cache.U[c], cache.D[c], cache.QD[c], cache.A[c], W[c]
        for t in range(n):  # element by element: an array assignment compiles numba's shape-error text
            index[t] = live[t]
        shuffle_prefix(index, n, rng_state)
        e, e_new, count = eps[c, 0], eps[c, 1], eps[c, 2]
        gone_rows = 0
        gone_values = 0
        full = rule and nearly_full(cache, full_at)
        for t in range(n):
            if t + 2 < n:
                row_prefetch_start(X, index[t + 2])
            if t + 1 < n:
                nxt = index[t + 1]
                row_prefetch(X, nxt)
                prefetch(alpha, nxt)
            s = index[t]
            r = np.uint64(s)
            yi = y[r]
            a = alpha[r]
            u = upper[r]
            d = diag[r]
            m = yi * row_dot(X, s, w, bias)
            g = dual_gradient(dual.loss, m, a, u, d)
            gap = row_gap(dual.loss, m, g, a, u, d)
            GAP[r] = gap if c == 0 else GAP[r] + gap
            cache_gap += gap
            visits += 1
            count += 1.0
            if full:
                e *= beta
            pg = 0.0
            if a == 0.0:
                pg = g if g < 0.0 else 0.0
                out = g > e
            elif a == u:
                pg = g if g > 0.0 else 0.0
                out = g < -e
            else:
                pg = g
                out = False
            if full and out:
                marked[s] += 1
                if k == 1:  # the row leaves at the sweep's end: the cache counts it gone
                    gone_rows += 1
                    if sparse:
                        gone_values += ends[s] - starts[s]
                    full = _nearly_full_without(cache, full_at, gone_rows, gone_values)
            elif abs(pg) > PG_SKIP:
                new = dual_step(dual.loss, m, g, a, u, qd[r])
                alpha[r] = new
                row_axpy(X, s, (new - a) * yi, w, bias)
            if abs(pg) > e_new:
                e_new = abs(pg)
            if count >= window:
                e, e_new, count = e_new, 0.0, 0.0
        eps[c, 0], eps[c, 1], eps[c, 2] = e, e_new, count
    evict_uninformative(cache, dual, marked, k, index)  # index: free once the sweep is done
    return visits, cache_gap

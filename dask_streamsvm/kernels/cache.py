"""numba kernels of the row cache: insertion with random eviction, eviction.

State (all preallocated by ``engine.cache.RowCache``; ``k`` problems share
the rows, one per one-vs-rest class)::

    gid[s]            global row id in slot s (-1: free)
    live[:n_live]     occupied slots;  pos[s] = position of s in live
    free[:n_free]     free slots (a stack)
    Y, U, D, QD, A    (k, slots): y, upper bound, D_ii, Qbar_ii, alpha
    slot_of[g]        slot of global row g, or -1   (outside the budget)
    store[:, g]       alpha of every row seen         (outside the budget)
    sums[:, 0], sums[:, 1]   sum_g store[c, g] and sum_g D_g store[c, g]^2

Rows of a sparse cache live in an arena ``(starts, ends, indices, data)``
with a bump pointer; evicted rows leave garbage that ``_compact`` squeezes
out when the arena is full.  Insertion follows StreamSVM's reader
(Matsushima et al. 2012, Algorithm 1): when the cache is full, a random
cached row is evicted to make room.  Evicting writes the row's alphas back
to ``store`` and keeps ``sums`` exact for the dual.
"""

import numpy as np
from numba import njit

from .dcd import PG_SKIP, dcd_passes
from .objective import MAX_DIAG
from .rng import next_uint64

# meta[0] = n_live, meta[1] = n_free, meta[2] = arena top (sparse), meta[3] = garbage nnz,
# meta[4] = insertions, meta[5] = evictions
N_LIVE, N_FREE, TOP, GARBAGE, INSERTED, EVICTED = range(6)


@njit(cache=True, nogil=True)
def write_back(s, gid, A, D, store, sums):
    """Copy the alphas of slot ``s`` to the store, keeping the dual sums exact."""
    g = gid[s]
    for c in range(A.shape[0]):
        new = A[c, s]
        old = store[c, g]
        if new != old:
            sums[c, 0] += new - old
            sums[c, 1] += D[c, s] * (new * new - old * old)
            store[c, g] = new


@njit(cache=True, nogil=True)
def evict(s, meta, gid, live, pos, free, slot_of, A, D, store, sums, starts, ends):
    """Remove slot ``s`` from the cache (its alphas go back to the store)."""
    write_back(s, gid, A, D, store, sums)
    slot_of[gid[s]] = -1
    gid[s] = -1
    last = live[meta[N_LIVE] - 1]
    p = pos[s]
    live[p] = last
    pos[last] = p
    meta[N_LIVE] -= 1
    free[meta[N_FREE]] = s
    meta[N_FREE] += 1
    if starts.shape[0] > 0:
        meta[GARBAGE] += ends[s] - starts[s]
        starts[s] = 0
        ends[s] = 0
    meta[EVICTED] += 1


@njit(cache=True, nogil=True)
def _compact(meta, live, starts, ends, indices, data):
    """Move live rows to the front of the arena, in arena order."""
    n = meta[N_LIVE]
    order = live[:n][np.argsort(starts[live[:n]])]
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
    meta[TOP] = top
    meta[GARBAGE] = 0


@njit(cache=True, nogil=True)
def _evict_random(meta, gid, live, pos, free, slot_of, A, D, store, sums, starts, ends, rng_state):
    n = meta[N_LIVE]
    victim = live[np.int64(((next_uint64(rng_state) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))]
    evict(victim, meta, gid, live, pos, free, slot_of, A, D, store, sums, starts, ends)


@njit(cache=True, nogil=True)
def _take_slot(g, meta, gid, live, pos, free, slot_of):
    meta[N_FREE] -= 1
    s = free[meta[N_FREE]]
    gid[s] = g
    slot_of[g] = s
    live[meta[N_LIVE]] = s
    pos[s] = meta[N_LIVE]
    meta[N_LIVE] += 1
    meta[INSERTED] += 1
    return s


@njit(cache=True, nogil=True)
def _set_problem_values(s, r, g, block_y, block_cost, squared, bias, sqnorm, Y, U, D, QD, A, store):
    for c in range(Y.shape[0]):
        cost = block_cost[c, r]
        Y[c, s] = block_y[c, r]
        if cost <= 0.0:
            # A problem that gives this row no weight: alpha stays 0.
            U[c, s] = 0.0
            D[c, s] = 0.0
        elif squared:
            U[c, s] = np.inf
            D[c, s] = min(0.5 / cost, MAX_DIAG)
        else:
            U[c, s] = cost
            D[c, s] = 0.0
        QD[c, s] = sqnorm + bias * bias + D[c, s]
        A[c, s] = store[c, g]


@njit(cache=True, nogil=True)
def _weightless(block_cost, r):
    for c in range(block_cost.shape[0]):
        if block_cost[c, r] > 0.0:
            return False
    return True


@njit(cache=True, nogil=True)
def insert_sparse(
    indptr, b_indices, b_data, block_sq, row_ids, block_y, block_cost, squared, bias,
    meta, gid, live, pos, free, slot_of, Y, U, D, QD, A, store, sums,
    starts, ends, indices, data, rng_state,
):  # fmt: skip
    """Insert the rows of a CSR block; rows already cached or of zero cost are skipped.

    ``block_sq[r]`` is ``||phi(x_r)||^2`` of block row ``r`` without the bias
    (the squared norm of the row itself unless a feature map applies).
    Returns the number of rows inserted.  A row larger than the whole arena
    cannot be cached: the caller checks that beforehand.
    """
    inserted = 0
    cap_nnz = data.shape[0]
    for r in range(row_ids.shape[0]):
        g = row_ids[r]
        if slot_of[g] >= 0 or _weightless(block_cost, r):
            continue
        lo = indptr[r]
        m = indptr[r + 1] - lo
        while meta[N_FREE] == 0 or meta[TOP] + m > cap_nnz:
            # Compact only when it frees at least an eighth of the arena, so
            # its O(cache) cost is paid once per many insertions; otherwise
            # evict random rows until it does.
            room = cap_nnz - (meta[TOP] - meta[GARBAGE])
            if meta[N_FREE] > 0 and room >= m and room >= cap_nnz // 8:
                _compact(meta, live, starts, ends, indices, data)
            else:
                _evict_random(meta, gid, live, pos, free, slot_of, A, D, store, sums, starts, ends, rng_state)
        s = _take_slot(g, meta, gid, live, pos, free, slot_of)
        top = meta[TOP]
        for k in range(m):
            indices[top + k] = b_indices[lo + k]
            data[top + k] = b_data[lo + k]
        starts[s] = top
        ends[s] = top + m
        meta[TOP] = top + m
        _set_problem_values(s, r, g, block_y, block_cost, squared, bias, block_sq[r], Y, U, D, QD, A, store)
        inserted += 1
    return inserted


@njit(cache=True, nogil=True)
def insert_dense(
    X, block_sq, row_ids, block_y, block_cost, squared, bias,
    meta, gid, live, pos, free, slot_of, Y, U, D, QD, A, store, sums, rows, rng_state,
):  # fmt: skip
    """Insert the rows of a dense block; rows already cached or of zero cost are skipped (``block_sq``
    as in :func:`insert_sparse`)."""
    inserted = 0
    no_arena = np.empty(0, dtype=np.int64)
    for r in range(row_ids.shape[0]):
        g = row_ids[r]
        if slot_of[g] >= 0 or _weightless(block_cost, r):
            continue
        if meta[N_FREE] == 0:
            _evict_random(
                meta, gid, live, pos, free, slot_of, A, D, store, sums, no_arena, no_arena, rng_state
            )
        s = _take_slot(g, meta, gid, live, pos, free, slot_of)
        for j in range(X.shape[1]):
            rows[s, j] = X[r, j]
        _set_problem_values(s, r, g, block_y, block_cost, squared, bias, block_sq[r], Y, U, D, QD, A, store)
        inserted += 1
    return inserted


@njit(cache=True, nogil=True)
def evict_many(slots, meta, gid, live, pos, free, slot_of, A, D, store, sums, starts, ends):
    """Evict every slot in ``slots``."""
    for t in range(slots.shape[0]):
        evict(slots[t], meta, gid, live, pos, free, slot_of, A, D, store, sums, starts, ends)


@njit(cache=True, nogil=True)
def write_back_all(meta, live, gid, A, D, store, sums):
    """Write back the alphas of every cached row; the rows stay cached."""
    for t in range(meta[N_LIVE]):
        write_back(live[t], gid, A, D, store, sums)


@njit(cache=True, nogil=True)
def _nearly_full(meta, n_slots, cap_nnz, fraction):
    if meta[N_LIVE] > fraction * n_slots:
        return True
    return cap_nnz > 0 and meta[TOP] - meta[GARBAGE] > fraction * cap_nnz


@njit(cache=True, nogil=True)
def train_on_cache(
    X, Y, U, D, QD, A, W, bias, eps, beta, nearly_full, visit_budget,
    meta, gid, live, pos, free, slot_of, store, sums, starts, ends, cap_nnz, rng_state,
):  # fmt: skip
    """StreamSVM's trainer (Algorithm 2) on the cached rows, for ``visit_budget`` row visits.

    Each sweep runs one DCD pass in random order over the cached rows of
    every problem ``c``, with ``(eps[c], -eps[c])`` as the shrink thresholds:
    a row with ``alpha = 0`` and ``G > eps`` or ``alpha = U`` and ``G < -eps``
    is uninformative for that problem.  Rows uninformative for every problem
    are evicted after the sweep.  ``eps[c]`` becomes the sweep's largest
    projected gradient, times ``beta`` when the cache is ``nearly_full``.

    Returns ``(visits, busy)``; ``busy`` is false when a sweep found nothing
    to change (the cached subproblem is solved), which also ends the call.
    """
    k = Y.shape[0]
    n_slots = gid.shape[0]
    shrunk = np.zeros(n_slots, dtype=np.int64)
    index = np.empty(n_slots, dtype=np.int64)
    visits = 0
    busy = True
    while visits < visit_budget and meta[N_LIVE] > 0 and busy:
        n = meta[N_LIVE]
        busy = False
        for c in range(k):
            index[:n] = live[:n]
            out = dcd_passes(
                X,
                Y[c],
                U[c],
                D[c],
                QD[c],
                index[:n],
                n,
                A[c],
                W[c],
                bias,
                1,
                -1.0,
                eps[c],
                -eps[c],
                rng_state,
            )
            active = out[1]
            for t in range(active, n):
                shrunk[index[t]] += 1
            visits += n
            if active > 0:
                eps[c] = max(abs(out[2]), abs(out[3]))
                if eps[c] > PG_SKIP:
                    busy = True
        if _nearly_full(meta, n_slots, cap_nnz, nearly_full):
            for c in range(k):
                eps[c] *= beta
        for t in range(n - 1, -1, -1):  # live changes under eviction: walk it backwards
            s = live[t]
            if shrunk[s] == k:
                evict(s, meta, gid, live, pos, free, slot_of, A, D, store, sums, starts, ends)
                busy = True
        for t in range(n):
            shrunk[index[t]] = 0
    return visits, busy

"""The bounded row cache: :class:`RowCache`.

``RowCache`` holds at most ``cache_bytes``: the rows themselves (a dense
slot matrix, or a sparse arena) and, per slot, the global row id and each
problem's ``y``, ``U``, ``D``, ``Qbar`` and ``alpha``.  The budget fixes its
sizes (slots and arena values) once, and every decision is taken on them;
the arrays grow with the rows actually cached, up to those sizes, so the
budget holds by construction and a budget larger than the data (or than
the machine's memory) costs only the data.  ``nbytes`` is its own
accounting of what it allocated, ``used_bytes`` of what live rows occupy.
A checkpoint saves the live rows only (:meth:`RowCache.state`).

The rows' dual variables live in an :class:`~.alpha_store.AlphaStore` (every
row seen, outside the budget), and the bytes are counted as
:mod:`..plan.sizes` says; both are importable from here as they always were.
Each row's ``U`` and ``D`` follow from its cost and the loss's code
(:func:`~dask_streamsvm.kernels.losses.upper_and_diag`), given to each
insertion; a sweep scores the rows' gap shares by the store's loss.
"""

import numpy as np
import scipy.sparse as sp

from ...kernels import cache as kc
from ...kernels.crammer_singer import cs_train_on_cache
from ...kernels.dcd import ProblemArrays, row_sqnorms
from ..plan.layout import as_csr, kernel_rows, read_only, take_rows
from ..plan.sizes import (
    slot_overhead,
    value_bytes,
)


class RowCache:
    """At most ``cache_bytes`` of rows, in slots the DCD kernel reads directly.

    Parameters
    ----------
    cache_bytes : int
    n_features : int
    dtype : float32 or float64, the dtype of cached values
    sparse : bool
    n_problems : int, 1 for binary, k for one-vs-rest
    nnz_per_row : float, sparse only: expected nonzeros per row, to split
        the budget between row slots and the arena
    feature_map : record array or None
        A feature map's spec (:mod:`~dask_streamsvm.kernels.features`): the
        cache stores raw rows (sparse) and the kernels read them through the
        map (``layout``); ``Qbar`` uses ``||phi(x)||^2``.

    The bytes: :attr:`HEADER` for ``meta``, then per slot
    :func:`slot_overhead` and the row's values (:func:`value_bytes` each).
    The budget fixes ``n_slots`` slots and, when sparse, an arena of
    ``n_values`` values; every decision (which slot a row takes, when the
    cache is full, which row leaves) is taken on these sizes.  The arrays
    are allocated as rows arrive (:meth:`reserve`, before each insertion),
    at least doubling each time and never beyond the budget's sizes, so a
    budget far above the data costs only the data.
    """

    HEADER = kc.META_SIZE * 8  # bytes of `meta`, the only array not sized by the slots
    _SLOT_ARRAYS = ("gid", "live", "pos", "free", "GAP", "Y", "U", "D", "QD", "A", "starts", "ends")

    def __init__(
        self, cache_bytes, n_features, dtype, sparse, n_problems, nnz_per_row=None, feature_map=None
    ):
        self.feature_map = feature_map
        if feature_map is not None and not sparse:
            raise ValueError("a feature map reads sparse rows: build the cache with sparse=True.")
        self.cache_bytes = int(cache_bytes)
        self.sparse = bool(sparse)
        self.dtype = np.dtype(dtype)
        self.n_features = int(n_features)
        k = int(n_problems)
        budget = self.cache_bytes - self.HEADER
        meta_per_slot = slot_overhead(k, self.sparse)
        if self.sparse:
            per_nnz = value_bytes(self.dtype, True)
            guess = max(float(nnz_per_row or 1.0), 1.0)
            per_row = meta_per_slot + guess * per_nnz
            n_slots = int(budget // per_row)
            if (n_slots + 1) * per_row <= budget * (1.0 + 1e-12):
                # A budget sized for exactly n rows of the guessed nonzeros can divide
                # to just below n in floating point; that row must still fit.
                n_slots += 1
            n_nnz = (budget - n_slots * meta_per_slot) // per_nnz
            row_bytes = 0
        else:
            row_bytes = self.n_features * value_bytes(self.dtype, False)
            n_slots = budget // (meta_per_slot + row_bytes)
            n_nnz = 0
        if n_slots < 1:
            least = self.least_bytes(self.n_features, self.dtype, self.sparse, k, nnz_per_row)
            raise ValueError(
                f"cache_bytes={self.cache_bytes} cannot hold a single row of {self.n_features} "
                f"features; give at least {least} bytes."
            )
        self.n_slots, self.n_values = int(n_slots), int(n_nnz)
        self._meta_per_slot = meta_per_slot
        self.meta = np.zeros(kc.META_SIZE, dtype=np.int64)
        self.meta[kc.N_FREE] = n_slots
        self._allocate(k, 0, 0)
        assert self.full_nbytes <= self.cache_bytes, (self.full_nbytes, self.cache_bytes)

    @classmethod
    def least_bytes(cls, n_features, dtype, sparse, n_problems, nnz_per_row=None):
        """The fewest bytes that hold one row: :attr:`HEADER`, a slot's bookkeeping and the row's
        values (sparse: ``nnz_per_row`` of them, at least one, as the budget's split counts them)."""
        if sparse:
            values = max(float(nnz_per_row or 1.0), 1.0) * value_bytes(dtype, True)
        else:
            values = int(n_features) * value_bytes(dtype, False)
        return cls.HEADER + int(np.ceil(slot_overhead(int(n_problems), bool(sparse)) + values))

    def _allocate(self, k, n_slots, n_values):
        """Fresh arrays for ``n_slots`` slots and, sparse, ``n_values`` arena values (none in use)."""
        self.gid = np.full(n_slots, -1, dtype=np.int64)
        self.live = np.zeros(n_slots, dtype=np.int64)
        self.pos = np.zeros(n_slots, dtype=np.int64)
        # The free stack's top n_slots entries: n_slots - 1, ..., 1, 0 (kernels.cache).
        self.free = np.arange(n_slots, dtype=np.int64)[::-1].copy()
        self.GAP = np.zeros(n_slots)
        self.Y, self.U, self.D, self.QD, self.A = (np.zeros((k, n_slots)) for _ in range(5))
        if self.sparse:
            self.starts = np.zeros(n_slots, dtype=np.int64)
            self.ends = np.zeros(n_slots, dtype=np.int64)
            self.indices = np.zeros(n_values, dtype=np.int32)
            self.data = np.zeros(n_values, dtype=self.dtype)
            self.rows = None
        else:
            self.starts = self.ends = np.empty(0, dtype=np.int64)
            self.indices = self.data = None
            self.rows = np.zeros((n_slots, self.n_features), dtype=self.dtype)
        self._top = 0  # where the next sparse row is stored (``top`` of kernels.cache.insert_sparse)

    # -- growth -------------------------------------------------------------------

    @property
    def allocated_slots(self):
        """Slots the arrays hold now (at most :attr:`n_slots`)."""
        return self.gid.shape[0]

    @property
    def allocated_values(self):
        """Arena values the arrays hold now (at most :attr:`n_values`; 0 when dense)."""
        return self.data.shape[0] if self.sparse else 0

    def reserve(self, n_rows, n_values):
        """Make the arrays hold ``n_rows`` live rows of ``n_values`` values in all, within the budget.

        The slots grow to at least twice what they were, so copying them
        costs O(1) per row over a fit.  The arena grows to twice the live
        values: squeezing out its garbage (:func:`~...kernels.cache.pack`)
        then moves no more values than were inserted since it last did.
        Neither grows beyond the budget's :attr:`n_slots` and
        :attr:`n_values`.  Arrays are replaced one at a time: while one is
        copied, its previous size is held on top of the new sizes.
        """
        if self.holds(n_rows, n_values):
            return
        slots = min(self.n_slots, int(n_rows))
        if slots > self.allocated_slots:
            self._grow_slots(min(self.n_slots, max(slots, 2 * self.allocated_slots)))
        values = min(self.n_values, 2 * int(n_values))
        if self.sparse and values > self.allocated_values:
            self._grow_values(min(self.n_values, max(values, 2 * self.allocated_values)))

    def holds(self, n_rows, n_values):
        """Whether :meth:`reserve` of ``n_rows`` rows of ``n_values`` values leaves the arrays as they are."""
        if min(self.n_slots, n_rows) > self.allocated_slots:
            return False
        return not self.sparse or min(self.n_values, 2 * n_values) <= self.allocated_values

    def _grow_slots(self, size):
        old = self.allocated_slots
        # The free stack's entries below the old ones: size - 1, ..., old (kernels.cache).
        self.free = np.concatenate([np.arange(size - 1, old - 1, -1, dtype=np.int64), self.free])
        for name, fill in (("gid", -1), ("live", 0), ("pos", 0), ("GAP", 0), ("starts", 0), ("ends", 0)):
            if name in ("starts", "ends") and not self.sparse:
                continue
            setattr(self, name, _grown(getattr(self, name), size, 0, old, fill))
        for name in ("Y", "U", "D", "QD", "A"):
            setattr(self, name, _grown(getattr(self, name), size, 1, old, 0))
        if not self.sparse:
            self.rows = _grown(self.rows, size, 0, old, 0)

    def _grow_values(self, size):
        # Values above the storage top are garbage or unused: only those below move.
        self.indices = _grown(self.indices, size, 0, self._top, 0)
        self.data = _grown(self.data, size, 0, self._top, 0)

    # -- accounting ---------------------------------------------------------------

    @property
    def full_nbytes(self):
        """What :attr:`nbytes` reaches once the arrays have the budget's sizes (at most ``cache_bytes``)."""
        row = 0 if self.sparse else self.n_features * self._per_value
        return self.HEADER + self.n_slots * (self._meta_per_slot + row) + self.n_values * self._per_value

    @property
    def nbytes(self):
        """Bytes the cache's arrays allocate now (at most :attr:`full_nbytes`)."""
        arrays = [
            self.meta,
            self.gid,
            self.live,
            self.pos,
            self.free,
            self.GAP,
            self.Y,
            self.U,
            self.D,
            self.QD,
            self.A,
        ]
        if self.sparse:
            arrays += [self.starts, self.ends, self.indices, self.data]
        else:
            arrays.append(self.rows)
        return sum(a.nbytes for a in arrays)

    @property
    def n_live(self):
        return int(self.meta[kc.N_LIVE])

    @property
    def used_bytes(self):
        """Bytes occupied by the live rows and their per-slot values."""
        n = self.n_live
        if self.sparse:
            nnz = int(self.meta[kc.TOP] - self.meta[kc.GARBAGE])  # the live rows' values, in O(1)
            return n * self._meta_per_slot + nnz * self._per_value
        return n * (self._meta_per_slot + self.n_features * self._per_value)

    @property
    def _per_value(self):
        return value_bytes(self.dtype, self.sparse)

    def slot_bytes(self, slots):
        """int64 array: the bytes each row in ``slots`` occupies (as :attr:`used_bytes` counts them)."""
        if self.sparse:
            nnz = self.ends[slots] - self.starts[slots]
            return self._meta_per_slot + nnz * self._per_value
        row = self._meta_per_slot + self.n_features * self._per_value
        return np.full(slots.shape[0], row, dtype=np.int64)

    def fits(self, n_rows, nnz):
        """Whether ``n_rows`` more rows with ``nnz`` nonzeros in all fit in the free slots and arena.

        Garbage in the arena counts as free: call :meth:`compact` before
        inserting them, or insertion may evict rows.
        """
        meta = self.meta
        if meta[kc.N_FREE] < n_rows:
            return False
        if self.sparse:
            return self.n_values - (meta[kc.TOP] - meta[kc.GARBAGE]) >= nnz
        return True

    @property
    def insertions(self):
        return int(self.meta[kc.INSERTED])

    @property
    def evictions(self):
        return int(self.meta[kc.EVICTED])

    # -- what the kernel reads --------------------------------------------------------

    @property
    def layout(self):
        """The cached rows in a layout of ``kernels.rows`` (mapped when a feature map applies)."""
        if self.sparse:
            raw = (self.starts, self.ends, self.indices, self.data)
            return raw if self.feature_map is None else (raw, self.feature_map)
        return self.rows

    @property
    def arrays(self):
        """The cache's state as the kernels take it (:data:`~...kernels.cache.CacheArrays`).

        A dense cache gives empty ``starts``, ``ends``, ``indices`` and
        ``data``; a sparse one an empty ``rows``.
        """
        if self.sparse:
            indices, data, rows = self.indices, self.data, np.empty((0, 0), dtype=self.dtype)
        else:
            indices, data, rows = np.empty(0, dtype=np.int32), np.empty(0, dtype=self.dtype), self.rows
        slots = (self.meta, self.gid, self.live, self.pos, self.free)
        values = (self.Y, self.U, self.D, self.QD, self.A, self.GAP)
        sizes = (self.n_slots, self.n_values)
        return kc.CacheArrays(*slots, *values, self.starts, self.ends, indices, data, rows, *sizes)

    def problem(self, c, loss):
        """Problem ``c``'s per-slot ``(y, U, D, Qbar)`` and the loss's code ``loss``, for
        :func:`~...kernels.dcd.dcd_passes`."""
        return ProblemArrays(self.Y[c], self.U[c], self.D[c], self.QD[c], int(loss))

    def rows_of(self, slots):
        """The rows in ``slots``, as a CSR matrix or a dense array (copies)."""
        if not self.sparse:
            return self.rows[slots]
        starts = self.starts[slots]
        lengths = self.ends[slots] - starts
        indptr = np.zeros(slots.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        at = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return sp.csr_matrix(
            (self.data[at], self.indices[at], indptr), shape=(slots.shape[0], self.n_features)
        )

    # -- changes ----------------------------------------------------------------

    def insert(self, X, row_ids, block_y, block_cost, loss, bias, store, rng_state, rows=None):
        """Insert a block's rows (random eviction when full); returns rows inserted.

        ``loss`` is the kernels' code of the loss, whose ``U`` and ``D`` the rows take.
        ``rows``: the positions in ``X`` of the rows to insert, in that order (None: every row);
        ``row_ids``, ``block_y`` and ``block_cost`` are then those rows' own.  Sparse rows are
        read where they lie (their spans, :func:`~...kernels.cache.insert_sparse`): a piece of a
        partition in any order costs no copy of its values.
        """
        store.reserve(int(row_ids.max()) + 1 if row_ids.size else 0)
        X, rows = self.readable(X, rows)  # dense rows copied at their positions (rows None after)
        if self.sparse:
            if self.feature_map is not None and not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()  # the map reads each row's nonzeros once, in column order
            X = X.astype(self.dtype, copy=False)
            indptr = X.indptr.astype(np.int64, copy=False)
            if rows is None:
                starts, ends = indptr[:-1], indptr[1:]
            else:
                starts, ends = indptr[rows], indptr[rows + 1]
            lengths = ends - starts
            widest = int(lengths.max()) if lengths.size else 0
            if widest > self.n_values:
                raise ValueError(
                    f"a row has {widest} nonzeros but the cache arena holds {self.n_values}; "
                    "raise cache_bytes."
                )
            self._reserve_for(row_ids, block_cost, store, lengths)
            block = (starts, ends, X.indices, X.data)
            sq = self._sqnorms(X) if rows is None else self._span_sqnorms(X, starts, ends)
            cache, dual = self.arrays, store.arrays  # after the reserves, which reallocate
            inserted, self._top = kc.insert_sparse(
                block, sq, row_ids, block_y, block_cost, loss, bias, cache, dual, rng_state, self._top
            )
        else:
            X = np.ascontiguousarray(X, dtype=self.dtype)
            self._reserve_for(row_ids, block_cost, store, None)
            sq = self._sqnorms(X)
            cache, dual = self.arrays, store.arrays  # after the reserves, which reallocate
            inserted = kc.insert_dense(
                X, sq, row_ids, block_y, block_cost, loss, bias, cache, dual, rng_state
            )
        if inserted < 0:
            raise RuntimeError("the row cache's arrays were not grown for the rows inserted.")
        return inserted

    def readable(self, X, rows):
        """``(X, rows)`` as :meth:`insert` and :meth:`piece_layout` read ``X``'s rows at ``rows``
        (None: every row): sparse rows where they lie, or the rows alone copied (``rows`` None)
        where their dtype is not the cache's or a feature map needs canonical rows ``X`` lacks;
        dense rows copied (each row is one contiguous read either way: as cheap as the insertion's
        own copy)."""
        if not self.sparse:
            X = X if rows is None else take_rows(X, rows)
            return (X.toarray() if sp.issparse(X) else X), None
        X = as_csr(X)
        if rows is not None and (X.dtype != self.dtype or not self._canonical_enough(X)):
            return take_rows(X, rows), None  # what follows would convert all of X: the rows alone
        return X, rows

    def piece_layout(self, X, rows):
        """The kernels' layout of the rows of :meth:`readable`'s ``(X, rows)``: the slotted layout
        of their spans (:meth:`_span_layout`) where ``rows`` is given."""
        if rows is None:
            return kernel_rows(X, self.feature_map)
        indptr = X.indptr.astype(np.int64, copy=False)
        return self._span_layout(X, indptr[rows], indptr[rows + 1])

    def _span_layout(self, X, starts, ends):
        """The CSR rows of ``X`` at ``indices/data[starts[r]:ends[r]]`` in the slotted layout of
        :mod:`~...kernels.rows`, mapped where the cache has a feature map."""
        layout = (read_only(starts), read_only(ends), read_only(X.indices), read_only(X.data))
        return layout if self.feature_map is None else (layout, self.feature_map)

    def _reserve_for(self, row_ids, block_cost, store, lengths):
        """Grow the arrays for inserting a block's rows (``lengths``: their values when sparse).

        An insertion reaches at most the live rows and values now plus
        those of the block's rows not cached and of positive cost (the
        bound the insertion kernels check).  The whole block bounds them
        too, which is enough to know that the arrays need not grow: the
        common case, once they have the budget's sizes.
        """
        live_values = int(self.meta[kc.TOP] - self.meta[kc.GARBAGE])
        block_values = 0 if lengths is None else int(lengths.sum())
        if self.holds(self.n_live + row_ids.shape[0], live_values + block_values):
            return
        new = (store.slot_of[row_ids] < 0) & (block_cost > 0.0).any(axis=0)
        new_values = 0 if lengths is None else int(lengths[new].sum())
        self.reserve(self.n_live + int(new.sum()), live_values + new_values)

    def _canonical_enough(self, X):
        """Whether ``X``'s rows can be read in place: a feature map reads canonical rows only."""
        return self.feature_map is None or X.has_canonical_format

    def _sqnorms(self, X):
        """``||phi(x)||^2`` of every row of ``X`` (in the cache's dtype), without the bias."""
        sq = np.empty(X.shape[0])
        row_sqnorms(kernel_rows(X, self.feature_map), 0.0, sq)
        return sq

    def _span_sqnorms(self, X, starts, ends):
        """:meth:`_sqnorms` of the CSR rows of ``X`` at ``indices/data[starts[r]:ends[r]]``."""
        sq = np.empty(starts.shape[0])
        row_sqnorms(self._span_layout(X, starts, ends), 0.0, sq)
        return sq

    def evict(self, slots, store):
        """Evict ``slots`` (their alphas go back to the store)."""
        kc.evict_many(np.asarray(slots, dtype=np.int64), self.arrays, store.arrays)

    def write_back(self, store):
        """Copy every cached alpha to the store (for a snapshot); rows stay cached."""
        kc.write_back_all(self.arrays, store.arrays)

    def compact(self):
        """Squeeze the garbage that evicted rows left out of a sparse arena (no-op when none)."""
        if self.sparse and self.meta[kc.GARBAGE] > 0:
            self._top = kc.compact(self.arrays)

    def make_room(self, nnz):
        """Compact only when ``nnz`` more values would not fit above the arena's top (then they do)."""
        if self.sparse and self.meta[kc.TOP] + nnz > self.n_values:
            self.compact()

    def sweep(self, W, bias, eps, store, rng_state, *, beta, full_at, window, rule, crammer_singer=False):
        """One sweep of StreamSVM's trainer over the cached rows; ``(visits, cache_gap)``.

        :func:`~...kernels.cache.stream_sweep` (``eps`` holds the ``(eps,
        eps_new, count)`` of each problem, ``window`` is the paper's n,
        ``rule`` turns its eviction rule on) or, with ``crammer_singer``,
        one sweep of :func:`~...kernels.crammer_singer.cs_train_on_cache`
        (``eps[0, 0]``), whose ``cache_gap`` is ``inf`` while a sweep
        changes something and 0 after.  ``W`` and ``eps`` are updated in
        place; uninformative rows are evicted to ``store``, whose loss
        scores the rows' gap shares.
        """
        if crammer_singer:
            e = eps[0, :1].copy()
            visits, busy = cs_train_on_cache(
                self.layout, self.arrays, store.arrays, W, bias, e, beta, full_at, self.n_live, rng_state
            )
            eps[0, 0] = e[0]
            return visits, np.inf if busy else 0.0
        return kc.stream_sweep(
            self.layout, self.arrays, store.arrays, W, bias, eps, beta, full_at, window, rule, rng_state
        )

    def objective(self, W, bias, loss):
        """``(loss sums, gap)``: the cached rows' loss per problem and share of the gap under ``W``.

        :func:`~...kernels.cache.cache_objective` for the loss of code
        ``loss``, which also refreshes each slot's ``GAP``.
        """
        sums = np.zeros(self.Y.shape[0])
        gap = kc.cache_objective(self.layout, self.arrays, W, bias, loss, sums)
        return sums, gap

    def admit(self, X, row_ids, block_y, block_cost, scores, loss, bias, store, rng_state, rows=None):
        """Insert the rows that carry the most duality gap (Dünner et al. 2017); rows left out.

        ``scores`` are the rows' shares of the gap (:func:`~...kernels.cache.gap_scores`).
        While the rows fit the free room, every one is inserted.  Otherwise
        the rows cached and the rows offered compete by share: the cached
        rows with the smallest shares are evicted for offered rows with
        larger ones, and a row of share 0 (``alpha = 0``, margin >= 1: no
        training would move it) is inserted only into room left free.  No
        row is evicted at random.  ``rows``: the positions in ``X`` of the rows
        offered (:meth:`readable`; None: every row), read where they lie.
        Returns the positions among the rows offered of those of positive
        weight, not cached, that were left out.
        """
        none = np.zeros(0, np.int64)
        if row_ids.size == 0:
            return none
        store.reserve(int(row_ids.max()) + 1)
        new = (store.slot_of[row_ids] < 0) & (block_cost > 0.0).any(axis=0)
        offered = np.flatnonzero(new)
        at = offered if rows is None else rows[offered]  # their positions in X
        lengths = np.zeros(offered.size, np.int64)
        if self.sparse:
            indptr = as_csr(X).indptr
            lengths = (indptr[at + 1] - indptr[at]).astype(np.int64, copy=False)
        if offered.size == 0 or self.fits(offered.size, int(lengths.sum())):
            self.make_room(int(lengths.sum()))  # fits() counts the garbage as free: no row is evicted
            self.insert(X, row_ids[offered], block_y[:, offered], block_cost[:, offered],
                        loss, bias, store, rng_state, rows=at)  # fmt: skip
            self.GAP[store.slot_of[row_ids[offered]]] = scores[offered]
            return none
        n = self.n_live
        live = self.live[:n]
        cached_len = (self.ends[live] - self.starts[live]) if self.sparse else np.zeros(n, np.int64)
        offered_scores = scores[offered]
        positive = offered_scores > 0.0
        pool = np.concatenate([self.GAP[live], offered_scores[positive]])
        pool_len = np.concatenate([cached_len, lengths[positive]])
        order = kc.descending_order(pool)  # ties: cached rows first
        keep = np.empty(order.size, dtype=np.bool_)
        kc.select_by_gap(pool[order], pool_len[order], self.n_slots, self.n_values, keep)
        kept = np.empty(order.size, dtype=np.bool_)
        kept[order] = keep
        self.evict(live[~kept[:n]].copy(), store)
        chosen = np.flatnonzero(positive)[kept[n:]]
        # Rows of share 0 take the room the others left, in their order.
        room_rows = int(self.meta[kc.N_FREE]) - chosen.size
        in_use = int(self.meta[kc.TOP] - self.meta[kc.GARBAGE])
        room_values = self.n_values - in_use - int(lengths[chosen].sum())
        zero = np.flatnonzero(~positive)
        fit = np.cumsum(lengths[zero]) <= room_values if self.sparse else np.ones(zero.size, dtype=bool)
        zero = zero[fit][: max(room_rows, 0)]
        picked = np.sort(np.concatenate([chosen, zero]))
        take = offered[picked]
        self.make_room(int(lengths[picked].sum()))
        self.insert(X, row_ids[take], block_y[:, take], block_cost[:, take],
                    loss, bias, store, rng_state, rows=at[picked])  # fmt: skip
        self.GAP[store.slot_of[row_ids[take]]] = scores[take]
        return np.setdiff1d(offered, take, assume_unique=True)

    def rebuild(self, capacity, n_rows, nnz, store, loss, bias, rng_state):
        """Move the rows to a new RowCache of ``capacity`` bytes and return it.

        Its slot/arena split fits the rows here plus ``n_rows`` rows of
        ``nnz`` nonzeros.  This cache's arrays are released before the new
        ones are allocated (it must not be used again); meanwhile its rows
        live in a compact copy.  Alphas go through ``store``; each row's
        ``y``, ``U``, ``D`` and ``Qbar`` are copied as they are.
        """
        k = self.Y.shape[0]
        n = self.n_live
        live = self.live[:n].copy()
        gids = self.gid[live].copy()
        X = self.rows_of(live)
        values = [a[:, live].copy() for a in (self.Y, self.U, self.D, self.QD)]
        self.evict(live, store)  # alphas to the store
        for name in (*self._SLOT_ARRAYS, "indices", "data", "rows"):
            setattr(self, name, None)  # release them before allocating the new ones
        nnz_per_row = (nnz + (X.nnz if self.sparse else 0)) / max(n + n_rows, 1)
        new = RowCache(capacity, self.n_features, self.dtype, self.sparse, k, nnz_per_row, self.feature_map)
        if n:
            ones = np.ones((k, n))  # any positive cost inserts the row; U, D, Qbar follow
            new.insert(X, gids, values[0], ones, loss, bias, store, rng_state)
            if new.n_live != n or new.evictions:
                raise RuntimeError(f"rebuilding the row memory kept {new.n_live} of {n} rows.")
            slots = store.slot_of[gids]
            for dst, src in zip((new.Y, new.U, new.D, new.QD), values, strict=True):
                dst[:, slots] = src
        return new

    # -- checkpoints: the live rows, their slots and values, and what decides what comes next ------

    def state(self):
        """``(scalars, arrays)`` that rebuild this cache with :meth:`from_state` (for checkpoints).

        The live rows only, in their order, with their slots and per-row
        values; ``meta``; and the free stack down to ``touched``: the slots
        from ``touched`` up are free and lie at the stack's bottom in the
        order a cache that never used them has them, so they are implied.
        Where rows lie in the arena is not saved (it decides nothing): the
        restored arena holds them in live order.
        """
        n = self.n_live
        live = self.live[:n].copy()
        depth = int(self.meta[kc.N_FREE]) - (self.n_slots - self.allocated_slots)
        stack = self.free[:depth]
        top = self.allocated_slots - 1
        implied = stack == np.arange(top, top - depth, -1)  # never-used slots, at the stack's bottom
        untouched = depth if implied.all() else int(np.argmin(implied))
        scalars = {
            "cache_bytes": self.cache_bytes, "sparse": self.sparse, "dtype": self.dtype.str,
            "n_features": self.n_features, "n_slots": self.n_slots, "n_values": self.n_values,
            "meta_per_slot": self._meta_per_slot, "touched": self.allocated_slots - untouched,
        }  # fmt: skip
        arrays = {"meta": self.meta.copy(), "live": live, "free": stack[untouched:].copy()}
        arrays["gid"], arrays["GAP"] = self.gid[live], self.GAP[live]
        for name in ("Y", "U", "D", "QD", "A"):
            arrays[name] = getattr(self, name)[:, live]
        if self.sparse:
            X = self.rows_of(live)
            arrays.update(lengths=np.diff(X.indptr), indices=X.indices, data=X.data)
        else:
            arrays["rows"] = self.rows[live]
        return scalars, arrays

    @classmethod
    def from_state(cls, scalars, arrays, feature_map=None):
        """The cache :meth:`state` described: the same rows in the same slots, the same decisions to come.

        A ValueError if the arrays do not describe a cache of the recorded
        budget (the kernels would read outside them).
        """
        cache = cls.__new__(cls)
        cache.feature_map = feature_map
        cache.cache_bytes, cache.sparse = int(scalars["cache_bytes"]), bool(scalars["sparse"])
        cache.dtype, cache.n_features = np.dtype(scalars["dtype"]), int(scalars["n_features"])
        cache.n_slots, cache._meta_per_slot = int(scalars["n_slots"]), int(scalars["meta_per_slot"])
        if "touched" not in scalars:
            return cache._restore_whole(arrays)  # a checkpoint of a cache allocated whole
        cache.n_values = int(scalars["n_values"])
        touched = int(scalars["touched"])
        meta = np.array(arrays["meta"], dtype=np.int64)
        live = np.asarray(arrays["live"], dtype=np.int64)
        free = np.asarray(arrays["free"], dtype=np.int64)
        Y = np.asarray(arrays["Y"])
        k, n = Y.shape[0], live.shape[0]
        lengths = np.asarray(arrays["lengths"], dtype=np.int64) if cache.sparse else np.zeros(n, np.int64)
        ok = (
            meta.shape == (kc.META_SIZE,)
            and 0 <= n <= touched <= cache.n_slots
            and meta[kc.N_LIVE] == n
            and meta[kc.N_FREE] == cache.n_slots - n
            and np.array_equal(np.sort(np.concatenate([live, free])), np.arange(touched))
            and cache._meta_per_slot == slot_overhead(k, cache.sparse)
            and cache.full_nbytes <= cache.cache_bytes
            and all(np.shape(arrays[name]) == (k, n) for name in ("Y", "U", "D", "QD", "A"))
            and np.shape(arrays["gid"]) == np.shape(arrays["GAP"]) == (n,)
            and np.unique(arrays["gid"]).shape == (n,)
            and (n == 0 or np.min(arrays["gid"]) >= 0)
            and lengths.shape == (n,)
            and (lengths >= 0).all()
        )
        if ok and cache.sparse:
            values = int(lengths.sum())
            indices = np.asarray(arrays["indices"])
            ok = (
                0 <= meta[kc.GARBAGE]
                and meta[kc.TOP] - meta[kc.GARBAGE] == values
                and meta[kc.TOP] <= cache.n_values
                and indices.shape == np.shape(arrays["data"]) == (values,)
                and (indices.size == 0 or (indices.min() >= 0 and indices.max() < cache.n_features))
            )
        elif ok:
            ok = np.shape(arrays["rows"]) == (n, cache.n_features)
        if not ok:
            raise ValueError("the saved row cache does not match its recorded size.")
        cache.meta = meta
        cache._allocate(k, touched, int(lengths.sum()))
        cache.free[: free.shape[0]] = free
        cache.live[:n] = live
        cache.pos[live] = np.arange(n)
        cache.gid[live] = arrays["gid"]
        cache.GAP[live] = arrays["GAP"]
        for name in ("Y", "U", "D", "QD", "A"):
            getattr(cache, name)[:, live] = arrays[name]
        if cache.sparse:
            cache.ends[live] = np.cumsum(lengths)
            cache.starts[live] = cache.ends[live] - lengths
            cache._top = cache.indices.shape[0]
            cache.indices[:] = arrays["indices"]
            cache.data[:] = arrays["data"]
        else:
            cache.rows[live] = arrays["rows"]
        return cache

    def _restore_whole(self, arrays):
        """From the arrays of a cache allocated whole (checkpoints written before the cache grew)."""
        for name in ("meta", *self._SLOT_ARRAYS):
            if name == "GAP" and name not in arrays:  # saved before the cache kept gap shares
                self.GAP = np.zeros(np.shape(arrays["gid"]))
                continue
            setattr(self, name, np.array(arrays[name]))  # writable copies the kernels may change
        if self.sparse:
            self.indices, self.data, self.rows = np.array(arrays["indices"]), np.array(arrays["data"]), None
            self.n_values, self._top = self.indices.shape[0], int(self.meta[kc.TOP])
        else:
            self.indices = self.data = None
            self.rows, self.n_values, self._top = np.array(arrays["rows"]), 0, 0
        if self.gid.shape != (self.n_slots,) or self.nbytes > self.cache_bytes:
            raise ValueError("the saved row cache does not match its recorded size.")
        return self

    def check_dual(self, store):
        """ValueError unless ``store`` (an :class:`~.alpha_store.AlphaStore`) has each cached row in
        its slot."""
        live = self.live[: self.n_live]
        gids = self.gid[live]
        if (gids >= store.slot_of.shape[0]).any() or not np.array_equal(store.slot_of[gids], live):
            raise ValueError("the saved row cache and the saved dual state do not match.")


def _grown(a, size, axis, keep, fill):
    """``a`` with ``size`` entries along ``axis``: its first ``keep``, then ``fill`` (a new array)."""
    shape = list(a.shape)
    shape[axis] = size
    out = np.full(shape, fill, dtype=a.dtype) if fill else np.zeros(shape, dtype=a.dtype)
    head = (slice(None),) * axis + (slice(0, keep),)
    out[head] = a[head]
    return out

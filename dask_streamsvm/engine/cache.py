"""The bounded row cache and the dual state of every row seen.

``RowCache`` allocates, once, arrays whose sizes add up to at most
``cache_bytes``: the rows themselves (a dense slot matrix, or a sparse
arena) and, per slot, the global row id and each problem's ``y``, ``U``,
``D``, ``Qbar`` and ``alpha``.  It never grows, so the budget holds by
construction; ``nbytes`` is its own accounting of what it allocated and
``used_bytes`` of what live rows occupy.

``AlphaStore`` keeps alpha for every row seen, by global row id, with the
running sums the dual needs (``sum alpha`` and ``sum D alpha^2``); it grows
as the first pass discovers rows.  It lives outside the cache budget: its
size is fixed by the number of rows, not by the user's choice.
"""

import os
import re

import numpy as np
import scipy.sparse as sp

from ..kernels import cache as kc
from ..kernels.cache import train_on_cache
from ..kernels.crammer_singer import cs_train_on_cache
from ..kernels.dcd import ProblemArrays, row_sqnorms
from .layout import kernel_rows

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}  # fmt: skip


def parse_bytes(value, name="cache_bytes"):
    """``512MB``, ``"2 GiB"``, ``10**9`` -> int bytes, or a ValueError naming ``name``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        nbytes = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", value)
        unit = m.group(2).upper() if m else None
        if not m or unit not in _UNITS:
            raise ValueError(
                f"{name} must be a number of bytes or a string such as '512MB' or '2GiB', got {value!r}."
            )
        nbytes = int(float(m.group(1)) * _UNITS[unit])
    else:
        raise TypeError(f"{name} must be an int or a string such as '512MB', got {type(value).__name__}.")
    if nbytes <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}.")
    return nbytes


def slot_overhead(k, sparse):
    """Bytes of solver state per row of a :class:`RowCache` of ``k`` problems.

    ``gid``, ``live``, ``pos`` and ``free`` (int64), ``Y``, ``U``, ``D``,
    ``Qbar`` and ``alpha`` (float64, per problem), and ``starts`` and
    ``ends`` (int64) when sparse.
    """
    return 4 * 8 + 5 * 8 * k + (2 * 8 if sparse else 0)


def value_bytes(dtype, sparse):
    """Bytes per value a :class:`RowCache` stores: the value, and its int32 column index when sparse."""
    return np.dtype(dtype).itemsize + (4 if sparse else 0)


def stored_bytes(n_rows, n_values, k, dtype, sparse):
    """Bytes that ``n_rows`` rows holding ``n_values`` values in all occupy in a :class:`RowCache`.

    Each row's solver state (:func:`slot_overhead`) plus each value
    (:func:`value_bytes`); dense rows hold ``n_features`` values each.
    """
    return n_rows * slot_overhead(k, sparse) + n_values * value_bytes(dtype, sparse)


class AlphaStore:
    """alpha of every row seen, ``(n_problems, n_rows)``, with the dual's running sums.

    ``alpha[c, g]`` is the dual variable of row ``g`` in problem ``c``;
    ``slot_of[g]`` is the cache slot of row ``g`` or -1.  With
    ``directory`` both live in memory-mapped files there (SBM, Chang & Roth
    2011, section 5.2: dual variables beyond RAM), row-major so that a row's
    alphas sit together and the files grow at the end; the operating system
    keeps the pages in use in memory and writes the rest out.  Close the
    store to release the files.
    """

    def __init__(self, n_problems, directory=None, capacity=1024):
        self.k = int(n_problems)
        self.directory = directory
        self.sums = np.zeros((self.k, 2))  # sum alpha, sum D alpha^2
        self._capacity = 0
        self._alpha_rows = None  # (capacity, k)
        self.slot_of = None
        self._allocate(capacity)

    @property
    def alpha(self):
        """``(k, capacity)`` view (a transposed view of the row-major storage)."""
        return np.asarray(self._alpha_rows).T

    @property
    def nbytes(self):
        return self._alpha_rows.nbytes + self.slot_of.nbytes

    @property
    def arrays(self):
        """``(slot_of, alpha, sums)`` as the kernels take them (:data:`~..kernels.cache.DualArrays`).

        :meth:`reserve` reallocates: take the bundle after it.
        """
        return kc.DualArrays(self.slot_of, self.alpha, self.sums)

    def reserve(self, n_rows):
        """Make room for global row ids below ``n_rows``."""
        if n_rows > self._capacity:
            self._allocate(max(n_rows, 2 * self._capacity))

    def _allocate(self, capacity):
        old_cap = self._capacity
        if self.directory is None:
            alpha = np.zeros((capacity, self.k))
            slot_of = np.full(capacity, -1, dtype=np.int32)
            if old_cap:
                alpha[:old_cap] = self._alpha_rows
                slot_of[:old_cap] = self.slot_of
        else:
            alpha = self._grow_file("alpha.f64", np.float64, (capacity, self.k))
            slot_of = self._grow_file("slot_of.i32", np.int32, (capacity,))
            slot_of[old_cap:] = -1
        # Kernels get plain ndarray views (numba does not type np.memmap).
        self._alpha_rows, self.slot_of, self._capacity = alpha, np.asarray(slot_of), capacity

    def _grow_file(self, name, dtype, shape):
        path = os.path.join(self.directory, name)
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        with open(path, "ab") as f:
            f.truncate(nbytes)  # extends with zeros, keeps what is there
        return np.memmap(path, dtype=dtype, mode="r+", shape=shape)

    def state(self):
        """Arrays that restore the store with :meth:`restore` (for checkpoints)."""
        n = self._capacity
        return {"alpha": np.asarray(self._alpha_rows[:n]), "slot_of": self.slot_of[:n], "sums": self.sums}

    def restore(self, arrays):
        """Take the alphas, slots and sums of :meth:`state` (the store must be new)."""
        alpha, slot_of, sums = arrays["alpha"], arrays["slot_of"], arrays["sums"]
        if alpha.shape != (slot_of.shape[0], self.k) or sums.shape != self.sums.shape:
            raise ValueError(f"the saved dual state has shape {alpha.shape}, not (rows, {self.k}).")
        self.reserve(slot_of.shape[0])
        self._alpha_rows[: alpha.shape[0]] = alpha
        self.slot_of[: slot_of.shape[0]] = slot_of
        self.sums[:] = sums

    def close(self):
        """Drop the memory maps (their files can then be deleted)."""
        self._alpha_rows = self.slot_of = None


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
    """

    HEADER = kc.META_SIZE * 8  # bytes of `meta`, the only array not sized by the slots

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
            raise ValueError(
                f"cache_bytes={self.cache_bytes} cannot hold a single row of {self.n_features} "
                f"features; give at least {meta_per_slot + max(row_bytes, 1)} bytes."
            )
        self.n_slots = int(n_slots)
        self.meta = np.zeros(kc.META_SIZE, dtype=np.int64)
        self.gid = np.full(n_slots, -1, dtype=np.int64)
        self.live = np.zeros(n_slots, dtype=np.int64)
        self.pos = np.zeros(n_slots, dtype=np.int64)
        self.free = np.arange(n_slots, dtype=np.int64)[::-1].copy()
        self.meta[kc.N_FREE] = n_slots
        self.Y, self.U, self.D, self.QD, self.A = (np.zeros((k, n_slots)) for _ in range(5))
        if self.sparse:
            self.starts = np.zeros(n_slots, dtype=np.int64)
            self.ends = np.zeros(n_slots, dtype=np.int64)
            self.indices = np.zeros(int(n_nnz), dtype=np.int32)
            self.data = np.zeros(int(n_nnz), dtype=self.dtype)
            self.rows = None
        else:
            self.starts = self.ends = np.empty(0, dtype=np.int64)
            self.rows = np.zeros((n_slots, self.n_features), dtype=self.dtype)
        self._meta_per_slot = meta_per_slot
        assert self.nbytes <= self.cache_bytes, (self.nbytes, self.cache_bytes)

    _ARRAYS = ("meta", "gid", "live", "pos", "free", "Y", "U", "D", "QD", "A", "starts", "ends")

    def state(self):
        """``(scalars, arrays)`` that rebuild this cache with :meth:`from_state` (for checkpoints)."""
        scalars = {
            "cache_bytes": self.cache_bytes, "sparse": self.sparse, "dtype": self.dtype.str,
            "n_features": self.n_features, "n_slots": self.n_slots, "meta_per_slot": self._meta_per_slot,
        }  # fmt: skip
        arrays = {name: getattr(self, name) for name in self._ARRAYS}
        if self.sparse:
            arrays.update(indices=self.indices, data=self.data)
        else:
            arrays["rows"] = self.rows
        return scalars, arrays

    @classmethod
    def from_state(cls, scalars, arrays, feature_map=None):
        """The cache :meth:`state` described, slot for slot."""
        cache = cls.__new__(cls)
        cache.feature_map = feature_map
        cache.cache_bytes, cache.sparse = int(scalars["cache_bytes"]), bool(scalars["sparse"])
        cache.dtype, cache.n_features = np.dtype(scalars["dtype"]), int(scalars["n_features"])
        cache.n_slots, cache._meta_per_slot = int(scalars["n_slots"]), int(scalars["meta_per_slot"])
        for name in cls._ARRAYS:
            setattr(cache, name, np.array(arrays[name]))  # writable copies the kernels may change
        if cache.sparse:
            cache.indices, cache.data, cache.rows = (
                np.array(arrays["indices"]),
                np.array(arrays["data"]),
                None,
            )
        else:
            cache.rows = np.array(arrays["rows"])
        if cache.gid.shape != (cache.n_slots,) or cache.nbytes > cache.cache_bytes:
            raise ValueError("the saved row cache does not match its recorded size.")
        return cache

    # -- accounting ---------------------------------------------------------------

    @property
    def nbytes(self):
        """Bytes allocated by the cache (never more than ``cache_bytes``)."""
        arrays = [
            self.meta,
            self.gid,
            self.live,
            self.pos,
            self.free,
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
            live = self.live[:n]
            nnz = int((self.ends[live] - self.starts[live]).sum())
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
            return self.data.shape[0] - (meta[kc.TOP] - meta[kc.GARBAGE]) >= nnz
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
        """The cache's state as the kernels take it (:data:`~..kernels.cache.CacheArrays`).

        A dense cache gives empty ``starts``, ``ends``, ``indices`` and
        ``data``; a sparse one an empty ``rows``.
        """
        if self.sparse:
            indices, data, rows = self.indices, self.data, np.empty((0, 0), dtype=self.dtype)
        else:
            indices, data, rows = np.empty(0, dtype=np.int32), np.empty(0, dtype=self.dtype), self.rows
        slots = (self.meta, self.gid, self.live, self.pos, self.free)
        values = (self.Y, self.U, self.D, self.QD, self.A)
        return kc.CacheArrays(*slots, *values, self.starts, self.ends, indices, data, rows)

    def problem(self, c):
        """Problem ``c``'s per-slot ``(y, U, D, Qbar)`` for :func:`~..kernels.dcd.dcd_passes`."""
        return ProblemArrays(self.Y[c], self.U[c], self.D[c], self.QD[c])

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

    def insert(self, X, row_ids, block_y, block_cost, squared, bias, store, rng_state):
        """Insert a block's rows (random eviction when full); returns rows inserted."""
        store.reserve(int(row_ids.max()) + 1 if row_ids.size else 0)
        cache, dual = self.arrays, store.arrays  # after reserve, which reallocates the store
        if self.sparse:
            X = sp.csr_matrix(X)
            if self.feature_map is not None and not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()  # the map reads each row's nonzeros once, in column order
            widest = int(np.diff(X.indptr).max()) if X.shape[0] else 0
            if widest > self.data.shape[0]:
                raise ValueError(
                    f"a row has {widest} nonzeros but the cache arena holds {self.data.shape[0]}; "
                    "raise cache_bytes."
                )
            X = X.astype(self.dtype, copy=False)
            block = (X.indptr.astype(np.int64), X.indices, X.data)
            sq = self._sqnorms(X)
            return kc.insert_sparse(
                block, sq, row_ids, block_y, block_cost, squared, bias, cache, dual, rng_state
            )
        if sp.issparse(X):
            X = X.toarray()
        X = np.ascontiguousarray(X, dtype=self.dtype)
        sq = self._sqnorms(X)
        return kc.insert_dense(X, sq, row_ids, block_y, block_cost, squared, bias, cache, dual, rng_state)

    def _sqnorms(self, X):
        """``||phi(x)||^2`` of every row of ``X`` (in the cache's dtype), without the bias."""
        sq = np.empty(X.shape[0])
        row_sqnorms(kernel_rows(X, self.feature_map), 0.0, sq)
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
            kc.compact(self.arrays)

    def sweep(self, W, bias, eps, store, visit_budget, rng_state, *, beta, full_at, crammer_singer=False):
        """StreamSVM's trainer on the cached rows for ``visit_budget`` row visits; ``(visits, busy)``.

        :func:`~..kernels.cache.train_on_cache` (one-vs-rest: ``eps`` holds
        a tolerance per problem) or, with ``crammer_singer``,
        :func:`~..kernels.crammer_singer.cs_train_on_cache` (``eps[0]``).
        ``W`` and ``eps`` are updated in place; uninformative rows are
        evicted to ``store``.
        """
        train = cs_train_on_cache if crammer_singer else train_on_cache
        return train(
            self.layout, self.arrays, store.arrays, W, bias, eps, beta, full_at, visit_budget, rng_state
        )

    def rebuild(self, capacity, n_rows, nnz, store, squared, bias, rng_state):
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
        for name in (*self._ARRAYS, "indices", "data", "rows"):
            setattr(self, name, None)  # release them before allocating the new ones
        nnz_per_row = (nnz + (X.nnz if self.sparse else 0)) / max(n + n_rows, 1)
        new = RowCache(capacity, self.n_features, self.dtype, self.sparse, k, nnz_per_row, self.feature_map)
        if n:
            ones = np.ones((k, n))  # any positive cost inserts the row; U, D, Qbar follow
            new.insert(X, gids, values[0], ones, squared, bias, store, rng_state)
            if new.n_live != n or new.evictions:
                raise RuntimeError(f"rebuilding the row memory kept {new.n_live} of {n} rows.")
            slots = store.slot_of[gids]
            for dst, src in zip((new.Y, new.U, new.D, new.QD), values, strict=True):
                dst[:, slots] = src
        return new

"""The row cache's checkpoints: :class:`CacheCheckpoint`, the half of a row cache that saves it.

A checkpoint saves the live rows only, in their order, with their slots,
per-row values and the free stack down to the slots ever touched: what the
cache decides next depends on these alone, so a restored cache makes the
same decisions.  Where rows lie in a sparse arena is not saved (it
decides nothing).  Checkpoints written before the cache grew its arrays
(allocated whole) restore too.
"""

import numpy as np

from ...kernels import cache as kc
from ..plan.sizes import slot_overhead


class CacheCheckpoint:
    """:meth:`state` and :meth:`from_state` of a :class:`~.cache.RowCache` (its base class)."""

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
        """ValueError unless ``store`` (an :class:`~.dual_store.AlphaStore`) has each cached row in
        its slot."""
        live = self.live[: self.n_live]
        gids = self.gid[live]
        if (gids >= store.slot_of.shape[0]).any() or not np.array_equal(store.slot_of[gids], live):
            raise ValueError("the saved row cache and the saved dual state do not match.")

"""The dual state of every row seen: :class:`AlphaStore`.

The row cache (:class:`~.cache.RowCache`) holds a budget of rows; the
store keeps alpha for every row seen, by global row id, with the running
sums the loss's dual needs (:attr:`~..plan.losses.Loss.dual_sum_names`: ``sum
alpha`` and ``sum D alpha^2``), kept exact by the kernels as rows leave
the cache (:func:`~dask_streamsvm.kernels.losses.dual_sums_change`).  It
grows as the first pass discovers rows and lives outside the cache budget:
its size is fixed by the number of rows, not by the user's choice.
"""

import os

import numpy as np

from ...kernels import cache as kc
from ..plan.losses import DEFAULT, loss_by_code


class AlphaStore:
    """alpha of every row seen, ``(n_problems, n_rows)``, with the dual's running sums.

    ``alpha[c, g]`` is the dual variable of row ``g`` in problem ``c``;
    ``slot_of[g]`` is the cache slot of row ``g`` or -1.  With
    ``directory`` both live in memory-mapped files there (SBM, Chang & Roth
    2011, section 5.2: dual variables beyond RAM), row-major so that a row's
    alphas sit together and the files grow at the end; the operating system
    keeps the pages in use in memory and writes the rest out.  Close the
    store to release the files.

    ``loss`` is the kernels' code of the loss (:mod:`~dask_streamsvm.kernels.losses`;
    the estimators' default if None): ``sums[c]`` holds, per problem, the
    sums its dual needs (:attr:`~..plan.losses.Loss.dual_sum_names`), and the
    kernels keep them by its leaves.
    """

    def __init__(self, n_problems, directory=None, capacity=1024, loss=None):
        self.k = int(n_problems)
        self.directory = directory
        self.loss = loss_by_code(DEFAULT.code if loss is None else loss)
        self.sums = np.zeros((self.k, len(self.loss.dual_sum_names)))
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
        """``(slot_of, alpha, sums, loss)`` as the kernels take them (:data:`~...kernels.cache.DualArrays`).

        :meth:`reserve` reallocates: take the bundle after it.
        """
        return kc.DualArrays(self.slot_of, self.alpha, self.sums, self.loss.code)

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

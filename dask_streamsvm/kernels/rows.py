"""Row primitives shared by every kernel: DOT, ADD and the squared norm.

A kernel sees one training set ``X`` in one of two layouts and never asks
which: the primitives below dispatch on the numba type of ``X``.

* dense rows: a C-contiguous 2-D array ``(n_rows, n_features)``;
* CSR rows: a tuple ``(indptr, indices, data)``.

Every row carries an implicit last feature of constant value ``bias``
(LIBLINEAR's ``-B``), stored as the last entry of ``w``: ``len(w)`` is
``n_features + 1`` and ``bias = 0.0`` switches the intercept off.  These are
the two operations of COFFIN (Sonnenburg & Franc, section 2): a solver
touches examples only through ``row_dot`` (DOT) and ``row_axpy`` (ADD), so a
later feature map only has to provide these two and ``row_sqnorm``.

The plain-Python bodies are the reference semantics (used by the slow NumPy
reference solver in the tests); inside ``@njit`` code the ``overload``
implementations are compiled instead.  Accumulators are float64 whatever
the dtype of ``X``.
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

# Loop counters and gathered indices are cast to unsigned: numba then skips
# the negative-index wraparound it otherwise emits on every access, which
# doubles the instructions of a sparse inner loop.  Row ids and indices are
# non-negative by construction (checked where the data enter).
_u = np.uint64

# fastmath only on arithmetic leaves (house style, rule 3): it lets LLVM
# vectorise the reductions; no clipping or NaN test lives here.
_LEAF_OPTIONS = {"fastmath": True, "nogil": True}


def row_dot(X, i, w, bias):
    """Return ``w . [x_i, bias]``."""
    if isinstance(X, tuple):
        indptr, indices, data = X
        lo, hi = indptr[i], indptr[i + 1]
        s = float(np.dot(data[lo:hi].astype(np.float64), w[indices[lo:hi]]))
    else:
        s = float(np.dot(X[i].astype(np.float64), w[:-1]))
    return s + bias * w[-1]


def row_axpy(X, i, a, w, bias):
    """``w += a * [x_i, bias]`` in place."""
    if isinstance(X, tuple):
        indptr, indices, data = X
        lo, hi = indptr[i], indptr[i + 1]
        np.add.at(w, indices[lo:hi], a * data[lo:hi].astype(np.float64))
    else:
        w[:-1] += a * X[i].astype(np.float64)
    w[-1] += a * bias


def row_sqnorm(X, i, bias):
    """Return ``||[x_i, bias]||^2``."""
    if isinstance(X, tuple):
        indptr, indices, data = X
        v = data[indptr[i] : indptr[i + 1]].astype(np.float64)
    else:
        v = X[i].astype(np.float64)
    return float(np.dot(v, v)) + bias * bias


def n_rows(X):
    """Number of rows of either layout."""
    if isinstance(X, tuple):
        return X[0].shape[0] - 1
    return X.shape[0]


def _is_dense(X):
    return isinstance(X, types.Array) and X.ndim == 2


def _is_csr(X):
    return isinstance(X, types.BaseTuple) and len(X) == 3


@overload(row_dot, jit_options=_LEAF_OPTIONS, inline="always")
def _row_dot(X, i, w, bias):
    if _is_dense(X):

        def dense_dot(X, i, w, bias):
            d = X.shape[1]
            row = X[i]
            s = 0.0
            for j in range(_u(0), _u(d)):
                s += row[j] * w[j]
            return s + bias * w[d]

        return dense_dot
    if _is_csr(X):

        def csr_dot(X, i, w, bias):
            indptr, indices, data = X
            s = 0.0
            for k in range(_u(indptr[i]), _u(indptr[i + 1])):
                s += data[k] * w[_u(indices[k])]
            return s + bias * w[w.shape[0] - 1]

        return csr_dot
    return None


@overload(row_axpy, jit_options=_LEAF_OPTIONS, inline="always")
def _row_axpy(X, i, a, w, bias):
    if _is_dense(X):

        def dense_axpy(X, i, a, w, bias):
            d = X.shape[1]
            row = X[i]
            for j in range(_u(0), _u(d)):
                w[j] += a * row[j]
            w[d] += a * bias

        return dense_axpy
    if _is_csr(X):

        def csr_axpy(X, i, a, w, bias):
            indptr, indices, data = X
            for k in range(_u(indptr[i]), _u(indptr[i + 1])):
                w[_u(indices[k])] += a * data[k]
            w[w.shape[0] - 1] += a * bias

        return csr_axpy
    return None


@overload(row_sqnorm, jit_options=_LEAF_OPTIONS)
def _row_sqnorm(X, i, bias):
    if _is_dense(X):

        def dense_sqnorm(X, i, bias):
            row = X[i]
            s = 0.0
            for j in range(_u(0), _u(X.shape[1])):
                v = row[j] * 1.0
                s += v * v
            return s + bias * bias

        return dense_sqnorm
    if _is_csr(X):

        def csr_sqnorm(X, i, bias):
            indptr, indices, data = X
            s = 0.0
            for k in range(_u(indptr[i]), _u(indptr[i + 1])):
                v = data[k] * 1.0
                s += v * v
            return s + bias * bias

        return csr_sqnorm
    return None


@overload(n_rows)
def _n_rows(X):
    if _is_dense(X):
        return lambda X: X.shape[0]
    if _is_csr(X):
        return lambda X: X[0].shape[0] - 1
    return None


# -- software prefetch -------------------------------------------------------
# DCD visits rows in random order, so on data larger than the CPU caches each
# row starts with a cache miss that the hardware prefetcher cannot predict.
# The kernel announces the next rows one and two steps ahead instead.


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the CPU to load ``arr[idx]`` into cache (LLVM ``llvm.prefetch``)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, idx), codegen


def row_prefetch_start(X, i):
    """Announce row ``i`` two steps ahead: its CSR row pointer."""


def row_prefetch(X, i):
    """Announce row ``i`` one step ahead: the first entries of the row."""


@overload(row_prefetch_start, inline="always")
def _row_prefetch_start(X, i):
    if _is_dense(X):
        return lambda X, i: None
    if _is_csr(X):
        return lambda X, i: prefetch(X[0], i)
    return None


@overload(row_prefetch, inline="always")
def _row_prefetch(X, i):
    if _is_dense(X):

        def dense_prefetch(X, i):
            prefetch(X.reshape(-1), i * X.shape[1])

        return dense_prefetch
    if _is_csr(X):

        def csr_prefetch(X, i):
            indptr, indices, data = X
            start = indptr[i]
            if start < data.shape[0]:
                prefetch(data, start)
                prefetch(indices, start)

        return csr_prefetch
    return None


# -- slotted CSR: the layout of the row cache -------------------------------
# A 4-tuple (starts, ends, indices, data): row i occupies
# indices/data[starts[i]:ends[i]].  Rows live anywhere in the arena, so the
# cache can insert and evict rows without moving the others.


def _is_slotted(X):
    return isinstance(X, types.BaseTuple) and len(X) == 4


@overload(row_dot, jit_options=_LEAF_OPTIONS, inline="always")
def _slotted_dot(X, i, w, bias):
    if _is_slotted(X):

        def slotted_dot(X, i, w, bias):
            starts, ends, indices, data = X
            s = 0.0
            for k in range(_u(starts[i]), _u(ends[i])):
                s += data[k] * w[_u(indices[k])]
            return s + bias * w[w.shape[0] - 1]

        return slotted_dot
    return None


@overload(row_axpy, jit_options=_LEAF_OPTIONS, inline="always")
def _slotted_axpy(X, i, a, w, bias):
    if _is_slotted(X):

        def slotted_axpy(X, i, a, w, bias):
            starts, ends, indices, data = X
            for k in range(_u(starts[i]), _u(ends[i])):
                w[_u(indices[k])] += a * data[k]
            w[w.shape[0] - 1] += a * bias

        return slotted_axpy
    return None


@overload(row_sqnorm, jit_options=_LEAF_OPTIONS)
def _slotted_sqnorm(X, i, bias):
    if _is_slotted(X):

        def slotted_sqnorm(X, i, bias):
            starts, ends, indices, data = X
            s = 0.0
            for k in range(_u(starts[i]), _u(ends[i])):
                v = data[k] * 1.0
                s += v * v
            return s + bias * bias

        return slotted_sqnorm
    return None


@overload(row_prefetch_start, inline="always")
def _slotted_prefetch_start(X, i):
    if _is_slotted(X):
        return lambda X, i: prefetch(X[0], i)
    return None


@overload(row_prefetch, inline="always")
def _slotted_prefetch(X, i):
    if _is_slotted(X):

        def slotted_prefetch(X, i):
            starts, ends, indices, data = X
            start = starts[i]
            if start < data.shape[0]:
                prefetch(data, start)
                prefetch(indices, start)

        return slotted_prefetch
    return None

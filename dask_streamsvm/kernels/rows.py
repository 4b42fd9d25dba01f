"""Row primitives shared by every kernel: DOT, ADD and the norm ``||x||^2``.

A kernel sees one training set ``X`` in one of three layouts and never asks
which: the primitives below dispatch on the numba type of ``X``.

* dense rows: a C-contiguous 2-D array ``(n_rows, n_features)``;
* CSR rows: a tuple ``(indptr, indices, data)``;
* slotted CSR, the row cache's layout: ``(starts, ends, indices, data)``,
  row i at ``indices/data[starts[i]:ends[i]]``, so that the cache inserts
  and evicts rows without moving the others.

The two sparse layouts share every body through ``row_span``.  A fourth
layout, ``(raw, spec)``, pairs a sparse layout with a feature map that the
three operations apply on the fly (:mod:`.features`, COFFIN).

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

from .features import map_axpy, map_dot, map_sqnorm

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
    """Number of rows of any layout (a slotted layout's: its slots, ``len(starts)``)."""
    if isinstance(X, tuple):
        return X[0].shape[0] - (len(X) == 3)
    return X.shape[0]


def _is_dense(X):
    return isinstance(X, types.Array) and X.ndim == 2


def _is_csr(X):
    return isinstance(X, types.BaseTuple) and len(X) == 3


def _is_slotted(X):
    return isinstance(X, types.BaseTuple) and len(X) == 4


def _is_sparse(X):
    """CSR ``(indptr, indices, data)`` or the cache's ``(starts, ends, indices, data)``."""
    return _is_csr(X) or _is_slotted(X)


def _is_mapped(X):
    """``(raw, spec)``: a sparse layout and a feature map's record array (:mod:`.features`)."""
    return (
        isinstance(X, types.BaseTuple)
        and len(X) == 2
        and _is_sparse(X[0])
        and isinstance(X[1], types.Array)
        and isinstance(X[1].dtype, types.Record)
    )


def row_span(X, i):
    """``(lo, hi)``: row ``i`` is ``indices[lo:hi]``, ``data[lo:hi]`` (sparse layouts)."""


@overload(row_span, inline="always")
def _row_span(X, i):
    if _is_csr(X):
        return lambda X, i: (X[0][i], X[0][i + 1])
    if _is_slotted(X):
        return lambda X, i: (X[0][i], X[1][i])
    return None


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
    if _is_sparse(X):

        def sparse_dot(X, i, w, bias):
            lo, hi = row_span(X, i)
            indices, data = X[-2], X[-1]
            s = 0.0
            for k in range(_u(lo), _u(hi)):
                s += data[k] * w[_u(indices[k])]
            return s + bias * w[w.shape[0] - 1]

        return sparse_dot
    if _is_mapped(X):

        def mapped_dot(X, i, w, bias):
            raw = X[0]
            lo, hi = row_span(raw, i)
            return map_dot(raw[-2], raw[-1], lo, hi, w, X[1]) + bias * w[w.shape[0] - 1]

        return mapped_dot
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
    if _is_sparse(X):

        def sparse_axpy(X, i, a, w, bias):
            lo, hi = row_span(X, i)
            indices, data = X[-2], X[-1]
            for k in range(_u(lo), _u(hi)):
                w[_u(indices[k])] += a * data[k]
            w[w.shape[0] - 1] += a * bias

        return sparse_axpy
    if _is_mapped(X):

        def mapped_axpy(X, i, a, w, bias):
            raw = X[0]
            lo, hi = row_span(raw, i)
            map_axpy(raw[-2], raw[-1], lo, hi, a, w, X[1])
            w[w.shape[0] - 1] += a * bias

        return mapped_axpy
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
    if _is_sparse(X):

        def sparse_sqnorm(X, i, bias):
            lo, hi = row_span(X, i)
            data = X[-1]
            s = 0.0
            for k in range(_u(lo), _u(hi)):
                v = data[k] * 1.0
                s += v * v
            return s + bias * bias

        return sparse_sqnorm
    if _is_mapped(X):

        def mapped_sqnorm(X, i, bias):
            raw = X[0]
            lo, hi = row_span(raw, i)
            return map_sqnorm(raw[-2], raw[-1], lo, hi, X[1]) + bias * bias

        return mapped_sqnorm
    return None


@overload(n_rows)
def _n_rows(X):
    if _is_dense(X):
        return lambda X: X.shape[0]
    if _is_csr(X):
        return lambda X: X[0].shape[0] - 1
    if _is_slotted(X):
        return lambda X: X[0].shape[0]
    if _is_mapped(X):
        return lambda X: n_rows(X[0])
    return None


# -- software prefetch -------------------------------------------------------
# DCD visits rows in random order, so on data larger than the CPU caches each
# row starts with a cache miss that the hardware prefetcher cannot predict.
# The kernel announces the next rows one and two steps ahead instead.


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the CPU to load ``arr[idx]`` (a 1-D array) or ``arr[idx, 0]`` (a row of a 2-D one) into cache
    (LLVM ``llvm.prefetch``)."""
    if not (isinstance(arr, types.Array) and arr.ndim in (1, 2) and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        at = [args[1]] + [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, at, wraparound=False)
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
    if _is_sparse(X):
        return lambda X, i: prefetch(X[0], i)
    if _is_mapped(X):
        return lambda X, i: prefetch(X[0][0], i)
    return None


@overload(row_prefetch, inline="always")
def _row_prefetch(X, i):
    if _is_dense(X):
        # the row's start, without X.reshape(-1): that compiles numba's reshape into every caller
        return lambda X, i: prefetch(X, i)
    if _is_sparse(X):

        def sparse_prefetch(X, i):
            indices, data = X[-2], X[-1]
            start = X[0][i]
            if start < data.shape[0]:
                prefetch(data, start)
                prefetch(indices, start)

        return sparse_prefetch
    if _is_mapped(X):
        return lambda X, i: row_prefetch(X[0], i)
    return None

"""Property-based fuzzing (Hypothesis) of malformed CSR matrices: only a ValueError, never a crash.

Random small CSR matrices get flaws by hand, as code that builds its own index arrays makes
them: column indices negative, at or past ``n_features`` or huge; ``indptr`` decreasing, too
short or too long, not starting at 0, ending before or past the entries stored; ``data`` and
``indices`` of different lengths; index arrays that are not integers.  A pure-Python reference
(:func:`_reference_flaw`) says whether the result is malformed.  Through ``LinearSVC`` in memory
(``fit`` and ``predict`` of a fitted model) and through ``solver="sbm"`` on a Dask Array of
sparse partitions, a malformed matrix must give a ValueError saying so, a well-formed one a
model: never a crash (the kernels read ``w[indices[k]]`` unchecked) or another exception.

Each property runs a fixed, derandomized set of examples (``EXAMPLES``; a fifth of them in the
default suite, all of them in its slow ``_full`` twin), as ``tests/test_fuzz.py`` does;
``DASK_STREAMSVM_FUZZ_SCALE=20`` runs 20 times as many from a fresh seed, and
``--hypothesis-show-statistics`` prints the outcomes.  The in-memory solver corrupted memory on
such input before the checks: these properties run in the test process, so a regression crashes
the run (``tests/test_read_path.py`` has the same cases in a subprocess).
"""

import re
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import event, given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LinearSVC

from ._helpers import fuzz_twins

EXAMPLES = {"csr_memory": 200, "csr_dask_sbm": 60}


def _twins(name, *decorators):
    """The property with a share of ``EXAMPLES[name]`` examples, and its slow twin with them all."""
    return fuzz_twins(EXAMPLES[name], *decorators)


N_FEATURES = 5
_FITTED = {}


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    """Compile the solvers once, and fit the model whose ``predict`` reads the fuzzed matrices."""
    X = sp.csr_matrix(np.eye(4, N_FEATURES) - np.eye(4, N_FEATURES, 1))
    y = np.array([0, 1, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _FITTED["model"] = LinearSVC(max_iter=5, tol=1e-2).fit(X, y)
        sbm = LinearSVC(max_iter=5, tol=1e-2, solver="sbm")
        sbm.fit(da.from_array(X, chunks=(2, N_FEATURES), asarray=False), da.from_array(y, chunks=2))


# --- malformed matrices -------------------------------------------------------------------------

_BAD_INDICES = (-1, -2, -(2**31), N_FEATURES, N_FEATURES + 1, 2**31 - 1, 2**40, 2**62)
# One or two flaws at a time; "none" and "spare room" are well-formed (SciPy allows an indptr that
# ends before the storage, with spare entries after it).
_FLAWS = (
    "none", "none", "spare room", "index", "index", "index", "index", "index", "indptr decreasing",
    "indptr decreasing", "indptr decreasing", "indptr first",
    "indptr last below nnz", "indptr last above nnz", "indptr short", "indptr long", "data longer",
    "data shorter", "indices longer", "indices shorter", "float indices", "float indptr",
    "unsigned indptr", "unsigned indices",
)  # fmt: skip


@st.composite
def _csr(draw):
    """A small CSR matrix of ``N_FEATURES`` columns with up to two flaws: ``(X, flaws)``."""
    n = draw(st.integers(1, 10))
    size = n * N_FEATURES
    mask = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))).reshape(n, N_FEATURES)
    mask[np.arange(n), np.arange(n) % N_FEATURES] = True  # every row has an entry to break
    values = np.array(draw(st.lists(st.floats(0.5, 3), min_size=size, max_size=size)))
    X = sp.csr_matrix(
        values.reshape(n, N_FEATURES) * np.where(mask, 1.0, 0.0) * (-1) ** np.arange(N_FEATURES)
    )
    indptr, indices, data = X.indptr.copy(), X.indices.copy(), X.data.copy()
    flaws = draw(st.lists(st.sampled_from(_FLAWS), min_size=1, max_size=2))
    for flaw in flaws:
        nnz = indices.shape[0]
        if flaw == "spare room":
            indices, data = np.append(indices, 0).astype(indices.dtype), np.append(data, 1.0)
        elif flaw == "index" and nnz:
            bad = draw(st.sampled_from(_BAD_INDICES))
            indices = indices.astype(np.int64)
            indices[draw(st.integers(0, nnz - 1))] = bad
        elif flaw == "indptr decreasing" and n > 1:
            r = draw(st.integers(1, n - 1))
            indptr = indptr.copy()
            indptr[r] = indptr[r - 1] - draw(st.integers(1, 3))
        elif flaw == "indptr first":
            indptr = indptr.copy()
            indptr[0] = draw(st.sampled_from([-1, 1, 2]))
        elif flaw in ("indptr last below nnz", "indptr last above nnz"):
            indptr = indptr.astype(np.int64)
            indptr[-1] += -1 if flaw.endswith("below nnz") else draw(st.sampled_from([1, 7, 2**40]))
        elif flaw == "indptr short":
            indptr = indptr[:-1]
        elif flaw == "indptr long":
            indptr = np.append(indptr, indptr[-1])
        elif flaw.endswith(("longer", "shorter")):
            array = data if flaw.startswith("data") else indices
            array = np.append(array, array[:1] if nnz else [0]) if flaw.endswith("longer") else array[:-1]
            if flaw.startswith("data"):
                data = array.astype(np.float64)
            else:
                indices = array.astype(indices.dtype)
        elif flaw == "float indices":
            indices = indices.astype(np.float64) + 0.5
        elif flaw == "float indptr":
            indptr = indptr.astype(np.float64)
        elif flaw == "unsigned indptr":
            indptr = indptr.astype(np.int64).astype(np.uint64)  # a negative entry becomes huge
        elif flaw == "unsigned indices":
            indices = indices.astype(np.int64).astype(np.uint64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy warns about index arrays that are not integers
        X.indptr, X.indices, X.data = indptr, indices, data
    return X, flaws


def _reference_flaw(X):
    """Whether ``X`` is malformed, row by row in plain Python: the test's reference."""
    n, d = X.shape
    if X.indptr.dtype.kind != "i" or X.indices.dtype.kind != "i":  # SciPy's routines take no others
        return True
    ptr, ind = [int(v) for v in X.indptr], [int(v) for v in X.indices]
    if len(ptr) != n + 1 or len(ind) != X.data.shape[0] or ptr[0] != 0:
        return True
    for r in range(n):
        if not ptr[r] <= ptr[r + 1] <= len(ind):
            return True
        if any(not 0 <= ind[k] < d for k in range(ptr[r], ptr[r + 1])):
            return True
    return False


def _outcome(call, malformed):
    """``call()``'s result, or its ValueError's message: a ValueError, saying that the matrix is
    malformed, if and only if the reference says so."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = call()
    except ValueError as exc:
        message = str(exc)
        assert malformed, f"a well-formed matrix refused: {message}"
        assert ": the sparse matrix is malformed: " in message, message
        event(f"ValueError: {re.sub(r'[0-9]+', 'N', message.split('malformed: ')[1])[:60]}")
        return message
    assert not malformed, "a malformed matrix accepted"
    event("accepted (well-formed)")
    return result


# --- properties -------------------------------------------------------------------------------------


@_twins("csr_memory", given(_csr()))
def test_malformed_csr_in_memory_gives_only_a_value_error(case):
    X, _ = case
    malformed = _reference_flaw(X)
    y = np.arange(X.shape[0]) % 2 if X.shape[0] > 1 else np.array([0])
    model = _FITTED["model"]
    predicted = _outcome(lambda: model.predict(X), malformed)
    assert malformed or predicted.shape == (X.shape[0],)
    if X.shape[0] > 1:  # two classes
        fitted = _outcome(lambda: LinearSVC(max_iter=5, tol=1e-2).fit(X, y), malformed)
        assert malformed or np.isfinite(fitted.coef_).all()
        _outcome(lambda: LinearSVC(max_iter=5, tol=1e-2, on_invalid="skip").fit(X, y), malformed)


def _partitions(parts):
    """A Dask Array of the sparse ``parts``, each a partition, as their own shapes declare them."""
    meta = sp.csr_matrix((0, N_FEATURES))
    blocks = [da.from_delayed(dask.delayed(p), shape=p.shape, dtype=np.float64, meta=meta) for p in parts]
    return da.concatenate(blocks)


@_twins("csr_dask_sbm", given(_csr()))
def test_malformed_csr_partition_gives_only_a_value_error_naming_it(case):
    X, _ = case
    malformed = _reference_flaw(X)
    good = sp.csr_matrix(np.eye(2, N_FEATURES))  # partition 0: two rows, two classes
    y = np.concatenate([[0, 1], np.arange(X.shape[0]) % 2])
    Xd, yd = _partitions([good, X]), da.from_array(y, chunks=((2, X.shape[0]),))
    with dask.config.set(scheduler="sync"):
        out = _outcome(lambda: LinearSVC(max_iter=5, tol=1e-2, solver="sbm").fit(Xd, yd), malformed)
    if malformed:
        assert re.match(r"partition 1(, row \d+ \(row \d+ of the collection\))?: the sparse", out), out
    else:
        assert np.isfinite(out.coef_).all()

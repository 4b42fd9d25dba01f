"""numba kernels against the slow NumPy references, update for update."""

import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm.engine.dual.memory import BinaryProblem
from dask_streamsvm.engine.plan.certificate import binary_certificate
from dask_streamsvm.engine.plan.layout import as_kernel_rows
from dask_streamsvm.kernels.objective import add_weighted_rows, decision_values
from dask_streamsvm.kernels.rng import make_state, shuffle_prefix

from ._reference import reference_dcd_pass, reference_dual, reference_primal


def random_problem(seed, n=60, d=7, density=0.5, dtype=np.float64):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * (rng.rand(n, d) < density)
    X[3] = 0.0  # an all-zero row
    X[5] = X[4]  # a duplicated row
    # Labels from a noisy linear rule: some rows sit far from the margin (and
    # get shrunk), some inside it.
    y = np.where(X @ rng.randn(d) + 0.5 * rng.randn(n) > 0.3, 1.0, -1.0)
    cost = rng.uniform(0.1, 2.0, size=n)
    return X.astype(dtype), y, cost


def layouts(X):
    return {"dense": as_kernel_rows(X), "csr": as_kernel_rows(sp.csr_matrix(X))}


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("bias", [0.0, 1.0, 2.5])
def test_dcd_matches_reference_pass_by_pass(layout, dtype, loss, bias):
    X, y, cost = random_problem(0, dtype=dtype)
    rows = layouts(X)[layout]
    prob = BinaryProblem(rows, y, cost, loss, bias, X.shape[1])
    n = len(y)
    alpha_k, w_k = np.zeros(n), np.zeros(X.shape[1] + 1)
    alpha_r, w_r = np.zeros(n), np.zeros(X.shape[1] + 1)
    index_k = np.arange(n, dtype=np.int64)
    index_r = index_k.copy()
    state_k, state_r = make_state(7), make_state(7)
    active_k = active_r = n
    old_k = (np.inf, -np.inf)
    old_r = (np.inf, -np.inf)
    eps = 1e-3
    shrunk_seen = False
    for _ in range(40):
        passes, active_k, pmax, pmin, omax, omin, conv = prob.dcd(
            index_k, active_k, alpha_k, w_k, 1, eps, old_k[0], old_k[1], state_k
        )
        old_k = (omax, omin)
        active_r, rmax, rmin, old_r, conv_r = reference_dcd_pass(
            X, y, prob.upper, prob.diag, bias, index_r, active_r, alpha_r, w_r, eps, old_r, state_r
        )
        assert passes == 1
        np.testing.assert_array_equal(index_k, index_r)
        assert active_k == active_r
        np.testing.assert_allclose(alpha_k, alpha_r, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(w_k, w_r, rtol=1e-10, atol=1e-12)
        assert (pmax, pmin) == pytest.approx((rmax, rmin), rel=1e-9, abs=1e-12)
        assert conv == conv_r
        shrunk_seen |= active_k < n
        if conv:
            break
    assert shrunk_seen, "the problem should exercise shrinking"
    # Box constraints hold exactly.
    assert (alpha_k >= 0).all() and (alpha_k <= prob.upper).all()


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_dcd_on_a_subset_of_rows_leaves_the_rest_untouched(loss):
    X, y, cost = random_problem(1)
    rows = as_kernel_rows(sp.csr_matrix(X))
    prob = BinaryProblem(rows, y, cost, loss, 1.0, X.shape[1])
    alpha, w = np.zeros(len(y)), np.zeros(X.shape[1] + 1)
    subset = np.arange(0, len(y), 3, dtype=np.int64)
    prob.dcd(subset.copy(), len(subset), alpha, w, 50, 1e-8, np.inf, -np.inf, make_state(0))
    outside = np.setdiff1d(np.arange(len(y)), subset)
    assert (alpha[outside] == 0).all()
    assert (alpha[subset] > 0).any()
    # w stays equal to w(alpha): the persistent state is consistent.
    np.testing.assert_allclose(w, prob.exact_w(alpha), atol=1e-10)
    # A second call continues from the persistent state (warm start).
    before = prob.certificate(alpha, w).relative_gap
    prob.dcd(np.arange(len(y), dtype=np.int64), len(y), alpha, w, 200, 1e-10, np.inf, -np.inf, make_state(1))
    assert prob.certificate(alpha, w).relative_gap < before


def test_empty_row_without_bias_goes_to_the_upper_bound_under_hinge():
    X = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, -1.0]])
    y = np.array([1.0, 1.0, -1.0])
    cost = np.array([0.7, 1.0, 1.0])
    prob = BinaryProblem(as_kernel_rows(X), y, cost, "hinge", 0.0, 2)
    assert prob.qd[0] == 0.0
    alpha, w = np.zeros(3), np.zeros(3)
    out = prob.dcd(np.arange(3, dtype=np.int64), 3, alpha, w, 100, 1e-10, np.inf, -np.inf, make_state(3))
    assert out[-1]  # converged
    assert alpha[0] == 0.7
    assert np.isfinite(w).all()
    assert prob.certificate(alpha, w).relative_gap < 1e-9


@pytest.mark.parametrize("size", [0, 1, 2, 17])
def test_shuffle_prefix_is_a_permutation_of_the_prefix_only(size):
    index = np.arange(20, dtype=np.int64)
    state = make_state(123)
    shuffle_prefix(index, size, state)
    assert sorted(index[:size]) == list(range(size))
    np.testing.assert_array_equal(index[size:], np.arange(size, 20))


def test_shuffle_prefix_is_reproducible_and_seed_dependent():
    a, b, c = (np.arange(50, dtype=np.int64) for _ in range(3))
    shuffle_prefix(a, 50, make_state(1))
    shuffle_prefix(b, 50, make_state(1))
    shuffle_prefix(c, 50, make_state(2))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_certificate_matches_numpy(layout, dtype, loss):
    X, y, cost = random_problem(4, dtype=dtype)
    rows = layouts(X)[layout]
    prob = BinaryProblem(rows, y, cost, loss, 1.5, X.shape[1])
    rng = np.random.RandomState(0)
    alpha = np.minimum(rng.rand(len(y)), prob.upper)
    w = prob.exact_w(alpha)
    cert = binary_certificate(rows, y, cost, prob.upper, prob.diag, alpha, w, 1.5, loss == "squared_hinge")
    assert cert.primal == pytest.approx(
        reference_primal(X, y, cost, w, 1.5, loss == "squared_hinge"), rel=1e-12
    )
    assert cert.dual == pytest.approx(reference_dual(X, y, prob.diag, alpha, 1.5), rel=1e-10, abs=1e-10)
    assert cert.gap >= 0


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_decision_values_and_weighted_rows(layout):
    X, y, _ = random_problem(5)
    rows = layouts(X)[layout]
    w = np.random.RandomState(1).randn(X.shape[1] + 1)
    out = np.empty(len(y))
    decision_values(rows, w, 2.0, out)
    np.testing.assert_allclose(out, X @ w[:-1] + 2.0 * w[-1], rtol=1e-12)
    alpha = np.abs(np.random.RandomState(2).randn(len(y)))
    acc = np.zeros(X.shape[1] + 1)
    add_weighted_rows(rows, y, alpha, acc, 2.0)
    np.testing.assert_allclose(acc[:-1], X.T @ (alpha * y), rtol=1e-12, atol=1e-12)
    assert acc[-1] == pytest.approx(2.0 * (alpha * y).sum())


def test_kernels_do_not_write_to_read_only_input():
    X, y, cost = random_problem(6)
    Xs = sp.csr_matrix(X)
    for arr in (X, y, cost, Xs.data, Xs.indices, Xs.indptr):
        arr.setflags(write=False)
    for rows in (as_kernel_rows(X), as_kernel_rows(Xs)):
        prob = BinaryProblem(rows, y, cost, "hinge", 1.0, X.shape[1])
        alpha, w = np.zeros(len(y)), np.zeros(X.shape[1] + 1)
        prob.dcd(np.arange(len(y), dtype=np.int64), len(y), alpha, w, 5, 0.1, np.inf, -np.inf, make_state(0))
        assert np.isfinite(w).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_rows_is_fancy_indexing_into_a_new_array(dtype):
    """``take_rows`` (the in-memory warm start's sample, a step's band): the rows at the positions
    given, repeated and out of order too, of dense rows in either order and of CSR rows, copied."""
    from dask_streamsvm.engine.plan.layout import take_rows

    X = random_problem(3)[0].astype(dtype)
    rows = np.array([5, 0, 59, 5, 17])
    for A in (X, np.asfortranarray(X), X[:, ::2]):
        taken = take_rows(A, rows)
        assert taken.dtype == dtype and not np.shares_memory(taken, A)
        np.testing.assert_array_equal(taken, A[rows])
    taken = take_rows(sp.csr_matrix(X), rows)
    assert sp.issparse(taken)
    np.testing.assert_array_equal(taken.toarray(), X[rows])
    # rows of canonical rows are canonical, known without a pass over their indices (SBM's pieces):
    # SciPy keeps what it knows in this attribute, where its public property would find it out again
    assert taken.format == "csr" and getattr(taken, "_has_canonical_format", False)
    unsorted = sp.csr_matrix(X)
    a, b = unsorted.indptr[5], unsorted.indptr[6]
    unsorted.indices[a:b] = unsorted.indices[a:b][::-1].copy()
    unsorted.data[a:b] = unsorted.data[a:b][::-1].copy()
    unsorted.has_canonical_format = False
    kept = take_rows(unsorted, rows)
    np.testing.assert_array_equal(kept.toarray(), X[rows])
    assert not kept.has_canonical_format  # SciPy's own check finds the row out of order
    assert take_rows(X, np.array([], dtype=np.int64)).shape == (0, X.shape[1])


def test_as_csr_keeps_a_csr_matrix_and_what_it_knows_and_converts_the_others():
    from dask_streamsvm.engine.plan.layout import as_csr

    X, _, _ = random_problem(8)
    Xs = sp.csr_matrix(X)
    assert as_csr(Xs) is Xs
    for other in (sp.csr_array(X), sp.coo_matrix(X), sp.csc_matrix(X)):
        made = as_csr(other)
        assert isinstance(made, sp.csr_matrix)
        np.testing.assert_array_equal(made.toarray(), X)


# -- the cache's stable orders (kernels/cache.py: stable_order, descending_order) ----------------


@pytest.mark.parametrize("largest", [1, 3, 2**11, 2**11 + 1, 2**22, 2**40, 2**63 - 1])
@pytest.mark.parametrize("n", [0, 1, 2, 37, 5000])
def test_stable_order_is_numpys_stable_argsort(largest, n):
    """One digit, digits to the last bit, keys of one value, ties everywhere: NumPy's stable order."""
    from dask_streamsvm.kernels.cache import stable_order

    rng = np.random.default_rng(n + largest % 1000)
    for keys in (rng.integers(0, largest, n, endpoint=True), rng.integers(0, 4, n) * (largest // 4)):
        np.testing.assert_array_equal(stable_order(keys.astype(np.int64)), np.argsort(keys, kind="stable"))


def test_stable_order_refuses_a_negative_key():
    from dask_streamsvm.kernels.cache import stable_order

    with pytest.raises(ValueError, match="non-negative"):
        stable_order(np.array([3, -1, 2], dtype=np.int64))


@pytest.mark.parametrize("n", [0, 1, 9, 4000])
def test_descending_order_is_numpys_stable_descending_argsort(n):
    """Gap shares (zeros, signed zeros, denormals, infinities, ties) highest first, ties in input
    order; NaN or negative scores take NumPy's own sort, as the selection did before."""
    from dask_streamsvm.kernels.cache import descending_order

    rng = np.random.default_rng(n)
    values = np.array([0.0, -0.0, 5e-324, 1e-300, 0.5, 1.5, 2.0, 1e300, np.inf])
    for scores in (
        rng.choice(values, n),
        rng.random(n),
        np.where(rng.random(n) < 0.5, rng.random(n), -rng.random(n)),
        np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
    ):
        np.testing.assert_array_equal(descending_order(scores), np.argsort(-scores, kind="stable"))


def test_compaction_keeps_the_rows_in_the_order_they_were_stored():
    """pack moves the live rows down in the order of their starts (stable_order), whatever the
    order of ``live``: the arena's order, and every row's values, survive evictions and compaction."""
    from dask_streamsvm.engine.dual.alpha_store import AlphaStore
    from dask_streamsvm.engine.dual.cache import RowCache
    from dask_streamsvm.kernels.cache import TOP

    rng = np.random.RandomState(3)
    dense = rng.randn(300, 30) * (rng.rand(300, 30) < 0.3)
    dense[7] = 0.0  # an empty row: its start ties with its neighbour's
    X = sp.csr_matrix(dense)
    store = AlphaStore(1)
    cache = RowCache(200_000, X.shape[1], np.float64, True, 1)
    state = make_state(0)
    ids = rng.permutation(300)
    cache.insert(X[ids], ids, np.ones((1, 300)), np.ones((1, 300)), True, 1.0, store, state)
    cache.evict(cache.live[: cache.n_live : 4].copy(), store)
    live = cache.live[: cache.n_live].copy()
    before_rows = cache.rows_of(live).toarray()
    by_start = live[np.argsort(cache.starts[live], kind="stable")]
    cache.compact()
    np.testing.assert_array_equal(cache.rows_of(live).toarray(), before_rows)
    np.testing.assert_array_equal(np.sort(cache.starts[by_start]), cache.starts[by_start])
    assert cache.meta[TOP] == int((cache.ends[live] - cache.starts[live]).sum())  # the top: the live values

"""The primal Newton solver's sums over dense rows (one fused kernel per chunk, the Hessian by SYRK)
and CSR rows (one fused kernel, the Hessian's nonzero pairs) against a plain NumPy reference of
every sum, on float32 and float64 rows, for each loss with Newton pieces (and the hinge's
subgradient terms)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from dask_streamsvm.engine.primal import reads
from dask_streamsvm.engine.primal import sums as primal_sums
from dask_streamsvm.engine.primal.sums import STEPS, block_sums, gram, too_large, trial_steps
from dask_streamsvm.kernels import losses as kl
from dask_streamsvm.kernels.newton import csr_hessian_product

CODES = [kl.DEFAULT, kl.HINGE, kl.LOGISTIC]


def reference_terms(code, cost, s):
    """``(loss, alpha, D)`` per row, from the table of :func:`~dask_streamsvm.kernels.losses.newton_terms`."""
    if code == kl.LOGISTIC:
        m = 1.0 - s
        return np.logaddexp(0.0, -m), cost * expit(-m), np.where(cost > 0, cost * expit(m) * expit(-m), 0.0)
    xi = np.maximum(0.0, s)
    if code == kl.SQUARED_HINGE:
        return xi * xi, 2.0 * cost * xi, np.where((xi > 0) & (cost > 0), 2.0 * cost, 0.0)
    return xi, np.where(xi > 0, cost, 0.0), np.zeros_like(s)


def reference_sums(X, Y, cost, W, S, bias, code):
    """Every sum of :class:`~dask_streamsvm.engine.primal.sums.Sums` in float64, the certificate's
    sums exactly rounded (``math.fsum``), the Hessian by one product."""
    Xa = np.hstack([np.asarray(X, dtype=np.float64), np.full((X.shape[0], 1), float(bias))])
    k = W.shape[0]
    out = {"loss": [], "alpha": [], "v": [], "hessian": [], "active": [], "trial": []}
    scale = {"loss": [], "alpha": [], "v": [], "trial": []}  # sums of |terms|: the rounding's scale
    for c in range(k):
        y, C = Y[c], cost[c]
        z0, dz = Xa @ W[c], Xa @ S[c]
        loss, alpha, weight = reference_terms(code, C, 1.0 - y * (z0 + dz))
        out["loss"].append(math.fsum(C * loss))
        dual = alpha  # the read's dual sum: alpha's, or the logistic loss's entropies of alpha(w)
        if code == kl.LOGISTIC:
            m = y * (z0 + dz)
            dual = np.where(C > 0, C * (expit(-m) * np.logaddexp(0, m) + expit(m) * np.logaddexp(0, -m)), 0.0)
        out["alpha"].append(math.fsum(dual))
        terms = (alpha * y)[:, None] * Xa
        out["v"].append([math.fsum(col) for col in terms.T])
        out["hessian"].append(Xa.T @ (weight[:, None] * Xa))
        out["active"].append(int((weight > 0).sum()))
        trial = np.zeros(len(STEPS))
        steps = trial_steps(code)  # none for the smooth logistic loss
        if S[c].any():
            m0, dm = y * z0, y * dz
            losses = [reference_terms(code, C, 1.0 - m0 - dm * t)[0] for t in steps]
            trial[: len(steps)] = [math.fsum(C * loss_t) for loss_t in losses]
        out["trial"].append(trial)
        for name, value in (("loss", C * loss), ("alpha", dual), ("trial", trial)):
            scale[name].append(float(np.abs(value).sum()) if name != "trial" else np.abs(trial))
        scale["v"].append(np.abs(terms).sum(axis=0))
    return {name: np.array(value) for name, value in out.items()}, {n: np.array(v) for n, v in scale.items()}


def problem(rng, n, d, k, dtype, trial, margin_scale=0.3):
    X = (rng.standard_normal((n, d)) * rng.uniform(0.5, 3.0, d)).astype(dtype)
    Y = np.where(rng.random((k, n)) < 0.4, 1.0, -1.0)
    cost = rng.uniform(0.1, 2.0, (k, n))
    cost[:, :5] = 0.0  # rows of no weight: inactive whatever their margin
    W = rng.standard_normal((k, d + 1)) * margin_scale
    S = rng.standard_normal((k, d + 1)) * 0.1 if trial else np.zeros((k, d + 1))
    if trial and k > 1:
        S[1] = 0.0  # one problem without a trial point beside others with one
    return X, Y, cost, W, S


def assert_sums(got, ref, scale, rel=1e-12, hessian_rel=None):
    """Every sum within ``rel`` of the reference's scale; the Hessian within ``hessian_rel``
    (default: float32 rows' Hessian is made in float32 with HESSIAN_IN_DATA_PRECISION)."""
    for name in ("loss", "alpha", "v", "trial"):
        assert np.all(np.abs(getattr(got, name) - ref[name]) <= rel * scale[name] + 1e-300), name
    assert np.array_equal(got.active, ref["active"])
    hessian_scale = np.abs(ref["hessian"]).max()
    hessian_rel = rel if hessian_rel is None else hessian_rel
    np.testing.assert_allclose(got.hessian, ref["hessian"], rtol=0, atol=hessian_rel * hessian_scale)
    assert np.array_equal(got.hessian, np.swapaxes(got.hessian, 1, 2))  # symmetric exactly


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 300 rows whatever the width and problems (:func:`primal_sums.chunk_rows`)."""
    monkeypatch.setattr(primal_sums, "chunk_rows", lambda width: 300)


@pytest.fixture
def float64_hessian(monkeypatch):
    monkeypatch.setattr(primal_sums, "HESSIAN_IN_DATA_PRECISION", False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("trial", [True, False])
@pytest.mark.parametrize("bias", [0.0, 1.0])
@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("single", [False, True], ids=["hessian64", "hessian-in-data-precision"])
def test_dense_sums_match_the_reference(small_chunks, monkeypatch, dtype, k, trial, bias, code, single):
    monkeypatch.setattr(primal_sums, "HESSIAN_IN_DATA_PRECISION", single)
    rng = np.random.default_rng([k, int(trial), int(bias), code, np.dtype(dtype).itemsize])
    X, Y, cost, W, S = problem(rng, 1000, 7, k, dtype, trial)  # 4 chunks, the last one short
    got = block_sums(X, Y, cost, W, S, bias, code)
    ref, scale = reference_sums(X, Y, cost, W, S, bias, code)
    assert got.rows == 1000
    assert 0 < got.active.min() < 1000 or code == kl.HINGE
    assert (trial and code != kl.LOGISTIC) == bool(got.trial.any())  # no trial lengths: a smooth loss
    assert_sums(got, ref, scale, hessian_rel=1e-5 if single and dtype == np.float32 else 1e-12)
    # Without the Hessian the kernel scales no rows (a buffer of none), and every other sum is the same.
    without = block_sums(X, Y, cost, W, S, bias, code, hessian=False)
    assert without.hessian is None and np.array_equal(without.active, got.active)
    for name in ("loss", "alpha", "v", "trial"):
        assert np.array_equal(getattr(without, name), getattr(got, name)), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("trial", [True, False])
@pytest.mark.parametrize("bias", [0.0, 1.0])
@pytest.mark.parametrize("code", CODES)
def test_csr_sums_match_the_reference(small_chunks, dtype, k, trial, bias, code):
    """Sparse rows (10% full: summed in place by the CSR kernel, the Hessian from each row's pairs
    of nonzeros, fused with the read) against the same reference as dense rows."""
    rng = np.random.default_rng([k, int(trial), int(bias), code, np.dtype(dtype).itemsize, 1])
    X, Y, cost, W, S = problem(rng, 1000, 12, k, dtype, trial)
    X[rng.random(X.shape) < 0.9] = 0.0
    rows = sp.csr_matrix(X)
    assert rows.nnz < primal_sums.DENSE_FILL * X.size  # the CSR kernel's path, not dense chunks
    got = block_sums(rows, Y, cost, W, S, bias, code)
    ref, scale = reference_sums(X, Y, cost, W, S, bias, code)
    assert got.rows == 1000
    assert (trial and code != kl.LOGISTIC) == bool(got.trial.any())
    assert_sums(got, ref, scale)
    without = block_sums(rows, Y, cost, W, S, bias, code, hessian=False)
    assert without.hessian is None and np.array_equal(without.v, got.v)


def test_the_csr_hessian_product_is_the_hessians():
    rng = np.random.default_rng(12)
    X = sp.random(300, 40, density=0.2, format="csr", random_state=np.random.RandomState(12))
    weight, p = rng.uniform(0.0, 2.0, 300), rng.standard_normal(41)
    weight[::7] = 0.0
    Xa = np.hstack([X.toarray(), np.full((300, 1), 0.5)])
    expected = 0.25 * p + Xa.T @ (weight * (Xa @ p))
    rows = (X.indptr.astype(np.int64), X.indices, X.data)
    out = csr_hessian_product(rows, weight, p, 0.5, 0.25, np.empty(41))
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    # duplicate entries of a column add up, as in the matrix product
    dup = sp.csr_matrix((np.array([1.0, 2.0]), np.array([3, 3]), np.array([0, 2])), shape=(1, 40))
    one = csr_hessian_product((dup.indptr, dup.indices, dup.data), np.ones(1), p, 0.0, 0.0, np.empty(41))
    assert one[3] == pytest.approx(9.0 * p[3]) and np.count_nonzero(one) == 1


@pytest.mark.parametrize("chunk_bytes", [8 * 40 * 7, primal_sums.PRODUCT_CHUNK_BYTES])
def test_the_dense_hessian_product_is_the_hessians_a_chunk_at_a_time(monkeypatch, chunk_bytes):
    """A dense product ``X^T D X p`` taken a chunk of rows at a time (seven rows here, the last chunk
    short) is the Hessian's product, with the bias column and the identity's weight."""
    monkeypatch.setattr(primal_sums, "PRODUCT_CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(13)
    X, weight, p = rng.standard_normal((300, 40)), rng.uniform(0.0, 2.0, 300), rng.standard_normal(41)
    weight[::7] = 0.0
    Xa = np.hstack([X, np.full((300, 1), 0.5)])
    read = primal_sums.ProductRead(X, np.ones((1, 300)), np.ones((1, 300)), 0.5, kl.LOGISTIC, identity=0.25)
    np.testing.assert_allclose(read.product(X, weight, p), 0.25 * p + Xa.T @ (weight * (Xa @ p)), rtol=1e-12)


def test_a_dense_product_takes_four_mib_of_rows_at_a_time():
    """:data:`~.sums.PRODUCT_CHUNK_BYTES`: 4 MiB of float64 rows a chunk, the measured best (the
    constant's comment); each chunk's weights come from its own scores."""
    assert primal_sums.PRODUCT_CHUNK_BYTES == 4 << 20
    X, V = np.ones((20_000, 64)), np.full((64, 2), 0.5)
    chunks = []

    def weigh(rows, Z):
        chunks.append(rows.stop - rows.start)
        np.testing.assert_array_equal(Z, 32.0 + 1.0)
        return np.ones_like(Z)

    total, summed = primal_sums.weighted_product(X, V, 1.0, weigh)
    assert chunks == [8192, 8192, 3616]  # 4 MiB of 64 float64 columns, then the rest
    np.testing.assert_array_equal(total, np.full((64, 2), 20_000.0))
    np.testing.assert_array_equal(summed, [20_000.0, 20_000.0])


def test_the_in_memory_rule_between_the_hessian_and_its_products():
    """Narrow CSR rows at least DENSE_FILL full are made dense once (their chunks would be at every
    read), dense rows less full CSR; sparse rows form the Hessian while their pairs of nonzeros
    number at most SPARSE_HESSIAN_PAIRS times their nonzeros; wider rows take products."""
    from dask_streamsvm.engine.plan.problem import FitPlan

    plan = FitPlan()
    assert primal_sums.SPARSE_HESSIAN_PAIRS == 16
    full = sp.random(100, 20, density=0.5, format="csr", random_state=np.random.RandomState(0))
    dense = reads.memory_layout(full)
    assert isinstance(dense, np.ndarray) and np.array_equal(dense, full.toarray())
    assert reads.memory_layout(dense) is dense  # half full: stays dense
    thin = sp.random(100, 600, density=0.02, format="csr", random_state=np.random.RandomState(1))
    assert reads.memory_layout(thin) is thin
    made = reads.memory_layout(thin.toarray())  # 2% full and dense: made sparse
    assert sp.issparse(made) and (made != thin).nnz == 0
    assert not reads.prefers_products(thin, plan)  # 12 nonzeros a row: 6 pairs a nonzero
    busy = sp.random(100, 600, density=0.1, format="csr", random_state=np.random.RandomState(2))
    assert reads.prefers_products(busy, plan)  # 60 nonzeros a row: 30 pairs a nonzero
    width = primal_sums.CG_WIDTH
    wide = sp.random(100, width, density=0.001, format="csr", random_state=np.random.RandomState(3))
    assert reads.prefers_products(wide, plan) and not reads.prefers_products(dense, plan)


def test_the_chunking_does_not_change_the_sums_beyond_rounding(small_chunks, float64_hessian):
    rng = np.random.default_rng(1)
    X, Y, cost, W, S = problem(rng, 1000, 7, 2, np.float32, True)
    chunked = block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    one = [block_sums(X[lo : lo + 300], Y[:, lo : lo + 300], cost[:, lo : lo + 300], W, S, 1.0, kl.DEFAULT)
           for lo in range(0, 1000, 300)]  # fmt: skip
    total = one[0]
    for part in one[1:]:
        total.add(part)
    np.testing.assert_allclose(chunked.loss, total.loss, rtol=1e-14)
    np.testing.assert_allclose(chunked.hessian, total.hessian, rtol=1e-13)
    assert np.array_equal(chunked.active, total.active)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_all_inactive_add_no_hessian(small_chunks, dtype):
    rng = np.random.default_rng(2)
    X, Y, cost, W, S = problem(rng, 700, 5, 2, dtype, True)
    Y[:, :] = 1.0
    W[:, :], S[:, :] = 0.0, 0.0
    W[:, -1] = 10.0  # every margin is 10 b = 10
    got = block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    assert np.array_equal(got.active, [0, 0])
    assert not got.hessian.any() and not got.loss.any() and not got.alpha.any() and not got.v.any()


def test_float32_hessian_changes_the_hessian_only(small_chunks, monkeypatch):
    rng = np.random.default_rng(3)
    X, Y, cost, W, S = problem(rng, 1000, 7, 3, np.float32, True)
    monkeypatch.setattr(primal_sums, "HESSIAN_IN_DATA_PRECISION", False)
    double = block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    monkeypatch.setattr(primal_sums, "HESSIAN_IN_DATA_PRECISION", True)
    single = block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    for name in ("loss", "alpha", "v", "trial", "active"):
        assert np.array_equal(getattr(single, name), getattr(double, name)), name
    np.testing.assert_allclose(
        single.hessian, double.hessian, rtol=0, atol=1e-5 * np.abs(double.hessian).max()
    )
    assert not np.array_equal(single.hessian, double.hessian)  # made in float32 indeed
    assert np.array_equal(single.hessian, np.swapaxes(single.hessian, 1, 2))


def test_a_float32_hessian_past_float32s_range_is_made_in_float64(small_chunks, monkeypatch):
    rng = np.random.default_rng(10)
    X, Y, cost, W, S = problem(rng, 1000, 4, 1, np.float32, False)
    X[:, 1] = 1e13  # each row's scaled square 2e10 * 1e26: a chunk's sum passes 3.4e38
    cost[:] = 1e10
    W[:] = 0.0  # every row active
    monkeypatch.setattr(primal_sums, "HESSIAN_IN_DATA_PRECISION", True)
    single = block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    monkeypatch.setattr(primal_sums, "HESSIAN_IN_DATA_PRECISION", False)
    double = block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    assert np.isfinite(single.hessian).all() and single.hessian[0, 1, 1] > np.finfo(np.float32).max
    np.testing.assert_allclose(single.hessian, double.hessian, rtol=1e-6)


@pytest.mark.parametrize(
    "make",
    [
        lambda X: np.asfortranarray(X),
        lambda X: np.hstack([X, X])[:, : X.shape[1]],
        lambda X: np.round(X * 10).astype(np.int16),
        lambda X: np.asfortranarray(X.astype(np.float32)),
    ],
    ids=["fortran", "strided", "int16", "fortran32"],
)
def test_any_dense_layout_gives_the_sums_of_its_values(small_chunks, float64_hessian, make):
    rng = np.random.default_rng(4)
    X, Y, cost, W, S = problem(rng, 800, 6, 2, np.float64, True)
    rows = make(X)
    got = block_sums(rows, Y, cost, W, S, 1.0, kl.DEFAULT)
    ref, scale = reference_sums(np.asarray(rows, dtype=np.float64), Y, cost, W, S, 1.0, kl.DEFAULT)
    assert_sums(got, ref, scale)


def test_read_only_and_empty_rows(float64_hessian):
    rng = np.random.default_rng(5)
    X, Y, cost, W, S = problem(rng, 400, 4, 1, np.float32, True)
    X.setflags(write=False)
    ref, scale = reference_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    assert_sums(block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT), ref, scale)
    empty = block_sums(X[:0], Y[:, :0], cost[:, :0], W, S, 1.0, kl.DEFAULT, where="")
    assert empty.rows == 0 and not empty.hessian.any() and not empty.active.any()


def test_dense_and_csr_rows_give_the_same_sums():
    rng = np.random.default_rng(6)
    X, Y, cost, W, S = problem(rng, 900, 6, 3, np.float64, True)
    X[X < 0.5] = 0.0
    dense = block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)
    csr = block_sums(sp.csr_matrix(X), Y, cost, W, S, 1.0, kl.DEFAULT)
    for name in ("loss", "alpha", "v", "trial", "hessian"):
        np.testing.assert_allclose(getattr(dense, name), getattr(csr, name), rtol=1e-12, atol=1e-12)
    assert np.array_equal(dense.active, csr.active)


def _old_reason(X, lo, hi, bias):
    """Today's message: :func:`too_large` of the first chunk's rows with the intercept column."""
    rows = np.hstack([np.asarray(X[lo:hi], dtype=np.float64), np.full((hi - lo, 1), float(bias))])
    return too_large(rows, bias)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_first_read_refuses_values_too_large_with_todays_message(small_chunks, dtype):
    rng = np.random.default_rng(7)
    X, Y, cost, W, S = problem(rng, 1000, 5, 1, np.float64, False)
    X[450, 2] = -3e12  # the second chunk's largest, named though a later chunk has a larger one
    X[700, 4] = 5e14
    X = X.astype(dtype)
    with pytest.raises(ValueError) as info:
        block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT, where="partition 3: ")
    assert str(info.value) == "partition 3: " + _old_reason(X, 300, 600, 1.0)
    assert "column 2 reaches |x| = 3e+12" in str(info.value)
    block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT)  # later reads do not check


def test_the_intercept_column_and_a_nan_are_judged_as_today():
    rng = np.random.default_rng(8)
    X, Y, cost, W, S = problem(rng, 200, 3, 1, np.float32, False)
    with pytest.raises(ValueError) as info:
        block_sums(X, Y, cost, W, S, 5e12, kl.DEFAULT, where="")
    assert str(info.value) == _old_reason(X, 0, 200, 5e12)
    assert str(info.value).startswith("the intercept column is 5e+12")
    X[10, 0], X[20, 2] = np.nan, 1e13  # NaN in a column before: NumPy's maximum keeps it, no refusal
    assert _old_reason(X, 0, 200, 1.0) is None
    assert np.isnan(block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT, where="").loss).all()
    X[10, 0] = 0.0
    with pytest.raises(ValueError, match="column 2 reaches"):
        block_sums(X, Y, cost, W, S, 1.0, kl.DEFAULT, where="")


def test_gram_is_the_weighted_product():
    rng = np.random.default_rng(9)
    rows, weights = rng.standard_normal((300, 6)), rng.uniform(0, 2, 300)
    expected = rows.T @ (weights[:, None] * rows)
    np.testing.assert_allclose(gram(rows, weights), expected, rtol=1e-12)
    np.testing.assert_allclose(gram(sp.csr_matrix(rows), weights), expected, rtol=1e-12)
    assert np.array_equal(gram(rows[:0], weights[:0]), np.zeros((6, 6)))


def test_rows_of_another_width_than_the_points_are_refused():
    rng = np.random.default_rng(11)
    X, Y, cost, W, S = problem(rng, 50, 4, 1, np.float32, False)
    message = r"rows of shape \(50, 4\) for points of width 6: expected 5 columns"
    with pytest.raises(ValueError, match=message):
        block_sums(X, Y, cost, np.zeros((1, 6)), np.zeros((1, 6)), 1.0, kl.DEFAULT)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("chunk_bytes", [8 * 100, primal_sums.CHUNK_BYTES])
def test_the_squares_product_is_the_squares_of_every_row_a_chunk_at_a_time(monkeypatch, sparse, chunk_bytes):
    """``squares_product`` (the Hessian diagonal's sum) equals the squares of every row times the
    weights, one weight or one per class, whether the rows come in one chunk or in many (CSR rows
    squared beside their own column indices, float32 rows squared into float64)."""
    monkeypatch.setattr(primal_sums, "CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(700, 40))
    if sparse:
        X = sp.random(700, 40, density=0.2, format="csr", random_state=4)
    X = X.astype(np.float32)
    dense = X.toarray().astype(np.float64) if sparse else X.astype(np.float64)
    for weight in (rng.random(700), rng.random((700, 3))):
        got = primal_sums.squares_product(X, weight)
        np.testing.assert_allclose(got, (dense * dense).T @ weight, rtol=1e-12)


class _RecordingPool:
    """An executor whose ``submit`` records each run of rows and runs it, in the calling thread, when
    its result is asked for; ``most``: the most runs submitted and not yet asked for at once."""

    def __init__(self):
        self.runs, self.waiting, self.most = [], 0, 0

    def submit(self, fn, bounds):
        self.runs.append(bounds)
        self.waiting += 1
        self.most = max(self.most, self.waiting)
        pool = self

        class Lazy:
            def result(self):
                pool.waiting -= 1
                return fn(bounds)

        return Lazy()


@pytest.mark.parametrize("threads", [2, 3])
def test_the_row_threads_sum_contiguous_runs_of_chunks_added_in_order(monkeypatch, threads):
    """:func:`~.sums.chunk_sums`: ROW_RUNS (4) contiguous runs of whole chunks a row thread, every
    chunk in exactly one run, the runs' sums added in the chunks' order, at most RUNS_IN_FLIGHT (2)
    runs a thread submitted and not yet added; one run where there is one row thread (the chunks'
    sums in order, in the calling thread)."""
    assert primal_sums.ROW_RUNS == 4 and primal_sums.RUNS_IN_FLIGHT == 2
    pool = _RecordingPool()
    monkeypatch.setattr(primal_sums, "row_pool", lambda: (pool, threads))
    seen = []

    def chunk_sum(rows):
        seen.append((rows.start, rows.stop))
        return (np.array([rows.stop - rows.start]), np.array([rows.start]))

    n, step = 1000, 7  # 143 chunks, the last of 6 rows
    total = primal_sums.chunk_sums(n, step, chunk_sum)
    assert len(pool.runs) == 4 * threads and pool.most == 2 * threads
    assert pool.runs[0][0] == 0 and pool.runs[-1][1] == n
    assert all(
        a[1] == b[0] and a[0] < a[1] and a[0] % step == 0
        for a, b in zip(pool.runs[:-1], pool.runs[1:], strict=True)
    )
    assert sorted(seen) == [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    assert total[0].tolist() == [n] and total[1].tolist() == [sum(range(0, n, step))]
    assert primal_sums.row_runs(20, 7, 8) == [(0, 7), (7, 14), (14, 20)]  # no more runs than chunks
    monkeypatch.setattr(primal_sums, "row_pool", lambda: (None, 1))
    pool.runs.clear()
    assert primal_sums.chunk_sums(n, step, chunk_sum)[0].tolist() == [n] and not pool.runs


@pytest.mark.parametrize("code", CODES)
def test_the_in_memory_sums_on_row_threads_are_those_of_every_row(code):
    """:func:`~.sums.memory_block_sums`: dense rows cut into runs of chunks between 3 row threads add
    up to the sums of every row at once (each run's Hessian symmetrised, the trial losses, the
    certificate's sums, the rows counted once)."""
    from dask_streamsvm.engine.plan.threads import row_threads

    rng = np.random.default_rng(17)
    X, Y, cost, W, S = problem(rng, 1500, 6, 2, np.float64, True)  # 6 chunks of 256 rows (chunk_rows)
    whole = block_sums(X, Y, cost, W, S, 1.0, code)
    with row_threads(3):
        split = primal_sums.memory_block_sums(X, Y, cost, W, S, 1.0, code)
    assert split.rows == whole.rows == 1500 and np.array_equal(split.active, whole.active)
    for name in ("loss", "alpha", "v", "hessian", "trial"):
        np.testing.assert_allclose(getattr(split, name), getattr(whole, name), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("n", [0, 5, 2_345])
def test_the_dense_products_on_row_threads_are_numpys(monkeypatch, threads, n):
    """``weighted_product`` and ``rows_product`` a chunk of 11 rows at a time on 1 and 3 row threads
    (:func:`~..plan.threads.row_threads`): NumPy's products over every row, the scores written for
    every row, whatever the threads (the same sums to the last digits)."""
    from dask_streamsvm.engine.plan.threads import row_threads

    monkeypatch.setattr(primal_sums, "PRODUCT_CHUNK_BYTES", 8 * 30 * 11)
    rng = np.random.default_rng(21)
    X, V, R = rng.standard_normal((n, 30)), rng.standard_normal((30, 4)), rng.standard_normal((n, 4))
    P = rng.uniform(0.1, 1.0, (n, 4))
    scores = np.full((n, 4), np.nan)
    with row_threads(threads):
        total, summed = primal_sums.weighted_product(X, V, 0.5, lambda rows, Z: P[rows] * Z, scores)
        sums = primal_sums.rows_product(R, X)
    A = P * (X @ V + 0.5)
    np.testing.assert_allclose(scores, X @ V + 0.5, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(total, X.T @ A, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(summed, A.sum(axis=0), rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(sums, R.T @ X, rtol=1e-12, atol=1e-11)
    assert total.shape == (30, 4) and summed.shape == (4,) and sums.shape == (4, 30)


def test_a_threads_scratch_is_reused_by_name_and_grown_never_shared_between_threads():
    """:func:`scratch`: the same memory for the same name in a thread (no mapping of its own a
    chunk), grown where a larger shape is asked for, another array for another name or thread."""
    import threading

    from dask_streamsvm.engine.primal.sums import scratch

    first = scratch("test rows", (4, 3))
    assert first.shape == (4, 3) and first.dtype == np.float64
    again = scratch("test rows", (2, 5))
    assert again.shape == (2, 5) and np.shares_memory(first, again)
    assert not np.shares_memory(first, scratch("other rows", (4, 3)))
    grown = scratch("test rows", (100, 3))
    assert grown.shape == (100, 3) and not np.shares_memory(first, grown)
    assert np.shares_memory(grown, scratch("test rows", (4, 3)))
    seen = []
    worker = threading.Thread(target=lambda: seen.append(scratch("test rows", (4, 3))))
    worker.start()
    worker.join()
    assert not np.shares_memory(seen[0], grown)


def test_the_hessians_scaled_rows_reuse_the_threads_scratch_and_leave_nothing_behind(monkeypatch):
    """:func:`~dask_streamsvm.engine.primal.sums.hessian_rows`: each block's (and each carried
    change's) scaled active rows are written into the thread's scratch, not a new array a chunk (16
    MiB of fresh pages each), and a block summed after a larger one (its rows left in the scratch)
    gets the Hessian of its own active rows only."""
    from dask_streamsvm.engine.primal.carried import CarriedHessian

    taken, scratch = [], primal_sums.scratch

    def recorded(name, shape, dtype=np.float64):
        taken.append(scratch(name, shape, dtype))
        return taken[-1]

    monkeypatch.setattr(primal_sums, "scratch", recorded)
    rng = np.random.default_rng(7)
    D = 9
    W, S = 0.3 * rng.standard_normal((1, D)), np.zeros((1, D))
    for n in (5000, 700):  # the second's rows land where the first's still are
        X = rng.standard_normal((n, D - 1)).astype(np.float32)
        Y, cost = np.sign(rng.standard_normal((1, n))), rng.uniform(0.5, 2.0, (1, n))
        sums = block_sums(X, Y, cost, W, S, 1.0, kl.SQUARED_HINGE)
        Xa = np.hstack([X.astype(np.float64), np.ones((n, 1))])
        active = 1.0 - Y[0] * (Xa @ W[0]) > 0.0
        expected = gram(Xa[active], 2.0 * cost[0, active])
        np.testing.assert_allclose(sums.hessian[0], expected, rtol=1e-12, atol=1e-9)
    assert len(taken) == 2 and np.shares_memory(taken[0], taken[1])
    carried = CarriedHessian(X, 1.0)
    rows = np.flatnonzero(active)
    np.testing.assert_allclose(carried._gram(rows, cost[0]), expected, rtol=1e-12, atol=1e-9)
    assert len(taken) == 3 and np.shares_memory(taken[0], taken[2])


def test_the_hessians_scaled_rows_beyond_a_chunks_bytes_are_not_kept():
    """Many problems of wide rows make a chunk's scaled rows larger than ``CHUNK_BYTES`` (a chunk is at
    least 256 rows of each problem): those are new arrays, so that no thread keeps more than
    ``CHUNK_BYTES`` of them after a fit."""
    from dask_streamsvm.engine.primal.sums import CHUNK_BYTES, hessian_rows, scratch

    rows = CHUNK_BYTES // (8 * 1001)  # float64 rows 1,001 wide in CHUNK_BYTES
    kept = hessian_rows((1, rows, 1001))
    assert np.shares_memory(kept, hessian_rows((1, rows, 1001)))
    larger = hessian_rows((1, rows + 1, 1001))
    assert larger.shape == (1, rows + 1, 1001) and not np.shares_memory(larger, kept)
    assert scratch("hessian rows", (1,)).base.size <= CHUNK_BYTES // 8  # the thread's array did not grow


def test_the_squared_hinges_trial_losses_are_the_general_terms_to_the_bit():
    """kernels/losses.add_trial_losses: the squared hinge's loop of its own gives each step's loss as
    newton_terms does, to the last bit, a NaN margin kept as NaN; the logistic loss takes the terms."""
    rng = np.random.default_rng(3)
    for code in (kl.SQUARED_HINGE, kl.LOGISTIC):
        for m0, dm in [
            (0.3, 2.0),
            (1.7, -0.9),
            (-4.0, 0.01),
            (1.0, 0.0),
            (0.5, 1e-300),
            *rng.normal(size=(20, 2)),
        ]:
            cost = float(rng.uniform(0.1, 3.0))
            fast, general = np.full(STEPS.shape[0], 0.25), np.full(STEPS.shape[0], 0.25)
            kl.add_trial_losses(fast, cost, m0, dm, STEPS, code)
            for t, step in enumerate(STEPS):
                general[t] += cost * kl.newton_terms(code, 1.0, 1.0 - m0 - dm * step)[0]
            np.testing.assert_array_equal(fast, general)
    nan = np.zeros(STEPS.shape[0])
    kl.add_trial_losses(nan, 1.0, float("nan"), 1.0, STEPS, kl.SQUARED_HINGE)
    assert np.isnan(nan).all()


def test_a_rows_two_margins_in_one_pass_are_each_one_pass_within_rounding():
    """kernels/newton.row_dots: the margin at the point and along the direction in one pass over the
    row, each within the rounding the band's bound counts ((D + 4) epsilons of sum |x_j w_j|) of
    row_dot's own."""
    from dask_streamsvm.kernels.newton import row_dot, row_dots

    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        X = rng.integers(0, 256, size=(50, 61)).astype(dtype)
        W, S = rng.normal(size=(2, 62)), rng.normal(size=(2, 62)) * 1e-3
        for i in range(X.shape[0]):
            for c in range(2):
                at, along = row_dots(X, i, W, S, c)
                for got, point in ((at, W), (along, S)):
                    bound = (
                        (X.shape[1] + 4)
                        * np.finfo(np.float64).eps
                        * float(np.abs(X[i] * point[c, :-1]).sum())
                    )
                    assert abs(got - row_dot(X, i, point, c)) <= bound

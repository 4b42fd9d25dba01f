"""The Hessian of float32 rows whose values are integers, made exactly in float32
(:class:`~dask_streamsvm.engine.primal.sums.ExactGram`): equal to the integer sum where every
condition holds, and to the float64 path's own sums, bit for bit, where one does not."""

import numpy as np
import pytest

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.primal.carried import CarriedHessian
from dask_streamsvm.engine.primal.sums import EXACT_SUM, ExactGram, block_sums, exact_gram
from dask_streamsvm.kernels import losses as kl
from dask_streamsvm.kernels.newton import integer_gauge


def integer_gram(rows):
    """The Gram matrix of integer rows in int64 arithmetic: exact."""
    whole = np.asarray(rows, dtype=np.int64)
    return (whole.T @ whole).astype(np.float64)


def test_integer_rows_gram_is_exact_where_a_larger_bound_would_round():
    """Values 254 and 255: the float32 products of EXACT_SUM / 255^2 rows at a time (258), added in
    float64, are the integer Gram matrix.  With a bound twice as large (516 rows a product) a
    product's entries pass 2^24 and some are odd, which float32 cannot hold: the test fails if
    EXACT_SUM is raised."""
    rng = np.random.default_rng(3)
    rows = rng.choice(np.array([254.0, 255.0], dtype=np.float32), size=(5000, 7))
    expected = integer_gram(rows)
    assert np.array_equal(exact_gram(rows, 255.0), expected)
    blocks = integer_gram(rows[:516])  # the first product at twice the bound
    assert (np.diag(blocks) > 2**24).all() and (np.diag(blocks) % 2 == 1).any()
    assert not np.array_equal(exact_gram(rows, 255.0 / np.sqrt(2.0)), expected)
    assert EXACT_SUM == 2.0**24  # float32's significand: what the first assertion rests on


def test_integer_gauge_counts_values_that_are_not_integers_and_the_largest_magnitude():
    values = np.array([0.0, -3.0, 255.0, 7.5, -0.25, 4.0e6, -4.0e6], dtype=np.float32)
    largest, odd = integer_gauge(values, values.view(np.int32))
    assert odd == 2 and np.int32(largest).view(np.float32) == 4.0e6
    whole = np.arange(-300, 300, dtype=np.float32)
    largest, odd = integer_gauge(whole, whole.view(np.int32))
    assert odd == 0 and np.int32(largest).view(np.float32) == 300.0


def _sums(X, cost, bias, exact):
    rng = np.random.default_rng(11)
    n, d = X.shape
    Y = np.where(rng.random((1, n)) < 0.5, -1.0, 1.0)
    g = rng.standard_normal(d)
    z = X @ g
    W = np.append(2.0 * g / np.std(z), 0.0).reshape(1, -1)  # margins of deviation 2: about half active
    W[0, -1] = -float(np.mean(X @ W[0, :-1])) / bias
    return block_sums(X, Y, cost, W, np.zeros_like(W), bias, kl.SQUARED_HINGE, exact=exact), Y, W


@pytest.mark.parametrize("top", [1, 255, 512])
def test_integer_rows_hessian_is_the_exact_sum_of_their_weights(top):
    """Integer rows of one cost: the Hessian is 2 C times the integer Gram matrix of the active rows,
    exactly (the float64 path rounds it); binary rows, pixels, and the largest magnitude
    EXACT_MIN_ROWS allows (512: 64 rows a product)."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, top + 1, size=(3000, 6)).astype(np.float32)
    X[0, 0] = top
    cost = np.full((1, 3000), 0.25)
    exact = ExactGram()
    sums, Y, W = _sums(X, cost, 1.0, exact)
    assert exact.on and exact.exact >= 1 and exact.scaled == 0
    Xa = np.hstack([X, np.ones((3000, 1), dtype=np.float32)])
    active = 1.0 - Y[0] * (Xa.astype(np.float64) @ W[0]) > 0.0
    assert 0 < active.sum() < 3000
    assert np.array_equal(sums.hessian[0], 0.5 * integer_gram(Xa[active]))
    plain, _, _ = _sums(X, cost, 1.0, None)
    np.testing.assert_allclose(sums.hessian[0], plain.hessian[0], rtol=1e-13)
    for name in ("loss", "alpha", "v", "active", "trial"):
        assert np.array_equal(getattr(sums, name), getattr(plain, name))


@pytest.mark.parametrize("case", ["half", "beyond", "weights", "bias"])
def test_rows_that_are_not_integers_or_beyond_the_bound_or_weighted_take_the_float64_sums(case):
    """A value that is not an integer, one past the bound (at EXACT_MIN_ROWS rows a product), rows of
    two weights, or a bias that is not an integer: the chunk is scaled in float64, its Hessian the
    float64 path's bit for bit, and the fit's later chunks take that path (``on`` False).  512 is
    within the bound (the test fails if EXACT_MIN_ROWS is raised)."""
    rng = np.random.default_rng(9)
    X = rng.integers(0, 200, size=(2000, 5)).astype(np.float32)
    cost, bias = np.full((1, 2000), 0.5), 1.0
    if case == "half":  # (on many rows: some of them active)
        X[1500:, 2] += 0.5
    elif case == "beyond":  # 513^2 * 64 > 2^24: the test fails if EXACT_MIN_ROWS is lowered
        X[1500:, 2] = 513
    elif case == "weights":
        cost[0, ::2] = 2.0
    else:
        bias = 0.5
    exact = ExactGram()
    sums, _, _ = _sums(X, cost, bias, exact)
    plain, _, _ = _sums(X, cost, bias, None)
    assert not exact.on and exact.scaled == 1 and exact.exact == 0
    assert np.array_equal(sums.hessian, plain.hessian)
    if case == "beyond":  # one less is within the bound: exact
        X[1500:, 2] = 512
        within = ExactGram()
        _sums(X, cost, bias, within)
        assert within.on and within.exact == 1


def test_an_in_memory_fits_rows_are_probed_once_and_only_float32_integers_are_exact():
    rng = np.random.default_rng(2)
    pixels = rng.integers(0, 256, size=(3000, 4)).astype(np.float32)
    assert isinstance(ExactGram.of(pixels), ExactGram)
    assert ExactGram.of(pixels.astype(np.float64)) is None
    assert ExactGram.of(pixels + np.float32(0.5)) is None
    assert ExactGram.of(rng.standard_normal((3000, 4)).astype(np.float32)) is None
    assert CarriedHessian(pixels, 1.0).exact is not None
    assert CarriedHessian(pixels.astype(np.float64), 1.0).exact is None


def test_the_squared_hinges_fit_on_integer_rows_is_the_float64_paths_fit(monkeypatch):
    """LinearSVC's default fit in memory on pixel rows: the exact Hessian is taken (every formed read's
    chunks), and the model and certificate are the float64 path's to rounding."""
    rng = np.random.default_rng(4)
    n, d = 60_000, 12
    X = np.clip(np.round(rng.standard_normal((n, d)) * 40 + 128), 0, 255).astype(np.float32)
    score = X @ rng.standard_normal(d)
    y = np.where(score > np.median(score), 1, -1)
    y[rng.random(n) < 0.05] *= -1
    taken = []
    add = ExactGram.add

    def counted(self, *args):
        taken.append(self)
        return add(self, *args)

    monkeypatch.setattr(ExactGram, "add", counted)
    exact = LinearSVC(C=0.5, tol=1e-6).fit(X, y)
    assert taken and all(gram.on and gram.scaled == 0 for gram in taken)
    monkeypatch.setattr(ExactGram, "of", classmethod(lambda cls, X: None))
    plain = LinearSVC(C=0.5, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(exact.coef_, plain.coef_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(exact.intercept_, plain.intercept_, rtol=1e-8, atol=1e-12)
    assert exact.duality_gap_ <= 1e-6 and plain.duality_gap_ <= 1e-6

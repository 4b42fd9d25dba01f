"""The band's step certified without another read (issue 52): where no row outside the read's band
can change its piece of the squared hinge, the step's point has an exact certificate from the read
at the point before, and the tall fit ends after two reads."""

import dask.array as da
import numpy as np
import pytest

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.plan.problem import FitPlan
from dask_streamsvm.engine.primal import newton as primal
from dask_streamsvm.engine.primal import warm
from dask_streamsvm.engine.primal.reads import Sample, Sampler, band_metric, memory_read
from dask_streamsvm.engine.primal.sums import block_sums
from dask_streamsvm.kernels.band import margin_keys

from ._helpers import noisy_linear_data
from .test_primal import check_optimum, liblinear


def _plan(y, C=1.0):
    classes, counts = np.unique(y, return_counts=True)
    return FitPlan(C=C, loss="squared_hinge", solver="memory").with_labels(classes, counts, classes)


def _read_at(X, y, plan, w):
    """The read's sums of every row at ``w``: ``(loss, dual sum, v)`` and the Hessian with I."""
    read = memory_read(X, np.searchsorted(plan.classes, y), np.ones(len(y)), plan, products=False)
    sums = read(w[None, :], np.zeros_like(w)[None, :], [0])
    totals = (float(sums.loss[0]), float(sums.alpha[0]), sums.v[0])
    return totals, np.eye(w.shape[0]) + sums.hessian[0]


def _exact(X, y, plan, w):
    """The certificate a read at ``w`` makes (the one the third read of a fit would)."""
    (loss, dual_sum, v), _ = _read_at(X, y, plan, w)
    objective = primal.loss_of(plan.loss)
    return objective.primal_value(0.5 * float(w @ w), loss), objective.newton_dual(dual_sum, v, loss)


def _keys(X, signs, costs, w, metric):
    center, scale = metric
    keys = np.empty(X.shape[0])
    margin_keys(np.ascontiguousarray(X), signs, costs, w, 1.0, center, 1.0 / scale, keys)
    return keys


def test_the_step_from_a_read_and_its_band_has_the_certificate_a_read_there_would_make():
    """A band of the rows of smallest keys, its step from a point near the optimum: no row outside
    crosses, and the certificate from the read before equals the one a read at the step's point makes."""
    X, y = noisy_linear_data(4_000, 6)
    X = X * [1, 3, 10, 0.2, 1, 50] + [0, 100, -5, 0, 7, 0]  # offsets and scales: the metric's work
    plan = _plan(y)
    signs, costs = plan.signs[0, y], plan.costs[0, y]
    best = LinearSVC(dual=False, tol=1e-10).fit(X, y)
    metric = band_metric(Sample(X[::2], y[::2], np.ones(2_000), 4_000))
    w = np.append(best.coef_.ravel(), best.intercept_)  # a point near the optimum, as a warm start's
    w[:-1] += 0.01 * np.random.default_rng(0).standard_normal(6) / metric[1]  # 0.086 from it
    keys = _keys(X, signs, costs, w, metric)
    band = np.argsort(keys)[:1_200]
    outside = np.delete(keys, band).min()
    sample = Sample(X[band], signs[band], costs[band], 4_000, outside, metric)
    totals, H = _read_at(X, y, plan, w)
    d = primal.band_step(w, w - totals[2], H, sample, plan)
    certificate = primal.band_certificate(w, d, totals, H, sample, plan)
    assert certificate is not None  # the bound holds here: the test is of the certificate's values
    primal_value, dual_value = _exact(X, y, plan, w + d)
    assert certificate.primal == pytest.approx(primal_value, rel=1e-11)
    assert certificate.dual == pytest.approx(dual_value, rel=1e-11)
    assert certificate.relative_gap < 1e-9  # the band's step is the optimum


def _at_the_hinge(n=4_000, d=6, seed=3):
    """Rows whose margins at a read's point ``W + S`` are 1 to within rounding (label +1, cost 1):
    a read sums ``x . W + x . S``, a sum at the point ``x . (W + S)``, and the two disagree on
    which of them are active.  ``(X, y, W, S)``."""
    rng = np.random.default_rng(seed)
    W, S = rng.standard_normal((1, d + 1)), 0.7 * rng.standard_normal((1, d + 1))
    P = (W + S)[0]
    X = rng.standard_normal((n, d))
    X = X[np.abs(X @ P[:-1]) > 0.3]
    X *= ((1.0 - P[-1]) / (X @ P[:-1]))[:, None]  # x . P_x + P_b = 1, up to rounding
    return X, np.ones(X.shape[0]), W, S


def test_the_band_is_subtracted_with_the_rows_the_read_counted_active():
    """The band's model and certificate subtract the band's sums from the read's: at the
    shortfalls the read took (``Sample.shortfall``), the rows it counted active are the ones taken
    away, and the rest of the Hessian is the identity and the other rows'.  Summed again at the
    point, rows at the hinge point count otherwise (the read's margin is ``x . W + x . S``): the
    difference then held ``-x x^T`` and was not positive semidefinite (-2.8 on w8a)."""
    X, y, W, S = _at_the_hinge()
    plan = _plan(np.array([-1, 1]))
    n, code = X.shape[0], plan.loss_code
    Y, C = y[None, :], np.ones((1, n))
    taken, again = np.empty((1, n)), np.empty((1, n))
    read = block_sums(X, Y, C, W, S, 1.0, code, shortfall=taken)
    point = block_sums(X, Y, C, W + S, np.zeros_like(S), 1.0, code, shortfall=again)
    flips = int(np.count_nonzero((taken > 0) != (again > 0)))
    assert flips > 0  # the case is the one to guard: the two sums disagree on some rows
    assert point.active[0] != read.active[0] or not np.allclose(point.hessian, read.hessian, atol=1e-6)
    band = Sample(X, y, C[0], n, shortfall=taken[0])
    at = primal._band_at_read((W + S)[0], band, plan)
    assert at.active[0] == read.active[0]
    np.testing.assert_allclose(
        at.hessian[0], read.hessian[0], rtol=0, atol=1e-12 * np.abs(read.hessian).max()
    )
    assert at.loss[0] == pytest.approx(read.loss[0], rel=1e-12, abs=1e-14)
    H = np.eye(X.shape[1] + 1) + read.hessian[0]  # every row in the band: the rest is the identity
    assert np.linalg.eigvalsh(H - at.hessian[0]).min() > 1.0 - 1e-9
    assert np.linalg.eigvalsh(H - point.hessian[0]).min() < 1.0 - 1e-3  # summed again: not so


@pytest.mark.parametrize("form", ["dense float64", "dense float32", "csr float32"])
def test_a_bands_sums_at_the_read_are_the_reads_in_its_precision(form):
    """The band's sums at the read's shortfalls are the read's of the same rows, in the precision
    the read summed them: float32 dense rows' Hessian in float32, CSR rows' in float64 (the read
    makes them dense as float64, or sums them in the CSR kernel), so that nothing but the order of
    the sums separates them."""
    import scipy.sparse as sp

    X, y, W, S = _at_the_hinge()
    X = X.astype(np.float32) if "float32" in form else X
    X = sp.csr_matrix(X) if form.startswith("csr") else X
    plan = _plan(np.array([-1, 1]))
    n = X.shape[0]
    taken = np.empty((1, n))
    read = block_sums(X, y[None, :], np.ones((1, n)), W, S, 1.0, plan.loss_code, shortfall=taken)
    at = primal._band_at_read((W + S)[0], Sample(X, y, np.ones(n), n, shortfall=taken[0]), plan)
    scale = np.abs(read.hessian[0]).max()
    tol = 1e-5 if form == "dense float32" else 1e-12  # float32 sums of another order: their rounding
    np.testing.assert_allclose(at.hessian[0], read.hessian[0], rtol=0, atol=tol * scale)
    np.testing.assert_allclose(at.v[0], read.v[0], rtol=0, atol=1e-12 * (1 + np.abs(read.v).max()))
    assert at.active[0] == read.active[0]


def test_a_streamed_band_keeps_the_shortfalls_its_read_took(monkeypatch):
    """The rows a read keeps as its band carry the shortfalls its sums took, row for row
    (:func:`~dask_streamsvm.engine.primal.newton.band_step` subtracts the band with them)."""
    monkeypatch.setattr(warm, "EVERY_ROW_IN_BUDGET", False)  # the rows fit the default cache: stream them
    X, y = noisy_linear_data(40_000, 6)
    seen, real = [], primal.band_step

    def spy(w, g, H, band, plan, penalty=None):
        seen.append((w.copy(), band))
        return real(w, g, H, band, plan, penalty)

    monkeypatch.setattr(primal, "band_step", spy)
    LinearSVC(dual=False, C=1.0, tol=1e-3).fit(
        da.from_array(X, chunks=10_000), da.from_array(y, chunks=10_000)
    )
    assert seen
    for w, band in seen:
        margins = band.y * (band.X @ w[:-1] + w[-1])
        assert band.shortfall is not None and band.shortfall.shape == (band.n_rows,)
        np.testing.assert_allclose(
            band.shortfall, 1.0 - margins, rtol=0, atol=1e-12 * (1 + np.abs(margins).max())
        )


def _crossing_case(direction, factor):
    """Rows all in the band but one, placed outside it so that the step ``d`` moves its margin
    straight at the hinge point (``x~`` parallel to ``d~``: the bound's Cauchy-Schwarz is an
    equality), its key ``factor`` times the step's length; ``direction``: "leaves" (active at ``w``,
    and across the hinge point after the step where ``factor < 1``) or "enters" (the reverse)."""
    rng = np.random.default_rng(7)
    X, y = noisy_linear_data(300, 4, seed=3)
    d = np.append(rng.standard_normal(4) * 0.4, 0.5)  # d_b > 0
    w = np.append(rng.standard_normal(4) * 0.5, 0.0)
    row = d[:-1] / d[-1]  # x~ = (row, 1) = d~ / d_b (bias 1, center 0, scale 1)
    length = float(np.linalg.norm(d))  # ||d~||
    change = length**2 / d[-1]  # x~ . d~: the row's margin moves by this for the label +1
    label = 1 if direction == "leaves" else 0  # margin rises (+1) or falls (-1)
    sign = 1.0 if label == 1 else -1.0
    margin = 1.0 - sign * factor * change  # its key: factor x change = factor ||x~|| ||d~||
    w[-1] = sign * margin - row @ w[:-1]  # the row's margin at w is that
    X, y = np.vstack([X, row]), np.append(y, label)
    plan = _plan(y)
    signs, costs = plan.signs[0, y], plan.costs[0, y]
    metric = (np.zeros(4), np.ones(4))
    keys = _keys(X, signs, costs, w, metric)
    assert keys[-1] == pytest.approx(factor * length, rel=1e-12)
    band = Sample(X[:-1], signs[:-1], costs[:-1], len(y), keys[-1], (np.zeros(4), np.ones(4)))
    totals, H = _read_at(X, y, plan, w)
    return X, y, plan, w, d, totals, H, band


@pytest.mark.parametrize("direction", ["leaves", "enters"])
def test_a_row_just_outside_the_band_that_would_cross_is_refused(direction, monkeypatch):
    """The bound is exact to the percent: 1% inside it, the step's certificate is the exact one; 1%
    past it, none (the fit reads again); and a bound loosened by 2% certifies a wrong value, which
    is what this test exists to catch."""
    X, y, plan, w, d, totals, H, band = _crossing_case(direction, 1.01)
    held = primal.band_certificate(w, d, totals, H, band, plan)
    assert held is not None
    assert (held.primal, held.dual) == pytest.approx(_exact(X, y, plan, w + d), rel=1e-12)

    X, y, plan, w, d, totals, H, band = _crossing_case(direction, 0.99)
    assert primal.band_certificate(w, d, totals, H, band, plan) is None
    monkeypatch.setattr(primal, "BOUND_SLACK", -0.02)  # loosened: the crossing row passes
    wrong = primal.band_certificate(w, d, totals, H, band, plan)
    exact_primal, exact_dual = _exact(X, y, plan, w + d)
    assert wrong is not None
    assert abs(wrong.primal - exact_primal) + abs(wrong.dual - exact_dual) > 1e-6 * abs(exact_primal)


def test_a_band_knows_the_smallest_key_it_left_out():
    """Whatever cut the rows (the capacity, the bytes, the bound set up front from the rows to
    expect), the band's ``outside`` is the smallest key of a row not kept."""
    rng = np.random.default_rng(2)
    X, y = noisy_linear_data(20_000, 3)
    keys = rng.random(20_000)
    keys[rng.random(20_000) < 0.05] = np.inf  # rows of no weight
    for capacity, max_bytes, expected in [(1_000, None, 20_000), (1_000, 20_000, None), (500, None, None)]:
        band = Sampler(capacity, max_bytes, expected=expected)
        for lo in range(0, 20_000, 2_000):
            part = slice(lo, lo + 2_000)
            band.add_rows(lo // 2_000, X[part], y[part], np.ones(2_000), keys[part])
        sample = band.sample()
        ordered = np.sort(keys)
        assert band.outside == ordered[sample.n_rows]
        assert np.sort(sample.X[:, 0]).tolist() == np.sort(X[np.argsort(keys)[: sample.n_rows], 0]).tolist()


def _tall(raw):
    X, y = noisy_linear_data(200_000, 10)
    if raw:  # 0..255, as colour values: an offset and a scale per column
        X = np.round((X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0)) * 255)
    return X, y


@pytest.mark.parametrize("raw", [False, True])
@pytest.mark.parametrize("C", [0.01, 1.0])
def test_a_tall_fit_is_certified_after_two_reads(raw, C, monkeypatch):
    """The first read keeps the sample, the second reads at its solution and keeps the band, whose
    step is certified there: two reads, at LIBLINEAR's optimum within the certified gap."""
    monkeypatch.setattr(warm, "EVERY_ROW_IN_BUDGET", False)  # the rows fit the default cache: stream them
    X, y = _tall(raw)
    clf = LinearSVC(dual=False, C=C, tol=1e-3).fit(
        da.from_array(X, chunks=25_000), da.from_array(y, chunks=25_000)
    )
    assert [record["pass"] for record in clf.history_] == [0, 1]
    assert clf.history_[-1]["band_certified"] and clf.history_[-1]["rows_read"] == 2 * len(y)
    check_optimum(clf, X, y, C * np.ones(len(y)), liblinear(X, y, C=C))


def test_a_band_too_narrow_for_the_bound_reads_again(monkeypatch):
    """A band of 1% of the rows: its step moves rows outside it further than their keys allow, the
    step is not certified from the read, and the fit reads again (to the same exact certificate)."""
    monkeypatch.setattr(primal, "BAND_SHARE", 0.01)
    monkeypatch.setattr(warm, "EVERY_ROW_IN_BUDGET", False)  # the rows fit the default cache: stream them
    X, y = _tall(False)
    clf = LinearSVC(dual=False, C=1.0, tol=1e-3).fit(
        da.from_array(X, chunks=25_000), da.from_array(y, chunks=25_000)
    )
    assert len(clf.history_) >= 3 and not clf.history_[1]["band_certified"]
    check_optimum(clf, X, y, np.ones(len(y)), liblinear(X, y, C=1.0))


def test_the_bands_of_two_parts_joined_keep_the_smallest_key_either_left_out():
    """Up a cluster's tree (engine/cluster/tree.py): a row either part left out is outside the
    joined band, so the joined band's bound is the smaller of the two."""
    from dask_streamsvm.engine.cluster.tree import _joined_bands

    X, y = noisy_linear_data(10, 2)
    metric = (np.zeros(2), np.ones(2))
    first = Sample(X[:4], y[:4], np.ones(4), 40, 0.3, metric)
    second = Sample(X[4:], y[4:], np.ones(6), 60, 0.2, metric)
    for a, b in ((first, second), (second, first)):
        (joined,) = _joined_bands([a], [b])
        assert joined.outside == 0.2 and joined.metric is metric and joined.n_rows == 10
        assert joined.rows_seen == 100
        assert joined.shortfall is None  # neither part's read kept its shortfalls
    # The shortfalls each part's read took go up with their rows (newton.band_step subtracts them).
    first.shortfall, second.shortfall = np.arange(4.0), 10.0 + np.arange(6.0)
    (joined,) = _joined_bands([first], [second])
    np.testing.assert_array_equal(joined.shortfall, np.r_[np.arange(4.0), 10.0 + np.arange(6.0)])
    np.testing.assert_array_equal(joined.X, X)
    assert joined.nbytes == X.nbytes + y.nbytes + 10 * 8 + joined.shortfall.nbytes  # the shortfalls held too


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_band_kernels_margins_are_within_the_rounding_the_bound_counts(dtype):
    """The band's row kernels sum a margin in any order (``kernels/newton.py: DOT_FLAGS``: its
    additions reassociated, so that a row's sum does not wait on its last addition): each margin, the
    keys' and the shortfalls' (``margin_keys``, ``piece_rows``, ``row_margins``), is within the
    ``(D + 4)`` epsilons of ``sum_j |x_j w_j|`` that ``newton._band_terms`` counts for it, of the
    exactly rounded sum, on rows of unit and 0..255 scale and a margin near the hinge point."""
    import math

    from dask_streamsvm.kernels import band
    from dask_streamsvm.kernels.band import piece_rows, row_margins
    from dask_streamsvm.kernels.newton import DOT_FLAGS

    assert DOT_FLAGS == {"reassoc", "contract"}  # no NaN or infinity flag: a NaN row stays NaN
    for kernel in (band.margin_keys, band.piece_rows, band.row_margins, band.metric_norm):
        assert kernel.targetoptions["fastmath"] == DOT_FLAGS, kernel
    rng = np.random.default_rng(8)
    n, d, bias = 400, 61, 1.0
    X = np.vstack([rng.standard_normal((n // 2, d)), rng.integers(0, 256, (n // 2, d))]).astype(dtype)
    w = rng.standard_normal(d + 1) * np.r_[np.full(d, 0.01), 1.0]
    y, cost = np.where(rng.random(n) < 0.5, 1.0, -1.0), np.ones(n)
    center, inv_scale = np.zeros(d), np.ones(d)
    terms = [[float(x) * float(v) for x, v in zip(row, w[:-1], strict=True)] + [bias * w[-1]] for row in X]
    exact = np.array([math.fsum(t) for t in terms])
    bound = (d + 1 + 4) * np.finfo(np.float64).eps * np.array([math.fsum(map(abs, t)) for t in terms])
    z = np.empty(n)
    row_margins(np.ascontiguousarray(X), w, bias, z)
    keys, shortfall = np.empty(n), np.empty(n)
    margin_keys(np.ascontiguousarray(X), y, cost, w, bias, center, inv_scale, keys)
    piece_rows(X, y, cost, w, bias, center, inv_scale, shortfall, np.empty(n), np.zeros(d + 1), np.zeros(2))
    lengths = np.sqrt(1.0 + (X.astype(np.float64) ** 2).sum(axis=1))
    assert np.all(np.abs(z - exact) <= bound)
    # the shortfall 1 - y z rounds once more, and taking z back from it once more again
    twice = 4 * np.finfo(float).eps * (1.0 + np.abs(exact))
    assert np.all(np.abs(y * (1.0 - shortfall) - exact) <= bound + twice)
    key_exact = np.abs(y * exact - 1.0) / lengths
    assert np.all(np.abs(keys - key_exact) <= (bound + 1e-15) / lengths + 1e-12 * key_exact)


def _corner_case(shortfall_share, features=15, n=2_000):
    """Rows in [-1, 1] of ``features`` columns and one row at the corner ``x = sign(d_x)``, whose
    margin the step ``d`` (every coordinate ``+-delta``, the bias's ``+delta``; bias 1) raises by
    the most a step moves any margin, ``sum_j |d_j| max_i |x~_ij| = delta D``: active at ``w`` with
    a shortfall of ``shortfall_share`` times that rise, so that the step carries it across the
    hinge point where the share is below 1.  ``(X, y, plan, w, d, held, totals, H, column_max)`` of
    a read of every row at ``w`` in memory."""
    rng = np.random.default_rng(11)
    D = features + 1
    X = rng.uniform(-1.0, 1.0, size=(n, features))
    y = (X @ rng.standard_normal(features) > 0).astype(int)
    delta = 1e-3
    signs = np.where(rng.random(D) < 0.5, -1.0, 1.0)
    signs[-1] = 1.0
    d = delta * signs
    corner = signs[:-1].copy()  # x~ . d = delta D: the column reach, reached
    rise = delta * D
    w = np.append(rng.standard_normal(features), 0.0)  # margins spread: few rows near the hinge
    w[-1] = (1.0 - shortfall_share * rise) - corner @ w[:-1]  # its margin (label 1): 1 - share x rise
    X, y = np.vstack([X, corner]), np.append(y, 1)
    plan = _plan(y)
    read = memory_read(X, np.searchsorted(plan.classes, y), np.ones(len(y)), plan, products=False)
    sums = read(w[None, :], np.zeros_like(w)[None, :], [0])
    totals = (float(sums.loss[0]), float(sums.alpha[0]), sums.v[0])
    H = np.eye(D) + sums.hessian[0]
    column_max = np.append(np.abs(X).max(axis=0), 1.0)
    assert np.all(column_max == 1.0) and primal.column_reach(d, column_max) == pytest.approx(rise)
    return X, y, plan, w, d, sums.held, totals, H, column_max


def _holds_row(band, row):
    return bool(np.any(np.all(band.X == row, axis=1)))


@pytest.mark.parametrize("share", [0.999, 1.001])
def test_in_memory_a_steps_band_holds_every_row_it_could_carry_across(share, monkeypatch):
    """``step_band``: the rows of an in-memory read a step could carry across the hinge point, cut
    once the step is known.  The corner row, moved by the most a step moves a margin straight at
    the hinge point, is in the band with a shortfall 0.1% below that (it crosses) and out 0.1% above
    it (it does not), and either way the step's certificate is the one a read at its point makes.
    With the step's reach halved (the bound loosened) the crossing row is left out and the
    certificate is wrong, which is what this test exists to catch."""
    X, y, plan, w, d, held, totals, H, column_max = _corner_case(share)
    band = primal.step_band(w, d, held, 0, column_max, plan)
    assert band is not None and band.n_rows < 0.1 * len(y)
    assert _holds_row(band, X[-1]) is (share < 1.0)
    certificate = primal.band_certificate(w, d, totals, H, band, plan)
    assert certificate is not None
    assert (certificate.primal, certificate.dual) == pytest.approx(_exact(X, y, plan, w + d), rel=1e-12)
    if share > 1.0:
        return
    real = primal.column_reach
    monkeypatch.setattr(primal, "column_reach", lambda d, column_max: 0.5 * real(d, column_max))
    band = primal.step_band(w, d, held, 0, column_max, plan)
    assert not _holds_row(band, X[-1])
    wrong = primal.band_certificate(w, d, totals, H, band, plan)
    exact_primal, exact_dual = _exact(X, y, plan, w + d)
    assert wrong is not None
    assert abs(wrong.primal - exact_primal) + abs(wrong.dual - exact_dual) > 1e-9 * abs(exact_primal)


def test_in_memory_a_steps_band_certifies_only_its_own_step():
    """A band cut for a step ``d`` certifies no longer step: the corner row would cross it."""
    X, y, plan, w, d, held, totals, H, column_max = _corner_case(1.001)
    band = primal.step_band(w, d, held, 0, column_max, plan)
    assert primal.band_certificate(w, 1.01 * d, totals, H, band, plan) is None


@pytest.mark.parametrize("share, cut", [(0.09, True), (0.11, False)])
def test_in_memory_a_band_of_more_than_a_tenth_of_the_rows_is_not_cut(share, cut):
    """:data:`~.newton.STEP_BAND_SHARE`: a step whose band would hold more than 10% of the rows
    leaves its certificate to the next read (its band's copy and sums would cost about as much)."""
    n, D = 10_000, 4
    rng = np.random.default_rng(5)
    X = rng.uniform(-1.0, 1.0, size=(n, D - 1))
    shortfall = np.full(n, 5.0)
    shortfall[: int(share * n)] = 1e-6  # rows at the hinge point: in the band
    plan = _plan(np.array([0, 1]))
    held = [(X, np.ones(n), np.ones(n), shortfall, np.zeros(D))]
    band = primal.step_band(np.zeros(D), np.full(D, 1e-4), held, 0, np.ones(D), plan)
    assert (band is not None) is cut
    if cut:
        assert band.n_rows == int(share * n)
        np.testing.assert_array_equal(band.shortfall, shortfall[: int(share * n)])


@pytest.mark.parametrize(
    "raw, C", [(False, 1.0), (True, 0.01), (True, 1.0)]
)  # (False, 0.01): read 2 certifies itself
def test_in_memory_the_last_step_is_certified_from_its_band_one_read_sooner(raw, C, monkeypatch):
    """Rows in memory (a NumPy array, or every row the first read kept): the read whose step reaches
    the optimum certifies that step from its band, and the read that would only confirm it is not
    made; the certificate is a true bound on the distance from LIBLINEAR's optimum.  Without the
    band (STEP_BAND_SHARE 0) the same fit reads once more."""
    X, y = _tall(raw)
    X = X.astype(np.float32)
    clf = LinearSVC(dual=False, C=C, tol=1e-3).fit(X, y)
    assert clf.history_[-1]["band_certified"]
    reference = liblinear(X, y, C=C)
    check_optimum(clf, X, y, C * np.ones(len(y)), reference)
    streamed = LinearSVC(dual=False, C=C, tol=1e-3).fit(
        da.from_array(X, chunks=50_000), da.from_array(y, chunks=50_000)
    )
    assert streamed.history_[0]["sample_rows"] == len(y)  # every row the first read kept, solved in memory
    assert streamed.history_[-1]["band_certified"]
    check_optimum(streamed, X, y, C * np.ones(len(y)), reference)
    monkeypatch.setattr(primal, "STEP_BAND_SHARE", 0.0)
    again = LinearSVC(dual=False, C=C, tol=1e-3).fit(X, y)
    assert not any(record["band_certified"] for record in again.history_)
    assert len(again.history_) == len(clf.history_) + 1


def _band_certified_step(X, y, C, monkeypatch):
    """The last in-memory band certificate of a fit of ``X``: ``(certificate, w + d)``."""
    seen, real = [], primal.band_certificate

    def spy(w, d, totals, H, band, plan, penalty=None):
        certificate = real(w, d, totals, H, band, plan, penalty)
        if certificate is not None and band.shortfall_out is not None:
            seen.append((certificate, w + d))
        return certificate

    monkeypatch.setattr(primal, "band_certificate", spy)
    LinearSVC(dual=False, C=C, tol=1e-3).fit(X, y)
    monkeypatch.setattr(primal, "band_certificate", real)
    assert seen
    return seen[-1]


def test_a_bands_certificate_on_float32_rows_is_a_float64_reads(monkeypatch):
    """The band's certificate takes the step's point's loss and dual point from the read's Hessian
    (``v - H d``, ``w . H d``), so the Hessian of float32 rows is summed in float64
    (``HESSIAN_IN_DATA_PRECISION`` False): the certificate is the one a float64 read at the step's
    point makes, to 1e-11.  Summed in float32 its dual value on these 0..255 rows was 7e-8 of the
    primal above that read's, a certificate of more than it proved, which this test catches."""
    from dask_streamsvm.engine.primal import carried, sums

    X, y = _tall(True)
    X = X.astype(np.float32)
    for C in (0.01, 1.0):
        certificate, point = _band_certified_step(X, y, C, monkeypatch)
        exact = _exact(X.astype(np.float64), y, _plan(y, C), point)
        assert abs(certificate.primal - exact[0]) <= 1e-11 * exact[0]
        assert abs(certificate.dual - exact[1]) <= 1e-11 * exact[0]
    for module in (sums, carried):
        monkeypatch.setattr(module, "HESSIAN_IN_DATA_PRECISION", True)
    certificate, point = _band_certified_step(X, y, 1.0, monkeypatch)
    exact = _exact(X.astype(np.float64), y, _plan(y, 1.0), point)
    assert certificate.dual - exact[1] > 1e-9 * exact[0]  # above the read's: more than it proved

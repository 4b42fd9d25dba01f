"""The hinge loss from a sample (issue 52): the smoothed Newton solver in memory, certified by the
hinge's own dual, and the band of a read with the other rows held as an offset, out of core."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as LiblinearSVC

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine import choice
from dask_streamsvm.engine.plan.certificate import Certificate
from dask_streamsvm.engine.plan.problem import FitPlan
from dask_streamsvm.engine.primal import sample_band, smoothed, warm
from dask_streamsvm.engine.primal.newton import BAND_SHARE, BOUND_SLACK, band_holds
from dask_streamsvm.engine.primal.reads import Sample
from dask_streamsvm.engine.primal.warm import sample_rows

from ._helpers import load_libsvm_dataset, noisy_linear_data

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")


def hinge_primal(X, sign, cost, w, bias=1.0):
    """``1/2 ||w||^2 + sum C_i max(0, 1 - y_i (x_i . w[:-1] + bias w[-1]))`` in plain NumPy."""
    margin = sign * (np.asarray(X @ w[:-1]).ravel() + bias * w[-1])
    return 0.5 * float(w @ w) + float(cost @ np.maximum(0.0, 1.0 - margin))


def liblinear_hinge(X, y, C, converged=False):
    """LIBLINEAR's hinge solution (``-s 3``, its bias a feature of value 1, as ours), as ``w``.

    At ``tol=1e-12`` LIBLINEAR's shrinking can cycle until its iteration cap on some permutations
    (C = 0.5 on 4,000 Gaussian rows: 7 of 12 seeds, stopped up to 2.5e-5 above the optimum; on a9a
    every seed), so a capped fit is only an upper bound on the optimum. ``converged=True`` returns
    the first seed's fit that stopped on its tolerance, for a test that needs the optimum itself."""
    for seed in range(REFERENCE_SEEDS if converged else 1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            ref = LiblinearSVC(loss="hinge", C=C, tol=1e-12, max_iter=200_000, random_state=seed).fit(X, y)
        if not converged or not any(issubclass(w.category, ConvergenceWarning) for w in caught):
            return np.append(ref.coef_.ravel(), ref.intercept_)
    raise AssertionError(f"LIBLINEAR did not converge at tol=1e-12 from any of {REFERENCE_SEEDS} seeds")


REFERENCE_SEEDS = 40


def raw_scale_data(n=20_000, seed=0):
    """Three columns of values 0..255 (skin's scale), labels of a noisy hyperplane through them."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 256, size=(n, 3)).astype(np.float64)
    y = np.where(X @ [1.0, -2.0, 1.0] + rng.normal(0.0, 40.0, n) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("C", [0.05, 1.0])
@pytest.mark.parametrize("layout", ["csr", "dense32"])
def test_the_smoothed_newton_solver_reaches_liblinears_hinge_optimum_with_a_true_gap(C, layout):
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:6_000], y[:6_000]
    sign = np.where(y > 0, 1.0, -1.0)
    rows = smoothed.Rows(
        X if layout == "csr" else X.toarray().astype(np.float32), sign, np.full(len(y), C), 1.0
    )
    w, certificate, _ = smoothed.solve_smoothed(rows, tol=1e-10)
    theirs = hinge_primal(X, sign, np.full(len(y), C), liblinear_hinge(X, y, C))
    ours = hinge_primal(X, sign, np.full(len(y), C), w)
    assert certificate.primal == pytest.approx(ours, rel=1e-11)  # the primal is the model's
    assert certificate.relative_gap <= 1e-10
    assert certificate.dual <= theirs * (1 + 1e-12)  # weak duality: never more than proved
    assert ours <= theirs * (1 + 1e-9)


def test_raw_scale_features_converge_where_coordinate_descent_stalls():
    """Skin's scale (0..255): the dual solvers stall near a gap of 1 (issue 52); Newton on the
    smoothed hinge is invariant to the columns' scales and certifies 1e-8."""
    X, y = raw_scale_data()
    sign = y.astype(np.float64)
    w, certificate, info = smoothed.solve_smoothed(
        smoothed.Rows(X, sign, np.full(len(y), 1.0), 1.0), tol=1e-8
    )
    assert certificate.relative_gap <= 1e-8
    assert certificate.primal == pytest.approx(hinge_primal(X, sign, np.ones(len(y)), w), rel=1e-12)
    assert info["newton_steps"] < 200


def test_the_certificate_is_the_hinges_not_the_smoothed_losses():
    """Stopped at a coarse smoothing (one stage, mu = MU_START), the gap is the hinge problem's: its
    primal the model's hinge objective, its dual a feasible point's, below LIBLINEAR's optimum."""
    X, y = noisy_linear_data(3_000, 5)
    sign = np.where(y > 0, 1.0, -1.0)
    rows = smoothed.Rows(X, sign, np.ones(len(y)), 1.0)
    w, certificate, info = smoothed.solve_smoothed(rows, tol=1e-12, max_stages=1)
    assert info["stages"] == 1
    optimum = hinge_primal(X, sign, np.ones(len(y)), liblinear_hinge(X, y, 1.0, converged=True))
    assert certificate.primal == pytest.approx(hinge_primal(X, sign, np.ones(len(y)), w), rel=1e-12)
    assert certificate.dual <= optimum * (1 + 1e-12) <= certificate.primal * (1 + 1e-12)
    assert certificate.relative_gap > 1e-6  # one stage of smoothing leaves a gap: the test sees it


def test_the_smoothed_steps_kernels_are_the_numpy_formulas():
    """kernels/band.py's clipped_terms and clipped_slope against the formulas in NumPy, with rows on
    every piece and on its ends (a shortfall of exactly 0 and of exactly mu) and rows of cost 0."""
    from dask_streamsvm.kernels.band import clipped_slope, clipped_terms

    rng = np.random.default_rng(3)
    mu = 0.25
    m = np.concatenate([rng.uniform(-1.0, 2.5, 4_000), [1.0, 1.0 - mu, 0.9, 1.1]])
    cost = np.concatenate([rng.uniform(0.0, 3.0, 4_000), [1.0, 2.0, 0.0, 0.0]])
    cost[::7] = 0.0
    s = 1.0 - m
    alpha, weights = np.full(m.size, np.nan), np.full(m.size, np.nan)
    loss, alpha_sum, quadratic = clipped_terms(m, cost, mu, alpha, weights)
    zone = (s > 0.0) & (s < mu) & (cost > 0.0)
    np.testing.assert_array_equal(alpha, cost * np.clip(s / mu, 0.0, 1.0))
    np.testing.assert_array_equal(weights, np.where(zone, cost / mu, 0.0))
    assert loss == pytest.approx(float(cost @ np.maximum(s, 0.0)), rel=1e-13)
    assert alpha_sum == pytest.approx(float(alpha.sum()), rel=1e-13)
    assert quadratic == pytest.approx(float(cost[zone].sum()), rel=1e-13)
    m[5] = np.nan  # a margin that is not a number leaves no certificate: the sums are NaN
    loss, alpha_sum, _ = clipped_terms(m, cost, mu, alpha, weights)
    assert np.isnan(loss) and np.isnan(alpha_sum) and np.isnan(alpha[5]) and weights[5] == 0.0
    m[5] = 0.5
    dm = rng.normal(0.0, 1.0, m.size)
    for t in (0.0, 0.3, 1.0, 4.0):
        r = 1.0 - m - t * dm
        value, curvature = clipped_slope(m, dm, cost, t, mu)
        assert value == pytest.approx(float((cost * dm) @ np.clip(r / mu, 0.0, 1.0)), rel=1e-12, abs=1e-12)
        inside = (r > 0.0) & (r < mu)
        assert curvature == pytest.approx(float((cost * dm * dm)[inside].sum()), rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_band_metric_is_each_columns_mean_and_deviation(dtype):
    """reads.columns_metric (kernels/band.py: column_moments) against NumPy in float64, a constant
    column's scale 1 (a column of none), on C- and Fortran-ordered rows."""
    from dask_streamsvm.engine.primal.reads import columns_metric

    rng = np.random.default_rng(5)
    X = (rng.uniform(0.0, 255.0, (3_000, 6)) + np.arange(6) * 1000.0).astype(dtype)
    X[:, 2] = 7.0
    exact = X.astype(np.float64)
    deviation = exact.std(axis=0)
    deviation[2] = 1.0
    for rows in (X, np.asfortranarray(X)):
        center, scale = columns_metric(rows)
        np.testing.assert_allclose(center, exact.mean(axis=0), rtol=1e-13)
        np.testing.assert_allclose(scale, deviation, rtol=1e-10)


def _smoothings_seen(monkeypatch):
    """The list each line search of :func:`smoothed.solve_smoothed` appends its stage's ``mu`` to."""
    seen = []
    real = smoothed.line_minimum

    def spy(g0, d, cost, m, dm, mu):
        seen.append(mu)
        return real(g0, d, cost, m, dm, mu)

    monkeypatch.setattr(smoothed, "line_minimum", spy)
    return seen


def test_each_stage_divides_the_smoothing_by_mu_factor(monkeypatch):
    seen = _smoothings_seen(monkeypatch)
    X, y = noisy_linear_data(2_000, 4)
    smoothed.solve_smoothed(smoothed.Rows(X, np.where(y > 0, 1.0, -1.0), np.ones(len(y)), 1.0), tol=1e-9)
    stages = sorted(set(seen), reverse=True)
    assert stages[0] == smoothed.MU_START == 1.0
    assert np.allclose(np.array(stages[:-1]) / np.array(stages[1:]), smoothed.MU_FACTOR)
    seen.clear()
    start = np.zeros(5)
    smoothed.solve_smoothed(
        smoothed.Rows(X, np.where(y > 0, 1.0, -1.0), np.ones(len(y)), 1.0), tol=1e-9, start=start
    )
    assert max(seen) == smoothed.MU_WARM == 0.01  # a start near the solution skips the wide stages


def test_a_stage_out_of_steps_backs_off_to_a_smoother_one(monkeypatch):
    """A warm start far from the solution at MU_WARM: the stage that runs out of its STAGE_STEPS goes
    back to a smoothing MU_FACTOR coarser, not finer (w8a from a 10% sample's solution: 687 Newton
    steps, stopped at a gap of 0.15 with the smoothing only divided; 99 steps to 1e-3 backing off)."""
    X, y = noisy_linear_data(2_000, 4)
    rows = smoothed.Rows(X, np.where(y > 0, 1.0, -1.0), np.ones(len(y)), 1.0)
    _, optimum, _ = smoothed.solve_smoothed(rows, tol=1e-10)
    seen = _smoothings_seen(monkeypatch)
    monkeypatch.setattr(smoothed, "STAGE_STEPS", 3)  # so that the warm stage runs out of steps
    _, certificate, _ = smoothed.solve_smoothed(rows, tol=1e-4, start=np.full(5, 40.0))
    assert seen[0] == smoothed.MU_WARM
    backed = [(a, b) for a, b in zip(seen, seen[1:], strict=False) if b > a]
    assert backed and all(b == pytest.approx(smoothed.MU_FACTOR * a) for a, b in backed)
    # up to MU_START, and only until a stage ends on its gap: no stage is smoother than MU_START
    assert max(seen) == smoothed.MU_START and len(backed) <= 2
    # a true certificate, in 3 steps a stage
    assert certificate.primal >= optimum.primal * (1 - 1e-12)
    assert (certificate.primal - optimum.primal) / certificate.primal <= certificate.relative_gap + 1e-12


def test_the_line_search_finds_the_minimum_along_the_direction():
    rng = np.random.default_rng(3)
    n = 500
    m, dm, cost = rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n), rng.uniform(0.1, 2.0, n)
    g0, d = rng.normal(size=4), rng.normal(size=4)
    mu = 0.1

    def value(t):
        s = 1.0 - m - t * dm
        inner = np.where(s >= mu, s - 0.5 * mu, np.where(s > 0.0, s * s / (2.0 * mu), 0.0))
        return t * float(g0 @ d) + 0.5 * t * t * float(d @ d) + float(cost @ inner)

    t = smoothed.line_minimum(g0, d, cost, m, dm, mu)
    grid = np.linspace(0.0, 5.0, 50_001)
    best = grid[np.argmin([value(s) for s in grid])]
    assert t == pytest.approx(best, abs=2e-4)
    assert value(t) <= min(value(t - 1e-6), value(t + 1e-6)) + 1e-12


def test_an_offset_is_rows_held_on_the_linear_piece():
    """The band's problem with the held rows' sums as an offset has the full problem's optimum where
    the held rows stay on their pieces: LIBLINEAR's, on every row."""
    X, y = noisy_linear_data(4_000, 5, seed=2)
    sign = np.where(y > 0, 1.0, -1.0)
    cost = np.full(len(y), 0.5)
    w_star = liblinear_hinge(X, y, 0.5, converged=True)
    s = 1.0 - sign * (X @ w_star[:-1] + w_star[-1])
    held = s > 0.5  # far inside the margin: on the linear piece at the optimum
    gone = s < -0.5  # far outside: no loss
    band = ~held & ~gone
    Xa = np.hstack([X, np.ones((len(y), 1))])
    u = Xa[held].T @ (cost[held] * sign[held])
    rows = smoothed.Rows(X[band], sign[band], cost[band], 1.0)
    w, certificate, _ = smoothed.solve_smoothed(rows, tol=1e-11, offset=(u, float(cost[held].sum())))
    optimum = hinge_primal(X, sign, cost, w_star)
    assert certificate.primal == pytest.approx(hinge_primal(X, sign, cost, w), rel=1e-11)
    assert certificate.dual <= optimum * (1 + 1e-12)
    assert certificate.primal == pytest.approx(optimum, rel=1e-9)


def _plan(y, C=1.0):
    classes, counts = np.unique(y, return_counts=True)
    return FitPlan(C=C, loss="hinge", solver="band").with_labels(classes, counts, classes)


def test_a_held_row_that_would_cross_the_hinge_point_refuses_the_bound():
    """A row left out of the band with its key just above (then just below) the step's length in
    the band's metric, on a step straight at it: the bound holds only where it cannot cross, and
    BOUND_SLACK is what keeps a key equal to the length out."""
    rng = np.random.default_rng(5)
    w = np.append(rng.normal(size=3), 0.2)
    d = np.append(rng.normal(size=3) * 0.1, 0.05)
    metric = (np.zeros(3), np.ones(3))
    length = float(np.linalg.norm(d))  # center 0, scale 1, bias 1: d~ = d
    band = Sample(
        np.zeros((1, 3)), np.ones(1), np.ones(1), 10, outside=length * (1 + 10 * BOUND_SLACK), metric=metric
    )
    assert band_holds(w, d, band, 1.0)
    band.outside = length * (1 + 0.1 * BOUND_SLACK)  # within the slack: refused
    assert not band_holds(w, d, band, 1.0)
    band.outside = 0.999 * length  # a row that the step can carry across: refused
    assert not band_holds(w, d, band, 1.0)


def test_the_held_rows_sums_are_taken_by_the_reads_own_shortfalls():
    """A band row exactly at the hinge point: the offset subtracts the band's rows the read counted
    on the linear piece (shortfall > 0), by the shortfalls the read recorded, not recomputed ones."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    band = Sample(
        X, np.array([1.0, -1.0, 1.0]), np.array([2.0, 3.0, 5.0]), 10, shortfall=np.array([0.5, 0.0, -1e-17])
    )
    u = np.array([10.0, 20.0, 30.0])
    sums = sample_band.BandSums(loss=7.0, held=9.0, u=u, band=band)
    offset_u, offset_S = sums.offset(1.0)
    assert offset_S == 9.0 - 2.0  # only the first row (s = 0.5 > 0) was the read's
    assert np.array_equal(offset_u, u - 2.0 * np.array([1.0, 0.0, 1.0]))


def _dask(X, y, n_partitions=10):
    step = -(-X.shape[0] // n_partitions)
    return da.from_array(X, chunks=(step, X.shape[1])), da.from_array(y, chunks=step)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("scale", ["unit", "raw"])
def test_auto_on_a_dask_collection_trains_the_hinge_from_a_sample_in_two_or_three_reads(scale):
    X, y = noisy_linear_data(60_000, 8, seed=4)
    if scale == "raw":
        X = np.clip(np.round(X * 40 + 128), 0, 255)
    Xd, yd = _dask(X.astype(np.float32), y)
    clf = LinearSVC(loss="hinge", C=0.1, tol=1e-4, cache_bytes="10%").fit(Xd, yd)
    assert {r["solver"] for r in clf.history_} == {"band"}
    assert clf.n_iter_ <= 2  # reads after the one that kept the sample
    assert clf.duality_gap_ <= 1e-4
    X32 = X.astype(np.float32).astype(np.float64)
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(hinge_primal(X32, sign, np.full(len(y), 0.1), w), rel=1e-10)
    reference, certificate, _ = smoothed.solve_smoothed(
        smoothed.Rows(X32, sign, np.full(len(y), 0.1), 1.0), tol=1e-10
    )
    optimum = certificate.primal
    assert (clf.objective_ - optimum) / optimum <= clf.duality_gap_ + 1e-9
    assert clf.objective_ * (1 - clf.duality_gap_) <= optimum * (1 + 1e-9)  # the dual is below it


def test_the_band_fits_the_cache_and_certifies_from_the_bound_when_its_share_is_wide():
    """The band takes at most ``cache_bytes``; with a wide band the bound holds and the fit ends
    after the read at the sample's solution, its band's solution certified without another read."""
    X, y = noisy_linear_data(40_000, 6, seed=1)
    Xd, yd = _dask(X, y)
    clf = LinearSVC(loss="hinge", C=0.1, tol=1e-6, cache_bytes="40%").fit(Xd, yd)
    last = clf.history_[-1]
    assert last["band_bytes"] <= 0.4 * X.nbytes * 1.2  # the rows' bytes, labels and costs
    assert clf.n_iter_ == 1 and last["band_certified"]
    assert clf.duality_gap_ <= 1e-6
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(
        hinge_primal(X, np.where(y > 0, 1.0, -1.0), np.full(len(y), 0.1), w), rel=1e-10
    )


def test_one_vs_rest_on_three_classes_and_sparse_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30_000, 5))
    y = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((30_000, 3)), axis=1)
    Xs = sp.csr_matrix(X)
    step = 3_000
    Xd = da.from_array(X, chunks=(step, 5)).map_blocks(sp.csr_matrix, dtype=np.float64, meta=Xs[:0])
    clf = LinearSVC(loss="hinge", C=0.5, tol=1e-5, cache_bytes="10%").fit(Xd, da.from_array(y, chunks=step))
    assert {r["solver"] for r in clf.history_} == {"band"}
    assert np.all(np.asarray(clf.duality_gap_) <= 1e-5)
    for c in range(3):
        sign = np.where(y == c, 1.0, -1.0)
        w = np.append(clf.coef_[c], clf.intercept_[c])
        assert clf.objective_[c] == pytest.approx(hinge_primal(X, sign, np.full(len(y), 0.5), w), rel=1e-10)


def test_few_rows_the_sample_is_the_data_and_its_solve_is_the_fit():
    X, y = noisy_linear_data(3_000, 4)
    Xd, yd = _dask(X, y, 3)
    clf = LinearSVC(loss="hinge", C=1.0, tol=1e-8).fit(Xd, yd)
    assert clf.n_iter_ == 0 and clf.history_[-1]["solver"] == "band"
    assert clf.duality_gap_ <= 1e-8
    optimum = hinge_primal(X, np.where(y > 0, 1.0, -1.0), np.ones(len(y)), liblinear_hinge(X, y, 1.0))
    assert clf.objective_ * (1 - clf.duality_gap_) <= optimum * (1 + 1e-9)


def test_a_sample_of_every_short_row_is_solved_by_dual_coordinate_descent():
    """A sample that holds every row is the fit: rows fewer than ``SMOOTHED_MIN_RATIO`` times the
    model's width are solved by dual coordinate descent (the smoothed Newton took 639 steps and 84 s
    on 3,000 x 1,500 sparse rows, stopping at a gap of 0.145), then by the smoothed Newton from its
    point where it stops short of ``tol``; taller ones by the smoothed Newton alone.  Each reaches
    LIBLINEAR's optimum within its gap."""
    assert sample_band.SMOOTHED_MIN_RATIO == 100
    X, y = noisy_linear_data(600, 4, seed=3)
    sign = np.where(y > 0, 1.0, -1.0)
    for n, by in ((499, "dual"), (500, "newton")):  # 100 times the width: 4 features and the intercept
        Xd, yd = _dask(X[:n], y[:n], 2)
        clf = LinearSVC(loss="hinge", C=1.0, tol=1e-8).fit(Xd, yd)
        first = clf.history_[0]
        assert clf.n_iter_ == 0 and first["sample_rows"] == n and clf.duality_gap_ <= 1e-8
        # the descent stops short of 1e-8 on these dense rows: the smoothed Newton goes on from it
        assert first["dcd_passes"] > 0 if by == "dual" else first["dcd_passes"] == 0 < first["newton_steps"]
        optimum = hinge_primal(X[:n], sign[:n], np.ones(n), liblinear_hinge(X[:n], y[:n], 1.0))
        assert clf.objective_ * (1 - clf.duality_gap_) <= optimum * (1 + 1e-9)
        assert (clf.objective_ - optimum) / clf.objective_ <= clf.duality_gap_ + 1e-9
    rng = np.random.default_rng(0)
    wide = sp.random(1_000, 300, density=0.02, random_state=0, format="csr") * 3.0
    y = np.where(wide @ rng.standard_normal(300) + 0.3 * rng.standard_normal(1_000) > 0, 1, -1)
    clf = LinearSVC(loss="hinge", C=0.5, tol=1e-6).fit(*_dask(wide, y, 2))
    assert clf.history_[0]["dcd_passes"] > 0 and clf.history_[0]["newton_steps"] == 0
    assert clf.n_iter_ == 0 and clf.duality_gap_ <= 1e-6


@pytest.mark.parametrize(
    "params, fragment",
    [
        (dict(loss="squared_hinge"), "loss='squared_hinge'"),
        (dict(loss="hinge", probability=True), "probability=True"),
        (dict(loss="hinge", multi_class="crammer_singer"), "crammer_singer"),
    ],
)
def test_solver_band_says_what_it_cannot_train(params, fragment):
    X, y = noisy_linear_data(2_000, 3)
    Xd, yd = _dask(X, y, 2)
    with pytest.raises(ValueError, match="solver='band'") as info:
        LinearSVC(solver="band", **params).fit(Xd, yd)
    assert fragment in str(info.value)


def test_the_dual_schedules_stay_named_and_probability_keeps_them():
    X, y = noisy_linear_data(4_000, 3)
    Xd, yd = _dask(X, y, 4)
    named = LinearSVC(loss="hinge", solver="sbm", tol=1e-3, max_iter=50).fit(Xd, yd)
    assert "band" not in {r.get("solver") for r in named.history_}
    with_probability = LinearSVC(loss="hinge", probability=True, tol=1e-3, max_iter=50).fit(Xd, yd)
    assert "band" not in {r.get("solver") for r in with_probability.history_}


def test_auto_gives_the_band_up_where_its_step_is_hardly_certified_and_says_so():
    """a9a in a 10% cache: more rows lie at the margin than the band holds (their binary features tie
    there), the first band's step is certified on less than BAND_MIN_REACH of its length, and
    ``solver="auto"`` trains StreamSVM instead (choice.GIVE_WAY_SCHEDULE, not SBM, auto's other dual
    schedule), with a warning; ``solver="band"`` keeps the band, its rows keeping their dual values
    from read to read (engine/primal/sample_band.py: KeptAlphas): its dual rises at every read."""
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:16_000], y[:16_000]
    Xd, yd = da.from_array(X, chunks=(1_600, 123)), da.from_array(y, chunks=1_600)
    with pytest.warns(
        ConvergenceWarning, match="the band from a sample gave way to solver='streamsvm' after one read"
    ):
        clf = LinearSVC(loss="hinge", cache_bytes="10%", tol=1e-3, max_iter=30, random_state=0).fit(Xd, yd)
    solvers = [r.get("solver") for r in clf.history_]
    assert solvers[:2] == ["band", "band"] and set(solvers[2:]) == {"streamsvm"}
    reach = clf.history_[1]["band_reach"]
    assert reach < sample_band.BAND_MIN_REACH
    assert clf.duality_gap_ <= 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # two reads do not converge it
        named = LinearSVC(loss="hinge", solver="band", cache_bytes="10%", tol=1e-3, max_iter=8).fit(Xd, yd)
    assert {r["solver"] for r in named.history_} == {"band"} and named.n_iter_ == 8
    duals = [r["dual"] for r in named.history_[1:]]
    assert all(b > a for a, b in zip(duals, duals[1:], strict=False))
    # 9.97 after the first read, 0.55 after the eighth (measured): the held rows' band stood still
    # for reads where its steps' ends gained nothing (binary rows tie at the margin), 1.0 after 8
    assert named.history_[-1]["gap"] < 0.1 * named.history_[1]["gap"]


def test_the_sample_and_the_band_are_solved_to_their_tolerances(monkeypatch):
    asked = []
    real = sample_band.solve_band_problem

    def spy(rows, loss, tol, offset=None, start=None, wide=None, short=False, alpha=None):
        asked.append((tol, offset is not None))
        return real(rows, loss, tol, offset, start, wide, short, alpha)

    monkeypatch.setattr(sample_band, "solve_band_problem", spy)
    X, y = noisy_linear_data(40_000, 6, seed=6)
    Xd, yd = _dask(X, y)
    LinearSVC(loss="hinge", C=0.1, tol=1e-3, cache_bytes="10%").fit(Xd, yd)
    warm_solves = [a for a in asked if not a[1]]  # the sample's, and its own samples' before it
    assert (
        warm_solves and set(warm_solves) == {(sample_band.WARM_TOL, False)} and sample_band.WARM_TOL == 1e-4
    )
    assert asked[len(warm_solves)] == (sample_band.BAND_TOL_SHARE * 1e-3, True)
    assert sample_band.BAND_TOL_SHARE == 0.1


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # the middle class's band
@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_samples_problem_starts_from_its_own_samples_solution(monkeypatch, n_classes):
    """The warm start's smoothed Newton starts from the solution of a random tenth of the sample
    (warm.memory_sample, at least 50 rows a column of the model, where that is at most a quarter of
    it), itself solved so: in memory on 80,000 x 3 rows, the sample of 8,000 from 800's solution,
    and 800 from 200's (50 x 4), which starts from 0; each class from its own problem's solution."""
    solves = []
    real = sample_band.solve_band_problem

    def spy(rows, loss, tol, offset=None, start=None, wide=None, short=False):
        out = real(rows, loss, tol, offset, start, wide, short)
        solves.append((rows.n, offset is not None, None if start is None else np.array(start), out[0]))
        return out

    monkeypatch.setattr(sample_band, "solve_band_problem", spy)
    X, y = _memory_band_rows(3)
    if n_classes == 3:
        y = np.digitize(X[:, 0], [-0.4, 0.4])
    clf = LinearSVC(loss="hinge", C=1.0, tol=1e-4).fit(X, y)
    problems = 1 if n_classes == 2 else 3
    warm_solves = [s for s in solves if not s[1]]
    assert [s[0] for s in warm_solves] == [200] * problems + [800] * problems + [8_000] * problems
    levels = [warm_solves[k : k + problems] for k in range(0, len(warm_solves), problems)]
    assert all(s[2] is None for s in levels[0])
    for smaller, larger in zip(levels, levels[1:], strict=False):
        for before, after in zip(smaller, larger, strict=True):  # class by class
            np.testing.assert_array_equal(after[2], before[3])  # each starts where the smaller ended
    assert clf.history_[0]["newton_steps"] > 0


def test_the_own_samples_are_solved_to_the_warm_tolerance_and_a_failed_start_is_solved_again(monkeypatch):
    """A sample of every row (its solve the fit, to tol 1e-8): its own sample is solved to WARM_TOL
    only; and where the solve from that start stops short of tol (on rows of extreme weights the
    start's Hessian can defeat its factorization), the sample is solved again from 0 and the fit
    certified within tol."""
    solves = []
    real = sample_band.solve_band_problem

    def failing_start(rows, loss, tol, offset=None, start=None, wide=None, short=False):
        solves.append((rows.n, tol, start is not None))
        w, certificate, info = real(rows, loss, tol, offset, start, wide, short)
        if start is not None:  # as a start whose first Newton step could not be taken
            certificate = Certificate(primal=certificate.primal * 10 + 1.0, dual=-1.0)
        return w, certificate, info

    monkeypatch.setattr(sample_band, "solve_band_problem", failing_start)
    X, y = noisy_linear_data(3_000, 4)
    clf = LinearSVC(loss="hinge", C=1.0, tol=1e-8).fit(*_dask(X, y, 3))
    assert solves[0] == (300, sample_band.WARM_TOL, False)  # the sample's own tenth
    assert solves[1] == (3_000, 1e-8, True) and solves[2] == (3_000, 1e-8, False)  # again from 0
    assert clf.n_iter_ == 0 and clf.duality_gap_ <= 1e-8
    optimum = hinge_primal(X, np.where(y > 0, 1.0, -1.0), np.ones(len(y)), liblinear_hinge(X, y, 1.0))
    assert clf.objective_ * (1 - clf.duality_gap_) <= optimum * (1 + 1e-9)


def narrow_band_problem():
    """20,000 Gaussian rows at C = 0.2, the point a sample of 400 of them gives, and ``read(w)``: a
    read's :class:`~dask_streamsvm.engine.primal.sample_band.BandSums` at ``w`` whose band is the
    600 rows (3%) of smallest keys, too few for the band's whole step."""
    X, y = noisy_linear_data(20_000, 5, seed=8)
    sign = np.where(y > 0, 1.0, -1.0)
    cost = np.full(len(y), 0.2)
    sample = np.random.default_rng(0).choice(len(y), 400, replace=False)
    w, _, _ = smoothed.solve_smoothed(
        smoothed.Rows(X[sample], sign[sample], cost[sample] * 50, 1.0), tol=1e-6
    )
    Xa = np.hstack([X, np.ones((len(y), 1))])

    def read(w):
        s = 1.0 - sign * (Xa @ w)
        keys = np.abs(s) / np.sqrt(1.0 + (X * X).sum(axis=1))
        band = np.argsort(keys)[:600]
        on = s > 0
        return band, sample_band.BandSums(
            loss=float(cost @ np.maximum(s, 0.0)), held=float(cost[on].sum()),
            u=Xa[on].T @ (cost[on] * sign[on]),
            band=Sample(X[band], sign[band], cost[band], len(y), outside=float(np.delete(keys, band).min()),
                        metric=(np.zeros(5), np.ones(5)), shortfall=s[band]),
        )  # fmt: skip

    return X, sign, cost, w, read


class BiasOne:
    """The plan's fields :meth:`~dask_streamsvm.engine.primal.sample_band._Problem.take` reads."""

    bias = 1.0
    loss = "hinge"


def test_a_step_cut_to_the_bound_is_certified_exactly_and_the_band_dual_is_feasible():
    """A band too narrow for the band's whole step: the part of the step the bound certifies
    (``band_reach``) ends at a point whose certified primal is the data's there, to rounding, and the
    band's dual value stays below the data's optimum."""
    X, sign, cost, w, read = narrow_band_problem()
    band, sums = read(w)
    problem = sample_band._Problem(w)
    problem.take(sums, BiasOne, 1e-8)
    assert 0.0 < problem.reach < 1.0 and not problem.certified_step
    assert problem.best_primal == pytest.approx(hinge_primal(X, sign, cost, problem.best_w), rel=1e-12)
    assert problem.best_primal < hinge_primal(X, sign, cost, w)  # the cut step is a descent
    optimum = smoothed.solve_smoothed(smoothed.Rows(X, sign, cost, 1.0), tol=1e-11)[1].primal
    assert problem.best_dual <= optimum * (1 + 1e-12)
    # the whole step, uncertified, is not what the data's primal is there: the cut was needed
    full = w + (problem.best_w - w) / problem.reach
    rows = smoothed.Rows(X[band], sign[band], cost[band], 1.0)
    offset = (sums.offset(1.0)[0], sums.offset(1.0)[1])
    assert smoothed.offset_primal(rows, full, offset) < hinge_primal(X, sign, cost, full) * (1 - 1e-9)


def test_a_step_is_read_beyond_its_certified_part_and_backed_off_along_it_where_that_gains_nothing():
    """The next read is at the band's solution, beyond the certified part of its step (ijcnn1 in 8
    partitions: 3 reads to 2.5e-4 where the certified ends took 9); where such a read finds a primal
    no lower than the best certified one, the next is STEP_SHRINK times nearer along the same step,
    and at the certified end once that is further."""
    assert sample_band.STEP_SHRINK == 4
    X, sign, cost, w, read = narrow_band_problem()
    problem = sample_band._Problem(w)
    problem.take(read(w)[1], BiasOne, 1e-8)
    t = problem.reach
    assert 0.0 < t < 1.0 and problem.trial
    solution = problem.w.copy()  # fraction 1: the band's solution
    np.testing.assert_allclose(problem.best_w, w + t * (solution - w), rtol=1e-12, atol=1e-15)
    best, fraction, backed = problem.best_primal, 1.0, 0
    while problem.trial:
        _, worse = read(problem.w)
        worse.loss += best  # a read whose primal is above the best certified one: it gained nothing
        problem.take(worse, BiasOne, 1e-8)
        fraction, backed = fraction / 4, backed + 1
        assert problem.fraction == fraction and problem.band_rows == 0 and problem.reach == 0.0
        share = max(t, fraction)
        np.testing.assert_allclose(problem.w, w + share * (solution - w), rtol=1e-12, atol=1e-15)
        assert problem.trial == (share > t) and problem.best_primal == best  # no band solved
    assert backed == int(np.ceil(np.log(1 / t) / np.log(4)))  # until the certified end is further
    np.testing.assert_array_equal(problem.w, problem.best_w)


@pytest.mark.slow  # three LIBSVM sets streamed and solved in memory, about two minutes
@pytest.mark.parametrize("name", ["a9a", "w8a", "ijcnn1"])
def test_the_bands_certificate_is_a_true_bound_on_the_libsvm_sets(name):
    """The band on the real sets (50% cache, C = 1): its gap is at least the distance of its objective
    from the optimum (solved in memory to a certified 1e-9: the optimum is within it), its dual below
    it."""
    X, y = load_libsvm_dataset(name)
    n = X.shape[0]
    Xd, yd = da.from_array(X, chunks=(n // 20, X.shape[1])), da.from_array(y, chunks=n // 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # w8a's band is slow: its gap is what is checked
        clf = LinearSVC(loss="hinge", solver="band", cache_bytes="50%", tol=1e-4, max_iter=3).fit(Xd, yd)
    sign = np.where(y > 0, 1.0, -1.0)
    _, reference, _ = smoothed.solve_smoothed(smoothed.Rows(X, sign, np.ones(n), 1.0), tol=1e-9)
    assert reference.relative_gap <= 1e-9  # the optimum lies in [reference.dual, reference.primal]
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(hinge_primal(X, sign, np.ones(n), w), rel=1e-10)
    assert (clf.objective_ - reference.primal) / clf.objective_ <= clf.duality_gap_ + 1e-9
    assert clf.objective_ * (1 - clf.duality_gap_) <= reference.primal * (1 + 1e-9)


def test_auto_keeps_the_band_for_tall_data_or_a_sample_of_every_row():
    """Fewer rows than PRIMAL_RATIO times the width, and a sample of only some of them: the dual
    schedules train, with no read of the band spent; the same rows in a cache that holds them all:
    the sample is the data, solved in memory."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((6_000, 100))
    y = np.where(X @ rng.standard_normal(100) > 0, 1, -1)
    Xd, yd = _dask(X, y)
    wide = LinearSVC(loss="hinge", cache_bytes="10%", tol=1e-3, max_iter=30, random_state=0).fit(Xd, yd)
    assert "band" not in {r.get("solver") for r in wide.history_}
    held = LinearSVC(loss="hinge", cache_bytes="100%", tol=1e-6).fit(Xd, yd)
    assert {r["solver"] for r in held.history_} == {"band"} and held.n_iter_ == 0
    assert held.duality_gap_ <= 1e-6


def test_the_band_gives_the_same_model_bit_for_bit():
    X, y = noisy_linear_data(30_000, 5, seed=11)
    Xd, yd = _dask(X, y)
    first, second = (
        LinearSVC(loss="hinge", C=0.3, tol=1e-6, cache_bytes="15%").fit(Xd, yd) for _ in range(2)
    )
    assert {r["solver"] for r in first.history_} == {"band"}
    assert np.array_equal(first.coef_, second.coef_) and np.array_equal(first.intercept_, second.intercept_)
    assert first.duality_gap_ == second.duality_gap_


def test_the_band_reaches_a_1e3_gap_on_ijcnn1_in_three_reads_after_the_sample():
    """ijcnn1 (C = 1, no intercept, a 10% cache): the first band's step is certified on 7% of its
    length; reading at the bands' solutions (not where their certified parts end, 9 reads) the gap is
    2.5e-4 after the third read, and the certificate is a true bound on LIBLINEAR's optimum."""
    X, y = load_libsvm_dataset("ijcnn1")
    X = X.toarray()
    n = len(y)
    Xd, yd = da.from_array(X, chunks=(n // 8 + 1, X.shape[1])), da.from_array(y, chunks=n // 8 + 1)
    clf = LinearSVC(loss="hinge", C=1.0, fit_intercept=False, cache_bytes="10%", tol=1e-3).fit(Xd, yd)
    assert {r["solver"] for r in clf.history_} == {"band"}
    assert clf.n_iter_ <= 3 and clf.duality_gap_ <= 1e-3
    assert 0.0 < clf.history_[1]["band_reach"] < 0.2  # the first step is mostly uncertified
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), 0.0)
    assert clf.objective_ == pytest.approx(hinge_primal(X, sign, np.ones(n), w), rel=1e-10)
    _, reference, _ = smoothed.solve_smoothed(smoothed.Rows(X, sign, np.ones(n), 0.0), tol=1e-9)
    assert clf.objective_ * (1 - clf.duality_gap_) <= reference.primal * (1 + 1e-9)


# In memory (solver="auto" on NumPy rows): the band from a sample where the rows are tall enough.


def _memory_band_rows(d, seed=0):
    """Gaussian rows of ``d`` columns, as many as the door's in-memory band rule asks."""
    n = warm.MEMORY_BAND_SAMPLES * sample_rows(d)
    X, y = noisy_linear_data(n, d, seed)
    return X.astype(np.float32), np.where(y > 0, 1, -1)


def test_in_memory_the_hinge_trains_by_the_band_from_a_sample_to_liblinears_optimum():
    """Tall dense rows in memory: a random tenth's solution, one pass for the band, its step
    certified; the certificate covers the distance to LIBLINEAR's optimum and never claims more."""
    X, y = _memory_band_rows(3)
    C = 1.0
    clf = LinearSVC(loss="hinge", C=C, tol=1e-4).fit(X, y)
    assert [r["solver"] for r in clf.history_] == ["band"] * len(clf.history_)
    assert clf.history_[0]["sample_rows"] == int(warm.MEMORY_SAMPLE_SHARE * X.shape[0])
    assert clf.n_iter_ <= 2 and clf.duality_gap_ <= 1e-4
    sign, cost = y.astype(np.float64), np.full(len(y), C)
    X64 = X.astype(np.float64)
    ours = hinge_primal(X64, sign, cost, np.append(clf.coef_.ravel(), clf.intercept_))
    theirs = hinge_primal(X64, sign, cost, liblinear_hinge(X64, y, C))  # at least the optimum
    last = clf.history_[-1]
    assert last["primal"] == pytest.approx(ours, rel=1e-9)  # the certificate's primal is the model's
    assert last["dual"] <= theirs * (1 + 1e-12)  # weak duality
    assert (ours - theirs) / ours <= clf.duality_gap_


def test_in_memory_the_band_needs_rows_four_times_the_streamed_sample():
    """The door's rule (warm.MEMORY_BAND_SAMPLES = 4): on 3 columns the streamed sample is 20,000 rows
    (warm.SAMPLE_MIN_ROWS), so from 80,000 rows the band; one row fewer keeps coordinate descent."""
    plan = FitPlan(C=1.0, loss="hinge", solver="auto", dual="auto")
    X, _ = _memory_band_rows(3)
    assert X.shape[0] == 80_000
    assert choice.memory_band(plan, X)
    assert not choice.memory_band(plan, X[:-1])
    assert not choice.memory_band(plan.replace(solver="memory"), X)  # the dual, named
    assert not choice.memory_band(plan.replace(dual=True), X)  # the dual solvers, asked for
    wide = np.zeros((96_000, 5), dtype=np.float32)  # 16,000 rows a column of the model, with the intercept
    assert choice.memory_band(plan, wide) and not choice.memory_band(plan, wide[:-1])
    assert not choice.memory_band(plan.replace(loss="squared_hinge"), X)  # it has the primal solver
    assert not choice.memory_band(plan, sp.csr_matrix(X))  # sparse rows keep the dual
    X[0, 0] = 1e13  # beyond what the smoothed Newton sums
    assert not choice.memory_band(plan, X)


@pytest.mark.parametrize("params", [{"solver": "memory"}, {"dual": True}, {"probability": True}])
def test_in_memory_the_dual_solvers_asked_for_keep_dual_coordinate_descent(params):
    X, y = _memory_band_rows(3)
    clf = LinearSVC(loss="hinge", C=0.1, tol=1e-3, **params).fit(X, y)
    assert "band" not in {r.get("solver") for r in clf.history_}


def test_in_memory_the_band_of_three_weighted_classes_in_label_order_is_certified():
    """One-vs-rest on float64 rows sorted by label (the band is chosen exactly, whatever the order),
    with class weights and rows of weight 0: every problem's certificate covers its distance to the
    primal of coordinate descent run to 1e-8 (at least the optimum), and none claims more than it
    proved."""
    rng = np.random.default_rng(3)
    n = warm.MEMORY_BAND_SAMPLES * sample_rows(3)
    X = rng.standard_normal((n, 3))
    y = np.argmax(X @ rng.standard_normal((3, 3)) + 0.3 * rng.standard_normal((n, 3)), axis=1)
    order = np.argsort(y, kind="stable")
    X, y = X[order], np.array(["a", "b", "c"])[y[order]]
    weights = rng.uniform(0.0, 2.0, n) * (rng.random(n) > 0.1)
    params = dict(loss="hinge", C=0.5, class_weight={"a": 2.0, "b": 1.0, "c": 0.5})
    clf = LinearSVC(tol=1e-4, **params).fit(X, y, sample_weight=weights)
    assert {r["solver"] for r in clf.history_} == {"band"}
    # the reference's passes to 1e-8 depend on BLAS's threads (11,447-16,634 passes measured at 1, 2 and
    # unlimited threads): at a cap of 20,000 it stopped short in one run of the suite (2026-12-06)
    ref = LinearSVC(solver="memory", tol=1e-8, max_iter=100_000, **params).fit(X, y, sample_weight=weights)
    for c, label in enumerate(clf.classes_):
        last = [r for r in clf.history_ if r["class"] == label][-1]
        sign = np.where(y == label, 1.0, -1.0)
        cost = (
            0.5 * np.where(y == label, params["class_weight"][label], 1.0) * weights
        )  # LIBLINEAR's C_+, C_-
        model = np.append(clf.coef_[c], clf.intercept_[c])
        assert last["primal"] == pytest.approx(hinge_primal(X, sign, cost, model), rel=1e-9)  # its problem's
        above = min(r["primal"] for r in ref.history_ if r["class"] == label and np.isfinite(r["primal"]))
        assert last["dual"] <= above * (1 + 1e-12)  # weak duality
        assert (last["primal"] - above) / last["primal"] <= clf.duality_gap_[c] * (1 + 1e-9)
        assert clf.duality_gap_[c] <= 1e-4


def test_in_memory_the_band_gives_way_to_dual_coordinate_descent_and_says_so(monkeypatch):
    """Where the first band's step is certified on less than BAND_MIN_REACH of its length, the dual
    trains from the start, its records after the band's, with a warning that names solver='memory'."""
    monkeypatch.setattr(sample_band, "band_reach", lambda *args: 0.0)  # no step certified
    X, y = _memory_band_rows(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        clf = LinearSVC(loss="hinge", C=1.0, tol=1e-8, max_iter=5).fit(X, y)  # not within tol at w0
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert any(
        "gave way to dual coordinate descent after one pass: " in m and "solver='memory'" in m for m in said
    ), said
    solvers = [r.get("solver") for r in clf.history_]
    assert solvers[:2] == ["band", "band"] and "band" not in solvers[2:] and len(solvers) > 2
    assert clf.history_[1]["band_reach"] == 0.0 and clf.n_iter_ == 5  # the dual's passes


def test_in_memory_the_band_is_the_rows_of_smallest_keys_and_outside_the_smallest_left_out():
    """MemoryBandRead chooses the band exactly: its rows are those of the smallest keys (the distance
    of the margin from the hinge point over the row's length in the band's metric), and ``outside``,
    which the bound trusts, is the smallest key of a row left out, in NumPy's arithmetic."""
    rng = np.random.default_rng(5)
    X, y = noisy_linear_data(5_000, 4, seed=5)
    y = np.where(y > 0, 1, -1)
    X = X[np.argsort(y, kind="stable")]  # in label order
    y = np.sort(y)
    weights = rng.uniform(0.5, 1.5, len(y)) * (rng.random(len(y)) > 0.05)
    plan = _plan(y)
    y_index = np.searchsorted(plan.classes, y)
    metric = (X.mean(axis=0), X.std(axis=0))
    read = sample_band.MemoryBandRead(X, y_index, weights, plan, 500, None, metric)
    w = np.append(rng.standard_normal(4), 0.1)
    (sums,), counts = read(w[None, :], [0])
    sign = plan.signs[0, y_index]
    margin = X @ w[:-1] + w[-1]
    length = np.sqrt(1.0 + (((X - metric[0]) / metric[1]) ** 2).sum(axis=1))
    keys = np.where(weights > 0, np.abs(1.0 - sign * margin) / length, np.inf)
    order = np.argsort(keys)
    assert counts.rows == len(y) and sums.band.n_rows == 500
    np.testing.assert_allclose(np.sort(sums.band.keys), np.sort(keys[order[:500]]), rtol=1e-9)
    assert sums.outside == pytest.approx(keys[order[500]], rel=1e-12)
    assert sums.band.outside == sums.outside and sums.outside > sums.band.keys.max()
    held = (weights > 0) & (1.0 - sign * margin > 0)
    assert sums.held == pytest.approx(float((plan.costs[0, y_index] * weights)[held].sum()), rel=1e-10)


def test_in_memory_the_band_keeps_within_its_bytes_and_says_when_no_row_is_left_out():
    """MemoryBandRead's budget: ``band_bytes`` holds fewer rows than ``band_rows`` (a row's values, sign,
    cost and key); a band that holds every row of positive weight leaves none out (``outside`` inf,
    what the bound reads as room for any step); a budget below one row keeps no band, and
    ``outside`` is then the smallest key of all."""
    rng = np.random.default_rng(6)
    X, y = noisy_linear_data(2_000, 4, seed=6)
    weights = np.where(rng.random(len(y)) > 0.1, 1.0, 0.0)
    plan = _plan(y)
    y_index = np.searchsorted(plan.classes, y)
    metric = (np.zeros(4), np.ones(4))
    w = np.append(rng.standard_normal(4), 0.1)[None, :]
    row_bytes = X.itemsize * 4 + warm.BAND_ROW_EXTRA  # its values, sign, cost, shortfall and key
    (cut,), _ = sample_band.MemoryBandRead(X, y_index, weights, plan, 1_000, 300 * row_bytes, metric)(w, [0])
    assert cut.band.n_rows == 300 and np.isfinite(cut.outside)
    (every,), _ = sample_band.MemoryBandRead(X, y_index, weights, plan, 2_000, None, metric)(w, [0])
    assert every.band.n_rows == int(np.count_nonzero(weights)) and every.outside == np.inf
    (none,), _ = sample_band.MemoryBandRead(X, y_index, weights, plan, 1_000, row_bytes - 1, metric)(w, [0])
    assert none.band is None and none.outside == pytest.approx(every.band.keys.min(), rel=1e-12)


# Out of core, a first read that kept every row (within cache_bytes): the band trains on them in
# memory, the passes over them its reads.


def test_out_of_core_every_row_kept_by_the_first_read_trains_the_band_in_memory_in_one_read():
    """A Dask collection tall enough for the band in memory (warm.band_from_memory) whose rows fit the
    default cache: one read keeps every row, the band's passes over them read nothing (records
    numbered as passes, as in memory), and the model is the in-memory fit's on the same rows, bit
    for bit; its certificate covers the distance to LIBLINEAR's optimum and never claims more."""
    X, y = _memory_band_rows(3)
    C = 1.0
    streamed = LinearSVC(loss="hinge", C=C, tol=1e-4).fit(*_dask(X, y))
    history = streamed.history_
    assert {r["solver"] for r in history} == {"band"}
    assert [r["pass"] for r in history] == list(range(streamed.n_iter_ + 1))
    assert {r["rows_read"] for r in history} == {X.shape[0]}  # the one read
    assert history[-1]["band_rows"] == int(BAND_SHARE * X.shape[0]) and history[-1]["band_bytes"] > 0
    assert history[0]["sample_rows"] == int(warm.MEMORY_SAMPLE_SHARE * X.shape[0])  # in memory's sample
    assert 1 <= streamed.n_iter_ <= 2 and streamed.duality_gap_ <= 1e-4
    in_memory = LinearSVC(loss="hinge", C=C, tol=1e-4).fit(X, y)
    np.testing.assert_array_equal(streamed.coef_, in_memory.coef_)
    np.testing.assert_array_equal(streamed.intercept_, in_memory.intercept_)
    sign, cost = y.astype(np.float64), np.full(len(y), C)
    X64 = X.astype(np.float64)
    ours = hinge_primal(X64, sign, cost, np.append(streamed.coef_.ravel(), streamed.intercept_))
    theirs = hinge_primal(X64, sign, cost, liblinear_hinge(X64, y, C))  # at least the optimum
    assert history[-1]["primal"] == pytest.approx(ours, rel=1e-9)
    assert history[-1]["dual"] <= theirs * (1 + 1e-12)  # weak duality
    assert (ours - theirs) / ours <= streamed.duality_gap_


def test_out_of_core_the_rows_are_kept_whole_for_the_band_only_where_its_sample_and_band_fit_too():
    """The first read keeps every row where their bytes as the band holds them (warm.band_held_bytes:
    the rows, and the larger of the sample's and the band's share) fit ``cache_bytes``; a byte less,
    and it keeps a sample and the reads stream.  Below warm.band_from_memory's rows it always keeps
    a sample."""
    X, y = _memory_band_rows(3)
    assert X.shape[0] == 80_000  # 4 times the 20,000 rows of the streamed sample (warm.SAMPLE_MIN_ROWS)
    row_bytes = X.itemsize * X.shape[1] + y.itemsize + 8  # values, label and weight (float64)
    assert row_bytes == 28 and warm.band_held_bytes(28) == pytest.approx(28 + 0.15 * (28 + 32))
    need = int(np.ceil(X.shape[0] * warm.band_held_bytes(row_bytes)))

    def reads(n_rows, cache_bytes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LinearSVC(loss="hinge", C=1.0, tol=1e-3, max_iter=3, cache_bytes=cache_bytes)
            clf.fit(*_dask(X[:n_rows], y[:n_rows]))
        return clf.history_[-1]["rows_read"] / n_rows

    assert reads(X.shape[0], need) == 1
    assert reads(X.shape[0], need - 1) > 1  # a sample, then reads
    assert reads(X.shape[0] - 1, 10**9) > 1  # too few rows for the band in memory


def test_out_of_core_the_band_on_every_row_gives_way_to_the_streaming_schedule_and_says_so(monkeypatch):
    """Where the band on the rows the first read kept certifies too little of its first step, the dual
    schedules train (as after a streamed band's first read), the band's records first, the held rows
    dropped, and the warning says so."""
    monkeypatch.setattr(sample_band, "band_reach", lambda *args: 0.0)  # no step certified
    X, y = _memory_band_rows(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        clf = LinearSVC(loss="hinge", C=1.0, tol=1e-8, max_iter=3).fit(*_dask(X, y))
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    gave_way = "the band from a sample gave way to solver='streamsvm' after one read"
    assert any(gave_way in m for m in said), said
    solvers = [r.get("solver") for r in clf.history_]
    assert solvers[:2] == ["band", "band"] and set(solvers[2:]) == {"streamsvm"} and len(solvers) > 2
    assert clf.history_[1]["rows_read"] == X.shape[0] and clf.history_[1]["band_reach"] == 0.0


def test_out_of_core_the_bands_beside_every_row_held_share_what_cache_bytes_leaves():
    """Every row held is row memory: the bands of three classes share what ``cache_bytes`` leaves of
    it, each at most a third (a band row: its values, sign, cost and key), fewer rows than the band's
    share would take in memory."""
    rng = np.random.default_rng(7)
    X, _ = _memory_band_rows(3, seed=7)
    y = np.argmax(X @ rng.standard_normal((3, 3)) + 0.3 * rng.standard_normal((X.shape[0], 3)), axis=1)
    held = X.nbytes + y.nbytes + 8 * X.shape[0]  # values, labels and float64 weights
    cache_bytes = int(np.ceil(X.shape[0] * warm.band_held_bytes(held / X.shape[0])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LinearSVC(loss="hinge", solver="band", C=1.0, tol=1e-3, max_iter=2, cache_bytes=cache_bytes)
        clf.fit(*_dask(X, y))
    assert {r["rows_read"] for r in clf.history_} == {X.shape[0]}  # every row kept by the one read
    band_row = X.itemsize * X.shape[1] + warm.BAND_ROW_EXTRA
    most = (cache_bytes - held) // 3 // band_row
    bands = [r["active"] for r in clf.history_ if "active" in r]
    assert len(bands) >= 3 and 0 < max(bands) <= most < BAND_SHARE * X.shape[0]


def test_out_of_core_rows_kept_whole_train_the_band_in_memory_though_skipped_rows_leave_fewer():
    """Rows skipped as invalid (``on_invalid="skip"``) leave fewer rows than were counted before the
    read, here fewer than the band in memory asks for: the rows kept whole still train by the band
    in memory (its sample a tenth of them), not by a solve of every row, and the records count the
    rows skipped."""
    X, y = _memory_band_rows(3)
    X[::1000, 1] = np.nan  # 80 rows
    clf = LinearSVC(loss="hinge", C=1.0, tol=1e-4, on_invalid="skip").fit(*_dask(X, y))
    kept = X.shape[0] - 80
    assert clf.history_[0]["sample_rows"] == int(warm.MEMORY_SAMPLE_SHARE * kept) and clf.n_iter_ >= 1
    assert {r["rows_skipped"] for r in clf.history_} == {80} and clf.duality_gap_ <= 1e-4


def test_a_read_holds_one_passes_bands_at_a_time():
    """Each pass's bands replace the last one's: the fit's traced peak does not grow with the passes
    beyond a fraction of a band (it grew by a whole band a pass while the last read's sums were held)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 80_000
    X = rng.integers(0, 3, (n, 3)).astype(np.float32)  # values that tie at the margin: many passes
    y = np.where(X @ [1.0, -1.0, 0.5] + rng.normal(0, 1.0, n) > 0.2, 1, -1)
    cache_bytes = int(np.ceil(n * warm.band_held_bytes(X.itemsize * 3 + y.itemsize + 8)))
    data = _dask(X, y, 20)
    peaks = {}
    for passes in (1, 1, 4):  # the first fit of the process allocates what it keeps for the next
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LinearSVC(
                loss="hinge", C=1.0, tol=1e-8, max_iter=passes, solver="band", cache_bytes=cache_bytes
            )
            tracemalloc.start()
            try:
                model.fit(*data)
                peaks[passes] = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        assert model.n_iter_ == passes
    band = model.history_[-1]["band_bytes"]
    assert band > 0 and peaks[4] - peaks[1] < 0.25 * band, (peaks, band)


def test_string_labels_count_their_objects_in_the_budget_of_rows_kept_whole():
    """A label of object dtype (strings, one Python object a row as read from Parquet) takes its
    object's bytes beside the array's pointer: rows that fit ``cache_bytes`` with 8-byte integer labels
    are not kept whole with string labels."""
    from dask_streamsvm.engine.primal.reads import Sampler

    n = 1_000
    X, w = np.zeros((n, 3), dtype=np.float32), np.ones(n)
    codes = np.where(np.arange(n) % 2, 1, -1)
    strings = np.array([str(c) + "_label" for c in codes], dtype=object)
    budget = n * (X.itemsize * 3 + 8 + 8)  # values, an 8-byte label and the weight
    for y, whole in ((codes, True), (strings, False)):
        sampler = Sampler(10, budget, expected=n, whole=True)
        sampler.add_rows(0, X, y, w)
        assert (sampler.rows is not None) == whole

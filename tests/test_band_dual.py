"""The band's hinge problem on rows too wide for a Hessian: dual coordinate descent with an offset
(:mod:`dask_streamsvm.engine.dual.offset`), and ``solver="band"`` on wide sparse rows."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.choice import band_blocker
from dask_streamsvm.engine.data.labels import label_index_of
from dask_streamsvm.engine.dual.memory import BinaryProblem
from dask_streamsvm.engine.dual.offset import solve_with_offset
from dask_streamsvm.engine.plan.layout import as_kernel_rows
from dask_streamsvm.engine.plan.problem import FitPlan
from dask_streamsvm.engine.primal import sample_band, smoothed
from dask_streamsvm.engine.primal.newton import MAX_WIDTH
from dask_streamsvm.engine.primal.reads import _add_moments

from ._helpers import noisy_linear_data
from .test_sample_band import hinge_primal, liblinear_hinge

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")


def held_problem(seed=2, C=0.5):
    """4,000 rows, LIBLINEAR's optimum, and the rows far from the hinge point at it held as an
    offset: ``(X, sign, cost, w_star, band, (u, S))``."""
    X, y = noisy_linear_data(4_000, 5, seed=seed)
    sign = np.where(y > 0, 1.0, -1.0)
    cost = np.full(len(y), C)
    w_star = liblinear_hinge(X, y, C, converged=True)
    s = 1.0 - sign * (X @ w_star[:-1] + w_star[-1])
    held, gone = s > 0.5, s < -0.5
    band = ~held & ~gone
    Xa = np.hstack([X, np.ones((len(y), 1))])
    u = Xa[held].T @ (cost[held] * sign[held])
    return X, sign, cost, w_star, band, (u, float(cost[held].sum()))


def test_coordinate_descent_with_an_offset_reaches_the_full_problems_optimum():
    """The held rows' sums as an offset: the band's optimum is the data's where they stay on their
    pieces (LIBLINEAR's, on every row), the certificate's primal is the data's objective there and
    its dual below the optimum.  Without the offset's terms (``u`` in ``w``, ``S`` and ``-u . w``
    in the values) none of the three holds.  (From the optimum's pieces: from 0, coordinate descent
    stalls near a relative gap of 3e-6 on these rows, as on all 4,000 of them, as LIBLINEAR's does.)"""
    X, sign, cost, w_star, band, offset = held_problem()
    w, certificate, info = solve_with_offset(
        X[band], sign[band], cost[band], 1.0, loss="hinge", tol=1e-10, offset=offset,
        margins=sign[band] * (X[band] @ w_star[:-1] + w_star[-1]),
    )  # fmt: skip
    optimum = hinge_primal(X, sign, cost, w_star)
    assert info["dcd_passes"] >= 1
    assert certificate.primal == pytest.approx(hinge_primal(X, sign, cost, w), rel=1e-11)
    assert certificate.dual <= optimum * (1 + 1e-12)
    assert certificate.primal == pytest.approx(optimum, rel=1e-8)
    assert np.allclose(w, w_star, atol=1e-4)


def test_the_offsets_dual_is_the_full_problems_at_the_held_rows_bounds():
    """At any ``alpha`` of the band, the certificate's dual is the data's dual at that ``alpha`` with
    every held row at ``C_i`` (and the rows with no loss at 0): a feasible point's value, whatever
    the band's solve reached."""
    X, sign, cost, w_star, band, offset = held_problem()
    rng = np.random.default_rng(0)
    alpha = rng.uniform(0.0, cost[band])
    Xb = np.hstack([X[band], np.ones((band.sum(), 1))])
    problem = BinaryProblem(as_kernel_rows(X[band]), sign[band], cost[band], "hinge", 1.0, 5, offset)
    w = problem.exact_w(alpha)
    assert np.allclose(w, offset[0] + Xb.T @ (alpha * sign[band]), rtol=1e-13, atol=1e-12)
    s = 1.0 - sign * (X @ w_star[:-1] + w_star[-1])
    full = np.where(s > 0.5, cost, 0.0)
    full[band] = alpha
    full_dual = full.sum() - 0.5 * float(w @ w)
    assert problem.certificate(alpha, w).dual == pytest.approx(full_dual, rel=1e-12)
    assert problem.dual(alpha, w) == pytest.approx(full_dual, rel=1e-12)
    primal = 0.5 * float(w @ w) - float(offset[0] @ w) + offset[1]
    primal += float(cost[band] @ np.maximum(0.0, 1.0 - sign[band] * (Xb @ w)))
    assert problem.certificate(alpha, w).primal == pytest.approx(primal, rel=1e-12)


def test_a_start_point_starts_its_rows_of_positive_shortfall_at_their_bound():
    """From a point near the optimum the rows of shortfall > 0 start at ``alpha_i = C_i``: the
    solve takes fewer passes than from 0, to the same optimum."""
    X, sign, cost, w_star, band, offset = held_problem()
    rows = (X[band], sign[band], cost[band], 1.0)
    _, cold, cold_info = solve_with_offset(*rows, loss="hinge", tol=1e-5, offset=offset)
    margins = sign[band] * (X[band] @ w_star[:-1] + w_star[-1])
    _, warm, warm_info = solve_with_offset(*rows, loss="hinge", tol=1e-5, offset=offset, margins=margins)
    assert cold.relative_gap <= 1e-5 and warm.relative_gap <= 1e-5
    assert warm.primal == pytest.approx(cold.primal, rel=2e-5)
    assert warm_info["dcd_passes"] < cold_info["dcd_passes"]


def test_the_band_is_solved_by_coordinate_descent_only_beyond_the_hessians_width(monkeypatch):
    """The smoothed Newton up to MAX_WIDTH; wider, the door's solver (an error without one), from the
    margins at the start point."""
    X, sign, cost, w_star, band, offset = held_problem()
    rows = smoothed.Rows(X[band], sign[band], cost[band], 1.0)
    assert "dcd_passes" not in sample_band.solve_band_problem(rows, "hinge", 1e-6, offset)[2]
    monkeypatch.setattr(sample_band, "MAX_WIDTH", rows.width - 1)
    with pytest.raises(ValueError, match="no solver of wider rows"):
        sample_band.solve_band_problem(rows, "hinge", 1e-6, offset)
    got = sample_band.solve_band_problem(rows, "hinge", 1e-6, offset, w_star, solve_with_offset)
    assert "dcd_passes" in got[2] and got[1].relative_gap <= 1e-6


def wide_sparse_data(n=4_000, d=MAX_WIDTH + 200, nnz=20, seed=0):
    """``n`` unit-norm sparse rows of ``nnz`` features in ``d`` (wider than the Hessian's bound),
    labels of a noisy linear rule: a CSR matrix and labels."""
    rng = np.random.default_rng(seed)
    cols = np.concatenate([rng.choice(d, nnz, replace=False) for _ in range(n)])
    vals = rng.standard_normal(n * nnz)
    X = sp.csr_matrix((vals, cols, np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    X = sp.diags(1.0 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())) @ X
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1, -1)
    return sp.csr_matrix(X), y


def _sparse_dask(X, y, n_partitions=4):
    step = -(-X.shape[0] // n_partitions)
    return da.from_array(X, chunks=(step, X.shape[1]), asarray=False), da.from_array(y, chunks=step)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_solver_band_trains_rows_wider_than_the_hessian_with_a_true_certificate():
    """``solver="band"`` on sparse rows wider than MAX_WIDTH (an error before): the sample's and the
    bands' problems solved by coordinate descent, the certificate at least the true suboptimality
    and its dual below the optimum (bracketed by the in-memory solver's certificate at 1e-9)."""
    X, y = wide_sparse_data()
    Xd, yd = _sparse_dask(X, y)
    clf = LinearSVC(loss="hinge", C=1.0, solver="band", tol=1e-3, max_iter=8, cache_bytes="10%").fit(Xd, yd)
    assert {r["solver"] for r in clf.history_} == {"band"}
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(hinge_primal(X, sign, np.ones(len(y)), w), rel=1e-10)
    ref = LinearSVC(loss="hinge", C=1.0, solver="memory", tol=1e-9, max_iter=100_000).fit(X, y)
    low, high = ref.objective_ * (1 - ref.duality_gap_), ref.objective_  # the optimum lies between
    assert (clf.objective_ - low) / clf.objective_ <= clf.duality_gap_ + 1e-9
    assert clf.objective_ * (1 - clf.duality_gap_) <= high * (1 + 1e-12)
    assert clf.duality_gap_ < clf.history_[1]["gap"]  # the reads after the first gain


def test_auto_keeps_the_dual_schedules_on_rows_wider_than_the_hessian():
    X, y = wide_sparse_data(n=2_000)
    Xd, yd = _sparse_dask(X, y, 2)
    clf = LinearSVC(loss="hinge", C=1.0, tol=1e-2, max_iter=5, cache_bytes="10%").fit(Xd, yd)
    assert "band" not in {r.get("solver") for r in clf.history_}
    plan = FitPlan(loss="hinge", solver="auto")
    assert "solver='auto'" in band_blocker(plan, X.shape[1])
    assert band_blocker(plan.replace(solver="band"), X.shape[1]) is None
    assert band_blocker(plan, MAX_WIDTH - 1) is None  # as wide as the Hessian's bound: the band


def test_sparse_blocks_class_moments_are_the_dense_ones():
    """The first read's moments of a sparse block (one product for the block) equal the dense
    block's, class by class, with their weights; so do the columns' largest values it records (what
    bounds a step's change of a margin, newton._Problem.step_dual)."""
    from types import SimpleNamespace

    X, y = wide_sparse_data(n=500, d=300, nnz=10)
    weights = np.random.default_rng(1).uniform(0.0, 2.0, len(y))
    plan = SimpleNamespace(bias=1.0, feature_map=None)
    out, columns = {}, {}
    for name, rows in (("sparse", X), ("dense", X.toarray())):
        moments, columns[name] = {}, np.zeros(301)
        block = SimpleNamespace(X=rows, y=y, sample_weight=weights, n_rows=len(y))
        assert _add_moments(moments, block, plan, 301, columns[name], *label_index_of(0, y)) is None
        out[name] = moments
    np.testing.assert_array_equal(columns["sparse"][:-1], np.abs(X.toarray()).max(axis=0))
    np.testing.assert_array_equal(columns["dense"], columns["sparse"])
    for label in (-1, 1):
        sparse, dense = out["sparse"][label], out["dense"][label]
        assert sparse[:2] == pytest.approx(dense[:2])
        assert np.allclose(sparse[2], dense[2], rtol=1e-12, atol=1e-12)
        expected = X[y == label].T @ weights[y == label]
        assert np.allclose(sparse[2][:-1], expected, rtol=1e-12, atol=1e-12)
        mine = weights[y == label]
        assert dense[0] == pytest.approx(mine.sum(), rel=1e-12) and dense[1] == np.count_nonzero(mine > 0)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("large", [False, True], ids=["values-in-range", "a-value-too-large"])
def test_a_first_read_without_newton_steps_checks_the_values_and_sums_no_moments(monkeypatch, large, sparse):
    """The first read of a loss without Newton steps (the hinge's band) sums no class moments (only a
    Newton solver certifies w = 0 from them): its columns' largest values and its value check are the
    squared hinge's, in one pass of the columns' maxima over dense rows (sparse rows: without the
    moments' product), and the kernel summing the moments is never called."""
    import dask.array as da

    from dask_streamsvm.engine.data.source import DaskSource
    from dask_streamsvm.engine.primal import reads
    from dask_streamsvm.engine.primal.sums import MAX_VALUE
    from dask_streamsvm.kernels import band

    X, y = noisy_linear_data(3_000, 4, seed=6)
    if large:
        X[1_234, 2] = 2 * MAX_VALUE
    rows = sp.csr_matrix(X) if sparse else X
    source = DaskSource(da.from_array(rows, chunks=(1_000, 4)), da.from_array(y, chunks=1_000))
    plan = FitPlan(loss="squared_hinge", dual="auto")
    newton = reads.first_read(source, plan, 4, sample_rows=500, sample_bytes=10**8)
    summed = band.class_sums

    def refused(*args, **kwargs):
        raise AssertionError("a loss without Newton steps summed the class moments")

    monkeypatch.setattr(band, "class_sums", refused)
    hinge = reads.first_read(source, plan.replace(loss="hinge"), 4, sample_rows=500, sample_bytes=10**8)
    assert hinge.moments is None and hinge.sums(plan) is None
    assert hinge.clean == newton.clean == (not large) and hinge.beyond == newton.beyond
    assert hinge.labels[1].tolist() == newton.labels[1].tolist()
    assert (hinge.sample is None) == (newton.sample is None)
    if large:
        assert "partition 1" in hinge.beyond and "column 2 reaches" in hinge.beyond
        assert hinge.column_max is None and hinge.sample is None
        return
    assert isinstance(newton.moments, dict) and summed is not refused
    np.testing.assert_array_equal(hinge.column_max, newton.column_max)
    np.testing.assert_array_equal(hinge.column_max[:-1], np.abs(X).max(axis=0))
    same = (lambda a, b: (a != b).nnz == 0) if sparse else np.array_equal
    assert same(hinge.sample.X, newton.sample.X)


def test_the_band_solve_stops_at_dcd_max_passes():
    """Coordinate descent on the band ends after DCD_MAX_PASSES (1000) passes where the tolerance asked
    is out of its reach (from 0 these rows stall near a gap of 3e-6), with its best certified point."""
    from dask_streamsvm.engine.dual import offset as dual_offset

    assert dual_offset.DCD_MAX_PASSES == 1000
    X, sign, cost, _, band, held = held_problem()
    rows = (X[band], sign[band], cost[band], 1.0)
    _, certificate, info = solve_with_offset(*rows, loss="hinge", tol=1e-14, offset=held)
    assert info["dcd_passes"] == dual_offset.DCD_MAX_PASSES
    assert certificate.dual <= certificate.primal and certificate.relative_gap > 1e-14

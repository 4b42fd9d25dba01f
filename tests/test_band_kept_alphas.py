"""The hinge band's dual kept row by row (issue 52): after its first read every row keeps its
``alpha_i`` (its piece at a reference point, or the value a band solve gave it, listed by the row's
id), each read's band is the rows that most violate the dual's optimality, and the dual rises at
every read, certified against scikit-learn's optimum."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as LiblinearSVC

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.primal import sample_band, smoothed
from dask_streamsvm.engine.primal.reads import Sampler
from dask_streamsvm.engine.primal.sample_band import (
    BAND_ROW,
    KeptAlphas,
    add_kept_rows,
    band_keys,
    block_base,
    dual_on_segment,
    metric_lengths,
)

from ._helpers import load_libsvm_dataset

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")


def test_a_rows_id_names_its_part_partition_and_place():
    assert block_base(0, 0) == 0
    assert block_base(0, 3) == 3 << 32
    assert block_base(2, 3) == (2 << 48) | (3 << 32)
    # a partition of up to 2**32 rows and 2**16 partitions a part stay apart
    assert block_base(0, 1) - 1 > block_base(0, 0) + (1 << 31)
    assert block_base(1, 0) > block_base(0, (1 << 16) - 1)


def test_kept_values_merge_replace_and_slice_by_part_and_block():
    kept = KeptAlphas([1.0, 2.0])
    assert kept.fresh_at(np.array([1.0, 2.0])) and not kept.fresh_at(np.array([1.0, 2.5]))
    base1 = block_base(1, 2)
    first = kept.merged([base1 + 5, 7, base1 + 1], [0.5, 0.25, 1.0])
    assert first.ids.tolist() == [7, base1 + 1, base1 + 5] and first.alpha.tolist() == [0.25, 1.0, 0.5]
    assert not first.fresh_at(np.array([1.0, 2.0]))  # a listed row: no longer every row at its piece
    second = first.merged([base1 + 5, 9], [0.0, 0.75])  # a row listed again takes its new value
    assert second.ids.tolist() == [7, 9, base1 + 1, base1 + 5]
    assert second.alpha.tolist() == [0.25, 0.75, 1.0, 0.0]
    assert first.alpha.tolist() == [0.25, 1.0, 0.5]  # merged is a copy
    part1 = second.of_part(1)
    assert part1.ids.tolist() == [base1 + 1, base1 + 5] and part1.alpha.tolist() == [1.0, 0.0]
    assert second.of_part(0).ids.tolist() == [7, 9] and second.of_part(2).ids.size == 0
    places, values = second.of_block(base1, 4)
    assert places.tolist() == [1] and values.tolist() == [1.0]
    with pytest.raises(ValueError, match="twice"):
        kept.merged([3, 3], [0.1, 0.2])


def test_the_band_is_the_free_rows_then_the_violators_by_their_violation_then_the_nearest_margin():
    # rows: free; at 0 with a positive shortfall (violates by 0.5); at C with a negative one (by
    # 0.2); at 0 beyond the margin (satisfied, 0.3 away); at C inside it (satisfied, 0.1 away); no cost
    shortfall = np.array([0.7, 0.5, -0.2, -0.3, 0.1, 0.4])
    alpha = np.array([0.5, 0.0, 1.0, 0.0, 1.0, 0.0])
    cost = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    lengths = np.array([1.0, 2.0, 0.5, 1.0, 1.0, 1.0])
    keys = band_keys(shortfall, alpha, cost, lengths)
    assert keys[0] == -np.inf and keys[5] == np.inf
    np.testing.assert_array_equal(keys[1:5], [-0.25, -0.4, 0.3, 0.1])
    assert np.argsort(keys).tolist() == [0, 2, 1, 4, 3, 5]


@pytest.mark.parametrize("sparse", [False, True])
def test_a_kept_read_sums_every_rows_value_and_keeps_its_band_rows_values_and_ids(sparse):
    rng = np.random.default_rng(3)
    n, d, bias = 50, 4, 1.0
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    cost = np.full(n, 0.7)
    cost[4] = 0.0
    reference, w = rng.normal(size=d + 1), rng.normal(size=d + 1)
    base = block_base(3, 2)
    kept = KeptAlphas(reference).merged([base + 1, base + 6, base + 200], [0.3, 0.7, 0.1])
    rows = sp.csr_matrix(X) if sparse else X
    center, scale = np.zeros(d), np.full(d, 2.0)
    sampler = Sampler(10)
    u, totals = np.zeros(d + 1), np.zeros(2)
    add_kept_rows(sampler, rows, 2, base, y, cost, w, bias, kept, (center, scale), u, totals)
    # the reference: every row at its piece at the reference point, but the listed rows of this block
    at_ref = 1.0 - y * (X @ reference[:-1] + bias * reference[-1])
    alpha = np.where((cost > 0) & (at_ref > 0), cost, 0.0)
    alpha[[1, 6]] = [0.3, 0.7]
    shortfall = 1.0 - y * (X @ w[:-1] + bias * w[-1])
    np.testing.assert_allclose(u, np.append(X.T @ (alpha * y), bias * (alpha * y).sum()), rtol=1e-12)
    assert totals[1] == pytest.approx(alpha.sum(), rel=1e-12)
    assert totals[0] == pytest.approx(float(cost @ np.maximum(shortfall, 0.0)), rel=1e-12)
    band = sampler.sample()
    assert band.n_rows == 10 and band.shortfall.dtype == BAND_ROW
    places = band.shortfall["id"] - base
    np.testing.assert_array_equal(band.shortfall["alpha"], alpha[places])
    np.testing.assert_allclose(band.shortfall["shortfall"], shortfall[places], rtol=1e-12)
    lengths = np.sqrt(1.0 + (((X - center) / scale) ** 2).sum(axis=1))
    np.testing.assert_allclose(metric_lengths(rows, (center, scale)), lengths, rtol=1e-12)
    keys = band_keys(shortfall, alpha, cost, lengths)
    assert set(places.tolist()) == set(np.argsort(keys, kind="stable")[:10].tolist())


def _fit(X, y, **params):
    Xd = da.from_array(X, chunks=(-(-X.shape[0] // 8), X.shape[1]))
    yd = da.from_array(y, chunks=-(-X.shape[0] // 8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        defaults = dict(loss="hinge", solver="band", cache_bytes="10%", tol=1e-3, random_state=0)
        return LinearSVC(**{**defaults, **params}).fit(Xd, yd)


def test_the_kept_values_certify_ijcnn1_in_a_10_percent_cache_where_the_held_band_does_not(monkeypatch):
    """20,000 rows of ijcnn1, the intercept, C = 1, a 10% cache: the first band's step is certified on
    a sliver of its length; keeping every row's value, the reads reach 1e-3 in at most 8 (8 measured);
    holding the rows on their piece at each read (the first band's rule, its line search along the
    steps), the gap stood at 0.02 after 8 and 6.7e-3 after 15.  The dual rises at every read, and the
    certificate holds against LIBLINEAR's optimum."""
    X, y = load_libsvm_dataset("ijcnn1")
    X, y = X[:20_000], y[:20_000]
    clf = _fit(X, y, max_iter=8)
    assert clf.n_iter_ <= 8 and clf.duality_gap_ <= 1e-3
    duals = [r["dual"] for r in clf.history_[1:]]
    assert all(b > a for a, b in zip(duals, duals[1:], strict=False))
    sign = np.where(y > 0, 1.0, -1.0)
    with warnings.catch_warnings():  # stopped at its cap, its primal still bounds the optimum above
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = LiblinearSVC(loss="hinge", C=1.0, tol=1e-10, max_iter=100_000, random_state=0).fit(X, y)
    w = np.append(ref.coef_.ravel(), ref.intercept_)
    liblinear = 0.5 * float(w @ w) + float(np.maximum(0.0, 1.0 - sign * (X @ w[:-1] + w[-1])).sum())
    assert max(duals) <= liblinear * (1 + 1e-12)
    # the optimum certified to 1e-11 in memory: the fit's distance from it is within its gap
    _, optimum, _ = smoothed.solve_smoothed(smoothed.Rows(X, sign, np.ones(len(y)), 1.0), tol=1e-11)
    assert max(duals) <= optimum.primal * (1 + 1e-12)
    assert (clf.objective_ - optimum.dual) / clf.objective_ <= clf.duality_gap_ + 1e-9
    monkeypatch.setattr(sample_band._Problem, "keep_alphas", lambda self: None)
    held = _fit(X, y, max_iter=8)
    assert held.duality_gap_ > 1e-2


@pytest.mark.parametrize("name", ["a9a", "w8a"])
def test_every_kept_reads_certificate_is_a_true_bound_on_the_libsvm_sets(name):
    """Each read's dual is a feasible point's: never above LIBLINEAR's primal at its optimum; and
    each read's gap bounds the distance of its point from it (a9a and w8a, 12,000 rows each)."""
    X, y = load_libsvm_dataset(name)
    X, y = X[:12_000], y[:12_000]
    clf = _fit(X, y, max_iter=6, C=0.5, fit_intercept=False)
    sign = np.where(y > 0, 1.0, -1.0)
    with warnings.catch_warnings():  # stopped at its cap, its primal still bounds the optimum above
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = LiblinearSVC(
            loss="hinge", C=0.5, tol=1e-10, max_iter=200_000, fit_intercept=False, random_state=0
        )
        w = ref.fit(X, y).coef_.ravel()
    upper = 0.5 * float(w @ w) + 0.5 * float(np.maximum(0.0, 1.0 - sign * (X @ w)).sum())
    _, optimum, _ = smoothed.solve_smoothed(smoothed.Rows(X, sign, np.full(len(y), 0.5), 0.0), tol=1e-11)
    for record in clf.history_[1:]:
        assert record["dual"] <= min(upper, optimum.primal) * (1 + 1e-12)
        assert (record["primal"] - optimum.dual) / record["primal"] <= record["gap"] + 1e-9
    assert max(r["active"] for r in clf.history_[1:]) <= int(0.1 * len(y)) + 1
    assert len(clf.history_) == 7  # the sample's record and six reads, none given way


@pytest.mark.parametrize("offset", [False, True])
def test_the_smoothed_newton_hands_back_the_dual_point_of_its_certificates_dual(offset):
    """The band's kept values are the smoothed Newton's ``info["alpha"]``: within ``[0, C_i]``, and
    the certificate's dual is their value, ``S + sum alpha_i - 1/2 ||u + sum alpha_i y_i x~_i||^2``."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 5)) * [1.0, 3.0, 0.5, 10.0, 1.0]
    sign = np.where(X @ rng.normal(size=5) + rng.normal(size=400) > 0, 1.0, -1.0)
    cost = rng.uniform(0.2, 1.5, 400)
    u, S = (rng.normal(size=6), 37.5) if offset else (np.zeros(6), 0.0)
    rows = smoothed.Rows(X, sign, cost, 1.0)
    _, certificate, info = smoothed.solve_smoothed(rows, tol=1e-6, offset=(u, S) if offset else None)
    alpha = info["alpha"]
    assert np.all(alpha >= 0.0) and np.all(alpha <= cost)
    v = u + rows.weighted_sum(alpha)
    assert certificate.dual == pytest.approx(S + alpha.sum() - 0.5 * float(v @ v), rel=1e-12, abs=1e-9)


def _dual(rows, offset, alpha):
    u, S = offset
    v = u + rows.weighted_sum(alpha)
    return S + float(alpha.sum()) - 0.5 * float(v @ v)


@pytest.mark.parametrize("seed", range(6))
def test_the_values_kept_are_the_best_dual_point_between_the_kept_and_the_solves(seed):
    """``dual_on_segment``: of the points between two feasible dual points, the best one (against a
    grid of 2,001), in the box, never below either end; between two points either side of the
    optimum, the optimum, strictly above both ends."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 4)) * [1.0, 5.0, 0.2, 1.0]
    sign = np.where(X @ rng.normal(size=4) + rng.normal(size=300) > 0, 1.0, -1.0)
    cost = rng.uniform(0.1, 2.0, 300)
    rows = smoothed.Rows(X, sign, cost, 1.0)
    offset = (rng.normal(size=5), 12.5)
    start, end = cost * rng.uniform(size=300), cost * rng.uniform(size=300)
    alpha, value = dual_on_segment(rows, offset, start, end)
    assert np.all(alpha >= 0.0) and np.all(alpha <= cost)
    assert value == pytest.approx(_dual(rows, offset, alpha), rel=1e-12)
    grid = [_dual(rows, offset, start + t * (end - start)) for t in np.linspace(0.0, 1.0, 2001)]
    assert value >= max(grid) - 1e-9 * abs(max(grid))
    assert value >= max(_dual(rows, offset, start), _dual(rows, offset, end))  # the ends as they are
    # two points either side of the optimum, on its free rows: the best is between them
    _, _, info = smoothed.solve_smoothed(rows, tol=1e-10, offset=offset)
    best = info["alpha"]
    room = np.minimum(best, cost - best)
    assert np.count_nonzero(room > 1e-3 * cost) >= 2
    step = 0.5 * room * rng.choice([-1.0, 1.0], size=300)
    alpha, value = dual_on_segment(rows, offset, best - step, best + step)
    ends = max(_dual(rows, offset, best - step), _dual(rows, offset, best + step))
    assert value > ends + 1e-9 * abs(ends)  # the closed form's inner point
    assert value == pytest.approx(_dual(rows, offset, best), rel=1e-9)
    assert np.allclose(alpha, best)


def test_the_kept_points_dual_never_falls_where_a_band_solve_ends_below_it(monkeypatch):
    """Each kept read's sums give the kept point's dual, ``sum alpha_i - 1/2 ||sum alpha_i y_i x~_i||^2``.
    With every kept band solve's values halved (a feasible point below the solve's), the values
    kept are still the best on the segment from the kept ones: the kept point's dual never falls
    from read to read (a9a, 12,000 rows, C = 0.5).  Keeping the solve's values as they come
    (``dual_on_segment`` taking its end), it falls."""
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:12_000], y[:12_000]
    solve = sample_band.solve_band_problem

    def halved(*args, **kwargs):
        w, certificate, info = solve(*args, **kwargs)
        if kwargs.get("alpha") is not None:  # a kept band's solve
            info = {**info, "alpha": 0.5 * info["alpha"]}
        return w, certificate, info

    def kept_duals():
        duals, take = [], sample_band._Problem._take_kept

        def spy(self, sums, plan, tol, primal):
            duals.append(sums.held - 0.5 * float(sums.u @ sums.u))
            return take(self, sums, plan, tol, primal)

        monkeypatch.setattr(sample_band._Problem, "_take_kept", spy)
        _fit(X, y, max_iter=5, C=0.5, fit_intercept=False)
        return duals

    monkeypatch.setattr(sample_band, "solve_band_problem", halved)
    duals = kept_duals()
    assert len(duals) >= 3
    assert all(b >= a * (1 - 1e-12) for a, b in zip(duals, duals[1:], strict=False)), duals
    monkeypatch.setattr(sample_band, "dual_on_segment", lambda rows, offset, start, end: (end, -np.inf))
    falling = kept_duals()
    assert any(b < a for a, b in zip(falling, falling[1:], strict=False)), falling


def test_a_read_gains_where_its_point_moves_or_a_best_value_improves_by_any_amount():
    gained = sample_band.gained
    w = np.array([1.0, 2.0])
    assert not gained((w, 100.0, 50.0), (w.copy(), 100.0, 50.0))
    assert gained((w, 100.0, 50.0), (w.copy(), 100.0, np.nextafter(50.0, 51.0)))
    assert gained((w, 100.0, 50.0), (w.copy(), np.nextafter(100.0, 99.0), 50.0))
    assert gained((w, 100.0, 50.0), (w + [0.0, 1e-15], 100.0, 50.0))


def _narrow_band_rows(n=1000, d=200, seed=0):
    """Sparse rows whose 10% band (100 rows) is narrower than the model (201): the band fills with
    its free rows and its reads reach a fixed point above tol (STALL_GAIN's measurement)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.03, random_state=seed, format="csr") * 3.0
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def _narrow_band_fit(monkeypatch, stall_reads):
    """The named band on :func:`_narrow_band_rows` with ``STALL_READS`` set: the estimator, its
    ConvergenceWarnings' texts and the band's records (those before it gave way)."""
    monkeypatch.setattr(sample_band, "STALL_READS", stall_reads)
    X, y = _narrow_band_rows()
    Xd, yd = da.from_array(X, chunks=(250, X.shape[1])), da.from_array(y, chunks=250)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = LinearSVC(loss="hinge", C=0.5, cache_bytes="10%", tol=1e-3, max_iter=40, solver="band")
        clf.fit(Xd, yd)
    band = [r for r in clf.history_ if r.get("solver") == "band" and r["pass"] >= 1]
    return clf, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)], band


def test_the_band_gives_way_where_its_reads_gain_nothing_and_says_why(monkeypatch):
    """Where two reads in a row after the first gain nothing (their points do not move, their values
    do not improve), the next would solve the same band again: the band gives way (to StreamSVM,
    where named), the user told why, and the fit trains on to a true certificate.  Without the
    rule the band's reads go on to max_iter at the gap where it stopped; with one such read, it
    stops one read sooner."""
    assert sample_band.STALL_READS == 2
    clf, messages, band = _narrow_band_fit(monkeypatch, 2)
    last = band[-1]["pass"]
    assert last < 40 and band[-1]["gap"] > 1e-3
    assert any(
        f"gave way to solver='streamsvm' after {last} reads: its reads {last - 1} to {last} gained nothing"
        in m and "A larger cache_bytes" in m for m in messages
    )  # fmt: skip
    assert clf.history_[-1]["solver"] == "streamsvm"
    X, y = _narrow_band_rows()
    sign = np.where(y > 0, 1.0, -1.0)
    sk = LiblinearSVC(loss="hinge", C=0.5, tol=1e-10, max_iter=200_000).fit(X, y)
    w = np.append(sk.coef_.ravel(), sk.intercept_)
    reference = 0.5 * float(w @ w) + 0.5 * float(np.maximum(0.0, 1.0 - sign * (X @ w[:-1] + w[-1])).sum())
    assert (clf.objective_ - reference) / clf.objective_ <= clf.duality_gap_
    _, later, endless = _narrow_band_fit(monkeypatch, 10**9)  # the rule never stops the band
    assert endless[-1]["pass"] == 40 and any("within max_iter=40" in m for m in later)
    assert endless[-1]["gap"] == band[-1]["gap"]  # the reads after the stop gained nothing
    _, _, sooner = _narrow_band_fit(monkeypatch, 1)
    assert sooner[-1]["pass"] == last - 1 and sooner[-1]["gap"] == band[-1]["gap"]

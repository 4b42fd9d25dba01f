"""The L1 and elastic-net penalties out of core, on a cluster and on tall in-memory rows: Newton
reads whose steps descend the read's quadratic model (engine/primal/penalties.py), certified by the
scaled dual point, against scikit-learn's optima; each rule pinned (the model's solve, its ridge,
the dual's lower bound, the band's certificate with the L1 penalty)."""

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLogistic
from sklearn.svm import LinearSVC as SkLinearSVC

from dask_streamsvm import LinearSVC, LogisticRegression
from dask_streamsvm.engine.plan.losses import LOGISTIC as LOGISTIC_LOSS
from dask_streamsvm.engine.plan.losses import SQUARED_HINGE as SQUARED_HINGE_LOSS
from dask_streamsvm.engine.plan.losses import loss_of
from dask_streamsvm.engine.primal import l1, newton, penalties
from dask_streamsvm.engine.primal.reads import Sample
from dask_streamsvm.engine.primal.sums import block_sums
from dask_streamsvm.kernels import coordinate
from dask_streamsvm.kernels.losses import LOGISTIC, SQUARED_HINGE, newton_dual_term, newton_terms

from ._helpers import counted_reads, two_worker_client
from .test_l1 import _data, _signs, _value, sklearn_zero_patterns

PURE_L1 = (1.0, 0.0)
ELASTIC = (0.5, 0.5)


def _dense(name):
    X, y = _data(name)
    return (X.toarray() if hasattr(X, "toarray") else np.asarray(X)), y


def _collection(X, y, rows=500):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def _small_sample(X):
    """A ``cache_bytes`` whose sample holds about 400 rows: the Newton reads then stream every row."""
    return X.shape[1] * 8 * 400


def _reference(kind, X, y):
    """scikit-learn's optimum of the same problem (LIBLINEAR's ``-s 5`` and ``-s 6``)."""
    if kind == "svc":
        return SkLinearSVC(penalty="l1", dual=False, tol=1e-10, max_iter=100_000, random_state=0).fit(X, y)
    return SkLogistic(l1_ratio=1.0, solver="liblinear", tol=1e-10, max_iter=100_000, random_state=0).fit(X, y)


def _ours(kind, **params):
    if kind == "svc":
        return LinearSVC(penalty="l1", dual=False, **params)
    return LogisticRegression(l1_ratio=1.0, **params)


def _certified_against(model, X, y, w_ref, code, penalty):
    """The fit's objective is its weights' (our formula), within its certified gap of the reference
    point's, and its dual value is below the reference's primal value (weak duality)."""
    w = np.r_[model.coef_.ravel(), model.intercept_]
    ours = _value(X, y, w, code, penalty, model.classes_, model.C)
    assert model.objective_ == pytest.approx(ours, rel=1e-10)
    reference = _value(X, y, w_ref, code, penalty, model.classes_, model.C)
    gap = model.duality_gap_ * ours
    assert ours - reference <= gap + 1e-12 * ours
    assert ours - gap <= reference * (1 + 1e-12)
    return ours, reference


@pytest.mark.parametrize("kind, code", [("svc", SQUARED_HINGE), ("log", LOGISTIC)])
@pytest.mark.parametrize("name", ["a9a", "w8a", "ijcnn1", "dense"])
def test_streamed_l1_reaches_liblinear_within_the_gap(name, kind, code):
    """Streamed with a sample of 400 rows, so that the Newton reads train (not the sample's solve)."""
    X, y = _dense(name)
    Xd, yd = _collection(X, y)
    with dask.config.set(scheduler="sync"):
        model = _ours(kind, tol=1e-8, cache_bytes=_small_sample(X)).fit(Xd, yd)
    assert model.history_[0]["sample_rows"] < X.shape[0]
    assert model.history_[-1]["solver"] == "newton"
    assert model.duality_gap_ <= 1e-8
    sk = _reference(kind, X, y)
    _certified_against(model, X, y, np.r_[sk.coef_.ravel(), sk.intercept_], code, PURE_L1)


def test_the_streamed_zero_pattern_is_scikit_learns_where_its_solvers_agree():
    """As ``test_l1``'s in-memory check: where LIBLINEAR and saga agree on which weights are zero
    (a9a's one-hot groups make its L1 optimum's support not unique), the streamed fit does too."""
    X, y = make_classification(3000, 12, n_informative=3, n_redundant=0, random_state=3)
    C = 0.005
    logistic, agree, sk_svc = sklearn_zero_patterns(X, y, C)
    Xd, yd = _collection(X, y)
    with dask.config.set(scheduler="sync"):
        ours = LogisticRegression(l1_ratio=1.0, C=C, tol=1e-10, cache_bytes=_small_sample(X)).fit(Xd, yd)
        svc = LinearSVC(penalty="l1", dual=False, C=C, tol=1e-10, cache_bytes=_small_sample(X)).fit(Xd, yd)
    assert agree.any()
    np.testing.assert_array_equal((ours.coef_ != 0)[agree], logistic[agree])
    np.testing.assert_array_equal(svc.coef_ != 0, sk_svc)
    assert 0 < np.count_nonzero(svc.coef_) < X.shape[1]


def test_streamed_elastic_net_matches_the_in_memory_fit():
    """``l1_ratio=0.5`` streamed from Parquet: the in-memory fit's objective within both gaps."""
    X, y = _dense("ijcnn1")
    memory = LogisticRegression(l1_ratio=0.5, tol=1e-10, random_state=0).fit(X, y)
    Xd, yd = _collection(X, y)
    with dask.config.set(scheduler="sync"):
        streamed = LogisticRegression(l1_ratio=0.5, tol=1e-8, cache_bytes=_small_sample(X)).fit(Xd, yd)
    _certified_against(streamed, X, y, np.r_[memory.coef_.ravel(), memory.intercept_], LOGISTIC, ELASTIC)


def test_parquet_l1_fit_is_the_in_memory_model(tmp_path):
    X, y = _dense("dense")
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
    frame.to_parquet(tmp_path / "rows.parquet", row_group_size=100)
    ddf = dd.read_parquet(tmp_path / "rows.parquet", split_row_groups=True)
    features = [c for c in ddf.columns if c != "label"]
    with dask.config.set(scheduler="sync"):
        streamed = LinearSVC(penalty="l1", dual=False, tol=1e-9, cache_bytes=8 * 9 * 150).fit(
            ddf[features], ddf["label"]
        )
    memory = LinearSVC(penalty="l1", tol=1e-10, random_state=0).fit(X, y)
    _certified_against(streamed, X, y, np.r_[memory.coef_.ravel(), memory.intercept_], SQUARED_HINGE, PURE_L1)
    assert streamed.n_iter_ >= 1 and streamed.history_[0]["sample_rows"] < X.shape[0]


def test_the_squared_hinge_l1_step_is_certified_by_its_band():
    """The band's step minimises the L1 objective where only band rows change piece, and the band
    certifies its point without another read: the first Newton read ends a fit from a good sample."""
    X, y = _dense("ijcnn1")
    Xd, yd = _collection(X, y)
    with dask.config.set(scheduler="sync"):
        model = LinearSVC(penalty="l1", dual=False, tol=1e-6, cache_bytes=X.shape[1] * 8 * 2000).fit(Xd, yd)
    certified = [r for r in model.history_ if r.get("band_certified")]
    assert certified, "no read's band certified its step's point"
    assert model.duality_gap_ <= 1e-6
    # The band's step is the L1 objective's minimiser where only band rows change piece: the second
    # Newton read certifies it (read 0 keeps the sample, read 1 is at its solution).
    assert model.n_iter_ == 2 and model.history_[-1]["band_certified"]


@pytest.mark.parametrize("penalty_weights", [PURE_L1, ELASTIC])
def test_band_certificate_with_the_l1_penalty_is_the_exact_one(penalty_weights):
    """``band_certificate`` with :class:`~.penalties.Sparse`: its primal value and dual value are those
    computed from every row at the step's point, when no row outside the band changes piece."""
    X, y = _dense("dense")
    rng = np.random.default_rng(0)
    X = X[:, :8]
    signs = _signs(y, np.unique(y))
    cost = np.full(len(y), 0.7)
    penalty = penalties.Sparse(*penalty_weights)
    columns = l1.column_layout(X, 1.0)
    w = np.r_[0.3 * rng.standard_normal(X.shape[1]), 0.1]
    w[2] = 0.0  # a zero weight: the dual point's scale comes from the L1 part
    d = 1e-4 * rng.standard_normal(w.shape[0])
    Xb = columns.toarray()
    plan_like = _PlanLike()
    sums = block_sums(X, signs[None, :], cost[None, :], w[None, :], np.zeros((1, w.shape[0])), 1.0,
                             SQUARED_HINGE, None)  # fmt: skip
    H = penalty.hessian(sums.hessian[0])
    margins = signs * (Xb @ w)
    near = np.argsort(np.abs(1.0 - margins))[: len(y) // 2]
    band = _band(X[near], signs[near], cost[near], outside=np.sort(np.abs(1.0 - margins))[len(y) // 2] / 50)
    totals = (float(sums.loss[0]), float(sums.alpha[0]), sums.v[0])
    made = newton.band_certificate(w, d, totals, H, band, plan_like, penalty)
    assert made is not None
    exact = l1.certify(columns.tocsc(), signs, cost, SQUARED_HINGE, w + d, penalty_weights)[0]
    assert made.primal == pytest.approx(exact.primal, rel=1e-10)
    assert made.dual == pytest.approx(exact.dual, rel=1e-8)


class _PlanLike:
    loss, loss_code, bias, feature_map = "squared_hinge", SQUARED_HINGE, 1.0, None


def _band(X, signs, cost, outside):
    return Sample(X, signs, cost, rows_seen=X.shape[0] * 2, outside=outside,
                  metric=(np.zeros(X.shape[1]), np.ones(X.shape[1])))  # fmt: skip


# --- the model's solve ---------------------------------------------------------------------------


def _model(seed=0, n=40, singular=False):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((3 * n, n))
    if singular:
        A[:, -1] = A[:, 0] + A[:, 1]  # collinear columns: H is singular (no l2 part)
    H = A.T @ A
    return H, 5.0 * rng.standard_normal(n), 0.1 * rng.standard_normal(n)


def _q(H, g, w, l1_weight, s):
    return float(g @ s + 0.5 * s @ H @ s) + l1_weight * float(np.abs(w + s).sum())


def test_the_direction_minimises_the_reads_model():
    """The step meets the model's optimality conditions (no coordinate can improve it) and its value is
    below every coordinate-wise perturbation's."""
    H, g, w = _model()
    penalty = penalties.Sparse(2.0, 0.0)
    s = penalty.direction(w, g, H)
    ridged = H + penalties.MODEL_RIDGE * np.trace(H) / H.shape[0] * np.eye(H.shape[0])
    violation = penalties.violations(g + ridged @ s, w + s, 2.0)
    assert violation.max() <= 1e-9 * np.abs(g).max()
    best = _q(H, g, w, 2.0, s)
    for j in range(H.shape[0]):
        for delta in (1e-4, -1e-4):
            moved = s.copy()
            moved[j] += delta
            assert _q(H, g, w, 2.0, moved) >= best - 1e-9


def _a9a_model():
    """The model of a read at ``w = 0`` on 3,000 rows of a9a: its one-hot groups beside the bias column
    make the Hessian singular (pure L1: no l2 part)."""
    X, y = _dense("a9a")
    signs, cost = _signs(y, np.unique(y)), np.ones(len(y))
    w = np.zeros(X.shape[1] + 1)
    sums = block_sums(X, signs[None, :], cost[None, :], w[None, :], np.zeros((1, w.shape[0])), 1.0,
                      SQUARED_HINGE, None)  # fmt: skip
    penalty = penalties.Sparse(*PURE_L1)
    return penalty, penalty.hessian(sums.hessian[0]), penalty.gradient(w, sums.v[0]), w


def test_the_models_ridge_is_what_lets_a_singular_model_converge(monkeypatch):
    """On a9a's singular model, with :data:`~.penalties.MODEL_RIDGE` the direction meets the ridged
    model's optimality conditions to 1e-6 of the first violation; without it coordinate descent and
    the support's steps wander (1.8e-4 of it measured)."""
    penalty, H, g, w = _a9a_model()
    first = penalties.violations(g, w, 1.0).max()

    def left(ridge):
        monkeypatch.setattr(penalties, "MODEL_RIDGE", ridge)
        s = penalty.direction(w, g, H)
        ridged = H + ridge * max(1.0, np.trace(H) / H.shape[0]) * np.eye(H.shape[0])
        return penalties.violations(g + ridged @ s, w + s, 1.0).max() / first

    assert left(penalties.MODEL_RIDGE) <= 1e-6
    assert left(0.0) > 1e-5


def test_model_descent_stops_at_its_tolerance_and_counts_sweeps():
    H, g, w = _model(seed=1)
    d = np.zeros_like(w)
    sweeps, largest = coordinate.model_descent(H, g, w, 2.0, 1e-3, 10_000, d)
    assert largest <= 1e-3 and 1 <= sweeps < 10_000
    d1 = np.zeros_like(w)
    assert coordinate.model_descent(H, g, w, 2.0, 1e-3, 1, d1)[0] == 1


def test_the_support_step_only_decreases_the_model():
    """Where the support's Newton step would take a weight across zero it stops there, so the model
    never rises (the orthant's convex quadratic along its Newton direction)."""
    decreased = 0
    for seed in range(20):
        H, g, w = _model(seed=seed, n=12)
        s = 0.3 * np.random.default_rng(seed).standard_normal(12)
        before = _q(H, g, w, 1.0, s)
        penalties.support_step(H, g, w, 1.0, s)
        assert _q(H, g, w, 1.0, s) <= before + 1e-9 * abs(before)
        decreased += _q(H, g, w, 1.0, s) < before - 1e-6 * abs(before)
    assert decreased >= 15  # it steps: a step that did nothing would pass the line above


def test_armijos_decrease_is_tseng_and_yuns():
    """``Sparse.decrease`` is ``g . s + l1 (||w + s||_1 - ||w||_1)``, not the smooth part's ``g . s``
    (a step that moves weights across zero changes the penalty's kink)."""
    rng = np.random.default_rng(3)
    w, g, s = rng.standard_normal(8), rng.standard_normal(8), rng.standard_normal(8)
    penalty = penalties.Sparse(0.7, 0.3)
    expected = float(g @ s) + 0.7 * (np.abs(w + s).sum() - np.abs(w).sum())
    assert penalty.decrease(w, g, s) == pytest.approx(expected, rel=1e-12)
    assert abs(penalty.decrease(w, g, s) - float(g @ s)) > 1e-3
    assert penalties.L2().decrease(w, g, s) == pytest.approx(float(g @ s), rel=1e-15)


# --- the certificate -----------------------------------------------------------------------------


def test_the_scaled_dual_terms_are_exact_or_a_lower_bound():
    """``Loss.scaled_newton_terms``: the squared hinge's terms at ``t alpha`` exactly, the logistic
    loss's entropies bounded below by ``t H(alpha)`` (concave, 0 at 0), equal at ``t = 1``."""
    rng = np.random.default_rng(0)
    s = 1.0 - 3.0 * rng.standard_normal(200)  # shortfalls 1 - m
    cost = rng.uniform(0.1, 2.0, 200)
    for loss, code in ((SQUARED_HINGE_LOSS, SQUARED_HINGE), (LOGISTIC_LOSS, LOGISTIC)):
        terms = np.array([newton_terms(code, c, si) for c, si in zip(cost, s, strict=True)])
        alpha = terms[:, 1]
        dual_sum = sum(newton_dual_term(code, c, si, a) for c, si, a in zip(cost, s, alpha, strict=True))
        loss_sum = float(terms[:, 0] @ cost) if code == SQUARED_HINGE else float(terms[:, 0].sum())
        for t in (1.0, 0.7, 0.2):
            bound = loss.scaled_newton_terms(dual_sum, loss_sum, t)
            if code == SQUARED_HINGE:
                exact = float(np.sum(t * alpha - (t * alpha) ** 2 / (4.0 * cost)))
                assert bound == pytest.approx(exact, rel=1e-12)
            else:
                p = t * alpha / cost
                entropy = -cost * (p * np.log(p) + (1 - p) * np.log1p(-p))
                exact = float(entropy.sum())
                assert bound <= exact + 1e-9 * abs(exact)
                if t == 1.0:
                    assert bound == pytest.approx(exact, rel=1e-9)
                else:
                    assert bound < exact


def test_a_read_never_certifies_more_than_it_proved():
    """Every Newton read's dual value, at points near and far from the optimum, is at most the
    optimum's primal value; without the dual point's scaling it would not be (``t = 1``)."""
    X, y = _dense("a9a")
    sk = _reference("svc", X, y)
    optimum = _value(X, y, np.r_[sk.coef_.ravel(), sk.intercept_], SQUARED_HINGE, PURE_L1, sk.classes_)
    signs = _signs(y, sk.classes_)
    cost = np.ones(len(y))
    w_star = np.r_[sk.coef_.ravel(), sk.intercept_]
    penalty = penalties.Sparse(*PURE_L1)
    exceeded_unscaled = False
    for scale in (0.0, 0.5, 0.9, 0.99, 1.01, 1.5):
        w = scale * w_star
        sums = block_sums(X, signs[None, :], cost[None, :], w[None, :], np.zeros((1, w.shape[0])), 1.0,
                                 SQUARED_HINGE, None)  # fmt: skip
        v, dual_sum, loss_sum = sums.v[0], float(sums.alpha[0]), float(sums.loss[0])
        assert penalty.dual(SQUARED_HINGE_LOSS, dual_sum, v, loss_sum) <= optimum * (1 + 1e-12)
        unscaled = SQUARED_HINGE_LOSS.scaled_newton_terms(dual_sum, loss_sum, 1.0)
        exceeded_unscaled |= unscaled > optimum
    assert exceeded_unscaled


# --- where it runs, and what it refuses ----------------------------------------------------------


def test_a_dask_collection_trains_out_of_core_by_default():
    X, y = _dense("dense")
    Xd, yd = _collection(X, y, rows=100)
    with dask.config.set(scheduler="sync"):
        model = LogisticRegression(l1_ratio=1.0, tol=1e-8).fit(Xd, yd)
    assert model.history_[-1]["solver"] == "newton"
    assert model.duality_gap_ <= 1e-8


@pytest.mark.parametrize(
    "params, words",
    [
        ({"solver": "streamsvm"}, "Newton reads only.*solver='streamsvm'"),
        ({"solver": "band"}, "Newton reads only.*solver='band'"),
        ({"cluster": "cocoa"}, "Newton reads only.*cluster='cocoa'"),
        ({"checkpoint_dir": "CHECKPOINTS"}, "checkpoint_dir"),
    ],
)
def test_what_streamed_l1_cannot_train_is_refused_before_any_read(params, words, tmp_path):
    X, y = _dense("dense")
    Xd, yd, reads = counted_reads(X, y, 100)
    if params.get("checkpoint_dir") == "CHECKPOINTS":
        params = {**params, "checkpoint_dir": str(tmp_path)}
    with pytest.raises(ValueError, match=words) as info:
        LinearSVC(penalty="l1", dual=False, **params).fit(Xd, yd)
    assert "penalty='l1'" in str(info.value)
    assert reads == []


def test_a_model_too_wide_for_its_hessian_is_refused_with_advice():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, newton.MAX_WIDTH + 1))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    Xd, yd, reads = counted_reads(X, y, 30)
    words = "out of core forms the .*solver='memory'"
    with dask.config.set(scheduler="sync"), pytest.raises(ValueError, match=words):
        LogisticRegression(l1_ratio=1.0).fit(Xd, yd)
    assert reads == []  # refused before the first read


@pytest.mark.parametrize("kind, code", [("svc", SQUARED_HINGE), ("log", LOGISTIC)])
def test_a_two_worker_cluster_fit_reaches_liblinear_within_the_gap(kind, code):
    """On a LocalCluster of two worker processes (``cluster="auto"``): Newton reads, their sums added
    up the tree, the sample's warm start solved on a worker."""
    X, y = _dense("ijcnn1")
    Xd, yd = _collection(X, y)
    with two_worker_client():
        model = _ours(kind, tol=1e-8, cache_bytes=_small_sample(X)).fit(Xd, yd)
    assert model.cluster_parts_, "the fit did not run on the cluster"
    assert model.duality_gap_ <= 1e-8
    sk = _reference(kind, X, y)
    _certified_against(model, X, y, np.r_[sk.coef_.ravel(), sk.intercept_], code, PURE_L1)


def test_standardized_features_stream_to_the_in_memory_model():
    """``feature_map=Standardize()``: the penalty weighs the standardized weights in both fits, and
    the streamed Newton reads reach the in-memory coordinate descent's model."""
    from dask_streamsvm.features import Standardize

    X, y = make_classification(1000, 10, random_state=0)  # short rows: Newton steps in memory too
    X = X * np.arange(1, 11) * 10 + 5
    Xd, yd = _collection(X, y, rows=200)
    # A gap of 1e-9 bounds the objectives, not the weights: at 1e-9 the streamed fit (its reads now
    # certified a step sooner) stopped with weights 1e-4 (relative) from the in-memory fit's.
    memory = LogisticRegression(l1_ratio=1.0, feature_map=Standardize(), tol=1e-12, random_state=0).fit(X, y)
    assert {r["solver"] for r in memory.history_} <= {"newton", l1.SOLVER_NAME}
    with dask.config.set(scheduler="sync"):
        streamed = LogisticRegression(l1_ratio=1.0, feature_map=Standardize(), tol=1e-12,
                                      cache_bytes=8 * 11 * 300).fit(Xd, yd)  # fmt: skip
    assert streamed.history_[-1]["solver"] == "newton"
    assert abs(streamed.objective_ - memory.objective_) <= 2e-12 * memory.objective_
    np.testing.assert_allclose(streamed.coef_, memory.coef_, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kind, code", [("svc", SQUARED_HINGE), ("log", LOGISTIC)])
def test_tall_rows_in_memory_take_the_newton_reads(kind, code):
    """The whole of ijcnn1 in memory (49,990 rows, 23 columns: tall) trains by the Newton reads, not
    coordinate descent, to LIBLINEAR's optimum within the gap."""
    from .test_l1 import load_libsvm_dataset

    X, y = load_libsvm_dataset("ijcnn1")
    model = _ours(kind, tol=1e-9).fit(X, y)
    assert model.history_[-1]["solver"] == "newton"
    assert model.duality_gap_ <= 1e-9
    sk = _reference(kind, X, y)
    _certified_against(model, X, y, np.r_[sk.coef_.ravel(), sk.intercept_], code, PURE_L1)


def test_values_too_large_for_the_sums_take_coordinate_descent():
    """In memory the Newton steps train rows of any shape (fewer rows than PRIMAL_RATIO times the
    width too); a value beyond MAX_VALUE (the Newton sums' limit): coordinate descent, certified as
    well."""
    from dask_streamsvm.engine.choice import PRIMAL_RATIO
    from dask_streamsvm.engine.primal.sums import MAX_VALUE

    X, y = make_classification(PRIMAL_RATIO * 5, 4, n_informative=2, n_redundant=0, random_state=0)
    assert LinearSVC(penalty="l1", tol=1e-8).fit(X, y).history_[-1]["solver"] == "newton"
    short = LinearSVC(penalty="l1", tol=1e-8).fit(X[: PRIMAL_RATIO * 5 - 1], y[: PRIMAL_RATIO * 5 - 1])
    assert short.history_[-1]["solver"] == "newton" and short.duality_gap_ <= 1e-8
    X[0, 0] = 10 * MAX_VALUE
    with pytest.warns(ConvergenceWarning):  # coordinate descent, on such a scale, does not get far
        large = LogisticRegression(l1_ratio=1.0, max_iter=3).fit(X, y)
    assert large.history_[-1]["solver"] == l1.SOLVER_NAME


def test_values_beyond_the_sums_limit_are_refused_with_l1_advice():
    """Streamed, a value beyond MAX_VALUE stops the Newton reads' first read; the message does not
    advise the dual solvers (which do not train the L1 penalty) but coordinate descent in memory."""
    from dask_streamsvm.engine.primal.sums import MAX_VALUE

    X, y = _dense("dense")
    X[5, 2] = 10 * MAX_VALUE
    Xd, yd = _collection(X, y, rows=100)
    with dask.config.set(scheduler="sync"), pytest.raises(ValueError) as info:
        LinearSVC(penalty="l1").fit(Xd, yd)
    assert "dual=True" not in str(info.value) and "solver='memory'" in str(info.value)


# -- wider than a cluster's formed Hessian: the orthant-wise Newton step from its products ----------


def _wide_rows(n=1500, d=1300, seed=0, noise=0.3):
    """Sparse rows wider than the Hessian a cluster forms (1,023 features and the bias), labels of a
    sparse model (with Gaussian noise of deviation ``noise`` on the margins)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.01, random_state=seed, format="csr") * 3.0
    truth = rng.standard_normal(d) * (rng.random(d) < 0.1)
    return X, np.where(X @ truth + noise * rng.standard_normal(n) > 0, 1.0, -1.0)


def _steps(monkeypatch, steps):
    """``"free block"``: the cluster's steps as they are (the free weights' block formed and added up
    the tree where at most penalties.CG_WIDTH are free); ``"columns"``: no block (CG_WIDTH 0, as
    where more weights are free), the model descended on the root by the columns of the parts'
    active rows where they are few enough (products.gathers); ``"products"``: the damped orthant
    steps from the Hessian's products alone (no block, no columns: COLUMNS_SHARE 0).  Returns the
    check of the records: blocks were formed in the first; none and columns' directions in the
    second; none, products and no columns' directions in the third."""
    from dask_streamsvm.engine.cluster import products
    from dask_streamsvm.engine.cluster.products import TruncatedNewton

    if steps != "free block":
        monkeypatch.setattr(penalties, "CG_WIDTH", 0)
    if steps == "products":
        monkeypatch.setattr(products, "COLUMNS_SHARE", 0.0)
    blocks = []
    formed = TruncatedNewton.free_gram
    monkeypatch.setattr(
        TruncatedNewton, "free_gram", lambda self, j, c: blocks.append(len(c)) or formed(self, j, c)
    )

    def took(records):
        products, columns = records[-1]["products"], records[-1]["columns_directions"]
        if steps == "products":
            return not blocks and products > 0 and columns == 0
        if steps == "columns":
            return not blocks and columns > 0
        return len(blocks) > 0

    return took


@pytest.mark.parametrize("steps", ["free block", "products"])
@pytest.mark.parametrize("l1_ratio", [0.5, 0.2])
def test_an_elastic_net_wider_than_the_clusters_hessian_reaches_the_optimum_by_orthant_newton_steps(
    l1_ratio, steps, monkeypatch
):
    """``cluster="auto"`` on a model 1,301 wide: truncated Newton, each step the model on the free
    weights, their block of the Hessian added up the tree (penalties.Sparse.free_direction), or the
    orthant's Newton system solved by conjugate gradient on the parts' Hessian products
    (penalties.Sparse.products_direction), to the in-memory optimum (coordinate descent, certified
    to 1e-12), within the certified gap, with its zero pattern."""
    X, y = _wide_rows()
    estimator = LogisticRegression(l1_ratio=l1_ratio, C=0.5, max_iter=300)
    reference = clone(estimator).set_params(tol=1e-12, solver="memory").fit(X, y)
    assert reference.duality_gap_ <= 1e-12
    took = _steps(monkeypatch, steps)
    Xd, yd = da.from_array(X, chunks=(500, X.shape[1])), da.from_array(y, chunks=500)
    with two_worker_client():
        model = estimator.set_params(tol=1e-8).fit(Xd, yd)
    assert {r["method"] for r in model.history_} == {"truncated_newton"} and took(model.history_)
    assert model.duality_gap_ <= 1e-8
    penalty = (l1_ratio, 1.0 - l1_ratio)
    _certified_against(model, X, y, np.r_[reference.coef_.ravel(), reference.intercept_], LOGISTIC, penalty)
    # The zero pattern is the optimum's: a weight is zero in both or in neither.
    assert np.array_equal(model.coef_ != 0, reference.coef_ != 0)


@pytest.mark.parametrize(
    "estimator, code, tol",
    [
        (LinearSVC(penalty="l1", dual=False, C=0.2, max_iter=300), SQUARED_HINGE, 1e-6),
        (LogisticRegression(l1_ratio=1.0, C=0.5, max_iter=300), LOGISTIC, 1e-6),
    ],
    ids=["squared hinge", "logistic"],
)
@pytest.mark.parametrize("steps", ["free block", "products"])
def test_pure_l1_wider_than_the_clusters_hessian_reaches_the_optimum_by_damped_orthant_steps(
    estimator, code, tol, steps, monkeypatch
):
    """Pure L1 beyond the formed Hessian: the free weights' model, or the orthant's steps damped
    (newton._Problem.damp), reach the in-memory optimum within the certified gap.  Undamped, the
    squared hinge's steps on these rows stood at a gap of 0.91 after 1,000 steps (its Hessian
    singular on the free weights).  The logistic loss's tol is 1e-6: with the products' steps its
    primal value stops changing in 12 digits by step 25, and its scaled dual point
    (l1.dual_scale) then leaves a gap of 1.5e-8 (measured)."""
    X, y = _wide_rows()
    reference = clone(estimator).set_params(tol=1e-12, solver="memory", max_iter=10_000).fit(X, y)
    assert reference.duality_gap_ <= 1e-12
    took = _steps(monkeypatch, steps)
    Xd, yd = da.from_array(X, chunks=(500, X.shape[1])), da.from_array(y, chunks=500)
    with two_worker_client():
        model = clone(estimator).set_params(tol=tol).fit(Xd, yd)
    assert {r["method"] for r in model.history_} == {"truncated_newton"} and took(model.history_)
    assert model.duality_gap_ <= tol
    _certified_against(model, X, y, np.r_[reference.coef_.ravel(), reference.intercept_], code, PURE_L1)


def test_the_active_rows_gathered_on_the_root_descend_the_model_to_the_optimum(monkeypatch):
    """LinearSVC(penalty="l1") beyond the formed block (CG_WIDTH 0) on 3,000 separable rows at C = 1,
    where at the optimum 1,176 rows are active: from the first step whose active rows are at most
    twice the largest part's in number and bytes (products.gathers), each direction is the model on
    the free weights descended on the root by the columns of the parts' active rows, and the fit
    reaches the in-memory optimum within its certified gap, with its zero pattern, in at most 200
    steps (measured at a share of 1: 74, 65 of them gathered).  The damped orthant steps of the
    products alone (COLUMNS_SHARE 0) stood at a gap of 3.6e-5 after 1,000 steps (measured, 158 s)."""
    X, y = _wide_rows(n=3000, noise=0.0)
    estimator = LinearSVC(penalty="l1", dual=False, C=1.0, max_iter=200)
    reference = clone(estimator).set_params(tol=1e-12, solver="memory").fit(X, y)
    assert reference.duality_gap_ <= 1e-12
    took = _steps(monkeypatch, "columns")
    Xd, yd = da.from_array(X, chunks=(750, X.shape[1])), da.from_array(y, chunks=750)
    with two_worker_client():
        model = clone(estimator).set_params(tol=1e-8).fit(Xd, yd)
    assert took(model.history_) and model.duality_gap_ <= 1e-8
    _certified_against(
        model, X, y, np.r_[reference.coef_.ravel(), reference.intercept_], SQUARED_HINGE, PURE_L1
    )
    assert np.array_equal(model.coef_ != 0, reference.coef_ != 0)


def test_the_active_rows_are_gathered_where_they_take_at_most_a_part_and_the_roots_room():
    """products.gathers: at most COLUMNS_SHARE (2) times the largest part's rows in number and in
    bytes, and at most the root's room (gather_room: cache_bytes, and a third of the worker's room
    below its spill target); the number alone before the bytes are counted."""
    from dask_streamsvm.engine.cluster import products

    assert products.COLUMNS_SHARE == 2.0 and products.ROOM_COPIES == 3
    largest = (50, 500)
    assert products.gathers((100, 1000), largest) and not products.gathers((100, 1001), largest)
    assert not products.gathers((101, 10), largest)
    assert products.gathers((100, None), largest) and not products.gathers((101, None), largest)
    assert products.gathers((50, 500), largest, 500) and not products.gathers((50, 501), largest, 500)

    class Plan:
        cache_bytes = None

    assert products.gather_room(Plan()) is None  # outside a worker, no cache_bytes: no limit
    Plan.cache_bytes = 12345
    assert products.gather_room(Plan()) == 12345
    with two_worker_client(memory_limit="2GiB") as client:
        Plan.cache_bytes = None
        room, limit = client.submit(
            lambda: (
                products.gather_room(Plan()),
                __import__("distributed").get_worker().memory_manager.memory_limit,
            )
        ).result()
    assert 0 < room <= 0.6 * limit / 3


def test_the_parts_active_rows_on_the_free_weights_are_their_values_there():
    """products.part_active_columns: a part's rows with D_ii > 0, their values on the free features
    only (the width kept), and their D_ii; part_active_nbytes counts their bytes exactly for CSR
    rows and at least for dense rows."""
    from dask_streamsvm.engine.cluster.products import (
        Evaluated,
        part_active_columns,
        part_active_nbytes,
        rows_nbytes,
    )

    rng = np.random.default_rng(3)
    X = sp.random(40, 12, density=0.4, random_state=3, format="csr")
    d = np.where(rng.random(40) < 0.5, rng.random(40), 0.0)
    free = np.array([1, 4, 5, 9, 12])  # 12: the bias's
    for rows in (X, X.toarray()):
        evaluated = Evaluated(None, None, [(rows, d)])
        block, D = part_active_columns(evaluated, 0, free)
        active = np.flatnonzero(d > 0)
        expected = X.toarray()[active]
        expected[:, np.setdiff1d(np.arange(12), free)] = 0.0
        assert block.shape == (active.size, 12) and np.array_equal(block.toarray(), expected)
        assert np.array_equal(D, d[active])
        counted = part_active_nbytes(evaluated, 0, free)
        exact = rows_nbytes(block) + D.nbytes
        assert counted == exact if sp.issparse(rows) else counted >= exact


def test_the_products_direction_is_damped_up_after_a_refused_step_and_down_after_a_full_one():
    """The damping's rule and constants (newton.DAMPING_*): 0.3 of the Hessian's mean diagonal at
    first, four times more after a refused step, half after a full step taken, unchanged after a
    step cut to the trust radius, never below 1e-6; the L2 penalty's is 0 and stays 0."""
    problem = newton._Problem(3, loss_of("log_loss"), penalty=penalties.Sparse(1.0, 0.0))
    assert problem.damping == 0.3
    problem.accepted, problem.fraction = False, 1.0
    problem.damp()
    assert problem.damping == pytest.approx(1.2)
    problem.accepted = True
    problem.damp()
    assert problem.damping == pytest.approx(0.6)
    problem.fraction = 0.5
    problem.damp()
    assert problem.damping == pytest.approx(0.6)
    problem.fraction = 1.0
    for _ in range(40):
        problem.damp()
    assert problem.damping == 1e-6
    smooth = newton._Problem(3, loss_of("log_loss"))
    smooth.accepted = False
    smooth.damp()
    assert smooth.damping == 0.0


def test_undamped_orthant_steps_stall_where_damped_ones_converge(monkeypatch):
    """In memory, on the Hessian's products of the wide rows alone (what a cluster's parts give where
    too many weights are free: no block of them, penalties.CG_WIDTH 0, and no columns' model): the
    squared hinge's pure L1 reaches a gap of 1e-6 in at most 300 steps damped, and stalls undamped
    (DAMPING_START 0: the rule removed)."""
    from dask_streamsvm.engine.plan.problem import FitPlan
    from dask_streamsvm.engine.primal.sums import ProductRead

    monkeypatch.setattr(penalties, "CG_WIDTH", 0)
    monkeypatch.setattr(penalties.Sparse, "columns_direction", lambda self, w, g, terms, shift=0.0: None)
    X, y = _wide_rows()
    classes, counts = np.unique(y, return_counts=True)
    plan = FitPlan(C=0.2, l1_ratio=1.0, tol=1e-6, max_iter=300, solver="memory")
    plan = plan.with_labels(classes, counts, classes)
    index = np.searchsorted(classes, y)

    def gap():
        read = ProductRead(
            X, plan.signs[:, index], plan.costs[:, index], plan.bias, plan.loss_code, identity=0.0
        )
        return newton.solve_primal(read, plan, X.shape[1]).certificates[0].relative_gap

    assert gap() <= 1e-6
    monkeypatch.setattr(newton, "DAMPING_START", 0.0)
    assert gap() > 0.1


def test_the_orthant_step_only_descends_and_stops_weights_at_zero():
    """Each coordinate of the Newton solution that does not descend the orthant's gradient is
    dropped, and a weight the step takes across zero stops there (OWL-QN's projections): the step's
    Delta is then negative, and removing either projection changes the step."""
    w = np.array([1.0, -1.0, 0.0, 0.5, 0.0])
    g = np.array([0.2, 0.3, 2.0, 0.1, 0.5])  # the last is at zero with |g| < l1: held
    free, zeta, r = penalties.orthant(w, g, 1.0)
    np.testing.assert_array_equal(free, [True, True, True, True, False])
    np.testing.assert_array_equal(zeta, [1.0, -1.0, -1.0, 1.0, 0.0])
    np.testing.assert_allclose(r, [1.2, -0.7, 1.0, 1.1, 0.0])
    e = np.array([-3.0, -0.5, -0.5, 0.2, 0.0])  # crosses zero, wrong way, descends, wrong way
    s = penalties.orthant_step(w, e, r, zeta)
    np.testing.assert_allclose(s, [-1.0, 0.0, -0.5, 0.0, 0.0])
    sparse = penalties.Sparse(1.0, 0.0)
    assert sparse.decrease(w, g, s) == pytest.approx(float(r @ s))
    assert float(r @ s) < 0


def test_the_masked_conjugate_gradient_solves_the_free_block():
    """``held_on``: the products kept on the free coordinates make the conjugate gradient solve
    ``H_FF e = -r_F`` (and leave the others at zero), not the full system."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((30, 8))
    H = A.T @ A + np.eye(8)
    free = np.array([True, False, True, True, False, True, True, False])
    r = np.where(free, rng.standard_normal(8), 0.0)
    e, _ = newton._conjugate_gradient(lambda p: H @ p, np.diag(H), r, free)
    expected = np.zeros(8)
    expected[free] = np.linalg.solve(H[np.ix_(free, free)], -r[free])
    assert np.all(e[~free] == 0.0)
    np.testing.assert_allclose(e, expected, rtol=0.15, atol=0.15 * np.abs(expected).max())

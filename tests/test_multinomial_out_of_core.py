"""Multinomial logistic regression streamed (engine/primal/multinomial_reads.py): a warm start from
the first read's sample, then a read per Newton step; scikit-learn's optima within the certified
gap, the read's certificate (never above the exact one, nor above the optimum), and each rule pinned."""

import warnings

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LogisticRegression, PolynomialMap
from dask_streamsvm.engine.plan.problem import MULTINOMIAL_SOLVER
from dask_streamsvm.engine.primal import multinomial, multinomial_reads
from dask_streamsvm.engine.primal.newton import MAX_WIDTH

from ._helpers import counted_reads, two_worker_client
from .test_multinomial import ROUNDING, _bad_intercept_point, _generated, objective, reference

OUR_TOL = 1e-11


def _collection(X, y, rows):
    if sp.issparse(X):
        blocks = [X[i : i + rows] for i in range(0, X.shape[0], rows)]
        parts = [da.from_delayed(dask.delayed(b), shape=b.shape, dtype=X.dtype, meta=sp.csr_matrix((0, 0)))
                 for b in blocks]  # fmt: skip
        return da.concatenate(parts), da.from_array(y, chunks=rows)
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def _sample_bytes(X, rows):
    """A ``cache_bytes`` whose sample holds about ``rows`` rows: the Newton reads then train."""
    return X.shape[1] * 8 * rows


def _streamed(X, y, C=1.0, rows=100, sample=None, sample_weight=None, **params):
    Xd, yd = _collection(X, y, rows)
    wd = None if sample_weight is None else da.from_array(sample_weight, chunks=rows)
    cache = _sample_bytes(X, sample if sample is not None else X.shape[0] // 3)
    model = LogisticRegression(multi_class="multinomial", C=C, tol=OUR_TOL, cache_bytes=cache, **params)
    with dask.config.set(scheduler="sync"):
        return model.fit(Xd, yd, sample_weight=wd)


def check_streamed(X, y, C=1.0, sample_weight=None, **params):
    """The streamed fit trained by its Newton reads (its sample held fewer rows than the data), its
    objective within its certified gap of scikit-learn's optimum, its probabilities scikit-learn's."""
    ours = _streamed(X, y, C, sample_weight=sample_weight, **params)
    assert ours.history_[0]["sample_rows"] < X.shape[0]
    assert ours.history_[-1]["solver"] == MULTINOMIAL_SOLVER and ours.n_iter_ >= 1
    assert ours.duality_gap_ <= OUR_TOL
    sk = reference(X, y, C, sample_weight=sample_weight, **params)
    weights = {"sample_weight": sample_weight, "class_weight": params.get("class_weight")}
    P = objective(X, y, ours.coef_, ours.intercept_, C, **weights)
    P_star = objective(X, y, sk.coef_, sk.intercept_, C, **weights)
    assert ours.objective_ == pytest.approx(P, rel=ROUNDING)
    assert (P - P_star) / P <= ours.duality_gap_ + ROUNDING
    assert P * (1.0 - ours.duality_gap_) <= P_star * (1.0 + ROUNDING)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-6, rtol=0)
    return ours, sk


@pytest.mark.parametrize("n_classes", [3, 5])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_streamed_generated_sets_reach_sklearns_optimum_within_the_gap(n_classes, sparse, fit_intercept):
    X, y = _generated(n_classes, sparse, n=1500)
    check_streamed(X, y, fit_intercept=fit_intercept)


@pytest.mark.parametrize("loader, C", [(load_iris, 1.0), (load_wine, 0.1), (load_digits, 1.0)])
def test_streamed_real_multiclass_sets_reach_sklearns_optimum_within_the_gap(loader, C):
    X, y = loader(return_X_y=True)
    order = np.random.RandomState(0).permutation(X.shape[0])  # blocks of every class
    check_streamed(X[order].astype(np.float64), y[order], C=C)


def test_streamed_weights_enter_as_scikit_learns():
    X, y = _generated(3, n=1200, seed=1)
    weight = np.random.RandomState(1).uniform(0.0, 3.0, X.shape[0])
    weight[:10] = 0.0
    check_streamed(X, y, C=0.5, sample_weight=weight)
    check_streamed(X, y, C=2.0, class_weight={0: 0.5, 1: 2.0, 2: 1.0}, sample_weight=weight)
    check_streamed(X, y, C=1.0, class_weight="balanced", sample_weight=weight + 0.1)


def test_two_classes_streamed_fit_sklearns_binary_model():
    X, y = _generated(2, n=1200)
    ours, sk = check_streamed(X, y)
    assert ours.coef_.shape == (1, X.shape[1])


def test_parquet_fit_is_the_in_memory_model(tmp_path):
    X, y = _generated(4, n=2000, d=6)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
    frame.to_parquet(tmp_path / "rows.parquet", row_group_size=250)
    ddf = dd.read_parquet(tmp_path / "rows.parquet", split_row_groups=True)
    features = [c for c in ddf.columns if c != "label"]
    with dask.config.set(scheduler="sync"):
        streamed = LogisticRegression(multi_class="multinomial", tol=1e-10, cache_bytes=_sample_bytes(X, 400))
        streamed.fit(ddf[features], ddf["label"])
    memory = LogisticRegression(multi_class="multinomial", tol=1e-12).fit(X, y)
    assert streamed.history_[0]["sample_rows"] < X.shape[0] and streamed.n_iter_ >= 1
    assert streamed.objective_ <= memory.objective_ * (1 + streamed.duality_gap_ + ROUNDING)
    assert streamed.objective_ * (1 - streamed.duality_gap_) <= memory.objective_ * (1 + ROUNDING)
    np.testing.assert_allclose(
        streamed.predict_proba(frame[features]), memory.predict_proba(X), atol=1e-6, rtol=0
    )


def test_each_read_is_one_point_certified_and_the_reads_are_few():
    """The first read keeps the sample, whose solution is where the Newton reads start: from a sample
    of 2,181 of 20,000 rows, a 1e-3 gap in three of them (docs/solvers.md), and no other read."""
    X, y = _generated(4, n=20_000, d=8, seed=2)
    Xd, yd, reads = counted_reads(X, y, 2500)
    with dask.config.set(scheduler="sync"):
        model = LogisticRegression(multi_class="multinomial", tol=1e-3, cache_bytes=_sample_bytes(X, 3000))
        model.fit(Xd, yd)
    assert model.history_[0]["sample_rows"] == 2181
    assert [r["pass"] for r in model.history_] == [1, 2, 3] and model.n_iter_ == 3
    blocks = X.shape[0] // 2500
    # The count and sample, then three Newton reads; the reader runs ahead across the end of a read
    # (reads.StreamRead) by as many partitions as it may hold alive, prefetch + 1 (data/reader.py: a
    # loaded machine gave the reader time for the last one, 36 reads at prefetch 2, where prefetch
    # alone failed this test), and map_blocks computes its meta once.
    assert 4 * blocks <= len(reads) <= 4 * blocks + model.prefetch + 2
    assert model.history_[-1]["rows_read"] == 4 * X.shape[0]  # the first read's rows are counted too
    assert model.duality_gap_ <= 1e-3


def test_a_sample_of_every_row_is_the_fit():
    """Where the budget holds every row, the sample's problem is the data's: solved in memory to
    ``tol`` after the one read that counted the classes, certified as the data's."""
    X, y = _generated(3, n=600)
    Xd, yd, reads = counted_reads(X, y, 100)
    with dask.config.set(scheduler="sync"):
        model = LogisticRegression(multi_class="multinomial", tol=1e-10).fit(Xd, yd)
    assert len(reads) == 6  # one read
    assert model.history_[0]["sample_rows"] == X.shape[0]
    memory = LogisticRegression(multi_class="multinomial", tol=1e-10).fit(X, y)
    np.testing.assert_allclose(model.coef_, memory.coef_, rtol=0, atol=1e-12)
    assert model.duality_gap_ <= 1e-10


def _problem(X, y, K, fit_intercept=True, cost=None):
    cost = np.ones(X.shape[0]) if cost is None else cost
    return multinomial.SoftmaxProblem(X, y, cost, K, fit_intercept)


def _rows(problem):
    """The problem's rows with their column of ones (the model's ``x~_i``), for NumPy's references."""
    return multinomial.augmented(problem.X, problem.fit_intercept)


@pytest.mark.parametrize("sparse", [False, True])
def test_the_reads_sums_are_the_rows_sums(sparse):
    """Summed a block at a time, the read's sums are those of every row at once (in memory)."""
    X, y = _generated(3, sparse, n=700)
    cost = np.random.RandomState(0).uniform(0.5, 2.0, X.shape[0])
    problem = _problem(X, y, 3, cost=cost)
    W = np.random.RandomState(1).normal(size=(3, X.shape[1] + 1))
    total = multinomial_reads.SoftmaxSums.zeros(3, X.shape[1] + 1)
    for lo in range(0, X.shape[0], 128):
        total.add(
            multinomial_reads.softmax_sums(X[lo : lo + 128], y[lo : lo + 128], cost[lo : lo + 128], W, True)
        )
    P, loss = problem.loss(np.asarray(_rows(problem) @ W.T))
    G, R = problem.gradient(W, P)
    assert total.loss == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(total.gradient, G - W * problem.penalised, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(total.residual, R.sum(axis=0), atol=1e-10)
    H = multinomial.regularised(total.hessian.copy(), problem.penalised, 3, True)
    np.testing.assert_allclose(H, problem.hessian(P), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(total.targets, problem.targets, rtol=1e-12)


def _kron_hessian(problem, P):
    """``sum_i C_i (diag(p_i) - p_i p_i^T) kron x~_i x~_i^T`` row by row in NumPy (``K D x K D``)."""
    Xa = np.asarray(_rows(problem).todense()) if sp.issparse(problem.X) else _rows(problem)
    A = np.einsum("ik,km->ikm", P, np.eye(P.shape[1])) - np.einsum("ik,im->ikm", P, P)
    H = np.einsum("i,ikm,ia,ib->kamb", problem.cost, A, Xa, Xa)
    K, D = P.shape[1], Xa.shape[1]
    return H.reshape(K * D, K * D)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_rows_hessian_and_its_product_at_a_point_are_numpys(sparse, fit_intercept, monkeypatch):
    """The rows' Hessian (dense rows: the Gram matrices of the rows scaled by each class pair's
    weights' square roots, a chunk of 64 rows at a time, no column of ones copied; CSR rows: the
    products of the augmented rows) and the product with a step that an in-memory read takes where
    it did not form the Hessian (:func:`moved_product`, the probabilities made again from the
    point), against the Kronecker sum row by row; rows of no cost add nothing."""
    from dask_streamsvm.engine.primal import sums

    monkeypatch.setattr(sums, "PRODUCT_CHUNK_BYTES", 8 * 64 * 13)  # 64-row chunks of 13 columns
    X, y = _generated(4, sparse, n=500)
    cost = np.random.RandomState(0).uniform(0.0, 2.0, X.shape[0])
    cost[:40] = 0.0
    problem = _problem(X, y, 4, fit_intercept, cost=cost)
    rng = np.random.RandomState(2)
    W, S = (rng.normal(scale=0.3, size=(4, problem.D)) for _ in range(2))
    P, _ = problem.loss(problem.scores(W))
    H = multinomial.rows_hessian(problem.X, cost, P, 4, fit_intercept)
    reference = _kron_hessian(problem, P)
    np.testing.assert_allclose(H, reference, rtol=1e-11, atol=1e-9)
    moved = multinomial_reads.moved_product(problem.X, problem.y_index, cost, W, S, fit_intercept)
    np.testing.assert_allclose(moved.ravel(), reference @ S.ravel(), rtol=1e-10, atol=1e-9)
    assert moved.shape == W.shape


def _skips_as_the_rule(history, tol, share):
    """Each read of ``history`` formed its Hessian unless the last accepted read formed one and its
    own certificate was within ``share`` times ``tol``; how many reads formed none."""
    skip = False
    for record in history:
        assert record["hessian_formed"] == (not skip), history
        if record["accepted"]:
            gap = (record["point_primal"] - record["point_dual"]) / record["point_primal"]
            skip = record["hessian_formed"] and gap <= share * tol
    return [r["hessian_formed"] for r in history].count(False)


def test_in_memory_reads_form_no_hessian_where_the_last_step_is_expected_to_end_the_fit():
    """Tall rows in memory: a read forms no Hessian (history's ``hessian_formed``) where the last
    read formed one and its certificate was within SKIP_HESSIAN_GAP times ``tol``; its certificate
    takes the exact product of its own rows' Hessian with a step.  Where such reads do not end the
    fit (every other read, SKIP_HESSIAN_GAP made huge), each steps by the last formed Hessian and
    the next forms one again.  Every read's dual value is at most scikit-learn's optimum, and each
    fit reaches it within its gap."""
    assert multinomial_reads.SKIP_HESSIAN_GAP == 10.0
    X, y = _generated(3, n=30_000, d=8, seed=7)
    sk = reference(X, y, 1.0)
    P_star = objective(X, y, sk.coef_, sk.intercept_, 1.0)

    def check(model, tol):
        assert all(r["point_dual"] <= P_star * (1 + ROUNDING) for r in model.history_)
        assert model.duality_gap_ <= tol
        P = objective(X, y, model.coef_, model.intercept_, 1.0)
        assert (P - P_star) / P <= model.duality_gap_ + ROUNDING

    ours = LogisticRegression(multi_class="multinomial", tol=1e-7).fit(X, y)
    assert _skips_as_the_rule(ours.history_, 1e-7, 10.0) == 1  # the last read: measured 4 reads
    assert not ours.history_[-1]["hessian_formed"]
    check(ours, 1e-7)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(multinomial_reads, "SKIP_HESSIAN_GAP", 1e300)
        every_other = LogisticRegression(multi_class="multinomial", tol=OUR_TOL).fit(X, y)
    skipped = _skips_as_the_rule(every_other.history_, OUR_TOL, 1e300)
    assert skipped >= 2 and [r["hessian_formed"] for r in every_other.history_][:4] == [True, False] * 2
    check(every_other, OUR_TOL)


def test_an_interrupt_in_a_reads_product_pass_keeps_its_certified_point(monkeypatch):
    """A read that formed no Hessian takes a pass over the rows in memory for its step's product; an
    interrupt there ends the fit with that read's point and its certificate without the step (the
    fit says it was interrupted), as an interrupt in a read does."""
    monkeypatch.setattr(multinomial_reads, "SKIP_HESSIAN_GAP", 1e300)  # the second read forms none

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(multinomial_reads, "moved_product", interrupted)
    X, y = _generated(3, n=30_000, d=8, seed=7)
    model = LogisticRegression(multi_class="multinomial", tol=OUR_TOL)
    with pytest.warns(UserWarning, match="fit was interrupted"):
        model.fit(X, y)
    assert model.n_iter_ == 2 and [r["hessian_formed"] for r in model.history_] == [True, False]
    sk = reference(X, y, 1.0)
    P, P_star = (objective(X, y, m.coef_, m.intercept_, 1.0) for m in (model, sk))
    assert model.objective_ == pytest.approx(P, rel=ROUNDING)
    assert OUR_TOL < (P - P_star) / P <= model.duality_gap_ + ROUNDING


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_reads_chunks_give_the_sums_of_every_row_in_float64(dtype, monkeypatch):
    """A read's sums a chunk of 64 rows at a time (float32 rows made float64 in the thread's
    scratch, the largest centred row measured in its scratch too) are the sums of every row at once
    of the same values in float64, and the largest row norm is NumPy's."""
    from dask_streamsvm.engine.primal import sums

    X, y = _generated(3, n=700)
    X = X.astype(dtype)
    cost = np.random.RandomState(0).uniform(0.5, 2.0, X.shape[0])
    W = np.random.RandomState(1).normal(size=(3, X.shape[1] + 1))
    metric = (X.mean(axis=0).astype(np.float64), X.std(axis=0).astype(np.float64) + 0.5)
    whole = multinomial_reads.softmax_sums(X.astype(np.float64), y, cost, W, True, metric, step=X.shape[0])
    monkeypatch.setattr(sums, "PRODUCT_CHUNK_BYTES", 8 * 64 * X.shape[1])  # the norm's chunks: 64 rows
    chunked = multinomial_reads.softmax_sums(X, y, cost, W, True, metric, step=64)
    assert chunked.loss == pytest.approx(whole.loss, rel=1e-12)
    np.testing.assert_allclose(chunked.gradient, whole.gradient, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(chunked.hessian, whole.hessian, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(chunked.shift_rows, whole.shift_rows, rtol=1e-10, atol=1e-10)
    norms = np.linalg.norm((X.astype(np.float64) - metric[0]) / metric[1], axis=1)
    assert chunked.row_norm == pytest.approx(float(norms.max()), rel=1e-14)


def _exact_dual(problem, Q, penalised):
    """The dual value of the point ``q_i = Q[i]`` in NumPy (module docstring of multinomial)."""
    cost = problem.cost
    theta = cost[:, None] * (problem.onehot - Q)
    V = np.asarray((_rows(problem).T @ theta).T) * penalised
    safe = np.where(Q > 0, Q, 1.0)
    return float(cost @ -(Q * np.log(safe)).sum(axis=1)) - 0.5 * float(np.sum(V * V))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_each_dual_point_the_read_bounds_is_feasible_and_bounded_below(fit_intercept):
    """Away from the optimum, each dual value a read gives is at most the exact dual value of its own
    point, computed here in NumPy, and below the optimum's primal value: the derivative's (equal to
    it, no intercept), the mix's (entropy bounded by concavity) and each level's shift, whose points
    are feasible (every probability at least half its own after the shift: SHIFT_SHARE); the levels
    used are exactly those where the shift moves no probability by more than half the floor."""
    X, y = _generated(3, n=800)
    problem = _problem(X, y, 3, fit_intercept)
    W_star = multinomial.solve_softmax(problem, tol=1e-13, max_iter=100)[0]
    optimum = problem.penalty(W_star) + problem.loss(np.asarray(_rows(problem) @ W_star.T))[1]
    rng = np.random.RandomState(2)
    penalised = problem.penalised
    shifted = 0
    for spread in (1e-4, 1e-3, 1e-2, 1e-1, 1.0):
        W = W_star + spread * rng.normal(size=W_star.shape)
        sums = multinomial_reads.softmax_sums(X, y, np.ones(X.shape[0]), W, fit_intercept)
        values = multinomial_reads.dual_values(sums, W, penalised, fit_intercept)
        P, loss = problem.loss(np.asarray(_rows(problem) @ W.T))
        _, R = problem.gradient(W, P)
        exact = problem.certify(W, P, R, loss)  # the mix's exact entropy (in memory)
        assert multinomial_reads.certificate(sums, W, penalised, fit_intercept).primal == pytest.approx(
            exact.primal, rel=1e-12
        )
        assert max(values.values()) <= optimum
        if not fit_intercept:
            assert values == {"derivative": pytest.approx(exact.dual, rel=1e-10)}
            continue
        assert values["mix"] <= exact.dual + 1e-9 * abs(exact.dual)
        g = -R.sum(axis=0)
        feasible = set()
        for j, floor in enumerate(multinomial_reads.FLOORS):
            level = P.min(axis=1) >= floor
            if not level.any():
                continue
            delta = g / problem.cost[level].sum()
            if np.abs(delta).max() <= 0.5 * floor:
                feasible.add(j)
        assert set(values) - {"mix"} == feasible
        for j in feasible:
            level = P.min(axis=1) >= multinomial_reads.FLOORS[j]
            Q = P.copy()
            Q[level] += g / problem.cost[level].sum()
            assert np.all(Q[level] >= 0.5 * P[level])
            np.testing.assert_allclose(
                (problem.cost[:, None] * (problem.onehot - Q)).sum(axis=0), 0, atol=1e-9
            )
            assert values[j] <= _exact_dual(problem, Q, penalised) + 1e-9 * abs(values[j])
        shifted += bool(feasible)
    assert shifted >= 2 or not fit_intercept  # near the optimum the shift applies
    assert multinomial_reads.SHIFT_SHARE == 0.5


def test_near_the_optimum_the_shift_certifies_more_than_the_mix():
    """Where the intercept's gradient is small the shift's point is far better than the mix's, whose
    shrink of every row's probabilities moves ``sum_i theta_i x_i`` by the classes' means."""
    X, y = _generated(3, n=800)
    problem = _problem(X, y, 3)
    W_star = multinomial.solve_softmax(problem, tol=1e-13, max_iter=100)[0]
    W = W_star + 1e-3 * np.random.RandomState(2).normal(size=W_star.shape)
    sums = multinomial_reads.softmax_sums(X, y, np.ones(X.shape[0]), W, True)
    values = multinomial_reads.dual_values(sums, W, problem.penalised, True)
    cert = multinomial_reads.certificate(sums, W, problem.penalised, True)
    mix_gap = (cert.primal - values["mix"]) / cert.primal
    assert cert.relative_gap < mix_gap / 5


def test_without_the_mix_the_read_would_claim_more_than_the_optimum(monkeypatch):
    """The mix (feasible_mix) is what keeps the read's dual point feasible: at a point whose unmixed
    dual point looks optimal (test_multinomial's), the read's "dual value" without it passes P*."""
    problem, W, P_star = _bad_intercept_point()
    X = problem.X
    sums = multinomial_reads.softmax_sums(X, problem.y_index, problem.cost, W, True)
    cert = multinomial_reads.certificate(sums, W, problem.penalised, True)
    assert cert.dual <= P_star and (cert.primal - P_star) / cert.primal > 0.01
    monkeypatch.setattr(multinomial_reads, "feasible_mix", lambda g, mass: (0.0, None))
    assert multinomial_reads.certificate(sums, W, problem.penalised, True).dual > P_star


def _far_start(monkeypatch):
    """A set whose streamed fits start 40 from the sample's solution in every weight: ``(X, y)``."""
    X, y = _generated(3, n=900, seed=4)
    real = multinomial_reads.warm_start

    def far(sample, problem, *args):
        W, notes, result = real(sample, problem, *args)
        return 40.0 * np.sign(W) + W, notes, result

    monkeypatch.setattr(multinomial_reads, "warm_start", far)
    return X, y


def test_a_refused_step_is_shortened_and_the_fit_still_reaches_the_optimum(monkeypatch):
    """From a start far from the optimum the full Newton step raises P: Armijo's rule refuses the
    read's point and the next read evaluates a shorter step (newton.shortened)."""
    X, y = _far_start(monkeypatch)
    ours = _streamed(X, y, rows=150, sample=300)
    assert any(not r.get("accepted", True) for r in ours.history_)
    assert ours.duality_gap_ <= OUR_TOL
    memory = LogisticRegression(multi_class="multinomial", tol=1e-12).fit(X, y)
    assert ours.objective_ <= memory.objective_ * (1 + OUR_TOL + ROUNDING)


def test_armijos_rule_is_what_refuses_the_step(monkeypatch):
    """The same far start with the rule removed (every read's point accepted): no read is refused,
    so the refusal above is the rule's, and the full steps do not converge."""
    X, y = _far_start(monkeypatch)
    monkeypatch.setattr(multinomial_reads, "sufficient_decrease", lambda value, slope, trial: True)
    with pytest.warns(ConvergenceWarning, match="did not reach tol"):
        ours = _streamed(X, y, rows=150, sample=300, max_iter=30)
    assert all(r.get("accepted", True) for r in ours.history_)  # and 30 reads did not converge


def test_what_the_streamed_model_does_not_combine_with_is_refused_before_any_read(tmp_path):
    X, y = _generated(3)
    Xd, yd, reads = counted_reads(X, y, 100)
    refused = [
        ({"solver": "streamsvm"}, "solver='streamsvm' (a streaming solver of the one-vs-rest problems)"),
        ({"checkpoint_dir": str(tmp_path / "ck")}, "checkpoint_dir"),
        ({"feature_map": PolynomialMap()}, "does not support a feature map yet"),
        ({"cluster": "cocoa"}, "names a dual method"),
    ]
    for params, words in refused:
        with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
            LogisticRegression(multi_class="multinomial", **params).fit(Xd, yd)
    assert reads == []
    wide = np.zeros((40, MAX_WIDTH // 2))
    Xw, yw, reads = counted_reads(wide, np.arange(40) % 3, 20)
    with pytest.raises(ValueError, match="beyond the 4096 it supports"):
        LogisticRegression(multi_class="multinomial").fit(Xw, yw)
    assert reads == []


def test_a_model_too_wide_for_its_classes_is_refused_after_the_count_only():
    """Two classes of 1,500 columns fit the formed Hessian, three do not: known once the first read
    has counted the classes, before the warm start and any Newton read."""
    X = np.random.RandomState(0).normal(size=(60, 1500))
    Xd, yd, reads = counted_reads(X, np.arange(60) % 3, 20)
    with pytest.raises(ValueError, match="3 classes times 1501 columns"):
        LogisticRegression(multi_class="multinomial").fit(Xd, yd)
    assert len(reads) == 3  # the one read that counted the classes


def test_solver_memory_computes_a_collection_and_predicts_lazily():
    X, y = _generated(3)
    Xd, yd = _collection(X, y, 100)
    with dask.config.set(scheduler="sync"):
        model = LogisticRegression(multi_class="multinomial", solver="memory", tol=1e-10).fit(Xd, yd)
        proba = model.predict_proba(Xd)
        assert isinstance(proba, da.Array)  # lazy, a block per chunk
        np.testing.assert_allclose(proba.compute(), model.predict_proba(X), rtol=1e-14)
    assert model.duality_gap_ <= 1e-10
    assert "sample_rows" not in model.history_[0]


def _shifted_q(problem, P, g, j, room=1.0):
    """The shift of level ``j`` on ``P`` (rows whose every probability reaches the floor): ``(Q, used)``
    with ``used`` False where the shift passes SHIFT_SHARE times ``room`` times the floor."""
    floor = multinomial_reads.FLOORS[j]
    level = P.min(axis=1) >= floor
    if not level.any():
        return None, False
    delta = g / problem.cost[level].sum()
    Q = P.copy()
    Q[level] += delta
    return Q, bool(np.abs(delta).max() <= 0.5 * room * floor)


@pytest.mark.parametrize("offset", [0.0, 50.0])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_steps_dual_point_is_feasible_and_bounded_below(fit_intercept, offset):
    """With the Newton step ``S`` at the read's point, the read bounds the dual points whose
    probabilities move by ``a`` times the step's first-order change, ``p_i + a A_i (S x~_i)`` (then
    shifted on a level, with an intercept): each is feasible, its bound at most its exact dual value
    (NumPy) and below the optimum; the shares used are exactly those where ``a`` times the reach is
    below 1: ``2 max_k (|s_k . center + b_k| + ||scale s_k|| max_i ||(x_i - center) / scale||)``, in
    the sample's metric (features offset by 50, as raw values: the metric's center takes it), and the
    levels those where the shift stays within half the floor of what the step leaves."""
    X, y = _generated(3, n=800)
    X = X + offset
    problem = _problem(X, y, 3, fit_intercept)
    W_star = multinomial.solve_softmax(problem, tol=1e-13, max_iter=100)[0]
    optimum = problem.penalty(W_star) + problem.loss(np.asarray(_rows(problem) @ W_star.T))[1]
    rng = np.random.RandomState(3)
    center, scale = X.mean(axis=0), X.std(axis=0)
    norm = np.sqrt(np.max(np.sum(((X - center) / scale) ** 2, axis=1)))
    used = 0
    for spread in (1e-5, 1e-4, 1e-3, 1e-2, 1e-1):
        W = W_star + spread * rng.normal(size=W_star.shape)
        P, loss = problem.loss(np.asarray(_rows(problem) @ W.T))
        G, R = problem.gradient(W, P)
        S = multinomial.newton_direction(problem, W, P, G)[0]
        sums = multinomial_reads.softmax_sums(X, y, np.ones(X.shape[0]), W, fit_intercept, (center, scale))
        assert sums.row_norm == pytest.approx(norm, rel=1e-12)
        values = multinomial_reads.dual_values(sums, W, problem.penalised, fit_intercept, S, (center, scale))
        assert max(values.values()) <= optimum
        weights, b = (S[:, :-1], S[:, -1]) if fit_intercept else (S, 0.0)
        reach = 2.0 * np.max(np.abs(weights @ center + b) + np.linalg.norm(weights * scale, axis=1) * norm)
        dZ = np.asarray(_rows(problem) @ S.T)
        assert reach >= 2.0 * np.abs(dZ).max() * (1 - 1e-12)  # a bound of every row
        shares = {a for a in multinomial_reads.STEP_SHARES if a * reach < 1.0}
        steps = {key: v for key, v in values.items() if isinstance(key, tuple)}
        assert {key[1] for key in steps} <= shares
        for a in shares:
            moved = P + a * P * (dZ - np.sum(P * dZ, axis=1, keepdims=True))  # p + a A dz
            assert np.all(moved >= -1e-15)
            if not fit_intercept:
                assert values[("step", a)] <= _exact_dual(problem, moved, problem.penalised) + 1e-9 * optimum
                continue
            g = (problem.cost[:, None] * (problem.onehot - moved)).sum(axis=0)
            for j in range(len(multinomial_reads.FLOORS)):
                Q, applies = _shifted_q(problem, P, g, j, 1.0 - a * reach)
                assert (("step", a, j) in values) == applies
                if applies:
                    Q = Q - P + moved  # the step's change, then the shift on the level's rows
                    assert np.all(Q >= 0)
                    bound = values[("step", a, j)]
                    assert bound <= _exact_dual(problem, Q, problem.penalised) + 1e-9 * optimum
        used += bool(steps)
    assert used >= 2


def test_near_the_optimum_the_steps_dual_point_certifies_the_suboptimality():
    """From a read's sums, the step's dual point is that of the next Newton point to second order:
    near the optimum its gap is within a few times the read's point's true suboptimality (the
    derivative's is its gradient's square, far larger on tall rows)."""
    X, y = _generated(3, n=3000)
    problem = _problem(X, y, 3)
    W_star = multinomial.solve_softmax(problem, tol=1e-13, max_iter=100)[0]
    optimum = problem.penalty(W_star) + problem.loss(np.asarray(_rows(problem) @ W_star.T))[1]
    W = W_star + 1e-3 * np.random.RandomState(4).normal(size=W_star.shape)
    P, _ = problem.loss(np.asarray(_rows(problem) @ W.T))
    G, _ = problem.gradient(W, P)
    S = multinomial.newton_direction(problem, W, P, G)[0]
    sums = multinomial_reads.softmax_sums(X, y, np.ones(X.shape[0]), W, True)
    without = multinomial_reads.certificate(sums, W, problem.penalised, True)
    cert = multinomial_reads.certificate(sums, W, problem.penalised, True, S)
    suboptimality = cert.primal - optimum
    assert cert.primal - cert.dual <= 6 * suboptimality
    assert without.primal - without.dual > 50 * suboptimality


def test_the_entropys_remainder_bound_holds_on_the_whole_simplex():
    """``(p + d) log(p + d) - p log p - d (1 + log p) <= d^2 / p`` for every ``d >= -p``: the bound the
    shift's and the step's dual values take (module docstring of multinomial_reads), checked on a grid;
    half of it fails (at d = -p the remainder is p, the bound's own value)."""
    p = np.geomspace(1e-12, 1.0, 60)[:, None]
    r = np.linspace(-1.0, 50.0, 2001)[None, :]
    d = r * p
    q = p + d
    remainder = (
        np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0) - p * np.log(p) - d * (1 + np.log(p))
    )
    assert np.all(remainder <= d * d / p * (1 + 1e-9) + 1e-300)
    assert np.any(remainder > 0.5 * d * d / p)


def test_a_two_worker_cluster_fit_is_the_one_machines():
    """On a LocalCluster of two worker processes: the parts' sums added up the tree, the joined
    samples solved on a worker; the same reads and the same certified optimum as one machine's, and
    scikit-learn's probabilities; averaging and CoCoA+ are refused before any read."""
    X, y = _generated(4, n=3000, d=8, seed=5)
    Xd, yd = _collection(X, y, 300)
    # At 1e-11 one row's probabilities were 1.1e-6 from scikit-learn's: the gap bounds the objective.
    params = {"multi_class": "multinomial", "tol": 1e-13, "cache_bytes": _sample_bytes(X, 600)}
    with dask.config.set(scheduler="sync"):
        local = LogisticRegression(**params).fit(Xd, yd)
    with two_worker_client():
        ours = LogisticRegression(**params).fit(Xd, yd)
        Xc, yc, reads = counted_reads(X, y, 300)
        for cluster in ("average", "cocoa"):
            with pytest.raises(ValueError, match="names a dual method"):
                LogisticRegression(multi_class="multinomial", cluster=cluster).fit(Xc, yc)
        assert reads == []
    assert ours.cluster_parts_, "the fit did not run on the cluster"
    assert ours.history_[-1]["method"] == "newton" and ours.history_[-1]["parts"] == 2
    assert ours.history_[0]["sample_rows"] < X.shape[0]
    assert [r["pass"] for r in ours.history_] == [r["pass"] for r in local.history_]
    assert ours.duality_gap_ <= 1e-13
    assert ours.objective_ == pytest.approx(local.objective_, rel=1e-12)
    sk = reference(X, y, 1.0)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-6, rtol=0)


def test_tall_rows_in_memory_take_the_newton_reads():
    """In memory, rows at least 100 times the model's weights (classes times features plus one) take
    the Newton reads from a sample's solution (the door's rule, as the binary models'); shorter rows,
    and values beyond 1e12, keep Newton's method from 0.  Both reach scikit-learn's optimum."""
    X, y = _generated(3, n=30_000, d=8, seed=7)
    ours = LogisticRegression(multi_class="multinomial", tol=OUR_TOL).fit(X, y)
    assert 0 < ours.history_[0]["sample_rows"] < X.shape[0] and ours.n_iter_ <= 4
    assert ours.duality_gap_ <= OUR_TOL
    sk = reference(X, y, 1.0)
    P = objective(X, y, ours.coef_, ours.intercept_, 1.0)
    P_star = objective(X, y, sk.coef_, sk.intercept_, 1.0)
    assert (P - P_star) / P <= ours.duality_gap_ + ROUNDING
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-6, rtol=0)
    short = LogisticRegression(multi_class="multinomial", tol=1e-8).fit(X[:2000], y[:2000])
    assert "sample_rows" not in short.history_[0]
    large = X.copy()
    large[:, 1] *= 1e13
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        beyond = LogisticRegression(multi_class="multinomial", tol=1e-3, max_iter=5).fit(large, y)
    assert "sample_rows" not in beyond.history_[0]


def test_the_sample_is_solved_to_its_own_tolerance_whatever_the_fits(monkeypatch):
    """A sample of some of the rows is solved to a relative gap of ``SAMPLE_TOL`` (1e-3), looser or
    tighter than the fit's ``tol``: its optimum is about that far from the data's.  The first record
    says the gap the sample's solve certified; the Newton reads still reach ``tol``."""
    assert multinomial_reads.SAMPLE_TOL == 1e-3
    asked = []
    solve = multinomial_reads.solve_softmax

    def recording(rows, *, tol, **kwargs):
        asked.append(tol)
        return solve(rows, tol=tol, **kwargs)

    monkeypatch.setattr(multinomial_reads, "solve_softmax", recording)
    X, y = _generated(3, n=30_000, d=8, seed=7)
    for tol in (OUR_TOL, 1e-2):
        asked.clear()
        ours = LogisticRegression(multi_class="multinomial", tol=tol).fit(X, y)
        assert asked == [multinomial_reads.SAMPLE_TOL]
        assert 0 < ours.history_[0]["sample_gap"] <= multinomial_reads.SAMPLE_TOL
        assert ours.duality_gap_ <= tol


@pytest.mark.parametrize("sample", [12_000, 4_000])
def test_the_samples_solve_starts_from_a_sample_of_its_rows(monkeypatch, sample):
    """The warm start's sample (not every row) is solved from the solution of a sample of its rows
    (``sample_start``: ``MEMORY_SAMPLE_SHARE`` of them, at least ``MEMORY_SAMPLE_PER_WIDTH`` a weight,
    their costs scaled by the rows over them, solved to ``SAMPLE_TOL`` from ``W = 0``), where that is at
    most a quarter of the sample (about 9,600 rows: 1,950, 50 for each of the model's 3 x 13 weights); a
    sample of about 3,200 starts from ``W = 0``.  The fit is certified at scikit-learn's optimum either
    way."""
    from dask_streamsvm.engine.primal.warm import MEMORY_SAMPLE_PER_WIDTH, MEMORY_SAMPLE_SHARE

    X, y = _generated(3, n=36_000, seed=2)
    solves, real = [], multinomial_reads.solve_softmax

    def recorded(problem, **params):
        solves.append((problem.X.shape[0], params.get("start") is None, params["tol"], problem.cost.sum()))
        return real(problem, **params)

    monkeypatch.setattr(multinomial_reads, "solve_softmax", recorded)
    ours = _streamed(X, y, rows=2_000, sample=sample)
    n = ours.history_[0]["sample_rows"]
    assert 0.7 * sample <= n < X.shape[0]  # the sample's rows within cache_bytes
    m = max(int(MEMORY_SAMPLE_SHARE * n), MEMORY_SAMPLE_PER_WIDTH * 3 * (X.shape[1] + 1))
    if 4 * m <= n:
        assert sample == 12_000 and [s[:3] for s in solves] == [
            (m, True, multinomial_reads.SAMPLE_TOL),
            (n, False, multinomial_reads.SAMPLE_TOL),
        ]
        assert solves[0][3] == pytest.approx(solves[1][3], rel=1e-12)  # the sample's costs, scaled
    else:
        assert sample == 4_000 and [s[:3] for s in solves] == [(n, True, multinomial_reads.SAMPLE_TOL)]
    assert ours.duality_gap_ <= OUR_TOL
    sk = reference(X, y, 1.0)
    assert (ours.objective_ - objective(X, y, sk.coef_, sk.intercept_, 1.0)) / ours.objective_ <= OUR_TOL

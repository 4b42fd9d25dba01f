"""Selective block minimization (solver="sbm") and block minimization (solver="bm")."""

import warnings
from types import SimpleNamespace

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine import choice
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.dual import sbm as engine_sbm
from dask_streamsvm.engine.dual.alpha_store import AlphaStore
from dask_streamsvm.engine.dual.cache import RowCache
from dask_streamsvm.engine.dual.sbm import BlockTrainer
from dask_streamsvm.engine.dual.schedules import fit_stream
from dask_streamsvm.engine.plan.problem import FitPlan
from dask_streamsvm.engine.store.checkpoint import Checkpoints
from dask_streamsvm.kernels.cache import evict, evict_many
from dask_streamsvm.kernels.dcd import Shrinking, dcd_passes
from dask_streamsvm.kernels.losses import HINGE, SQUARED_HINGE, row_gap
from dask_streamsvm.kernels.rng import make_state
from dask_streamsvm.kernels.sbm import (
    block_sweep,
    gradients,
    gradients_and_gap,
    select_informative,
    select_random,
)

from ._helpers import (
    LIBLINEAR_OPTIMA,
    ROW_FORMS,
    a9a_dask,
    load_libsvm_dataset,
    noisy_linear_data,
    rows_in_form,
)

# -- the selection kernel against a NumPy reference ------------------------------------


def reference_selection(alpha, grad, upper, row_bytes, budget):
    """Chang & Roth 2011, section 2.2, row by row: the kept rows, best first."""
    keys = []
    for i in range(row_bytes.shape[0]):
        best = (0, -np.inf)
        for c in range(alpha.shape[0]):
            a, g, u = alpha[c, i], grad[c, i], upper[c, i]
            if u <= 0:
                continue  # no weight in this problem
            if 0 < a < u:
                key = (1, abs(g))
            elif a == 0 and g > 0:
                key = (0, -g)
            elif a == u and g < 0:
                key = (0, g)
            else:
                key = (0, 0.0)  # a bound violator
            best = max(best, key)
        keys.append((-best[0], -best[1], i))
    kept, used = [], 0
    for _, _, i in sorted(keys):
        if used + row_bytes[i] > budget:
            break
        used += row_bytes[i]
        kept.append(i)
    return kept


def random_dual_state(rng, k, n, squared):
    """alphas at 0, at U (hinge) and inside the box; some rows weightless in some problems."""
    upper = np.full((k, n), np.inf) if squared else rng.choice([0.5, 1.0, 2.0], size=(k, n))
    upper[rng.rand(k, n) < 0.1] = 0.0
    kind = rng.randint(0, 3, size=(k, n))
    inside = 0.4 * rng.rand(k, n)
    at_upper = np.where(np.isinf(upper), inside, upper)
    alpha = np.select([kind == 0, kind == 1], [0.0, at_upper], inside)
    alpha = np.minimum(alpha, upper)
    grad = rng.randn(k, n).round(1)  # rounding makes ties
    return alpha, grad, upper


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("squared", [True, False])
def test_informative_selection_matches_the_reference(k, squared):
    rng = np.random.RandomState(k + 10 * squared)
    for trial in range(20):
        n = rng.randint(1, 60)
        alpha, grad, upper = random_dual_state(rng, k, n, squared)
        row_bytes = rng.randint(50, 200, size=n).astype(np.int64)
        budget = int(rng.randint(0, row_bytes.sum() + 100))
        keep = np.empty(n, dtype=np.int64)
        m = select_informative(alpha, grad, upper, row_bytes, budget, keep)
        assert keep[:m].tolist() == reference_selection(alpha, grad, upper, row_bytes, budget), trial
        assert row_bytes[keep[:m]].sum() <= budget


def test_informative_selection_keeps_the_unbounded_rows():
    alpha = np.array([[0.0, 0.5, 1.0, 0.2, 0.0, 1.0, 0.7]])
    upper = np.ones_like(alpha)
    grad = np.array([[2.0, -0.1, 3.0, 0.0, -0.5, -0.4, 0.9]])
    row_bytes = np.full(7, 100, dtype=np.int64)
    keep = np.empty(7, dtype=np.int64)
    # Room for four rows: the unbounded ones by |G| (6, 1, 3), then the first violator.
    m = select_informative(alpha, grad, upper, row_bytes, 400, keep)
    assert keep[:m].tolist() == [6, 1, 3, 2]
    # Bound rows by g: the violators 2 (alpha = U, G > 0) and 4 (alpha = 0, G < 0)
    # score 0, then 5 (alpha = U, G = -0.4) and 0 (alpha = 0, G = 2).
    m = select_informative(alpha, grad, upper, row_bytes, 700, keep)
    assert keep[:m].tolist() == [6, 1, 3, 2, 4, 5, 0]


@pytest.mark.parametrize("k", [1, 2])
def test_partial_ranking_of_many_rows_keeps_the_full_sorts_prefix(k):
    """Thousands of rows, few distinct scores: the kernel ranks only what can fit, ties included."""
    rng = np.random.RandomState(k)
    n = 3000
    alpha, grad, upper = random_dual_state(rng, k, n, squared=False)
    grad = grad.round(0)  # a handful of distinct values: long runs of ties at every cut
    for sizes in (np.full(n, 120), rng.randint(50, 400, size=n)):
        row_bytes = sizes.astype(np.int64)
        for share in (0.0, 0.003, 0.05, 0.3, 0.7, 1.0):
            budget = int(share * row_bytes.sum())
            keep = np.empty(n, dtype=np.int64)
            m = select_informative(alpha, grad, upper, row_bytes, budget, keep)
            assert keep[:m].tolist() == reference_selection(alpha, grad, upper, row_bytes, budget), share


def test_ranking_with_nan_gradients_keeps_distinct_rows_within_the_budget():
    rng = np.random.RandomState(7)
    n = 500
    alpha, grad, upper = random_dual_state(rng, 1, n, squared=False)
    grad[0, rng.rand(n) < 0.8] = np.nan  # a diverged solve: the selection must still be a valid cache
    row_bytes = np.full(n, 100, dtype=np.int64)
    keep = np.empty(n, dtype=np.int64)
    m = select_informative(alpha, grad, upper, row_bytes, 100 * 100, keep)
    assert m == 100 and len(set(keep[:m].tolist())) == m and keep[:m].max() < n


def test_random_selection_is_a_seeded_prefix_within_the_budget():
    row_bytes = np.arange(1, 41, dtype=np.int64) * 10
    keep_a, keep_b = np.empty(40, dtype=np.int64), np.empty(40, dtype=np.int64)
    m_a = select_random(row_bytes, 2000, make_state(5), keep_a)
    m_b = select_random(row_bytes, 2000, make_state(5), keep_b)
    assert keep_a[:m_a].tolist() == keep_b[:m_b].tolist()
    assert len(set(keep_a[:m_a].tolist())) == m_a and row_bytes[keep_a[:m_a]].sum() <= 2000
    m_c = select_random(row_bytes, 2000, make_state(6), keep_b)
    assert keep_a[:m_a].tolist() != keep_b[:m_c].tolist()
    # Uniform: over many draws every row is kept about equally often.
    counts = np.zeros(40)
    state = make_state(0)
    for _ in range(2000):
        m = select_random(np.full(40, 1, dtype=np.int64), 10, state, keep_a)
        counts[keep_a[:m]] += 1
    assert m == 10 and np.abs(counts / 2000 - 0.25).max() < 0.05


@pytest.mark.parametrize("sparse", [False, True])
def test_evicting_in_one_pass_leaves_the_state_evicting_each_slot_leaves(sparse):
    rng = np.random.RandomState(3)
    data = rng.randn(40, 6) * (rng.rand(40, 6) < 0.6)
    y = np.where(rng.rand(2, 40) < 0.5, 1.0, -1.0)
    states = []

    def one_by_one(slots, cache, dual):
        for s in slots:
            evict(s, cache, dual)

    for evict_slots in (one_by_one, evict_many):
        store = AlphaStore(2)
        cache = RowCache(60_000, 6, np.float64, sparse, 2, nnz_per_row=4)
        X = sp.csr_matrix(data) if sparse else data
        cache.insert(X, np.arange(100, 140), y, np.ones((2, 40)), SQUARED_HINGE, 1.0, store, make_state(0))
        live = cache.live[: cache.n_live]
        cache.A[:, live] = np.random.RandomState(4).rand(2, live.size)
        dropped = live[np.random.RandomState(5).permutation(live.size)[:25]].copy()
        evict_slots(dropped, cache.arrays, store.arrays)
        states.append([*cache.arrays[:11], cache.starts, cache.ends, *store.arrays[:3]])
    for a, b in zip(*states, strict=True):
        np.testing.assert_array_equal(a, b)
    assert states[1][0][0] == 15  # n_live


@pytest.mark.parametrize("sparse", [False, True])
def test_gradients_on_cached_rows(sparse):
    rng = np.random.RandomState(0)
    data = rng.randn(30, 8) * (rng.rand(30, 8) < 0.5)
    store = AlphaStore(2)
    cache = RowCache(100_000, 8, np.float64, sparse, 2, nnz_per_row=4)
    y = np.where(rng.rand(2, 30) < 0.5, 1.0, -1.0)
    cost = rng.uniform(0.5, 2.0, size=(2, 30))
    cache.insert(
        sp.csr_matrix(data) if sparse else data, np.arange(30), y, cost, True, 0.5, store, make_state(0)
    )
    slots = cache.live[: cache.n_live].copy()
    cache.A[:, slots] = rng.rand(2, slots.size)
    W = rng.randn(2, 9)
    G = np.empty((2, slots.size))
    gradients(cache.layout, cache.Y, cache.U, cache.D, cache.A, W, 0.5, SQUARED_HINGE, slots, G)
    rows = cache.gid[slots]
    dots = (data[rows] @ W[:, :-1].T + 0.5 * W[:, -1]).T
    expected = y[:, rows] * dots - 1 + 0.5 / cost[:, rows] * cache.A[:, slots]  # D = 1 / (2 C)
    np.testing.assert_allclose(G, expected, rtol=1e-12, atol=1e-12)


# -- the block's solve: one sweep of every problem, the fused measure, the sweeps' rule ------------


def cached_rows(sparse, loss, k=2, n=40, seed=0):
    """A row cache of ``n`` random rows in ``k`` problems (some weightless), its data and labels."""
    rng = np.random.RandomState(seed)
    data = rng.randn(n, 8) * (rng.rand(n, 8) < 0.5)
    store = AlphaStore(k, loss=loss)
    cache = RowCache(200_000, 8, np.float64, sparse, k, nnz_per_row=4)
    y = np.where(rng.rand(k, n) < 0.5, 1.0, -1.0)
    cost = rng.uniform(0.5, 2.0, size=(k, n))
    cost[rng.rand(k, n) < 0.1] = 0.0
    cost[:, 0] = 1.0  # every row has weight somewhere: all are cached
    cache.insert(
        sp.csr_matrix(data) if sparse else data, np.arange(n), y, cost, loss, 0.5, store, make_state(0)
    )
    return cache, store, rng


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", [HINGE, SQUARED_HINGE])
def test_gradients_and_gap_is_gradients_and_the_cache_gap(sparse, loss):
    cache, _, rng = cached_rows(sparse, loss)
    slots = cache.live[: cache.n_live].copy()
    cache.A[:, slots] = np.minimum(rng.rand(2, slots.size), cache.U[:, slots])
    cache.A[:, slots[::3]] = 0.0
    W = rng.randn(2, 9)
    G, expected = np.empty((2, slots.size)), np.empty((2, slots.size))
    gap = gradients_and_gap(cache.layout, cache.Y, cache.U, cache.D, cache.A, W, 0.5, loss, slots, G)
    gradients(cache.layout, cache.Y, cache.U, cache.D, cache.A, W, 0.5, loss, slots, expected)
    np.testing.assert_array_equal(G, expected)
    # the same sum, in the same order, as the row cache's own measure (bit for bit)
    assert gap == cache.objective(W, 0.5, loss)[1]
    shares = [
        row_gap(loss, G[c, t] + 1.0 - cache.D[c, s] * cache.A[c, s], G[c, t], cache.A[c, s], cache.U[c, s],
                cache.D[c, s])
        for t, s in enumerate(slots) for c in range(2) if cache.U[c, s] > 0
    ]  # fmt: skip
    assert gap == pytest.approx(sum(shares), rel=1e-12) and gap > 0


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", [HINGE, SQUARED_HINGE])
def test_block_sweep_is_one_dcd_pass_per_problem_and_sums_the_gap_it_sees(sparse, loss):
    """Pass for pass, the alpha, w, active sets and shrinking thresholds of dcd_passes (the next test
    checks ``seen``, the gap the sweep saw)."""
    cache, _, rng = cached_rows(sparse, loss)
    n = cache.n_live
    slots = cache.live[:n].copy()
    W0 = 0.1 * rng.randn(2, 9)
    W, A = W0.copy(), cache.A.copy()
    index = np.tile(slots, (2, 1))
    active, shrink, done = np.full(2, n), np.tile([np.inf, -np.inf], (2, 1)), np.zeros(2, dtype=bool)
    W_ref, A_ref, index_ref = W0.copy(), cache.A.copy(), index.copy()
    state_ref = [Shrinking(n, np.inf, -np.inf)] * 2
    rng_a, rng_b = make_state(3), make_state(3)
    for sweep in range(6):
        visits, seen = block_sweep(
            cache.layout, (cache.Y, cache.U, cache.D, cache.QD, A), W, 0.5, loss, index, active, shrink,
            done, 1e-6, rng_a,
        )  # fmt: skip
        expected_visits = 0
        for c in range(2):
            expected_visits += state_ref[c].active_size
            out = dcd_passes(
                cache.layout, cache.problem(c, loss), index_ref[c], A_ref[c], W_ref[c], 0.5, 1, 1e-6,
                state_ref[c], rng_b,
            )  # fmt: skip
            state_ref[c] = Shrinking(int(out[1]), out[4], out[5])
        assert visits == expected_visits
        np.testing.assert_array_equal(A, A_ref)
        np.testing.assert_array_equal(W, W_ref)
        np.testing.assert_array_equal(index, index_ref)
        assert list(active) == [s.active_size for s in state_ref]
        assert [tuple(t) for t in shrink] == [(s.pg_max_old, s.pg_min_old) for s in state_ref]
        assert seen >= 0.0 and (sweep > 0 or seen > 0.0)
    assert not done.any() or (active == n).all()


def test_block_sweep_gap_seen_is_the_gap_at_the_start_when_no_step_moves_w():
    """When no step moves ``w`` (an infinite ``Qbar``), ``seen`` is the rows' exact gap."""
    cache, _, _ = cached_rows(False, HINGE, k=1)
    n = cache.n_live
    slots = cache.live[:n].copy()
    W = np.zeros((1, 9))
    A = np.zeros_like(cache.A)
    QD = np.full_like(cache.QD, np.inf)  # an infinite curvature: every step is 0, w never moves
    G = np.empty((1, n))
    gap = gradients_and_gap(cache.layout, cache.Y, cache.U, cache.D, A, W, 0.5, HINGE, slots, G)
    visits, seen = block_sweep(
        cache.layout, (cache.Y, cache.U, cache.D, QD, A), W, 0.5, HINGE, np.tile(slots, (1, 1)),
        np.full(1, n), np.tile([np.inf, -np.inf], (1, 1)), np.zeros(1, dtype=bool), 1e-6, make_state(0),
    )  # fmt: skip
    assert visits == n and seen == pytest.approx(gap, rel=1e-12)
    assert gap == pytest.approx(cache.U[0, slots].sum(), rel=1e-12)  # w = 0: every row's share is C_i


class ScriptedSweeps:
    """A stand-in for ``block_sweep`` that reports the gaps a script says it saw."""

    def __init__(self, seen, n=10):
        self.seen, self.n, self.calls = list(seen), n, 0

    def __call__(self, *args):
        self.calls += 1
        return self.n, self.seen[self.calls - 1]


def run_solve_block(monkeypatch, seen, exact, target_factor=0.1, inner_iter=20):
    """``solve_block`` on a scripted run: sweeps made, measures taken, whether it ended measured."""
    sweeps = ScriptedSweeps(seen)
    monkeypatch.setattr(engine_sbm, "block_sweep", sweeps)
    measures = []

    def measure():
        measures.append(sweeps.calls)
        return exact[sweeps.calls - 1]

    memory = SimpleNamespace(n_live=3, live=np.arange(3), Y=None, U=None, D=None, QD=None, A=None)
    out = engine_sbm.solve_block(
        None, memory, None, 0.0, HINGE, None, inner_iter, np.tile([np.inf, -np.inf], (1, 1)), measure,
        lambda start: target_factor * start,
    )  # fmt: skip
    return out, measures


def test_solve_block_measures_after_the_first_sweep_and_when_the_rate_predicts_the_target(monkeypatch):
    # seen: 100 (the start: target 10), 50, 25, 12.5 (predicted after: 6.25 <= 10)
    (sweeps, visits, measured), measures = run_solve_block(
        monkeypatch, seen=[100, 50, 25, 12.5, 6], exact=[60, 30, 15, 8, 4]
    )
    assert measures == [1, 4] and (sweeps, visits, measured) == (4, 40, True)
    # after sweep 1 the exact gap meets the target at once
    out, measures = run_solve_block(monkeypatch, seen=[100, 50], exact=[9, 1])
    assert measures == [1] and out == (1, 10, True)
    # a measure that misses waits for as many sweeps again: sweep 4 misses, the next is at 8
    seen = [100, 50, 25, 12.5, 6.25, 3.1, 1.6, 0.8, 0.4]
    out, measures = run_solve_block(monkeypatch, seen=seen, exact=[60, 30, 15, 11, 9, 9, 9, 9, 9])
    assert measures == [1, 4, 8] and out == (8, 80, True)


def test_solve_block_ends_when_the_gap_stops_halving_between_measures(monkeypatch):
    # seen halves every sweep: the rate predicts the target (10) from sweep 4, so the exact gap is
    # measured at sweeps 1, 4, 8; a measure above STALLED = 0.5 x the last one ends the sweeps.
    seen = [100 * 0.5**p for p in range(20)]
    stalls = [60] + [30.6] * 19  # 30.6 > 0.5 x 60: the sweeps end at the second measure
    out, measures = run_solve_block(monkeypatch, seen=seen, exact=stalls)
    assert measures == [1, 4] and out == (4, 40, True)
    halves = [60] + [29.4] * 6 + [9] * 13  # 29.4 < 0.5 x 60: on to the target at sweep 8
    out, measures = run_solve_block(monkeypatch, seen=seen, exact=halves)
    assert measures == [1, 4, 8] and out == (8, 80, True)


def test_the_carried_thresholds_shrink_rows_in_a_new_blocks_first_sweep():
    cache, _, rng = cached_rows(False, HINGE, k=1)
    n = cache.n_live
    slots = cache.live[:n].copy()
    W = 0.5 * rng.randn(1, 9)
    A = np.zeros_like(cache.A)
    fresh = block_sweep(
        cache.layout,
        (cache.Y, cache.U, cache.D, cache.QD, A.copy()),
        W.copy(),
        0.5,
        HINGE,
        np.tile(slots, (1, 1)),
        np.full(1, n),
        np.tile([np.inf, -np.inf], (1, 1)),
        np.zeros(1, dtype=bool),
        1e-6,
        make_state(0),
    )
    active = np.full(1, n)
    carried = block_sweep(
        cache.layout,
        (cache.Y, cache.U, cache.D, cache.QD, A.copy()),
        W.copy(),
        0.5,
        HINGE,
        np.tile(slots, (1, 1)),
        active,
        np.array([[0.01, -0.01]]),
        np.zeros(1, dtype=bool),
        1e-6,
        make_state(0),
    )
    assert fresh[0] == carried[0] == n  # visits count the active set at the start
    assert 0 < active[0] < n  # rows at alpha = 0 with G > 0.01 left the active set at once


# -- a9a: BM, SBM and SBM-rand reach LIBLINEAR's optimum ------------------------------

P_STAR = LIBLINEAR_OPTIMA[("a9a", "squared_hinge", 1.0)]
SLACK = 0.5e-4 / P_STAR  # the reference is rounded to 4 decimals


def primal_of(coef, name, loss="squared_hinge", C=1.0):
    X, y = load_libsvm_dataset(name)
    w = coef.ravel()
    xi = np.maximum(0, 1 - y * (X @ w))
    return 0.5 * w @ w + C * (xi**2 if loss == "squared_hinge" else xi).sum()


def assert_sbm_fit(clf, p_star, cache_bytes, block_bytes, name):
    rel = (clf.objective_ - p_star) / p_star
    assert clf.duality_gap_ <= 1e-4
    assert -SLACK <= rel <= clf.duality_gap_ + SLACK  # the certificate bounds the suboptimality
    # Row memory per pass, in the row cache's own accounting.
    for r in clf.history_:
        assert r["peak_used_bytes"] <= r["memory_bytes"] <= cache_bytes + block_bytes
        assert r["cache_bytes"] <= cache_bytes
    assert clf.history_[-1]["cache_rows"] == 0 or cache_bytes > 0
    blocks = [r["blocks"] for r in clf.history_]
    assert blocks == sorted(blocks) and blocks[-1] > 0
    # The returned coefficients are the certified state: recompute its primal.
    assert primal_of(clf.coef_, name) == pytest.approx(clf.objective_, rel=1e-9)


# BM gets the paper's equal memory (section 7.1: |B_BM| = |B| + |cache| of SBM): with
# one 6%-partition per block and no cache it stalls on a9a (relative gap ~1e-2 after
# 270 reads; in memory too, so it is the method, not the engine).
A9A_SETTINGS = {
    "bm": dict(solver="bm", cache=0.2, block=0.2),
    "sbm": dict(solver="sbm", cache=0.1, block=0.1, cache_policy="informative"),
    "sbm-rand": dict(solver="sbm", cache=0.1, block=0.1, cache_policy="random"),
}


def fit_a9a(setting, X, y, nbytes, **kw):
    s = dict(A9A_SETTINGS[setting])
    cache, block = int(s.pop("cache") * nbytes), int(s.pop("block") * nbytes)
    params = {"fit_intercept": False, "tol": 1e-4, "max_iter": 100, "random_state": 0, **s, **kw}
    clf = LinearSVC(cache_bytes=cache, block_bytes=block, **params).fit(X, y)
    return clf, (0 if s["solver"] == "bm" else cache), block


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(A9A_SETTINGS))
def test_a9a_reaches_the_certified_optimum_with_a_tenth_in_cache(setting):
    X, y, nbytes = a9a_dask("csr", np.float64)
    clf, cache, block = fit_a9a(setting, X, y, nbytes)
    assert_sbm_fit(clf, P_STAR, cache, block, "a9a")
    assert clf.history_[-1]["rows_read"] >= 2 * 32561


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["sbm", "sbm-rand"])
def test_a9a_dense_float32(setting):
    X, y, nbytes = a9a_dask("dense", np.float32)
    clf, cache, block = fit_a9a(setting, X, y, nbytes)
    assert clf.duality_gap_ <= 1e-4
    assert -SLACK <= (clf.objective_ - P_STAR) / P_STAR <= clf.duality_gap_ + SLACK
    assert max(r["memory_bytes"] for r in clf.history_) <= cache + block


@pytest.mark.slow
def test_a9a_hinge_loss():
    p_star = LIBLINEAR_OPTIMA[("a9a", "hinge", 0.1)]
    X, y, nbytes = a9a_dask("csr", np.float64)
    clf, cache, block = fit_a9a("sbm", X, y, nbytes, C=0.1, loss="hinge")
    assert clf.duality_gap_ <= 1e-4
    assert -0.5e-4 / p_star <= (clf.objective_ - p_star) / p_star <= clf.duality_gap_ + 0.5e-4 / p_star
    assert primal_of(clf.coef_, "a9a", "hinge", 0.1) == pytest.approx(clf.objective_, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(A9A_SETTINGS))
def test_ijcnn1(setting):
    p_star = LIBLINEAR_OPTIMA[("ijcnn1", "squared_hinge", 1.0)]
    X, y = load_libsvm_dataset("ijcnn1")
    step = -(-X.shape[0] // 16)
    Xd = da.from_array(X.toarray(), chunks=(step, X.shape[1]))
    nbytes = X.shape[0] * X.shape[1] * 8
    clf, cache, block = fit_a9a(setting, Xd, da.from_array(y, chunks=step), nbytes)
    rel = (clf.objective_ - p_star) / p_star
    assert clf.duality_gap_ <= 1e-4
    assert -0.5e-4 / p_star <= rel <= clf.duality_gap_ + 0.5e-4 / p_star
    assert max(r["memory_bytes"] for r in clf.history_) <= cache + block


# -- the engine: determinism, hooks, odd partitions ---------------------------------------


def small_a9a(n_rows=4000, n_parts=8):
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:n_rows], y[:n_rows]
    step = n_rows // n_parts
    return da.from_array(X.toarray(), chunks=(step, 123)), da.from_array(y, chunks=step)


@pytest.mark.parametrize("policy", ["informative", "random"])
def test_same_seed_same_model(policy):
    X, y = small_a9a()
    kw = {"solver": "sbm", "cache_bytes": 400_000, "block_bytes": 600_000, "cache_policy": policy}
    kw["tol"] = 1e-3
    a = LinearSVC(random_state=3, **kw).fit(X, y)
    b = LinearSVC(random_state=3, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    timing = ("seconds", "trainer_wait_s", "reader_wait_s", "reader_busy_s")
    strip = [[{k: v for k, v in r.items() if k not in timing} for r in m.history_] for m in (a, b)]
    assert strip[0] == strip[1]
    c = LinearSVC(random_state=4, **kw).fit(X, y)
    assert not np.array_equal(a.coef_, c.coef_)


def solve(source, C=1.0, on_pass=None, on_block=None, **kw):
    """SBM through the engine's entry, on labels -1/+1 of cost C."""
    labels = {"classes": np.array([-1, 1]), "signs": np.array([[-1.0, 1.0]]), "costs": np.full((1, 2), C)}
    params = dict(loss="squared_hinge", bias=1.0, tol=1e-4, max_iter=50, cache_bytes=30_000, solver="sbm")
    params.update(
        block_bytes=30_000, inner_iter=10, cache_policy="informative", prefetch=2, shuffle=True, seed=0
    )
    params.update(kw)
    plan = FitPlan(**params, **labels, labels=(1,))
    return fit_stream(source, plan, SimpleNamespace(on_pass=on_pass, on_block=on_block))


def test_hooks_every_partition_and_a_final_certifying_read():
    rng = np.random.RandomState(0)
    X = rng.randn(600, 5)
    y = np.where(X @ rng.randn(5) + 0.5 * rng.randn(600) > 0, 1, -1)
    source = DaskSource(da.from_array(X, chunks=(60, 5)), da.from_array(y, chunks=60))
    seen = []
    result = solve(
        source,
        max_iter=3,
        tol=1e-12,
        on_block=lambda k, block, W, fill: seen.append((k, block.partition, fill)),
    )
    assert not result.converged and result.passes == 3
    assert [r["pass"] for r in result.history] == [0, 1, 2, 3]
    assert len(seen) == 4 * 10
    assert {p for k, p, _ in seen if k == 3} == set(range(10)) and all(0 <= f <= 1 for *_, f in seen)
    assert result.history[-1]["rows_read"] == 4 * 600
    blocks = [r["blocks"] for r in result.history]
    assert blocks[-1] == blocks[-2] > blocks[0] > 0  # the certifying read trains nothing
    stopped = solve(source, tol=1e-12, on_pass=lambda records, W: records[0]["pass"] == 1)
    assert stopped.passes == 1 and not stopped.converged


def test_uneven_partitions_and_row_densities():
    """A partition above block_bytes is cut into block-sized pieces, each trained as a block (the
    row memory stays at the cache plus one block; it once grew to hold the partition whole), and
    sparse rows of changing density re-split the memory."""
    rng = np.random.RandomState(1)
    chunks = (100, 100, 900, 100, 50, 300, 100)
    n = sum(chunks)
    density = np.repeat([0.05, 0.1, 0.3, 0.8, 0.05, 0.5, 0.2], chunks)
    dense = rng.randn(n, 40) * (rng.rand(n, 40) < density[:, None])
    y = np.where(dense @ rng.randn(40) + rng.randn(n) > 0, 1, -1)
    Xd = da.from_array(dense, chunks=(chunks, 40)).map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 40)))
    source = DaskSource(Xd, da.from_array(y, chunks=(chunks,)))
    p_star = LinearSVC(C=0.01, tol=1e-10, max_iter=100000, random_state=0).fit(dense, y).objective_
    settings = ((20_000, "informative", True), (20_000, "informative", False), (20_000, "random", False),
                (0, "informative", False))  # fmt: skip
    for cache_bytes, policy, shuffle in settings:
        result = solve(
            source, C=0.01, cache_bytes=cache_bytes, block_bytes=27_000, cache_policy=policy, shuffle=shuffle
        )
        assert result.converged
        # In file order the 900 rows (~12 nonzeros, 96 + 12 * 12 bytes each) come third: five pieces.
        assert result.history[-1]["rebuilds"] >= (0 if shuffle else 1)
        cert = result.certificates[0]
        assert -1e-9 <= (cert.primal - p_star) / p_star <= cert.relative_gap + 1e-9
        for r in result.history:
            assert r["peak_used_bytes"] <= r["memory_bytes"] <= cache_bytes + 27_000
            assert r["cache_bytes"] <= cache_bytes
        blocks = result.history[0]["blocks"]
        assert blocks >= 1_650 * (96 + 0.25 * 40 * 12) // 27_000, (cache_bytes, policy, blocks)


def test_one_vs_rest_and_disk_alpha_store(tmp_path, monkeypatch, scheduler):
    import tempfile

    rng = np.random.RandomState(0)
    centers = rng.randn(3, 5) * 3
    labels = rng.randint(0, 3, 900)
    X = centers[labels] + rng.randn(900, 5)
    names = np.array(["a", "b", "c"])[labels]
    kw = {"solver": "sbm", "cache_bytes": 20_000, "block_bytes": 20_000, "tol": 1e-4, "max_iter": 300}
    clf = LinearSVC(random_state=0, **kw).fit(da.from_array(X, chunks=100), da.from_array(names, chunks=100))
    ref = LinearSVC(tol=1e-9, max_iter=100000, random_state=0).fit(X, names)
    assert (clf.duality_gap_ <= 1e-4).all()
    assert np.all((clf.objective_ - ref.objective_) / ref.objective_ <= clf.duality_gap_ + 1e-9)
    assert len(clf.history_) == 3 * len({r["pass"] for r in clf.history_})
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    disk = LinearSVC(random_state=0, alpha_store="disk", **kw)
    disk.fit(da.from_array(X, chunks=100), da.from_array(names, chunks=100))
    np.testing.assert_array_equal(disk.coef_, clf.coef_)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"cache_bytes": -1}, "cache_bytes must be an integer >= 0"),
        ({"block_bytes": 0}, "block_bytes must be an integer > 0"),
        ({"inner_iter": 0}, "inner_iter must be an integer >= 1"),
        ({"cache_policy": "best"}, "cache_policy must be one of 'informative', 'random'"),
    ],
)
def test_bad_parameters_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        solve(None, **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize(("sparse", "nnz"), [(False, None), (True, 0), (True, 1), (True, 2.5), (True, 7.3)])
def test_least_bytes_is_the_smallest_cache_that_holds_one_row(dtype, k, sparse, nnz):
    """The bytes the refusal names hold one row, a byte fewer holds none (the message once left out
    HEADER: it said 104 bytes where 152 were needed)."""
    least = RowCache.least_bytes(7, dtype, sparse, k, nnz)
    assert RowCache(least, 7, dtype, sparse, k, nnz).n_slots == 1
    with pytest.raises(ValueError, match=f"give at least {least} bytes"):
        RowCache(least - 1, 7, dtype, sparse, k, nnz)


@pytest.mark.parametrize("solver", ["auto", "sbm", "bm", "streamsvm"])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_every_schedule_refuses_a_budget_below_one_row(scheduler, solver, loss):
    """cache_bytes=10 (bytes meant as megabytes) once trained SBM and BM on whole partitions far
    beyond the budget while StreamSVM refused it; every dual schedule refuses it now."""
    X = np.random.RandomState(0).randn(60, 3)
    y = np.arange(60) % 2
    clf = LinearSVC(solver=solver, loss=loss, dual=True, cache_bytes=10, max_iter=3, cluster=None)
    with pytest.raises(ValueError, match="cannot hold a single row of 3 features"):
        clf.fit(da.from_array(X, chunks=20), da.from_array(y, chunks=20))


def test_a_block_of_one_row_trains_and_a_byte_less_is_refused_naming_the_bytes(scheduler):
    """The blocks' refusal counts what RowCache.least_bytes counts: BM (no cache) with a block of
    exactly one row trains (each partition held whole while it trains), one byte fewer names that
    row's bytes."""
    X = np.random.RandomState(0).randn(60, 3)
    y = np.where(X[:, 0] > 0, 1, -1)
    Xd, yd = da.from_array(X, chunks=20), da.from_array(y, chunks=20)
    least = RowCache.least_bytes(3, np.float64, False, 1)
    assert least == RowCache.HEADER + 5 * 8 + 5 * 8 + 3 * 8
    kw = {"solver": "bm", "loss": "hinge", "cache_bytes": 1, "tol": 1e-2, "max_iter": 50, "random_state": 0}
    clf = LinearSVC(block_bytes=least, **kw).fit(Xd, yd)
    assert clf.duality_gap_ <= 1e-2 * abs(clf.objective_)
    with pytest.raises(ValueError, match=rf"which takes {least} bytes with its bookkeeping.*cache_bytes"):
        LinearSVC(block_bytes=least - 1, **kw).fit(Xd, yd)


@pytest.mark.parametrize("form", ROW_FORMS)
def test_rows_inserted_where_they_lie_are_the_rows_copied_out(form):
    """``RowCache.insert(..., rows=)`` (SBM's pieces of a partition in the pass's order) leaves the
    cache and the store as inserting the same rows copied out does, bit for bit; where the rows
    must be converted first (a feature map's unsorted rows, another dtype) it copies the rows alone."""
    rng = np.random.RandomState(7)
    X, spec, width = rows_in_form(rng.randn(60, 9) * (rng.rand(60, 9) < 0.4), form)
    rows = rng.permutation(60)[:35]
    y = np.where(rng.rand(2, 60) < 0.5, 1.0, -1.0)
    cost = rng.uniform(0.5, 2.0, size=(2, 60))
    cost[:, rows[:3]] = 0.0  # weightless rows are skipped either way
    states = []
    for where in ("copied", "in place"):
        store = AlphaStore(2)
        cache = RowCache(60_000, width, np.float64, form != "dense", 2, nnz_per_row=4, feature_map=spec)
        ids = 1000 + np.arange(60)
        args = (ids[rows], y[:, rows], cost[:, rows], SQUARED_HINGE, 0.5, store, make_state(0))
        if where == "copied":
            taken = X[rows]
            inserted = cache.insert(taken, *args)
        else:
            inserted = cache.insert(X, *args, rows=rows)
        assert inserted == 32
        states.append([*cache.arrays[:11], cache.arrays.starts, cache.arrays.ends, *store.arrays[:3]])
        if form != "dense":
            n = int(cache.meta[2])
            states[-1] += [cache.indices[:n], cache.data[:n]]
        else:
            states[-1].append(cache.rows)
    for a, b in zip(*states, strict=True):
        np.testing.assert_array_equal(a, b)


def test_pieces_of_a_partition_are_drawn_from_the_passs_order(monkeypatch, scheduler):
    """A partition larger than a block is cut into pieces of a random order of its rows (runs of
    RUN_BYTES in the pass's order), not of its stored order: rows stored by label make blocks of
    both labels (stored order made every block of one class: w8a's blocks at K = 1 and 2, 5 passes
    to 1e-3 on a cluster where 3 now)."""
    rng = np.random.RandomState(0)
    X = rng.randn(2000, 64)  # rows of 512 bytes: runs of 8 rows (RUN_BYTES)
    y = np.where(X @ rng.randn(64) + 0.3 * rng.randn(2000) > 0, 1, -1)
    X, y = X[np.argsort(y, kind="stable")], np.sort(y)  # one partition, sorted by label
    blocks, current = [], []
    insert, train = BlockTrainer._insert, BlockTrainer._train_block

    def recording_insert(self, block, y_pm, cost, n_rows, nnz, nbytes, rows=None):
        current.extend(block.row_ids if rows is None else block.row_ids[rows])
        return insert(self, block, y_pm, cost, n_rows, nnz, nbytes, rows=rows)

    def recording_train(self):
        blocks.append(np.array(current))
        current.clear()
        return train(self)

    monkeypatch.setattr(BlockTrainer, "_insert", recording_insert)
    monkeypatch.setattr(BlockTrainer, "_train_block", recording_train)
    kw = {"solver": "sbm", "loss": "hinge", "cache_bytes": 80_000, "block_bytes": 160_000, "max_iter": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        LinearSVC(random_state=0, **kw).fit(da.from_array(X, chunks=2000), da.from_array(y, chunks=2000))
    big = [ids for ids in blocks if len(ids) >= 100]  # a pass's last block may hold a few rows
    assert len(big) >= 2 * 6  # every pass cuts the partition into at least six pieces
    positives = np.mean(y > 0)
    for ids in big:  # 270-300 rows, 34-37 runs of 8: both labels, near the partition's share
        assert abs(np.mean(y[ids] > 0) - positives) < 0.25


@pytest.mark.parametrize(
    ("width", "sparse", "run"), [(8, False, 64), (64, False, 8), (600, False, 1), (40, True, 34)]
)
def test_pieces_take_runs_of_run_bytes_in_the_passs_order(width, sparse, run):
    """RUN_BYTES: SBM's pieces take a partition's rows in runs of consecutive rows of about 4 KiB of
    values (dense float64 rows of 8, 64 and 600 values: 64, 8 and 1 rows; CSR rows of 10 nonzeros,
    120 bytes: 34), the runs in an order drawn from the pass's; stored order where the reader
    drew none."""
    n = 1000
    X = np.zeros((n, width))
    if sparse:
        X[:, :10] = 1.0
        X = sp.csr_matrix(X)
    order = np.random.default_rng(0).permutation(n)
    block = SimpleNamespace(n_rows=n, X=X, order=order)
    rows = engine_sbm.piece_order(block)
    np.testing.assert_array_equal(np.sort(rows), np.arange(n))
    starts, at = [], 0
    while at < n:  # each run its consecutive rows, from a multiple of the run
        start = int(rows[at])
        length = min(run, n - start)
        assert start % run == 0
        np.testing.assert_array_equal(rows[at : at + length], np.arange(start, start + length))
        starts.append(start)
        at += length
    assert len(starts) == -(-n // run)
    assert not (np.diff(starts) > 0).all()  # not the stored order
    block.order = None
    np.testing.assert_array_equal(engine_sbm.piece_order(block), np.arange(n))


def test_a_partition_whose_cached_rows_leave_with_the_block_before_it_is_cut_into_pieces(scheduler):
    """A partition that fits the room only because some of its rows are cached starts a new block
    when the current one is full; training that block may evict those rows, and the partition
    then no longer fits a block: it is cut into pieces.  It was inserted whole, and the row memory
    grew past cache plus block (400 rows in partitions of 40, every seed below: one rebuild)."""
    X, y = noisy_linear_data(400, 5, 0)
    Xd, yd = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
    for seed in range(4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LinearSVC(solver="sbm", cache_bytes="10%", max_iter=4, tol=1e-4, random_state=seed)
            clf.fit(Xd, yd)
        # the row memory made for cache plus block at the first partition is never made larger
        assert [r["rebuilds"] for r in clf.history_] == [0] * len(clf.history_)
        assert len({r["memory_bytes"] for r in clf.history_[1:]}) == 1


def test_a_row_larger_than_the_block_is_held_whole_while_it_trains(scheduler):
    """Pieces of a partition fill the block; a single row that alone is larger than the block is the
    one thing held beyond it (a block of its own), and the fit still reaches the optimum."""
    rng = np.random.RandomState(3)
    X = rng.randn(120, 40) * (rng.rand(120, 40) < 0.05)
    X[:, 0] = 1.0
    X[57] = rng.randn(40)  # 40 nonzeros: 96 + 40 * 12 bytes, beside rows of about 3
    y = np.where(X @ rng.randn(40) + 0.3 * rng.randn(120) > 0, 1, -1)
    Xd = da.from_array(X, chunks=(40, 40)).map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 40)))
    yd = da.from_array(y, chunks=40)
    block = 500  # holds three of the short rows, not row 57
    kw = {"solver": "bm", "loss": "hinge", "C": 0.1, "tol": 1e-3, "max_iter": 300, "random_state": 0}
    clf = LinearSVC(cache_bytes=1, block_bytes=block, **kw).fit(Xd, yd)
    ref = LinearSVC(loss="hinge", C=0.1, tol=1e-10, max_iter=100_000, random_state=0).fit(X, y)
    assert clf.duality_gap_ <= 1e-3 * abs(clf.objective_)
    assert clf.objective_ - ref.objective_ <= 1e-3 * abs(clf.objective_) + 1e-12
    most = max(r["memory_bytes"] for r in clf.history_)
    assert block < most <= 96 + 40 * 12 + RowCache.HEADER + 16  # that row alone, with the memory's header
    assert clf.history_[0]["blocks"] >= 120 * (96 + 3 * 12) // block


def test_bm_takes_a_partition_that_fills_its_block_exactly(scheduler):
    """A partition of exactly block_bytes once divided to 249.999... rows and failed (BM has no
    cached row to evict for room)."""
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:2000], y[:2000]
    Xd = da.from_array(X.toarray(), chunks=(250, 123)).map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 123)))
    clf = LinearSVC(solver="bm", loss="hinge", block_bytes=40_000, tol=5e-2, max_iter=50, random_state=0)
    clf.fit(Xd, da.from_array(y, chunks=250))
    assert clf.duality_gap_ <= 5e-2


def test_block_passes_end_at_the_gap_rule_and_inner_iter_caps_them(monkeypatch):
    """``inner_iter`` is a cap: a block's passes end once its gap is a tenth of the gap to beat."""
    X, y = small_a9a()
    kw = {"solver": "sbm", "cache_bytes": 100_000, "block_bytes": 100_000, "tol": 1e-3, "max_iter": 30}

    def fit(**extra):
        clf = LinearSVC(random_state=0, **{**kw, **extra}).fit(X, y)
        assert clf.duality_gap_ <= 1e-3 * abs(clf.objective_)
        return clf.history_[-1]["row_visits"], clf.history_[-1]["blocks"]

    with_rule, blocks = fit(inner_iter=100)
    capped, capped_blocks = fit(inner_iter=2, max_iter=200)
    monkeypatch.setattr(BlockTrainer, "solved_below", lambda self, start_gap: -np.inf)
    without_rule, _ = fit(inner_iter=100)  # every block gets its 100 passes (or LIBLINEAR's eps)
    assert with_rule <= 0.5 * without_rule
    assert capped / capped_blocks < with_rule / blocks


def test_inner_iter_none_caps_gap_ruled_passes_at_100_and_counts_10_where_no_gap_rule_ends_them():
    # CoCoA+ rounds and Crammer-Singer blocks run their passes as a count: 100 would be 10x the work.
    assert LinearSVC().inner_iter is None
    default, set_ = FitPlan(), FitPlan(inner_iter=7)
    assert (default.gap_ruled_passes, default.fixed_passes) == (100, 10)
    assert (set_.gap_ruled_passes, set_.fixed_passes) == (7, 7)


@pytest.mark.parametrize("share", [False, True])
def test_the_default_split_is_the_papers_half_cache_half_block(share):
    """SBM-1/2 (Chang and Roth, KDD 2011): the block as large as the cache, so that the two share
    SBM's memory equally; BM, with no cache, a block of that whole memory (issue 52: changing the
    split failed nothing before this test)."""
    for solver, block, cache in (("sbm", 6_000, 6_000), ("bm", 12_000, 0)):
        if share:
            plan = FitPlan(solver=solver, cache_share=0.1).with_cache_bytes(6_000)
        else:
            plan = FitPlan(solver=solver, cache_bytes=6_000)
        assert (plan.block_bytes, plan.cache_bytes) == (block, cache)
    explicit = FitPlan(solver="sbm", cache_bytes=6_000, block_bytes=1_000)  # a user's split is kept
    assert (explicit.block_bytes, explicit.cache_bytes) == (1_000, 6_000)


def test_auto_gives_sbm_a_cache_and_blocks_that_share_the_budget():
    """solver="auto" streams SBM with the SBM paper's split inside cache_bytes: half the cache, half
    the blocks (AUTO_SBM_CACHE), so that its rows stay within the budget as StreamSVM's cache does;
    a block_bytes given, or a schedule named, keeps its own split."""
    auto = FitPlan(solver="auto", cache_bytes=6_001)
    assert auto.block_bytes is None  # set with the schedule, not before
    sbm = auto.scheduled("sbm")
    assert (sbm.solver, sbm.cache_bytes, sbm.block_bytes) == ("sbm", 3_000, 3_001)
    shared = FitPlan(solver="auto", cache_share=0.1).with_cache_bytes(6_000).scheduled("sbm")
    assert (shared.cache_bytes, shared.block_bytes) == (3_000, 3_000)
    given = FitPlan(solver="auto", cache_bytes=6_000, block_bytes=1_000).scheduled("sbm")
    assert (given.cache_bytes, given.block_bytes) == (6_000, 1_000)
    named = FitPlan(solver="sbm", cache_bytes=6_000).scheduled("sbm")
    assert (named.cache_bytes, named.block_bytes) == (6_000, 6_000)
    paper = auto.scheduled("streamsvm")
    assert (paper.cache_bytes, paper.block_bytes) == (6_001, 12_002)
    # Which schedule: "auto" SBM; StreamSVM where the band gave way, for cache_policy="paper", and for
    # solver="band"'s rows beyond the primal sums (its plan's blocks are not split); a named one kept.
    assert choice.dual_schedule(auto) == "sbm"
    assert choice.dual_schedule(auto, gave_way=True) == "streamsvm"
    assert choice.dual_schedule(auto.replace(cache_policy="paper")) == "streamsvm"
    assert choice.dual_schedule(FitPlan(solver="band", cache_bytes=6_000)) == "streamsvm"
    assert choice.dual_schedule(FitPlan(solver="bm", cache_bytes=6_000), gave_way=True) == "bm"


def _auto_rows(n=3_000, d=40, chunk=100):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return da.from_array(X, chunks=(chunk, d)), da.from_array(y, chunks=chunk)


def test_auto_streams_sbm_within_cache_bytes_where_the_band_and_newton_do_not_train():
    """The dual schedule solver="auto" streams (choice.AUTO_SCHEDULE): SBM, its cache and blocks
    inside cache_bytes, the model SBM's with that split named, bit for bit; cache_policy="paper"
    (StreamSVM's own rule) keeps StreamSVM."""
    X, y = _auto_rows()
    budget = 100_000  # partitions of 100 rows, about 40 kB: within a block of half of it
    kw = {"loss": "hinge", "dual": True, "tol": 1e-3, "random_state": 0, "max_iter": 30}
    auto = LinearSVC(cache_bytes=budget, **kw).fit(X, y)
    assert {r["solver"] for r in auto.history_} == {"sbm"}
    assert auto.duality_gap_ <= 1e-3
    peak = max(r["peak_used_bytes"] for r in auto.history_)
    assert budget // 2 < peak <= budget  # the block and the cache both used, within the budget
    assert max(r["cache_bytes"] for r in auto.history_) <= budget // 2
    half = LinearSVC(solver="sbm", cache_bytes=budget // 2, block_bytes=budget - budget // 2, **kw).fit(X, y)
    np.testing.assert_array_equal(auto.coef_, half.coef_)
    whole = LinearSVC(solver="sbm", cache_bytes=budget, **kw).fit(X, y)  # the named split: twice it
    assert max(r["peak_used_bytes"] for r in whole.history_) > budget
    with pytest.warns(ConvergenceWarning):  # two reads: enough to name the schedule
        paper = LinearSVC(cache_bytes=budget, cache_policy="paper", **{**kw, "max_iter": 2}).fit(X, y)
    assert {r["solver"] for r in paper.history_} == {"streamsvm"}


def test_a_checkpoint_is_resumed_by_the_schedule_that_wrote_it(tmp_path, monkeypatch):
    """The schedule "auto" chose is in the checkpoint's fingerprint: a checkpoint StreamSVM wrote
    (solver="auto" before it chose SBM) is refused by "auto" now, by name, not rebuilt into another
    trainer; naming its schedule resumes it, to the model of a fit never stopped."""
    X, y = _auto_rows(n=1_000)
    kw = {"loss": "hinge", "dual": True, "random_state": 0, "cache_bytes": 50_000, "deterministic": True}
    monkeypatch.setattr(choice, "AUTO_SCHEDULE", "streamsvm")
    with pytest.warns(ConvergenceWarning):  # one read, and its checkpoint
        LinearSVC(max_iter=1, checkpoint_dir=tmp_path, **kw).fit(X, y)
    monkeypatch.undo()
    with pytest.raises(
        ValueError, match=r"schedule: 'streamsvm' then, 'sbm' now\).*solver='streamsvm' names"
    ):
        LinearSVC(max_iter=3, checkpoint_dir=tmp_path, **kw).fit(X, y, resume=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        resumed = LinearSVC(max_iter=3, solver="streamsvm", checkpoint_dir=tmp_path, **kw).fit(
            X, y, resume=True
        )
        straight = LinearSVC(max_iter=3, solver="streamsvm", **kw).fit(X, y)
    np.testing.assert_array_equal(resumed.coef_, straight.coef_)


def test_a_checkpoint_written_before_its_fingerprint_held_the_schedule_names_it_by_its_solver(
    tmp_path, monkeypatch
):
    """Files written before the schedule joined the fingerprint hold the solver's name instead: the
    schedule it then decided ("auto": StreamSVM) is compared (checkpoint.EARLIER_AUTO_SCHEDULE)."""
    X, y = _auto_rows(n=1_000)
    kw = {"loss": "hinge", "dual": True, "random_state": 0, "cache_bytes": 50_000, "deterministic": True}
    written = Checkpoints.__init__

    def as_before(self, directory, every, fingerprint):  # the fingerprint of a file of 2026-12-01
        written(self, directory, every, {k: v for k, v in fingerprint.items() if k != "schedule"})
        self.fingerprint["solver"] = self.fingerprint_solver

    for solver, directory in (("auto", tmp_path / "auto"), ("sbm", tmp_path / "sbm")):
        monkeypatch.setattr(choice, "AUTO_SCHEDULE", "streamsvm")  # what "auto" streamed then
        monkeypatch.setattr(Checkpoints, "__init__", as_before)
        monkeypatch.setattr(Checkpoints, "fingerprint_solver", solver, raising=False)
        with pytest.warns(ConvergenceWarning):
            LinearSVC(max_iter=1, solver=solver, checkpoint_dir=directory, **kw).fit(X, y)
        monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for solver, directory in (("streamsvm", tmp_path / "auto"), ("sbm", tmp_path / "sbm")):
            resumed = LinearSVC(max_iter=3, solver=solver, checkpoint_dir=directory, **kw).fit(
                X, y, resume=True
            )
            straight = LinearSVC(max_iter=3, solver=solver, **kw).fit(X, y)
            np.testing.assert_array_equal(resumed.coef_, straight.coef_)
    with pytest.raises(ValueError, match=r"schedule: 'sbm' then, 'streamsvm' now"):
        LinearSVC(max_iter=3, solver="streamsvm", checkpoint_dir=tmp_path / "sbm", **kw).fit(
            X, y, resume=True
        )

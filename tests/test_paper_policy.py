"""StreamSVM's own cache rule (cache_policy="paper") and the paper's constants, pinned."""

import dask.array as da
import numpy as np
import pytest

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.dual.alpha_store import AlphaStore
from dask_streamsvm.engine.dual.cache import RowCache
from dask_streamsvm.engine.plan.problem import CACHE_POLICIES, FitPlan
from dask_streamsvm.engine.plan.sizes import slot_overhead
from dask_streamsvm.kernels.rng import make_state

from ._helpers import load_libsvm_dataset


def _a9a_head(n=4000, chunk=500):
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:n], y[:n]
    nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return da.from_array(X, chunks=(chunk, 123)), da.from_array(y, chunks=chunk), nbytes


def _fit(Xd, yd, nbytes, **kw):
    params = dict(
        solver="streamsvm", cache_bytes=int(0.1 * nbytes), tol=1e-3, max_iter=100, random_state=0,
        deterministic=True,
    )  # fmt: skip
    return LinearSVC(**{**params, **kw}).fit(Xd, yd)


def _random_insert(self, X, ids, y, cost, scores, *args, rows=None):
    self.insert(X, ids, y, cost, *args, rows=rows)
    return np.zeros(0, np.int64)


def test_the_paper_policy_is_random_eviction_plus_the_eps_rule(monkeypatch):
    Xd, yd, nbytes = _a9a_head()
    paper = _fit(Xd, yd, nbytes, cache_policy="paper")
    random = _fit(Xd, yd, nbytes, cache_policy="random")
    assert paper.duality_gap_ <= 1e-3 and random.duality_gap_ <= 1e-3
    # The eps rule evicts rows that random eviction alone keeps: another model.
    assert paper.history_[-1]["rows_left_out"] == 0  # no row is turned away by its share of the gap
    assert not np.array_equal(paper.coef_, random.coef_)
    # Bit for bit the default trainer with the gap admission replaced by random insertion.
    monkeypatch.setattr(RowCache, "admit", _random_insert)
    informative_without_admission = _fit(Xd, yd, nbytes)
    np.testing.assert_array_equal(paper.coef_, informative_without_admission.coef_)
    assert len(paper.history_) == len(informative_without_admission.history_)


@pytest.mark.parametrize("solver", ["sbm", "bm", "partial"])
def test_solvers_without_an_eps_rule_refuse_the_paper_policy_and_name_theirs(solver):
    assert "paper" in CACHE_POLICIES
    with pytest.raises(
        ValueError, match="cache_policy='paper' is StreamSVM's own rule.*'informative' or 'random'"
    ):
        FitPlan(solver=solver, cache_policy="paper")
    for ok in ("streamsvm", "auto", "memory"):
        assert FitPlan(solver=ok, cache_policy="paper").cache_policy == "paper"
    with pytest.raises(ValueError, match="cache_policy must be one of 'informative', 'random', 'paper'"):
        FitPlan(cache_policy="papers")


def _sweeps_of(monkeypatch, policy):
    """The arguments of every cache sweep of a small fit under ``policy``."""
    calls = []
    sweep = RowCache.sweep

    def spy(self, W, bias, eps, store, rng_state, **kw):
        calls.append(dict(kw, eps=eps.copy(), fill=self.n_live / self.n_slots))
        return sweep(self, W, bias, eps, store, rng_state, **kw)

    monkeypatch.setattr(RowCache, "sweep", spy)
    Xd, yd, nbytes = _a9a_head(2000, 250)
    _fit(Xd, yd, nbytes, cache_policy=policy, max_iter=3, tol=1e-9)
    monkeypatch.undo()
    return calls


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("policy", CACHE_POLICIES)
def test_the_trainer_sweeps_with_the_papers_beta_threshold_and_starting_eps(monkeypatch, policy):
    calls = _sweeps_of(monkeypatch, policy)
    assert calls and all(c["beta"] == 0.9 and c["full_at"] == 0.9 for c in calls)  # Algorithm 2's beta
    assert calls[0]["eps"][0, 0] == np.inf  # eps starts at +inf (printed "9" in the extracted text)
    assert calls[0]["window"] >= 250  # the paper's n: the rows seen
    # The eps rule is on for the default and the paper's rule, off for random eviction alone.
    assert all(c["rule"] == (policy != "random") for c in calls)
    assert max(c["fill"] for c in calls) > 0.9  # the rule had a nearly full cache to act on


def _cache_at_margins(G):
    """A full dense cache of rows ``x_i = (1 + G_i) e_1``, label +1, alpha = 0, and ``w = e_1``.

    Each row's gradient is ``G_i = y_i w.x_i - 1``; all are positive, so no
    DCD step moves ``w`` and every visit sees the same ``G_i``.
    """
    n = G.size
    X = np.zeros((n, 4))
    X[:, 0] = 1.0 + G
    cache = RowCache(RowCache.HEADER + n * (slot_overhead(1, False) + 4 * 8), 4, np.float64, False, 1)
    store = AlphaStore(1)
    cache.insert(X, np.arange(n), np.ones((1, n)), np.ones((1, n)), True, 0.0, store, make_state(0))
    assert cache.n_live == cache.n_slots == n
    W = np.zeros((1, 5))
    W[0, 0] = 1.0
    return cache, store, W


def _evicted(G, eps, beta):
    cache, store, W = _cache_at_margins(G)
    e = np.array([[eps, 0.0, 0.0]])
    cache.sweep(W, 0.0, e, store, make_state(0), beta=beta, full_at=0.9, window=1e9, rule=True)
    return np.flatnonzero(store.slot_of[: G.size] < 0)


def test_rows_inside_eps_stay_and_rows_beyond_it_leave_a_nearly_full_cache():
    # 50 rows with 0 < G <= eps (informative: they stay), 10 with G > eps (uninformative).
    G = np.concatenate([np.linspace(0.01, 0.5, 50), np.linspace(1.0, 2.0, 10)])
    left = _evicted(G, eps=0.5, beta=1.0)
    assert left.size > 0 and (G[left] > 0.5).all()  # until the cache is no longer nearly full


def test_beta_shrinks_eps_at_every_visit_so_that_a_full_cache_evicts():
    # eps = 50 is above every G; multiplied by 0.9 at each visit it falls below them within a sweep.
    G = np.linspace(0.5, 2.0, 60)
    assert _evicted(G, eps=50.0, beta=1.0).size == 0
    assert _evicted(G, eps=50.0, beta=0.9).size > 0

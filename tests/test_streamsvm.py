"""Out-of-core training (solver="streamsvm") on Dask collections and files."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dask_streamsvm import LinearSVC, read_libsvm
from dask_streamsvm.engine.dual.alpha_store import AlphaStore
from dask_streamsvm.engine.dual.cache import RowCache
from dask_streamsvm.engine.plan.sizes import parse_bytes
from dask_streamsvm.kernels.rng import make_state

from ._helpers import LIBLINEAR_OPTIMA, a9a_dask, dataset_path, load_libsvm_dataset

P_STAR = LIBLINEAR_OPTIMA[("a9a", "squared_hinge", 1.0)]
SLACK = 0.5e-4 / P_STAR  # the reference is rounded to 4 decimals


def fit_stream(X, y, nbytes, **kw):
    params = {"fit_intercept": False, "tol": 1e-4, "max_iter": 200, "random_state": 0, "dual": True}
    params.update(kw)
    return LinearSVC(cache_bytes=int(0.1 * nbytes), **params).fit(X, y)


def assert_certified_optimum(clf, budget):
    rel = (clf.objective_ - P_STAR) / P_STAR
    assert clf.duality_gap_ <= 1e-4
    assert -SLACK <= rel <= clf.duality_gap_ + SLACK
    assert max(r["cache_bytes"] for r in clf.history_) <= budget
    assert clf.history_[-1]["rows_read"] >= 2 * 32561


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["csr", "dense"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a9a_dask_array_reaches_the_optimum_with_a_tenth_in_cache(layout, dtype):
    X, y, nbytes = a9a_dask(layout, dtype)
    clf = fit_stream(X, y, nbytes)
    assert_certified_optimum(clf, int(0.1 * nbytes))
    assert clf.coef_.shape == (1, 123) and clf.n_features_in_ == 123
    # The returned coefficients are the certified state: recompute its primal.
    Xc, yc = load_libsvm_dataset("a9a")
    w = clf.coef_.ravel()
    primal = 0.5 * w @ w + (np.maximum(0, 1 - yc * (Xc @ w)) ** 2).sum()
    assert primal == pytest.approx(clf.objective_, rel=1e-6 if dtype == np.float32 else 1e-9)


@pytest.mark.slow
def test_alpha_store_on_disk_gives_the_same_optimum(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    X, y, nbytes = a9a_dask("csr", np.float64)
    clf = fit_stream(X, y, nbytes, alpha_store="disk", deterministic=True)
    assert_certified_optimum(clf, int(0.1 * nbytes))
    ram = fit_stream(X, y, nbytes, deterministic=True)
    np.testing.assert_array_equal(clf.coef_, ram.coef_)  # same arithmetic, other storage
    assert list(tmp_path.iterdir()) == []  # the spill files are gone


@pytest.mark.slow
def test_a9a_dask_dataframe_with_label_column():
    X, y = load_libsvm_dataset("a9a")
    frame = pd.DataFrame(X.toarray(), columns=[f"f{j}" for j in range(123)]).assign(label=y)
    ddf = dd.from_pandas(frame, npartitions=16)
    nbytes = X.shape[0] * 123 * 8
    clf = fit_stream(ddf, "label", nbytes)
    assert_certified_optimum(clf, int(0.1 * nbytes))
    assert list(clf.feature_names_in_) == [f"f{j}" for j in range(123)]


@pytest.mark.slow
# dask's Parquet writer calls a pandas method pandas 3.1 deprecates; not ours.
@pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")
def test_read_libsvm_and_parquet_paths(tmp_path):
    X, y = read_libsvm(dataset_path("a9a"), n_features=123)
    Xm, ym = load_libsvm_dataset("a9a")
    nbytes = Xm.data.nbytes + Xm.indices.nbytes + Xm.indptr.nbytes
    clf = fit_stream(X, y, nbytes)
    assert_certified_optimum(clf, int(0.1 * nbytes))
    frame = pd.DataFrame(Xm.toarray(), columns=[f"f{j}" for j in range(123)]).assign(label=ym)
    dd.from_pandas(frame, npartitions=8).to_parquet(tmp_path / "a9a.parquet")
    clf = LinearSVC(
        cache_bytes=int(0.1 * 123 * 8 * Xm.shape[0]),
        fit_intercept=False,
        tol=1e-4,
        max_iter=200,
        random_state=0,
        dual=True,
    ).fit(str(tmp_path / "a9a.parquet"), "label")
    assert_certified_optimum(clf, int(0.1 * 123 * 8 * Xm.shape[0]))


def test_same_seed_same_model_and_unknown_chunk_sizes(scheduler):
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:4000], y[:4000]
    Xd, yd = da.from_array(X.toarray(), chunks=(500, 123)), da.from_array(y, chunks=500)
    # Unknown partition lengths (as after a filter): learned on the first pass.
    Xd._chunks = ((np.nan,) * 8, (123,))
    yd._chunks = ((np.nan,) * 8,)
    kw = {"cache_bytes": 200_000, "tol": 1e-3, "max_iter": 100}
    a = LinearSVC(random_state=1, deterministic=True, **kw).fit(Xd, yd)
    b = LinearSVC(random_state=1, deterministic=True, **kw).fit(Xd, yd)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.duality_gap_ <= 1e-3
    ref = LinearSVC(random_state=0, tol=1e-8, max_iter=10000).fit(X, y)
    assert (a.objective_ - ref.objective_) / ref.objective_ <= a.duality_gap_ + 1e-8
    # The asynchronous schedule (the default) depends on timing: its certificate holds.
    c = LinearSVC(random_state=1, **kw).fit(Xd, yd)
    assert c.duality_gap_ <= 1e-3
    assert -1e-8 <= (c.objective_ - ref.objective_) / ref.objective_ <= c.duality_gap_ + 1e-8


def test_one_vs_rest_streams_all_problems_in_one_read(scheduler):
    rng = np.random.RandomState(0)
    centers = rng.randn(3, 5) * 3
    labels = rng.randint(0, 3, 900)
    X = centers[labels] + rng.randn(900, 5)
    names = np.array(["a", "b", "c"])[labels]
    clf = LinearSVC(cache_bytes=20_000, tol=1e-4, max_iter=300, random_state=0)
    clf.fit(da.from_array(X, chunks=100), da.from_array(names, chunks=100))
    assert clf.coef_.shape == (3, 5) and list(clf.classes_) == ["a", "b", "c"]
    ref = LinearSVC(tol=1e-9, max_iter=100000, random_state=0).fit(X, names)
    assert (clf.duality_gap_ <= 1e-4).all()
    assert np.all((clf.objective_ - ref.objective_) / ref.objective_ <= clf.duality_gap_ + 1e-9)
    passes = {r["pass"] for r in clf.history_}
    assert len(clf.history_) == 3 * len(passes)  # one record per class per pass


def test_in_memory_input_can_be_streamed_too():
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:3000], y[:3000]
    clf = LinearSVC(solver="streamsvm", cache_bytes=50_000, tol=1e-3, max_iter=100, random_state=0).fit(X, y)
    ref = LinearSVC(tol=1e-8, max_iter=10000, random_state=0).fit(X, y)
    assert clf.duality_gap_ <= 1e-3
    assert clf.objective_ >= ref.objective_ * (1 - 1e-9)


def test_streaming_errors_name_partition_and_fix(scheduler):
    X = np.random.RandomState(0).randn(40, 3)
    y = np.arange(40) % 2
    X[33, 2] = np.inf
    with pytest.raises(
        ValueError, match=r"partition 3, row 3 \(row 33 of the collection\), feature 2: the value is infinity"
    ):
        LinearSVC(cache_bytes=10_000, max_iter=3).fit(
            da.from_array(X, chunks=10), da.from_array(y, chunks=10)
        )
    with pytest.raises(ValueError, match=r"column chunks.*X.rechunk"):
        LinearSVC().fit(da.from_array(X, chunks=(10, 2)), da.from_array(y, chunks=10))
    finite = np.nan_to_num(X, posinf=0.0)  # the infinity above may be named first, by a count that reads X
    with pytest.raises(ValueError, match="only one class"):
        LinearSVC().fit(da.from_array(finite, chunks=10), da.from_array(np.ones(40), chunks=10))
    with pytest.raises(ValueError, match="cannot hold a single row"):  # StreamSVM's cache
        LinearSVC(solver="streamsvm", cache_bytes=10, max_iter=3, cluster=None).fit(
            da.from_array(X[:30], chunks=10), da.from_array(y[:30], chunks=10)
        )
    with pytest.raises(ValueError, match="pass the label column's name as y"):
        LinearSVC().fit("data.parquet", None)


def test_empty_partitions_are_fine(scheduler):
    X = np.random.RandomState(0).randn(60, 3)
    y = (X[:, 0] > 0).astype(int)
    Xd = da.from_array(X, chunks=((20, 0, 20, 0, 20), (3,)))
    yd = da.from_array(y, chunks=((20, 0, 20, 0, 20),))
    clf = LinearSVC(cache_bytes=5_000, tol=1e-3, max_iter=200, random_state=0).fit(Xd, yd)
    assert clf.duality_gap_ <= 1e-3


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("budget", [2_000, 50_000, 10**6])
def test_row_cache_stays_inside_its_budget_under_churn(sparse, budget):
    rng = np.random.RandomState(0)
    store = AlphaStore(2)
    cache = RowCache(budget, 50, np.float64, sparse, 2, nnz_per_row=5)
    assert cache.nbytes <= budget
    state = make_state(0)
    data = rng.randn(700, 50) * (rng.rand(700, 50) < rng.uniform(0.02, 0.3, size=(700, 1)))
    for b in range(30):
        ids = np.arange(b * 40, (b + 1) * 40) % 700  # rows come back, as on later passes
        X = sp.csr_matrix(data[ids]) if sparse else data[ids]
        y = np.where(rng.rand(2, 40) < 0.5, 1.0, -1.0)
        cache.insert(X, ids, y, np.ones((2, 40)), True, 1.0, store, state)
        assert cache.used_bytes <= cache.nbytes <= budget
        live = cache.live[: cache.n_live]
        gids = cache.gid[live]
        assert len(set(gids.tolist())) == len(gids)  # a row is cached once
        np.testing.assert_array_equal(store.slot_of[gids], live)
        for s, g in zip(live, gids, strict=True):  # each slot holds its row's values
            if sparse:
                lo, hi = cache.starts[s], cache.ends[s]
                row = np.zeros(50)
                row[cache.indices[lo:hi]] = cache.data[lo:hi]
            else:
                row = cache.rows[s]
            np.testing.assert_array_equal(row, data[g])
            assert cache.QD[0, s] == pytest.approx(data[g] @ data[g] + 1.0 + cache.D[0, s])
    assert cache.evictions > 0 or budget >= 10**6


def test_eviction_writes_alpha_back_and_keeps_dual_sums_exact():
    store = AlphaStore(1)
    cache = RowCache(10_000, 4, np.float64, False, 1)
    X = np.eye(4)[[0, 1, 2, 3, 0, 1]]
    state = make_state(0)
    cache.insert(X, np.arange(6), np.ones((1, 6)), np.full((1, 6), 2.0), True, 0.0, store, state)
    live = cache.live[: cache.n_live].copy()
    cache.A[0, live] = np.arange(1, len(live) + 1, dtype=float)
    cache.evict(live[:2], store)
    cache.write_back(store)
    alpha = store.alpha[0, :6]
    assert store.sums[0, 0] == pytest.approx(alpha.sum())
    assert store.sums[0, 1] == pytest.approx((0.25 * alpha**2).sum())  # D = 1 / (2 C)
    assert cache.n_live == 4
    assert store.alpha[0, 0] != 0.0 or store.alpha[0, 1] != 0.0  # evicted rows kept their alphas


@pytest.mark.parametrize(
    ("text", "expected"), [("512MB", 512 * 10**6), ("2GiB", 2 * 2**30), (1234, 1234), ("1.5kB", 1500)]
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


def test_a_failing_partition_stops_the_fit_with_the_original_error(scheduler):
    import threading

    X = np.random.RandomState(0).randn(200, 3)
    y = (X[:, 0] > 0).astype(int)

    def flaky(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 7:
            raise OSError("partition 7 is unreadable")
        return block

    Xd = da.from_array(X, chunks=(20, 3)).map_blocks(flaky, dtype=X.dtype)
    with pytest.raises(OSError, match="partition 7 is unreadable"):
        LinearSVC(cache_bytes=5_000, max_iter=5, shuffle=False).fit(Xd, da.from_array(y, chunks=20))
    assert not [t for t in threading.enumerate() if t.name == "dask-streamsvm-reader"]


def test_labels_that_appear_only_on_a_later_read_are_named():
    import dask

    calls = {"n": 0}

    def labels(k):
        calls["n"] += 1
        # First read (class counting) sees 0/1; a later read sees a 7.
        return np.array([0, 1] * 5) if calls["n"] <= 2 else np.array([0, 7] * 5)

    X = np.random.RandomState(0).randn(20, 2)
    yd = da.concatenate([da.from_delayed(dask.delayed(labels)(k), shape=(10,), dtype=int) for k in range(2)])
    with pytest.raises(ValueError, match=r"has label 7, which is not among the classes \[0, 1\]"):
        LinearSVC(cache_bytes=5_000, max_iter=3, shuffle=False).fit(da.from_array(X, chunks=10), yd)


def test_streaming_weights_intercept_and_verbose_match_the_memory_solver(capsys, scheduler):
    rng = np.random.RandomState(3)
    X = rng.randn(1500, 6)
    y = np.where(X @ rng.randn(6) + 0.3 * rng.randn(1500) > 0.4, "yes", "no")
    sw = rng.uniform(0.0, 2.0, size=1500)
    sw[::10] = 0.0
    params = {"C": 0.5, "class_weight": {"yes": 2.0, "no": 0.7}, "intercept_scaling": 2.0, "random_state": 0}
    ref = LinearSVC(tol=1e-9, max_iter=100000, **params).fit(X, y, sample_weight=sw)
    # The streaming engine (its reads on the client's cluster), not a cluster method.
    clf = LinearSVC(cache_bytes=30_000, tol=1e-4, max_iter=300, verbose=2, dual=True, cluster=None, **params)
    clf.fit(
        da.from_array(X, chunks=(150, 6)),
        da.from_array(y, chunks=150),
        sample_weight=da.from_array(sw, chunks=150),
    )
    assert clf.duality_gap_ <= 1e-4
    rel = (clf.objective_ - ref.objective_) / ref.objective_
    assert -1e-9 <= rel <= clf.duality_gap_ + 1e-9
    assert (clf.predict(X) == ref.predict(X)).mean() > 0.99
    out = capsys.readouterr().out
    assert out.count("[LinearSVC]") == len(clf.history_) and "cache_rows=" in out


@pytest.mark.parametrize("kind", ["numpy", "dask array", "dask dataframe"])
def test_cache_bytes_as_a_share_of_the_rows_is_one_rule_for_every_input(kind):
    """cache_bytes="10%": a tenth of the rows' bytes as the row cache stores them, for in-memory
    and Dask input alike; the cache fills up to it and not past it, and the fit is certified."""
    from dask_streamsvm.engine.plan.sizes import stored_bytes

    X, y = load_libsvm_dataset("a9a")
    X, y = X[:8000].toarray(), y[:8000]
    data = {
        "numpy": (X, y),
        "dask array": (da.from_array(X, chunks=(1000, -1)), da.from_array(y, chunks=1000)),
        "dask dataframe": (
            dd.from_pandas(
                pd.DataFrame(X, columns=[f"f{j}" for j in range(123)]).assign(label=y), npartitions=8
            ),
            "label",
        ),
    }[kind]
    budget = 0.1 * stored_bytes(8000, 8000 * 123, 1, np.float64, False)
    clf = LinearSVC(cache_bytes="10%", solver="streamsvm", tol=1e-3, random_state=0).fit(*data)
    used = max(r["cache_bytes"] for r in clf.history_)
    assert 0.9 * budget <= used <= budget
    assert clf.duality_gap_ <= 1e-3


@pytest.mark.parametrize("value", ["0%", "150%", "ten%", "%"])
def test_a_share_outside_0_to_100_percent_is_named(value):
    X, y = load_libsvm_dataset("a9a")
    with pytest.raises(
        ValueError, match=r"share of the training data must be a percentage above 0% and at most"
    ):
        LinearSVC(cache_bytes=value, solver="streamsvm").fit(*a9a_dask("csr", np.float64)[:2])
    with pytest.raises(ValueError, match="or a share of the training data such as '10%'"):
        LinearSVC(cache_bytes="10 percent").fit(X[:100], y[:100])

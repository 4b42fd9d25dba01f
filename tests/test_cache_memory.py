"""What keeps a streaming fit's peak RSS near the memory guide's formula (docs/guide/memory.md).

The allocator's settings (:mod:`dask_streamsvm.engine.data.malloc`): freed
partitions leave the process instead of staying in glibc's heaps; and the
dual store and a row memory the data fills are allocated once, at their
final size, instead of doubling (which holds the old arrays beside the new).

The memory budget is a ceiling, not an allocation (docs/reliability.md).

``cache_bytes`` far above the data, or above the machine's memory, costs
only the rows the cache holds; checkpoints write those rows only; and the
cache takes every decision as one allocated whole would, so the model and
a resumed fit stay the same bit for bit.
"""

import os
import subprocess
import sys
import textwrap
import warnings
from types import SimpleNamespace

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.data import malloc as _malloc
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.dual.alpha_store import AlphaStore
from dask_streamsvm.engine.dual.cache import RowCache
from dask_streamsvm.engine.dual.trainer import fit_rows, reserve_full
from dask_streamsvm.engine.store import checkpoint as ckpt
from dask_streamsvm.kernels.rng import make_state

from ._helpers import noisy_linear_data, reads_ended

GLIBC = sys.platform.startswith("linux") and _malloc._mallopt is not None

# A child in the state glibc's adaptive thresholds reach once a partition of tens of MB is freed
# (its mapping's size becomes the mmap threshold, twice that the trim threshold: set here with
# mallopt, as reaching it by allocations depends on the heap the imports left), then fills and
# frees a 20 MB array and prints how much of it stayed resident.
RETAINED = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from dask_streamsvm.engine.data import malloc as _malloc
    _malloc._mallopt(_malloc._M_MMAP_THRESHOLD, 24 << 20)
    _malloc._mallopt(_malloc._M_TRIM_THRESHOLD, 48 << 20)
    if sys.argv[1] == "bounded":
        import dask.array as da
        from dask_streamsvm.engine.data.source import DaskSource
        DaskSource(da.zeros((4, 2), chunks=2), da.zeros(4, chunks=2))  # a fit's first step
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    before = rss()
    b = np.ones(20 << 20, dtype=np.uint8); del b
    print(rss() - before)
    """
)


def _retained(mode, env=None):
    # Without glibc's own settings: distributed's nanny puts MALLOC_TRIM_THRESHOLD_ in the
    # environment of the process that starts a LocalCluster (an earlier test in this worker),
    # and the setting rightly leaves a user's (or Dask's) choice alone.
    clean = {k: v for k, v in os.environ.items() if k not in _malloc._USER_SETTINGS}
    out = subprocess.run(
        [sys.executable, "-c", RETAINED, mode], capture_output=True, text=True, check=True,
        env={**clean, **(env or {})},
    )  # fmt: skip
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt")
def test_a_freed_partition_leaves_the_process_once_a_source_is_made():
    # Without the setting glibc keeps the freed 20 MB in its heap (below its trim threshold).
    assert _retained("plain") > 16 << 20
    assert _retained("bounded") < 2 << 20


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt")
def test_the_users_own_glibc_settings_are_kept():
    for name in _malloc._USER_SETTINGS:
        code = f"import os; os.environ[{name!r}] = '4096'\n"
        code += "from dask_streamsvm.engine.data import malloc as _malloc; print(_malloc.bound_retention())"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.split()[-1] == "False", name


def test_the_thresholds_are_the_measured_ones():
    from dask_streamsvm.engine.data.parquet import GROUP_BYTES

    # 8 MiB: decoded columns (400 KB for 100k float32 rows) and the solvers' vectors (1.6-2.4 MB
    # for a band of 200,000-300,000 rows) stay in the heaps, partitions of tens of MB get mappings;
    # 16 MiB of a heap's free top stay: the decoded columns of a Parquet read's group, freed and
    # made again for the next group, twice over.
    assert _malloc.MMAP_THRESHOLD == 8 << 20 and _malloc.TRIM_THRESHOLD == 16 << 20
    assert _malloc.TRIM_THRESHOLD >= 2 * GROUP_BYTES


# A child that makes a source (the thresholds set), then makes and frees a Parquet read's group of
# decoded columns (20 of 400 KB, in the heap) and prints how much of it stayed resident, and how much
# after the reader's end-of-pass malloc_trim.
KEPT = textwrap.dedent(
    """
    import os
    import numpy as np
    import dask.array as da
    from dask_streamsvm.engine.data import malloc as _malloc
    from dask_streamsvm.engine.data.source import DaskSource
    DaskSource(da.zeros((4, 2), chunks=2), da.zeros(4, chunks=2))
    _malloc.release_free_memory()
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    before = rss()
    columns = [np.ones(100_000, dtype=np.float32) for _ in range(20)]
    del columns
    kept = rss() - before
    _malloc.release_free_memory()
    print(kept, rss() - before)
    """
)


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt")
def test_a_reads_decoded_columns_stay_for_the_next_group_until_the_pass_ends():
    # With glibc's default trim threshold (128 KiB) the freed columns left at once, and every
    # group's were pages faulted in anew.
    clean = {k: v for k, v in os.environ.items() if k not in _malloc._USER_SETTINGS}
    out = subprocess.run([sys.executable, "-c", KEPT], capture_output=True, text=True, check=True, env=clean)
    kept, after = map(int, out.stdout.split()[-2:])
    assert kept > 6 << 20  # of the 8 MB
    assert after < 2 << 20


def _allocations(monkeypatch, cls, method):
    sizes = []
    original = getattr(cls, method)

    def recording(self, size, *args):
        sizes.append(size)
        return original(self, size, *args)

    monkeypatch.setattr(cls, method, recording)
    return sizes


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["streamsvm", "sbm", "bm"])
def test_the_alpha_store_is_allocated_once_for_the_rows_counted(monkeypatch, solver):
    sizes = _allocations(monkeypatch, AlphaStore, "_allocate")
    X, y = noisy_linear_data(3000, 5, 0)
    Xd, yd = da.from_array(X, chunks=300), da.from_array(y, chunks=300)
    LinearSVC(solver=solver, cache_bytes="10%", max_iter=3, tol=1e-2, random_state=0).fit(Xd, yd)
    assert sizes == [1024, 3000]  # as made, then for every row counted (not 2048, then 4096)


def test_a_row_memory_the_data_fills_is_allocated_whole_and_one_above_it_grows():
    cache = RowCache(20_000, 5, np.float64, False, 1)
    reserve_full(cache, cache.n_slots - 1)  # fewer rows than slots: it grows with the rows held
    assert cache.allocated_slots == 0
    reserve_full(cache, cache.n_slots)
    assert cache.allocated_slots == cache.n_slots and cache.nbytes <= cache.cache_bytes


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["streamsvm", "sbm"])
def test_a_cache_below_the_data_grows_once(monkeypatch, solver):
    sizes = _allocations(monkeypatch, RowCache, "_grow_slots")
    X, y = noisy_linear_data(400, 5, 0)
    Xd, yd = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
    LinearSVC(solver=solver, cache_bytes="10%", max_iter=3, tol=1e-2, random_state=0).fit(Xd, yd)
    assert len(sizes) == 1


def test_a_cluster_part_is_not_sized_by_the_whole_collections_counts():
    X, y = noisy_linear_data(400, 5, 0)
    source = DaskSource(da.from_array(X, chunks=40), da.from_array(y, chunks=40))
    plan = SimpleNamespace(counts=np.array([150, 250]))
    assert fit_rows(plan, source) == 400
    assert fit_rows(plan, source.subset([0, 1])) == 0  # its rows grow the store as they come
    assert fit_rows(SimpleNamespace(counts=None), source) == 0


# -- The memory budget is a ceiling, not an allocation (docs/reliability.md)

N_PARTS, PART_ROWS = 10, 40


def _data(seed=0, n=N_PARTS * PART_ROWS, d=5):
    return noisy_linear_data(n, d, seed)


def _sparse_collection(X, y):
    Xs = np.where(np.abs(X) > 0.6, X, 0.0)
    Xd = da.from_array(Xs, chunks=(PART_ROWS, X.shape[1])).map_blocks(sp.csr_matrix)
    return Xd, da.from_array(y, chunks=PART_ROWS)


def _fit(Xd, yd, resume=False, **params):
    base = dict(tol=1e-5, max_iter=20, random_state=0, inner_iter=3, deterministic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LinearSVC(**{**base, **params}).fit(Xd, yd, resume=resume)


@pytest.fixture
def allocations(monkeypatch):
    """Every RowCache of the test, to read what it allocated after each insertion."""
    seen = []
    insert = RowCache.insert

    def recording(self, *args, **kwargs):
        out = insert(self, *args, **kwargs)
        seen.append((self, self.nbytes, self.n_live))
        return out

    monkeypatch.setattr(RowCache, "insert", recording)
    return seen


# -- a budget above the data ---------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["streamsvm", "sbm"])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_budget_far_above_the_data_allocates_for_the_rows_held_and_gives_the_same_model(
    solver, sparse, allocations
):
    X, y = _data()
    if sparse:
        Xd, yd = _sparse_collection(X, y)
    else:
        Xd, yd = da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    # 400 rows of 5 features take about 50 KB in the cache: 200 KB holds them all, in one
    # block for SBM, never nearly full for StreamSVM.
    held = _fit(Xd, yd, solver=solver, cache_bytes="200KB")
    allocations.clear()
    huge = _fit(Xd, yd, solver=solver, cache_bytes="100GB")
    np.testing.assert_array_equal(huge.coef_, held.coef_)
    np.testing.assert_array_equal(huge.intercept_, held.intercept_)
    assert huge.n_iter_ == held.n_iter_ and huge.objective_ == held.objective_
    assert allocations[-1][0].n_slots > 10**8  # the budget's slots: every decision is taken on them
    assert max(nbytes for _, nbytes, _ in allocations) < 200_000  # not 100 GB, nor 1 GB
    most = 0
    for _, nbytes, n_live in allocations:
        most = max(most, n_live)
        assert nbytes <= 200 + 4 * most * 150  # a few times the most rows held, never the budget


def test_a_budget_above_the_memory_limit_trains_within_it():
    # In a process that may map 8 GB at most, a 100 GB budget used to fail on its first
    # allocation (or, without a limit, get the process killed by the system).
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS is enforced on Linux")
    code = textwrap.dedent(
        """
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (8 * 2**30, 8 * 2**30))
        import dask, dask.array as da, numpy as np
        from dask_streamsvm import LinearSVC
        dask.config.set(scheduler="synchronous")
        rng = np.random.RandomState(0)
        X = rng.randn(400, 4)
        y = (X @ rng.randn(4) > 0).astype(int)
        Xd, yd = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
        for solver in ("streamsvm", "sbm"):
            clf = LinearSVC(solver=solver, cache_bytes="100GB", max_iter=30, random_state=0).fit(Xd, yd)
            print(solver, clf.n_iter_, clf.score(X, y))
        """
    )
    env = dict(os.environ, MALLOC_ARENA_MAX="2", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    scores = [float(line.split()[2]) for line in done.stdout.splitlines()]
    assert len(scores) == 2 and min(scores) > 0.8


# -- the cache grows, its decisions do not change ------------------------------------------------


def _churn(cache, store, data, sparse, seed):
    """Insert blocks whose rows come back, evict some, sweep: what a fit does to a cache."""
    rng = np.random.RandomState(seed)
    state = make_state(seed)
    W = np.zeros((2, data.shape[1] + 1))
    eps = np.zeros((2, 3))
    eps[:, 0] = np.inf
    trace = []
    for b in range(40):
        ids = rng.choice(data.shape[0], size=40, replace=False)
        X = sp.csr_matrix(data[ids]) if sparse else data[ids]
        y = np.where(rng.rand(2, 40) < 0.5, 1.0, -1.0)
        cost = np.where(rng.rand(2, 40) < 0.1, 0.0, 1.0)
        cache.insert(X, ids, y, cost, True, 1.0, store, state)
        if b % 7 == 3:
            cache.evict(cache.live[: cache.n_live : 3].copy(), store)
            cache.compact()
        if b % 5 == 4:
            cache.sweep(W, 1.0, eps, store, state, beta=0.9, full_at=0.9, window=100.0, rule=True)
        live = cache.live[: cache.n_live].copy()
        rows = cache.rows_of(live)
        rows = rows.toarray() if sparse else rows
        trace.append((cache.meta.copy(), live, cache.gid[live], cache.A[:, live], rows, W.copy()))
    cache.write_back(store)
    trace.append((store.alpha[:, : data.shape[0]].copy(), store.sums.copy()))
    return trace


def _assert_same(trace, expected):
    for step, step_expected in zip(trace, expected, strict=True):
        for got, want in zip(step, step_expected, strict=True):
            np.testing.assert_array_equal(got, want)


def _rows(seed):
    rng = np.random.RandomState(seed)
    return rng.randn(300, 20) * (rng.rand(300, 20) < rng.uniform(0.05, 0.5, size=(300, 1)))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("budget", [6_000, 30_000, 2_000_000])
def test_a_growing_cache_takes_the_decisions_of_one_allocated_whole(sparse, budget):
    data = _rows(1)
    whole = RowCache(budget, 20, np.float64, sparse, 2, nnz_per_row=4)
    whole.reserve(whole.n_slots, whole.n_values)  # allocated whole, as the cache used to be
    assert whole.nbytes == whole.full_nbytes <= budget
    grown = RowCache(budget, 20, np.float64, sparse, 2, nnz_per_row=4)
    assert grown.nbytes == RowCache.HEADER
    _assert_same(_churn(grown, AlphaStore(2), data, sparse, 0), _churn(whole, AlphaStore(2), data, sparse, 0))
    assert grown.evictions > 0  # at random when full, by the sweeps, and by hand
    assert grown.used_bytes <= grown.nbytes <= grown.full_nbytes <= budget
    if budget == 2_000_000:  # every row fits: the arrays hold what the rows need
        assert grown.n_live + grown.evictions == grown.insertions
        assert grown.nbytes < 4 * grown.used_bytes


# -- checkpoints ---------------------------------------------------------------------------------


def _copy(store):
    copy = AlphaStore(store.k)
    copy.restore({name: np.array(a) for name, a in store.state().items()})
    return copy


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("budget", [3_000, 10**9])
def test_a_restored_cache_goes_on_as_the_cache_it_was_saved_from(sparse, budget):
    data = _rows(2)
    cache, store = RowCache(budget, 20, np.float64, sparse, 2, nnz_per_row=6), AlphaStore(2)
    _churn(cache, store, data, sparse, 0)
    scalars, arrays = cache.state()
    assert sum(a.nbytes for a in arrays.values()) <= cache.used_bytes + 200  # the live rows
    restored = RowCache.from_state(scalars, arrays)
    restored.check_dual(store)
    assert restored.nbytes <= cache.nbytes and restored.used_bytes == cache.used_bytes
    _assert_same(_churn(restored, _copy(store), data, sparse, 5), _churn(cache, store, data, sparse, 5))
    bad = dict(arrays, live=arrays["live"] + cache.n_slots)
    with pytest.raises(ValueError, match="does not match"):
        RowCache.from_state(scalars, bad)
    with pytest.raises(ValueError, match="do not match"):
        restored.check_dual(AlphaStore(2))


def test_a_cache_saved_whole_by_an_earlier_version_restores():
    data = _rows(3)
    cache, store = RowCache(3_000, 20, np.float64, True, 2, nnz_per_row=6), AlphaStore(2)
    cache.reserve(cache.n_slots, cache.n_values)
    _churn(cache, store, data, True, 0)
    scalars, _ = cache.state()
    old_scalars = {k: v for k, v in scalars.items() if k not in ("touched", "n_values")}
    old_arrays = {name: getattr(cache, name) for name in ("meta", *RowCache._SLOT_ARRAYS, "indices", "data")}
    restored = RowCache.from_state(old_scalars, old_arrays)
    _assert_same(_churn(restored, _copy(store), data, True, 5), _churn(cache, store, data, True, 5))


@pytest.mark.parametrize("solver", ["streamsvm", "sbm"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("budget", ["4KB", "1GB"])
def test_checkpoints_hold_the_live_rows_and_resume_bit_for_bit(solver, sparse, budget, tmp_path):
    X, y = _data()  # 16 KB of data
    reads = []

    def counted(block):
        reads.append(block.shape[0])
        return block

    Xd = da.from_array(X, chunks=PART_ROWS).map_blocks(counted, meta=np.zeros((0, 0)))
    if sparse:
        Xd = Xd.map_blocks(
            lambda b: sp.csr_matrix(np.where(np.abs(b) > 0.6, b, 0.0)), meta=sp.csr_matrix((0, 0))
        )
    yd = da.from_array(y, chunks=PART_ROWS)
    params = dict(solver=solver, cache_bytes=budget, max_iter=12, tol=1e-9)
    sizes = []

    def stop_at_2(record):
        sizes.append(os.path.getsize(tmp_path / ckpt.FILE) if (tmp_path / ckpt.FILE).exists() else 0)
        return record["pass"] == 2

    reference = _fit(Xd, yd, **params)
    reads_ended()  # a read the reader began as the fit stopped counts as the fit's (helper's docstring)
    reference_reads = len(reads)
    _fit(Xd, yd, **params, checkpoint_dir=tmp_path, callbacks=[stop_at_2])
    assert 0 < max(sizes) < 200_000  # the rows held, not the budget (1 GB per pass before)
    reads_ended()  # and never as the resumed fit's (CI on 78bc4ef counted one here)
    reads.clear()
    resumed = _fit(Xd, yd, **params, checkpoint_dir=tmp_path, resume=True)
    assert reference.n_iter_ >= 3
    assert len(reads) <= reference_reads - N_PARTS  # it went on from pass 2, with the saved cache
    if reference.history_[-1].get("in_cache"):
        assert reads == []  # the saved cache held every row: nothing is read again
    np.testing.assert_array_equal(resumed.coef_, reference.coef_)
    np.testing.assert_array_equal(resumed.intercept_, reference.intercept_)
    assert resumed.n_iter_ == reference.n_iter_
    assert [r["primal"] for r in resumed.history_] == [r["primal"] for r in reference.history_]

"""The one fit context of the four estimators (``dask_streamsvm._fit_context``): a refit that fails
leaves the previous model whole, SIGTERM is unwound during every fit, and the parameters are checked
before anything is read."""

import signal
import sys

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm import BudgetedSVC, LinearSVC, LogisticRegression, OnePassSVC
from dask_streamsvm.engine.data.waiting import seceded

from ._helpers import noisy_linear_data

ESTIMATORS = [
    pytest.param(lambda: LinearSVC(random_state=0), id="LinearSVC"),
    pytest.param(lambda: LogisticRegression(random_state=0), id="LogisticRegression"),
    pytest.param(lambda: OnePassSVC(random_state=0), id="OnePassSVC"),
    pytest.param(lambda: BudgetedSVC(budget=20, max_iter=2, random_state=0), id="BudgetedSVC"),
]


def _rows(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0, 1, -1)


def _fitted_state(clf):
    fitted = {k: v for k, v in vars(clf).items() if k.endswith("_")}
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in fitted.items()}


def _same(before, after):
    assert before.keys() == after.keys()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[key], value, err_msg=key)
        elif isinstance(value, float | int | str | bool):
            assert after[key] == value, key


class ReadFailed(OSError):
    """A partition's read that fails."""


def _failing_collection(n, d):
    """A Dask Array of ``d`` columns whose second partition fails to read: the width is known before
    any read, the failure comes with the first read (the labels' count, or training)."""
    X, y = _rows(n, d, seed=1)

    def fail():
        raise ReadFailed("the disk went away")

    bad = da.from_delayed(dask.delayed(fail)(), shape=(n, d), dtype=np.float64)
    X_dask = da.concatenate([da.from_array(X, chunks=(n, d)), bad])
    y_dask = da.concatenate([da.from_array(y, chunks=n), da.from_array(y, chunks=n)])
    return X_dask, y_dask


@pytest.mark.parametrize("make", ESTIMATORS)
def test_a_failed_refit_leaves_the_previous_model_and_its_width(make):
    clf = make().fit(*_rows(400, 5))
    before = _fitted_state(clf)
    assert before["n_features_in_"] == 5
    with pytest.raises(ReadFailed):
        clf.fit(*_failing_collection(200, 7))
    _same(before, _fitted_state(clf))
    assert clf.predict(_rows(10, 5)[0]).shape == (10,)  # the old model, whole


@pytest.mark.parametrize("make", ESTIMATORS)
def test_a_failed_first_fit_leaves_the_estimator_unfitted(make):
    clf = make()
    with pytest.raises(ReadFailed):
        clf.fit(*_failing_collection(200, 7))
    assert not [k for k in vars(clf) if k.endswith("_") or k.startswith("_")]


@pytest.mark.parametrize("make", [p for p in ESTIMATORS if p.id in ("OnePassSVC", "BudgetedSVC")])
def test_a_failed_partial_fit_leaves_the_stream_as_it_was(make):
    """The stream's state (the balls, the budget's vectors) is updated in place by a block: a block
    whose read fails part-way leaves the next call to go on from the state before it."""
    X, y = _rows(600, 5)
    clf = make().partial_fit(X[:200], y[:200], classes=[-1, 1])
    twin = make().partial_fit(X[:200], y[:200], classes=[-1, 1])
    good = da.from_array(X[200:400], chunks=100)
    bad = da.from_delayed(dask.delayed(_raise)(), shape=(100, 5), dtype=np.float64)
    with pytest.raises(ReadFailed):
        clf.partial_fit(da.concatenate([good, bad]), da.from_array(np.r_[y[200:400], y[:100]], chunks=100))
    clf.partial_fit(X[400:], y[400:])
    twin.partial_fit(X[400:], y[400:])
    _same(_fitted_state(twin), _fitted_state(clf))


def _raise():
    raise ReadFailed("the disk went away")


@pytest.mark.parametrize("make", ESTIMATORS)
def test_sigterm_is_unwound_while_every_estimator_reads(make):
    """A partition read during the fit sees SIGTERM's handler of the fit context installed (in the
    main thread a SIGTERM then unwinds the fit: tests/test_spill.py), and the default
    restored after it."""
    seen = []
    X, y = _rows(300, 4)

    def part(block):
        if block.size:  # a partition's rows, not Dask's look at the block's type
            seen.append(signal.getsignal(signal.SIGTERM))
        return block

    X_dask = da.from_array(X, chunks=(100, 4)).map_blocks(part, dtype=X.dtype)
    make().fit(X_dask, da.from_array(y, chunks=100))
    assert seen and all(handler not in (signal.SIG_DFL, None) for handler in seen)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.parametrize("make", ESTIMATORS)
def test_a_bad_parameter_is_refused_before_any_read(make):
    read = []
    X, y = _rows(300, 4)
    X_dask = da.from_array(X, chunks=(100, 4)).map_blocks(
        lambda b: (b.size and read.append(1)) or b, dtype=X.dtype
    )  # a partition's rows read (not Dask's look at the block's type) are counted
    clf = make().set_params(C=-1.0)
    with pytest.raises(ValueError, match="C"):
        clf.fit(X_dask, da.from_array(y, chunks=100))
    assert read == []


# -- issue 36, round three: no unrelated "No worker found" in tracebacks


def test_an_error_in_a_fit_carries_no_chained_no_worker_found():
    pytest.importorskip("distributed")
    with pytest.raises(KeyError) as info:
        with seceded():
            raise KeyError("inside")
    assert info.value.__context__ is None
    X, y = noisy_linear_data(20, 3)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN") as info:
        LinearSVC().fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10))
    chain, exc = [], info.value
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__context__ or exc.__cause__
    assert not any("No worker found" in text for text in chain), chain


# --- BLAS threads (engine/plan/threads.py) ---------------------------------------------------------


@pytest.fixture
def blas_default_two(monkeypatch):
    """A process whose BLAS runs two threads by default, the user having chosen nothing: no BLAS
    variable in the environment, and two threads as the threads at import."""
    from threadpoolctl import threadpool_limits

    from dask_streamsvm.engine.plan import threads

    for name in threads.BLAS_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    with threadpool_limits(limits=2, user_api="blas"):
        monkeypatch.setattr(threads, "_AT_IMPORT", threads._blas_threads_now())
        yield threads


def _blas_threads():
    from threadpoolctl import threadpool_info

    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def _threads_seen(estimator, X, y):
    """The BLAS threads in force at each of the fit's passes (a callback sees them)."""
    seen = []
    estimator.set_params(callbacks=[lambda record: seen.append(_blas_threads())])
    estimator.fit(X, y)
    assert seen
    return seen


@pytest.mark.parametrize("dual", [True, False], ids=["dual", "primal"])
@pytest.mark.parametrize("streamed", [False, True], ids=["memory", "streamed"])
def test_a_fit_runs_blas_on_one_thread_then_gives_the_process_its_threads_back(
    blas_default_two, dual, streamed
):
    X, y = _rows(4000, 6)
    if streamed:
        X, y = da.from_array(X, chunks=1000), da.from_array(y, chunks=1000)
    seen = _threads_seen(LinearSVC(dual=dual, random_state=0), X, y)
    assert all(threads == {1} for threads in seen), seen
    assert _blas_threads() == {2}


def test_the_users_blas_threads_win(blas_default_two, monkeypatch):
    from threadpoolctl import threadpool_limits

    X, y = _rows(4000, 6)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # as a user's shell, or a Dask nanny's 1
    assert all(threads == {2} for threads in _threads_seen(LinearSVC(dual=False), X, y))
    monkeypatch.delenv("OMP_NUM_THREADS")
    with threadpool_limits(limits=3, user_api="blas"):  # a limit around the fit
        assert all(threads == {3} for threads in _threads_seen(LinearSVC(dual=False), X, y))
    assert _blas_threads() == {2}


def test_the_blas_libraries_are_found_again_only_after_an_import(blas_default_two, monkeypatch):
    """threads._blas_controller: the libraries found once are reused while no module was imported
    (finding them walks every shared library: 3 ms, three times a fit); a module imported since
    (it may bring its own BLAS) finds them again, and the limits still apply to what is found."""
    import types

    threads = blas_default_two
    first = threads._blas_controller()
    assert threads._blas_controller() is first
    name = "a_module_with_its_own_blas"
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    again = threads._blas_controller()
    assert again is not first and threads._blas_controller() is again
    with threads.blas_threads(1):
        assert _blas_threads() == {1}
    assert _blas_threads() == {2}


def test_a_wide_in_memory_primal_fit_runs_blas_on_the_cores(blas_default_two, monkeypatch):
    threads = blas_default_two
    monkeypatch.setattr(threads, "fit_cores", lambda: 2)
    assert threads.WIDE_GRAM == 1024  # measured: one thread is faster below (the module's table)
    assert [threads.primal_memory_threads(w) for w in (1023, 1024)] == [1, 2]
    assert threads.primal_memory_threads(1024, sparse_rows=True) == 1
    monkeypatch.setattr(threads, "WIDE_GRAM", 6)  # the width of these rows' model
    X, y = _rows(4000, 6)
    assert all(t == {2} for t in _threads_seen(LinearSVC(dual=False), X, y))
    assert all(t == {1} for t in _threads_seen(LinearSVC(dual=True), X, y))
    # CSR rows: their products are SciPy's loops, a second thread only costs beside a busy process
    assert all(t == {1} for t in _threads_seen(LinearSVC(dual=False), sp.csr_matrix(X), y))
    assert _blas_threads() == {2}


def test_the_fit_cores_are_the_process_affinity_shared_by_a_workers_threads(local_cluster):
    import os

    import distributed

    from dask_streamsvm.engine.plan.threads import fit_cores

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert fit_cores() == cores
    with distributed.Client(local_cluster) as client:  # one worker of two threads
        assert client.submit(fit_cores, pure=False).result() == max(1, cores // 2)


def _softmax_rows(n=3000, d=40, classes=4, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.argmax(X @ rng.standard_normal((d, classes)) + rng.gumbel(size=(n, classes)), axis=1)
    return X, y


def test_an_in_memory_softmax_fit_splits_its_dense_rows_between_the_row_threads(
    blas_default_two, monkeypatch
):
    """The in-memory softmax model (beyond its formed Hessian) runs its dense rows' products on as
    many row threads as the process has cores, each on one BLAS thread, and finds the model of one
    thread; CSR rows, and a user's choice of BLAS threads, keep every product in the fit's thread."""
    import threading

    from dask_streamsvm.engine.primal import sums

    threads = blas_default_two
    X, y = _softmax_rows()  # 4 x 41 weights: beyond HESSIAN_WIDTH, the conjugate gradient's products
    monkeypatch.setattr(sums, "PRODUCT_CHUNK_BYTES", 8 * 40 * 100)  # 100 rows a chunk: 30 chunks
    ran, product = [], sums.transposed_product

    def recorded(A, B):  # BLAS's threads read once a thread (threadpoolctl walks the libraries)
        name = threading.current_thread().name
        if name not in {seen for seen, _ in ran}:
            ran.append((name, _blas_threads()))
        return product(A, B)

    monkeypatch.setattr(sums, "transposed_product", recorded)

    def fit(cores, rows=X, **params):
        monkeypatch.setattr(threads, "fit_cores", lambda: cores)
        ran.clear()
        return LogisticRegression(C=1.0, tol=1e-8, **params).fit(rows, y), {name for name, _ in ran}

    one, names = fit(1)
    assert threads.memory_row_threads() == 1 and threads.memory_row_threads(sparse_rows=True) == 1
    assert names == {threading.current_thread().name}
    two, names = fit(2)
    assert any(name.startswith("dask_streamsvm-rows") for name in names), names  # the diagonal: here
    assert all(blas == {1} for _, blas in ran)
    assert two.n_iter_ == one.n_iter_ and two.duality_gap_ <= 1e-8
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(two.intercept_, one.intercept_, rtol=1e-9, atol=1e-12)
    assert threads.memory_row_threads() == 2 and threads.memory_row_threads(sparse_rows=True) == 1
    _, names = fit(2, rows=sp.csr_matrix(X))  # SciPy's products: no row threads
    assert not names - {threading.current_thread().name}
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the user's choice of threads stands alone
    assert threads.memory_row_threads() == 1
    _, names = fit(2)
    assert names == {threading.current_thread().name}


def test_the_row_threads_pool_is_made_again_in_a_forked_child_or_for_more_threads(monkeypatch):
    """A forked child's copy of the executor has no threads: a pool made in another process (its
    pid) is made again, as is one of fewer threads than a fit asks; a fit of one row thread has
    none."""
    from dask_streamsvm.engine.plan import threads

    monkeypatch.setattr(threads, "_row_pool", {"pid": None, "threads": 0, "executor": None})
    assert threads.row_pool() == (None, 1)
    with threads.row_threads(2):
        pool, count = threads.row_pool()
        assert count == 2 and threads.row_pool()[0] is pool
        assert list(pool.map(lambda v: v + 1, [1, 2])) == [2, 3]
        threads._row_pool["pid"] = -1  # as the parent's pool in a forked child
        again, _ = threads.row_pool()
        assert again is not pool and list(again.map(abs, [-1])) == [1]
    with threads.row_threads(3):
        wider, count = threads.row_pool()
        assert count == 3 and wider is not again
    assert threads.row_pool() == (None, 1)


def test_an_in_memory_primal_fit_splits_its_dense_rows_between_the_row_threads(blas_default_two, monkeypatch):
    """The in-memory primal solver's reads of dense rows narrower than WIDE_GRAM (BLAS on one
    thread) run on a row thread a core, each summing its runs of chunks, and find the model of one
    thread; at WIDE_GRAM and beyond BLAS takes the cores and the rows stay in the fit's thread.  The
    squared hinge's reads carry their Hessian (``engine/primal/carried.py``), whose sums are recorded
    too."""
    import threading

    from dask_streamsvm.engine.primal import carried, sums

    threads = blas_default_two
    monkeypatch.setattr(sums, "CHUNK_BYTES", 1)  # chunks of 256 rows (chunk_rows' least): 16 here
    X, y = _rows(4000, 6)
    ran, block_sums = set(), sums.block_sums

    def recorded(*args, **kwargs):
        ran.add(threading.current_thread().name)
        return block_sums(*args, **kwargs)

    monkeypatch.setattr(sums, "block_sums", recorded)
    monkeypatch.setattr(carried, "block_sums", recorded)

    def fit(cores, **params):
        monkeypatch.setattr(threads, "fit_cores", lambda: cores)
        ran.clear()
        return LinearSVC(dual=False, tol=1e-8, **params).fit(X, y), set(ran)

    one, names = fit(1)
    assert names == {threading.current_thread().name}
    two, names = fit(2)
    assert names and all(name.startswith("dask_streamsvm-rows") for name in names), names
    assert two.n_iter_ == one.n_iter_
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(two.intercept_, one.intercept_, rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(threads, "WIDE_GRAM", 6)  # this model's width: BLAS on the cores instead
    _, names = fit(2)
    assert names == {threading.current_thread().name}


def test_a_streamed_softmax_fit_solves_its_sample_on_the_row_threads_and_reads_on_one(
    blas_default_two, monkeypatch
):
    """Streamed, the softmax model's sample is solved before any reader runs, on a row thread a
    core (one BLAS thread each), and the Newton reads that follow, beside the reader, sum their
    rows in the fit's thread."""
    from dask_streamsvm.engine.plan.threads import row_pool
    from dask_streamsvm.engine.primal import multinomial_reads

    threads = blas_default_two
    monkeypatch.setattr(threads, "fit_cores", lambda: 2)
    X, y = _softmax_rows(n=6000, d=5, classes=3)
    seen = {"warm": [], "reads": []}
    warm_start, softmax_sums = multinomial_reads.warm_start, multinomial_reads.softmax_sums

    def warm(*args, **kwargs):
        seen["warm"].append((row_pool()[1], _blas_threads()))
        return warm_start(*args, **kwargs)

    def sums(*args, **kwargs):
        seen["reads"].append(row_pool()[1])
        return softmax_sums(*args, **kwargs)

    monkeypatch.setattr(multinomial_reads, "warm_start", warm)
    monkeypatch.setattr(multinomial_reads, "softmax_sums", sums)
    Xd, yd = da.from_array(X, chunks=(1000, 5)), da.from_array(y, chunks=1000)
    with dask.config.set(scheduler="sync"):
        model = LogisticRegression(C=1.0, tol=1e-8, cache_bytes=8 * 5 * 1500).fit(Xd, yd)
    assert model.history_[0]["sample_rows"] < X.shape[0] and model.duality_gap_ <= 1e-8
    assert seen["warm"] == [(2, {1})], seen
    assert seen["reads"] and set(seen["reads"]) == {1}


def test_the_softmax_models_newton_reads_in_memory_split_the_rows_between_the_row_threads(
    blas_default_two, monkeypatch
):
    """Tall rows in memory train the softmax model by its Newton reads; each read's sums run on a
    row thread a core (runs of chunks, added in order) and find the model of one thread."""
    import threading

    from dask_streamsvm.engine.primal import multinomial_reads, sums

    threads = blas_default_two
    monkeypatch.setattr(sums, "PRODUCT_CHUNK_BYTES", 8 * 6 * 256)  # chunks of 256 rows of 6 columns: 24 here
    X, y = _softmax_rows(n=6000, d=5, classes=3)  # 6,000 rows of 18 weights: tall, the Newton reads
    ran, softmax_sums = set(), multinomial_reads.softmax_sums

    def recorded(*args, **kwargs):
        ran.add(threading.current_thread().name)
        return softmax_sums(*args, **kwargs)

    monkeypatch.setattr(multinomial_reads, "softmax_sums", recorded)

    def fit(cores):
        monkeypatch.setattr(threads, "fit_cores", lambda: cores)
        ran.clear()
        return LogisticRegression(C=1.0, tol=1e-8).fit(X, y), set(ran)  # ran: the reads ran

    one, names = fit(1)
    assert names == {threading.current_thread().name}
    two, names = fit(2)
    assert names and all(name.startswith("dask_streamsvm-rows") for name in names), names
    assert two.n_iter_ == one.n_iter_ and two.duality_gap_ <= 1e-8
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(two.intercept_, one.intercept_, rtol=1e-9, atol=1e-12)

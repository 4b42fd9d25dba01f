"""The primal solver's warm start (issue 37): the first read keeps a uniform sample of the rows,
whose problem solved in memory is where the first full Newton read starts; and the reads overlap
their sums with the reading of the next partitions."""

import sys
import threading

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm import LinearSVC, LogisticRegression
from dask_streamsvm.engine.data.source import Block
from dask_streamsvm.engine.primal import newton as primal
from dask_streamsvm.engine.primal import warm as warm_starts
from dask_streamsvm.engine.primal.reads import SAMPLE_SEED, Sampler

from ._helpers import noisy_linear_data, wait_until
from .test_primal import check_optimum, liblinear, raw_scale_tall

OVERLAP = ("reader_busy_s", "reader_wait_s", "trainer_busy_s", "trainer_wait_s")


def _blocks(X, y, rows):
    return [
        Block(p, X[lo : lo + rows], y[lo : lo + rows], np.ones(min(rows, len(y) - lo)))
        for p, lo in enumerate(range(0, len(y), rows))
    ]


@pytest.mark.parametrize("expected", [None, 5_000])  # the bound on the keys, set up front, keeps it
@pytest.mark.parametrize("sparse", [False, True])
def test_the_sample_is_the_rows_of_smallest_keys_whatever_the_order(sparse, expected):
    """Uniform without replacement: the rows whose keys (drawn from the seed and the partition)
    are the smallest, the same set whichever order the partitions come in."""
    X, y = noisy_linear_data(5_000, 4)
    X = sp.csr_matrix(X) if sparse else X
    blocks = _blocks(X, y, 700)
    keys = [np.random.default_rng([SAMPLE_SEED, b.partition]).random(b.n_rows) for b in blocks]
    keys = np.concatenate(keys)
    smallest = np.sort(np.argsort(keys)[:300])
    for order in (blocks, blocks[::-1]):
        sampler = Sampler(300, expected=expected)
        for block in order:
            sampler.add(block)
        sample = sampler.sample()
        assert sample.n_rows == 300 and sample.rows_seen == 5_000 and not sample.complete
        got = sample.X.toarray() if sparse else sample.X
        full = X.toarray() if sparse else X
        np.testing.assert_array_equal(np.sort(got[:, 0]), np.sort(full[smallest, 0]))
        np.testing.assert_array_equal(np.sort(sample.y), np.sort(y[smallest]))


@pytest.mark.parametrize("expected", [500, 2_000])
def test_rows_kept_whole_that_outnumber_the_count_are_sampled_as_usual(expected):
    """``whole`` keeps every row in arrays of the rows counted before the read; more rows than that
    (virtual examples, a file grown since its footer was read) end it, at the first block (500: the
    case that raised numpy's "need at least one array to concatenate") or a later one (2,000), and
    the sample is then the rows of smallest keys, as without ``whole``."""
    X, y = noisy_linear_data(5_000, 4)
    blocks = _blocks(X, y, 700)
    keys = [np.random.default_rng([SAMPLE_SEED, b.partition]).random(b.n_rows) for b in blocks]
    smallest = np.sort(np.argsort(np.concatenate(keys))[:300])
    sampler = Sampler(300, max_bytes=10**9, expected=expected, whole=True)
    for block in blocks:
        sampler.add(block)
    sample = sampler.sample()
    assert not sampler.whole and sample.n_rows == 300 and sample.rows_seen == 5_000
    np.testing.assert_array_equal(np.sort(sample.X[:, 0]), np.sort(X[smallest, 0]))


def test_the_sample_keeps_within_its_bytes_and_share():
    X, y = noisy_linear_data(5_000, 4)  # float64: 32 bytes of values a row
    sampler = Sampler(10_000, max_bytes=60 * 1_000)  # 32 + 8 + 8 + 8 (key) = 56 bytes a row
    for block in _blocks(X, y, 1_000):
        sampler.add(block)
    sample = sampler.sample()
    assert sample.n_rows == 60_000 // 56 and sample.nbytes <= 60_000
    shared = Sampler(10_000, share=0.1)
    for block in _blocks(X, y, 1_000):
        shared.add(block)
    assert shared.sample().n_rows == 500


def test_a_fit_keeps_its_sample_inside_cache_bytes():
    X, y = noisy_linear_data(40_000, 5)
    Xd, yd = da.from_array(X, chunks=5_000), da.from_array(y, chunks=5_000)
    clf = LinearSVC(dual=False, cache_bytes="200kB", tol=1e-6).fit(Xd, yd)
    first = clf.history_[0]
    assert 0 < first["sample_bytes"] <= 200_000 and first["sample_rows"] < len(y)
    shared = LinearSVC(dual=False, cache_bytes="10%", tol=1e-6).fit(Xd, yd)
    assert shared.history_[0]["sample_rows"] == 4_000


def test_the_sample_size_rule():
    """4,000 rows a column of the model, at least 20,000: measured (docs/benchmarks.md, "warm start")."""
    assert warm_starts.sample_rows(60) == 244_000 and warm_starts.sample_rows(2) == 20_000


def test_a_warm_start_from_labels_sorted_and_a_tiny_sample_reaches_liblinears_optimum(monkeypatch):
    """The sample is not representative: the rows are sorted by label and it holds 4 rows (it may
    see one class only).  The full reads still end at LIBLINEAR's optimum within the certified gap."""
    monkeypatch.setattr(warm_starts, "EVERY_ROW_IN_BUDGET", False)  # the rows fit the default cache
    monkeypatch.setattr(warm_starts, "SAMPLE_MIN_ROWS", 0)
    monkeypatch.setattr(warm_starts, "SAMPLE_ROWS_PER_WIDTH", 1)
    X, y = raw_scale_tall(30_000)
    X = X / 255.0
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    Xd, yd = da.from_array(X, chunks=(3_000, 3)), da.from_array(y, chunks=3_000)
    clf = LinearSVC(dual=False, tol=1e-6).fit(Xd, yd)
    assert clf.history_[0]["sample_rows"] == 4 and clf.n_iter_ >= 2
    check_optimum(clf, X, y, np.ones(len(y)), liblinear(X, y))


def test_a_warm_start_saves_reads_on_tall_data(monkeypatch):
    """The same fit from w = 0 (a sample of no rows) takes more reads: the rule is what saves them."""
    X, y = noisy_linear_data(120_000, 10)
    Xd, yd = da.from_array(X, chunks=20_000), da.from_array(y, chunks=20_000)
    monkeypatch.setattr(warm_starts, "EVERY_ROW_IN_BUDGET", False)  # the rows fit the default cache
    monkeypatch.setattr(warm_starts, "SAMPLE_MIN_ROWS", 0)
    monkeypatch.setattr(warm_starts, "SAMPLE_ROWS_PER_WIDTH", 4_000)  # the rule: 44,000 of 120,000 rows
    warm = LinearSVC(dual=False, C=1.0, tol=1e-3).fit(Xd, yd)
    monkeypatch.setattr(warm_starts, "SAMPLE_ROWS_PER_WIDTH", 0)
    cold = LinearSVC(dual=False, C=1.0, tol=1e-3).fit(Xd, yd)
    assert "sample_rows" not in cold.history_[0]
    assert warm.history_[0]["sample_rows"] == 44_000 and warm.n_iter_ < cold.n_iter_
    assert warm.duality_gap_ <= 1e-3 and cold.duality_gap_ <= 1e-3


def test_the_newton_reads_record_their_overlap(partial_sample):
    X, y = noisy_linear_data(40_000, 5)
    clf = LinearSVC(dual=False, tol=1e-8).fit(da.from_array(X, chunks=5_000), da.from_array(y, chunks=5_000))
    assert clf.n_iter_ >= 2
    for key in OVERLAP:
        values = [record[key] for record in clf.history_]
        assert all(v >= 0 for v in values) and values == sorted(values)  # seconds since the first read
    assert clf.history_[-1]["trainer_busy_s"] > 0 and clf.history_[-1]["reader_busy_s"] > 0


def test_a_band_of_every_row_makes_the_next_point_the_optimum():
    """Where the band holds every row, the model it minimizes is the objective: one step from
    any point lands on the optimum (the next read certifies a gap near zero)."""
    from dask_streamsvm.engine.plan.problem import FitPlan
    from dask_streamsvm.engine.primal.reads import Sample, memory_read

    X, y = noisy_linear_data(3_000, 6)
    classes, counts = np.unique(y, return_counts=True)
    plan = FitPlan(C=1.0, loss="squared_hinge", solver="memory").with_labels(classes, counts, classes)
    signs, costs = plan.signs[0, y], plan.costs[0, y]
    read = memory_read(X, y, np.ones(len(y)), plan)
    w = np.random.default_rng(0).standard_normal(7) * 0.3
    at_w = read(w[None, :], np.zeros((1, 7)), [0])
    g, H = w - at_w.v[0], np.eye(7) + at_w.hessian[0]
    d = primal.band_step(w, g, H, Sample(X, signs, costs, len(y)), plan)
    at_next = read((w + d)[None, :], np.zeros((1, 7)), [0])
    assert np.linalg.norm(w + d - at_next.v[0]) <= 1e-8 * np.linalg.norm(g)  # the gradient vanishes
    newton = w - np.linalg.solve(H, g)  # a plain Newton step does not (rows change piece)
    at_newton = read(newton[None, :], np.zeros((1, 7)), [0])
    assert np.linalg.norm(newton - at_newton.v[0]) > 1e-3 * np.linalg.norm(g)


def test_the_band_saves_reads(monkeypatch):
    """The band's share is what takes the tall fit to tol in three reads: without it (a share of
    0, plain Newton steps from the warm start) the same fit takes more."""
    X, y = noisy_linear_data(200_000, 10)
    Xd, yd = da.from_array(X, chunks=25_000), da.from_array(y, chunks=25_000)
    monkeypatch.setattr(warm_starts, "EVERY_ROW_IN_BUDGET", False)  # the rows fit the default cache
    monkeypatch.setattr(warm_starts, "SAMPLE_ROWS_PER_WIDTH", 400)  # 20,000 of 200,000 rows
    banded = LinearSVC(dual=False, C=1.0, tol=1e-6).fit(Xd, yd)
    monkeypatch.setattr(primal, "BAND_SHARE", 0.0)
    plain = LinearSVC(dual=False, C=1.0, tol=1e-6).fit(Xd, yd)
    assert banded.n_iter_ + 1 <= 3 < plain.n_iter_ + 1
    assert banded.duality_gap_ <= 1e-6 and plain.duality_gap_ <= 1e-6


def test_the_band_share_constant():
    """15% of the rows (measured, docs/benchmarks.md "warm start": 5% sufficed for the step on every
    tall set; "Two reads": 15% leaves the step's certificate a margin of 1.37 on the 2M x 60 set,
    10% none)."""
    assert primal.BAND_SHARE == 0.15


def test_the_bands_keys_are_the_margins_distance_from_one_over_the_rows_length():
    """|y w . x - 1| / ||((x - center) / scale, 1)||: the distance a row's margin can keep from the
    hinge point per unit of a step's length in the band's metric (band_certificate)."""
    from dask_streamsvm.kernels.band import margin_keys

    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 7)).astype(np.float32) * 30 + 100
    y, cost, w = np.sign(rng.standard_normal(500)), rng.random(500), rng.standard_normal(8)
    cost[:50] = 0.0
    center, scale = rng.standard_normal(7) * 100, rng.random(7) * 30 + 1
    keys = np.empty(500)
    margin_keys(X, y, cost, w, 2.0, center, 1.0 / scale, keys)
    rows = X.astype(np.float64)
    expected = np.abs(y * (rows @ w[:-1] + 2.0 * w[-1]) - 1.0)
    expected /= np.sqrt(1.0 + (((rows - center) / scale) ** 2).sum(axis=1))
    expected[:50] = np.inf
    np.testing.assert_allclose(keys, expected, rtol=1e-12)


def test_a_band_keeps_the_rows_nearest_the_margin_with_a_bound_set_up_front():
    """Given keys and the rows to expect: the kept rows are those of smallest keys (the bound from
    the keys so far copies few rows, and never drops one of them on shuffled rows)."""
    rng = np.random.default_rng(1)
    X, y = noisy_linear_data(20_000, 3)
    keys = rng.random(20_000)
    band = Sampler(1_000, expected=20_000)
    for lo in range(0, 20_000, 2_000):
        band.add_rows(
            lo // 2_000, X[lo : lo + 2_000], y[lo : lo + 2_000], np.ones(2_000), keys[lo : lo + 2_000]
        )
    sample = band.sample()
    kept = np.sort(np.argsort(keys)[:1_000])
    np.testing.assert_array_equal(np.sort(sample.X[:, 0]), np.sort(X[kept, 0]))


def test_the_first_read_certifies_w_zero_from_its_moments(partial_sample):
    """Read 0 has a record, as every streaming pass does: the certificate at w = 0 (every row active
    with shortfall 1), from sums the read makes beside the sample."""
    X, y = noisy_linear_data(20_000, 5)
    C = 0.5
    clf = LinearSVC(dual=False, C=C, tol=1e-6).fit(
        da.from_array(X, chunks=4_000), da.from_array(y, chunks=4_000)
    )
    zero = clf.history_[0]
    assert zero["pass"] == 0 and zero["point_primal"] == pytest.approx(C * len(y), rel=1e-12)
    sign = np.where(y == 1, 1.0, -1.0)
    v = np.append(X.T @ (2 * C * sign), 2 * C * sign.sum())
    dual = 2 * C * len(y) - 0.5 * v @ v - C * len(y)  # sum alpha - |v|^2 / 2 - sum alpha^2 / (4 C)
    assert zero["point_dual"] == pytest.approx(dual, rel=1e-9)
    assert clf.history_[1]["pass"] == 1 and clf.n_iter_ == clf.history_[-1]["pass"]


def test_the_first_reads_class_sums_are_numpys():
    from dask_streamsvm.kernels.band import class_sums

    rng = np.random.default_rng(3)
    X = (rng.standard_normal((700, 5)) * [1, 10, 100, 1e3, 1e4]).astype(np.float32)
    classes, weights = rng.integers(0, 3, 700), rng.random(700)
    first, top = np.zeros((3, 5)), np.zeros(5)
    class_sums(X, classes, weights, first, top)
    for c in range(3):
        expected = (X[classes == c].astype(np.float64) * weights[classes == c, None]).sum(axis=0)
        np.testing.assert_allclose(first[c], expected, rtol=1e-12)
    np.testing.assert_array_equal(top, np.abs(X).max(axis=0))


def test_the_reader_reads_the_next_partitions_while_the_sample_is_solved(monkeypatch):
    """The first Newton read's reader starts before the warm start's solve, so that the solve and
    the reading of the next partitions overlap; a sample of every row (the fit itself) starts none."""
    from dask_streamsvm.engine.primal import fit as primal_fit

    solve = primal_fit.warm_start
    seen = []

    def watched(sample, *args, **kwargs):
        seen.append(any(t.name == "dask-streamsvm-reader" for t in threading.enumerate()))
        return solve(sample, *args, **kwargs)

    monkeypatch.setattr(primal_fit, "warm_start", watched)
    X, y = noisy_linear_data(40_000, 5)
    monkeypatch.setattr(warm_starts, "EVERY_ROW_IN_BUDGET", False)  # the rows fit the default cache
    monkeypatch.setattr(warm_starts, "SAMPLE_ROWS_PER_WIDTH", 1_000)  # 6,000 of 40,000 rows
    LinearSVC(dual=False, tol=1e-6).fit(da.from_array(X, chunks=5_000), da.from_array(y, chunks=5_000))
    monkeypatch.setattr(warm_starts, "SAMPLE_ROWS_PER_WIDTH", 10_000)  # every row: no reader
    LinearSVC(dual=False, tol=1e-6).fit(da.from_array(X, chunks=5_000), da.from_array(y, chunks=5_000))
    assert seen == [True, False]
    assert not any(t.name == "dask-streamsvm-reader" for t in threading.enumerate())


def test_a_stream_read_entered_twice_stops_its_reader_at_the_last_exit():
    from dask_streamsvm.engine.data.source import DaskSource
    from dask_streamsvm.engine.plan.problem import FitPlan
    from dask_streamsvm.engine.primal.reads import stream_read

    X, y = noisy_linear_data(2_000, 3)
    source = DaskSource(da.from_array(X, chunks=500), da.from_array(y, chunks=500))
    read = stream_read(source, FitPlan(), reads=1)
    with read:
        with read:
            assert read._reader._thread.is_alive()
        assert read._reader._thread.is_alive()
    assert not read._reader._thread.is_alive()


def _sample_of(blocks, *args, **kwargs):
    sampler = Sampler(*args, **kwargs)
    for block in blocks:
        sampler.add(block)
    return sampler.sample()


def test_the_sample_is_every_row_where_they_fit_its_bytes():
    """``whole``: dense rows whose count is known and whose bytes fit ``max_bytes`` are all kept,
    in the order they came (the sample is the data); beyond the bytes, or with more rows than
    counted, the sample is the ``capacity`` rows of smallest keys, as without ``whole``."""
    X, y = noisy_linear_data(5_000, 4)  # 32 + 8 + 8 = 48 bytes a row (no keys): 240,000 in all
    blocks = _blocks(X, y, 700)
    whole = _sample_of(blocks, 300, max_bytes=240_000, expected=5_000, whole=True)
    assert whole.complete and whole.n_rows == 5_000
    np.testing.assert_array_equal(whole.X, X)
    np.testing.assert_array_equal(whole.y, y)
    plain = _sample_of(blocks, 300, max_bytes=240_000, expected=5_000)
    assert plain.n_rows == 300 and not plain.complete
    for beyond in (
        {"max_bytes": 239_999, "expected": 5_000},  # a byte short of every row
        {"max_bytes": 240_000, "expected": 4_000},  # more rows come than were counted
        {"max_bytes": 240_000, "expected": 1_000},  # ... with blocks after the one that overflows
    ):
        sample = _sample_of(blocks, 300, whole=True, **beyond)
        assert not sample.complete and sample.rows_seen == 5_000
        np.testing.assert_array_equal(np.sort(sample.X[:, 0]), np.sort(plain.X[:, 0]))
        np.testing.assert_array_equal(np.sort(sample.y), np.sort(plain.y))
    # fewer rows than counted (rows skipped) and an empty first block: every row seen, whole
    fewer = _sample_of(blocks[1:], 300, max_bytes=240_000, expected=5_000, whole=True)
    assert fewer.complete and fewer.n_rows == 5_000 - 700
    empty = Block(99, X[:0], y[:0], np.ones(0))
    assert _sample_of([empty, *blocks], 300, max_bytes=240_000, expected=5_000, whole=True).complete
    # no bytes, a share of the rows, sparse rows or an unknown count: never whole
    assert _sample_of(blocks, 300, expected=5_000, whole=True).n_rows == 300
    assert _sample_of(blocks, 10_000, 240_000, share=0.5, expected=5_000, whole=True).n_rows == 2_500
    sparse = _blocks(sp.csr_matrix(X), y, 700)
    assert _sample_of(sparse, 300, max_bytes=10**9, expected=5_000, whole=True).n_rows == 300
    assert _sample_of(blocks, 300, max_bytes=240_000, whole=True).n_rows == 300
    # labels of any dtype, objects too, whose objects count in the bytes (the larger one's, a row)
    names = np.array(["no", "yes"], dtype=object)[(y > 0).astype(int)]
    objects = 5_000 * sys.getsizeof("yes")
    labelled = _sample_of(
        _blocks(X, names, 700), 300, max_bytes=240_000 + objects, expected=5_000, whole=True
    )
    assert labelled.complete and labelled.y.dtype == object
    np.testing.assert_array_equal(labelled.y, names)
    short = _sample_of(
        _blocks(X, names, 700), 300, max_bytes=240_000 + objects - 1, expected=5_000, whole=True
    )
    assert not short.complete


def _transparent_huge_pages(array, field="THPeligible:"):
    """``THPeligible`` (or ``field``'s first value) of the mapping that holds ``array``'s middle byte
    (NumPy advises the 2 MB pages within its arrays, a mapping of their own), or None (no
    ``/proc/self/smaps``)."""
    address = array.__array_interface__["data"][0] + array.nbytes // 2
    try:
        with open("/proc/self/smaps") as smaps:
            lines = smaps.read().splitlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(part, 16) for part in head.split("-"))
            inside = lo <= address < hi
        elif inside and head == field:
            return line.split()[1:] if field == "VmFlags:" else int(line.split()[1])
    return None


def test_held_rows_are_backed_by_small_pages():
    """The rows a fit fills once and holds ask for no transparent huge pages (malloc.held_empty), where
    NumPy advises its own arrays of that size to take them."""
    import os

    from dask_streamsvm.engine.data import malloc

    if not os.path.isdir("/sys/kernel/mm/transparent_hugepage") or not os.path.exists("/proc/self/smaps"):
        pytest.skip("not Linux with transparent huge pages: held_empty is NumPy's np.empty there")
    shape = (malloc.HELD_SMALL_PAGES // 8 // 4, 4)
    held = malloc.held_empty(shape, np.float64)
    held[:] = 2.0
    assert held.shape == shape and held.dtype == np.float64 and held.flags.c_contiguous
    assert held.flags.writeable and float(held.sum()) == 2.0 * held.size
    assert _transparent_huge_pages(held) == 0
    flags = _transparent_huge_pages(held, "VmFlags:")
    assert "nh" in flags and "sh" not in flags  # advised no huge pages whatever THP's mode; private
    small = malloc.held_empty((10, 4), np.float32)  # below HELD_SMALL_PAGES: NumPy's own
    assert small.base is None and small.dtype == np.float32


def _freeing_thread(array, names):
    """``array``, whose freeing appends the name of the thread that frees it to ``names``."""
    import weakref

    weakref.finalize(array, lambda: names.append(threading.current_thread().name))
    return array


def test_let_go_frees_what_it_is_handed_on_a_kept_thread():
    """malloc.let_go: the rows are unmapped on a kept thread named FREEING_NAME, not the caller's
    (480 MB of small pages take 27-28 ms to unmap, where the caller of a fit waits)."""
    from dask_streamsvm.engine.data import malloc

    names = []
    rows = _freeing_thread(malloc.held_empty((malloc.HELD_SMALL_PAGES // 4, 1), np.float32), names)
    rows[:] = 1.0
    held = [rows, _freeing_thread(np.ones(10), names)]
    del rows
    malloc.let_go(held)
    wait_until(lambda: len(names) == 2)
    assert names == [malloc.FREEING_NAME] * 2 and held == []


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_the_rows_a_streamed_fit_kept_whole_are_freed_off_the_callers_thread(monkeypatch, loss):
    """The rows a streamed fit's first read kept whole (the default fit's every row; the hinge band's
    rows in memory) are freed by malloc.let_go once the fit is done with them, not on the thread that
    called fit."""
    from dask_streamsvm.engine.data import malloc
    from dask_streamsvm.engine.primal import reads

    names, made = [], []

    def held_empty(shape, dtype):
        made.append(shape)
        return _freeing_thread(malloc.held_empty(shape, dtype), names)

    monkeypatch.setattr(reads, "held_empty", held_empty)
    X, y = noisy_linear_data(100_000, 5, seed=4)
    Xd, yd = da.from_array(X, chunks=25_000), da.from_array(y, chunks=25_000)
    params = {"dual": False} if loss == "squared_hinge" else {"loss": "hinge"}
    LinearSVC(C=0.1, tol=1e-4, **params).fit(Xd, yd)
    assert made == [(100_000, 5), (100_000,), (100_000,)]  # every row kept whole by the first read
    wait_until(lambda: len(names) == 3)
    assert names == [malloc.FREEING_NAME] * 3


def test_a_newton_fit_of_rows_within_cache_bytes_is_one_read():
    """The squared hinge's first read keeps every row that fits ``cache_bytes``
    (warm.EVERY_ROW_IN_BUDGET): the fit is its solve in memory, certified at LIBLINEAR's optimum,
    after that one read; a budget short of the rows keeps a sample and the Newton reads stream, to
    the same optimum.  The logistic loss keeps its sample (warm.whole_sample)."""
    X, y = noisy_linear_data(60_000, 5, seed=4)  # 60 bytes a row as the sample holds them: 3.6 MB
    Xd, yd = da.from_array(X, chunks=10_000), da.from_array(y, chunks=10_000)
    ref = liblinear(X, y, C=0.1)
    whole = LinearSVC(dual=False, C=0.1, tol=1e-8).fit(Xd, yd)
    first = whole.history_[0]
    assert first["sample_rows"] == 60_000 and whole.n_iter_ >= 1
    assert {record["pass"] for record in whole.history_} == {0}  # every step on the rows of read 0
    check_optimum(whole, X, y, np.full(len(y), 0.1), ref)
    short = LinearSVC(dual=False, C=0.1, tol=1e-8, cache_bytes="2MB").fit(Xd, yd)
    assert short.history_[0]["sample_rows"] < 60_000 and short.history_[-1]["pass"] >= 1
    check_optimum(short, X, y, np.full(len(y), 0.1), ref)
    logistic = LogisticRegression(C=0.1, tol=1e-8, random_state=0).fit(Xd, yd)  # keeps its sample
    assert logistic.history_[0]["sample_rows"] < 60_000 and logistic.history_[-1]["pass"] >= 1


def test_in_memory_squared_hinge_starts_from_a_sample(monkeypatch):
    """As the logistic loss's (test_logistic.py): the squared hinge in memory takes its first steps
    on a tenth of the rows, and fewer reads of every row, to the same optimum."""
    X, y = noisy_linear_data(100_000, 10, seed=3)
    warm = LinearSVC(dual=False, C=1.0, tol=1e-8).fit(X, y)
    assert warm.history_[0]["sample_rows"] == 10_000 and warm.history_[0]["pass"] == 1
    monkeypatch.setattr(warm_starts, "MEMORY_SAMPLE_SHARE", 0.3)  # a sample of more than a quarter: none
    cold = LinearSVC(dual=False, C=1.0, tol=1e-8).fit(X, y)
    assert "sample_rows" not in cold.history_[0] and cold.n_iter_ > warm.n_iter_
    assert cold.objective_ == pytest.approx(warm.objective_, rel=1e-8)

"""The band from a sample on a cluster (issue 52): the hinge in two or three reads of every part,
whatever the workers, the band solved from the parts' joined bands; SBM on one worker where it gives up."""

import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as SkLinearSVC

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.primal import sample_band, smoothed
from dask_streamsvm.engine.primal.sums import CG_WIDTH

from ._helpers import load_libsvm_dataset, noisy_linear_data, two_worker_client

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with two_worker_client() as c:
        yield c


def _primal(X, sign, C, w):
    return 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - sign * (X @ w[:-1] + w[-1])).sum())


@pytest.mark.parametrize("scale", ["unit", "raw"])
def test_the_hinge_on_a_cluster_is_the_band_in_two_reads_with_a_true_certificate(client, scale):
    X, y = noisy_linear_data(40_000, 6, seed=9)
    if scale == "raw":
        X = np.clip(np.round(X * 40 + 128), 0, 255)
    Xd, yd = da.from_array(X, chunks=(4_000, 6)), da.from_array(y, chunks=4_000)
    clf = LinearSVC(loss="hinge", C=0.1, tol=1e-4, cache_bytes="10%").fit(Xd, yd, client=client)
    methods = {r["method"] for r in clf.history_}
    assert methods == {"band"} and clf.n_iter_ <= 2
    assert clf.duality_gap_ <= 1e-4
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(_primal(X, sign, 0.1, w), rel=1e-10)
    _, reference, _ = smoothed.solve_smoothed(smoothed.Rows(X, sign, np.full(len(y), 0.1), 1.0), tol=1e-11)
    assert (clf.objective_ - reference.primal) / clf.objective_ <= clf.duality_gap_ + 1e-10
    assert clf.objective_ * (1 - clf.duality_gap_) <= reference.primal * (1 + 1e-10)
    assert clf.history_[-1]["bytes_received"] > 0 and clf.history_[-1]["parts"] == 2
    # each part keeps up to the whole band (BAND_OVERSAMPLE halves), the tree cuts the join to it
    band_rows = max(r.get("active", 0) for r in clf.history_)
    assert 0 < band_rows <= int(0.1 * len(y))
    # the band is solved on the worker that joined it, which keeps the rows' dual values from read to
    # read (engine/primal/sample_band.py: KeptAlphas): the client receives the problems' points only
    # (at most 4 vectors of 7 a read), never the band's rows (band_rows x 6 float64 a read)
    assert clf.history_[-1]["bytes_received"] <= 4 * 7 * 8 * clf.n_iter_


def test_on_a_cluster_the_band_gives_way_to_sbm_where_one_machine_gives_it_up(client):
    """a9a in a 10% cache: the first band's step is certified on less than BAND_MIN_REACH of its
    length, where one machine's ``solver="auto"`` trains StreamSVM instead; on a cluster SBM's trainer
    on one worker trains (cluster.fit.GIVE_WAY_METHOD), whose passes do not grow with the workers, to
    ``tol`` with a true certificate.  Before, the band read on (13-20 reads to 1e-3 on a9a)."""
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:16_000], y[:16_000]
    Xd, yd = da.from_array(X, chunks=(1_600, 123)), da.from_array(y, chunks=1_600)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        clf = LinearSVC(loss="hinge", cache_bytes="10%", tol=1e-3, max_iter=10, random_state=0).fit(
            Xd, yd, client=client
        )
    notes = [str(w.message) for w in caught if "gave way" in str(w.message)]
    assert len(notes) == 1 and "gave way to SBM on one worker (cluster='sbm') after one read" in notes[0]
    methods = [r["method"] for r in clf.history_]  # the first read (the sample's), the band's one read
    assert methods[:2] == ["band", "band"] and set(methods[2:]) == {"sbm"}
    assert clf.history_[1]["band_reach"] < sample_band.BAND_MIN_REACH
    assert clf.duality_gap_ <= 1e-3 and clf.n_iter_ <= 3  # SBM's passes after its first
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(_primal(X, sign, 1.0, w), rel=1e-10)
    # the optimum, certified to 1e-6 in memory (LIBLINEAR's own solver stops short of 1e-10 here)
    reference = LinearSVC(loss="hinge", tol=1e-6, max_iter=100_000, cluster=None).fit(X, y)
    assert reference.duality_gap_ <= 1e-6
    assert (clf.objective_ - reference.objective_) / clf.objective_ <= clf.duality_gap_ + 1e-6


def _load_counted(path, log):
    """``np.load(path)``, the read logged as a line of the file ``log`` (the workers are processes of
    their own; each line is one append)."""
    with open(log, "a") as out:
        out.write(f"{Path(path).name}\n")
    return np.load(path)


def _counted_files(tmp_path, array, name, rows):
    """``array`` saved in files of ``rows`` rows, as a Dask array whose partitions are read from
    them (tasks: a cluster fit reads them on every read), each read logged in ``tmp_path / "reads"``."""
    from dask import delayed

    log, blocks = str(tmp_path / "reads"), []
    for p, start in enumerate(range(0, len(array), rows)):
        np.save(tmp_path / f"{name}{p}.npy", array[start : start + rows])
        part = delayed(_load_counted)(str(tmp_path / f"{name}{p}.npy"), log)
        shape = (min(rows, len(array) - start), *array.shape[1:])
        blocks.append(da.from_delayed(part, shape=shape, dtype=array.dtype))
    return da.concatenate(blocks)


@pytest.mark.parametrize("scaled", [False, True])
def test_sbm_after_the_band_reads_neither_the_labels_nor_the_scales_again(client, scaled, tmp_path):
    """Where the band gives way on a cluster, SBM trains on the labels, label counts and scaled parts
    the band's first read learned (BandStalled.counted): every read of the labels is a read of the
    rows too (before, SBM read the labels alone once more, and learned the scales again with
    Standardize: one read of the rows), and the standardized problem is the one solved in memory."""
    from dask_streamsvm.features import Standardize

    X, y = load_libsvm_dataset("a9a")
    X, y = X[:16_000].toarray(), y[:16_000]
    Xd, yd = _counted_files(tmp_path, X, "X", 1_600), _counted_files(tmp_path, y, "y", 1_600)
    params = {"loss": "hinge", "tol": 1e-3, "random_state": 0}
    params["feature_map"] = Standardize() if scaled else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LinearSVC(cache_bytes="10%", max_iter=10, **params).fit(Xd, yd, client=client)
    methods = [r["method"] for r in clf.history_]
    assert methods[:2] == ["band", "band"] and set(methods[2:]) == {"sbm"}  # it gave way after a read
    read = (tmp_path / "reads").read_text().split()
    rows, labels = ([read.count(f"{name}{p}.npy") for p in range(10)] for name in "Xy")
    # the band's two reads, SBM's passes (its first from alpha = 0, its last the one that certifies),
    # and with Standardize the scales' read before them: each partition as often, the labels with it
    # (partition 0 once more, the client's look at the collection's first partition; measured before
    # the change: 6 and 7 reads of the rows and the labels, 8 and 9 with Standardize, now 6 and 7)
    passes = len({r["pass"] for r in clf.history_ if r["method"] == "sbm"})
    assert labels == rows and rows[1:] == [2 + passes + scaled] * 9 and rows[0] == rows[1] + 1
    assert clf.duality_gap_ <= 1e-3
    reference = LinearSVC(**{**params, "tol": 1e-6}, max_iter=100_000, cluster=None).fit(X, y)
    assert reference.duality_gap_ <= 1e-6
    assert (clf.objective_ - reference.objective_) / clf.objective_ <= clf.duality_gap_ + 1e-6
    if scaled:
        np.testing.assert_allclose(clf.standardize_.scale_, reference.standardize_.scale_, rtol=1e-12)


def _wide_hinge(n=3000, d=1500, seed=0):
    """Sparse rows wider than the band reads on a cluster (1,023 features and the intercept)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.01, random_state=seed, format="csr") * 3.0
    scores = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n)
    y = np.where(scores > np.median(scores), 1, -1)
    return X, y


def test_rows_wider_than_the_band_reads_are_solved_on_one_worker_where_the_samples_hold_them(client):
    """The hinge on rows wider than ``CG_WIDTH``: where the parts' samples hold every row (the default
    ``cache_bytes``), their problem is solved on a worker after the read that counts the classes (no
    round of CoCoA+), to LIBLINEAR's optimum within the gap; where they do not, SBM's trainer on one
    worker trains, and the warning says why."""
    X, y = _wide_hinge()
    assert X.shape[1] + 1 > CG_WIDTH
    Xd, yd = da.from_array(X, chunks=(750, X.shape[1])), da.from_array(y, chunks=750)
    clf = LinearSVC(loss="hinge", C=0.5, tol=1e-6).fit(Xd, yd, client=client)
    assert {r["method"] for r in clf.history_} == {"band"} and clf.n_iter_ == 0
    assert clf.history_[0]["sample_rows"] == X.shape[0] and clf.duality_gap_ <= 1e-6
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(_primal(X, sign, 0.5, w), rel=1e-10)
    sk = SkLinearSVC(loss="hinge", C=0.5, tol=1e-10, max_iter=100_000, intercept_scaling=1.0).fit(X, y)
    reference = _primal(X, sign, 0.5, np.append(sk.coef_.ravel(), sk.intercept_))
    assert (clf.objective_ - reference) / clf.objective_ <= clf.duality_gap_ + 1e-10
    assert clf.objective_ * (1 - clf.duality_gap_) <= reference * (1 + 1e-10)
    with pytest.warns(ConvergenceWarning, match=r"gave way to SBM on one worker \(cluster='sbm'\) after one "
                      r"read: the model is 1501 wide"):  # fmt: skip
        warnings.simplefilter("ignore", ConvergenceWarning)  # SBM's own, of its passes
        warnings.filterwarnings("always", "the band from a sample", ConvergenceWarning)
        small = LinearSVC(loss="hinge", C=0.5, cache_bytes="10%", tol=1e-2, max_iter=5).fit(
            Xd, yd, client=client
        )
    methods = [r["method"] for r in small.history_]
    assert methods[0] == "band" and set(methods[1:]) == {"sbm"}
    assert small.history_[0]["sample_rows"] < X.shape[0]  # read 0 kept a sample, and solved nothing


def _part_read(X, sign, w, keys_rows, rows):
    """A part's :class:`BandSums` at ``w`` over its ``rows``: its band the ``keys_rows`` of smallest
    keys (unit metric), the smallest key left out its ``outside``."""
    from dask_streamsvm.engine.primal.reads import Sample
    from dask_streamsvm.engine.primal.sample_band import BandSums

    Xa = np.hstack([X[rows], np.ones((len(rows), 1))])
    s = 1.0 - sign[rows] * (Xa @ w)
    keys = np.abs(s) / np.sqrt(1.0 + (X[rows] ** 2).sum(axis=1))
    order = np.argsort(keys)
    band, left = rows[order[:keys_rows]], order[keys_rows:]
    on = s > 0
    cost = np.ones(len(rows))
    kept = order[:keys_rows]
    sample = Sample(
        X[band], sign[band], np.ones(len(band)), len(rows), float(keys[left].min()) if left.size else np.inf,
        (np.zeros(X.shape[1]), np.ones(X.shape[1])), shortfall=s[kept], keys=keys[kept],
    )  # fmt: skip
    return BandSums(float(cost @ np.maximum(s, 0)), float(on.sum()), Xa[on].T @ sign[rows][on], sample), keys


def test_the_tree_cuts_the_joined_band_to_its_rows_of_smallest_keys_and_bounds_every_row_cut():
    """Parts that keep more than their share: the join keeps the band's budget of rows of smallest
    keys over all parts, and its bound is the smallest key of any row left out or cut, so that the
    joined band is the one a single read of every row keeps."""
    from dask_streamsvm.engine.cluster.newton import add_band_sums

    X, y = noisy_linear_data(8_000, 5, seed=4)
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.05])
    parts = np.array_split(np.arange(len(y)), 8)
    reads = [_part_read(X, sign, w, 200, rows) for rows in parts]
    counts = type("Counts", (), {"rows": 0, "bytes": 0, "retries": 0, "skipped": 0})
    level = [([r], counts()) for r, _ in reads]
    while len(level) > 1:
        level = [add_band_sums(level[i], level[i + 1], band_rows=400) for i in range(0, len(level), 2)]
    joined = level[0][0][0]
    every = np.concatenate([k for _, k in reads])
    assert joined.band.n_rows == 400
    np.testing.assert_allclose(np.sort(joined.band.keys), np.sort(every)[:400], rtol=0, atol=0)
    assert joined.outside == np.sort(every)[400]  # the global 401st key: as one read of every row
    # each part's share alone (50 rows) bounds the join by the least of their 51st keys: lower
    alone = min(np.sort(k)[50] for _, k in reads)
    assert alone < 0.8 * joined.outside  # measured 0.065 against 0.089
    # the sums are every row's, and the offset every row's on the linear piece outside the join
    Xa = np.hstack([X, np.ones((len(y), 1))])
    s = 1.0 - sign * (Xa @ w)
    np.testing.assert_allclose(joined.u, Xa[s > 0].T @ sign[s > 0], rtol=1e-12)
    held = (s > 0) & ~np.isin(np.arange(len(y)), np.argsort(every)[:400])
    u, S = joined.offset(1.0)
    assert S == held.sum()
    np.testing.assert_allclose(u, Xa[held].T @ sign[held], rtol=1e-10, atol=1e-9)


def test_a_part_keeps_band_oversample_times_its_share_within_the_whole_band():
    from dask_streamsvm.engine.cluster.newton import BAND_OVERSAMPLE, part_band_budget
    from dask_streamsvm.engine.plan.problem import FitPlan

    plan = FitPlan(loss="hinge", cache_bytes=100_000, dual=True)
    plan = plan.with_labels(np.array([0, 1]), np.array([500, 500]), np.array([0, 1]))
    whole, part = part_band_budget(plan, 100_000, 100)
    assert BAND_OVERSAMPLE == 4
    assert part[0] == 4 * -(-whole[0] // 100) and part[1] == 4 * whole[1] // 100
    whole, part = part_band_budget(plan, 100_000, 2)  # four halves: at most the whole band
    assert part == whole


def test_a_band_whose_read_gains_nothing_gives_way_to_sbm_and_says_why(client, monkeypatch):
    """On a cluster the band's reads that reach a fixed point above tol (reads that gain nothing:
    sample_band.STALL_READS) give way to SBM on one worker, which trains on, the user told after which read;
    as one machine's (test_band_kept_alphas)."""
    rng = np.random.default_rng(0)
    X = sp.random(1000, 200, density=0.03, random_state=0, format="csr") * 3.0
    y = np.where(X @ rng.standard_normal(200) + 0.5 * rng.standard_normal(1000) > 0, 1, -1)
    Xd, yd = da.from_array(X, chunks=(500, 200)), da.from_array(y, chunks=500)
    # its first band's step is certified on 1.4e-5 of its length, which gives the band up after one
    # read (BAND_MIN_REACH, tested above): the reads this test is about come only without that rule
    # (the client's band_reads checks it)
    monkeypatch.setattr(sample_band, "BAND_MIN_REACH", 0.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = LinearSVC(loss="hinge", C=0.5, cache_bytes="10%", tol=1e-3, max_iter=300).fit(
            Xd, yd, client=client
        )
    methods = [r["method"] for r in clf.history_]
    band_reads = [r["pass"] for r in clf.history_ if r["method"] == "band"]
    assert methods[0] == "band" and "sbm" in methods and max(band_reads) < 300
    notes = [str(w.message) for w in caught if "gave way to SBM" in str(w.message)]
    last = max(band_reads)
    assert (
        len(notes) == 1 and f"after {last} reads: its reads {last - 1} to {last} gained nothing" in notes[0]
    )
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(_primal(X, sign, 0.5, w), rel=1e-10)
    sk = SkLinearSVC(loss="hinge", C=0.5, tol=1e-10, max_iter=200_000).fit(X, y)
    reference = _primal(X, sign, 0.5, np.append(sk.coef_.ravel(), sk.intercept_))
    assert (clf.objective_ - reference) / clf.objective_ <= clf.duality_gap_ + 1e-12

"""``cluster="auto"`` and the Newton methods on a cluster: the method chosen for the data and the
loss, truncated Newton (Hessian products summed in a tree) to the in-memory optimum, the bytes it
moves per product, and the raw-scale case that CoCoA+ and averaging could not train."""

import os
import warnings

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine import choice
from dask_streamsvm.engine.plan.problem import FitPlan
from dask_streamsvm.features import Standardize

from ._helpers import noisy_linear_data, two_worker_client

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with two_worker_client() as c:
        yield c


def _wide(n=3000, d=1500, classes=2, seed=0):
    """Sparse rows wider than the formed Hessian's limit on a cluster (1,023 features)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.01, random_state=seed, format="csr") * 3.0
    scores = X @ rng.standard_normal((d, classes)) + 0.3 * rng.standard_normal((n, classes))
    y = scores.argmax(axis=1) if classes > 2 else np.where(scores[:, 0] > np.median(scores[:, 0]), 1, -1)
    return X, y


def _dask(X, y, chunk=700):
    return da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk)


def test_auto_picks_a_method_for_the_loss_and_the_width():
    def method(n_features, **params):
        plan = FitPlan(**{"cluster": "auto", "dual": "auto", "solver": "auto", **params})
        return choice.cluster_method(plan, n_features)

    assert method(60) == "newton"
    assert method(1023) == "newton"  # 1,023 features and the bias: the formed Hessian's limit
    assert method(1024) == "truncated_newton"
    assert method(100_000) == "truncated_newton"
    assert method(60, loss="hinge") == "band"  # no Newton step: the band from a sample
    assert method(1023, loss="hinge") == "band"
    # wider than the Hessians a cluster forms: the band where the parts' samples hold every row (the
    # fit decides after its first read, CoCoA+ otherwise: test_cluster_band)
    assert method(1024, loss="hinge") == "band"
    assert method(60, loss="hinge", crammer_singer=True) == "cocoa"
    assert method(60, dual=True) == "cocoa"
    assert method(60, cluster="average") == "average"  # named: the method it names
    assert method(60, cluster="cocoa") == "cocoa"
    assert method(5000, cluster="cocoa", dual=False) == "truncated_newton"  # dual=False: Newton


def test_auto_trains_in_this_process_where_the_cluster_is_not_the_users(monkeypatch):
    plan = FitPlan(cluster="auto", solver="auto")
    monkeypatch.setattr(choice, "_active_client", lambda: "the client")

    def where(plan=plan, out_of_core=True, **kwargs):
        resolved, client = choice.where_to_fit(plan, None, out_of_core=out_of_core, **kwargs)
        return resolved.cluster, client

    assert where() == ("auto", "the client")
    assert where(out_of_core=False) == (None, None)  # in-memory input
    assert where(plan.replace(solver="sbm")) == (None, None)  # a solver of this process named
    assert where(checkpointing=True) == (None, None)
    assert where(validating=True) == (None, None)
    assert where(plan.replace(probability=True)) == (None, None)
    with dask.config.set(scheduler="sync"):  # a local scheduler asked for
        assert where() == (None, None)
    monkeypatch.setattr(choice, "_active_client", lambda: None)
    assert where() == (None, None)  # no client
    assert choice.where_to_fit(plan.replace(cluster=None), None, out_of_core=True)[0].cluster is None


def test_no_client_means_no_cluster_in_a_fresh_process():
    """Without ``distributed`` imported there is no client, and nothing imports it to look."""
    import subprocess
    import sys

    code = (
        "import sys; from dask_streamsvm.engine.choice import _active_client; "
        "assert _active_client() is None; assert 'distributed' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# both slow: among make test's slowest (issue 51: the default suite in six minutes)
@pytest.mark.parametrize(
    "classes", [pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)]
)
def test_truncated_newton_reaches_the_in_memory_optimum(client, classes):
    X, y = _wide(n=2000, classes=classes)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    params = {"C": 0.5, "tol": 1e-6, "class_weight": {y.min(): 2.0}}
    clf = LinearSVC(**params).fit(*_dask(X, y), sample_weight=da.from_array(weight, chunks=700))
    assert {r["method"] for r in clf.history_} == {"truncated_newton"}
    assert sum(part["rows"] for part in clf.cluster_parts_) == X.shape[0]
    reference = LinearSVC(dual=False, cluster=None, **{**params, "tol": 1e-12}).fit(
        X, y, sample_weight=weight
    )
    optimum, objective = np.atleast_1d(reference.objective_), np.atleast_1d(clf.objective_)
    gap = np.atleast_1d(clf.duality_gap_)
    assert np.all(gap <= 1e-6)
    # The certificate bounds the true suboptimality: the sums are the data's.
    assert np.all((objective - optimum) / objective <= gap + 1e-12)
    assert np.all(objective >= optimum * (1 - 1e-12))
    np.testing.assert_allclose(clf.coef_, reference.coef_, atol=1e-3 * np.abs(reference.coef_).max())


@pytest.mark.slow  # among make test's slowest (issue 51: the default suite in six minutes)
def test_truncated_newton_moves_d_numbers_per_product(client):
    """Per Hessian product: the direction to each part on another worker than the root's and one
    sum per edge of the tree between workers, ``2 (K - 1) (d + 1)`` floats at most; through the
    client, a constant."""
    X, y = _wide()
    clf = LinearSVC(tol=1e-4).fit(*_dask(X, y))
    last = clf.history_[-1]
    K, D = len(clf.cluster_parts_), X.shape[1] + 1
    assert last["products"] > 0
    assert sum(record["hessian_products"] for record in clf.history_) == last["products"]  # per read
    per_product = last["product_bytes_between_workers"] / last["products"]
    assert 0 < per_product <= 2 * (K - 1) * D * 8
    # Through the client: per Newton step the point and direction (O(d)), per product 16 bytes.
    steps = last["pass"] + 1
    assert last["bytes_received"] <= steps * 8 * (10 * D + 64) + 16 * last["products"]


def test_raw_scale_data_converges_on_a_cluster_by_default(client, tmp_path):
    """Raw pixels (0..255, three features): CoCoA+ stopped at a gap of 0.998 after 30 rounds and
    the average at 0.329; ``cluster="auto"`` trains Newton steps on the workers to ``tol``."""
    rng = np.random.default_rng(0)
    n = 24_500
    pixels = rng.integers(0, 256, size=(n, 3)).astype(np.float64)
    label = np.where(pixels @ [1.0, -0.5, 0.25] + rng.normal(0, 20, n) > 80, 1, 0)
    frame = pd.DataFrame(pixels, columns=["r", "g", "b"]).assign(label=label)
    for i, lo in enumerate(range(0, n, n // 4)):
        frame.iloc[lo : lo + n // 4].to_parquet(tmp_path / f"part-{i}.parquet")
    clf = LinearSVC().fit(str(tmp_path), "label")
    assert {r["method"] for r in clf.history_} == {"newton"}
    assert clf.duality_gap_ <= clf.tol
    reference = LinearSVC(dual=False, tol=1e-10, cluster=None).fit(frame[["r", "g", "b"]], label)
    assert (clf.objective_ - reference.objective_) / clf.objective_ <= clf.duality_gap_ + 1e-12


@pytest.mark.parametrize("wide", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_standardize_on_a_cluster_is_the_fit_of_this_process(client, wide):
    """Columns on scales from 0.1 to 10, dense (centred where there is an intercept).  Sparse
    rows of 1% density scaled to unit variance make a badly conditioned problem on which truncated
    Newton's line search shortens most steps (123 reads in memory as on the cluster): not for a
    unit test's time."""
    rng = np.random.default_rng(2)
    d = 1030 if wide else 40
    X = rng.standard_normal((600, d)) * rng.uniform(0.1, 10.0, d) + rng.uniform(-5, 5, d)
    y = np.where(X @ (rng.standard_normal(d) / X.std(axis=0)) > 0, 1, -1)
    params = {"feature_map": Standardize(), "tol": 1e-8, "dual": False, "C": 0.1}
    clf = LinearSVC(**params).fit(*_dask(X, y))
    here = LinearSVC(cluster=None, **params).fit(*_dask(X, y))
    assert {r["method"] for r in clf.history_} == {"truncated_newton" if wide else "newton"}
    np.testing.assert_allclose(clf.standardize_.scale_, here.standardize_.scale_, rtol=1e-12)
    assert clf.objective_ == pytest.approx(here.objective_, rel=1e-7)
    np.testing.assert_allclose(clf.coef_, here.coef_, atol=1e-4 * np.abs(here.coef_).max())


def test_a_wide_fit_with_the_hinge_loss_runs_sbm_where_the_parts_samples_do_not_hold_every_row(client):
    X, y = _wide(n=1500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the band's note (test_cluster_band)
        clf = LinearSVC(loss="hinge", tol=0.5, max_iter=50, cache_bytes="10%").fit(*_dask(X, y))
    methods = [r["method"] for r in clf.history_]
    assert methods[0] == "band" and set(methods[1:]) == {"sbm"} and clf.duality_gap_ <= 0.5


@pytest.mark.slow
def test_parts_larger_than_their_budget_train_from_a_spill_on_their_worker(client, tmp_path):
    """``cache_bytes`` below a part's rows: each part's rows go to files on its worker (memory maps),
    and the fit is the in-memory parts' to the certified gap; the files go with the fit."""
    import gc
    import time

    X, y = _wide(n=2000)
    params = {"tol": 1e-8, "C": 0.5}
    held = LinearSVC(**params).fit(*_dask(X, y))
    seen = []  # the parts' spill directories while the fit runs

    def look(record):
        seen.append(len(list(tmp_path.glob("dask-streamsvm-part-*"))))

    spilled = LinearSVC(cache_bytes=20_000, spill_dir=str(tmp_path), callbacks=[look], **params)
    spilled.fit(*_dask(X, y))
    assert seen and min(seen) == len(spilled.cluster_parts_)
    assert {r["method"] for r in spilled.history_} == {"truncated_newton"}
    assert spilled.duality_gap_ <= 1e-8
    assert spilled.objective_ == pytest.approx(held.objective_, rel=1e-7)
    del spilled
    gc.collect()
    deadline = time.monotonic() + 60  # the workers release the parts once the client forgets them
    while any(tmp_path.glob("dask-streamsvm-part-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(tmp_path.glob("dask-streamsvm-part-*"))


def test_a_spill_holds_the_rows_it_was_given(tmp_path):
    from dask_streamsvm.engine.cluster.products import RowSpill

    X, _ = _wide(n=300, d=50)
    spill = RowSpill(str(tmp_path), 50, True)
    spill.add([X[:100], X[100:]])
    rows = spill.rows()
    assert isinstance(rows.data, np.memmap) and isinstance(rows.indices, np.memmap)
    assert (rows != X).nnz == 0
    dense = RowSpill(str(tmp_path), 50, False)
    dense.add([X[:10].toarray(), X[10:30].toarray()])
    np.testing.assert_array_equal(dense.rows(), X[:30].toarray())


def test_verbose_prints_a_line_per_step_or_round_on_a_cluster(client, capsys):
    X, y = _wide(n=1500)
    newton = LinearSVC(verbose=2, tol=1e-3).fit(*_dask(X, y))
    out = capsys.readouterr().out
    assert out.count("[LinearSVC]") == len(newton.history_)
    with pytest.warns(ConvergenceWarning):  # five passes after the first: not to tol (and the band gave way)
        sbm = LinearSVC(verbose=2, loss="hinge", tol=1e-3, max_iter=5, cache_bytes="10%").fit(*_dask(X, y))
    out = capsys.readouterr().out
    passes = [r for r in sbm.history_ if r["method"] == "sbm"]
    assert len(passes) == 6 and out.count("[LinearSVC] class=1 pass") == len(passes)
    with pytest.warns(ConvergenceWarning):  # five rounds: not to tol
        cocoa = LinearSVC(verbose=2, loss="hinge", tol=1e-3, max_iter=5, cluster="cocoa").fit(*_dask(X, y))
    out = capsys.readouterr().out
    rounds = [r for r in cocoa.history_ if r["method"] == "cocoa"]
    assert len(rounds) == 5 and out.count("[LinearSVC] cocoa round") == len(rounds)


# -- data that changes between the reads of a cluster fit (issue 50) ---------------------------

CHANGED_PARTS, CHANGED_ROWS = 6, 500


def _changing_collection(counts, from_read, n_features=5, sparse=False, classes=2):
    """``(X, y)`` as Dask Arrays of :data:`CHANGED_PARTS` partitions made by tasks (no rows in the
    graph: every read computes them again, on a worker), whose partition 3 has its odd rows scaled
    5x (labels unchanged) from its ``from_read``-th read on.  The workers are processes: each read
    of partition ``i`` adds a byte to the file ``counts / str(i)``.  ``classes=3``: labels 0, 1, 2
    by the scores' thirds."""

    def part(i):
        with open(counts / str(i), "ab") as f:
            f.write(b".")
        read = (counts / str(i)).stat().st_size
        rng = np.random.default_rng(i)
        if sparse:
            X = sp.random(CHANGED_ROWS, n_features, density=0.01, random_state=i, format="csr") * 3.0
            scores = X @ np.random.default_rng(99).standard_normal(n_features)
        else:
            X = rng.standard_normal((CHANGED_ROWS, n_features))
            scores = X @ np.arange(1.0, n_features + 1)
        noisy = scores + 0.3 * rng.standard_normal(CHANGED_ROWS)
        y = np.where(noisy > 0, 1, -1) if classes == 2 else np.digitize(noisy, [-3.0, 3.0])  # 0, 1, 2
        if i == 3 and read >= from_read:
            X = sp.csr_matrix(X) if sparse else X.copy()
            X[1::2] *= 5.0
        return X, y

    parts = [dask.delayed(part, pure=False, nout=2)(i) for i in range(CHANGED_PARTS)]
    meta = sp.csr_matrix((0, n_features)) if sparse else np.zeros((0, n_features))
    shape = (CHANGED_ROWS, n_features)
    Xd = da.concatenate([da.from_delayed(p[0], shape, np.float64, meta=meta) for p in parts])
    yd = da.concatenate([da.from_delayed(p[1], (CHANGED_ROWS,), np.int64) for p in parts])
    return Xd, yd


@pytest.mark.parametrize(
    "model, from_read, cache_bytes",
    [
        # read 1 counts the labels and keeps the warm start's sample: every later read must give its rows
        # (cache_bytes below a part's 84,000 bytes of rows: the parts are read again, not held)
        ("LinearSVC", 2, 60_000),
        ("LogisticRegression", 2, 60_000),
        ("LinearSVC", 3, 20_000),  # a smaller sample, a Newton step more: the second step's read changed
    ],
)
def test_a_partition_that_changes_between_newton_reads_stops_the_fit_naming_it(
    client, tmp_path, model, from_read, cache_bytes
):
    """As on one machine: the first read's fingerprints of every part go with its later reads,
    whichever task (a new source every time) or worker makes them."""
    import dask_streamsvm

    Xd, yd = _changing_collection(tmp_path, from_read)
    clf = getattr(dask_streamsvm, model)(
        dual=False, tol=1e-9, cache_bytes=cache_bytes
    )  # a sample of the rows
    with pytest.raises(ValueError, match="partition 3 gave other rows on this read than on its first"):
        clf.fit(Xd, yd)
    assert (tmp_path / "3").stat().st_size == from_read  # stopped at the first read that changed


def test_a_truncated_newton_part_read_again_after_a_lost_worker_must_give_its_rows(
    client, tmp_path, monkeypatch
):
    """Truncated Newton reads every part once; a part read again on a live worker (its worker
    lost) is checked against that read's fingerprints, kept on the client."""
    from dask_streamsvm.engine.cluster import products

    encode = products.TruncatedNewton.encode

    def encode_after_a_loss(self, plan):  # every part's worker "lost" after the first read
        self._recover(set(self.placed), reload=False)
        return encode(self, plan)

    Xd, yd = _changing_collection(tmp_path, from_read=2, n_features=1500, sparse=True)
    clf = LinearSVC(dual=False, tol=1e-6)
    assert choice.cluster_method(FitPlan(dual=False), 1500) == "truncated_newton"
    monkeypatch.setattr(products.TruncatedNewton, "encode", encode_after_a_loss)
    with pytest.raises(ValueError, match="partition 3 gave other rows on this read than on its first"):
        clf.fit(Xd, yd)
    assert (tmp_path / "3").stat().st_size == 2


# -- worker spill directories left by a killed worker (issue 50) -------------------------------

PART_STEM = "dask-streamsvm-part-"  # how a worker's part spill directory is named


def _owned_directories(tmp_path, stem):
    """A spill directory of a process that has ended and one of a live process (which the caller
    kills), each with a file; ``(dead, live, process)``."""
    import subprocess
    import sys

    from dask_streamsvm.engine.store.archive import owned_prefix

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    dead = tmp_path / (owned_prefix(stem, ended.pid) + "k2x9q_7a")
    live = tmp_path / (owned_prefix(stem, alive.pid) + "m3v8w1zz")
    for directory in (dead, live):
        directory.mkdir()
        (directory / "data").write_bytes(b"x" * 1000)
    return dead, live, alive


def test_a_part_spill_is_named_with_its_owner_and_removes_those_of_ended_workers(tmp_path):
    """A worker killed before its rows are released leaves its part's spill; its name carries the
    worker's host and pid, and the next part spill on the machine removes it (a live one's stays)."""
    import os

    from dask_streamsvm.engine.cluster.products import RowSpill
    from dask_streamsvm.engine.store.archive import owned_prefix

    dead, live, alive = _owned_directories(tmp_path, PART_STEM)
    try:
        spill = RowSpill(str(tmp_path), 5, False)
        assert not dead.exists()
        assert (live / "data").exists()
        assert os.path.basename(spill.path).startswith(owned_prefix(PART_STEM))
        spill.add([np.ones((3, 5))])
        np.testing.assert_array_equal(spill.rows(), np.ones((3, 5)))
    finally:
        alive.kill()
        alive.wait()


def test_a_cluster_spill_removes_the_part_spills_of_ended_workers(client, tmp_path):
    import os

    from dask_streamsvm.engine.store.archive import owned_prefix

    dead, live, alive = _owned_directories(tmp_path, PART_STEM)
    seen = []  # the parts' spill directories while the fit runs

    def look(record):
        seen.extend(p.name for p in tmp_path.glob(PART_STEM + "*") if p not in (dead, live))

    try:
        X, y = _wide(n=800)
        clf = LinearSVC(cache_bytes=5_000, spill_dir=str(tmp_path), callbacks=[look], tol=0.1)
        clf.fit(*_dask(X, y))
        assert {r["method"] for r in clf.history_} == {"truncated_newton"}
        assert not dead.exists()
        assert (live / "data").exists()
        workers = client.run(os.getpid).values()
        owners = tuple(owned_prefix(PART_STEM, pid) for pid in workers)
        assert seen and all(name.startswith(owners) for name in seen)
    finally:
        alive.kill()
        alive.wait()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # three passes or rounds
@pytest.mark.parametrize(
    "params",
    [
        dict(cluster="average", solver="sbm", max_iter=3),
        dict(cluster="cocoa", cache_bytes=2_000, max_iter=3),  # parts past cache_bytes: streamed
    ],
    ids=["average", "cocoa-streaming"],
)
def test_a_partition_that_changes_before_the_certifying_read_is_named(client, tmp_path, params):
    """The average's loss and CoCoA+'s part weights are read once more after training: those reads
    are checked against the training's, so a model is never certified on rows it was not trained
    on.  A fit of the same data counts the reads of partition 3 (the certifying one is its last);
    a second fit sees the partition change from that read on."""
    (tmp_path / "count").mkdir()
    (tmp_path / "changed").mkdir()
    clf = LinearSVC(tol=1e-12, random_state=0, **params)
    clf.fit(*_changing_collection(tmp_path / "count", from_read=10**9))
    last = (tmp_path / "count" / "3").stat().st_size
    Xd, yd = _changing_collection(tmp_path / "changed", from_read=last)
    with pytest.raises(ValueError, match="partition 3 gave other rows on this read than on its first"):
        LinearSVC(tol=1e-12, random_state=0, **params).fit(Xd, yd)
    assert (tmp_path / "changed" / "3").stat().st_size == last


def test_a_tall_fit_on_a_cluster_is_certified_after_two_reads(client, monkeypatch):
    """The parts' bands joined up the tree keep the smallest key any part left out, so the step from
    the warm start is certified from the second read, as on one machine (issue 52).  ``cache_bytes``
    below a part's 9.6 MB of rows, above its share of the default sample (24,000 rows, 2.5 MB): the
    parts are read again, not held.  The band's step and its certificate are made on the worker
    that joined the band (RootBand): nothing the client gathers holds the band's rows."""
    from dask_streamsvm.engine.cluster import newton as cluster_newton
    from dask_streamsvm.engine.primal.reads import Sample
    from dask_streamsvm.engine.primal.sums import Sums

    gathered, gather = [], cluster_newton.gather

    def recording(*args, **kwargs):
        out = gather(*args, **kwargs)
        gathered.extend(out)
        return out

    monkeypatch.setattr(cluster_newton, "gather", recording)
    X, y = noisy_linear_data(200_000, 10)
    clf = LinearSVC(dual=False, tol=1e-3, cache_bytes=8_000_000).fit(
        *_dask(X, y, chunk=25_000), client=client
    )
    assert {r["method"] for r in clf.history_} == {"newton"}
    assert [r["pass"] for r in clf.history_] == [0, 1] and clf.history_[-1]["band_certified"]
    items = [part for item in gathered for part in (item if isinstance(item, tuple) else (item,))]
    bands = [band for item in items if isinstance(item, Sums) for band in item.band or []]
    assert bands and not any(isinstance(item, Sample) for item in items + bands)
    # The sums (an 11 x 11 Hessian a read), the step's point, gradient and Hessian out and its step
    # back: kilobytes, where the band is 20,000 rows (1.6 MB).
    assert clf.history_[-1]["bytes_received"] <= 20_000
    reference = LinearSVC(dual=False, tol=1e-10, cluster=None).fit(X, y)
    assert (clf.objective_ - reference.objective_) / clf.objective_ <= clf.duality_gap_ + 1e-12
    assert clf.duality_gap_ <= clf.tol


def test_the_warm_start_is_solved_on_a_worker_and_no_sample_reaches_the_client(client, monkeypatch):
    """The parts' samples are joined and solved on a worker (issue 52: on the client a 61 MB sample
    took half the fit while the workers idled): here the client's own warm start refuses to run,
    and nothing the client gathers holds a sample's rows."""
    from dask_streamsvm.engine.cluster import newton as cluster_newton
    from dask_streamsvm.engine.primal import warm
    from dask_streamsvm.engine.primal.reads import FirstRead

    from ._helpers import noisy_linear_data

    def not_here(*args, **kwargs):
        raise AssertionError("the warm start ran on the client")

    monkeypatch.setattr(warm, "warm_start", not_here)
    gathered = []
    gather = cluster_newton.gather

    def recording(*args, **kwargs):
        out = gather(*args, **kwargs)
        gathered.extend(out)
        return out

    monkeypatch.setattr(cluster_newton, "gather", recording)
    X, y = noisy_linear_data(40_000, 6)
    clf = LinearSVC(dual=False, tol=1e-6).fit(*_dask(X, y, chunk=5_000), client=client)
    assert clf.history_[0]["sample_rows"] > 0 and clf.duality_gap_ <= 1e-6
    firsts = [item for item in gathered if isinstance(item, FirstRead)]
    assert len(firsts) == 2 and all(first.sample is None for first in firsts)


@pytest.mark.parametrize(
    "params, scaled",
    [
        # cache_bytes below a part's 84,000 bytes of rows: each Newton step reads the parts again
        ({"dual": False, "cache_bytes": 60_000}, False),
        ({"loss": "hinge", "cache_bytes": "10%"}, False),
        ({"dual": False, "cache_bytes": 60_000}, True),  # the scales' read, then the first of scaled rows
    ],
)
def test_the_parts_first_read_counts_the_labels_and_keeps_the_sample(client, tmp_path, params, scaled):
    """One read of every part counts the classes, checks the values and keeps the warm start's
    sample, as on one machine; each later read is a Newton step's or a band's (until 2026-12-05 a
    read of its own counted the labels first: a read more of every partition)."""
    from dask_streamsvm.features import Standardize

    Xd, yd = _changing_collection(tmp_path, from_read=10**6)  # never changes: counts its reads
    clf = LinearSVC(tol=1e-6, feature_map=Standardize() if scaled else None, **params).fit(Xd, yd)
    assert {r["method"] for r in clf.history_} == {"newton" if "dual" in params else "band"}
    reads = [(tmp_path / str(i)).stat().st_size for i in range(CHANGED_PARTS)]
    assert reads == [clf.n_iter_ + 1 + scaled] * CHANGED_PARTS
    assert clf.classes_.tolist() == [-1, 1] and [p["rows"] for p in clf.cluster_parts_] == [1_500, 1_500]


@pytest.mark.parametrize(
    "model, loss, scaled",
    [
        ("LinearSVC", "squared_hinge", False),
        ("LogisticRegression", None, False),
        ("LinearSVC", "squared_hinge", True),
        ("LinearSVC", "hinge", False),  # the band's reads
    ],
)
def test_parts_within_their_budget_are_read_once_and_the_steps_pass_over_their_rows(
    client, tmp_path, model, loss, scaled
):
    """Where each part's rows fit ``cache_bytes`` (84,000 bytes a part here) its first read keeps them
    on its worker, and every Newton step (the hinge: every band read) is a pass over them: each
    partition read once (with ``Standardize``, once more for the scales), where a read a step
    streamed; the fit certified at the data's optimum (the in-memory fit's) and its history counting
    the one read."""
    import dask_streamsvm
    from dask_streamsvm.features import Standardize

    Xd, yd = _changing_collection(tmp_path, from_read=10**6)  # never changes: counts its reads
    tol = 1e-4 if loss == "hinge" else 1e-8
    params = {"tol": tol, "feature_map": Standardize() if scaled else None}
    params.update(
        {"loss": "hinge"} if loss == "hinge" else {"dual": False, "loss": loss} if loss else {"dual": False}
    )
    estimator = getattr(dask_streamsvm, model)
    clf = estimator(cache_bytes=100_000, **params).fit(Xd, yd)  # a sample of 781 rows a part, then the steps
    assert {r["method"] for r in clf.history_} == {
        "band" if loss == "hinge" else "newton"
    } and clf.n_iter_ >= 1
    reads = [(tmp_path / str(i)).stat().st_size for i in range(CHANGED_PARTS)]
    assert reads == [1 + scaled] * CHANGED_PARTS
    assert clf.history_[-1]["rows_read"] == CHANGED_PARTS * CHANGED_ROWS  # the one read of the rows
    X, y = dask.compute(Xd, yd, scheduler="sync")
    memory = estimator(**params).fit(X, y)
    assert clf.duality_gap_ <= tol and memory.duality_gap_ <= tol
    primal, optimum = clf.history_[-1]["primal"], memory.history_[-1]["primal"]
    assert abs(primal - optimum) <= 2 * tol * optimum  # both within tol of the same optimum
    np.testing.assert_allclose(clf.coef_, memory.coef_, rtol=1e-2 if loss == "hinge" else 1e-3)


def _count_carried_hessians():
    """On a worker: keep each block's Hessian that its held rows carry (``HeldRows.carried``), in a
    module attribute; :func:`_uncount_carried_hessians` puts the method back and gives each one's
    ``(formed, carried)`` counts."""
    from dask_streamsvm.engine.primal import reads

    original = reads.HeldRows.carried
    reads.counted_hessians = {}

    def counted(self, *args):
        hessian = original(self, *args)
        if hessian is not None:
            reads.counted_hessians[id(hessian)] = hessian
        return hessian

    counted.original = original
    reads.HeldRows.carried = counted


def _uncount_carried_hessians():
    from dask_streamsvm.engine.primal import reads

    reads.HeldRows.carried = reads.HeldRows.carried.original
    return [(h.formed, h.carried) for h in reads.__dict__.pop("counted_hessians").values()]


def test_the_steps_passes_over_held_rows_carry_their_hessian_on_the_workers(client, tmp_path):
    """The Newton steps' passes over the rows each part holds form each block's Hessian at their
    first pass and carry it after, on the part's worker (:meth:`~.reads.HeldRows.carried`); the fit
    is certified at the in-memory fit's optimum."""
    Xd, yd = _changing_collection(tmp_path, from_read=10**6)
    client.run(_count_carried_hessians)
    try:  # each part's 84,000 bytes of rows and its blocks' pieces and Hessians (14,400 bytes) fit
        clf = LinearSVC(dual=False, tol=1e-8, cache_bytes=100_000).fit(Xd, yd)
    finally:
        counts = client.run(_uncount_carried_hessians)
    passes = len(clf.history_) - 1  # the first record is the parts' first read's, each other a pass's
    assert clf.history_[-1]["rows_read"] == CHANGED_PARTS * CHANGED_ROWS and passes >= 2
    # each partition a block held on its part's worker: formed at the first pass, carried after
    assert sorted(c for hessians in counts.values() for c in hessians) == [(1, passes - 1)] * CHANGED_PARTS
    X, y = dask.compute(Xd, yd, scheduler="sync")
    memory = LinearSVC(dual=False, tol=1e-8).fit(X, y)
    optimum = memory.history_[-1]["primal"]
    assert clf.duality_gap_ <= 1e-8 and abs(clf.history_[-1]["primal"] - optimum) <= 2e-8 * optimum


def test_the_sums_at_zero_are_made_on_the_first_worker(client, tmp_path, monkeypatch):
    """The first record's certificate of ``w = 0`` comes from the parts' moments added on the first
    worker beside the warm start, not on the client, whose only compiled calls they were (Numba's
    typing loaded there for them took 0.23-0.33 s of a fresh client's fit); the same certificate as
    one machine's first read gives."""
    from dask_streamsvm.engine.primal import reads

    made, sums = [], reads.FirstRead.sums

    def recorded(self, plan):
        made.append(plan)
        return sums(self, plan)

    monkeypatch.setattr(reads.FirstRead, "sums", recorded)  # the client's alone: the workers are processes
    Xd, yd = _changing_collection(tmp_path, from_read=10**6)
    clf = LinearSVC(dual=False, tol=1e-8, cache_bytes=100_000).fit(Xd, yd)
    assert made == [] and clf.duality_gap_ <= 1e-8
    one = LinearSVC(dual=False, tol=1e-8, cache_bytes=100_000, cluster=None).fit(Xd, yd)
    assert len(made) == 1  # one machine's first read makes them in its process
    for key in ("primal", "dual", "gap"):
        assert clf.history_[0][key] == pytest.approx(one.history_[0][key], rel=1e-12), key


def test_the_softmax_models_parts_within_their_budget_are_read_once(client, tmp_path):
    """The multinomial model on three classes (``multi_class="auto"``): its parts' first read keeps
    their rows where they fit ``cache_bytes`` and every Newton read after it is a pass over them, each
    partition read once; certified at the in-memory fit's optimum."""
    from dask_streamsvm import LogisticRegression

    Xd, yd = _changing_collection(tmp_path, from_read=10**6, classes=3)
    clf = LogisticRegression(tol=1e-8, cache_bytes=100_000).fit(Xd, yd)
    assert clf.classes_.tolist() == [0, 1, 2] and {r["method"] for r in clf.history_} == {"newton"}
    assert clf.n_iter_ >= 1 and clf.history_[-1]["rows_read"] == CHANGED_PARTS * CHANGED_ROWS
    assert [(tmp_path / str(i)).stat().st_size for i in range(CHANGED_PARTS)] == [1] * CHANGED_PARTS
    X, y = dask.compute(Xd, yd, scheduler="sync")
    memory = LogisticRegression(tol=1e-8).fit(X, y)
    assert clf.duality_gap_ <= 1e-8 and memory.duality_gap_ <= 1e-8
    primal, optimum = clf.history_[-1]["primal"], memory.history_[-1]["primal"]
    assert abs(primal - optimum) <= 2e-8 * optimum


def test_a_share_of_the_rows_as_cache_bytes_keeps_no_part_whole(client, tmp_path):
    """``cache_bytes="50%"`` is half the rows: the parts' first read keeps a sample, not every row
    (though half of a part's 84,000 bytes fits any worker), and each Newton step reads the parts."""
    Xd, yd = _changing_collection(tmp_path, from_read=10**6)
    clf = LinearSVC(dual=False, tol=1e-6, cache_bytes="50%").fit(Xd, yd)
    assert {r["method"] for r in clf.history_} == {"newton"} and clf.n_iter_ >= 1
    reads = [(tmp_path / str(i)).stat().st_size for i in range(CHANGED_PARTS)]
    assert reads == [clf.n_iter_ + 1] * CHANGED_PARTS


@pytest.mark.parametrize("params", [{"dual": False}, {"loss": "hinge", "cache_bytes": "10%"}])
def test_a_part_of_no_rows_counts_none_in_the_first_read(client, params):
    """A worker whose partitions are all empty: its part's first read counts no labels
    (first_read's allow_empty) and the fit trains on the other part's rows."""
    X, y = noisy_linear_data(4_000, 5)
    chunks = (2_000, 0, 2_000, 0)  # partitions 1 and 3, the second part's, are empty
    Xd, yd = da.from_array(X, chunks=(chunks, (5,))), da.from_array(y, chunks=(chunks,))
    clf = LinearSVC(tol=1e-4, **params).fit(Xd, yd, client=client)
    assert [p["rows"] for p in clf.cluster_parts_] == [4_000, 0]
    assert clf.classes_.tolist() == [0, 1] and clf.duality_gap_ <= 1e-4


@pytest.mark.parametrize("kind", ["array", "parquet"])
def test_a_parts_first_read_samples_knowing_its_own_rows(tmp_path, monkeypatch, kind):
    """A cluster's part knows its rows before it reads them (a Dask Array's chunks, or its own Parquet
    files' footers: ``footer_rows`` of a subset counts its partitions only), and its first read's
    uniform sample is given them: it then copies about the rows it keeps and cuts them once, at the
    end, where without them it copied every row until its first cuts (``Sampler._bound``)."""
    import dask.dataframe as dd

    from dask_streamsvm.engine.cluster.newton import part_first_read
    from dask_streamsvm.engine.cluster.parts import Packed
    from dask_streamsvm.engine.data.parquet import footer_rows
    from dask_streamsvm.engine.data.source import DaskSource
    from dask_streamsvm.engine.primal import reads

    lengths = [7_000, 9_000, 8_000, 10_000, 6_000, 12_000]
    rng = np.random.default_rng(0)
    X = rng.standard_normal((sum(lengths), 4))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(X.shape[0]) > 0, 1, -1)
    if kind == "parquet":
        at = np.cumsum([0, *lengths])
        for i in range(len(lengths)):
            frame = pd.DataFrame(X[at[i] : at[i + 1]], columns=[f"f{j}" for j in range(4)])
            frame.assign(label=y[at[i] : at[i + 1]]).to_parquet(tmp_path / f"part-{i}.parquet")
        frame = dd.read_parquet(sorted(str(p) for p in tmp_path.glob("*.parquet")))
        source = DaskSource(frame.drop(columns="label"), frame["label"])
        assert source.parquet_plan is not None  # the fast path, whose footers count the rows
    else:
        chunks = tuple(lengths)
        source = DaskSource(da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=(chunks,)))
    part = source.subset([1, 3, 5])
    assert footer_rows(source) == sum(lengths) and footer_rows(part) == 9_000 + 10_000 + 12_000
    given, cuts = [], []
    init, cut = reads.Sampler.__init__, reads.Sampler._cut

    def recorded(self, capacity, max_bytes=None, share=None, expected=None, whole=False):
        given.append(expected)
        init(self, capacity, max_bytes, share, expected, whole)

    def counted(self):
        cuts.append(self.count)
        cut(self)

    monkeypatch.setattr(reads.Sampler, "__init__", recorded)
    monkeypatch.setattr(reads.Sampler, "_cut", counted)
    first = part_first_read(Packed(part), FitPlan(dual=False), 4, 5_000, None)
    assert first.totals.rows == 31_000 and first.sample.X.shape[0] == 5_000
    assert given == [31_000]
    assert len(cuts) == 1 and cuts[0] < 6_000  # once, at the end, of about the rows it keeps


def _mapping_flags(array):
    """The ``VmFlags`` of the mapping that holds ``array``'s first byte (``/proc/self/smaps``)."""
    address, inside = array.__array_interface__["data"][0], False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(v, 16) for v in head.split("-"))
                inside = start <= address < end
            elif inside and line.startswith("VmFlags:"):
                return set(line.split()[1:])
    raise AssertionError("no mapping holds the array")


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads the mappings' flags from /proc")
@pytest.mark.parametrize("budget", [None, 10_000_000])
def test_a_part_that_holds_its_rows_reads_them_into_small_pages(tmp_path, budget):
    """A part whose rows fit its budget (the footers' rows at their dtype's bytes) keeps them as read
    to the fit's end: its first read makes each block of at least ``HELD_BLOCK_PAGES`` on pages of the
    usual size (a mapping advised ``MADV_NOHUGEPAGE``: ``nh``), where NumPy asks for huge pages, which
    a fresh worker paid for more than the read (docs/benchmarks.md, "The parts' held rows on small
    pages"); the same rows.  A part over its budget streams, its blocks NumPy's."""
    import mmap

    import dask.dataframe as dd

    from dask_streamsvm.engine.cluster.newton import part_first_read
    from dask_streamsvm.engine.cluster.parts import Packed
    from dask_streamsvm.engine.data.malloc import HELD_BLOCK_PAGES
    from dask_streamsvm.engine.data.source import DaskSource

    if not hasattr(mmap, "MADV_NOHUGEPAGE"):
        pytest.skip("no transparent huge pages to advise against")
    rows, width = 40_000, 16  # 5.1 MB a partition of float64: above HELD_BLOCK_PAGES
    assert rows * width * 8 > HELD_BLOCK_PAGES
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4 * rows, width))
    y = np.where(X[:, 0] > 0, 1, -1)
    for i in range(4):
        frame = pd.DataFrame(X[i * rows : (i + 1) * rows], columns=[f"f{j}" for j in range(width)])
        frame.assign(label=y[i * rows : (i + 1) * rows]).to_parquet(tmp_path / f"part-{i}.parquet")
    frame = dd.read_parquet(sorted(str(p) for p in tmp_path.glob("*.parquet")))
    source = DaskSource(frame.drop(columns="label"), frame["label"])
    assert source.parquet_plan is not None
    part = source.subset([1, 3])
    plan = FitPlan(dual=False, **({} if budget is None else {"cache_bytes": budget}))  # none outside a worker
    first = part_first_read(Packed(part), plan, width, 1_000, None, keep=True)
    if budget is not None:  # 2 x 40,000 rows of 16 float64: 5.1 MB each, 10.2 MB over 10 MB
        assert first.held is None
        assert "nh" not in _mapping_flags(part.load(0).X)
        return
    blocks = first.held.blocks
    assert [b.partition for b in blocks] == [1, 3]
    for block in blocks:
        assert "nh" in _mapping_flags(block.X)  # small pages
        np.testing.assert_array_equal(block.X, X[block.partition * rows : (block.partition + 1) * rows])
    loaded = part.load(0)  # outside the first read: NumPy's memory, as a streaming read's
    assert "nh" not in _mapping_flags(loaded.X)
    np.testing.assert_array_equal(loaded.X, blocks[0].X)

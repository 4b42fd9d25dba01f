"""``cluster="sbm"`` (issue 52): SBM's trainer on one worker, the parts' partitions read on their own
workers and brought to it, so that its passes are one machine's whatever the workers."""

import warnings

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
from sklearn.svm import LinearSVC as SkLinearSVC

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.cluster import fit as cluster_fit
from dask_streamsvm.engine.cluster import root_sbm
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.dual.sbm import BlockTrainer
from dask_streamsvm.engine.dual.trainer import run_trainer

from ._helpers import load_libsvm_dataset, noisy_linear_data, two_worker_client

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")
distributed = pytest.importorskip("distributed")
key_split = pytest.importorskip("distributed.utils").key_split


@pytest.fixture(scope="module")
def client():
    with two_worker_client() as c:
        yield c


@pytest.fixture
def plans(monkeypatch):
    """The plans the cluster's SBM trained with (the client's call of :func:`fit_sbm_root`)."""
    seen = []
    fit = root_sbm.fit_sbm_root

    def recorded(client, placement, plan, n_features, on_pass=None):
        seen.append(plan)
        return fit(client, placement, plan, n_features, on_pass=on_pass)

    monkeypatch.setattr(cluster_fit, "fit_sbm_root", recorded)
    return seen


def _hinge_primal(X, sign, C, w):
    return 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - sign * (X @ w)).sum())


def test_sbm_on_a_cluster_is_one_machines_sbm_bit_for_bit(client, plans):
    """a9a at a 10% cache: the model, the certificates and every pass's record of the cluster's SBM
    are those of one machine's trainer on the same partitions, plan and seed (the blocks stamped and
    fed in one machine's order), and it reaches 1e-3 in a few passes where CoCoA+ takes hundreds."""
    X, y = load_libsvm_dataset("a9a")
    X = X.toarray()
    chunk = -(-len(y) // 8)
    Xd, yd = da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk)
    clf = LinearSVC(
        loss="hinge", C=1.0, fit_intercept=False, cache_bytes="10%", tol=1e-3, max_iter=20, random_state=0,
        cluster="sbm",
    ).fit(Xd, yd, client=client)  # fmt: skip
    assert {r["method"] for r in clf.history_} == {"sbm"}
    assert clf.duality_gap_ <= 1e-3 and clf.n_iter_ <= 4
    (plan,) = plans
    # the plan's rows share of 10%, three quarters of it the cache (ROOT_CACHE)
    assert plan.solver == "sbm" and plan.cache_bytes == pytest.approx(3 * plan.block_bytes, rel=1e-6)
    with dask.config.set(scheduler="synchronous"):
        source = DaskSource(Xd, yd)
        one = run_trainer(source, plan, lambda store: BlockTrainer(source, plan, store))
    np.testing.assert_array_equal(clf.coef_.ravel(), one.W[0, :-1])
    assert clf.duality_gap_ == one.certificates[0].relative_gap
    keys = ("pass", "primal", "dual", "gap", "row_visits", "blocks", "cache_rows", "rows_read")
    cluster_passes = [{k: r[k] for k in keys} for r in clf.history_]
    assert cluster_passes == [{k: r[k] for k in keys} for r in one.history]
    # the certificate is true: the optimum (scikit-learn, to 1e-10) lies within the gap
    reference = SkLinearSVC(loss="hinge", C=1.0, fit_intercept=False, tol=1e-10, max_iter=200_000, dual=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference.fit(X, y)
    sign = np.where(y > 0, 1.0, -1.0)
    best = _hinge_primal(X, sign, 1.0, reference.coef_.ravel())
    assert clf.objective_ == pytest.approx(_hinge_primal(X, sign, 1.0, clf.coef_.ravel()), rel=1e-10)
    assert (clf.objective_ - best) / clf.objective_ <= clf.duality_gap_ + 1e-9


def test_the_root_cache_takes_three_quarters_of_the_budget():
    """ROOT_CACHE: the cache's share of an "auto" plan's bytes; a block size or a solver named keeps
    its own split."""
    from dask_streamsvm.engine.plan.problem import FitPlan

    plan = FitPlan(loss="hinge", cache_bytes=1_000_000, solver="auto")
    sbm = root_sbm.root_plan(plan)
    assert (sbm.solver, sbm.cache_bytes, sbm.block_bytes) == ("sbm", 750_000, 250_000)
    given = root_sbm.root_plan(plan.replace(block_bytes=300_000))
    assert (given.cache_bytes, given.block_bytes) == (1_000_000, 300_000)
    named = root_sbm.root_plan(FitPlan(loss="hinge", cache_bytes=1_000_000, solver="sbm"))
    assert (named.cache_bytes, named.block_bytes) == (1_000_000, 1_000_000)


def test_the_parts_are_read_on_their_workers_and_trained_on_the_first(client, tmp_path):
    """Every partition (a Parquet file) is read by a task on the worker of its part, and every block
    is fed to the trainer on the first part's worker (Dask's task stream says where each task ran)."""
    X, y = noisy_linear_data(6_000, 5, seed=3)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)]).assign(label=y)
    for i in range(8):
        frame.iloc[750 * i : 750 * (i + 1)].to_parquet(tmp_path / f"part-{i}.parquet")
    clf = LinearSVC(loss="hinge", C=0.1, cache_bytes="10%", tol=1e-3, random_state=0, cluster="sbm")
    with distributed.get_task_stream(client) as stream:
        clf.fit(str(tmp_path), "label", client=client)
    assert clf.duality_gap_ <= 1e-3
    parts = clf.cluster_parts_
    assert len(parts) == 2 and sum(p["rows"] for p in parts) == 6_000
    where = {}
    for task in stream.data:
        where.setdefault(key_split(task["key"]), set()).add(task["worker"])
    root = parts[0]["worker"]
    assert where["take_block"] == where["end_pass"] == where["start_root"] == {root}
    reads = [t for t in stream.data if key_split(t["key"]) == "part_block"]
    assert len(reads) == 8 * (clf.n_iter_ + 1)  # each pass reads each of the 8 partitions once
    owner = {p: part["worker"] for part in parts for p in part["partitions"]}
    assert {t["worker"] for t in reads} == set(owner.values())  # both workers read their parts


def test_a_repeated_step_leaves_the_trainer_as_it_was():
    """Each step names its number: a step repeated (a retried task) or out of order raises StaleRound
    and feeds nothing, so the trainer's dual variables are never changed twice by one block."""
    from dask_streamsvm.engine.cluster.cocoa_local import StaleRound
    from dask_streamsvm.engine.data.source import Block
    from dask_streamsvm.engine.plan.problem import FitPlan

    X, y = noisy_linear_data(200, 3, seed=1)
    classes = np.unique(y)
    plan = FitPlan(loss="hinge", cache_bytes=20_000, solver="sbm").with_labels(
        classes, np.array([np.sum(y == c) for c in classes]), classes
    )
    root = root_sbm.RootSBM(plan, 3)

    def block(p, lo, hi):
        return Block(partition=p, X=X[lo:hi].copy(), y=y[lo:hi].copy(), sample_weight=np.ones(hi - lo))

    root.take(block(0, 0, 100), 0, 0, 0)
    state = (root.trainer.W.copy(), root.store.sums.copy(), root.trainer.stats["rows"])
    with pytest.raises(StaleRound, match="version 0 of a trainer now at version 1"):
        root.take(block(0, 0, 100), 0, 0, 0)
    with pytest.raises(StaleRound):
        root.end(0, 5)
    assert root.version == 1 and root.trainer.stats["rows"] == state[2]
    np.testing.assert_array_equal(root.trainer.W, state[0])
    np.testing.assert_array_equal(root.store.sums, state[1])
    # a worker short of memory may spill the trainer to disk between two steps: the copy goes on
    # exactly as the trainer would have
    import pickle

    copy = pickle.loads(pickle.dumps(root))
    for trainer in (root, copy):
        trainer.take(block(1, 100, 200), 0, 1, 1)
    records, W, done = root.end(0, 2)
    assert [r["pass"] for r in records] == [0] and not done and root.version == 3
    copied, W_copy, _ = copy.end(0, 2)
    np.testing.assert_array_equal(W, W_copy)
    assert [r["primal"] for r in copied] == [r["primal"] for r in records]
    assert np.any(root.trainer.W != 0)  # the pass trained its rows
    np.testing.assert_array_equal(copy.trainer.W, root.trainer.W)


def test_sbm_on_a_cluster_refuses_streamsvms_schedule(client):
    X, y = noisy_linear_data(400, 3, seed=2)
    Xd, yd = da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match=r"cluster='sbm' trains SBM's blocks .* solver='streamsvm'"):
        LinearSVC(loss="hinge", solver="streamsvm", cluster="sbm").fit(Xd, yd, client=client)

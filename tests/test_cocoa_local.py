"""CoCoA+'s local solver for parts larger than cache_bytes
(:mod:`dask_streamsvm.engine.cluster.cocoa_local`), run here in one process: the rounds a cluster's
workers run, checked against the exact quantities."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm.engine.cluster.cocoa_local import StaleRound, StreamingPart
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.plan.problem import FitPlan

from ._helpers import load_libsvm_dataset

C = 0.1


def _parts(X, y, sigma, cache_bytes, n_parts=2, chunk=500):
    source = DaskSource(da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk))
    plan = FitPlan(C=C, loss="hinge", cache_bytes=cache_bytes, block_bytes=cache_bytes, seed=3)
    plan = plan.with_labels(*source.label_counts())
    ids = np.arange(source.n_partitions)
    return [
        StreamingPart(source.subset(ids[j::n_parts].tolist()), plan, sigma, X.shape[1])
        for j in range(n_parts)
    ]


def _hinge_sum(X, y, W):
    return C * np.maximum(0.0, 1.0 - y * (X @ W[0, :-1] + W[0, -1])).sum()


@pytest.fixture(scope="module")
def data():
    X, y = load_libsvm_dataset("ijcnn1")
    return X[:4000].toarray(), y[:4000]


def test_rounds_read_from_the_source_keep_w_and_the_certificate_exact(data):
    """Every round: the parts' loss sums are the data's at the broadcast w, the dual they certify
    never falls (sigma' = K is safe), and w stays exactly the sum of the parts' alpha_i y_i x_i."""
    X, y = data
    parts = _parts(X, y, sigma=4.0, cache_bytes=40_000, n_parts=4)
    W = np.zeros((1, X.shape[1] + 1))
    duals, gaps = [], []
    for r in range(12):
        updates = [p.run_round(W, r) for p in parts]
        sums = np.sum([u[1] for u in updates], axis=0)
        half = 0.5 * float(W[0] @ W[0])
        assert sums[0, 0] == pytest.approx(_hinge_sum(X, y, W), rel=1e-12, abs=1e-9)
        primal, dual = half + sums[0, 0], sums[0, 1] - half - 0.5 * sums[0, 2]
        assert dual <= primal * (1 + 1e-12)
        duals.append(dual)
        gaps.append((primal - dual) / primal)
        W = W + np.sum([u[0] for u in updates], axis=0)
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(duals, duals[1:], strict=False))
    assert gaps[-1] < 0.05 < gaps[0]
    assert all(p.stats["memory_bytes"] > 0 for p in parts)
    shares = [p.weights() for p in parts]
    np.testing.assert_allclose(np.sum([w for w, _ in shares], axis=0), W, rtol=1e-9, atol=1e-12)
    assert [v for _, v in shares] == [13] * 4  # the read that rebuilt w counts as a change


def test_a_round_for_a_version_the_part_has_left_changes_nothing(data):
    X, y = data
    (part,) = _parts(X, y, sigma=1.0, cache_bytes=40_000, n_parts=1)
    W = np.zeros((1, X.shape[1] + 1))
    dW, _ = part.run_round(W, 0)
    before = part.store.alpha.copy()
    with pytest.raises(StaleRound, match="version 0 of a part now at version 1"):
        part.run_round(W + dW, 0)
    np.testing.assert_array_equal(part.store.alpha, before)
    assert part.version == 1


# -- sparse CoCoA+ traffic: a part's columns of w, and its change on them only ------------------


def _few_columns_part(n_features=6_000, seed=0):
    from dask_streamsvm.engine.cluster import Part
    from dask_streamsvm.engine.plan.layout import as_kernel_rows

    rng = np.random.default_rng(seed)
    X = sp.random(300, 400, density=0.03, format="csr", random_state=seed)
    X = sp.hstack([sp.csr_matrix((300, 1000)), X, sp.csr_matrix((300, n_features - 1400))], format="csr")
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    return Part(as_kernel_rows(X), y[None, :], np.ones((1, 300)), False, 1.0, 2.0, n_features), X


def test_a_part_on_few_columns_rounds_the_same_on_its_columns_of_w():
    """A part given only the columns of w its rows touch makes the same round as with all of w,
    and sends its change on those columns only."""
    from dask_streamsvm.engine.cluster import Change, cocoa_round, narrow

    part, X = _few_columns_part()
    assert part.cols.tolist() == np.unique(X.indices).tolist() + [6_000]  # and the bias's
    W = np.random.default_rng(1).standard_normal((1, 6_001))
    whole = cocoa_round(part, W, 3, 7)
    few = cocoa_round(part, narrow(W, part.cols), 3, 7)
    np.testing.assert_array_equal(whole.alpha, few.alpha)
    np.testing.assert_array_equal(whole.update[1], few.update[1])
    assert isinstance(few.update[0], Change) and few.update[0].nbytes < W.nbytes / 5
    np.testing.assert_array_equal(whole.update[0].dense(), few.update[0].dense())


def test_changes_add_on_the_union_of_their_columns():
    from dask_streamsvm.engine.cluster import Change, add_changes, touched_columns

    rng = np.random.default_rng(0)
    width = 100
    a = Change(np.array([1, 5, 9]), rng.standard_normal((2, 3)), width)
    b = Change(np.array([5, 7]), rng.standard_normal((2, 2)), width)
    total = add_changes(a, b)
    assert isinstance(total, Change) and total.cols.tolist() == [1, 5, 7, 9]
    np.testing.assert_allclose(total.dense(), a.dense() + b.dense())
    wide = Change(np.arange(0, 40), rng.standard_normal((2, 40)), width)  # the union passes a third
    np.testing.assert_allclose(add_changes(wide, a), wide.dense() + a.dense())
    dense = rng.standard_normal((2, width))
    np.testing.assert_allclose(add_changes(dense, b), dense + b.dense())
    rows = (np.array([0, 2, 3]), np.array([4, 8, 4], dtype=np.int32), np.ones(3))
    assert touched_columns(rows, 0.0, 30).tolist() == [4, 8]
    rows = (np.array([0, 2, 3]), np.array([1, 3, 1], dtype=np.int32), np.ones(3))
    assert touched_columns(rows, 0.0, 4) is None  # 2 of 5 columns, more than a third: sent whole
    assert touched_columns(np.ones((3, 4)), 1.0, 4) is None  # dense rows touch every column


def test_a_round_started_before_w_was_rebuilt_changes_nothing(data):
    """Recovery rebuilds w from every part's alpha (``weights``): a round of the version before,
    still queued on a worker, must not change alpha afterwards, even before the first round."""
    X, y = data
    (part,) = _parts(X, y, sigma=1.0, cache_bytes=40_000, n_parts=1)
    W = np.zeros((1, X.shape[1] + 1))
    share, version = part.weights()
    assert version == 1 and not share.any()
    with pytest.raises(StaleRound):
        part.run_round(W, 0)
    part.run_round(W, version)
    assert part.version == 2

"""CoCoA+'s local solver for parts larger than cache_bytes (:mod:`dask_streamsvm.engine.cocoa_local`), run
here in one process: the rounds a cluster's workers run, checked against the exact quantities."""

import dask.array as da
import numpy as np
import pytest

from dask_streamsvm.engine.cocoa_local import StaleRound, StreamingPart
from dask_streamsvm.engine.problem import FitPlan
from dask_streamsvm.engine.source import DaskSource

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

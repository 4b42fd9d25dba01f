"""``Standardize()`` on a cluster: the columns' moments combined exactly (Chan et al.'s pairwise
update), on their own and summed in the tree on a LocalCluster of two worker processes."""

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.cluster.moments import ScaledPacked, learn_scaler, prepared_scaler
from dask_streamsvm.engine.cluster.parts import place
from dask_streamsvm.engine.cluster.runtime import submit
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.plan.problem import FitPlan
from dask_streamsvm.features import Standardize
from dask_streamsvm.features.column_maps import ColumnMoments
from dask_streamsvm.io import csr_to_dask

from ._helpers import two_worker_client

distributed = pytest.importorskip("distributed")


def _tree(moments):
    """``moments`` combined in pairs, level by level, an odd one out moving up (as tree_sum adds)."""
    level = list(moments)
    while len(level) > 1:
        paired = [level[i].combine(level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = paired + level[len(paired) * 2 :]
    return level[0]


def _blocks(rng, n_blocks, d, sparse=False):
    blocks = []
    for _ in range(n_blocks):
        X = 1e4 + rng.standard_normal((int(rng.integers(1, 40)), d)) * [1.0, 1e-3, 1e5, 0.0][:d]
        if sparse:
            X[rng.random(X.shape) < 0.6] = 0.0
            X = sp.csr_matrix(X)
        blocks.append(X)
    return blocks


def _assert_scales_close(actual, desired):
    """Two groupings' means within 1e-12 relative, and their scales within 1e-12 or, for a column
    whose mean is far larger than its spread, ``eps |mean| / std`` (the grouping changes the rounding
    of the means' differences, ``delta``: measured up to 0.2 eps |mean| / std over 300 draws)."""
    np.testing.assert_allclose(actual.mean_, desired.mean_, rtol=1e-12, atol=0)
    tolerance = np.maximum(1e-12, np.finfo(float).eps * np.abs(desired.mean_) / desired.scale_)
    assert np.all(np.abs(actual.scale_ - desired.scale_) <= tolerance * desired.scale_)


# -- the accumulator, without a cluster ---------------------------------------------------------------


@pytest.mark.parametrize("n_blocks", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("sparse", [False, True])
def test_moments_combined_in_pairs_are_the_moments_of_all_rows(n_blocks, sparse):
    rng = np.random.default_rng(n_blocks)
    blocks = _blocks(rng, n_blocks, 4, sparse)
    whole = sp.vstack(blocks).toarray() if sparse else np.vstack(blocks)
    tree = _tree([ColumnMoments.of_block(X) for X in blocks])
    assert tree.rows == whole.shape[0] and tree.sparse is sparse
    np.testing.assert_allclose(tree.mean, whole.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(tree.m2[:3], whole.var(axis=0)[:3] * whole.shape[0], rtol=1e-9)
    in_order = Standardize().learn(blocks, 4)
    by_pairs = Standardize().learn_moments(tree)
    _assert_scales_close(by_pairs, in_order)
    assert sparse or by_pairs.scale_[3] == 1.0  # a constant column (dense: sparse rows hold zeros)
    if n_blocks == 1:  # one block: the same bits
        assert np.array_equal(tree.mean, ColumnMoments.of_block(blocks[0]).mean)


def test_the_combination_is_chans_update():
    a = ColumnMoments.of_block(np.array([[1.0], [3.0]]))  # mean 2, m2 2
    b = ColumnMoments.of_block(np.array([[10.0], [11.0], [12.0]]))  # mean 11, m2 2
    both = a.combine(b)
    assert both.rows == 5
    assert both.mean[0] == 2.0 + 9.0 * (3 / 5)  # mean_a + delta n_b / n
    assert both.m2[0] == 2.0 + 2.0 + 81.0 * (2 * 3 / 5)  # m2_a + m2_b + delta^2 n_a n_b / n
    all_rows = np.array([1.0, 3.0, 10.0, 11.0, 12.0])
    assert both.m2[0] == pytest.approx(((all_rows - all_rows.mean()) ** 2).sum(), rel=1e-15)


def test_an_empty_side_changes_nothing_and_keeps_the_bits():
    m = ColumnMoments.of_block(sp.csr_matrix(np.array([[0.0, 2.5], [1e-3, 0.0], [7.0, 1.0]])))
    empty = ColumnMoments.empty(2)
    assert empty.sparse is None and empty.combine(empty).sparse is None and empty.combine(empty).rows == 0
    for combined in (m.combine(empty), empty.combine(m), ColumnMoments.of_block(np.zeros((0, 2))).combine(m)):
        assert combined.rows == 3 and combined.sparse is True
        assert np.array_equal(combined.mean, m.mean) and np.array_equal(combined.m2, m.m2)
    with pytest.raises(ValueError, match="found no rows"):
        Standardize().learn_moments(empty)


def test_huge_values_combine_in_units_of_a_power_of_two():
    rng = np.random.default_rng(3)
    ordinary = [rng.standard_normal((30, 2)) * [1.0, 5.0] for _ in range(3)]
    huge = [X * [1e300, 1.0] for X in ordinary]  # column 0: squares overflow float64
    parts = [ColumnMoments.of_block(X) for X in huge]
    assert parts[0].shift[0] > 0 and parts[0].shift[1] == 0
    big = Standardize().learn_moments(_tree(parts))
    small = Standardize().learn_moments(_tree([ColumnMoments.of_block(X) for X in ordinary]))
    assert np.isfinite(big.scale_).all()
    np.testing.assert_allclose(big.scale_ / [1e300, 1.0], small.scale_, rtol=1e-12)
    np.testing.assert_allclose(big.mean_ / [1e300, 1.0], small.mean_, rtol=1e-12)
    assert big.scale_[1] == small.scale_[1]  # a column that needs no unit: the same bits
    # a block with huge values after one without (and before): the units grow, exactly
    mixed = [ordinary[0], huge[1], ordinary[2] * [1e290, 1.0]]
    learned = Standardize().learn_moments(_tree([ColumnMoments.of_block(X) for X in mixed]))
    np.testing.assert_allclose(learned.scale_, Standardize().learn(mixed, 2).scale_, rtol=1e-12)


def test_the_flags_and_parameters_are_checked():
    dense, csr = np.ones((2, 2)), sp.csr_matrix(np.eye(2))
    assert ColumnMoments.of_block(dense).combine(ColumnMoments.of_block(csr)).sparse is True
    with pytest.raises(ValueError, match="would centre sparse rows"):
        Standardize(with_mean=True).learn([dense, csr], 2)
    with pytest.raises(ValueError, match="with_mean must be True, False or 'auto'"):
        Standardize(with_mean="yes").moments([], 2)
    assert prepared_scaler(FitPlan(scaler=Standardize(), bias=0.0)).with_mean is False
    assert prepared_scaler(FitPlan(scaler=Standardize(), bias=1.0)).with_mean == "auto"


# -- on a LocalCluster of two worker processes --------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    with two_worker_client(memory_limit="1GiB") as c:
        yield c


def _cluster_scaler(client, X, y, w, bias=1.0):
    source = DaskSource(X, y, w)
    plan, placement = place(client, source, FitPlan(scaler=Standardize(), bias=bias))
    scaler, scaled = learn_scaler(client, placement, plan, source.n_features)
    return source, placement, scaler, scaled


def _one_machine(blocks, weights, parts, bias=1.0):
    """The one machine's scales over ``blocks`` in order, and those of the parts' moments (each
    part's blocks in order) combined in the tree: ``(in order, by parts)``."""
    plan = FitPlan(scaler=Standardize(), bias=bias)
    rows = [X[w > 0] for X, w in zip(blocks, weights, strict=True)]
    in_order = prepared_scaler(plan).learn(rows, blocks[0].shape[1])
    scaler = prepared_scaler(plan)
    by_parts = scaler.learn_moments(
        _tree([scaler.moments([rows[p] for p in ids], rows[0].shape[1]) for ids in parts])
    )
    return in_order, by_parts


def _assert_same(scaler, in_order, by_parts):
    assert np.array_equal(scaler.mean_, by_parts.mean_) and np.array_equal(scaler.scale_, by_parts.scale_)
    _assert_scales_close(scaler, in_order)
    assert scaler.n_samples_seen_ == in_order.n_samples_seen_


def _partitions_of(placement):
    return [list(ids) for ids in placement.partitions]


def test_dense_parts_learn_the_one_machines_scales_and_read_scaled_rows(client):
    rng = np.random.default_rng(0)
    X = 1e6 + rng.standard_normal((400, 3)) * [1.0, 1e3, 1e-2]
    y = np.tile([0, 1], 200)
    w = np.ones(400)
    w[::7] = 0.0
    X[::7] = -1e9  # rows of weight 0, far from the others: counted, they would move every scale
    source, placement, scaler, scaled = _cluster_scaler(
        client, da.from_array(X, chunks=(50, -1)), da.from_array(y, chunks=50), da.from_array(w, chunks=50)
    )
    assert len(placement.parts) == 2
    blocks, weights = np.split(X, 8), np.split(w, 8)
    in_order, by_parts = _one_machine(blocks, weights, _partitions_of(placement))
    _assert_same(scaler, in_order, by_parts)
    assert scaler.n_samples_seen_ == int((w > 0).sum()) and np.all(scaler.mean_ != 0.0)
    # the returned parts read scaled rows, as the one machine's source does after its scales' read
    assert scaled.rows == placement.rows and scaled.partitions == placement.partitions
    worker, packed = scaled.parts[1]
    assert isinstance(packed, ScaledPacked) and packed.nbytes > placement.parts[1][1].nbytes
    first = placement.partitions[1][0]
    on_worker = submit(client, _first_rows, packed, worker=worker).result()  # the data the cluster holds
    np.testing.assert_array_equal(on_worker, scaler.scale_rows(blocks[first]))
    assert not np.array_equal(on_worker, blocks[first])


def _first_rows(packed):
    with dask.config.set(scheduler="sync"):
        return packed.source().load(0).X


def test_csr_parts_with_huge_values_and_no_intercept(client):
    rng = np.random.default_rng(1)
    dense = rng.standard_normal((300, 4)) * [1e300, 1.0, 3.0, 1e-5]
    dense[rng.random(dense.shape) < 0.5] = 0.0
    X = sp.csr_matrix(dense)
    y = np.tile([0, 1], 150)
    w = rng.random(300)
    w[:40] = 0.0
    Xd, yd = csr_to_dask(X, y, 6)
    wd = da.from_array(w, chunks=50)
    source, placement, scaler, _ = _cluster_scaler(client, Xd, yd, wd, bias=0.0)
    blocks = [X[i : i + 50] for i in range(0, 300, 50)]
    in_order, by_parts = _one_machine(blocks, np.split(w, 6), _partitions_of(placement), bias=0.0)
    _assert_same(scaler, in_order, by_parts)
    assert np.all(scaler.mean_ == 0.0) and np.isfinite(scaler.scale_).all() and scaler.scale_[0] > 1e299


def test_a_part_without_rows_of_positive_weight(client):
    X = np.arange(80.0).reshape(40, 2) ** 1.5
    y = np.tile([0, 1], 20)
    w = np.ones(40)
    w[10:20] = w[30:40] = 0.0  # partitions 1 and 3: the second part's, all weight 0
    source, placement, scaler, _ = _cluster_scaler(
        client, da.from_array(X, chunks=(10, -1)), da.from_array(y, chunks=10), da.from_array(w, chunks=10)
    )
    assert _partitions_of(placement) == [[0, 2], [1, 3]]
    in_order, by_parts = _one_machine(np.split(X, 4), np.split(w, 4), [[0, 2], [1, 3]])
    _assert_same(scaler, in_order, by_parts)
    assert scaler.n_samples_seen_ == 20
    assert np.array_equal(scaler.mean_, in_order.mean_)  # the empty part leaves the other's bits


def test_the_cluster_scales_are_the_one_machine_fits(client):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 3)) * [255.0, 1.0, 40.0] + [128.0, 0.0, -7.0]
    y = (X[:, 0] - 128.0 + 50.0 * X[:, 1] > 0).astype(int)
    Xd, yd = da.from_array(X, chunks=(60, -1)), da.from_array(y, chunks=60)
    clf = LinearSVC(feature_map=Standardize(), cluster=None, random_state=0).fit(Xd, yd)
    _, _, scaler, _ = _cluster_scaler(client, Xd, yd, None)
    _assert_scales_close(scaler, clf.standardize_)

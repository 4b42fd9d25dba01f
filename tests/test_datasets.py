import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm.datasets import A9A_N_FEATURES, load_a9a, load_a9a_dask
from dask_streamsvm.io import csr_to_dask


@pytest.mark.parametrize(("subset", "n_rows"), [("train", 32561), ("test", 16281)])
def test_load_a9a_shapes_and_labels(subset, n_rows):
    X, y = load_a9a(subset)
    assert sp.issparse(X) and X.format == "csr"
    assert X.shape == (n_rows, A9A_N_FEATURES)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.indices.dtype == np.int32
    assert set(np.unique(y).tolist()) == {-1.0, 1.0}


def test_load_a9a_dask_matches_in_memory():
    X_ref, y_ref = load_a9a("test")
    X, y = load_a9a_dask("test", n_partitions=7)
    assert X.shape == X_ref.shape and y.shape == y_ref.shape
    assert X.numblocks == (7, 1)
    assert X.chunks[0] == y.chunks[0]
    assert isinstance(X._meta, sp.csr_matrix)
    blocks = [X.blocks[i].compute() for i in range(X.numblocks[0])]
    assert all(isinstance(b, sp.csr_matrix) for b in blocks)
    assert [b.shape[0] for b in blocks] == list(X.chunks[0])
    assert (sp.vstack(blocks) != X_ref).nnz == 0
    np.testing.assert_array_equal(y.compute(), y_ref)


def test_load_a9a_dask_is_lazy_graph_of_one_task_per_block():
    X, y = load_a9a_dask("train", n_partitions=4)
    # Nothing computed yet: each block is a task in the graph.
    assert len(X.to_delayed().ravel()) == 4
    assert len(y.to_delayed().ravel()) == 4
    assert X.shape == (32561, A9A_N_FEATURES)


def test_load_a9a_dask_single_partition_and_more_partitions_than_rows():
    X, y = load_a9a("test")
    Xd, yd = csr_to_dask(X[:5], y[:5], n_partitions=16)
    assert Xd.numblocks == (5, 1) and yd.chunks == ((1, 1, 1, 1, 1),)
    X1, _ = load_a9a_dask("test", n_partitions=1)
    assert X1.numblocks == (1, 1)


@pytest.mark.parametrize("subset", ["validation", None, "TRAIN"])
def test_bad_subset(subset):
    with pytest.raises(ValueError, match="subset must be 'train' or 'test'"):
        load_a9a(subset)
    with pytest.raises(ValueError, match="subset must be 'train' or 'test'"):
        load_a9a_dask(subset)


@pytest.mark.parametrize("n_partitions", [0, -1, 2.5, "4", True])
def test_bad_n_partitions(n_partitions):
    with pytest.raises(ValueError, match="n_partitions must be a positive integer"):
        load_a9a_dask("test", n_partitions=n_partitions)

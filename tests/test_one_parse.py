"""Text read once: the first read of a LIBSVM or CSV source counts the classes while it trains."""

import os

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from dask_streamsvm import LinearSVC, io
from dask_streamsvm.engine import choice
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.plan.sizes import stored_bytes
from dask_streamsvm.io import read_libsvm

from ._helpers import load_libsvm_dataset, reads_ended


@pytest.fixture
def counts(monkeypatch):
    """Counts the reads that count the classes alone (DaskSource.label_counts)."""
    calls = []
    count = DaskSource.label_counts

    def counted(self, *args, **kwargs):
        calls.append(1)
        return count(self, *args, **kwargs)

    monkeypatch.setattr(DaskSource, "label_counts", counted)
    return calls


def _text(tmp_path, X, y, parts=6):
    path = tmp_path / "rows.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return str(path), os.path.getsize(path) // parts + 1


def _model(**kw):
    params = dict(C=1.0, dual=True, solver="sbm", cache_bytes="100KB", deterministic=True, random_state=0,
                  tol=1e-4, max_iter=40)  # fmt: skip
    return LinearSVC(**{**params, **kw})


def _counted_first(monkeypatch):
    """Make the next fits count the classes in a read of their own, as before."""
    monkeypatch.setattr(choice, "trains_while_counting", lambda *args: False)


@pytest.mark.parametrize("solver", ["sbm", "streamsvm"])
def test_the_first_read_of_text_trains_while_it_counts_and_parses_each_block_once(
    solver, tmp_path, parses, counts, monkeypatch
):
    X, y = load_libsvm_dataset("a9a")
    path, blocksize = _text(tmp_path, X[:6000], y[:6000])
    one = _model(solver=solver).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    reads_ended()
    n_partitions = len(parses)
    assert n_partitions >= 5 and counts == []  # no read counted the classes alone
    assert one.history_[0]["rows_read"] == 6000  # the first record is the first read's, trained on
    assert one.history_[-1]["gap"] <= 1e-4
    _counted_first(monkeypatch)
    del parses[:]
    two = _model(solver=solver).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    reads_ended()
    assert len(parses) == n_partitions and counts == [1]  # the count read parsed, training read the spill
    np.testing.assert_array_equal(one.coef_, two.coef_)  # the same fit, bit for bit
    np.testing.assert_array_equal(one.intercept_, two.intercept_)
    assert [r["gap"] for r in one.history_] == [r["gap"] for r in two.history_]


@pytest.mark.parametrize("multi_class", ["ovr", "crammer_singer"])
def test_a_class_first_seen_after_the_first_partition_counts_again_from_the_spill(
    multi_class, tmp_path, parses, counts, monkeypatch
):
    """Rows sorted so that class 2 appears only in the last partitions: the guess from the first
    partition (classes 0 and 1) is wrong, the fit counts the classes (the spilled partitions from
    the spill) and trains from the start: one parse of each block, the counted fit's model."""
    rng = np.random.RandomState(0)
    X = rng.randn(3000, 6)
    y = np.argmax(X[:, :3] + 0.3 * rng.randn(3000, 3), axis=1)
    order = np.argsort(y == 2, kind="stable")  # class 2 last
    path, blocksize = _text(tmp_path, X[order], y[order])
    kw = {"multi_class": multi_class, "cache_bytes": "50KB"}
    one = _model(**kw).fit(*read_libsvm(path, n_features=6, blocksize=blocksize))
    reads_ended()
    parsed = len(parses)
    assert counts == [1]
    np.testing.assert_array_equal(one.classes_, [0, 1, 2])
    _counted_first(monkeypatch)
    del parses[:]
    two = _model(**kw).fit(*read_libsvm(path, n_features=6, blocksize=blocksize))
    reads_ended()
    n_partitions = len(parses)  # parsed by the count read, trained from the spill
    assert n_partitions >= 5
    # Once: the partitions the first read spilled are counted from the spill; those the reader was
    # still parsing when the new class stopped it (at most prefetch=2) may be parsed again.
    assert n_partitions <= parsed <= n_partitions + 2
    np.testing.assert_array_equal(one.coef_, two.coef_)
    assert one.history_[-1]["gap"] == two.history_[-1]["gap"]


def test_a_first_partition_of_one_class_counts_first(tmp_path, counts):
    rng = np.random.RandomState(1)
    X = rng.randn(2000, 5)
    y = np.sort((X[:, 0] > 0).astype(int))  # label-sorted: the first partition holds class 0 only
    path, blocksize = _text(tmp_path, X, y)
    clf = _model().fit(*read_libsvm(path, n_features=5, blocksize=blocksize))
    assert counts == [1]
    np.testing.assert_array_equal(clf.classes_, [0, 1])


def test_a_share_of_memory_is_resolved_from_the_first_partition(tmp_path, counts):
    """cache_bytes="10%" before the rows are counted: 10% of the first partition's rows times the
    partitions, in bytes as the cache stores them (equal partitions: 10% of the rows)."""
    X, y = load_libsvm_dataset("a9a")
    path, blocksize = _text(tmp_path, X[:6000], y[:6000], parts=4)
    X_text, y_text = read_libsvm(path, n_features=123, blocksize=blocksize)
    clf = _model(cache_bytes="10%").fit(X_text, y_text)
    assert counts == []
    first = X_text.blocks[0].compute()
    per_row = stored_bytes(first.shape[0], first.nnz, 1, first.dtype, sparse=True) / first.shape[0]
    expected = int(np.ceil(0.1 * first.shape[0] * X_text.numblocks[0] * per_row))
    used = max(r["cache_bytes"] for r in clf.history_)
    assert 0.8 * expected <= used <= expected, (used, expected)
    assert clf.history_[-1]["gap"] <= 1e-4


@pytest.mark.parametrize(
    "text",
    [
        b"1 3:0.5 10:1\n-1 2:1e-3\n",
        b"# a comment\n\n+1 1:1 7:2 # ends here\r\n-1\t4:3\n0 \n",
        b"2.5 1:1 200000:0.25\n-1 qid:3 5:1\n",  # qid: the scan declines, the parse reads it
        b"1\n-1\n",  # no features: width 1, as scikit-learn's reader gives
        b"1 0:1 5:2\n",
    ],
)
@pytest.mark.parametrize("zero_based", [False, True])
def test_the_width_scan_gives_the_parses_width(text, zero_based):
    """read_libsvm without n_features scans the indices only (kernels.text.largest_index): the
    same width as the parse, whatever the comments, blanks and line ends."""
    from dask_streamsvm.kernels.text import largest_index

    try:
        parsed = io._parse_block(text, None, np.float64, zero_based, "text")[0].shape[1]
    except ValueError:
        parsed = None  # one-based text with index 0: the fit's parse names the error
    if parsed is not None:
        assert io._max_index(text, zero_based, "text") == parsed
    scanned = largest_index(np.frombuffer(text, dtype=np.uint8), zero_based)
    assert scanned == -1 or max(scanned, 1) == parsed or (parsed is None and scanned >= 0)


def test_reading_the_width_parses_no_block(tmp_path, parses):
    X, y = load_libsvm_dataset("a9a")
    path, blocksize = _text(tmp_path, X[:3000], y[:3000])
    X_text, _ = read_libsvm(path, blocksize=blocksize)
    assert parses == [] and X_text.shape[1] == load_svmlight_file(path)[0].shape[1]

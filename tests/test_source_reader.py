"""Dask collections to blocks, and the reader thread."""

import threading
import time

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dask_streamsvm.engine.data.reader import Reader
from dask_streamsvm.engine.data.row_ids import RowIds
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.io import read_libsvm

from ._helpers import dataset_path, load_libsvm_dataset


@pytest.fixture
def small():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.where(rng.rand(40) > 0.5, 1, 0)
    return X, y


def test_dense_array_source_yields_checked_blocks(small):
    X, y = small
    src = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    assert src.n_partitions == 4 and src.n_features == 3 and not src.is_sparse
    blocks = [src.load(p) for p in range(4)]
    np.testing.assert_array_equal(np.vstack([b.X for b in blocks]), X)
    np.testing.assert_array_equal(np.concatenate([b.y for b in blocks]), y)
    assert all((b.sample_weight == 1).all() for b in blocks)


def test_sparse_chunks_stay_csr(small):
    X, y = small
    Xs = da.from_array(X, chunks=(10, 3)).map_blocks(sp.csr_matrix)
    src = DaskSource(Xs, da.from_array(y, chunks=10))
    assert src.is_sparse
    b = src.load(2)
    assert sp.isspmatrix_csr(b.X)
    np.testing.assert_array_equal(b.X.toarray(), X[20:30])


def test_dataframe_with_label_column_and_weights(small):
    X, y = small
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y, w=np.arange(40.0))
    ddf = dd.from_pandas(df, npartitions=3)
    src = DaskSource(ddf.drop(columns="w"), "label", ddf["w"])
    assert list(src.feature_names) == ["a", "b", "c"]
    blocks = [src.load(p) for p in range(src.n_partitions)]
    np.testing.assert_array_equal(np.vstack([b.X for b in blocks]), X)
    np.testing.assert_array_equal(np.concatenate([b.sample_weight for b in blocks]), np.arange(40.0))


def test_layout_errors_say_how_to_fix(small):
    X, y = small
    with pytest.raises(ValueError, match=r"column chunks.*X.rechunk\(\{1: -1\}\)"):
        DaskSource(da.from_array(X, chunks=(10, 2)), da.from_array(y, chunks=10))
    with pytest.raises(ValueError, match=r"y has 2 partitions but X has 4"):
        DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=20))
    with pytest.raises(ValueError, match=r"y's chunks \(5, 15, 10, 10\) do not match"):
        DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=((5, 15, 10, 10),)))
    with pytest.raises(TypeError, match="wrap it with dask.array.from_array"):
        DaskSource(da.from_array(X, chunks=(10, 3)), y)
    df = dd.from_pandas(pd.DataFrame({"a": [1.0, 2.0], "s": ["x", "y"], "t": [0, 1]}), npartitions=1)
    with pytest.raises(ValueError, match=r"non-numeric columns \['s'\]"):
        DaskSource(df, "t")
    with pytest.raises(ValueError, match="y='nope' names no column"):
        DaskSource(df, "nope")


def test_value_errors_name_partition_row_and_column(small):
    X, y = small
    X = X.copy()
    X[27, 1] = np.nan
    src = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    src.load(0)
    with pytest.raises(
        ValueError, match=r"partition 2, row 7 \(row 27 of the collection\), feature 1: the value is NaN"
    ):
        src.load(2)
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(t=y)
    src = DaskSource(dd.from_pandas(df, npartitions=4), "t")
    with pytest.raises(ValueError, match=r"partition 2, row 7, column 'b': the value is NaN"):
        src.load(2)
    w = np.ones(40)
    w[12] = -1
    src = DaskSource(
        da.from_array(X[:10].repeat(4, axis=0), chunks=(10, 3)),
        da.from_array(y, chunks=10),
        da.from_array(w, chunks=10),
    )
    with pytest.raises(
        ValueError, match=r"partition 1, row 2 \(row 12 of the collection\): sample_weight is -1.0"
    ):
        src.load(1)


def test_partition_with_other_columns_is_named():
    parts = [pd.DataFrame({"a": [1.0], "b": [2.0]}), pd.DataFrame({"a": [1.0], "c": [2.0]})]
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0], verify_meta=False)
    labels = dd.from_delayed([dask.delayed(pd.Series([k])) for k in (0, 1)], meta=pd.Series([0]))
    src = DaskSource(ddf, labels)
    src.load(0)
    with pytest.raises(
        ValueError, match=r"partition 1 has columns \['a', 'c'\].*missing \['b'\], unexpected \['c'\]"
    ):
        src.load(1)


def test_row_ids_are_learned_on_first_read_and_checked_after():
    ids = RowIds()
    np.testing.assert_array_equal(ids.ids(3, 2), [0, 1])
    np.testing.assert_array_equal(ids.ids(0, 3), [2, 3, 4])
    np.testing.assert_array_equal(ids.ids(3, 2), [0, 1])
    assert ids.n_rows == 5
    with pytest.raises(ValueError, match="partition 0 had 3 rows on the first pass and 4 now"):
        ids.ids(0, 4)


def test_read_libsvm_matches_scikit_learn(tmp_path):
    X_ref, y_ref = load_libsvm_dataset("a9a")
    X, y = read_libsvm(dataset_path("a9a"), n_features=123)
    assert X.shape[1] == 123 and np.isnan(X.shape[0])
    Xc, yc = dask.compute(X, y)
    assert (Xc != X_ref).nnz == 0
    np.testing.assert_array_equal(yc, y_ref)
    # Uncompressed files split into several partitions on line ends.
    import bz2

    plain = tmp_path / "a9a.txt"
    plain.write_bytes(bz2.open(dataset_path("a9a")).read())
    X2, y2 = read_libsvm(str(plain), blocksize="300kB")
    assert X2.numblocks[0] > 3 and X2.shape[1] == 123
    parts = dask.compute(*X2.to_delayed().ravel())
    assert sum(p.shape[0] for p in parts) == X_ref.shape[0]
    assert (sp.vstack(parts) != X_ref).nnz == 0
    # 32-bit row pointers and indices, so that scikit-learn's partial_fit (dask-ml's Incremental) takes them.
    assert {parts[0].indptr.dtype, parts[0].indices.dtype} == {np.dtype(np.int32)}
    from sklearn.linear_model import SGDClassifier

    SGDClassifier(random_state=0).partial_fit(parts[0], dask.compute(y2)[0][: parts[0].shape[0]], [-1, 1])


def _random_number(rng, odd):
    """A number as LIBSVM files write them; ``odd`` adds forms past the fast path (many digits, e30)."""
    form = rng.choice([0, 1, 2, 3, 4, 5, 6, 7] if odd else [0, 2, 3, 4, 7])
    v = rng.standard_normal() * 10.0 ** rng.integers(-6, 7)
    if form == 0:
        return str(int(v))
    if form == 1:
        return f"{v:.17g}"  # 17 digits: past the exact fast path, read by scikit-learn
    if form == 2:
        return f"{v:e}"
    if form == 3:
        return f"{v:.3E}".replace("E-0", "e-")
    if form == 4:
        return f"+{abs(v):.6f}"
    if form == 5:
        return f"{v:.25f}"  # more than 19 significant digits
    if form == 6:
        return f"{v:g}e30"
    return f"{v:.6g}"


def _random_libsvm(rng, n_features, malformed, odd):
    lines = []
    for _ in range(rng.integers(0, 30)):
        cols = np.sort(rng.choice(n_features, size=rng.integers(0, n_features + 1), replace=False))
        tokens = [_random_number(rng, odd) if rng.random() < 0.2 else str(rng.choice([-1, 1]))]
        tokens += [f"{j + 1}:{_random_number(rng, odd)}" for j in cols]
        line = " ".join(tokens)
        extra = rng.integers(10)
        if extra == 0:
            line += " # a comment 1:2"
        elif extra == 1:
            line = "\t" + line.replace(" ", "\t") + " \r"
        elif extra == 2:
            lines.append("   ")
        lines.append(line)
    text = "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
    if malformed and text:
        k = rng.integers(len(text))
        text = text[:k] + rng.choice(["x", ":", "1:", " 0:1", "nan", "qid:3 ", "::", ".", "e"]) + text[k:]
    return text.encode()


def test_compiled_libsvm_parser_equals_scikit_learn_bit_for_bit():
    """The fast path gives scikit-learn's rows exactly, or the block goes to scikit-learn's reader."""
    import io

    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm.io import _parse_block
    from dask_streamsvm.kernels.text import parse_block

    rng = np.random.default_rng(0)
    fast_used = errors = 0
    for case in range(600):
        malformed = case % 3 == 2
        data = _random_libsvm(rng, 6, malformed, odd=case % 2 == 1)
        try:
            X_ref, y_ref = load_svmlight_file(io.BytesIO(data), n_features=6)
        except ValueError:
            errors += 1
            with pytest.raises(ValueError, match="malformed LIBSVM data"):
                _parse_block(data, 6, np.float64, False, "block")
            continue
        fast_used += parse_block(data, 6, False) is not None
        for dtype in (np.float64, np.float32):
            X, y = _parse_block(data, 6, dtype, False, "block")
            X_ref, y_ref = load_svmlight_file(io.BytesIO(data), n_features=6, dtype=dtype)
            assert X.shape == X_ref.shape and X.dtype == dtype
            np.testing.assert_array_equal(X.indptr, X_ref.indptr)
            np.testing.assert_array_equal(X.indices, X_ref.indices)
            bits = f"u{X.data.itemsize}"
            np.testing.assert_array_equal(X.data.view(bits), X_ref.data.view(bits))
            np.testing.assert_array_equal(y.view(np.uint64), y_ref.view(np.uint64))
    assert fast_used > 100 and errors > 50  # both paths were exercised
    # At the fast path's edges: 18 and 19 digits (int64 would overflow), 2**53, exponents of 22 and 23.
    for text in (b"1 1:999999999999999999 2:9999999999999999999\n", b"-1 1:9007199254740993 3:1e22\n",
                 b"1 2:1e23 3:.5 4:1. 5:-0.000\n", b"+1 1:123456789012345678e-22\n"):  # fmt: skip
        X_ref, y_ref = load_svmlight_file(io.BytesIO(text), n_features=6)
        X, y = _parse_block(text, 6, np.float64, False, "edge")
        np.testing.assert_array_equal(X.data.view(np.uint64), X_ref.data.view(np.uint64))
        np.testing.assert_array_equal(X.indices, X_ref.indices)
        np.testing.assert_array_equal(y, y_ref)
    # Real files: the fast path reads them all, to the bit.
    import bz2

    for name in ("a9a", "ijcnn1"):
        X_ref, y_ref = load_libsvm_dataset(name)
        data = bz2.open(dataset_path(name)).read()
        assert parse_block(data, X_ref.shape[1], False) is not None
        X, y = _parse_block(data, X_ref.shape[1], np.float64, False, name)
        assert (X != X_ref).nnz == 0 and np.array_equal(y, y_ref)


def test_read_libsvm_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1:0.5 2:x\n")
    X, y = read_libsvm(str(bad), n_features=2)
    with pytest.raises(ValueError, match="bad.txt.*malformed LIBSVM data"):
        dask.compute(X)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        read_libsvm(str(tmp_path / "*.none"))
    with pytest.raises(ValueError, match="n_features must be a positive integer"):
        read_libsvm(str(bad), n_features=0)
    with pytest.raises(ValueError, match="blocksize must be a positive number of bytes"):
        read_libsvm(str(bad), blocksize=0)


def _compute_error(path, **kwargs):
    """The message of the ValueError that reading ``path`` gives."""
    with pytest.raises(ValueError) as info:
        dask.compute(*read_libsvm(str(path), **kwargs))
    return str(info.value)


def test_malformed_libsvm_errors_name_the_file_line_and_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1:0.5 2:x\n")
    assert _compute_error(bad, n_features=2) == (
        f"{bad}, line 1: malformed LIBSVM data: value 'x' of feature 2 is not a number in line '1 1:0.5 2:x'."
    )
    # Line numbers count from the file's start whatever block the line falls in, plain or compressed.
    import bz2

    lines = [f"{(-1) ** k} 1:{k}.5 3:0.25 # row {k}" for k in range(300)]
    lines[0] = "# a header"
    lines[123] = "-1 1:0.5 x:1"
    text = "\n".join(lines) + "\n"
    big = tmp_path / "big.svm"
    big.write_text(text)
    X, _ = read_libsvm(str(big), n_features=3, blocksize=700)
    assert X.numblocks[0] > 5
    wrong = "feature index 'x' is not an integer in line '-1 1:0.5 x:1'."
    message = f"{big}, line 124: malformed LIBSVM data: {wrong}"
    assert _compute_error(big, n_features=3, blocksize=700) == message
    assert _compute_error(big, blocksize=700) == message  # found while reading the width
    packed = tmp_path / "big.svm.bz2"
    packed.write_bytes(bz2.compress(text.encode()))
    assert _compute_error(packed, n_features=3) == message.replace(str(big), str(packed))
    # What is wrong, and how to fix it where the fix is the caller's.
    cases = [
        ("1 1:1\n-1 2:1 5:2\n", {"n_features": 3}, "line 2: malformed LIBSVM data: feature index 5 is past "
         "n_features=3 (it needs 5 features) in line '-1 2:1 5:2'; pass n_features=5 or more, or omit"),
        ("1 0:1 4:2\n", {"n_features": 4, "zero_based": True}, "feature index 4 is past n_features=4 (it "
         "needs 5 features) in line '1 0:1 4:2'; pass n_features=5 or more, or omit n_features to read"),
        ("1 0:1 2:1\n", {}, "line 1: malformed LIBSVM data: feature index 0 where indices count from 1 "
         "in line '1 0:1 2:1'; pass zero_based=True if they count from 0."),
        ("1 3:1 2:1\n", {}, "feature index 2 follows 3 in line '1 3:1 2:1'; indices must increase along"),
        ("1 -2:1\n", {"zero_based": True}, "line 1: malformed LIBSVM data: feature index -2 is negative"),
        ("\n1 3000000000:1\n", {}, "line 2: malformed LIBSVM data: feature index 3000000000 is too large"),
        ("yes 1:1\n", {}, "line 1: malformed LIBSVM data: label 'yes' is not a number in line 'yes 1:1'."),
        ("1 1:1 7\n", {}, "feature '7' is not of the form index:value in line '1 1:1 7'."),
        ("1 qid 1:1\n", {}, "query id 'qid' is not of the form qid:value"),
        ("1 2:\xe9\n", {}, r"value '\\xe9' of feature 2 is not a number in line '1 2:\\xe9'."),
    ]  # fmt: skip
    for k, (content, kwargs, expected) in enumerate(cases):
        path = tmp_path / f"case{k}.svm"
        path.write_bytes(content.encode("latin-1"))
        message = _compute_error(path, **kwargs)
        assert message.startswith(f"{path}, line ") and expected in message, message
    # Long lines are cut to 80 characters.
    long = tmp_path / "long.svm"
    long.write_text("1 " + " ".join(f"{j}:1" for j in range(1, 60)) + " 61:oops\n")
    message = _compute_error(long)
    assert "value 'oops' of feature 61" in message
    quoted = message.split(" in line ")[1]
    assert len(quoted) == 80 + 3 and quoted.endswith("...'.")


def test_parse_block_names_lines_of_its_own_text():
    """Without a file, line numbers count from the start of the bytes, after the caller's name for them."""
    from dask_streamsvm.io import _parse_block

    with pytest.raises(ValueError, match=r"^train data, line 3: malformed LIBSVM data: label '1:1' is not"):
        _parse_block(b"1 1:1\n\n1:1\n", 4, np.float64, False, "train data")


def test_empty_and_comment_only_libsvm_files_give_no_rows(tmp_path):
    empty, comments, rows = tmp_path / "a.svm", tmp_path / "b.svm", tmp_path / "c.svm"
    empty.write_bytes(b"")
    comments.write_text("# nothing here\n\n   \n")
    rows.write_text("1 2:1\n-1 1:1\n")
    for path in (empty, comments):
        for n_features, width in ((None, 1), (4, 4)):  # no index to read a width from: 1, as scikit-learn
            X, y = read_libsvm(str(path), n_features)
            Xc, yc = dask.compute(X, y)
            assert Xc.shape == (0, width) and yc.shape == (0,)
    X, y = read_libsvm(str(tmp_path / "*.svm"))
    Xc, yc = dask.compute(X, y)
    assert X.numblocks[0] == 3 and Xc.shape == (2, 2)
    np.testing.assert_array_equal(yc, [1, -1])
    from dask_streamsvm import LinearSVC

    with pytest.raises(ValueError, match="the collection has no rows"):
        LinearSVC(solver="sbm").fit(*read_libsvm(str(empty)))


def test_reader_returns_freed_memory_before_each_partition(small, monkeypatch):
    import sys

    import dask_streamsvm.engine.data.reader as reader_module
    from dask_streamsvm.engine.data.malloc import release_free_memory

    if sys.platform.startswith("linux"):
        assert release_free_memory() in (True, False)  # glibc: True; musl has no malloc_trim
    calls = []
    monkeypatch.setattr(reader_module, "release_free_memory", lambda: calls.append(1))
    X, y = small
    src = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    with Reader(src, prefetch=2, max_passes=2, shuffle=False, seed=0) as reader:
        while reader.get(timeout=10)[0] != "done":
            pass
    assert len(calls) == 8  # 4 partitions, 2 passes


def test_reader_reads_every_partition_each_pass_in_seeded_order(small):
    X, y = small
    src = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    seen = []
    with Reader(src, prefetch=2, max_passes=2, shuffle=True, seed=3) as reader:
        while (item := reader.get(timeout=10))[0] != "done":
            seen.append(item)
    kinds = [it[0] for it in seen]
    assert kinds == ["block"] * 4 + ["end"] + ["block"] * 4 + ["end"]
    for k in (0, 1):
        blocks = [it[2] for it in seen if it[0] == "block" and it[1] == k]
        assert [b.partition for b in blocks] == list(reader.partition_order(k))
        ids = np.concatenate([b.row_ids for b in blocks])
        assert sorted(ids) == list(range(40))
        assert all(b.X.shape[0] == len(b.row_ids) == len(b.y) for b in blocks)
        assert all(sorted(b.order) == list(range(b.n_rows)) for b in blocks)
    orders = [tuple(it[2].order) for it in seen if it[0] == "block" and it[2].partition == 0]
    assert orders[0] != orders[1]  # each pass visits rows in a fresh order
    # The same row id maps to the same row in both passes.
    by_id = {}
    for it in seen:
        if it[0] == "block":
            for i, row, lab in zip(it[2].row_ids, it[2].X, it[2].y, strict=True):
                if i in by_id:
                    np.testing.assert_array_equal(by_id[i][0], row)
                    assert by_id[i][1] == lab
                by_id[i] = (row, lab)
    assert reader.rows_read == 80


def test_reader_error_reaches_the_trainer_and_thread_ends(small):
    X, y = small

    def boom(block):
        raise OSError("disk on fire")

    def fail_from_third(b, block_info=None):
        return b if block_info[0]["chunk-location"][0] < 2 else boom(b)

    Xd = da.from_array(X, chunks=(10, 3)).map_blocks(fail_from_third, dtype=X.dtype)
    src = DaskSource(Xd, da.from_array(y, chunks=10))
    with pytest.raises(OSError, match="disk on fire") as info:
        with Reader(src, prefetch=1, max_passes=1, shuffle=False, seed=0) as reader:
            while reader.get(timeout=10)[0] != "done":
                pass
    assert "while computing partition 2" in "".join(getattr(info.value, "__notes__", []))
    # Dask's own worker pool may live on; no reader thread does.
    assert not [t for t in threading.enumerate() if t.name == "dask-streamsvm-reader"]


def test_reader_stops_promptly_when_closed_with_a_full_queue(small):
    X, y = small
    src = DaskSource(da.from_array(X, chunks=(5, 3)), da.from_array(y, chunks=5))
    reader = Reader(src, prefetch=1, max_passes=100, shuffle=False, seed=0)
    with reader:
        time.sleep(0.2)  # the queue fills and the reader waits for room
    assert not reader._thread.is_alive()


class _SlowSource:
    """A source whose reads take ``seconds`` each and record how many run at once."""

    def __init__(self, source, seconds):
        self._source, self.seconds = source, seconds
        self.n_partitions = source.n_partitions
        self.running = self.most = 0
        self.lock = threading.Lock()

    def partition_id(self, p):
        return p

    def load(self, p):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        return self._source.load(p)


@pytest.mark.parametrize("prefetch", [1, 3])
def test_reads_run_ahead_up_to_prefetch_at_once_and_blocks_keep_their_order(small, prefetch):
    X, y = small
    src = _SlowSource(DaskSource(da.from_array(X, chunks=(5, 3)), da.from_array(y, chunks=5)), 0.05)
    held = []
    with Reader(src, prefetch=prefetch, max_passes=2, shuffle=True, seed=1) as reader:
        time.sleep(0.3)  # a slow trainer: the reader's side fills up
        seen = []
        while (item := reader.get(timeout=10))[0] != "done":
            held.append(len(reader._queue.queue) + len(reader._ahead))
            seen.append(item)
            time.sleep(0.01)
    for k in (0, 1):
        order = [it[2].partition for it in seen if it[0] == "block" and it[1] == k]
        assert order == list(reader.partition_order(k))
    assert src.most == prefetch  # prefetch reads at once (one at a time for prefetch=1)
    assert max(held) <= prefetch  # queued blocks and reads in flight: the trainer's block makes prefetch + 1


@pytest.mark.parametrize("prefetch", [1, 3])
def test_a_disk_speed_holds_every_read_to_its_bytes_over_that_speed(small, monkeypatch, prefetch):
    import dask_streamsvm.engine.data.reader as reader_module

    X, y = small
    src = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    # A clock that only the reader's sleeps move: each read takes no time on it.
    now = [0.0]
    slept = []

    class Clock:
        @staticmethod
        def perf_counter():
            return now[0]

        monotonic = perf_counter

    def wait(seconds):
        slept.append(seconds)
        now[0] += seconds
        return False

    def read_all(**kw):
        with Reader(src, prefetch=prefetch, max_passes=2, shuffle=True, seed=1, **kw) as reader:
            monkeypatch.setattr(reader._stop, "wait", wait)
            blocks = []
            while (item := reader.get(timeout=10))[0] != "done":
                if item[0] == "block":
                    blocks.append(item[2])
        return reader, blocks

    plain, plain_blocks = read_all()  # off by default: no sleep
    assert plain.throttle_wait == 0.0 and slept == []
    monkeypatch.setattr(reader_module, "time", Clock)
    monkeypatch.setattr(reader_module, "_read_bytes_per_s", 1e3)
    held, blocks = read_all()
    # Each read (the source's on the first pass, the same blocks after) slept its bytes / 1000.
    np.testing.assert_allclose(slept, [b.nbytes / 1e3 for b in blocks])
    assert held.throttle_wait == pytest.approx(sum(slept)) and now[0] == pytest.approx(sum(slept))
    for a, b in zip(plain_blocks, blocks, strict=True):  # the same rows, in the same order
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.order, b.order)

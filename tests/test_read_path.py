"""Dask collections to blocks, and the reader thread.

Reliability, round three: the read path every solver shares (issue 36, items 1, 4, 5, 10, 12).

A partition that changes between the primal solver's reads is named as for the dual solvers;
rows of zero cost everywhere, values the primal solver cannot train on and a C too small to
certify are refused before the first step (C before any read); ``rows_skipped`` counts rows,
not reads of them.

Bad input, round two: malformed sparse matrices, complex values, infinite labels, overflowing
rows, mixed label types, duplicated columns and arrays of the wrong rank (docs/reliability.md).

Every test injects a bad value and checks what the user gets: a clear error naming the partition
and row (in memory: the row), or a correct model; never a crash or a silently wrong model.  A
malformed CSR matrix crashed the process before these checks, so its tests run in a subprocess.

The Parquet fast path (pyarrow straight to arrays) and X and y taken from one frame.
"""

import contextlib
import json
import re
import subprocess
import sys
import textwrap
import threading
import time

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from dask_streamsvm import BudgetedSVC, LinearSVC, OnePassSVC
from dask_streamsvm.engine.data import parquet
from dask_streamsvm.engine.data.reader import Reader, read_blocks, source_prints
from dask_streamsvm.engine.data.row_ids import RowIds
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.plan.problem import MIN_C, FitPlan, class_index
from dask_streamsvm.engine.primal.sums import MAX_VALUE
from dask_streamsvm.features import HashingMap, PolynomialMap, Standardize
from dask_streamsvm.io import read_libsvm

from ._helpers import dataset_path, load_libsvm_dataset, noisy_linear_data, stream_model


@pytest.fixture
def small():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.where(rng.rand(40) > 0.5, 1, 0)
    return X, y


@pytest.mark.parametrize(
    "classes, y",
    [
        (np.array([-1, 1], dtype=np.int8), np.array([1, -1, -1, 1], dtype=np.int8)),
        (np.array([-1.0, 1.0]), np.array([1, -1, 1], dtype=np.int64)),  # integer labels, float classes
        (np.array([0, 1]), np.array([0.0, 1.0, 0.5])),  # a fraction: not a class
        (np.array([0.0, 1.0]), np.array([1.0, np.nan, 0.0])),  # NaN: not a class
        (np.array([False, True]), np.array([True, False, True])),
        (np.array([0, 2**63], dtype=np.uint64), np.array([2**63, 0, 2**63 - 1], dtype=np.uint64)),
        (np.array([-1, 1]), np.array([3, 1, -5])),  # outside, both sides
        (np.array(["a", "b"]), np.array(["b", "a", "c"])),  # strings: the search
        (np.array([0, 1, 2]), np.array([2, 0, 1, 7])),  # three classes: the search
    ],
)
def test_class_index_is_each_labels_position_among_the_classes(classes, y):
    """class_index (two classes of numbers by two comparisons, others by a search) gives each label's
    position among the sorted classes as int64, and names the first label outside them as a search
    of NumPy's own finds it."""
    position = np.minimum(np.searchsorted(classes, y), classes.shape[0] - 1)
    outside = np.flatnonzero(classes[position] != y)
    if outside.size:
        with pytest.raises(ValueError, match="^label " + re.escape(repr(y[outside[0]].item())) + "$"):
            class_index(classes, y, lambda label: f"label {label!r}")
        return
    index = class_index(classes, y, lambda label: f"label {label!r}")
    assert index.dtype == np.int64 and index.shape == y.shape
    np.testing.assert_array_equal(index, position)
    np.testing.assert_array_equal(classes[index], y)


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


def test_reader_returns_freed_memory_once_a_pass(small, monkeypatch):
    import sys

    import dask_streamsvm.engine.data.reader as reader_module
    from dask_streamsvm.engine.data.malloc import release_free_memory

    if sys.platform.startswith("linux"):
        assert release_free_memory() in (True, False)  # glibc: True; musl has no malloc_trim
    calls = []
    monkeypatch.setattr(reader_module, "release_free_memory", lambda: calls.append(1))
    X, y = small
    src = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    seen = []
    with Reader(src, prefetch=2, max_passes=2, shuffle=False, seed=0) as reader:
        while (item := reader.get(timeout=10))[0] != "done":
            seen.append((item[0], len(calls)))
    # Once a pass (4 partitions, 2 passes): before the second pass's first read and as the thread
    # ends, not before each partition, which gave back the decoded columns every read reuses
    # (malloc.TRIM_THRESHOLD).
    assert len(calls) == 2
    assert seen[0] == ("block", 0)  # no trim before the first pass's reads
    assert [n for kind, n in seen if kind == "block"][-1] == 1  # the second pass's blocks, after its trim


def test_a_reader_stopped_during_a_pass_returns_freed_memory(small, monkeypatch):
    import dask_streamsvm.engine.data.reader as reader_module

    calls = []
    monkeypatch.setattr(reader_module, "release_free_memory", lambda: calls.append(1))
    X, y = small
    src = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    with Reader(src, prefetch=1, max_passes=2, shuffle=False, seed=0) as reader:
        assert reader.get(timeout=10)[0] == "block"
    assert calls == [1]  # the pass did not end: the reader thread gave it back as it ended


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


class _UntimedCondition(threading.Condition):
    """A condition whose waits ignore their timeout: a wait no notify reaches never ends."""

    def wait(self, timeout=None):
        return super().wait(None)


class _CountingSource:
    """A source that counts its loads."""

    def __init__(self, source):
        self._source, self.loads = source, []
        self.n_partitions = source.n_partitions

    def partition_id(self, p):
        return p

    def load(self, p):
        self.loads.append(p)
        return self._source.load(p)


def _until(condition):
    """Wait until ``condition()`` holds; a liveness guard of 60 s (a machine however loaded gets
    there in well under that), not a timing."""
    for _ in range(60_000):
        if condition():
            return
        time.sleep(0.001)
    raise AssertionError("never happened")


@pytest.mark.parametrize("prefetch", [1, 2])
def test_a_holding_reader_reads_the_next_pass_only_once_the_trainer_asks(small, prefetch):
    """With ``hold`` (the Newton and band reads) the reader, after a pass's end, starts no read of the
    next pass until the trainer asks for a block of it; a close while it holds ends it (its wait checks
    the stop under the lock close notifies with: with waits that ignore their timeout it still ends),
    and no read of the next pass was ever made.  Without ``hold`` (the dual trainers) the next
    pass's reads start at once."""
    X, y = small
    counted = _CountingSource(DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10)))
    n = counted.n_partitions
    reader = Reader(counted, prefetch=prefetch, max_passes=3, shuffle=False, seed=0, hold=True)
    reader._wake = _UntimedCondition()
    with reader:
        items = [reader.get() for _ in range(n + 1)]
        assert [i[0] for i in items] == ["block"] * n + ["end"]
        _until(lambda: reader._wake._waiters)  # the reader waits for the trainer to ask
        assert len(counted.loads) == n  # no read of pass 1 began
        second = reader.get()  # asked: pass 1's reads start
        assert second[:2] == ("block", 1) and second[2].partition == 0
        assert [reader.get()[0] for _ in range(n)] == ["block"] * (n - 1) + ["end"]
        _until(lambda: reader._wake._waiters)
        assert len(counted.loads) == 2 * n
    assert not reader._thread.is_alive() and len(counted.loads) == 2 * n  # closed while held

    counted.loads.clear()
    with Reader(counted, prefetch=prefetch, max_passes=3, shuffle=False, seed=0) as reader:
        assert [reader.get()[0] for _ in range(n + 1)] == ["block"] * n + ["end"]
        _until(lambda: len(counted.loads) > n)  # pass 1's first read, unasked


def test_a_read_whose_thread_runs_after_the_close_reads_nothing(small):
    """A read's thread that runs only once its reader is closed (a read started just before the close,
    scheduled late) loads nothing: the fit has returned, and a text source's spill is closed, so
    the partition would be parsed again for nothing.  Its result is the reader's stop."""
    from dask_streamsvm.engine.data.reader import Stopped
    from dask_streamsvm.engine.data.waiting import OnThread

    X, y = small
    counted = _CountingSource(DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10)))
    reader = Reader(counted, prefetch=2, max_passes=1, shuffle=False, seed=0)
    assert reader._read(1).partition == 1 and counted.loads == [1]
    reader.close()
    late = OnThread(lambda: reader._read(0))
    assert late.done.wait(60)  # liveness guard
    with pytest.raises(Stopped):
        late.result()
    assert counted.loads == [1]


class _HeldSource:
    """A source whose reads after the first ``n`` wait for ``gate``, recording when they end."""

    def __init__(self, source, n, events):
        self._source, self.n, self.events = source, n, events
        self.n_partitions = source.n_partitions
        self.loads, self.began, self.gate = 0, threading.Event(), threading.Event()

    def partition_id(self, p):
        return p

    def load(self, p):
        self.loads += 1
        if self.loads > self.n:
            self.began.set()
            assert self.gate.wait(60)  # liveness guard: the test opens it
            self.events.append("read ended")
        return self._source.load(p)


@pytest.mark.parametrize("how", ["normally", "error", "left", "hung"])
def test_a_reader_left_normally_waits_for_the_reads_it_began(small, how, monkeypatch):
    """A dual trainer's reader begins the next pass's first read at a pass's end (no ``hold``).  A
    fit that then stops leaves the reader's block normally: the block's end waits for that read, so
    the fit returns with none of its reads running (one began at a fit's end used to end after it,
    and tests that counted reads saw it as the next fit's).  After an error, or where the trainer
    left the reads (``leave_reads``: Ctrl-C, whose certified model comes back at once), it does not
    wait; nor longer than ``CLOSE_WAIT`` for a read that hangs.  The gate opens on a timer: whatever
    the machine's load, the order is the same."""
    from dask_streamsvm.engine.data import reader as reader_module

    X, y = small
    events = []
    if how == "hung":  # the wait's bound, here 0.2 s, against a read that would end only after 30 s
        monkeypatch.setattr(reader_module, "CLOSE_WAIT", 0.2)
    source = DaskSource(da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10))
    gated = _HeldSource(source, source.n_partitions, events)
    n = gated.n_partitions
    with pytest.raises(RuntimeError) if how == "error" else contextlib.nullcontext():
        with Reader(gated, prefetch=2, max_passes=3, shuffle=False, seed=0) as reader:
            assert [reader.get()[0] for _ in range(n + 1)] == ["block"] * n + ["end"]
            assert gated.began.wait(60)  # the next pass's first read runs (liveness guard)
            timer = threading.Timer(
                30 if how == "hung" else 0.2, lambda: (events.append("gate"), gated.gate.set())
            )
            timer.start()
            if how == "left":
                reader.leave_reads()
            if how == "error":
                raise RuntimeError("the trainer failed")
    events.append("left")
    began = gated.loads - n  # the next pass's first read and, with prefetch 2, the one after it
    if how == "normally":
        assert events == ["gate"] + ["read ended"] * began + ["left"]
    else:
        assert events[0] == "left"
        if how == "hung":  # not waited for past the bound: the gate opens now, not after 30 s
            timer.cancel()
            gated.gate.set()
        _until(lambda: events.count("read ended") == began)  # they end on their own threads


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


class _GatedSource:
    """A source whose read of partition ``p`` sets ``started[p]``, waits for ``gates[p]`` (at most
    twice :data:`GATE_S`), then sets ``finished[p]``."""

    def __init__(self, source):
        self._source = source
        self.n_partitions = source.n_partitions
        self.started, self.gates, self.finished = (
            [threading.Event() for _ in range(self.n_partitions)] for _ in range(3)
        )

    def partition_id(self, p):
        return p

    def load(self, p):
        self.started[p].set()
        self.gates[p].wait(2 * GATE_S)
        self.finished[p].set()
        return self._source.load(p)


# A liveness bound, not a timing: a thread started on a loaded machine runs within it.
GATE_S = 30.0


def test_a_block_taken_while_the_reader_waits_starts_the_next_read_at_once(small):
    X, y = small
    src = _GatedSource(DaskSource(da.from_array(X, chunks=(5, 3)), da.from_array(y, chunks=5)))
    src.gates[0].set()
    with Reader(src, prefetch=2, max_passes=1, shuffle=False, seed=0) as reader:
        # Read 0 ends at once and its block waits in the queue; read 1, started ahead, waits at its
        # gate; with block 0 queued and read 1 in flight the reader holds prefetch partitions.
        assert src.started[1].wait(GATE_S)
        deadline = time.monotonic() + GATE_S
        while reader._queue.qsize() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not src.started[2].is_set()
        item = reader.get(timeout=GATE_S)  # the trainer takes block 0: room for one more read
        assert item[0] == "block" and item[2].partition == 0
        # Read 2 starts while the reader still waits for read 1, not once read 1 is done.
        assert src.started[2].wait(GATE_S)
        assert not src.finished[1].is_set()
        assert reader._queue.qsize() + len(reader._ahead) + 1 <= 2  # read 1 in flight, read 2 ahead
        for gate in src.gates:
            gate.set()
        blocks = [item[2].partition]
        while (item := reader.get(timeout=GATE_S))[0] != "done":
            if item[0] == "block":
                blocks.append(item[2].partition)
    assert blocks == list(range(src.n_partitions))


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
        reader = Reader(src, prefetch=prefetch, max_passes=2, shuffle=True, seed=1, **kw)
        # before the thread starts (entering the reader starts it): its first read's sleep too
        monkeypatch.setattr(reader._stop, "wait", wait)
        with reader:
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


# -- Reliability, round three: the read path every solver shares (issue 36, items 1, 4, 5, 10, 12)

N_PARTS, PART_ROWS, WIDTH = 10, 40, 5
CHANGED = "partition 3 gave other rows on this read than on its first"


def _data(n=N_PARTS * PART_ROWS, d=WIDTH, seed=0):
    return noisy_linear_data(n, d, seed)


def _chunks(X, y):
    return da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)


def _counted_collection(X, y, change=None):
    """``(X, y, reads)`` as Dask Arrays whose partition ``i`` is ``change(i, read, rows, labels)``
    on its ``read``-th read (1 for the first); ``reads[i]`` counts the reads of partition ``i``."""
    reads, lock = {}, threading.Lock()

    def part(i):
        with lock:
            reads[i] = reads.get(i, 0) + 1
            read = reads[i]
        rows = slice(i * PART_ROWS, (i + 1) * PART_ROWS)
        rows, labels = X[rows].copy(), y[rows].copy()
        return (rows, labels) if change is None else change(i, read, rows, labels)

    parts = [dask.delayed(part, pure=False)(i) for i in range(N_PARTS)]
    Xd = da.concatenate([da.from_delayed(p[0], (PART_ROWS, X.shape[1]), X.dtype) for p in parts])
    yd = da.concatenate([da.from_delayed(p[1], (PART_ROWS,), y.dtype) for p in parts])
    return Xd, yd, reads


def _scale_odd_rows_of_partition_3_from(first_changed):
    """The issue's source: from read ``first_changed`` on, the odd rows of partition 3 are 5x."""

    def change(i, read, rows, labels):
        if i == 3 and read >= first_changed:
            rows[1::2] *= 5.0
        return rows, labels

    return change


# -- item 1: one partition check for every solver


def test_the_primal_solver_stops_at_a_partition_changed_between_its_reads(partial_sample):
    """The issue's repro: dual=False returned the later reads' optimum with gap 0, no error."""
    X, y = _data()
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(2))
    with pytest.raises(ValueError, match=CHANGED):
        LinearSVC(dual=False, tol=1e-6, random_state=0).fit(Xd, yd)


def test_the_primal_solver_checks_its_later_newton_reads_too(partial_sample):
    """A change that comes on the third read (between two Newton reads after the one that counted
    the classes, each made by a reader of its own) is named too."""
    X, y = _data()
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(3))
    with pytest.raises(ValueError, match=CHANGED):
        LinearSVC(dual=False, tol=1e-9, random_state=0).fit(Xd, yd)


@pytest.mark.parametrize("solver", ["streamsvm", "sbm", "bm"])
def test_the_dual_solvers_still_stop_at_a_changed_partition(solver):
    X, y = _data()
    # Read 1 counts the labels, read 2 is the first pass: the change comes on the second pass.
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(3))
    with pytest.raises(ValueError, match=CHANGED):
        stream_model(solver=solver, tol=1e-9, max_iter=20).fit(Xd, yd)


def test_the_primal_solver_trains_on_a_source_that_gives_the_same_rows(partial_sample):
    X, y = _data()
    Xd, yd, reads = _counted_collection(X, y)
    streamed = LinearSVC(dual=False, tol=1e-8, random_state=0).fit(Xd, yd)
    in_memory = LinearSVC(dual=False, tol=1e-8, random_state=0).fit(X, y)
    np.testing.assert_allclose(streamed.coef_, in_memory.coef_, rtol=1e-6, atol=1e-9)
    assert min(reads.values()) >= 2  # every partition was read more than once, and checked


def test_every_reader_of_a_source_checks_against_the_first_read_of_it():
    """One check in the read path: two separate reads (two readers) of one source are compared."""
    X, y = _data()
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(2))
    source = DaskSource(Xd, yd)
    assert len(list(read_blocks(source))) == N_PARTS
    with pytest.raises(ValueError, match=CHANGED):
        list(read_blocks(source))
    assert source_prints(source) is source_prints(source)
    other = DaskSource(*_chunks(X, y))
    assert source_prints(other) is not source_prints(source)


def test_a_new_row_transform_starts_new_fingerprints():
    """Standardize's scales, learnt by a read, change the rows of the reads after it: those are
    compared with each other, not with the read before the scales."""
    X, y = _data()
    source = DaskSource(*_chunks(X, y))
    list(read_blocks(source))
    source.row_transform = lambda rows: 2.0 * rows
    assert len(list(read_blocks(source))) == N_PARTS
    assert len(list(read_blocks(source))) == N_PARTS


def test_streamed_primal_fit_with_standardize_trains():

    X, y = _data()
    X = X * np.array([1.0, 100.0, 0.01, 1.0, 1e4])
    params = dict(dual=False, tol=1e-8, random_state=0, feature_map=Standardize())
    streamed = LinearSVC(**params).fit(*_chunks(X, y))
    in_memory = LinearSVC(**params).fit(X, y)
    np.testing.assert_allclose(streamed.coef_, in_memory.coef_, rtol=1e-5, atol=1e-9)


# -- item 4: every row of zero cost


@pytest.mark.parametrize(
    "params",
    [
        dict(dual=False),
        dict(dual=True),
        dict(dual="auto"),
        dict(solver="streamsvm"),
        dict(solver="sbm"),
        dict(solver="bm"),
        dict(dual=True, multi_class="crammer_singer"),
    ],
)
@pytest.mark.parametrize("where", ["memory", "dask"])
def test_class_weight_zero_for_every_class_is_nothing_to_train_on(params, where):
    X, y = _data()
    if where == "memory" and "solver" in params:
        params = {**params, "solver": "memory"}
    data = (X, y) if where == "memory" else _chunks(X, y)
    with pytest.raises(ValueError, match=r"class_weight=\{0: 0, 1: 0\} .*nothing to train on"):
        LinearSVC(class_weight={0: 0, 1: 0}, random_state=0, **params).fit(*data)


def test_rows_of_weight_only_in_classes_of_weight_zero_are_nothing_to_train_on():
    """Crammer-Singer on three classes: class 2 has class_weight 1 but sample_weight 0, classes 0
    and 1 have rows of weight but class_weight 0: every row costs 0."""
    X, y = _data()
    labels = np.arange(len(y)) % 3
    weights = np.where(labels == 2, 0.0, 1.0)
    model = LinearSVC(multi_class="crammer_singer", class_weight={0: 0, 1: 0, 2: 1})
    with pytest.raises(ValueError, match=r"classes \[0, 1\] weigh 0\), so there is nothing to train on"):
        model.fit(X, labels, sample_weight=weights)


def test_a_class_of_weight_zero_beside_one_of_positive_weight_still_trains():
    X, y = _data()
    model = LinearSVC(dual=False, class_weight={0: 0, 1: 1}, tol=1e-8).fit(X, y)
    assert np.any(model.coef_ != 0)
    labels = np.arange(len(y)) % 3
    model = LinearSVC(dual=False, class_weight={0: 0, 1: 0, 2: 0}).fit(X, labels)  # one-vs-rest: C
    assert model.coef_.shape == (3, WIDTH)


# -- item 5: values the primal solver cannot train on


@pytest.mark.parametrize("scale", [1e13, 1e15, 1e20, 1e30, 1e150])
@pytest.mark.parametrize("where", ["dense", "csr", "dask"])
def test_values_beyond_the_primal_solvers_range_are_named_before_its_first_step(scale, where):
    X, y = _data()
    X[:, 2] *= scale
    Xd, yd, reads = _counted_collection(X, y)
    data = {"dense": (X, y), "csr": (sp.csr_matrix(X), y), "dask": (Xd, yd)}[where]
    message = r"column 2 reaches \|x\| = .*e\+.*beyond 1e\+12.*feature_map=Standardize\(\).*dual=True"
    if where == "dask":
        message = r"partition \d+: " + message
    with pytest.raises(ValueError, match=message):
        LinearSVC(dual=False, random_state=0).fit(*data)
    assert sum(reads.values()) <= (N_PARTS if where == "dask" else 0)  # within the first read


@pytest.mark.parametrize("where", ["dense", "csr", "dask"])
def test_raw_pixel_values_and_other_unscaled_data_still_train_with_the_primal_solver(where):
    rng = np.random.RandomState(0)
    X = rng.randint(0, 256, size=(N_PARTS * PART_ROWS, 8)).astype(np.float64)  # raw 0..255 pixels
    X[:, 7] = 1.7e9 + rng.randint(0, 10**6, size=X.shape[0])  # a time in seconds
    y = (X[:, :7].sum(axis=1) + rng.randn(X.shape[0]) * 50 > 7 * 127.5).astype(np.int64)
    data = {"dense": (X, y), "csr": (sp.csr_matrix(X), y), "dask": _chunks(X, y)}[where]
    model = LinearSVC(dual=False, tol=1e-3, random_state=0, max_iter=200).fit(*data)
    assert model.duality_gap_ <= 1e-3


def test_the_largest_value_the_primal_solver_takes_is_the_documented_bound():
    X, y = _data()
    X[:, 0] = np.sign(X[:, 0]) * MAX_VALUE * (np.abs(X[:, 0]) / np.abs(X[:, 0]).max())
    LinearSVC(dual=False, max_iter=3).fit(X[:, :1], y)  # |x| <= MAX_VALUE: trains (may not converge)


def test_a_feature_maps_features_beyond_the_range_are_named():
    from dask_streamsvm.features import PolynomialMap

    X, y = _data()
    X[:, 1] *= 1e7  # raw values within range; their squares are not
    with pytest.raises(ValueError, match=r"feature \d+ of the feature map reaches.*Scale the input features"):
        LinearSVC(dual=False, feature_map=PolynomialMap(degree=2)).fit(X, y)


def test_an_intercept_scaling_beyond_the_range_is_named():
    X, y = _data()
    with pytest.raises(ValueError, match=r"the intercept column is 1e\+13 \(intercept_scaling=1e\+13\)"):
        LinearSVC(dual=False, intercept_scaling=1e13).fit(*_chunks(X, y))


# -- item 10: rows_skipped counts rows, not reads of them


@pytest.mark.parametrize(
    "params", [dict(solver="sbm"), dict(solver="streamsvm"), dict(solver="bm"), dict(dual=False)]
)
def test_rows_skipped_is_the_number_of_distinct_rows_skipped(params, partial_sample):
    X, y = _data()
    X[57, 1] = np.nan
    if "solver" in params:
        model = stream_model(on_invalid="skip", tol=1e-9, max_iter=4, **params)
    else:
        model = LinearSVC(on_invalid="skip", tol=1e-12, max_iter=4, random_state=0, **params)
    if "solver" in params:
        with pytest.warns(Warning, match="did not reach tol"):
            model.fit(*_chunks(X, y))
    else:  # from its warm start the Newton solver may reach even this tol within max_iter
        model.fit(*_chunks(X, y))
    assert len({record["pass"] for record in model.history_}) >= (4 if "solver" in params else 2)
    assert [record["rows_skipped"] for record in model.history_] == [1] * len(model.history_)


# -- item 12: a C too small to certify


def _unreadable_collection(X, y):
    def refuse(i):
        raise AssertionError(f"partition {i} was read")

    parts = [dask.delayed(refuse, pure=False)(i) for i in range(N_PARTS)]
    Xd = da.concatenate([da.from_delayed(p, (PART_ROWS, X.shape[1]), X.dtype) for p in parts])
    return Xd, da.from_array(y, chunks=PART_ROWS)


@pytest.mark.parametrize("C", [1e-320, 5e-324, 1e-200, 1e-151])
@pytest.mark.parametrize("params", [dict(dual=False), dict(dual=True), dict(solver="sbm")])
def test_a_C_too_small_to_certify_is_refused_before_any_read(C, params):
    """The issue's C=1e-320 (subnormal) failed streamed with "the rows read changed"; any C below
    MIN_C does so for the default loss's dual.  (A subnormal C may be refused by the parameter
    check before the plan's.)"""
    X, y = _data()
    message = rf"C must be .*got C={C!r}" if C < np.finfo(np.float64).tiny else (
        rf"C must be a finite number >= 1e-150, got C={C!r}.*Pass C >= 1e-150"
    )  # fmt: skip
    with pytest.raises(ValueError, match=message):
        LinearSVC(C=C, **params).fit(*_unreadable_collection(X, y))
    with pytest.raises(ValueError, match=message):
        LinearSVC(C=C, **params).fit(X, y)


def test_the_plan_checks_C_for_every_estimator_path():
    for C in (1e-320, 0.0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="C must be a finite number >= 1e-150"):
            FitPlan(C=C)
    assert FitPlan(C=MIN_C).C == MIN_C


@pytest.mark.parametrize("params", [dict(dual=False), dict(dual=True), dict(solver="sbm"), dict(solver="bm")])
def test_the_smallest_C_accepted_is_certified_by_every_solver(params):
    X, y = _data()
    data = _chunks(X, y) if "solver" in params else (X, y)
    model = LinearSVC(C=MIN_C, random_state=0, **params).fit(*data)
    assert -1e-9 <= model.duality_gap_ <= model.tol  # a gap of rounding, either sign


# -- Bad input, round two: malformed sparse matrices, complex values, infinite labels, overflowing

INPUT_PARTS, INPUT_PART_ROWS = 4, 30


def _input_data(seed=0, n=INPUT_PARTS * INPUT_PART_ROWS, d=4):
    return noisy_linear_data(n, d, seed)


def _stream(**params):
    return stream_model(**{"tol": 1e-6, "max_iter": 60, **params})


def _input_chunks(X, y):
    return da.from_array(X, chunks=INPUT_PART_ROWS), da.from_array(y, chunks=INPUT_PART_ROWS)


def _same_model(a, b, rtol=1e-5):
    assert abs(a.objective_ - b.objective_) <= rtol * abs(b.objective_)


# -- malformed sparse matrices (in a subprocess: they corrupted memory)

# Builds ``malformed(base)``: kind -> (a copy of the CSR ``base`` with that one flaw, the row the
# error must name, or a text it must hold), and ``MALFORMED = malformed(GOOD)``, from a well-formed
# 30 x 6 CSR ``GOOD`` whose row 7 is full.  The flaws are made by assigning the index arrays, as code
# that builds CSR by hand does; SciPy's constructors would refuse some of them.
_MALFORMED = """
import json, warnings
import numpy as np, scipy.sparse as sp

rng = np.random.RandomState(0)
dense = rng.randn(30, 6) * (rng.rand(30, 6) < 0.6)
dense[7] = rng.randn(6)
GOOD = sp.csr_matrix(dense)
Y = (dense[:, 0] + dense[:, 1] > 0).astype(np.int64)
Y[:2] = [0, 1]

def set_at(a, i, v):
    a = a.copy()
    a[i] = v
    return a

def malformed(base):
    k, n = int(base.indptr[7]), base.shape[0]

    def flawed(indptr=None, indices=None, data=None):
        X = base.copy()
        X.indptr = base.indptr.copy() if indptr is None else indptr
        X.indices = base.indices.copy() if indices is None else indices
        X.data = base.data.copy() if data is None else data
        return X

    return {
        "index >= n_features": (flawed(indices=set_at(base.indices, k, 6)), 7),
        "huge index": (flawed(indices=set_at(base.indices, k, 2**31 - 1)), 7),
        "negative index": (flawed(indices=set_at(base.indices, k + 1, -1)), 7),
        "indptr decreasing": (flawed(indptr=set_at(base.indptr, 8, base.indptr[7] - 1)), 7),
        "indptr past nnz": (flawed(indptr=set_at(base.indptr, n, base.nnz + 5)), n - 1),
        "indptr not from 0": (flawed(indptr=set_at(base.indptr, 0, 1)), "X: the sparse matrix is "
                              "malformed: indptr starts at 1"),
        "indptr too short": (flawed(indptr=base.indptr[:-1].copy()), f"indptr has {n} entries"),
        "data longer than indices": (flawed(data=np.append(base.data, 1.0)), "and data"),
    }

MALFORMED = {
    kind: (X, f"X, row {at}: the" if isinstance(at, int) else at)
    for kind, (X, at) in malformed(GOOD).items()
}

def outcome(call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except ValueError as exc:
        return "ValueError", str(exc)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "accepted", ""

def report(kind, entry, call, expected):
    kind_, message = outcome(call)
    print(json.dumps([kind, entry, kind_, message, expected]), flush=True)
"""


def _run_isolated(body):
    """Run ``_MALFORMED`` + ``body`` in a fresh interpreter: its reported outcomes, or a failure
    that shows how the process ended (a SIGSEGV or abort ends it with a negative code)."""
    script = _MALFORMED + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert done.returncode == 0, (
        f"the process ended with code {done.returncode} after {len(rows)} outcomes: {rows[-1:]}\n"
        f"{done.stderr[-2000:]}"
    )
    return rows


def _assert_named(rows, n_expected):
    assert len(rows) == n_expected
    for kind, entry, outcome, message, expected in rows:
        assert outcome == "ValueError", (kind, entry, outcome, message)
        assert "the sparse matrix is malformed" in message, (kind, entry, message)
        assert expected in message, (kind, entry, message)


def test_malformed_csr_in_memory_is_a_value_error_naming_the_row_never_a_crash():
    rows = _run_isolated("""
        from dask_streamsvm import LinearSVC
        fitted = LinearSVC(random_state=0).fit(GOOD, Y)
        for kind, (X, expected) in MALFORMED.items():
            report(kind, "fit", lambda: LinearSVC(max_iter=5).fit(X, Y), expected)
            report(kind, "fit skip", lambda: LinearSVC(max_iter=5, on_invalid="skip").fit(X, Y), expected)
            report(kind, "partial_fit", lambda: LinearSVC().partial_fit(X, Y, classes=[0, 1]), expected)
            report(kind, "predict", lambda: fitted.predict(X), expected)
            report(kind, "decision_function", lambda: fitted.decision_function(X), expected)
    """)
    _assert_named(rows, 5 * 8)


def test_malformed_csr_in_memory_with_a_streaming_solver_is_a_value_error_naming_the_row():
    # LinearSVC._source checks in-memory input (_validation.checked_sparse) before cutting it into
    # partitions: slicing a malformed matrix silently dropped or mangled its bad entries.
    rows = _run_isolated("""
        from dask_streamsvm import LinearSVC
        for kind, (X, expected) in MALFORMED.items():
            report(kind, "sbm", lambda: LinearSVC(solver="sbm", max_iter=3).fit(X, Y), expected)
    """)
    _assert_named(rows, 8)


def test_malformed_csc_and_coo_in_memory_are_value_errors():
    rows = _run_isolated("""
        from dask_streamsvm import LinearSVC
        csc = sp.csc_matrix(GOOD)
        csc.indices = set_at(csc.indices, 3, 30)
        report("csc row index", "fit", lambda: LinearSVC(max_iter=5).fit(csc, Y), "outside [0, 30)")
        coo = sp.coo_matrix(GOOD)
        coo.col = set_at(coo.col, 3, 9)
        report("coo column index", "fit", lambda: LinearSVC(max_iter=5).fit(coo, Y), "outside [0, 6)")
        coo = sp.coo_matrix(GOOD)
        coo.row = set_at(coo.row, 3, -2)
        report("coo row index", "fit", lambda: LinearSVC(max_iter=5).fit(coo, Y), "outside [0, 30)")
    """)
    _assert_named(rows, 3)


def test_malformed_csr_is_refused_by_onepass_and_budgeted():
    # Their in-memory input goes through _stream_classifier's _validated and _check_in_memory.
    rows = _run_isolated("""
        from dask_streamsvm import BudgetedSVC, OnePassSVC
        for make in (lambda: OnePassSVC(random_state=0), lambda: BudgetedSVC(max_iter=1, random_state=0)):
            fitted = make().fit(GOOD, Y)
            name = type(fitted).__name__
            for kind in ("index >= n_features", "negative index", "indptr decreasing"):
                X, expected = MALFORMED[kind]
                report(kind, name + " fit", lambda: make().fit(X, Y), expected)
                learn = lambda: make().partial_fit(X, Y, classes=[0, 1])
                report(kind, name + " partial_fit", learn, expected)
                report(kind, name + " predict", lambda: fitted.predict(X), expected)
    """)
    _assert_named(rows, 2 * 3 * 3)


def test_malformed_csr_partition_is_a_value_error_naming_partition_and_row():
    rows = _run_isolated("""
        import dask, dask.array as da
        from dask_streamsvm import LinearSVC, OnePassSVC

        def collection(bad):
            # Partitions of 10 rows; the third (rows 20-29) is the malformed matrix's rows 0-9.
            parts = [GOOD[0:10], GOOD[10:20], bad, GOOD[0:10]]
            blocks = [
                da.from_delayed(dask.delayed(lambda p=p: p)(), shape=(10, 6), dtype=np.float64,
                                meta=sp.csr_matrix((0, 6)))
                for p in parts
            ]
            labels = np.concatenate([Y[:10], Y[10:20], Y[:10], Y[:10]])
            return da.concatenate(blocks), da.from_array(labels, chunks=10)

        for kind, (X, r) in malformed(GOOD[0:10]).items():
            Xd, yd = collection(X)
            where = f"partition 2, row {r} (row {20 + r} of the collection): the" if isinstance(r, int) else (
                "partition 2: the"
            )
            report(kind, "sbm", lambda: LinearSVC(solver="sbm", max_iter=3).fit(Xd, yd), where)
            report(kind, "streamsvm", lambda: LinearSVC(solver="streamsvm", max_iter=3).fit(Xd, yd), where)
            report(kind, "OnePassSVC", lambda: OnePassSVC().fit(Xd, yd), where)
    """)
    _assert_named(rows, 8 * 3)


def test_malformed_csr_partition_at_prediction_is_a_value_error_never_a_crash():
    # Lazy prediction checks each sparse partition (_lazy._check_rows) before scoring it.
    rows = _run_isolated("""
        import dask, dask.array as da
        from dask_streamsvm import LinearSVC, OnePassSVC
        meta = sp.csr_matrix((0, 6))
        for model in (LinearSVC(random_state=0).fit(GOOD, Y), OnePassSVC(random_state=0).fit(GOOD, Y)):
            for kind, (X, at) in malformed(GOOD).items():
                if kind.startswith(("index", "huge", "negative", "indptr decreasing")):  # Dask's
                    # concatenation of the results refuses the other kinds (SciPy's basic check)
                    part = dask.delayed(lambda X=X: X)()
                    Xd = da.from_delayed(part, shape=X.shape, dtype=np.float64, meta=meta)
                    where = f"a partition, row {at}: the"
                    report(kind, type(model).__name__, lambda: model.predict(Xd).compute(), where)
    """)
    _assert_named(rows, 2 * 4)


# -- complex values


def test_complex_dask_features_are_refused_not_cast_to_their_real_part():
    X, y = _input_data()
    Xc = X.astype(np.complex128)
    Xc[33, 1] += 2j
    with pytest.raises(
        ValueError, match=r"X holds complex values \(dtype complex128\); complex values are not"
    ):
        _stream().fit(*_input_chunks(Xc, y))
    # A partition whose values are complex although the collection says float64.
    parts = [
        dask.delayed(lambda i=i: (Xc if i == 1 else X)[i * INPUT_PART_ROWS : (i + 1) * INPUT_PART_ROWS])()
        for i in range(INPUT_PARTS)
    ]
    Xd = da.concatenate([da.from_delayed(p, shape=(INPUT_PART_ROWS, 4), dtype=np.float64) for p in parts])
    with pytest.raises(ValueError, match=r"partition 1: X holds complex values"):
        _stream().fit(Xd, da.from_array(y, chunks=INPUT_PART_ROWS))
    frame = pd.DataFrame(X, columns=list("abcd")).assign(c=Xc[:, 2] + 1j, y=y)
    with pytest.raises(ValueError, match=r"X's columns \['c'\] holds complex values"):
        _stream().fit(dd.from_pandas(frame, npartitions=INPUT_PARTS), "y")
    sparse = sp.csr_matrix(Xc)
    Xs = da.concatenate(
        [da.from_delayed(dask.delayed(lambda i=i: sparse[i * INPUT_PART_ROWS : (i + 1) * INPUT_PART_ROWS])(),
                         shape=(INPUT_PART_ROWS, 4), dtype=np.float64, meta=sp.csr_matrix((0, 4)))
         for i in range(INPUT_PARTS)]
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"partition \d: X holds complex values"):
        _stream().fit(Xs, da.from_array(y, chunks=INPUT_PART_ROWS))
    with pytest.raises(ValueError, match="Complex data not supported"):  # in memory, as scikit-learn says
        LinearSVC().fit(Xc, y)


# -- infinite labels


def test_infinite_labels_are_refused_naming_partition_and_row_or_skipped_like_nan_labels():
    X, y = _input_data()
    labels = y.astype(np.float64)
    labels[37] = np.inf
    with pytest.raises(ValueError, match=r"partition 1, row 7: the label is infinite \(inf\), not a class"):
        _stream().fit(*_input_chunks(X, labels))
    objects = np.where(np.arange(len(y)) == 95, -np.inf, y).astype(object)  # a pandas object column's labels
    with pytest.raises(ValueError, match=r"partition 3, row 5: the label is infinite \(-inf\)"):
        _stream().fit(
            da.from_array(X, chunks=INPUT_PART_ROWS), da.from_array(objects, chunks=INPUT_PART_ROWS)
        )
    with pytest.raises(ValueError, match="Input y contains infinity"):  # in memory, as scikit-learn says
        LinearSVC().fit(X, labels)
    labels[95] = -np.inf
    keep = np.isfinite(labels)
    clean = LinearSVC(tol=1e-8, random_state=0).fit(X[keep], y[keep])
    skipped = _stream(on_invalid="skip").fit(*_input_chunks(X, labels))
    assert skipped.classes_.tolist() == [0.0, 1.0]
    assert skipped.history_[0]["rows_skipped"] == 2
    _same_model(skipped, clean)
    in_memory = LinearSVC(tol=1e-8, random_state=0, on_invalid="skip").fit(X, labels)
    assert in_memory.history_[0]["rows_skipped"] == 2
    _same_model(in_memory, clean, rtol=1e-7)


# -- HashingMap and on_invalid="skip"


def _hashing_frame():
    X, y = _input_data()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "colour": np.where(X[:, 2] > 0, "red", "blue")})
    frame["y"] = y
    bad = frame.copy()
    bad.loc[41, "b"] = np.nan
    bad.loc[77, "a"] = np.inf
    return frame, bad


def test_hashing_map_with_skip_drops_rows_holding_nan_when_streaming():
    frame, bad = _hashing_frame()
    fmap = HashingMap(n_features=64)
    with pytest.raises(ValueError, match=r"partition 1, row 11, column 'b': the value is NaN; 1 rows"):
        _stream(feature_map=fmap).fit(dd.from_pandas(bad, npartitions=INPUT_PARTS), "y")
    model = _stream(feature_map=fmap, on_invalid="skip").fit(
        dd.from_pandas(bad, npartitions=INPUT_PARTS), "y"
    )
    assert model.history_[0]["rows_skipped"] == 2
    clean = LinearSVC(feature_map=fmap, tol=1e-8, random_state=0).fit(
        frame.drop(index=[41, 77]).drop(columns="y"), frame.drop(index=[41, 77])["y"]
    )
    _same_model(model, clean)


def test_hashing_map_with_skip_drops_rows_holding_nan_in_memory():
    # LinearSVC._drop_invalid hands its feature map to _validation.drop_invalid (encoder=...).
    frame, bad = _hashing_frame()
    fmap = HashingMap(n_features=64)
    model = LinearSVC(feature_map=fmap, tol=1e-8, random_state=0, on_invalid="skip")
    model.fit(bad.drop(columns="y"), bad["y"])
    assert model.history_[0]["rows_skipped"] == 2
    kept = frame.drop(index=[41, 77])
    clean = LinearSVC(feature_map=fmap, tol=1e-8, random_state=0).fit(kept.drop(columns="y"), kept["y"])
    _same_model(model, clean, rtol=1e-7)


# -- values whose squares overflow


def test_rows_whose_squared_norm_overflows_say_the_features_need_scaling():
    X, y = _input_data()
    huge = X.copy()
    huge[50, 1] = 3e155  # (3e155)^2 = 9e310 > 1.8e308: x . x is infinite
    scale = r"overflows float64 \(its largest value is 3e\+155\); .* need scaling \(e\.g\. .*StandardScaler"
    with pytest.raises(ValueError, match=r"^X, row 50: the row's squared norm x \. x " + scale):
        LinearSVC().fit(huge, y)
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        _stream().fit(*_input_chunks(huge, y))
    sparse = da.from_array(sp.csr_matrix(huge), chunks=(INPUT_PART_ROWS, 4), asarray=False)
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        _stream().fit(sparse, da.from_array(y, chunks=INPUT_PART_ROWS))
    keep = np.arange(len(y)) != 50
    clean = LinearSVC(tol=1e-8, random_state=0).fit(X[keep], y[keep])
    in_memory = LinearSVC(tol=1e-8, random_state=0, on_invalid="skip").fit(huge, y)
    assert in_memory.history_[0]["rows_skipped"] == 1
    _same_model(in_memory, clean, rtol=1e-7)
    skipped = _stream(on_invalid="skip").fit(*_input_chunks(huge, y))
    assert skipped.history_[0]["rows_skipped"] == 1
    _same_model(skipped, clean)
    # Every row too large: the fit said only "increase max_iter" before.
    with pytest.raises(ValueError, match="need scaling"):
        LinearSVC().fit(X * 1e155, y)
    # phi(x) of a feature map overflows although x . x does not.
    with pytest.raises(ValueError, match=r"row 50: its squared norm .* overflows float64; .* need scaling"):
        LinearSVC(feature_map=PolynomialMap()).fit(
            np.where(np.arange(4) == 1, 1e80, 1.0) * (np.arange(len(y)) == 50)[:, None] + X, y
        )


def test_overflowing_rows_give_onepass_and_budgeted_the_same_clear_error():
    X, y = _input_data()
    huge = X.copy()
    huge[50, 1] = 3e155
    # OnePassSVC scaled such a row to zero and returned a zero model when every row was one.
    for data in (huge, X * 1e155):
        with pytest.raises(ValueError, match="need scaling"):
            OnePassSVC(random_state=0).fit(data, y)
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        OnePassSVC(random_state=0).fit(*_input_chunks(huge, y))
    # BudgetedSVC raised a bare OverflowError (streaming) or trained on gamma=0 (in memory).
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        BudgetedSVC(max_iter=1, random_state=0).fit(*_input_chunks(huge, y))
    with pytest.raises(ValueError, match="need scaling"):
        BudgetedSVC(max_iter=1, random_state=0).fit(huge, y)


def test_overflowing_rows_with_a_given_gamma_name_the_row_in_memory():
    # Through _stream_classifier's _validated (validated_rows): the row, not only the variance.
    X, y = _input_data()
    huge = X.copy()
    huge[50, 1] = 3e155
    with pytest.raises(ValueError, match=r"^X, row 50: the row's squared norm x \. x overflows"):
        BudgetedSVC(gamma=1.0, max_iter=1, random_state=0).fit(huge, y)


# -- label types, column names, ranks


def test_string_labels_in_one_partition_and_numbers_in_another_name_the_partitions():
    X, y = _input_data()
    labels = y.astype(object)
    labels[:INPUT_PART_ROWS] = np.where(y[:INPUT_PART_ROWS] == 1, "yes", "no")
    mixed = (
        r"the labels mix strings and numbers: partition 0 has the label 'no' and partition 1 the label 0\. "
    )
    with pytest.raises(ValueError, match=mixed + "Give y one type"):
        _stream().fit(da.from_array(X, chunks=INPUT_PART_ROWS), da.from_array(labels, chunks=INPUT_PART_ROWS))
    with pytest.raises(
        ValueError, match=r"partition 0, row 0 has the label 'yes' and partition 0, row 30 the"
    ):
        _stream().fit(da.from_array(X, chunks=len(y)), da.from_array(labels, chunks=len(y)))
    with pytest.raises(ValueError, match=r"the labels mix strings and numbers: partition 0 has"):
        OnePassSVC().fit(
            da.from_array(X, chunks=INPUT_PART_ROWS), da.from_array(labels, chunks=INPUT_PART_ROWS)
        )
    # A frame whose files were parsed apart: one partition's label column holds strings.
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y=y)
    parts = [frame.iloc[i * INPUT_PART_ROWS : (i + 1) * INPUT_PART_ROWS] for i in range(INPUT_PARTS)]
    parts[2] = parts[2].assign(y=parts[2]["y"].map({0: "no", 1: "yes"}).astype(object))
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0], verify_meta=False)
        with pytest.raises(ValueError, match=r"partition 2 has the label 'no' and partition 0 the label 0"):
            _stream().fit(ddf, "y")


def test_duplicated_column_names_are_refused_when_the_source_is_built():
    X, y = _input_data()
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "a", "b"]).assign(y=y), npartitions=INPUT_PARTS)
    match = r"X has duplicated column names \['a', 'b'\]; every column needs a name of its own"
    with pytest.raises(ValueError, match=match):
        _stream().fit(frame, "y")
    with pytest.raises(ValueError, match=match):
        OnePassSVC().fit(frame.drop(columns="y"), frame["y"])


@pytest.mark.parametrize(
    ("shape", "fix"),
    [((120,), r"ndim=1 \(shape \(120,\)\): for one feature, pass X\.reshape\(-1, 1\)"),
     ((120, 4, 2), r"ndim=3 \(shape \(120, 4, 2\)\): flatten the trailing axes, X\.reshape\(X\.shape\[0\], -1"
                   r"\)")],
    ids=["1-D", "3-D"],
)  # fmt: skip
def test_a_dask_x_of_another_rank_says_how_to_reshape_it(shape, fix):
    _, y = _input_data()
    X = da.ones(shape, chunks=INPUT_PART_ROWS)
    match = r"X must be 2-D with shape \(n_samples, n_features\), got a Dask Array with " + fix
    with pytest.raises(ValueError, match=match):
        _stream().fit(X, da.from_array(y, chunks=INPUT_PART_ROWS))
    with pytest.raises(ValueError, match=match):
        BudgetedSVC().fit(X, da.from_array(y, chunks=INPUT_PART_ROWS))


# -- The Parquet fast path (pyarrow straight to arrays) and X and y taken from one frame

# Dask's own Parquet reader (the general path) calls pandas' reset_index and set_index with
# inplace=True on files written without a pandas index, which pandas 3.1 deprecates: Dask's to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")


def _write(frame, directory, n_files, row_group_size):
    directory.mkdir()
    bounds = np.linspace(0, len(frame), n_files + 1).astype(int)
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        table = pa.Table.from_pandas(frame.iloc[a:b], preserve_index=False)
        pq.write_table(table, directory / f"part{k:03d}.parquet", row_group_size=row_group_size)
    return str(directory)


@pytest.fixture
def mixed(tmp_path):
    """Float32, float64, int and bool features and string labels, in 5 files of 3 row groups."""
    rng = np.random.RandomState(0)
    n = 1500
    frame = pd.DataFrame(
        {
            "a": rng.randn(n).astype(np.float32),
            "b": rng.randn(n),
            "k": rng.randint(-3, 4, n),
            "flag": rng.rand(n) > 0.5,
        }
    )
    margin = frame.a + 0.5 * frame.b - 0.3 * frame.k + frame.flag
    frame["label"] = np.where(margin + 0.3 * rng.randn(n) > 0.5, "spam", "ham")
    return frame, _write(frame, tmp_path / "mixed", 5, 100)


def _general(monkeypatch):
    monkeypatch.setattr(parquet, "parquet_plan", lambda *args, **kwargs: None)


def _fit(X, y, **kw):
    # The dual solvers read every path the same way; the primal solver's warm start differs where
    # the rows are counted before reading (the fast path: from the files' footers) or not.
    params = dict(
        C=0.5, cache_bytes="20KB", deterministic=True, random_state=0, tol=1e-4, max_iter=50, dual=True
    )
    return LinearSVC(**{**params, **kw}).fit(X, y)


@pytest.mark.parametrize("group_bytes", [parquet.GROUP_BYTES, 1])
def test_the_fast_path_reads_the_same_rows_labels_and_partitions(mixed, monkeypatch, group_bytes):
    frame, path = mixed
    monkeypatch.setattr(parquet, "GROUP_BYTES", group_bytes)  # 1: one column decoded at a time
    fast = DaskSource(dd.read_parquet(path), "label")
    assert fast.parquet_plan is not None and fast.n_partitions == 5
    _general(monkeypatch)
    general = DaskSource(dd.read_parquet(path), "label")
    assert general.parquet_plan is None and general.n_partitions == 5
    for p in range(5):
        a, b = fast.load(p), general.load(p)
        assert a.X.flags.c_contiguous and a.X.dtype == b.X.dtype == np.float64
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_array_equal(a.sample_weight, b.sample_weight)
    classes, counts, *_ = fast.label_counts()
    assert classes.tolist() == ["ham", "spam"] and counts.sum() == len(frame)


def test_fast_and_general_paths_train_the_same_model_bit_for_bit(mixed, monkeypatch):
    _, path = mixed
    calls = []
    read_part = parquet.read_part
    monkeypatch.setattr(parquet, "read_part", lambda *a: calls.append(a[2]) or read_part(*a))
    frame = dd.read_parquet(path)
    features = ["a", "b", "k", "flag"]
    fast = [_fit(frame, "label"), _fit(frame[features], frame["label"])]
    assert calls and all(c == features for c in calls if c)  # the fast path read the rows
    _general(monkeypatch)
    general = _fit(dd.read_parquet(path), "label")
    for model in fast:
        np.testing.assert_array_equal(model.coef_, general.coef_)
        np.testing.assert_array_equal(model.intercept_, general.intercept_)
        assert model.history_[-1]["gap"] == general.history_[-1]["gap"] <= 1e-4
    assert list(general.classes_) == ["ham", "spam"]


@pytest.mark.slow  # among make test's slowest (issue 51: the default suite in six minutes)
def test_a_narrow_selection_of_a_frame_of_many_small_files_trains(tmp_path, monkeypatch):
    """Dask fuses the partitions of ``frame["y"]`` alone: X and y once disagreed (8 against 60)."""
    rng = np.random.RandomState(1)
    n = 3000
    frame = pd.DataFrame(rng.randn(n, 6), columns=[f"x{j}" for j in range(6)])
    frame["y"] = (frame.x0 - frame.x3 > 0).astype(int)
    path = _write(frame, tmp_path / "many", 60, 50)
    ddf = dd.read_parquet(path)
    assert ddf["y"].to_delayed().__len__() < ddf.npartitions  # the fusion the fix is for
    reference = _fit(ddf, "y")
    for X in (ddf[["x0", "x1", "x2", "x3", "x4", "x5"]], ddf.drop(columns="y")):
        model = _fit(X, ddf["y"])
        np.testing.assert_array_equal(model.coef_, reference.coef_)
    _general(monkeypatch)  # the general path builds one frame of X and y too
    model = _fit(ddf.drop(columns="y"), ddf["y"])
    np.testing.assert_array_equal(model.coef_, reference.coef_)


def test_weights_from_the_same_frame_are_read_with_it(tmp_path, monkeypatch):
    rng = np.random.RandomState(2)
    n = 800
    frame = pd.DataFrame({"a": rng.randn(n), "b": rng.randn(n)})
    frame["y"] = (frame.a > 0).astype(int)
    frame["w"] = rng.rand(n) * (rng.rand(n) > 0.2)
    path = _write(frame, tmp_path / "w", 4, 100)
    ddf = dd.read_parquet(path)
    fast = DaskSource(ddf[["a", "b"]], ddf["y"], ddf["w"])
    assert fast.parquet_plan is not None and fast.parquet_plan.weight == "w"
    named = DaskSource(ddf.drop(columns="w"), "y", ddf["w"])
    assert named.parquet_plan is not None
    _general(monkeypatch)
    general = DaskSource(ddf[["a", "b"]], ddf["y"], ddf["w"])
    assert general.parquet_plan is None
    for source in (fast, named, general):
        blocks = [source.load(p) for p in range(source.n_partitions)]
        np.testing.assert_array_equal(np.vstack([b.X for b in blocks]), frame[["a", "b"]].to_numpy())
        np.testing.assert_array_equal(np.concatenate([b.sample_weight for b in blocks]), frame.w.to_numpy())


def test_co_aligned_pandas_backed_x_y_and_weights_become_one_frame():
    rng = np.random.RandomState(3)
    frame = pd.DataFrame({"a": rng.randn(100), "b": rng.randn(100), "y": rng.randint(0, 2, 100)})
    frame["w"] = np.arange(100.0)
    ddf = dd.from_pandas(frame, npartitions=4)
    source = DaskSource(ddf[["a", "b"]], ddf["y"], ddf["w"])
    blocks = [source.load(p) for p in range(source.n_partitions)]
    np.testing.assert_array_equal(np.concatenate([b.sample_weight for b in blocks]), frame.w.to_numpy())
    np.testing.assert_array_equal(np.concatenate([b.y for b in blocks]), frame.y.to_numpy())
    assert list(source.feature_names) == ["a", "b"]
    # rows of class 0 weigh nothing: only class 1 counts as weighted, as for separate collections
    zero = ddf["w"] * (ddf["y"] == 1)
    assert DaskSource(ddf[["a", "b"]], ddf["y"], zero).label_counts()[2].tolist() == [1]


def test_values_the_general_path_rejects_are_rejected_naming_the_same_place(tmp_path, monkeypatch):
    frame = pd.DataFrame({"a": np.arange(40.0), "k": pd.array(range(40), dtype="Int64"), "y": [0, 1] * 20})
    frame.loc[25, "a"] = np.nan
    frame.loc[12, "k"] = pd.NA
    path = _write(frame, tmp_path / "nan", 2, 10)
    messages = []
    for general in (False, True):
        if general:
            _general(monkeypatch)
        source = DaskSource(dd.read_parquet(path), "y")
        assert (source.parquet_plan is None) == general
        for p in range(2):
            with pytest.raises(ValueError) as info:
                source.load(p)
            messages.append(str(info.value))
    assert messages[:2] == messages[2:]
    assert "partition 0, row 12, column 'k': the value is NaN" in messages[0]
    assert "partition 1, row 5, column 'a': the value is NaN" in messages[1]


def test_what_the_fast_path_does_not_read_like_dask_takes_the_general_path(tmp_path):
    frame = pd.DataFrame({"a": np.arange(20.0), "s": ["u", "v"] * 10, "y": [0, 1] * 10})
    path = _write(frame, tmp_path / "t", 2, 5)
    with pytest.raises(ValueError, match=r"non-numeric columns \['s'\]"):
        DaskSource(dd.read_parquet(path), "y")
    assert DaskSource(dd.read_parquet(path, columns=["a", "y"]), "y").parquet_plan is not None
    filtered = dd.read_parquet(path, columns=["a", "y"], filters=[("a", ">", 3.0)])
    assert DaskSource(filtered, "y").parquet_plan is None
    hive = tmp_path / "hive"
    hived = frame.drop(columns="s").assign(g=np.arange(20) % 3)
    dd.from_pandas(hived, npartitions=2).to_parquet(hive, partition_on=["g"])
    assert DaskSource(dd.read_parquet(hive).drop(columns="g"), "y").parquet_plan is None
    computed = dd.read_parquet(path, columns=["a", "y"])
    assert DaskSource(computed.assign(b=computed.a * 2), "y").parquet_plan is None


@pytest.mark.slow
def test_a9a_as_parquet_trains_the_same_model_on_both_paths(tmp_path, monkeypatch):
    X, y = load_libsvm_dataset("a9a")
    frame = pd.DataFrame(X.toarray().astype(np.float32), columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"] = np.where(y > 0, ">50K", "<=50K")
    path = _write(frame, tmp_path / "a9a", 4, 2000)
    kw = dict(C=1.0, cache_bytes="1MB", tol=1e-3, max_iter=30)
    fast = _fit(dd.read_parquet(path), "label", **kw)
    _general(monkeypatch)
    general = _fit(dd.read_parquet(path), "label", **kw)
    np.testing.assert_array_equal(fast.coef_, general.coef_)
    np.testing.assert_array_equal(fast.intercept_, general.intercept_)
    # The model returned is the best certified one (its primal with the last pass's dual), whose gap
    # is duality_gap_; the last record's own state may sit above it (1.6e-3 against 1.0e-3 once SBM's
    # rows kept within the 1 MB budget: partitions of 4.7 MB trained a block-sized piece at a time).
    assert fast.duality_gap_ <= 1e-3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_into_rows_is_the_transpose(dtype):
    from numba.typed import List

    from dask_streamsvm.kernels.layout import TILE, columns_into_rows

    rng = np.random.RandomState(4)
    columns = [rng.randn(2 * TILE + 5).astype(dtype) for _ in range(7)]
    typed = List()
    for c in columns:
        typed.append(c)
    out = np.full((len(columns[0]) + 3, 9), -1.0, dtype=dtype)
    columns_into_rows(out, typed, 3, 2)
    np.testing.assert_array_equal(out[3:, 2:], np.column_stack(columns))
    assert (out[:3] == -1).all() and (out[:, :2] == -1).all()  # rows before start, columns before first


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_first_non_finite_finds_the_first_bad_value_and_the_largest_magnitude_before_it(dtype):
    from dask_streamsvm.engine.data.checks import first_non_finite

    X = np.arange(-30, 30, dtype=dtype).reshape(6, 10)
    assert first_non_finite(X) == (-1, 30.0)
    assert first_non_finite(X[:, ::2]) == (-1, 30.0)  # not contiguous: scanned in C order all the same
    X[2, 3], X[4, 1] = np.inf, np.nan
    assert first_non_finite(X) == (23, 30.0)  # -30 .. -8 came before
    assert first_non_finite(np.arange(5)) == (-1, 0.0)  # integers cannot be NaN: nothing to scan
    assert first_non_finite(np.zeros((0, 3), dtype=dtype)) == (-1, 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_finiteness_scan_by_bits_agrees_with_the_scan_by_values(dtype):
    from dask_streamsvm.engine.data.checks import first_non_finite
    from dask_streamsvm.kernels.layout import scan_values

    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, info.tiny, -info.tiny / 4, info.max, -info.max, 1.0, -3.5], dtype=dtype)
    rng = np.random.RandomState(0)
    for trial in range(40):
        values = np.concatenate([rng.randn(rng.randint(1, 50)).astype(dtype) * 10.0 ** rng.randint(-30, 30),
                                 rng.choice(special, rng.randint(0, 4))]).astype(dtype)  # fmt: skip
        rng.shuffle(values)
        if trial % 4 == 1:  # a value that is not finite, of either sign, NaN's sign bit set or not
            values[rng.randint(values.size)] = rng.choice([np.inf, -np.inf, np.nan, -np.nan])
        expected = scan_values(values)
        assert first_non_finite(values) == (int(expected[0]), float(expected[1])), values
    assert first_non_finite(np.array([-0.0, -info.max], dtype=dtype)) == (-1, float(info.max))
    assert first_non_finite(np.array([-np.nan], dtype=dtype)) == (0, 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_columns_largest_magnitude_by_its_bits_is_numpys(dtype, monkeypatch):
    """``column_max_abs`` of dense C-ordered float rows reads their bits in one compiled pass
    (``kernels/layout.py: column_largest_bits``): each column's largest ``|x|`` exactly as NumPy's
    ``abs`` and ``max`` give it, signed zeros, subnormals, the extremes, infinity and NaN (NaN where
    a column holds one, of either sign bit) included; other layouts take NumPy's slices."""
    from dask_streamsvm.engine.data import checks
    from dask_streamsvm.engine.plan import problem
    from dask_streamsvm.kernels import layout

    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, info.tiny, -info.tiny / 4, info.max, -info.max, 1.0, -3.5], dtype=dtype)
    rng = np.random.RandomState(1)
    calls = []
    kernel = layout.column_largest_bits
    monkeypatch.setattr(problem, "column_largest_bits", lambda *a: (calls.append(1), kernel(*a)))
    for trial in range(30):
        n, d = rng.randint(1, 40), rng.randint(1, 9)
        X = (rng.randn(n, d) * 10.0 ** rng.randint(-30, 30, size=d)).astype(dtype)
        at = rng.randint(X.size, size=rng.randint(0, 4))
        X.flat[at] = rng.choice(special, at.size)
        if trial % 3 == 1:
            X.flat[rng.randint(X.size)] = rng.choice([np.inf, -np.inf, np.nan, -np.nan])
        expected = np.abs(X).max(axis=0).astype(np.float64)
        before, F = len(calls), np.asfortranarray(X)
        np.testing.assert_array_equal(problem.column_max_abs(X), expected)
        np.testing.assert_array_equal(problem.column_max_abs(F), expected)
        assert len(calls) == before + X.flags.c_contiguous + F.flags.c_contiguous  # F-ordered: NumPy's
        # the overflow check's largest magnitude (by the bits where every value is finite), as NumPy's
        # fmax and fmin give it (NaN skipped)
        values = X.ravel()
        top = max(abs(float(np.fmax.reduce(values))), abs(float(np.fmin.reduce(values))))
        assert checks._largest_magnitude(values) == top


def test_finite_values_are_scanned_by_their_bits_alone(monkeypatch):
    # The scan for the first value that is not finite (and the largest before it) runs only where
    # the bits' largest magnitude is not finite: finite partitions cost one vectorised pass.
    from dask_streamsvm.engine.data.checks import first_non_finite
    from dask_streamsvm.kernels import layout

    calls = []
    original = layout.scan_values
    monkeypatch.setattr(layout, "scan_values", lambda v: calls.append(v.size) or original(v))
    X = np.arange(-30, 30, dtype=np.float32).reshape(6, 10)
    assert first_non_finite(X) == (-1, 30.0) and calls == []
    X[2, 3] = np.inf
    assert first_non_finite(X) == (23, 30.0) and calls == [60]


# -- issue 36, round three: the Parquet fast path, parts of other types


def _parts(tmp_path, second):
    """A directory of two Parquet files: floats ``a, b`` and labels ``y``, the second file's columns
    replaced by ``second`` (name -> Arrow array)."""
    directory = tmp_path / "parts"
    directory.mkdir()
    rng = np.random.RandomState(0)
    n = 40
    first = {"a": pa.array(rng.randn(n)), "b": pa.array(rng.randn(n)), "y": pa.array([0, 1] * (n // 2))}
    pq.write_table(pa.table(first), directory / "part0.parquet")
    pq.write_table(pa.table({**first, **second}), directory / "part1.parquet")
    return directory


def _general_path(monkeypatch):
    monkeypatch.setattr(parquet, "parquet_plan", lambda *args, **kwargs: None)


def _fit_parquet(directory):
    return LinearSVC(solver="sbm", cache_bytes="4KB", max_iter=5, random_state=0).fit(
        dd.read_parquet(str(directory)), "y"
    )


_SECOND = {
    "a timestamp": (
        {"a": pa.array(pd.date_range("2024-01-01", periods=40, freq="h").to_numpy(), pa.timestamp("ns"))},
        r"part1.parquet, column 'a': its values are of type timestamp\[ns\] in this file",
    ),
    "a list": (
        {"b": pa.array([[1.0, 2.0]] * 40, pa.list_(pa.float64()))},
        r"part1.parquet, column 'b': its values are of type list<element: double> in this file",
    ),
}


@pytest.mark.parametrize("case", list(_SECOND))
def test_a_parquet_part_of_another_type_is_refused_naming_the_file_and_column(tmp_path, monkeypatch, case):
    columns, message = _SECOND[case]
    directory = _parts(tmp_path, columns)
    with pytest.raises(ValueError, match=message) as info:
        _fit_parquet(directory)
    assert "Cast the column to numbers in every file" in str(info.value)
    _general_path(monkeypatch)  # the general path refuses it too (naming the partition)
    with pytest.raises(ValueError, match="column '[ab]'"):
        _fit_parquet(directory)


def test_a_truncated_parquet_part_is_refused_naming_the_file(tmp_path, monkeypatch):
    directory = _parts(tmp_path, {})
    part = directory / "part1.parquet"
    part.write_bytes(part.read_bytes()[:-20])
    with pytest.raises(ValueError, match=re.escape(f"{part}: not a readable Parquet file")):
        _fit_parquet(directory)
    # The general path (Dask computes the frame) names it too: pyarrow's own error does not.
    _general_path(monkeypatch)
    with pytest.raises(ValueError, match=re.escape(f"{part}: not a readable Parquet file")) as info:
        _fit_parquet(directory)
    assert type(info.value.__cause__).__name__ == "ArrowInvalid"  # pyarrow's, kept as the cause


@pytest.mark.parametrize("pattern", ["nomatch*.parquet", "nomatch*.csv", "nomatch-[0-9].svm"])
def test_a_glob_that_matches_no_file_says_so(tmp_path, pattern):
    """An empty glob of a table was reported as "y='label' names no column of X; its columns are []"
    (Parquet) or as Dask's own error (CSV) (issue 50, smaller items): it is named, as the command line
    names it."""
    y = None if pattern.endswith(".svm") else "label"
    with pytest.raises(FileNotFoundError, match=re.escape(f"no file matches {str(tmp_path / pattern)!r}")):
        LinearSVC().fit(str(tmp_path / pattern), y)

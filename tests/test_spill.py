"""The binary spill of text sources: parse once, train from the spilled arrays."""

import os
import signal

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import dump_svmlight_file

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.data import spill as spill_module
from dask_streamsvm.engine.data.spill import Spill
from dask_streamsvm.io import read_libsvm

from ._helpers import load_libsvm_dataset


@pytest.fixture
def a9a_text(tmp_path):
    """6,000 rows of a9a as LIBSVM text, read in about 6 partitions."""
    X, y = load_libsvm_dataset("a9a")
    path = tmp_path / "a9a.svm"
    dump_svmlight_file(X[:6000], y[:6000], str(path), zero_based=False)
    return str(path), os.path.getsize(path) // 6 + 1


def _model(spill_dir, **kw):
    params = dict(
        C=1.0, cache_bytes="100KB", deterministic=True, random_state=0, tol=1e-3, max_iter=40,
        spill_dir=spill_dir,
    )  # fmt: skip
    return LinearSVC(**{**params, **kw})


def test_libsvm_is_parsed_once_and_trains_the_same_model_bit_for_bit(a9a_text, parses, tmp_path):
    path, blocksize = a9a_text
    where = tmp_path / "spills"
    where.mkdir()
    spilled = _model(where).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    n_partitions = len(parses)  # the first read, which counts the classes, parsed every block once
    assert n_partitions >= 5
    passes = len(spilled.history_)
    assert passes >= 3 and all(r["spill_bytes"] > 0 for r in spilled.history_)
    del parses[:]
    plain = _model(where, spill=False).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    assert len(parses) >= n_partitions * len(plain.history_)  # every read parses again
    assert all(r["spill_bytes"] == 0 for r in plain.history_)
    np.testing.assert_array_equal(spilled.coef_, plain.coef_)
    np.testing.assert_array_equal(spilled.intercept_, plain.intercept_)
    assert spilled.history_[-1]["gap"] == plain.history_[-1]["gap"] <= 1e-3
    assert os.listdir(where) == []  # the spill's directory went with the fit


def test_csv_spills_and_trains_the_same_model(tmp_path):
    rng = np.random.RandomState(0)
    frame = pd.DataFrame(rng.randn(3000, 5), columns=list("abcde"))
    frame["y"] = np.where(frame.a - frame.c + 0.3 * rng.randn(3000) > 0, "yes", "no")
    for k in range(4):
        frame.iloc[k * 750 : (k + 1) * 750].to_csv(tmp_path / f"part{k}.csv", index=False)
    ddf = dd.read_csv(str(tmp_path / "part*.csv"))
    spilled = _model(tmp_path, cache_bytes="20KB").fit(ddf, "y")
    plain = _model(tmp_path, cache_bytes="20KB", spill=False).fit(ddf, "y")
    assert spilled.history_[-1]["spill_bytes"] > 3000 * 5 * 8
    np.testing.assert_array_equal(spilled.coef_, plain.coef_)
    assert list(spilled.classes_) == ["no", "yes"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("dask_streamsvm-spill")]


def test_auto_spills_text_only_and_true_spills_any_collection(tmp_path):
    rng = np.random.RandomState(1)
    X = rng.randn(600, 4)
    y = (X[:, 0] > 0).astype(int)
    Xd, yd = da.from_array(X, chunks=150), da.from_array(y, chunks=150)
    auto = _model(tmp_path).fit(Xd, yd)
    assert auto.history_[-1]["spill_bytes"] == 0
    always = _model(tmp_path, spill=True).fit(Xd, yd)
    assert always.history_[-1]["spill_bytes"] >= X.nbytes
    np.testing.assert_array_equal(auto.coef_, always.coef_)


def test_the_spill_directory_goes_after_an_error_in_partition_5(tmp_path):
    lines = [f"{1 if i % 2 else -1} 1:{i / 100} 2:{(i % 7) / 7}\n" for i in range(600)]
    lines[520] = "1 1:nan 2:0.5\n"
    path = tmp_path / "bad.svm"
    path.write_text("".join(lines))
    where = tmp_path / "spills"
    where.mkdir()
    X, y = read_libsvm(str(path), n_features=2, blocksize=os.path.getsize(path) // 6 + 1)
    with pytest.raises(ValueError, match=r"partition 5, row \d+, feature 0: the value is NaN"):
        _model(where).fit(X, y)
    assert os.listdir(where) == []


def test_the_spill_directory_goes_after_ctrl_c(a9a_text, tmp_path):
    path, blocksize = a9a_text
    where = tmp_path / "spills"
    where.mkdir()
    seen = {}

    def interrupt(record):
        seen["dirs"] = os.listdir(where)
        if record["pass"] == 2:
            os.kill(os.getpid(), signal.SIGINT)

    model = _model(where, tol=1e-12, max_iter=50, callbacks=[interrupt])
    with pytest.warns(UserWarning, match=r"interrupted \(KeyboardInterrupt\)"):
        model.fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    assert len(seen["dirs"]) == 1  # it was there during the fit
    assert os.listdir(where) == []


def test_a_full_disk_spills_nothing_and_changes_nothing(a9a_text, monkeypatch, tmp_path):
    path, blocksize = a9a_text
    monkeypatch.setattr(spill_module, "RESERVE_BYTES", 1 << 62)
    full = _model(tmp_path).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    assert full.history_[-1]["spill_bytes"] == 0
    monkeypatch.undo()
    spilled = _model(tmp_path).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    np.testing.assert_array_equal(full.coef_, spilled.coef_)


def test_a_spilled_block_reads_back_as_written(tmp_path):
    from scipy import sparse

    from dask_streamsvm.engine.data.source import Block

    X = sparse.random(50, 30, density=0.2, format="csr", random_state=0, dtype=np.float32)
    block = Block(partition=7, X=X, y=np.array(["a", "b"] * 25, dtype=object), sample_weight=np.ones(50))
    block.n_skipped = 3
    spill = Spill(tmp_path)
    assert spill.put(block) and not spill.put(block)  # a partition is written once
    back, y, w, skipped = spill.get(7)
    assert back.dtype == np.float32 and back.has_canonical_format
    np.testing.assert_array_equal(back.toarray(), X.toarray())
    assert y.tolist() == block.y.tolist() and skipped == 3 and spill.get(6) is None
    np.testing.assert_array_equal(w, block.sample_weight)
    dense = Block(partition=1, X=np.arange(12.0).reshape(4, 3), y=np.zeros(4), sample_weight=np.ones(4))
    assert spill.put(dense)
    np.testing.assert_array_equal(spill.get(1)[0], dense.X)
    assert spill.bytes >= X.data.nbytes + dense.X.nbytes
    spill.close()
    assert not os.path.exists(spill.path)


def test_a_disk_that_fills_during_a_spill_write_drops_the_spill_and_changes_nothing(
    a9a_text, monkeypatch, tmp_path
):
    path, blocksize = a9a_text
    where = tmp_path / "spills"
    where.mkdir()
    writes = []
    write = spill_module.write_arrays

    def fills_on_the_third(file, arrays):
        writes.append(1)
        if len(writes) == 3:  # half a partition written, then the disk is full
            write(file, arrays[:2])
            raise OSError(28, "No space left on device")
        write(file, arrays)

    monkeypatch.setattr(spill_module, "write_arrays", fills_on_the_third)
    dropped = r"the spill in .*spills.* was dropped after an I/O error \(OSError: \[Errno 28\] No space left"
    with pytest.warns(UserWarning, match=dropped) as warned:
        full = _model(where).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    assert len(warned) == 1
    monkeypatch.undo()
    plain = _model(where, spill=False).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    np.testing.assert_array_equal(full.coef_, plain.coef_)
    np.testing.assert_array_equal(full.intercept_, plain.intercept_)
    assert full.history_[-1]["spill_bytes"] == 0
    assert os.listdir(where) == []

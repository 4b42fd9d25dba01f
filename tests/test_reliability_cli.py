"""Files in and out of the ``dask-streamsvm`` command and of ``read_libsvm`` (docs/reliability.md).

Every test injects a fault or a bad value and checks what the user gets: a
clear error naming where, before any work is done, or a result; never a
lost file, a retry of data that cannot heal, or text from a file that acts
on the terminal.
"""

import bz2
import contextlib
import gzip
import json
import lzma
import os
import tempfile
import threading
import zipfile

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

import dask_streamsvm
from dask_streamsvm import LinearSVC, read_libsvm
from dask_streamsvm import io as streamsvm_io
from dask_streamsvm.io import open_path

from ._helpers import assert_one_line_error, run

FAST = ["--tol", "1e-2", "--passes", "20", "--seed", "0"]


def _libsvm_text(n=60, seed=0):
    """``n`` rows of separable-ish LIBSVM text with 3 features, indices from 1."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    y = np.where(X @ [1.0, -2.0, 0.5] > 0, 1, -1)
    return "".join(f"{label} 1:{a:.6f} 2:{b:.6f} 3:{c:.6f}\n" for label, (a, b, c) in zip(y, X, strict=True))


@pytest.fixture
def svm_file(tmp_path):
    path = tmp_path / "train.svm"
    path.write_text(_libsvm_text())
    return path


@pytest.fixture
def no_fit(monkeypatch):
    """Fitting fails the test: the command must refuse before it trains."""

    def fit(self, *args, **kwargs):
        raise AssertionError("training started before the output paths were checked")

    monkeypatch.setattr(LinearSVC, "fit", fit)


@pytest.fixture
def table(tmp_path):
    """A small model trained on a table, the table as one CSV file and as a Parquet directory."""
    rng = np.random.RandomState(0)
    X = rng.randn(80, 2)
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(label=(X[:, 0] > 0).astype(int))
    frame.to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "parts.parquet").mkdir()
    frame.to_parquet(tmp_path / "parts.parquet" / "part.0.parquet")
    model = tmp_path / "m.model"
    LinearSVC(random_state=0).fit(frame[["a", "b"]], frame["label"]).save(model)
    return tmp_path, model


def _contents(folder):
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- no input is ever written over -------------------------------------------------------------


def test_train_never_writes_over_its_input_even_with_overwrite(svm_file, tmp_path, no_fit):
    before = svm_file.read_bytes()
    link = tmp_path / "link.model"
    link.symlink_to(svm_file)
    hard = tmp_path / "hard.model"
    os.link(svm_file, hard)
    cases = [
        [svm_file, "--model", svm_file],
        [svm_file, "--model", svm_file, "--overwrite"],
        [svm_file, "--model", link, "--overwrite"],  # a link to the input is the input
        [svm_file, "--model", hard, "--overwrite"],  # so is a hard link
        [tmp_path / "*.svm", "--model", svm_file, "--overwrite"],  # an input found by a glob
    ]
    for argv in cases:
        code, out, err = run(["train", *argv, *FAST])
        assert_one_line_error(code, out, err, "--model", "an input of this command", "train.svm")
        assert svm_file.read_bytes() == before
    # Nor the checkpoint a fit resumes from, nor a file in an input directory.
    checkpoint = ["--checkpoint-dir", tmp_path / "ck", "--overwrite"]
    code, out, err = run(["train", svm_file, "--model", tmp_path / "ck" / "checkpoint.zip", *checkpoint])
    assert_one_line_error(code, out, err, "checkpoint.zip", "an input of this command")


def test_train_keeps_an_existing_model_file_unless_overwrite(svm_file, tmp_path):
    model = tmp_path / "old.model"
    model.write_bytes(b"an earlier model")
    code, out, err = run(["train", svm_file, "--model", model, *FAST])
    assert_one_line_error(code, out, err, "--model", "old.model", "exists", "--overwrite")
    assert model.read_bytes() == b"an earlier model"
    code, out, err = run(["train", svm_file, "--model", model, "--overwrite", *FAST])
    assert code == 0, err
    assert dask_streamsvm.load(model).n_features_in_ == 3


def test_predict_never_writes_over_its_inputs(table, no_fit):
    folder, model = table
    saved = _contents(folder)
    parts = folder / "parts.parquet"
    cases = [
        ([folder / "rows.csv", "--out", folder / "rows.csv"], "rows.csv"),
        ([parts, "--out", parts], "parts.parquet"),  # --overwrite would delete the directory
        ([parts / "part.0.parquet", "--out", parts], "part.0.parquet"),  # it holds the input
        ([parts, "--out", parts / "out.csv"], "inside the input directory"),
    ]
    for argv, fragment in cases:
        code, out, err = run(["predict", model, *argv, "--label", "label", "--overwrite"])
        assert_one_line_error(code, out, err, "--out", fragment)
        assert _contents(folder) == saved


# -- output paths are checked before the work starts ----------------------------------------------


def test_output_paths_are_checked_before_training(svm_file, tmp_path, no_fit):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    code, out, err = run(["train", svm_file, "--model", a_file / "m.model"])
    assert_one_line_error(code, out, err, "--model", "a_file' is a file, not a directory")
    code, out, err = run(["train", svm_file, "--model", tmp_path / "missing" / "m.model"])
    assert_one_line_error(code, out, err, "--model", "missing' does not exist")
    code, out, err = run(["train", svm_file, "--model", tmp_path, *FAST])
    assert_one_line_error(code, out, err, "--model", "is a directory")
    model = ["--model", tmp_path / "m.model", "--solver", "sbm"]
    code, out, err = run(["train", svm_file, *model, "--checkpoint-dir", a_file])
    assert_one_line_error(code, out, err, "--checkpoint-dir", "a_file' is a file, not a directory")
    code, out, err = run(["train", svm_file, *model, "--checkpoint-dir", a_file / "ck" / "deeper"])
    assert_one_line_error(code, out, err, "--checkpoint-dir", "a_file' is a file, not a directory")
    assert not (tmp_path / "m.model").exists()


def test_predict_output_is_checked_before_reading(table, monkeypatch):
    folder, model = table
    a_file = folder / "a_file"
    a_file.write_text("not a directory")
    monkeypatch.setattr(dask_streamsvm, "load", lambda path: pytest.fail("the model was read first"))
    code, out, err = run(["predict", model, folder / "rows.csv", "--out", a_file / "p.csv"])
    assert_one_line_error(code, out, err, "--out", "a_file' is a file, not a directory")


def _read_only_directory(tmp_path, how):
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root writes in a directory without write permission; chmod cannot refuse it")
        folder = tmp_path / "read_only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    folder = "/sys"  # sysfs takes no new files, not even from root
    try:
        handle, probe = tempfile.mkstemp(dir=folder)
    except OSError:
        return folder
    os.close(handle)
    os.remove(probe)
    pytest.skip(f"{folder} takes new files here")


@pytest.mark.parametrize("how", ["chmod", "sysfs"])
def test_a_read_only_output_directory_fails_before_training(svm_file, tmp_path, no_fit, how):
    folder = _read_only_directory(tmp_path, how)
    try:
        code, out, err = run(["train", svm_file, "--model", os.path.join(folder, "m.model")])
        assert_one_line_error(code, out, err, "--model", "refuses new files")
        code, out, err = run(["train", svm_file, "--model", tmp_path / "m.model", "--solver", "sbm",
                              "--checkpoint-dir", os.path.join(folder, "ck")])  # fmt: skip
        assert_one_line_error(code, out, err, "--checkpoint-dir", "refuses new files")
    finally:
        if how == "chmod":
            os.chmod(folder, 0o755)


# -- info prints what a file holds, escaped -------------------------------------------------------


def test_info_escapes_terminal_sequences_from_the_model_file(tmp_path):
    model = tmp_path / "m.model"
    X = np.random.RandomState(0).randn(40, 2)
    LinearSVC(random_state=0).fit(X, X[:, 0] > 0).save(model)
    forged = tmp_path / "forged.model"
    with zipfile.ZipFile(model) as source, zipfile.ZipFile(forged, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "model.json":  # not covered by the arrays' SHA-256 values
                meta = json.loads(data)
                meta["library_version"] = "1.0\x1b[2J\nestimator       Forged\u202e"
                data = json.dumps(meta).encode()
            target.writestr(item, data)
    code, out, err = run(["info", forged])
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out
    assert "1.0\\x1b[2J\\nestimator       Forged\\u202e" in out
    assert sum(line.startswith("estimator") for line in out.splitlines()) == 1  # no forged line
    code, out, err = run(["info", forged, "--json"])
    assert code == 0, err
    assert "\x1b" not in out and len(out.strip().splitlines()) == 1
    assert json.loads(out)["written_by"] == "1.0\x1b[2J\nestimator       Forged\u202e"


# -- compressed LIBSVM files -----------------------------------------------------------------------


def _damaged(kind):
    """``(suffix, bytes, compression named in the error)`` of a compressed file that cannot be read."""
    text = _libsvm_text().encode()
    whole = gzip.compress(text)
    return {
        "gzip named .bz2": (".bz2", whole, "bz2"),
        "bz2 named .gz": (".gz", bz2.compress(text), "gzip"),
        "truncated .gz": (".gz", whole[: len(whole) // 2], "gzip"),
        "bad checksum .gz": (".gz", whole[:-8] + bytes([whole[-8] ^ 1]) + whole[-7:], "gzip"),
        "truncated .bz2": (".bz2", bz2.compress(text)[:100], "bz2"),
        "garbage named .xz": (".xz", b"this is not compressed at all\n" * 4, "xz"),
        "truncated .xz": (".xz", lzma.compress(text)[:100], "xz"),
    }[kind]


DAMAGED = [
    "gzip named .bz2",
    "bz2 named .gz",
    "truncated .gz",
    "bad checksum .gz",
    "truncated .bz2",
    "garbage named .xz",
    "truncated .xz",
]


@pytest.mark.parametrize("kind", DAMAGED)
def test_damaged_compressed_libsvm_names_the_file_and_is_not_retried(tmp_path, monkeypatch, kind):
    suffix, data, compression = _damaged(kind)
    path = tmp_path / f"train.svm{suffix}"
    path.write_bytes(data)
    message = f"{path}: not valid {compression} data"
    # Read at the call (the width is unknown).
    with pytest.raises(ValueError, match="the file is damaged or its suffix does not match") as info:
        read_libsvm(str(path))
    assert str(info.value).startswith(message)
    # Read by the streaming fit's reader thread, which repeats reads that fail with an OSError.
    reads = []

    def counted(*args):
        reads.append(args)
        return read_block(*args)

    read_block = streamsvm_io._read_block
    monkeypatch.setattr(streamsvm_io, "_read_block", counted)
    X, y = read_libsvm(str(path), n_features=3)
    with pytest.raises(ValueError) as info:
        LinearSVC(solver="sbm", retries=3, random_state=0).fit(X, y)
    assert str(info.value).startswith(message)
    assert len(reads) == 1, "a damaged file was read again as if its error were transient"
    # The command: one line naming the file.
    assert_one_line_error(*run(["train", path, "--model", tmp_path / "m.model"]), message)


def test_a_transient_read_error_of_a_compressed_file_is_still_retried(tmp_path, monkeypatch):
    import fsspec

    path = tmp_path / "train.svm.gz"
    path.write_bytes(gzip.compress(_libsvm_text().encode()))
    X, y = read_libsvm(str(path), n_features=3)
    # Every pass is trained (tol out of reach): whichever read fails, its block is used, its retry counted.
    # Without the spill every pass reads the file (with it, only the first does).
    params = dict(solver="sbm", retries=2, random_state=0, tol=1e-12, max_iter=4, spill=False)
    with pytest.warns(ConvergenceWarning):
        reference = LinearSVC(**params).fit(X, y)
    real_open, opened = fsspec.open, []

    class Flaky:
        """The raw file, whose reads fail as a network file system's can."""

        def __init__(self, raw, fails):
            self.raw, self.fails = raw, fails

        def read(self, *args):
            if self.fails:
                raise OSError(5, "Input/output error")
            return self.raw.read(*args)

        def __getattr__(self, name):
            return getattr(self.raw, name)

    lock = threading.Lock()

    @contextlib.contextmanager
    def flaky_open(*args, **kwargs):
        # A partition's X and y are read on two Dask threads at once: number the opens under a lock.
        with lock:
            opened.append(args)
            fails = len(opened) == 2  # the first may count the labels, outside the reader
        with real_open(*args, **kwargs) as raw:
            yield Flaky(raw, fails=fails)

    monkeypatch.setattr(fsspec, "open", flaky_open)
    # Below the decompressor, an I/O error stays itself: the reader's to retry, not damaged data.
    text = gzip.decompress(path.read_bytes())
    assert streamsvm_io._read_block(str(path), 0, None, "gzip") == text  # open 1 reads
    with pytest.raises(OSError, match="Input/output error") as info:
        streamsvm_io._read_block(str(path), 0, None, "gzip")  # open 2 fails
    assert not isinstance(info.value, ValueError)
    opened.clear()
    with pytest.warns(ConvergenceWarning):
        model = LinearSVC(**params).fit(X, y)
    assert model.history_[-1]["read_retries"] == 1
    np.testing.assert_array_equal(model.coef_, reference.coef_)


# -- names with glob characters --------------------------------------------------------------------


def test_a_file_named_with_brackets_is_read_as_named(tmp_path):
    named = tmp_path / "data[1].svm"
    named.write_text(_libsvm_text(n=60))
    (tmp_path / "data1.svm").write_text(_libsvm_text(n=25, seed=1))  # what the name matches as a glob
    X, y = read_libsvm(str(named))
    assert y.compute().shape == (60,)
    X, y = open_path(named)
    assert y.compute().shape == (60,)
    assert LinearSVC(solver="sbm", random_state=0).fit(str(named), None).history_[0]["rows_read"] == 60
    code, out, err = run(["train", named, "--model", tmp_path / "m.model", *FAST])
    assert code == 0, err
    assert "60 rows x 3 features" in out
    # A glob still expands, and finds both.
    X, y = read_libsvm(str(tmp_path / "data*.svm"))
    assert y.compute().shape == (85,)


def test_table_files_named_with_brackets_are_all_read(tmp_path):
    rng = np.random.RandomState(0)
    frame = pd.DataFrame(rng.randn(90, 2), columns=["a", "b"]).assign(label=lambda f: (f.a > 0).astype(int))
    for suffix in (".parquet", ".csv"):
        folder = tmp_path / suffix[1:]
        folder.mkdir()
        for name, rows in ((f"part[0]{suffix}", frame.iloc[:30]), (f"part{suffix}", frame.iloc[30:])):
            if suffix == ".csv":
                rows.to_csv(folder / name, index=False)
            else:
                rows.to_parquet(folder / name)
        argv = ["train", folder / f"*{suffix}", "--label", "label", "--model", folder / "m.model", *FAST]
        code, out, err = run(argv)
        assert code == 0, err
        assert "90 rows x 2 features" in out  # Dask alone would drop part[0]: a glob matching nothing

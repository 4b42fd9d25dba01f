"""Bad input, faults, interruption, checkpoints and resume (docs/reliability.md).

Every test injects a fault or a bad value and checks what the user gets: a
clear error naming where, or a model, never a hang, a stray thread, a
temporary file or a silently different model.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import warnings
import zipfile

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LinearSVC, LogisticRegression, read_libsvm
from dask_streamsvm.engine.store import checkpoint as ckpt

from ._helpers import noisy_linear_data, stream_model

N_PARTS, PART_ROWS = 10, 40


def _data(seed=0, n=N_PARTS * PART_ROWS, d=5):
    return noisy_linear_data(n, d, seed)


def _reader_threads():
    return [t for t in threading.enumerate() if t.name == "dask-streamsvm-reader" and t.is_alive()]


def _stream(**params):
    return stream_model(**params)


@pytest.fixture(autouse=True)
def no_stray_threads():
    yield
    deadline = time.time() + 5
    while _reader_threads() and time.time() < deadline:
        time.sleep(0.05)
    assert not _reader_threads(), "a reader thread outlived its fit"


# -- bad input ---------------------------------------------------------------------------------


def test_nan_and_inf_name_partition_row_and_column_or_are_skipped_and_counted():
    X, y = _data()
    bad = X.copy()
    bad[123, 2] = np.nan
    bad[301, 0] = -np.inf
    Xd, yd = da.from_array(bad, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    with pytest.raises(
        ValueError, match=r"partition 3, row 3 \(row 123 of the collection\), feature 2: the "
    ):
        _stream().fit(Xd, yd)
    model = _stream(on_invalid="skip", tol=1e-6, max_iter=60).fit(Xd, yd)
    assert model.history_[0]["rows_skipped"] == 2  # the first read
    # Every read skips the same rows, counted once (issue 36: the count used to add up over the reads).
    assert model.history_[-1]["rows_skipped"] == 2
    keep = np.ones(len(y), dtype=bool)
    keep[[123, 301]] = False
    clean = LinearSVC(tol=1e-8, random_state=0).fit(X[keep], y[keep])
    assert abs(model.objective_ - clean.objective_) <= 1e-5 * clean.objective_


@pytest.mark.parametrize("kind", ["numpy", "sparse", "pandas"])
def test_in_memory_skip_is_the_fit_on_the_valid_rows(kind):
    X, y = _data()
    bad = X.copy()
    bad[[5, 77], [1, 3]] = [np.nan, np.inf]
    w = np.ones(len(y))
    w[9] = -1.0
    keep = np.ones(len(y), dtype=bool)
    keep[[5, 9, 77]] = False
    convert = {"numpy": np.asarray, "sparse": sp.csr_matrix, "pandas": pd.DataFrame}[kind]
    with pytest.raises(ValueError):
        LinearSVC(random_state=0).fit(convert(bad), y, sample_weight=w)
    model = LinearSVC(on_invalid="skip", random_state=0).fit(convert(bad), y, sample_weight=w)
    clean = LinearSVC(random_state=0).fit(convert(X[keep]), y[keep])
    np.testing.assert_array_equal(model.coef_, clean.coef_)
    assert model.history_[-1]["rows_skipped"] == 3


def test_dataframe_partition_errors_name_the_column_and_fix():
    X, y = _data()
    frame = pd.DataFrame(X, columns=list("abcde")).assign(label=y, w=1.0)
    parts = [frame.iloc[i : i + PART_ROWS].copy() for i in range(0, len(frame), PART_ROWS)]
    parts[4]["c"] = parts[4]["c"].astype(object)
    parts[4].loc[parts[4].index[7], "c"] = "n/a"  # a string in a numeric column of one partition
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=frame.iloc[:0], verify_meta=False)
    with pytest.raises(ValueError, match=r"partition 4, column 'c'.*are not numbers.*Convert or drop"):
        _stream().fit(ddf.drop(columns="w"), "label")
    parts = [p.copy() for p in (frame.iloc[i : i + PART_ROWS] for i in range(0, len(frame), PART_ROWS))]
    parts[6].loc[parts[6].index[3], "label"] = np.nan
    parts[2].loc[parts[2].index[1], "w"] = -2.0
    meta = frame.iloc[:0].astype({"label": float})
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=meta, verify_meta=False)
    with pytest.raises(ValueError, match=r"partition 6, row 3: the label is missing"):
        _stream().fit(ddf.drop(columns="w"), "label")
    model = _stream(on_invalid="skip").fit(ddf.drop(columns="w"), "label")
    assert model.history_[0]["rows_skipped"] == 1
    parts[6].loc[parts[6].index[3], "label"] = 1.0
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=meta, verify_meta=False)
    features = ddf.drop(columns=["w", "label"])
    with pytest.raises(ValueError, match=r"partition 2, row 1: sample_weight is -2.0"):
        _stream().fit(features, ddf["label"], sample_weight=ddf["w"])
    model = _stream(on_invalid="skip").fit(features, ddf["label"], sample_weight=ddf["w"])
    assert model.history_[0]["rows_skipped"] == 1


def test_missing_values_of_nullable_columns_are_named_or_skipped():
    frame = pd.DataFrame({"a": pd.array([1.0, None, 2.0, 3.0] * 10, dtype="Float64"), "b": np.arange(40.0)})
    ddf = dd.from_pandas(frame.assign(label=(np.arange(40) >= 20).astype(int)), npartitions=2)
    with pytest.raises(ValueError, match=r"partition [01], row 1, column 'a': the value is NaN"):
        _stream().fit(ddf, "label")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # what is counted matters here, not the gap
        model = _stream(on_invalid="skip", tol=1e-2).fit(ddf, "label")
    assert model.history_[0]["rows_skipped"] == 10


def test_labels_outside_classes_and_empty_inputs_are_named():
    X, y = _data()
    model = LinearSVC(random_state=0).partial_fit(X[:50], y[:50], classes=[0, 1])
    with pytest.raises(ValueError, match=r"label 7, which is not among the classes \[0, 1\]"):
        model.partial_fit(X[:5], np.full(5, 7))
    with pytest.raises(ValueError, match="no rows"):
        _stream().fit(da.zeros((0, 3), chunks=10), da.zeros(0, chunks=10))
    with pytest.raises(ValueError, match="0 sample"):
        LinearSVC().fit(np.zeros((0, 3)), np.zeros(0))


def test_read_libsvm_malformed_line_is_named_by_file_and_line(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_text("1 1:0.5 2:1\n-1 2:0.25\n+1 1:x 3:2\n")
    with pytest.raises(ValueError, match=r"bad.svm.*line 3.*malformed LIBSVM data"):
        _stream().fit(*read_libsvm(str(path)))


# -- faults ------------------------------------------------------------------------------------


class Boom(RuntimeError):
    pass


def _failing_collection(fail, X, y):
    """``X`` as a Dask Array whose partitions are computed by ``fail(i, rows)``."""
    parts = [
        da.from_delayed(
            dask.delayed(fail)(i, X[i * PART_ROWS : (i + 1) * PART_ROWS]), (PART_ROWS, X.shape[1]), X.dtype
        )
        for i in range(N_PARTS)
    ]
    return da.concatenate(parts), da.from_array(y, chunks=PART_ROWS)


def explode_on_five(i, rows):
    if i == 5:
        raise Boom(f"partition {i} cannot be read")
    return rows


@pytest.mark.parametrize("solver", ["streamsvm", "sbm"])
def test_a_reader_that_raises_on_partition_5_of_10_stops_the_fit(solver, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the disk alpha store's directory
    X, y = _data()
    Xd, yd = _failing_collection(explode_on_five, X, y)
    start = time.perf_counter()
    with pytest.raises(Boom, match="partition 5 cannot be read") as info:
        _stream(solver=solver, alpha_store="disk", shuffle=False).fit(Xd, yd)
    # Stopped, not hung: the fit takes about a second on 2 quiet cores, one at load 35 took 68 s; a
    # fit that waited on its reader instead of stopping would not return at all.
    assert time.perf_counter() - start < 600
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "explode_on_five" in frames  # the original traceback, down to the failing function
    assert any("partition 5" in note for note in getattr(info.value, "__notes__", []))
    assert not _reader_threads()
    assert not list(tmp_path.iterdir())  # the alpha store's files are gone


def test_transient_io_errors_are_retried_then_counted():
    X, y = _data()
    failures = {}

    def flaky(i, rows):
        if i in (2, 7) and failures.get(i, 0) < 2:
            failures[i] = failures.get(i, 0) + 1
            raise OSError(5, f"I/O error reading partition {i}")
        return rows

    reference = _stream().fit(*_failing_collection(lambda i, rows: rows, X, y))
    model = _stream(retries=2).fit(*_failing_collection(flaky, X, y))
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    assert model.history_[0]["read_retries"] == 4
    failures.clear()
    with pytest.raises(OSError, match="I/O error reading partition 2") as info:
        _stream(retries=1, shuffle=False).fit(*_failing_collection(flaky, X, y))
    assert any("failed 2 reads; retries=1" in note for note in info.value.__notes__)


def test_a_file_deleted_mid_fit_stops_it_with_the_files_name(tmp_path):
    X, y = _data()
    for i in range(N_PARTS):
        rows = slice(i * PART_ROWS, (i + 1) * PART_ROWS)
        lines = [
            f"{2 * t - 1} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(x))
            for x, t in zip(X[rows], y[rows], strict=True)
        ]
        (tmp_path / f"part-{i:02d}.svm").write_text("\n".join(lines) + "\n")
    victim = tmp_path / "part-06.svm"

    def delete_after_first_pass(record):
        if record["pass"] == 0:
            victim.unlink()

    Xd, yd = read_libsvm(str(tmp_path / "part-*.svm"), n_features=5)
    start = time.perf_counter()
    with pytest.raises(FileNotFoundError, match="part-06.svm"):  # without the spill, every read opens it
        _stream(callbacks=[delete_after_first_pass], max_iter=50, tol=1e-9, spill=False).fit(Xd, yd)
    assert time.perf_counter() - start < 600  # stopped, not hung (the bound as above)
    # With the spill (the default for text), the passes after the first read the spilled partitions.
    victim.write_text((tmp_path / "part-05.svm").read_text())
    model = _stream(callbacks=[delete_after_first_pass], max_iter=50, tol=1e-3).fit(Xd, yd)
    assert not victim.exists() and len(model.history_) >= 2 and model.duality_gap_ <= 1e-3


# -- interruption ------------------------------------------------------------------------------


def _ctrl_c_after(seconds):
    """Ctrl-C, as the terminal sends it, from a timer thread."""
    timer = threading.Timer(seconds, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def slow(i, rows):
    time.sleep(0.02)
    return rows


def _ctrl_c_from_a_read(when):
    """A partition's read that, the first time ``when()`` holds, sends Ctrl-C as a terminal would
    (to the process, from the read's thread) before it returns: the signal comes at a known point
    of the fit, never racing its end."""
    sent = threading.Event()

    def read(i, rows):
        time.sleep(0.02)
        if not sent.is_set() and when():
            sent.set()
            os.kill(os.getpid(), signal.SIGINT)
        return rows

    return read, sent


@pytest.mark.parametrize("solver", ["streamsvm", "sbm"])
def test_ctrl_c_from_a_reading_thread_leaves_the_last_certified_model(solver):
    X, y = _data()
    passes = []
    read, sent = _ctrl_c_from_a_read(lambda: 2 in passes)  # during pass 3's reads
    Xd, yd = _failing_collection(read, X, y)
    model = _stream(solver=solver, tol=1e-12, max_iter=200, callbacks=[lambda r: passes.append(r["pass"])])
    with pytest.warns(UserWarning, match=r"interrupted \(KeyboardInterrupt\).*certified after pass"):
        model.fit(Xd, yd)
    assert sent.is_set()
    assert passes[-1] == 2  # stopped within the pass it came in: no pass ended after it
    assert model.n_iter_ == 2
    assert len(model.history_) == model.n_iter_ + 1  # records of the certified passes only
    # The best certified state (the asynchronous trainer's passes follow the load: an earlier pass
    # can have the lower primal), with the last pass's dual, the best.
    assert model.objective_ == min(r["primal"] for r in model.history_)
    assert model.objective_ * (1 - model.duality_gap_) == pytest.approx(model.history_[-1]["dual"], rel=1e-9)
    assert np.isfinite(model.coef_).all() and model.score(X, y) > 0.8
    assert not _reader_threads()


def test_ctrl_c_in_memory_returns_the_certified_current_model():
    X, y = _data(n=3000, d=20)

    def interrupt(record):
        if record["pass"] == 3:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler raises at the next bytecode

    with pytest.warns(UserWarning, match="interrupted"):
        model = LinearSVC(loss="hinge", C=100, tol=1e-12, max_iter=10_000, callbacks=[interrupt]).fit(X, y)
    assert model.n_iter_ == 3
    assert 0 <= model.duality_gap_ < np.inf and model.score(X, y) > 0.8


def test_ctrl_c_before_any_certified_pass_propagates():
    X, y = _data()
    reads = []
    read, sent = _ctrl_c_from_a_read(lambda: reads.append(1) or len(reads) == 3)  # the first pass
    Xd, yd = _failing_collection(read, X, y)
    with pytest.raises(KeyboardInterrupt):
        _stream(solver="streamsvm").fit(Xd, yd)
    assert sent.is_set()
    assert not _reader_threads()


# -- checkpoints -------------------------------------------------------------------------------

CASES = {
    "streamsvm": dict(solver="streamsvm", deterministic=True),
    "sbm": dict(solver="sbm"),
    "bm": dict(solver="bm", cache_bytes=8_000),
    "crammer_singer": dict(solver="sbm", multi_class="crammer_singer"),
    "ovr-disk-probability": dict(
        solver="streamsvm", alpha_store="disk", probability=True, deterministic=True
    ),
}


def _three_class(X, y):
    return np.where(X[:, 1] > 0.5, 2, y)


@pytest.mark.parametrize("case", list(CASES))
def test_resume_reaches_the_model_of_an_uninterrupted_fit_bit_for_bit(case, tmp_path):
    X, y = _data()
    if case in ("crammer_singer", "ovr-disk-probability"):
        y = _three_class(X, y)
    reads = []

    def counted(i, rows):
        reads.append(i)
        return rows

    Xd, yd = _failing_collection(counted, X, y)
    params = dict(CASES[case], tol=1e-5, max_iter=12)

    def stop_at_3(record):
        return record["pass"] == 3

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # where 12 passes do not reach tol
        reference = _stream(**params).fit(Xd, yd)
        reference_reads = len(reads)
        _stream(**params, checkpoint_dir=tmp_path, callbacks=[stop_at_3]).fit(Xd, yd)
        reads.clear()
        with zipfile.ZipFile(tmp_path / ckpt.FILE) as archive:
            assert json.loads(archive.read("model.json"))["state"]["current"] == 2  # stopped at 3: not saved
        resumed = _stream(**params, checkpoint_dir=tmp_path).fit(Xd, yd, resume=True)
    assert reference.n_iter_ >= 4
    # It went on from pass 3 (the checkpoint of pass 2): passes 0-2 were not read again
    # (the counts differ by the few partitions the reader computes ahead).
    assert len(reads) <= reference_reads - 2 * N_PARTS
    np.testing.assert_array_equal(resumed.coef_, reference.coef_)
    np.testing.assert_array_equal(resumed.intercept_, reference.intercept_)
    assert resumed.n_iter_ == reference.n_iter_
    assert np.array_equal(resumed.objective_, reference.objective_)
    assert [r["primal"] for r in resumed.history_] == [r["primal"] for r in reference.history_]
    if reference.probability:
        np.testing.assert_array_equal(resumed.probA_, reference.probA_)


class Killed(RuntimeError):
    """The fit's process dies here: what a SIGKILL leaves in the checkpoint directory, in-process."""


def _killed_at(pass_k, partition):
    """A read that raises :class:`Killed` at partition ``partition``'s read of pass ``pass_k`` (its
    ``pass_k + 1``-th: ``X``'s partitions are read once a pass, the labels apart): the fit dies in the
    middle of that pass, at a point that depends on no timing, with the checkpoint of pass ``pass_k - 1``."""
    count, _ = _read_counter()

    def read(i, rows):
        if count(i) == pass_k + 1 and i == partition:
            raise Killed(f"killed at partition {i} of pass {pass_k}")
        return rows

    return read


# Fits whose last passes certify a larger primal than an earlier pass: the model they return is that
# earlier pass's (the best certified), which a resume from a later checkpoint must know.
KILLED_CASES = {
    "logistic-streamsvm": (LogisticRegression, dict(solver="streamsvm", deterministic=True, max_iter=6)),
    "streamsvm": (LinearSVC, dict(solver="streamsvm", deterministic=True, max_iter=6)),
    "sbm": (LinearSVC, dict(solver="sbm", inner_iter=3, max_iter=8)),
}


@pytest.mark.parametrize(
    ("case", "pass_k", "partition"),
    [
        ("logistic-streamsvm", 2, 3),
        ("logistic-streamsvm", 5, 0),
        ("logistic-streamsvm", 5, 6),
        ("logistic-streamsvm", 6, 9),
        ("streamsvm", 5, 4),
        ("sbm", 8, 2),
    ],
)
def test_a_fit_killed_mid_pass_resumes_to_the_uninterrupted_model_bit_for_bit(
    case, pass_k, partition, tmp_path
):
    estimator, params = KILLED_CASES[case]
    params = dict(params, cache_bytes=1_000, tol=1e-9, random_state=0)
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # tol=1e-9: every pass up to max_iter
        reference = estimator(**params).fit(
            da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
        )
        with pytest.raises(Killed):
            estimator(**params, checkpoint_dir=tmp_path).fit(
                *_failing_collection(_killed_at(pass_k, partition), X, y)
            )
        with zipfile.ZipFile(tmp_path / ckpt.FILE) as archive:
            assert json.loads(archive.read("model.json"))["state"]["current"] == pass_k - 1
        resumed = estimator(**params, checkpoint_dir=tmp_path).fit(
            da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS), resume=True
        )
    assert reference.n_iter_ == params["max_iter"]
    np.testing.assert_array_equal(resumed.coef_, reference.coef_)
    np.testing.assert_array_equal(resumed.intercept_, reference.intercept_)
    assert resumed.n_iter_ == reference.n_iter_
    assert resumed.objective_ == reference.objective_ and resumed.duality_gap_ == reference.duality_gap_
    assert [r["primal"] for r in resumed.history_] == [r["primal"] for r in reference.history_]


def test_resume_without_a_checkpoint_starts_over_and_checks_what_it_resumes(tmp_path):
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    fresh = _stream(checkpoint_dir=tmp_path / "new").fit(Xd, yd, resume=True)
    np.testing.assert_array_equal(fresh.coef_, _stream().fit(Xd, yd).coef_)
    with pytest.raises(ValueError, match=r"other data or parameters \(C: 1.0 then, 2.0 now\)"):
        _stream(C=2.0, checkpoint_dir=tmp_path / "new").fit(Xd, yd, resume=True)
    with pytest.raises(ValueError, match="n_partitions: 10 then, 5 now"):
        _stream(checkpoint_dir=tmp_path / "new").fit(Xd.rechunk(80), yd.rechunk(80), resume=True)
    with pytest.raises(ValueError, match="resume=True needs checkpoint_dir"):
        _stream().fit(Xd, yd, resume=True)
    with pytest.raises(ValueError, match="apply to the streaming solvers"):
        LinearSVC(checkpoint_dir=tmp_path).fit(X, y)
    with pytest.raises(ValueError, match="partial_fit writes no checkpoints"):
        LinearSVC(checkpoint_dir=tmp_path).partial_fit(X, y, classes=[0, 1])


def test_a_crash_while_writing_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    writes = {"n": 0}
    original = np.lib.format.write_array

    def crash_on_second_checkpoint(fp, array, *args, **kwargs):
        if array.shape == (1,) and array.dtype == np.uint64:  # rng_state, mid-way through a checkpoint
            writes["n"] += 1
            if writes["n"] == 2:
                raise OSError(28, "No space left on device")
        return original(fp, array, *args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", crash_on_second_checkpoint)
    with pytest.raises(OSError, match="No space left"):
        _stream(checkpoint_dir=tmp_path).fit(Xd, yd)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == [ckpt.FILE]  # no half-written file beside it
    resumed = _stream(checkpoint_dir=tmp_path).fit(Xd, yd, resume=True)
    np.testing.assert_array_equal(resumed.coef_, _stream().fit(Xd, yd).coef_)


def test_checkpoint_every_writes_at_most_that_often(tmp_path):
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    _stream(checkpoint_dir=tmp_path, checkpoint_every=3600).fit(Xd, yd)
    with zipfile.ZipFile(tmp_path / ckpt.FILE) as archive:
        assert json.loads(archive.read("model.json"))["state"]["current"] == 0  # the first pass only


_KILLED_FIT = textwrap.dedent(
    """
    import sys, time
    import dask.array as da
    import numpy as np
    from dask_streamsvm import LinearSVC

    rng = np.random.RandomState(0)
    X = rng.randn(2000, 8)
    y = (X @ rng.randn(8) + 0.3 * rng.randn(2000) > 0).astype(int)

    def report(record):
        print(record["pass"], flush=True)
        time.sleep(0.1)  # slow passes: the parent kills this process in the middle of one

    # inner_iter=2: enough passes (14) that the kill after pass 3 lands mid-fit
    model = LinearSVC(solver="sbm", cache_bytes=20_000, tol=1e-6, max_iter=60, random_state=0, inner_iter=2,
                      checkpoint_dir=sys.argv[1], callbacks=[report] if sys.argv[2] == "slow" else None)
    model.fit(da.from_array(X, chunks=200), da.from_array(y, chunks=200), resume=sys.argv[2] == "resume")
    np.save(sys.argv[3], np.hstack([model.coef_.ravel(), model.intercept_, [model.n_iter_]]))
    """
)


@pytest.mark.slow
def test_sigkill_mid_fit_loses_at_most_one_pass_and_resume_matches(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(_KILLED_FIT)
    run = [sys.executable, str(script)]
    killed = subprocess.Popen([*run, str(tmp_path / "ck"), "slow", str(tmp_path / "x.npy")],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    printed = -1
    for line in killed.stdout:
        printed = int(line)
        if printed == 3:
            time.sleep(0.05)  # in the middle of pass 4's read
            killed.send_signal(signal.SIGKILL)
            break
    killed.stdout.close()
    killed.wait(60)
    assert killed.returncode == -signal.SIGKILL
    with zipfile.ZipFile(tmp_path / "ck" / ckpt.FILE) as archive:
        saved = json.loads(archive.read("model.json"))["state"]["current"]
    assert saved >= printed - 1  # at most the pass in progress is lost
    subprocess.run(
        [*run, str(tmp_path / "ck"), "resume", str(tmp_path / "resumed.npy")], check=True, timeout=120
    )
    # The same fit never stopped, here: the same data, seed and parameters.
    rng = np.random.RandomState(0)
    X = rng.randn(2000, 8)
    y = (X @ rng.randn(8) + 0.3 * rng.randn(2000) > 0).astype(int)
    plain = LinearSVC(solver="sbm", cache_bytes=20_000, tol=1e-6, max_iter=60, random_state=0, inner_iter=2)
    plain.fit(da.from_array(X, chunks=200), da.from_array(y, chunks=200))
    expected = np.hstack([plain.coef_.ravel(), plain.intercept_, [plain.n_iter_]])
    np.testing.assert_array_equal(np.load(tmp_path / "resumed.npy"), expected)


def test_interrupt_then_resume_from_the_last_checkpoint(tmp_path):
    X, y = _data()
    passes = []
    read, sent = _ctrl_c_from_a_read(lambda: 3 in passes)  # during pass 4's reads
    params = dict(tol=1e-5, max_iter=30, checkpoint_dir=tmp_path)
    record = lambda r: passes.append(r["pass"])  # noqa: E731
    with pytest.warns(UserWarning, match="resume=True"):
        _stream(**params, callbacks=[record]).fit(*_failing_collection(read, X, y))
    assert sent.is_set() and passes[-1] == 3
    Xd, yd = _failing_collection(slow, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        resumed = _stream(**params).fit(Xd, yd, resume=True)
        reference = _stream(tol=1e-5, max_iter=30).fit(Xd, yd)
    np.testing.assert_array_equal(resumed.coef_, reference.coef_)


# -- data that changes under the fit (fingerprints, negative gaps) ------------------------------


def _read_counter():
    """``(count, reads)``: ``count(i)`` numbers the reads of partition ``i`` (1 for the first)."""
    reads = {}
    lock = threading.Lock()

    def count(i):
        with lock:
            reads[i] = reads.get(i, 0) + 1
            return reads[i]

    return count, reads


def _changing_collection(change, X, y, weights=False):
    """``(X, y)`` as Dask Arrays whose partition ``i`` is ``change(i, read, rows, labels)`` on its
    ``read``-th read; with ``weights``, ``change`` also returns sample weights, a third Dask Array."""
    count, _ = _read_counter()

    def part(i):
        rows = slice(i * PART_ROWS, (i + 1) * PART_ROWS)
        return change(i, count(i), X[rows].copy(), y[rows].copy())

    parts = [dask.delayed(part, pure=False)(i) for i in range(N_PARTS)]
    Xd = da.concatenate([da.from_delayed(p[0], (PART_ROWS, X.shape[1]), X.dtype) for p in parts])
    yd = da.concatenate([da.from_delayed(p[1], (PART_ROWS,), y.dtype) for p in parts])
    if not weights:
        return Xd, yd
    return Xd, yd, da.concatenate([da.from_delayed(p[2], (PART_ROWS,), np.float64) for p in parts])


def reorder_partition_3_after_two_reads(i, read, rows, labels):
    if i == 3 and read > 2:  # the label count and the first pass saw the stored order
        order = np.random.RandomState(read).permutation(PART_ROWS)
        return rows[order], labels[order]
    return rows, labels


@pytest.mark.parametrize("solver", ["streamsvm", "sbm", "bm"])
def test_a_partition_read_in_another_order_stops_the_fit_naming_it(solver):
    X, y = _data()
    Xd, yd = _changing_collection(reorder_partition_3_after_two_reads, X, y)
    with pytest.raises(ValueError, match="partition 3 gave other rows on this read than on its first"):
        _stream(solver=solver, tol=1e-9, max_iter=20).fit(Xd, yd)


def test_a_scaled_partition_gives_a_negative_gap_that_is_refused(monkeypatch):
    """The certificate's own guard: with fingerprints off, data that changed makes P < D, an error."""
    from dask_streamsvm.engine.data import fingerprint

    monkeypatch.setattr(fingerprint.PartitionPrints, "check", lambda self, block: None)
    X, y = _data()

    vanished = threading.Event()

    def weights_vanish(i, read, rows, labels):  # after the first pass no row has a loss: P = ||w||^2 / 2 < D
        return rows, labels, np.full(len(labels), 0.0 if vanished.is_set() else 1.0)

    Xd, yd, wd = _changing_collection(weights_vanish, X, y, weights=True)
    model = _stream(solver="sbm", tol=1e-9, shuffle=False, prefetch=1, callbacks=[lambda r: vanished.set()])
    with pytest.raises(ValueError, match=r"pass [1-3], class 1: the duality gap is negative \(primal"):
        model.fit(Xd, yd, sample_weight=wd)


def test_check_gap_refuses_only_gaps_negative_beyond_rounding():
    from dask_streamsvm.engine.plan.certificate import Certificate, check_gap

    assert check_gap(Certificate(10.0, 10.0 + 1e-9), "here").gap < 0  # rounding: accepted
    with pytest.raises(ValueError, match="here: the duality gap is negative"):
        check_gap(Certificate(10.0, 10.001), "here")
    with pytest.raises(ValueError, match="negative"):
        check_gap(Certificate(float("nan"), 1.0), "here")


@pytest.mark.parametrize("change", ["flip labels", "reorder rows"])
def test_resume_on_changed_data_of_the_same_layout_is_refused_naming_the_partition(change, tmp_path):
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    with pytest.warns(ConvergenceWarning):  # stops unconverged, checkpointed
        _stream(checkpoint_dir=tmp_path, max_iter=2, tol=1e-12).fit(Xd, yd)
    if change == "flip labels":
        X2, y2 = X, y.copy()
        y2[4 * PART_ROWS : 5 * PART_ROWS] = 1 - y2[4 * PART_ROWS : 5 * PART_ROWS]
    else:
        order = np.arange(len(y))
        order[4 * PART_ROWS : 5 * PART_ROWS] = order[4 * PART_ROWS : 5 * PART_ROWS][::-1]
        X2, y2 = X[order], y[order]
    Xd2, yd2 = da.from_array(X2, chunks=PART_ROWS), da.from_array(y2, chunks=PART_ROWS)
    with pytest.raises(ValueError, match="partition 4 is not the one the checkpoint was written on"):
        _stream(checkpoint_dir=tmp_path, max_iter=30).fit(Xd2, yd2, resume=True)
    resumed = _stream(checkpoint_dir=tmp_path, max_iter=30).fit(Xd, yd, resume=True)  # the same data: fine
    np.testing.assert_array_equal(resumed.coef_, _stream(max_iter=30).fit(Xd, yd).coef_)


# -- the estimator's attributes change together -------------------------------------------------


def test_a_streaming_refit_that_fails_leaves_the_previous_model_whole():
    X, y = _data()
    model = _stream().fit(da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS))
    before = {k: v for k, v in vars(model).items() if k.endswith("_")}
    predicted = model.predict(X)
    X2 = np.hstack([X, X[:, :2]])  # other data: 7 features, classes 5 and 6
    Xd2, yd2 = _failing_collection(explode_on_five, X2, y + 5)
    with pytest.raises(Boom):
        model.fit(Xd2, yd2)
    assert sorted(k for k in vars(model) if k.endswith("_")) == sorted(before)
    for name, value in before.items():
        assert getattr(model, name) is value, name
    np.testing.assert_array_equal(model.predict(X), predicted)  # the old labels, from the old weights


def test_predict_during_a_first_fit_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    X, y = _data()
    seen = []
    model = _stream()

    def predict_now(record):
        try:
            model.predict(X[:3])
        except Exception as exc:  # noqa: BLE001 - the type is what is checked
            seen.append(type(exc))

    model.set_params(callbacks=[predict_now])
    model.fit(da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS))
    assert seen and set(seen) == {NotFittedError}
    model.predict(X[:3])  # fitted now


def test_an_interrupted_partial_fit_keeps_n_iter_equal_to_the_history():
    X, y = _data()
    model = LinearSVC(random_state=0)
    model.partial_fit(X[:100], y[:100], classes=[0, 1])
    coef = model.coef_.copy()
    reads = []
    read, sent = _ctrl_c_from_a_read(lambda: reads.append(1) or len(reads) == 3)  # mid-pass
    with pytest.raises(KeyboardInterrupt):
        model.partial_fit(*_failing_collection(read, X, y))
    assert sent.is_set()
    assert model.n_iter_ == len(model.history_) == 1
    np.testing.assert_array_equal(model.coef_, coef)  # the model before the call
    model.partial_fit(X[100:200], y[100:200])
    assert model.n_iter_ == len(model.history_)


# -- hung reads --------------------------------------------------------------------------------


def _hanging_collection(X, y, hang_from_read, armed=None):
    """Partition 6 blocks on its ``hang_from_read``-th read (or, given the event ``armed``, on its
    reads once ``armed`` is set) until ``release`` is set (``release.ended`` is set once a hung read
    has ended, released or not)."""
    release = threading.Event()
    release.ended = threading.Event()

    def hang(i, read, rows, labels):
        if i == 6 and (armed.is_set() if armed is not None else read >= hang_from_read):
            release.wait(120)
            release.ended.set()
        return rows, labels

    return (*_changing_collection(hang, X, y), release)


@pytest.mark.parametrize("hang_from_read", [1, 3])  # in the label count, or in a training pass
def test_a_hung_partition_read_stops_the_fit_after_read_timeout_naming_it(hang_from_read):
    X, y = _data()
    Xd, yd, release = _hanging_collection(X, y, hang_from_read)
    try:
        late = r"partition(\(s\))? 6 (was|were) not read within read_timeout=1.5"
        with pytest.raises(TimeoutError, match=late):
            _stream(read_timeout=1.5, shuffle=False, tol=1e-9).fit(Xd, yd)
        assert not release.is_set()  # the fit did not wait for the hung read to end
    finally:
        release.set()


def test_ctrl_c_taken_by_another_thread_still_stops_a_fit_waiting_on_a_hung_read():
    """Linux hands a process's SIGINT to any of its threads that does not block it. One taken by a
    thread other than the trainer's, while the trainer waits on the reader for a hung partition,
    must still stop the fit: the wait looks up every POLL seconds (a wait without a timeout never
    woke, and the fit hung until the read ended)."""
    X, y = _data()
    armed = threading.Event()
    Xd, yd, release = _hanging_collection(X, y, hang_from_read=None, armed=armed)

    def to_this_thread():
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    def interrupt_at_pass_0(record):  # pass 1 hangs on partition 6; the timer thread takes Ctrl-C
        if record["pass"] == 0:
            armed.set()
            threading.Timer(0.5, to_this_thread).start()

    try:
        with pytest.warns(UserWarning, match="interrupted"):
            _stream(shuffle=False, tol=1e-9, callbacks=[interrupt_at_pass_0]).fit(Xd, yd)
        assert not release.ended.is_set()  # returned while partition 6 was still being read
        assert not _reader_threads()
    finally:
        release.set()


def test_ctrl_c_during_a_hung_read_returns_without_waiting_for_it():
    X, y = _data()
    armed = threading.Event()
    Xd, yd, release = _hanging_collection(X, y, hang_from_read=None, armed=armed)

    def interrupt_at_pass_0(record):  # pass 1 hangs on partition 6; Ctrl-C comes while it does
        if record["pass"] == 0:
            armed.set()
            _ctrl_c_after(0.3)

    try:
        with pytest.warns(UserWarning, match="interrupted"):
            model = _stream(shuffle=False, tol=1e-9, callbacks=[interrupt_at_pass_0]).fit(Xd, yd)
        assert not release.is_set()  # returned while partition 6 was still being read
        assert not _reader_threads()  # and the reader thread is gone, not left waiting for it
        assert model.n_iter_ == 0 and len(model.history_) == 1
    finally:
        release.set()

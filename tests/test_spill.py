"""The binary spill of text sources: parse once, train from the spilled arrays.

The spill steps back on any I/O error, its directory is checked like checkpoint_dir's, and
neither SIGTERM nor a killed process leaves a spill directory for good (issue 36, items 2, 6, 7).
"""

import contextlib
import errno
import os
import signal
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
import pytest
from sklearn.datasets import dump_svmlight_file

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.data import spill as spill_module
from dask_streamsvm.engine.data.source import Block
from dask_streamsvm.engine.data.spill import STEM, Spill
from dask_streamsvm.engine.store import archive
from dask_streamsvm.io import read_libsvm

from ._helpers import load_libsvm_dataset, noisy_linear_data, reads_ended, stream_model


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
    reads_ended()
    n_partitions = len(parses)  # the first read, which counts the classes, parsed every block once
    assert n_partitions >= 5
    passes = len(spilled.history_)
    assert passes >= 3 and all(r["spill_bytes"] > 0 for r in spilled.history_)
    del parses[:]
    plain = _model(where, spill=False).fit(*read_libsvm(path, n_features=123, blocksize=blocksize))
    reads_ended()
    assert len(parses) >= n_partitions * len(plain.history_)  # every read parses again
    assert all(r["spill_bytes"] == 0 for r in plain.history_)
    np.testing.assert_array_equal(spilled.coef_, plain.coef_)
    np.testing.assert_array_equal(spilled.intercept_, plain.intercept_)
    assert spilled.history_[-1]["gap"] == plain.history_[-1]["gap"]
    assert spilled.duality_gap_ == plain.duality_gap_ <= 1e-3  # the certified model's (its best read's)
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


# -- The spill steps back on any I/O error, its directory is checked like checkpoint_dir's, and

N_PARTS, PART_ROWS = 8, 250


def _collection(X, y, compute=None):
    """``(X, y)`` as Dask Arrays of :data:`N_PARTS` partitions; ``compute(i, rows)`` computes each."""
    if compute is None:
        return da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    parts = [
        da.from_delayed(dask.delayed(compute)(i, X[rows]), (PART_ROWS, X.shape[1]), X.dtype)
        for i, rows in enumerate(_row_slices())
    ]
    return da.concatenate(parts), da.from_array(y, chunks=PART_ROWS)


def _row_slices():
    return [slice(i * PART_ROWS, (i + 1) * PART_ROWS) for i in range(N_PARTS)]


def _never_read(i, rows):
    raise AssertionError(f"partition {i} was read")


def _spills(directory):
    return sorted(p for p in os.listdir(directory) if p.startswith(STEM))


# -- item 2: a disk that fills while the spill is written ------------------------------------

FAILURES = {
    "disk full": OSError(errno.ENOSPC, "No space left on device"),
    "quota": OSError(errno.EDQUOT, "Disk quota exceeded"),
    "short write": OSError("80000 requested and 42992 written"),  # NumPy's, as the trial saw it
    "I/O error": OSError(errno.EIO, "Input/output error"),
}


@pytest.mark.parametrize("failure", FAILURES, ids=list(FAILURES))
def test_a_spill_write_failing_part_way_drops_the_spill_and_trains_the_same_model(
    failure, monkeypatch, tmp_path
):
    X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)
    where = tmp_path / "spills"
    where.mkdir()
    calls = []
    write = spill_module.write_arrays

    def fails_on_the_third(file, arrays):
        calls.append(1)
        if len(calls) == 3:  # part of the partition is on disk, then the disk says no
            write(file, arrays[:1])
            raise FAILURES[failure]
        write(file, arrays)

    monkeypatch.setattr(spill_module, "write_arrays", fails_on_the_third)
    with dask.config.set(scheduler="synchronous"):  # partitions spilled in order: the third fails
        with pytest.warns(UserWarning) as warned:
            spilled = stream_model(spill=True, spill_dir=where).fit(*_collection(X, y))
        plain = stream_model(spill=False).fit(*_collection(X, y))
    messages = [str(w.message) for w in warned]
    assert len(messages) == 1, messages  # said once
    assert str(where) in messages[0] and str(FAILURES[failure]) in messages[0]
    assert "dropped" in messages[0] and "spill=False" in messages[0]
    assert len(calls) == 3  # nothing was written after the failure
    np.testing.assert_array_equal(spilled.coef_, plain.coef_)
    np.testing.assert_array_equal(spilled.intercept_, plain.intercept_)
    assert spilled.n_iter_ == plain.n_iter_
    assert spilled.history_[-1]["spill_bytes"] == 0
    assert all(r["read_retries"] == 0 for r in spilled.history_)  # the source's reads never failed
    assert os.listdir(where) == []


def test_a_spill_file_removed_mid_fit_is_read_from_the_source(tmp_path):
    """A temporary-file cleaner removes a spilled partition between passes: the read falls back."""
    X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)
    where = tmp_path / "spills"
    where.mkdir()

    def clean_up_at_pass_2(record):
        if record["pass"] == 2:
            # The reader, already reading the next pass, may meet a missing file and drop the spill (its
            # files and folder) while this loop runs: a file gone is what the cleaner wants.
            for directory in _spills(where):
                with contextlib.suppress(FileNotFoundError):
                    for name in os.listdir(where / directory):
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(where / directory / name)

    with pytest.warns(UserWarning, match=r"dropped after an I/O error \(FileNotFoundError"):
        model = stream_model(spill=True, spill_dir=where, callbacks=[clean_up_at_pass_2])
        spilled = model.fit(*_collection(X, y))
    plain = stream_model(spill=False).fit(*_collection(X, y))
    assert spilled.history_[0]["spill_bytes"] > 0 and spilled.history_[-1]["spill_bytes"] == 0
    np.testing.assert_array_equal(spilled.coef_, plain.coef_)
    assert os.listdir(where) == []


def test_a_dropped_spill_forgets_its_partitions_and_writes_no_more(tmp_path):
    spill = Spill(tmp_path)
    ones = np.ones(3)
    blocks = [Block(partition=p, X=np.full((3, 2), p), y=np.zeros(3), sample_weight=ones) for p in range(3)]
    assert spill.put(blocks[0]) and spill.put(blocks[1])
    os.remove(os.path.join(spill.path, "partition-1.bin"))
    assert spill.get(1) is None  # read from the source instead
    assert isinstance(spill.error, FileNotFoundError)
    assert spill.get(0) is None and 0 not in spill and spill.bytes == 0
    assert not spill.put(blocks[2]) and not os.path.exists(spill.path)
    spill.close()


@pytest.mark.parametrize("labels", [np.zeros(3), np.array(["a", "b", "c"], dtype=object)])
def test_a_spill_file_cut_short_without_an_error_is_dropped_and_read_from_the_source(tmp_path, labels):
    """A write the file-size limit cut short without raising: reading the file back drops the spill."""
    spill = Spill(tmp_path)
    block = Block(partition=0, X=np.ones((3, 200)), y=labels, sample_weight=np.ones(3))
    assert spill.put(block)
    name = os.path.join(spill.path, "partition-0.bin")
    with open(name, "r+b") as f:
        f.truncate(os.path.getsize(name) - 20)
    assert spill.get(0) is None  # read from the source instead
    assert spill.error is not None and 0 not in spill
    spill.close()


def test_a_spill_directory_that_cannot_be_created_means_no_spill(monkeypatch, tmp_path):
    X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)

    def refuse(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spill_module.tempfile, "mkdtemp", refuse)
    with pytest.warns(UserWarning, match="No space left on device"):
        spilled = stream_model(spill=True, spill_dir=tmp_path).fit(*_collection(X, y))
    monkeypatch.undo()
    np.testing.assert_array_equal(spilled.coef_, stream_model(spill=False).fit(*_collection(X, y)).coef_)


# -- item 6: spill_dir is checked as checkpoint_dir is, before any read ------------------------


def _bad_directory(kind, tmp_path, monkeypatch):
    """A ``spill_dir``/``checkpoint_dir`` of ``kind`` and the words its error must hold."""
    if kind == "a file":
        (tmp_path / "file").write_text("x")
        return tmp_path / "file", "it exists and is not a directory"
    if kind == "under a file":
        (tmp_path / "file").write_text("x")
        return tmp_path / "file" / "sub", "a part of its path is a file"
    if kind == "read-only":
        (tmp_path / "ro").mkdir()
        os.chmod(tmp_path / "ro", 0o555)
        if os.geteuid() == 0:  # root writes anywhere: the file system says no instead

            def read_only(*args, **kwargs):
                raise OSError(errno.EROFS, "Read-only file system")

            monkeypatch.setattr(archive.tempfile, "mkstemp", read_only)
        return tmp_path / "ro", "no file can be created in it"
    if kind == "a NUL byte":
        return f"{tmp_path}/a\0b", "it is not a valid path"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["a file", "under a file", "read-only", "a NUL byte"])
@pytest.mark.parametrize("parameter", ["spill_dir", "checkpoint_dir"])
def test_a_bad_directory_is_a_value_error_naming_it_before_any_read(parameter, kind, tmp_path, monkeypatch):
    X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)
    bad, problem = _bad_directory(kind, tmp_path, monkeypatch)
    with pytest.raises(ValueError) as info:
        stream_model(**{parameter: bad}).fit(*_collection(X, y, _never_read))
    message = str(info.value)
    assert message.startswith(f"{parameter}={str(bad)!r} cannot be used: {problem}")
    assert message.endswith("Give a directory this process can write to.")


@pytest.mark.parametrize("value", [5, 2.5, ["/tmp"], True])
@pytest.mark.parametrize("parameter", ["spill_dir", "checkpoint_dir"])
def test_a_directory_of_the_wrong_type_is_a_type_error_naming_it(parameter, value):
    X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)
    expected = rf"^{parameter} must be a path \(a str or os.PathLike\) or None, got "
    with pytest.raises(TypeError, match=expected):
        stream_model(**{parameter: value}).fit(*_collection(X, y, _never_read))


def test_a_missing_spill_dir_is_created_as_a_missing_checkpoint_dir_is(tmp_path):
    X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)
    where = tmp_path / "a" / "b"
    model = stream_model(spill=True, spill_dir=where).fit(*_collection(X, y))
    assert model.history_[-1]["spill_bytes"] > 0 and os.listdir(where) == []


# -- item 7: SIGTERM, and spills whose process is gone -----------------------------------------

_TERMINATED_FIT = textwrap.dedent(
    """
    import faulthandler, os, signal, sys, threading, time
    import dask, dask.array as da
    import numpy as np
    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine.data import spill

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks where a hung fit waits
    where, when = sys.argv[1], sys.argv[2]
    rng = np.random.RandomState(0)
    X = rng.randn(2000, 8)
    y = (X @ rng.randn(8) + 0.3 * rng.randn(2000) > 0).astype(int)
    trained, sent, once, said = [], [], threading.Lock(), threading.Lock()

    def say(*what):  # a whole line at a time: the reader's and the trainer's lines never mix
        with said:
            print(*what, flush=True)

    def stop(*what):  # once (threads of the first read spill at once), saying where
        with once:
            if not sent:
                sent.append(True)
                say(*what)
                os.kill(os.getpid(), signal.SIGTERM)

    def slow(rows):  # the first read: 8 partitions of 0.1 s each
        time.sleep(0.1)
        return rows

    put, get = spill.Spill.put, spill.Spill.get

    def put_then_stop(self, block):  # the first read: SIGTERM once a partition is spilled
        written = put(self, block)
        if written and when == "first read":
            stop("spilled", block.partition)
        return written

    def get_then_stop(self, p):  # a later read, from the spill, once a pass is trained
        if trained and when == "later pass":
            stop("reading", p)
        return get(self, p)

    spill.Spill.put, spill.Spill.get = put_then_stop, get_then_stop
    parts = [
        da.from_delayed(dask.delayed(slow)(X[i : i + 250]), (250, 8), float)
        for i in range(0, 2000, 250)
    ]

    def report(record):
        say("pass", record["pass"])
        trained.append(record["pass"])  # after its line: a later read's stop comes after it

    model = LinearSVC(solver="sbm", cache_bytes=20_000, tol=1e-12, max_iter=10_000, random_state=0,
                      spill=True, spill_dir=where, callbacks=[report])
    model.fit(da.concatenate(parts), da.from_array(y, chunks=250))
    print("finished", flush=True)
    """
)
# Generous: the fit is stopped a few seconds in, but a test on a machine at load 20 may wait for a
# minute or more; past this, the child is hung, and its threads' stacks are printed.
CHILD_ENDS_WITHIN = 600


@pytest.mark.parametrize("when", ["first read", "later pass"])
def test_sigterm_mid_fit_removes_the_spill_then_ends_the_process(when, tmp_path):
    # The fit sends itself SIGTERM at a known point (a partition just spilled in the first read, or
    # a read of a later pass from the spill), so the signal never races the end of the fit.
    where = tmp_path / "spills"
    where.mkdir()
    script = tmp_path / "fit.py"
    script.write_text(_TERMINATED_FIT)
    fit = subprocess.Popen(
        [sys.executable, str(script), str(where), when],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out, err = fit.communicate(timeout=CHILD_ENDS_WITHIN)
    except subprocess.TimeoutExpired:
        fit.send_signal(signal.SIGUSR1)  # faulthandler: every thread's stack, on stderr
        time.sleep(2)
        fit.kill()
        out, err = fit.communicate()
        pytest.fail(f"the fit did not end within {CHILD_ENDS_WITHIN} s of its SIGTERM:\n{out}\n{err}")
    lines = out.splitlines()
    if when == "first read":
        assert lines[0].startswith("spilled ") and not any(line.startswith("pass") for line in lines)
    else:
        assert lines[0] == "pass 0" and lines[-1].startswith("reading ")
    assert "finished" not in out
    assert fit.returncode == -signal.SIGTERM, err  # ended by SIGTERM, as it asked
    assert os.listdir(where) == []  # ... once the spill was removed


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # two passes only
def test_a_fit_restores_the_sigterm_handler_and_leaves_a_programs_own():
    X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)
    seen = []

    def look(record):
        seen.append(signal.getsignal(signal.SIGTERM))

    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    stream_model(max_iter=2, callbacks=[look]).fit(*_collection(X, y))
    assert seen and all(callable(h) and h is not signal.SIG_DFL for h in seen)  # while it runs
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # and no longer after
    mine = lambda signum, frame: None  # noqa: E731 - a program's own handler
    previous = signal.signal(signal.SIGTERM, mine)
    try:
        seen.clear()
        stream_model(max_iter=2, callbacks=[look]).fit(*_collection(X, y))
        assert seen and all(h is mine for h in seen)
    finally:
        signal.signal(signal.SIGTERM, previous)
    errors = []  # a fit outside the main thread installs nothing (Python would refuse)

    def fit_in_a_thread():
        try:
            seen.clear()
            stream_model(max_iter=2, callbacks=[look]).fit(*_collection(X, y))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=fit_in_a_thread)
    thread.start()
    thread.join()
    assert errors == [] and seen and all(h is signal.SIG_DFL for h in seen)


def test_a_spill_whose_process_is_gone_is_removed_by_the_next_spill(tmp_path):
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = tmp_path / (archive.owned_prefix(STEM, ended.pid) + "k2x9q_7a")
        live = tmp_path / (archive.owned_prefix(STEM, alive.pid) + "m3v8w1zz")
        other = tmp_path / "dask_streamsvm-spill-1234"  # a name of another form: not ours to judge
        for directory in (dead, live, other):
            directory.mkdir()
            (directory / "partition-0.bin").write_bytes(b"x" * 1000)
        (tmp_path / (archive.owned_prefix(STEM, ended.pid) + "symlink1")).symlink_to(live)
        X, y = noisy_linear_data(N_PARTS * PART_ROWS, 8)
        model = stream_model(spill=True, spill_dir=tmp_path).fit(*_collection(X, y))
        assert model.history_[-1]["spill_bytes"] > 0
        assert not dead.exists()
        assert (live / "partition-0.bin").exists() and (other / "partition-0.bin").exists()
    finally:
        alive.kill()
        alive.wait()


def test_a_spill_directory_is_named_with_its_owners_pid(tmp_path):
    spill = Spill(tmp_path)
    try:
        assert os.path.basename(spill.path).startswith(archive.owned_prefix(STEM))
        assert archive.stale_entries(tmp_path, STEM) == []  # this process is alive
    finally:
        spill.close()

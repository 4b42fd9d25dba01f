"""The spill steps back on any I/O error, its directory is checked like checkpoint_dir's, and
neither SIGTERM nor a killed process leaves a spill directory for good (issue 36, items 2, 6, 7)."""

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
import numpy as np
import pytest

from dask_streamsvm.engine.data import spill as spill_module
from dask_streamsvm.engine.data.source import Block
from dask_streamsvm.engine.data.spill import STEM, Spill
from dask_streamsvm.engine.store import archive

from ._helpers import noisy_linear_data, stream_model

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
            for directory in _spills(where):
                for name in os.listdir(where / directory):
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
    import sys, time
    import dask, dask.array as da
    import numpy as np
    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine import spill

    where = sys.argv[1]
    rng = np.random.RandomState(0)
    X = rng.randn(2000, 8)
    y = (X @ rng.randn(8) + 0.3 * rng.randn(2000) > 0).astype(int)

    def slow(rows):  # the first read: 8 partitions of 0.4 s each
        time.sleep(0.4)
        return rows

    get = spill.Spill.get

    def slow_get(self, p):  # later reads, from the spill: a pass takes about 0.4 s
        time.sleep(0.05)
        return get(self, p)

    spill.Spill.get = slow_get
    parts = [
        da.from_delayed(dask.delayed(slow)(X[i : i + 250]), (250, 8), float)
        for i in range(0, 2000, 250)
    ]

    def report(record):
        print(record["pass"], flush=True)

    model = LinearSVC(solver="sbm", cache_bytes=20_000, tol=1e-12, max_iter=10_000, random_state=0,
                      spill=True, spill_dir=where, callbacks=[report])
    model.fit(da.concatenate(parts), da.from_array(y, chunks=250))
    print("finished", flush=True)
    """
)


@pytest.mark.parametrize("when", ["first read", "later pass"])
def test_sigterm_mid_fit_removes_the_spill_then_ends_the_process(when, tmp_path):
    where = tmp_path / "spills"
    where.mkdir()
    script = tmp_path / "fit.py"
    script.write_text(_TERMINATED_FIT)
    fit = subprocess.Popen(
        [sys.executable, str(script), str(where)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        if when == "first read":  # a partition is spilled, the others are being computed
            deadline = time.monotonic() + 60
            while not any(os.listdir(where / d) for d in _spills(where)):
                assert fit.poll() is None and time.monotonic() < deadline, fit.communicate()
                time.sleep(0.01)
        else:
            assert fit.stdout.readline().strip() == "0"  # the first pass is trained, from the spill
        assert len(_spills(where)) == 1
        fit.send_signal(signal.SIGTERM)
        out, err = fit.communicate(timeout=30)
    finally:
        if fit.poll() is None:
            fit.kill()
            fit.communicate()
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

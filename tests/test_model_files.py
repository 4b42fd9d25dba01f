"""Model files: NumPy arrays and JSON, no pickle; round trips and refusals.

Model files and checkpoints under attack and accident (docs/reliability.md).

Every test injects a fault or a bad value into what the library writes or
reads (a planted symlink, a concurrent writer, a crashed writer's leftovers,
an unusable ``checkpoint_dir``, a FIFO, a zip bomb, a damaged or crafted
file) and checks what the user gets: a clear ValueError naming the file or
parameter, or the same model, never a followed symlink, a lost file, a hang
or an allocation the file's size does not bound.
"""

import contextlib
import functools
import hashlib
import io
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import tracemalloc
import warnings
import zipfile

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

import dask_streamsvm
from dask_streamsvm import BudgetedSVC, HashingMap, LinearSVC, OnePassSVC, load
from dask_streamsvm.engine.store import archive
from dask_streamsvm.engine.store import checkpoint as ckpt
from dask_streamsvm.features import PolynomialMap

from ._helpers import child_json_lines, noisy_linear_data, stream_model


def _data(k=2, n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 4)
    y = np.argmax(X[:, :k] + 0.3 * rng.randn(n, k), axis=1) if k > 2 else (X[:, 0] > 0).astype(int)
    return X, y


@pytest.mark.parametrize(
    "labels,params",
    [
        ([0, 1], {}),
        (["ham", "spam", "eggs"], {"class_weight": {"ham": 2.0, "spam": 1.0, "eggs": 0.5}}),
        ([-1, 1], {"probability": True, "loss": "hinge", "C": 0.3}),
    ],
)
def test_round_trip_gives_the_same_model(tmp_path, labels, params):
    X, y = _data(k=len(labels))
    y = np.asarray(labels, dtype=object if isinstance(labels[0], str) else None)[y]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    clf = LinearSVC(tol=1e-4, random_state=3, **params).fit(frame, y)
    path = tmp_path / "model.dsvm"
    clf.save(path)
    back = load(path)
    assert type(back) is LinearSVC
    assert back.get_params() == clf.get_params()
    for name in ("coef_", "intercept_", "classes_", "feature_names_in_"):
        np.testing.assert_array_equal(getattr(back, name), getattr(clf, name))
    assert back.objective_ == pytest.approx(clf.objective_, rel=0)
    assert back.n_iter_ == clf.n_iter_ and len(back.history_) == len(clf.history_)
    np.testing.assert_array_equal(back.predict(frame), clf.predict(frame))
    if params.get("probability"):
        np.testing.assert_array_equal(back.predict_proba(frame), clf.predict_proba(frame))
    lazy = back.predict(da.from_array(X, chunks=100))
    np.testing.assert_array_equal(lazy.compute(), clf.predict(frame))


def test_pickle_still_works():
    X, y = _data()
    clf = LinearSVC(random_state=0).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.coef_, clf.coef_)


def test_parameters_that_are_not_data_are_not_saved(tmp_path):
    X, y = _data()
    clf = LinearSVC(
        random_state=np.random.RandomState(0), validation_data=(X, y), callbacks=[lambda r: False]
    )
    clf.fit(X, y).save(tmp_path / "m")
    back = load(tmp_path / "m")
    assert back.random_state is None and back.callbacks is None and back.validation_data is None


def test_unfitted_model_cannot_be_saved(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        LinearSVC().save(tmp_path / "m")


@pytest.fixture
def saved(tmp_path):
    X, y = _data()
    path = tmp_path / "model.dsvm"
    LinearSVC(random_state=0).fit(X, y).save(path)
    return path


def _rewrite(path, edit):
    """Rewrite the zip at ``path`` member by member through ``edit(name, data) -> data | None``."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            data = edit(name, data)
            if data is not None:
                z.writestr(name, data)


def test_an_edited_array_is_refused(saved):
    def edit(name, data):
        if name == "arrays/coef_.npy":
            return data[:-8] + np.float64(1e6).tobytes()
        return data

    _rewrite(saved, edit)
    with pytest.raises(ValueError, match="'coef_' does not match its checksum"):
        load(saved)


def test_a_pickled_payload_is_never_executed(saved, tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    buffer = io.BytesIO()
    np.save(buffer, np.array([Payload()], dtype=object), allow_pickle=True)
    blob = buffer.getvalue()

    def edit(name, data):
        if name == "arrays/coef_.npy":
            return blob
        if name == "model.json":
            meta = json.loads(data)
            import hashlib

            meta["arrays"]["coef_"].update(sha256=hashlib.sha256(blob).hexdigest(), dtype="|O", shape=[1])
            return json.dumps(meta)
        return data

    _rewrite(saved, edit)
    with pytest.raises(ValueError, match="cannot be read without pickle"):
        load(saved)
    assert not marker.exists()


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda meta: meta.update(format="something-else"), "not a dask_streamsvm model file"),
        (lambda meta: meta.update(version=99), "format version 99"),
        (lambda meta: meta.update(estimator="os.system"), "unknown estimator 'os.system'"),
        (lambda meta: meta["params"].update(C=-1.0), "inconsistent model file: C must be"),
        (lambda meta: meta["attributes"].update(n_features_in_=7), "inconsistent model file: coef_"),
    ],
)
def test_inconsistent_metadata_is_refused(saved, edit, message):
    def rewrite(name, data):
        if name != "model.json":
            return data
        meta = json.loads(data)
        edit(meta)
        return json.dumps(meta)

    _rewrite(saved, rewrite)
    with pytest.raises(ValueError, match=message):
        load(saved)


def test_files_that_are_not_models_are_refused(tmp_path, saved):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not a zip archive"):
        load(text)
    _rewrite(saved, lambda name, data: None if name == "arrays/intercept_.npy" else data)
    with pytest.raises(ValueError, match="'intercept_' is missing"):
        load(saved)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "absent.dsvm")
    assert dask_streamsvm.load is load


def test_model_files_record_the_library_version(saved):
    # The archive takes it from the installed metadata (the engine does not import the package root).
    with zipfile.ZipFile(saved) as archive:
        meta = json.loads(archive.read("model.json"))
    assert meta["format"] == "dask-streamsvm-model" and meta["version"] == 1
    assert meta["library_version"] == dask_streamsvm.__version__, "stale install: run pip install -e ."


# -- Model files and checkpoints under attack and accident (docs/reliability.md)

N_PARTS, PART_ROWS = 10, 40


def _checkpoint_data(seed=0, n=N_PARTS * PART_ROWS, d=5):
    return noisy_linear_data(n, d, seed)


def _stream(**params):
    return stream_model(**params)


@pytest.fixture(scope="module")
def model():
    X, y = _checkpoint_data()
    return LinearSVC(random_state=0).fit(X, y), X


@pytest.fixture
def saved_file(tmp_path, model):
    path = tmp_path / "model.dsvm"
    model[0].save(path)
    return path


def _predicts_like(loaded, model):
    clf, X = model
    return np.array_equal(loaded.decision_function(X), clf.decision_function(X)) and np.array_equal(
        loaded.classes_, clf.classes_
    )


def _members(path):
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def _write_zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def _edit_meta(path, edit):
    """Rewrite ``path`` with ``edit(meta)`` applied to its model.json (its arrays untouched)."""
    members = _members(path)
    meta = json.loads(members["model.json"])
    edit(meta)
    members["model.json"] = json.dumps(meta)
    _write_zip(path, members)


# -- writing: temporary files


def _first_names_tried(names):
    """A stand-in for tempfile's name generator: ``names`` first, then random ones."""

    def candidates():
        yield from names
        yield from _real_candidate_names()

    return candidates


_real_candidate_names = tempfile._get_candidate_names


@pytest.mark.parametrize("kind", ["FIFO", "socket", "directory"])
def test_save_refuses_a_path_that_is_not_a_regular_file_and_leaves_it(tmp_path, model, kind):
    """The rename of a finished file replaced whatever was at the path: a FIFO, a socket, and as
    root /dev/null itself (issue 50: every output path refuses FIFOs, devices and sockets)."""
    import socket

    model, _ = model
    path = tmp_path / "model.dsvm"
    with contextlib.closing(socket.socket(socket.AF_UNIX)) as server:
        if kind == "FIFO":
            os.mkfifo(path)
        elif kind == "directory":
            path.mkdir()
        else:
            server.bind(str(path))
        mode = os.lstat(path).st_mode
        with pytest.raises(ValueError, match=re.escape(f"{path} exists and is not a regular file")):
            model.save(path)
    assert os.lstat(path).st_mode == mode  # left as it was
    assert [p.name for p in tmp_path.iterdir()] == ["model.dsvm"]  # and nothing written beside it


def test_save_over_a_symbolic_link_replaces_the_link_not_its_target(tmp_path, model):
    model, _ = model
    target = tmp_path / "elsewhere" / "precious.txt"
    target.parent.mkdir()
    target.write_text("precious")
    link = tmp_path / "model.dsvm"
    link.symlink_to(target)
    model.save(link)
    assert target.read_text() == "precious" and not link.is_symlink()
    np.testing.assert_array_equal(load(link).coef_, model.coef_)


@pytest.mark.parametrize("where", ["the old predictable name", "the first name tried"])
def test_a_planted_symlink_is_never_followed(tmp_path, model, monkeypatch, where):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = tmp_path / "model.dsvm"
    if where == "the old predictable name":
        (tmp_path / f"model.dsvm.tmp-{os.getpid()}").symlink_to(victim)
    else:  # the name mkstemp tries first is taken by a symlink: it must take another name
        os.symlink(victim, tmp_path / (archive.temp_prefix(path) + "planted"))
        monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: _first_names_tried(["planted"])())
    model[0].save(path)
    assert victim.read_text() == "precious"
    assert path.is_file() and not path.is_symlink()
    assert _predicts_like(load(path), model)


def test_two_threads_writing_one_checkpoint_both_succeed_and_leave_it_whole(tmp_path, monkeypatch):
    arrays = {name: np.full(50_000, float(i)) for i, name in enumerate(("first", "second"))}
    both_writing = threading.Barrier(2, timeout=20)
    original = np.lib.format.write_array

    def write_array(fp, array, *args, **kwargs):  # both writers are mid-file at once
        if array.shape == (50_000,):
            both_writing.wait()
        return original(fp, array, *args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", write_array)
    errors = []

    def write(name):
        try:
            ckpt.Checkpoints(tmp_path, None, {"fit": 1}).save({"writer": name}, {"W": arrays[name]})
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)

    for _ in range(3):
        threads = [threading.Thread(target=write, args=(name,)) for name in arrays]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors, errors
    state, saved_file = ckpt.Checkpoints(tmp_path, None, {"fit": 1}).load()
    np.testing.assert_array_equal(saved_file["W"], arrays[state["writer"]])  # one writer's file, whole
    assert sorted(os.listdir(tmp_path)) == [ckpt.FILE]  # no temporary file left


def test_a_crashed_writers_temporary_file_is_removed_by_the_next_write(tmp_path, model):
    path = tmp_path / "model.dsvm"
    dead = _dead_pid()
    stale = tmp_path / (archive.temp_prefix(path, pid=dead) + "k3j9x0qa")
    stale.write_bytes(b"half a model")
    live = tmp_path / (archive.temp_prefix(path, pid=os.getppid()) + "a1b2c3d4")  # a live writer's
    live.write_bytes(b"being written")
    others = [tmp_path / f"model.dsvm.tmp-{dead}", tmp_path / "notes.tmp-1-abc"]  # not ours
    for other in others:
        other.write_bytes(b"someone else's")
    model[0].save(path)
    assert not stale.exists()
    assert live.exists() and all(other.exists() for other in others)
    assert _predicts_like(load(path), model)


def _dead_pid():
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


# -- writing: checkpoint_dir is checked before training


def _unusable_dir(kind, tmp_path):
    if kind == "a file":
        path = tmp_path / "not-a-dir"
        path.write_text("x")
        return path, "it exists and is not a directory"
    if kind == "a path through a file":
        (tmp_path / "file").write_text("x")
        return tmp_path / "file" / "checkpoints", "a part of its path is a file"
    if kind == "a read-only directory":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only directories; the sysfs case covers root")
        path = tmp_path / "read-only"
        path.mkdir(mode=0o500)
        return path, "no file can be created in it"
    if not os.path.isdir("/sys/kernel"):
        pytest.skip("no sysfs here")
    return "/sys/kernel", "no file can be created in it"  # not writable, even by root


@pytest.mark.parametrize("kind", ["a file", "a path through a file", "a read-only directory", "sysfs"])
def test_an_unusable_checkpoint_dir_fails_before_any_partition_is_read(tmp_path, kind):
    directory, problem = _unusable_dir(kind, tmp_path)
    X, y = _checkpoint_data()
    reads = []

    def counted(block):
        reads.append(len(block))
        return block

    Xd = da.from_array(X, chunks=(PART_ROWS, -1)).map_blocks(counted, dtype=X.dtype, meta=np.empty((0, 0)))
    yd = da.from_array(y, chunks=PART_ROWS)
    with pytest.raises(
        ValueError, match=re.escape(f"checkpoint_dir='{directory}' cannot be used: {problem}")
    ):
        _stream(checkpoint_dir=directory).fit(Xd, yd)
    assert reads == []


# -- reading: what is not a regular file


_LOAD_EACH = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a reader of /dev/zero fails, not the machine
    from dask_streamsvm import load
    for path in sys.argv[1:]:
        try:
            load(path)
            print(json.dumps(["loaded", path]), flush=True)
        except BaseException as exc:
            kind = "ValueError" if isinstance(exc, ValueError) else type(exc).__name__
            print(json.dumps([kind, str(exc)]), flush=True)
    """
)


def test_load_refuses_what_is_not_a_regular_file_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "model.fifo")
    (tmp_path / "model.dsvm").symlink_to(tmp_path / "model.fifo")
    paths = [str(tmp_path), str(tmp_path / "model.fifo"), str(tmp_path / "model.dsvm"), "/dev/zero"]
    # In a process of its own, with a memory limit: a reader that blocks or reads forever fails the test only.
    try:
        run = subprocess.run(
            [sys.executable, "-c", _LOAD_EACH, *paths], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"load blocked; done before: {exc.stdout}")
    outcomes = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(outcomes) == len(paths), run.stderr[-2000:]
    for path, (kind, message) in zip(paths, outcomes, strict=True):
        assert kind == "ValueError" and path in message and "not a regular file" in message, (path, message)


def _outcome(function, *args):
    try:
        return function(*args)
    except Exception as exc:
        return exc


# -- reading: bounded allocation

BOMB_FEATURES = 25_000_000  # 200 MB of float64 zeros, about 200 KB deflated


@pytest.fixture(scope="module")
def bomb(tmp_path_factory, model):
    """A model file without model.json whose coef_ is 200 MB of zeros; and the model's meta, sha."""
    clf, _ = model
    folder = tmp_path_factory.mktemp("bomb")
    clf.save(folder / "model.dsvm")
    members = _members(folder / "model.dsvm")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (1, BOMB_FEATURES)}
    )
    zeros, sha = bytes(8 << 20), hashlib.sha256(header.getvalue())
    path = folder / "bomb-base.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("arrays/coef_.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            for start in range(0, 8 * BOMB_FEATURES, len(zeros)):
                chunk = zeros[: min(len(zeros), 8 * BOMB_FEATURES - start)]
                member.write(chunk)
                sha.update(chunk)
        for name in ("arrays/intercept_.npy", "arrays/classes_.npy"):
            z.writestr(name, members[name])
    return path, json.loads(members["model.json"]), sha.hexdigest()


def _bomb_variant(bomb, target, edit):
    base, meta, sha = bomb
    meta = json.loads(json.dumps(meta))
    edit(meta, sha)
    target.write_bytes(base.read_bytes())
    with zipfile.ZipFile(target, "a") as z:  # the 200 MB member is copied, not compressed again
        z.writestr("model.json", json.dumps(meta))
    return target


def _consistent_table(meta, sha):
    meta["arrays"]["coef_"].update(shape=[1, BOMB_FEATURES], sha256=sha)


def _consistent_model(meta, sha):
    _consistent_table(meta, sha)
    meta["attributes"]["n_features_in_"] = BOMB_FEATURES


BOMBS = {
    "table unchanged": (lambda meta, sha: None, "'coef_' takes 200000128 bytes, not the 40 its shape needs"),
    "table consistent": (_consistent_table, r"coef_ has shape \(1, 25000000\), but 2 classes"),
    "model consistent": (_consistent_model, "would decompress to 2000"),
}


@pytest.mark.parametrize("case", list(BOMBS))
def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path, bomb, monkeypatch, case):
    edit, message = BOMBS[case]
    path = _bomb_variant(bomb, tmp_path / "bomb.dsvm", edit)
    assert path.stat().st_size < 1_000_000
    if case == "model consistent":  # a valid model of 200 MB of zeros: over 64 times its size
        monkeypatch.setattr(archive, "MIN_LIMIT_BYTES", 0)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=message):
            load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, f"reading a refused file allocated {peak} bytes"


def test_an_oversized_model_json_is_refused_unread(saved_file, monkeypatch):
    monkeypatch.setattr(archive, "META_MAX_BYTES", 4096)
    _edit_meta(saved_file, lambda meta: meta["attributes"].update(padding="x" * 5000))
    with pytest.raises(ValueError, match="model.json is larger than 4096 bytes"):
        load(saved_file)


# -- reading: every malformed file is a ValueError


def test_every_one_byte_corruption_raises_value_error_or_loads_the_same_model(saved_file, model, tmp_path):
    data = saved_file.read_bytes()
    damaged = tmp_path / "damaged.dsvm"
    outcomes = {"ValueError": 0, "same model": 0}
    for position in range(0, len(data), 3):
        for flip in (0xFF, 0x01):
            edited = bytearray(data)
            edited[position] ^= flip
            damaged.write_bytes(bytes(edited))
            try:
                loaded = load(damaged)
            except ValueError as exc:
                assert str(damaged) in str(exc), exc
                outcomes["ValueError"] += 1
                continue
            assert _predicts_like(loaded, model), f"byte {position} ^ {flip:#x} gave another model"
            outcomes["same model"] += 1
    for size in range(0, len(data), 7):
        damaged.write_bytes(data[:size])
        with pytest.raises(ValueError, match=re.escape(str(damaged))):
            load(damaged)
    assert outcomes["ValueError"] > outcomes["same model"] > 0


def _deep(meta):
    meta["params"]["class_weight"] = "DEEP"


CRAFTED = {
    "deep nesting": (_deep, "model.json is not valid JSON|nests deeper"),
    "nesting just below the parser's limit": (
        lambda meta: meta["params"].update(class_weight=json.loads("[" * 500 + "]" * 500)),
        "nests deeper than 64",
    ),
    "an array entry that is a number": (
        lambda meta: meta["arrays"].update(coef_=5),
        "entry of array 'coef_'",
    ),
    "a shape that is a string": (lambda meta: meta["arrays"]["coef_"].update(shape="x"), "entry of array"),
    "a negative shape": (lambda meta: meta["arrays"]["coef_"].update(shape=[-1, 5]), "entry of array"),
    "a huge declared shape": (
        lambda meta: meta["arrays"]["coef_"].update(shape=[10**6, 10**6]),
        "coef_ has shape",
    ),
    "an unknown array": (
        lambda meta: meta["arrays"].update(extra=dict(meta["arrays"]["coef_"])),
        "array 'extra' is missing",
    ),
    "params that are a list": (lambda meta: meta.update(params=[1]), "'params' must be a JSON object"),
    "an estimator that is a list": (lambda meta: meta.update(estimator=["LinearSVC"]), "unknown estimator"),
    "attributes that are a string": (lambda meta: meta.update(attributes="x"), "lacks its 'attributes'"),
    "n_features_in_ infinite": (
        lambda meta: meta["attributes"].update(n_features_in_=float("inf")),
        "n_features_in_ must be an integer",
    ),
    "n_iter_ NaN": (
        lambda meta: meta["attributes"].update(n_iter_=float("nan")),
        "n_iter_ must be an integer",
    ),
    "history_ a number": (lambda meta: meta["attributes"].update(history_=3), "history_ must be a list"),
    "a feature map of a list": (
        lambda meta: meta["params"].update(feature_map={"__feature_map__": 5}),
        "a feature map is saved as",
    ),
    "a feature map that is true": (
        lambda meta: meta["params"].update(feature_map=True),
        "feature_map must be a map of dask_streamsvm.features",
    ),
    "class_weight pairs of lists": (
        lambda meta: meta["params"].update(class_weight={"__pairs__": [[[0], 1]]}),
        "dict keys must be numbers or strings",
    ),
    "a nested parameter name": (
        lambda meta: meta["params"].update(feature_map__degree=3),
        "unknown parameters",
    ),
    "random_state a string": (lambda meta: meta["params"].update(random_state="x"), "random_state must be"),
    "C infinite": (lambda meta: meta["params"].update(C=float("inf")), "C must be a finite number"),
    "loss unknown": (lambda meta: meta["params"].update(loss="evil"), "loss"),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_crafted_metadata_raises_a_value_error_naming_the_file(saved_file, case):
    edit, message = CRAFTED[case]
    members = _members(saved_file)
    meta = json.loads(members["model.json"])
    edit(meta)
    text = json.dumps(meta).replace('"DEEP"', "[" * 100_000 + "]" * 100_000)
    members["model.json"] = text
    _write_zip(saved_file, members)
    with pytest.raises(ValueError, match=message) as info:
        load(saved_file)
    assert str(saved_file) in str(info.value)


def test_parameters_that_point_at_code_or_files_are_never_restored(saved_file):
    _edit_meta(
        saved_file,
        lambda meta: meta["params"].update(
            checkpoint_dir="/etc", callbacks=["os.system"], validation_data=[[1.0], [1]]
        ),
    )
    loaded = load(saved_file)
    assert loaded.checkpoint_dir is None and loaded.callbacks is None and loaded.validation_data is None


def test_a_saved_model_keeps_no_checkpoint_dir(tmp_path):
    X, y = _checkpoint_data()
    fitted = _stream(checkpoint_dir=tmp_path / "ck", max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted.fit(da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS))
    fitted.save(tmp_path / "m.dsvm")
    with zipfile.ZipFile(tmp_path / "m.dsvm") as z:
        assert json.loads(z.read("model.json"))["params"]["checkpoint_dir"] is None


# -- reading: checkpoints get the same protections


def _checkpointed(tmp_path, **params):
    X, y = _checkpoint_data()
    Xd, yd = da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)

    def stop_at_2(record):
        return record["pass"] == 2

    _stream(checkpoint_dir=tmp_path, callbacks=[stop_at_2], **params).fit(Xd, yd)
    return Xd, yd


@pytest.mark.parametrize("damage", ["truncated", "a fifo", "a bomb of a declared size"])
def test_resuming_from_a_damaged_checkpoint_raises_a_value_error_naming_it(tmp_path, damage):
    Xd, yd = _checkpointed(tmp_path)
    path = tmp_path / ckpt.FILE
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "a fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        _edit_meta(path, lambda meta: meta["arrays"]["W"].update(shape=[10**9, 6]))
    outcome = []
    resume = functools.partial(_stream(checkpoint_dir=tmp_path).fit, Xd, yd, resume=True)
    fit = threading.Thread(target=lambda: outcome.append(_outcome(resume)), daemon=True)
    fit.start()
    fit.join(60)
    if fit.is_alive() and damage == "a fifo":
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    assert not fit.is_alive(), "resuming blocked"
    assert isinstance(outcome[0], ValueError) and str(path) in str(outcome[0]), outcome


# -- resume: equal parameters written differently


def test_resume_accepts_equal_parameters_written_differently(tmp_path):
    then = dict(class_weight={0: 1, 1: np.float64(2.0)}, random_state=np.int64(0), C=np.float64(0.5))
    now = dict(class_weight={1: 2.0, 0: 1}, random_state=0, C=0.5)
    Xd, yd = _checkpointed(tmp_path, **then)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        resumed = _stream(checkpoint_dir=tmp_path, **now).fit(Xd, yd, resume=True)
        reference = _stream(**now).fit(Xd, yd)
    np.testing.assert_array_equal(resumed.coef_, reference.coef_)
    assert resumed.n_iter_ == reference.n_iter_


def test_the_fingerprint_tells_different_parameters_apart_and_equal_ones_together():
    def fingerprint(**params):
        return ckpt.canonical(params)

    assert fingerprint(w={0: 1, 1: 2}) == fingerprint(w={1: np.int64(2), 0: 1.0})
    assert fingerprint(w={0: 1, 1: 2}) != fingerprint(w={0: 2, 1: 1})
    assert fingerprint(r=np.random.RandomState(0)) == fingerprint(r=np.random.RandomState(0))
    assert fingerprint(r=np.random.RandomState(0)) != fingerprint(r=np.random.RandomState(1))
    # repr() elides long parameter lists, so it took these two maps for one.
    columns = [f"column_{i}" for i in range(300)]
    first, second = HashingMap(columns=columns), HashingMap(columns=[*columns[:-1], "other"])
    assert repr(first) == repr(second)
    assert fingerprint(m=first) != fingerprint(m=second)
    assert json.loads(json.dumps(fingerprint(m=first, w={"a": 1}))) == fingerprint(m=first, w={"a": 1})


# -- issue 36, round three: crafted model files


@pytest.fixture
def saved_model(tmp_path):
    X, y = noisy_linear_data(60, 3)
    path = tmp_path / "model.dsvm"
    LinearSVC(random_state=0).fit(X, y).save(path)
    return path


def _replace_array(path, name, array):
    """Rewrite ``path`` with ``arrays/name.npy`` replaced by ``array``, its table entry to match."""
    import hashlib
    import io

    with zipfile.ZipFile(path) as z:
        members = {m: z.read(m) for m in z.namelist()}
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    members[f"arrays/{name}.npy"] = buffer.getvalue()
    meta = json.loads(members["model.json"])
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()  # of the whole member, as the archive writes it
    meta["arrays"][name] = {"dtype": array.dtype.str, "shape": list(array.shape), "sha256": digest}
    members["model.json"] = json.dumps(meta)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for member, data in members.items():
            z.writestr(member, data)


@pytest.mark.parametrize("dtype", [np.complex128, "<U8", "<M8[ns]"])
def test_weights_that_are_not_real_numbers_are_refused(saved_model, dtype):
    coef = load(saved_model).coef_
    crafted = coef + 1j if dtype == np.complex128 else coef.astype(dtype)
    _replace_array(saved_model, "coef_", crafted)
    message = f"{saved_model}: inconsistent model file: coef_ has dtype"
    with pytest.raises(ValueError, match=re.escape(message)):
        load(saved_model)


def _scaled(array, value, first_only=False):
    out = np.array(array, dtype=np.float64)
    if first_only:
        out.flat[0] = value
    else:
        out[...] = value
    return out


# What each case sets: every weight to 1e308 (three features: they sum beyond float64); one weight
# and the intercept each to 1e308 (neither alone overflows, their sum does); Platt's slope infinite.
_BEYOND = {
    "coef_": {"coef_": (1e308, False)},
    "coef_ and intercept_": {"coef_": (1e308, True), "intercept_": (1e308, False)},
    "probA_": {"probA_": (np.inf, False)},
}


@pytest.mark.parametrize("case", list(_BEYOND))
def test_weights_that_score_beyond_float64_are_refused_at_load_and_at_save(tmp_path, case):
    X, y = noisy_linear_data(60, 3)
    path = tmp_path / "model.dsvm"
    if case == "probA_":
        model = LinearSVC(probability=True, random_state=0).fit(X, y)
    else:
        model = dask_streamsvm.LogisticRegression(random_state=0).fit(X, y)
    model.save(path)
    edits = {name: _scaled(getattr(model, name), *how) for name, how in _BEYOND[case].items()}
    for name, array in edits.items():
        _replace_array(path, name, array)
    expected = "probA_ holds NaN or infinity" if case == "probA_" else "coef_ and intercept_ are too large"
    with pytest.raises(ValueError, match=re.escape(f"{path}: inconsistent model file: {expected}")):
        load(path)
    # Below the bound the model loads, and its probabilities are numbers (|coef_| sums to 3e307).
    for name, array in edits.items():
        _replace_array(path, name, np.full_like(array, 1e307 / len(edits)))
    assert np.isfinite(load(path).predict_proba(np.clip(X, -1, 1))).all()
    # A model the file could not hold is not saved, and nothing is written.
    if case != "probA_":
        for name, array in edits.items():
            setattr(model, name, array)
        with pytest.raises(ValueError, match="too large to score with.*nothing was written"):
            model.save(tmp_path / "other.dsvm")
        assert not (tmp_path / "other.dsvm").exists()


_LOAD = """
    import json, sys
    from dask_streamsvm import load
    for path in sys.argv[1:]:
        try:
            load(path)
            print(json.dumps(["loaded", ""]), flush=True)
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]), flush=True)
"""


def test_a_crafted_degree_of_the_polynomial_map_is_refused_without_hanging(tmp_path):
    X, y = noisy_linear_data(60, 3)
    saved_model = tmp_path / "model.dsvm"
    LinearSVC(random_state=0, feature_map=PolynomialMap(degree=3)).fit(X, y).save(saved_model)
    degrees = [2**70, 2**62, 61]  # numba's TypingError; a loop of 2**62 steps; an int64 binomial that wraps
    paths = []
    for degree in degrees:
        with zipfile.ZipFile(saved_model) as z:
            members = {m: z.read(m) for m in z.namelist()}
        meta = json.loads(members["model.json"])
        meta["params"]["feature_map"]["__feature_map__"][1]["degree"] = degree
        members["model.json"] = json.dumps(meta)
        paths.append(tmp_path / f"degree{degree}.dsvm")
        with zipfile.ZipFile(paths[-1], "w") as z:
            for member, data in members.items():
                z.writestr(member, data)
    for path, degree, (kind, message) in zip(paths, degrees, child_json_lines(_LOAD, *paths), strict=True):
        assert kind == "ValueError", (degree, kind, message)
        assert f"{path}: inconsistent model file: degree must be at most 60, got degree={degree}" in message
    with pytest.raises(ValueError, match="degree must be at most 60"):
        LinearSVC(feature_map=PolynomialMap(degree=100, n_features=64)).fit(X, y)


# -- OnePassSVC and BudgetedSVC (issue 53) ----------------------------------------------------------


def _kernel_models():
    """The estimators of the round trips: BudgetedSVC with and without an intercept, OnePassSVC with
    lookahead 1 and 10 (the buffer saved), and without the scaling."""
    return {
        "budgeted": lambda: BudgetedSVC(budget=15, max_iter=3, random_state=0),
        "budgeted without intercept": lambda: BudgetedSVC(budget=15, max_iter=2, fit_intercept=False,
                                                          random_state=0),
        "onepass": lambda: OnePassSVC(random_state=0),
        "onepass lookahead 1, not standardized": lambda: OnePassSVC(lookahead=1, standardize=False,
                                                                    random_state=0),
    }  # fmt: skip


def _same_predictions(back, model, X):
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(back.predict(X), model.predict(X))


@pytest.mark.parametrize("name", list(_kernel_models()))
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("form", ["in memory", "dask dataframe"])
def test_kernel_and_one_pass_models_round_trip_and_go_on_with_partial_fit(tmp_path, name, k, form):
    X, y = _data(k=k, n=240)
    labels = np.asarray(["ham", "spam", "eggs"], dtype=object)[y]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = _kernel_models()[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # OnePassSVC's majority-class check may speak
        if form == "in memory":
            model.fit(frame, labels)
        else:
            table = dd.from_pandas(frame.assign(label=labels), npartitions=3)
            model.fit(table, "label")
    path = tmp_path / "model.dsvm"
    model.save(path)
    back = load(path)
    assert type(back) is type(model) and back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.classes_, model.classes_)
    np.testing.assert_array_equal(back.feature_names_in_, model.feature_names_in_)
    _same_predictions(back, model, frame)
    lazy = back.decision_function(dd.from_pandas(frame, npartitions=2)).compute()
    np.testing.assert_array_equal(np.asarray(lazy), model.decision_function(frame))
    if isinstance(model, BudgetedSVC):
        for attr in ("n_support_", "intercept_", "gamma_", "n_iter_"):
            np.testing.assert_array_equal(getattr(back, attr), getattr(model, attr))
        for mine, theirs in zip(back.dual_coef_, model.dual_coef_, strict=True):
            np.testing.assert_array_equal(mine, theirs)
        for mine, theirs in zip(back.support_vectors_, model.support_vectors_, strict=True):
            np.testing.assert_array_equal(mine, theirs)
        assert str(back.merge_stats_) == str(model.merge_stats_)  # nan (no counter) equal too
    else:
        for attr in ("coef_", "intercept_", "radius_", "n_core_vectors_", "majority_fallback_"):
            np.testing.assert_array_equal(getattr(back, attr), getattr(model, attr))
    # partial_fit goes on from the loaded model as from the saved one (the buffers, the scaling and
    # the budget's steps included).
    more, more_y = _data(k=k, n=60, seed=1)
    more = pd.DataFrame(more, columns=frame.columns)
    for m in (model, back):
        m.partial_fit(more, np.asarray(["ham", "spam", "eggs"], dtype=object)[more_y])
    _same_predictions(back, model, frame)


def test_a_one_pass_model_that_kept_the_majority_class_round_trips(tmp_path):
    X, y = _data(n=200)
    model = OnePassSVC(random_state=0).fit(X, y)
    model._keep_majority(1)  # the constant model a failed fit keeps
    model.save(tmp_path / "m.dsvm")
    back = load(tmp_path / "m.dsvm")
    assert back.majority_fallback_ and not back.coef_.any()
    _same_predictions(back, model, X)


def test_a_partial_fit_buffer_and_a_normalize_false_norm_round_trip(tmp_path):
    X, y = _data(n=200)
    X = X / np.linalg.norm(np.c_[X, np.ones(len(X))], axis=1, keepdims=True)  # rows of equal norms
    X = np.c_[X, np.sqrt(np.maximum(1.0 - np.sum(X**2, axis=1), 0.0))]  # ... with the constant feature
    for cut in range(10, 60):  # a first block that leaves rows in the buffer
        model = OnePassSVC(normalize=False, lookahead=5).partial_fit(X[:cut], y[:cut], classes=[0, 1])
        if model._balls.state.n_buf.any():
            break
    assert model._balls.state.n_buf.any()
    model.save(tmp_path / "m.dsvm")
    back = load(tmp_path / "m.dsvm")
    assert back._balls.norm == model._balls.norm
    for m in (model, back):
        m.partial_fit(X[cut:], y[cut:])
    _same_predictions(back, model, X)


@pytest.fixture(scope="module")
def kernel_files(tmp_path_factory):
    """``{kind: (model, X, file bytes)}`` of a 3-class BudgetedSVC and OnePassSVC."""
    X, y = _data(k=3, n=200)
    folder = tmp_path_factory.mktemp("kernel")
    files = {}
    for kind, model in (("budgeted", BudgetedSVC(budget=10, max_iter=2, random_state=0)),
                        ("onepass", OnePassSVC(lookahead=3, random_state=0))):  # fmt: skip
        model.fit(X, y)
        model.save(folder / f"{kind}.dsvm")
        files[kind] = (model, X, (folder / f"{kind}.dsvm").read_bytes())
    return files


def test_a_truncated_kernel_or_one_pass_model_file_is_refused_naming_it(kernel_files, tmp_path):
    damaged = tmp_path / "damaged.dsvm"
    for _, _, data in kernel_files.values():
        for size in range(0, len(data), max(len(data) // 60, 1)):
            damaged.write_bytes(data[:size])
            with pytest.raises(ValueError, match=re.escape(str(damaged))):
                load(damaged)


def _kernel_file(kernel_files, kind, tmp_path):
    path = tmp_path / f"{kind}.dsvm"
    path.write_bytes(kernel_files[kind][2])
    return path


# What each case edits in the file, and what the error says.
KERNEL_EDITS = {
    "budgeted: a declared shape": (
        "budgeted", lambda p: _edit_meta(p, lambda m: m["arrays"]["beta"].update(shape=[10**7])),
        r"beta has shape \(10000000,\), but 3 classes, n_features_in_=4 and 30 support vectors need",
    ),
    "budgeted: more support vectors than the budget allows": (
        "budgeted", lambda p: _edit_meta(p, lambda m: m["params"].update(budget=5)),
        "support_vectors_ holds 30 vectors, more than budget=5",
    ),
    "budgeted: n_support_ over the budget": (
        "budgeted", lambda p: _replace_array(p, "n_support_", np.array([11, 9, 10])),
        r"n_support_ holds counts outside \[0, 10\]",
    ),
    "budgeted: n_support_ that does not add up": (
        "budgeted", lambda p: _replace_array(p, "n_support_", np.array([10, 9, 10])),
        "n_support_ .10, 9, 10. sums to 29, but support_vectors_ holds 30 vectors",
    ),
    "budgeted: n_support_ of floats": (
        "budgeted", lambda p: _replace_array(p, "n_support_", np.array([10.0, 10.0, 10.0])),
        "n_support_ has dtype float64; it holds counts",
    ),
    "budgeted: a NaN support vector": (
        "budgeted", lambda p: _replace_array(p, "support_vectors_", np.full((30, 4), np.nan)),
        "support_vectors_ holds NaN or infinity",
    ),
    "budgeted: complex coefficients": (
        "budgeted", lambda p: _replace_array(p, "beta", np.ones(30) + 1j),
        "beta has dtype complex128; a model's weights are real numbers",
    ),
    "budgeted: squared norms that are not the vectors'": (
        "budgeted", lambda p: _replace_array(p, "sv_sqnorm", np.full(30, 7.0)),
        r"sv_sqnorm\[0\] = 7.0 is not the squared norm of support vector 0",
    ),
    "budgeted: a gamma_ that is not the parameter's": (
        "budgeted", lambda p: _edit_meta(p, lambda m: m["params"].update(gamma=0.5)),
        "gamma_=.* is not the parameter gamma=0.5",
    ),
    "budgeted: an offset without fit_intercept": (
        "budgeted", lambda p: _edit_meta(p, lambda m: m["params"].update(fit_intercept=False)),
        "intercept_ is .*, but fit_intercept is False",
    ),
    "budgeted: a lambda beyond 1 / C": (
        "budgeted", lambda p: _replace_array(p, "lambda", np.array([2.0])),
        r"lambda = 1 / \(n_samples C\) must be in \(0, 1 / C\]",
    ),
    "budgeted: coefficients beyond float64": (
        "budgeted", lambda p: _replace_array(p, "beta", np.full(30, 1e308)),
        "too large to score with",
    ),
    "onepass: a declared shape": (
        "onepass", lambda p: _edit_meta(p, lambda m: m["arrays"]["ball_buf"].update(shape=[3, 4, 5])),
        r"ball_buf has shape \(3, 4, 5\), but 3 classes, n_features_in_=4 and lookahead=3 need \(3, 3, 5\)",
    ),
    "onepass: another lookahead": (
        "onepass", lambda p: _edit_meta(p, lambda m: m["params"].update(lookahead=4)),
        "ball_buf has shape .* lookahead=4 need",
    ),
    "onepass: more buffered rows than the lookahead": (
        "onepass", lambda p: _replace_array(p, "ball_n_buf", np.array([0, 4, 0])),
        r"ball_n_buf holds counts outside \[0, 3\]",
    ),
    "onepass: a NaN weight": (
        "onepass", lambda p: _replace_array(p, "coef_", np.full((3, 4), np.nan)), "coef_ holds NaN",
    ),
    "onepass: a negative radius": (
        "onepass", lambda p: _replace_array(p, "ball_R", np.array([1.0, -1.0, 1.0])),
        "ball_R holds values below 0",
    ),
    "onepass: started as numbers": (
        "onepass", lambda p: _replace_array(p, "ball_started", np.array([1, 1, 1])),
        "ball_started has dtype int64; it holds booleans",
    ),
    "onepass: a fallback with weights": (
        "onepass", lambda p: _edit_meta(p, lambda m: m["attributes"].update(majority_fallback_=True)),
        "majority_fallback_ is true, but coef_ is not 0",
    ),
    "onepass: radii of another count": (
        "onepass", lambda p: _edit_meta(p, lambda m: m["attributes"].update(radius_=[1.0])),
        "radius_ must be a list of 3 value",
    ),
    "onepass: a scaling of zeros": (
        "onepass", lambda p: _replace_array(p, "standardize_scale_", np.zeros(4)),
        "standardize_scale_ must be > 0",
    ),
    "onepass: a scaling without its arrays": (
        "onepass", lambda p: _edit_meta(p, lambda m: m["attributes"].update(standardize_=None)),
        "the arrays are .*, expected",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(KERNEL_EDITS))
def test_an_edited_kernel_or_one_pass_model_file_is_refused_saying_what_is_wrong(
    kernel_files, tmp_path, case
):
    kind, edit, message = KERNEL_EDITS[case]
    path = _kernel_file(kernel_files, kind, tmp_path)
    edit(path)
    with pytest.raises(ValueError, match=message) as caught:
        load(path)
    assert str(path) in str(caught.value)


def test_every_one_byte_corruption_of_a_kernel_model_file_is_refused_or_loads_the_same(
    kernel_files, tmp_path
):
    damaged = tmp_path / "damaged.dsvm"
    for model, X, data in kernel_files.values():
        outcomes = {"refused": 0, "same": 0}
        for position in range(0, len(data), max(len(data) // 400, 1)):
            edited = bytearray(data)
            edited[position] ^= 0x10
            damaged.write_bytes(bytes(edited))
            try:
                loaded = load(damaged)
            except ValueError as exc:
                assert str(damaged) in str(exc), exc
                outcomes["refused"] += 1
                continue
            _same_predictions(loaded, model, X)
            outcomes["same"] += 1
        assert outcomes["refused"] > 0

"""Model files: NumPy arrays and JSON, no pickle; round trips and refusals."""

import io
import json
import pickle
import zipfile

import dask.array as da
import numpy as np
import pandas as pd
import pytest

import dask_streamsvm
from dask_streamsvm import LinearSVC, load


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

"""``LogisticRegression(multi_class="auto")``, the default: the softmax model for three classes or more
where it trains (in memory and on a cluster at any width, streamed up to the reads' width, decided by
the read that counts the classes), the binary problem for two, one-vs-rest where the parameters ask for it;
``multi_class_`` says which, model files keep it, ``partial_fit`` is one-vs-rest."""

import json

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_classification

import dask_streamsvm
from dask_streamsvm import LogisticRegression, PolynomialMap, Standardize
from dask_streamsvm.engine.primal import multinomial_reads
from dask_streamsvm.engine.primal.newton import MAX_WIDTH

from ._helpers import run, three_class_frame, two_worker_client

TOL = 1e-8


def _classes(n_classes, n=1200, d=6, seed=0):
    X, y = make_classification(
        n, d, n_informative=4, n_redundant=0, n_classes=n_classes, n_clusters_per_class=1, random_state=seed
    )
    return X, y


def _same_model(a, b):
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    np.testing.assert_array_equal(a.objective_, b.objective_)


def test_the_default_is_auto():
    assert LogisticRegression().multi_class == "auto"


@pytest.mark.parametrize("n_classes", [3, 4])
def test_auto_trains_the_softmax_model_for_three_classes_or_more_in_memory(n_classes):
    X, y = _classes(n_classes)
    auto = LogisticRegression(tol=TOL).fit(X, y)
    softmax = LogisticRegression(multi_class="multinomial", tol=TOL).fit(X, y)
    assert auto.multi_class_ == softmax.multi_class_ == "multinomial"
    _same_model(auto, softmax)
    assert np.ndim(auto.objective_) == 0  # one joint problem, one certificate
    np.testing.assert_array_equal(auto.predict_proba(X), softmax.predict_proba(X))
    # its probabilities are the softmax of the scores, not the one-vs-rest normalisation
    scores = auto.decision_function(X)
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(auto.predict_proba(X), expected / expected.sum(axis=1, keepdims=True))


def test_in_memory_the_door_and_the_fit_count_the_labels_once(monkeypatch):
    """``multi_class="auto"`` in memory: the door (the model, then the solver, by the classes) and the
    fit take one count of the labels, whose weighted labels are the labels where every weight is
    positive, and those of positive weight where some is 0."""
    from dask_streamsvm.engine import fit as engine_fit
    from dask_streamsvm.engine.data.labels import count_labels_of

    counted = []

    def counting(*args):
        counted.append(args[0])
        return count_labels_of(*args)

    monkeypatch.setattr(engine_fit, "count_labels_of", counting)
    X, y = _classes(3)
    assert LogisticRegression(tol=TOL).fit(X, y).multi_class_ == "multinomial"
    assert counted == ["in memory"]
    labels, _, weighted, _ = count_labels_of("in memory", y, np.ones(y.shape[0]))
    assert weighted is labels
    weights = np.where(y == 2, 0.0, 1.0)
    np.testing.assert_array_equal(count_labels_of("in memory", y, weights)[2], [0, 1])


def test_auto_trains_liblinears_binary_problem_for_two_classes():
    """Two classes: the binary problem of "ovr" (its bias regularised by intercept_scaling), not the
    softmax model's (unpenalised intercept), which differs."""
    X, y = _classes(2)
    auto = LogisticRegression(tol=TOL, intercept_scaling=0.5).fit(X, y)
    ovr = LogisticRegression(multi_class="ovr", tol=TOL, intercept_scaling=0.5).fit(X, y)
    softmax = LogisticRegression(multi_class="multinomial", tol=TOL).fit(X, y)
    assert auto.multi_class_ == ovr.multi_class_ == "ovr" and softmax.multi_class_ == "multinomial"
    _same_model(auto, ovr)
    assert abs(auto.intercept_[0] - softmax.intercept_[0]) > 1e-3


@pytest.mark.parametrize(
    "params",
    [{"dual": True}, {"l1_ratio": 1.0}, {"l1_ratio": 0.5}, {"feature_map": PolynomialMap(degree=2)}],
    ids=["dual", "l1", "elasticnet", "feature_map"],
)
def test_auto_trains_one_vs_rest_where_the_parameters_ask_for_it(params):
    X, y = _classes(3, n=300, d=4)
    auto = LogisticRegression(tol=1e-6, random_state=0, **params).fit(X, y)
    ovr = LogisticRegression(multi_class="ovr", tol=1e-6, random_state=0, **params).fit(X, y)
    assert auto.multi_class_ == "ovr"
    _same_model(auto, ovr)
    with pytest.raises(ValueError, match="multi_class='multinomial'"):
        LogisticRegression(multi_class="multinomial", **params).fit(X, y)


def test_auto_streamed_trains_the_softmax_model_on_the_counting_reads_sample():
    """Streamed, the read that counts the classes decides, and its sample is the softmax model's warm
    start: the same reads and the same model as multi_class="multinomial"."""
    X, y = _classes(3, n=3000)
    fits = {}
    for kind in ("auto", "multinomial"):
        Xd, yd = da.from_array(X, chunks=(500, X.shape[1])), da.from_array(y, chunks=500)
        model = LogisticRegression(multi_class=kind, tol=1e-7, cache_bytes=X.shape[1] * 8 * 600)
        with dask.config.set(scheduler="sync"):
            fits[kind] = model.fit(Xd, yd)
    auto, softmax = fits["auto"], fits["multinomial"]
    assert auto.multi_class_ == "multinomial"
    assert auto.history_[0]["sample_rows"] < X.shape[0]  # the Newton reads trained
    assert [r["pass"] for r in auto.history_] == [r["pass"] for r in softmax.history_]  # the same reads
    assert auto.history_[-1]["rows_read"] == softmax.history_[-1]["rows_read"]
    _same_model(auto, softmax)


def test_auto_streamed_two_classes_is_the_binary_problem_in_the_same_reads():
    X, y = _classes(2, n=3000)
    fits = {}
    for kind in ("auto", "ovr"):
        Xd, yd = da.from_array(X, chunks=(500, X.shape[1])), da.from_array(y, chunks=500)
        with dask.config.set(scheduler="sync"):
            fits[kind] = LogisticRegression(multi_class=kind, tol=1e-7).fit(Xd, yd)
    auto, ovr = fits["auto"], fits["ovr"]
    assert auto.multi_class_ == "ovr"
    assert [r["pass"] for r in auto.history_] == [r["pass"] for r in ovr.history_]  # the same reads
    assert auto.history_[-1]["rows_read"] == ovr.history_[-1]["rows_read"]
    _same_model(auto, ovr)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_auto_streamed_on_short_rows_counts_the_labels_alone_first(n_classes):
    """Rows too few for the binary primal solver: one-vs-rest counts the labels alone (a Parquet
    column, a Dask Array of labels), and so does "auto"; three classes then read the sample the
    softmax model's reads start from, and train its model."""
    X, y = _classes(n_classes, n=1500, d=20)
    other = "multinomial" if n_classes == 3 else "ovr"
    fits = {}
    for kind in ("auto", other):
        Xd, yd = da.from_array(X, chunks=(300, 20)), da.from_array(y, chunks=300)
        model = LogisticRegression(
            multi_class=kind, tol=1e-8, cache_bytes=20 * 8 * 400, random_state=0, deterministic=True
        )
        with dask.config.set(scheduler="sync"):
            fits[kind] = model.fit(Xd, yd)
    assert fits["auto"].multi_class_ == ("multinomial" if n_classes == 3 else "ovr")
    assert [r["pass"] for r in fits["auto"].history_] == [r["pass"] for r in fits[other].history_]
    _same_model(fits["auto"], fits[other])
    if n_classes == 3:
        assert fits["auto"].history_[0]["sample_rows"] < X.shape[0]  # the Newton reads trained


def test_auto_streamed_from_a_libsvm_file_trains_the_softmax_model_in_its_reads(tmp_path, monkeypatch):
    """Text: the read that counts the classes parses whole rows anyway, so it keeps the sample (no
    read of the labels alone before it, as multi_class="multinomial"'s), and trains its model."""
    from sklearn.datasets import dump_svmlight_file

    from dask_streamsvm.engine.data.source import DaskSource

    X, y = _classes(3, n=1500, d=20)
    path = tmp_path / "three.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    label_reads = []
    label_counts = DaskSource.label_counts
    monkeypatch.setattr(
        DaskSource, "label_counts", lambda self, *a, **k: label_reads.append(1) or label_counts(self, *a, **k)
    )
    fits = {}
    for kind in ("auto", "multinomial"):
        model = LogisticRegression(multi_class=kind, tol=1e-8, cache_bytes=20 * 8 * 400)
        fits[kind] = model.fit(str(path), None)
    ours, softmax = fits["auto"], fits["multinomial"]
    assert ours.multi_class_ == "multinomial" and ours.history_[0]["sample_rows"] < X.shape[0]
    assert not label_reads
    _same_model(ours, softmax)
    memory = LogisticRegression(tol=1e-10).fit(X, y)
    assert ours.objective_ * (1 - ours.duality_gap_) <= memory.objective_ * (1 + 1e-12)
    assert memory.objective_ <= ours.objective_ * (1 + 1e-12)


def test_auto_streamed_is_one_vs_rest_beyond_the_reads_width():
    """Out of core the softmax model's reads form its Hessian, at most MAX_WIDTH wide: beyond it
    "auto" trains one-vs-rest, decided before any read where three classes are already too wide,
    after the count where the classes counted make it so."""
    assert multinomial_reads.auto_softmax(3, MAX_WIDTH // 3)
    assert not multinomial_reads.auto_softmax(3, MAX_WIDTH // 3 + 1)
    assert not multinomial_reads.auto_softmax(2, 10) and multinomial_reads.auto_softmax(3)
    d = MAX_WIDTH // 4  # 4 classes of d features and the intercept: wider than the reads
    X, y = _classes(4, n=800, d=d)
    Xd, yd = da.from_array(X, chunks=(400, d)), da.from_array(y, chunks=400)
    with dask.config.set(scheduler="sync"):
        counted = LogisticRegression(tol=1e-2, max_iter=5).fit(Xd, yd)
    assert counted.multi_class_ == "ovr" and counted.coef_.shape == (4, d)
    with pytest.raises(ValueError, match="beyond the 4096 it supports"):
        LogisticRegression(multi_class="multinomial").fit(Xd, yd)


@pytest.mark.parametrize("params", [{"solver": "sbm"}, {"checkpoint_dir": "ckpt"}], ids=["sbm", "checkpoint"])
def test_auto_streamed_with_a_dual_solver_is_one_vs_rest(params, tmp_path):
    X, y = _classes(3, n=600, d=4)
    if "checkpoint_dir" in params:
        params = {"checkpoint_dir": str(tmp_path / "ckpt")}
    Xd, yd = da.from_array(X, chunks=(200, 4)), da.from_array(y, chunks=200)
    with dask.config.set(scheduler="sync"):
        model = LogisticRegression(tol=1e-2, max_iter=50, random_state=0, **params).fit(Xd, yd)
    assert model.multi_class_ == "ovr" and np.ndim(model.objective_) == 1


def test_partial_fit_is_one_vs_rest_and_goes_on_from_a_softmax_models_weights():
    X, y = _classes(3, n=600)
    streamed = LogisticRegression(random_state=0).partial_fit(X, y, classes=np.unique(y))
    assert streamed.multi_class_ == "ovr" and streamed.coef_.shape == (3, X.shape[1])
    fitted = LogisticRegression(tol=1e-6, random_state=0).fit(X, y)
    assert fitted.multi_class_ == "multinomial"
    fitted.partial_fit(X[:5], y[:5], sample_weight=np.zeros(5))  # rows of no weight: the softmax weights
    assert fitted.multi_class_ == "ovr"
    softmax = LogisticRegression(tol=1e-6, random_state=0).fit(X, y)
    np.testing.assert_allclose(fitted.coef_, softmax.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fitted.intercept_, softmax.intercept_, rtol=1e-12, atol=1e-12)
    # its probabilities are one-vs-rest's from now on
    own = 1.0 / (1.0 + np.exp(-fitted.decision_function(X)))
    np.testing.assert_allclose(fitted.predict_proba(X), own / own.sum(axis=1, keepdims=True))


def test_model_files_keep_which_model_was_fitted(tmp_path):
    X, y = _classes(3, n=600)
    for kind in ("multinomial", "ovr"):
        model = LogisticRegression(multi_class="auto" if kind == "multinomial" else "ovr", tol=1e-6).fit(X, y)
        if kind == "ovr":
            model.multi_class = "auto"  # the file must say which model it is, not the parameter
        model.save(tmp_path / f"{kind}.model")
        loaded = dask_streamsvm.load(tmp_path / f"{kind}.model")
        assert loaded.multi_class_ == kind
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_a_model_file_with_a_bad_multi_class_is_refused(tmp_path):
    from dask_streamsvm._persist import set_model_state

    X, y = _classes(3, n=300)
    model = LogisticRegression(tol=1e-4).fit(X, y)
    from dask_streamsvm._persist import model_state

    arrays, attributes = model_state(model)
    assert attributes["multi_class_"] == "multinomial"
    attributes["multi_class_"] = "crammer_singer"
    with pytest.raises(ValueError, match="multi_class_ must be one of"):
        set_model_state(LogisticRegression(), arrays, attributes)
    del attributes["multi_class_"]  # a file written before the attribute: its parameters say
    with pytest.raises(ValueError, match="objective_ and duality_gap_ need one value per problem"):
        set_model_state(LogisticRegression(multi_class="ovr"), arrays, attributes)
    old = LogisticRegression(multi_class="multinomial")
    set_model_state(old, arrays, attributes)
    assert old.multi_class_ == "multinomial"


def test_auto_on_a_cluster_trains_the_softmax_model_from_the_parts_first_read():
    pytest.importorskip("distributed")
    X, y = _classes(3, n=3000)
    memory = LogisticRegression(tol=1e-10).fit(X, y)
    Xb, yb = _classes(2, n=3000)
    binary = LogisticRegression(tol=1e-10).fit(Xb, yb)
    Xd, yd = da.from_array(X, chunks=(500, X.shape[1])), da.from_array(y, chunks=500)
    Xbd, ybd = da.from_array(Xb, chunks=(500, Xb.shape[1])), da.from_array(yb, chunks=500)
    with two_worker_client() as client:
        ours = LogisticRegression(tol=1e-8, cache_bytes=X.shape[1] * 8 * 600).fit(Xd, yd, client=client)
        two = LogisticRegression(tol=1e-8).fit(Xbd, ybd, client=client)
    assert ours.multi_class_ == "multinomial" and ours.history_[-1]["method"] == "newton"
    assert ours.history_[0]["sample_rows"] < X.shape[0]  # the reads trained, from the joined samples
    # within the certified gaps of the optimum in memory
    assert ours.objective_ * (1 - ours.duality_gap_) <= memory.objective_ * (1 + 1e-12)
    assert memory.objective_ * (1 - memory.duality_gap_) <= ours.objective_ * (1 + 1e-12)
    assert two.multi_class_ == "ovr" and two.coef_.shape == (1, Xb.shape[1])
    assert two.objective_ * (1 - two.duality_gap_) <= binary.objective_ * (1 + 1e-12)


def test_the_cli_sets_multi_class(tmp_path):
    path = tmp_path / "three.parquet"
    three_class_frame().to_parquet(path)
    base = ["train", path, "--label", "label", "--model-type", "logistic", "--seed", "0"]
    for option, kind in ([], "multinomial"), (["--multi-class", "ovr"], "ovr"):
        target = tmp_path / f"{kind}.model"
        code, _, err = run([*base, "--model", target, *option])
        assert code == 0, err
        assert dask_streamsvm.load(target).multi_class_ == kind
    code, _, err = run(["train", path, "--label", "label", "--model", tmp_path / "svm.model",
                        "--multi-class", "ovr"])  # fmt: skip
    assert code == 2 and "--multi-class ovr sets an option of --model-type logistic" in err
    code, out, err = run(["info", tmp_path / "multinomial.model"])  # info says which model was fitted
    assert code == 0 and "multi_class_    multinomial\n" in out, err
    assert json.loads(run(["info", tmp_path / "ovr.model", "--json"])[1])["multi_class"] == "ovr"
    assert run([*base[:1], path, "--label", "label", "--model", tmp_path / "svm2.model"])[0] == 0
    assert json.loads(run(["info", tmp_path / "svm2.model", "--json"])[1])["multi_class"] is None


def test_standardize_keeps_the_softmax_model():
    X, y = _classes(3, n=600)
    model = LogisticRegression(feature_map=Standardize(), tol=1e-8).fit(X * 100.0, y)
    assert model.multi_class_ == "multinomial"

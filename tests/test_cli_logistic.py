"""``dask-streamsvm`` with logistic regression: ``train --model-type logistic``, ``predict --proba``,
``evaluate`` and ``info`` on its model files, and the errors of options that do not apply to it.

Run in-process through ``main(argv)``, as ``tests/test_cli.py`` does, on the first 3,000 lines of
the bundled a9a (2,000 to train on, 1,000 to predict).
"""

import bz2
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_svmlight_file

import dask_streamsvm
from dask_streamsvm import LinearSVC, LogisticRegression, cli
from dask_streamsvm.cli.commands import _advice, _summary

from ._helpers import assert_one_line_error, run, three_class_frame

A9A = Path(dask_streamsvm.__file__).parent / "data" / "a9a.bz2"
FAST = ["--tol", "1e-2", "--passes", "20", "--seed", "0", "--n-features", "123"]


@pytest.fixture(scope="module")
def a9a_small(tmp_path_factory):
    """``(train, test)``: two small LIBSVM files, the first 2,000 and the next 1,000 lines of a9a."""
    with bz2.open(A9A, "rt") as source:
        lines = [next(source) for _ in range(3_000)]
    folder = tmp_path_factory.mktemp("a9a_small")
    train, test = folder / "train.svm", folder / "test.svm"
    train.write_text("".join(lines[:2_000]))
    test.write_text("".join(lines[2_000:]))
    return train, test


@pytest.fixture(scope="module")
def logistic_model(a9a_small, tmp_path_factory):
    """A LogisticRegression trained by the command line on ``a9a_small``'s train file, and its summary."""
    path = tmp_path_factory.mktemp("logistic") / "lr.model"
    code, out, err = run(["train", a9a_small[0], "--model", path, "--model-type", "logistic", *FAST])
    assert code == 0, err
    return path, out


@pytest.fixture(scope="module")
def three_classes(tmp_path_factory):
    """A 3-class Parquet table of 1,200 rows (string labels in ``label``) and its path."""
    frame = three_class_frame()
    path = tmp_path_factory.mktemp("table") / "three.parquet"
    frame.to_parquet(path)
    return path, frame


def _rows(path):
    X, y = load_svmlight_file(str(path), n_features=123)
    return X, y


# -- train -------------------------------------------------------------------------------


def test_train_logistic_saves_a_logistic_regression_and_names_it(logistic_model, a9a_small):
    path, out = logistic_model
    assert len(out.strip().splitlines()) == 1
    assert out.startswith("Trained LogisticRegression (C=1) streamed on 2,000 rows x 123 features, 2 classes")
    assert "loss=" not in out  # the loss is the model's own, not an option
    model = dask_streamsvm.load(path)
    assert type(model) is LogisticRegression
    assert model.tol == 1e-2 and model.max_iter == 20 and model.random_state == 0
    assert model.duality_gap_ <= 1e-2 and f"{model.duality_gap_:.2e}" in out and "converged" in out
    X, y = _rows(a9a_small[0])
    assert model.score(X, y) > 0.8


def test_model_type_svm_is_the_default_and_trains_a_linear_svc(a9a_small, tmp_path):
    code, out, err = run(["train", a9a_small[0], "--model", tmp_path / "svm.model", *FAST])
    assert code == 0, err
    assert out.startswith("Trained LinearSVC (loss=squared_hinge, C=1) ")
    assert type(dask_streamsvm.load(tmp_path / "svm.model")) is LinearSVC
    code, out, err = run(["train", a9a_small[0], "--model", tmp_path / "hinge.model", "--model-type", "svm",
                          "--loss", "hinge", *FAST])  # fmt: skip
    assert code == 0, err
    assert out.startswith("Trained LinearSVC (loss=hinge, C=1) ")


def test_train_logistic_takes_the_shared_options(three_classes, tmp_path):
    """--C, --dual false (the primal Newton steps), --solver memory, --scale, --no-intercept,
    --class-weight and --multi-class reach the LogisticRegression, on a 3-class table (one-vs-rest:
    the binary problems' Newton steps)."""
    path, frame = three_classes
    base = ["train", path, "--label", "label", "--model-type", "logistic", "--seed", "0",
            "--multi-class", "ovr"]  # fmt: skip
    newton = tmp_path / "newton.model"
    code, out, err = run([*base, "--model", newton, "--dual", "false", "--C", "0.5", "--scale"])
    assert code == 0, err
    assert out.startswith("Trained LogisticRegression (C=0.5) streamed on 1,200 rows x 4 features, 3 classes")
    model = dask_streamsvm.load(newton)
    assert type(model) is LogisticRegression and model.C == 0.5 and model.dual is False
    assert model.history_[-1]["solver"] == "newton"
    assert type(model.feature_map).__name__ == "Standardize"
    memory = tmp_path / "memory.model"
    code, out, err = run([*base, "--model", memory, "--solver", "memory", "--no-intercept",
                          "--class-weight", "x:2"])  # fmt: skip
    assert code == 0, err
    assert "in memory on 1,200 rows" in out
    model = dask_streamsvm.load(memory)
    assert not model.fit_intercept and np.all(model.intercept_ == 0) and model.class_weight == {"x": 2.0}
    assert model.score(frame[["a", "b", "c", "d"]], frame["label"]) > 0.8


# -- predict, evaluate, info -------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_predict_proba_writes_the_models_own_probabilities(logistic_model, a9a_small, tmp_path, suffix):
    path, _ = logistic_model
    target = tmp_path / f"predictions{suffix}"
    code, out, err = run(["predict", path, a9a_small[1], "--out", target, "--proba"])
    assert code == 0, err
    assert "(prediction, decision, proba_-1.0, proba_1.0)" in out
    result = pd.read_csv(target) if suffix == ".csv" else pd.read_parquet(target)
    assert list(result.columns) == ["prediction", "decision", "proba_-1.0", "proba_1.0"]
    model = dask_streamsvm.load(path)
    X, _ = _rows(a9a_small[1])
    assert len(result) == X.shape[0] == 1_000
    np.testing.assert_array_equal(result["prediction"].to_numpy(), model.predict(X))
    np.testing.assert_allclose(result["decision"].to_numpy(), model.decision_function(X))
    np.testing.assert_allclose(result[["proba_-1.0", "proba_1.0"]].to_numpy(), model.predict_proba(X))


def test_predict_without_proba_writes_what_it_did(logistic_model, a9a_small, tmp_path):
    path, _ = logistic_model
    target = tmp_path / "predictions.csv"
    code, _, err = run(["predict", path, a9a_small[1], "--out", target])
    assert code == 0, err
    assert list(pd.read_csv(target).columns) == ["prediction", "decision"]


def test_predict_proba_of_a_table_gives_a_column_per_class(three_classes, tmp_path):
    path, frame = three_classes
    model_path = tmp_path / "m.model"
    argv = ["train", path, "--label", "label", "--model", model_path, "--model-type", "logistic"]
    assert run([*argv, "--seed", "0"])[0] == 0
    target = tmp_path / "predictions.parquet"
    code, _, err = run(["predict", model_path, path, "--label", "label", "--out", target, "--proba"])
    assert code == 0, err
    result = pd.read_parquet(target)
    proba = ["proba_x", "proba_y", "proba_z"]
    assert list(result.columns) == ["prediction", "decision_x", "decision_y", "decision_z", *proba]
    model = dask_streamsvm.load(model_path)
    features = frame[["a", "b", "c", "d"]]
    np.testing.assert_allclose(result[proba].to_numpy(), model.predict_proba(features))
    np.testing.assert_allclose(result[proba].sum(axis=1), 1.0)
    np.testing.assert_array_equal(result["prediction"].to_numpy(), model.predict(features))


def test_predict_proba_of_a_linear_svc_needs_its_platt_sigmoids(a9a_small, tmp_path):
    """A LinearSVC has probabilities only when fitted with probability=True (Platt scaling)."""
    plain = tmp_path / "plain.model"
    assert run(["train", a9a_small[0], "--model", plain, *FAST])[0] == 0
    target = tmp_path / "p.csv"
    code, out, err = run(["predict", plain, a9a_small[1], "--out", target, "--proba"])
    assert_one_line_error(
        code, out, err, "--proba", "LinearSVC", "probability=True", "train --probability",
        "--model-type logistic",
    )  # fmt: skip
    assert not target.exists()
    trained = tmp_path / "trained-platt.model"
    code, _, err = run(["train", a9a_small[0], "--model", trained, "--probability", *FAST])
    assert code == 0, err
    assert dask_streamsvm.load(trained).probability is True
    code, _, err = run(["predict", trained, a9a_small[1], "--out", target, "--proba"])
    assert code == 0, err
    np.testing.assert_allclose(
        pd.read_csv(target)[["proba_-1.0", "proba_1.0"]],
        dask_streamsvm.load(trained).predict_proba(_rows(a9a_small[1])[0]),
    )
    target.unlink()
    X, y = _rows(a9a_small[0])
    platt = LinearSVC(probability=True, solver="memory", tol=1e-2, random_state=0).fit(X, y)
    platt.save(tmp_path / "platt.model")
    code, out, err = run(["predict", tmp_path / "platt.model", a9a_small[1], "--out", target, "--proba"])
    assert code == 0, err
    X_test, _ = _rows(a9a_small[1])
    model = dask_streamsvm.load(tmp_path / "platt.model")
    np.testing.assert_allclose(pd.read_csv(target)[["proba_-1.0", "proba_1.0"]], model.predict_proba(X_test))


def test_evaluate_a_logistic_model_names_it(logistic_model, a9a_small):
    path, _ = logistic_model
    code, out, err = run(["evaluate", path, a9a_small[1], "--json"])
    assert code == 0, err
    result = json.loads(out)
    model = dask_streamsvm.load(path)
    X, y = _rows(a9a_small[1])
    assert result["estimator"] == "LogisticRegression"
    assert result["rows"] == 1_000
    assert result["accuracy"] == pytest.approx(model.score(X, y))
    assert 0.8 < result["roc_auc"] <= 1.0
    assert result["training_duality_gap"] == model.duality_gap_
    code, out, err = run(["evaluate", path, a9a_small[1]])
    assert code == 0, err
    assert out.splitlines()[0].split() == ["model", "LogisticRegression"]
    assert "accuracy" in out and "training duality gap" in out


def test_info_of_a_logistic_model(logistic_model):
    path, _ = logistic_model
    code, out, err = run(["info", path])
    assert code == 0, err
    assert "LogisticRegression" in out and "duality gap" in out
    info = json.loads(run(["info", path, "--json"])[1])
    model = dask_streamsvm.load(path)
    assert info["estimator"] == "LogisticRegression"
    assert info["classes"] == [-1.0, 1.0] and info["n_features"] == 123
    assert info["duality_gap"] == model.duality_gap_ and info["passes"] == model.n_iter_
    assert info["params"]["C"] == 1.0 and info["params"]["tol"] == 1e-2
    assert "loss" not in info["params"] and "probability" not in info["params"]


# -- errors ------------------------------------------------------------------------------------


def test_loss_with_the_logistic_model_is_a_one_line_error(a9a_small, tmp_path):
    model = tmp_path / "m.model"
    for loss in ("hinge", "squared_hinge"):
        argv = ["train", a9a_small[0], "--model", model, "--model-type", "logistic", "--loss", loss]
        fragments = (f"--loss {loss}", "--model-type logistic", "its own loss", "drop --loss")
        assert_one_line_error(*run(argv), *fragments)
    assert not model.exists()


@pytest.mark.parametrize("model_type", [[], ["--model-type", "svm"], ["--model-type", "logistic"]])
def test_loss_log_loss_never_trains_a_linear_svc(a9a_small, tmp_path, model_type):
    """log_loss is an engine loss but not an SVM's: --loss refuses it and names --model-type logistic."""
    model = tmp_path / "m.model"
    argv = ["train", a9a_small[0], "--model", model, *model_type, "--loss", "log_loss"]
    assert_one_line_error(*run(argv), "--loss", "'log_loss'", "--model-type logistic", "drop --loss")
    assert not model.exists()
    argv = ["train", a9a_small[0], "--model", model, "--loss", "logistic"]
    assert_one_line_error(*run(argv), "--loss", "'hinge', 'squared_hinge'", "'logistic'")


def test_model_type_takes_svm_or_logistic(a9a_small, tmp_path):
    argv = ["train", a9a_small[0], "--model", tmp_path / "m.model", "--model-type", "logreg"]
    assert_one_line_error(*run(argv), "--model-type", "'logreg'", "svm", "logistic")


def test_dual_false_with_the_hinge_still_names_the_svm_loss_with_newton_steps(a9a_small, tmp_path):
    argv = ["train", a9a_small[0], "--model", tmp_path / "m.model", "--dual", "false", "--loss", "hinge"]
    code, out, err = run(argv)
    assert_one_line_error(code, out, err, "give --loss squared_hinge,")
    assert "log_loss" not in err  # not a choice of --loss


# -- help, summary and advice ------------------------------------------------------------------


def test_help_offers_the_model_type_and_the_svm_losses_only():
    code, out, _ = run(["train", "--help"])
    assert code == 0
    assert "--model-type {svm,logistic,onepass,budgeted}" in out and "--loss {hinge,squared_hinge}" in out
    text = " ".join(out.split())
    assert f"(default: LinearSVC's, {LinearSVC().loss})" in text  # the default the help names is true
    assert "LogisticRegression" in text
    code, out, _ = run(["predict", "--help"])
    assert code == 0 and "--proba" in out


def _args(*options):
    return cli.build_parser().parse_args(["train", "data.parquet", "--model", "m.model", *options])


def test_summary_and_advice_of_a_logistic_fit_on_a_cluster():
    """The summary and the advice read no ``loss`` of a logistic model (it has none) and advise the
    Newton steps the logistic loss has, without --loss."""
    scheduler = ("--scheduler", "tcp://host:8786")
    parts = [{"worker": "tcp://a:1", "partitions": [0], "rows": 500}]
    fitted = SimpleNamespace(
        duality_gap_=0.5, objective_=12.0, classes_=np.array([0, 1]), n_features_in_=3, n_iter_=30,
        cluster_parts_=parts, history_=[{"method": "cocoa"}],
    )  # fmt: skip
    args = _args("--model-type", "logistic", *scheduler, "--cluster", "cocoa")
    line = _summary(fitted, args, None, 1.0)
    assert line.startswith("Trained LogisticRegression (C=1) on 500 rows x 3 features on a cluster of 1 ")
    assert "not converged" in line and "--dual false or --cluster auto trains by Newton steps" in line
    assert "--loss" not in line
    advice = _advice(fitted, _args("--model-type", "logistic", *scheduler), {"method": "average"})
    assert "--dual false trains by Newton steps" in advice and "--loss" not in advice

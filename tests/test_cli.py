"""The ``dask-streamsvm`` command line, run in-process through ``main(argv)``.

Files in and out of the ``dask-streamsvm`` command and of ``read_libsvm`` (docs/reliability.md).

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
import re
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

import dask_streamsvm
from dask_streamsvm import LinearSVC, cli, read_libsvm
from dask_streamsvm import io as streamsvm_io
from dask_streamsvm.cli import main
from dask_streamsvm.datasets import load_a9a
from dask_streamsvm.io import open_path

from ._helpers import assert_one_line_error, child_json_lines, noisy_linear_data, run, three_class_frame

DATA = Path(dask_streamsvm.__file__).parent / "data"
A9A_TRAIN = str(DATA / "a9a.bz2")
A9A_TEST = str(DATA / "a9a.t.bz2")
FAST = ["--tol", "1e-2", "--passes", "20", "--seed", "0"]


@pytest.fixture(scope="module")
def a9a_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("a9a") / "a9a.model"
    code, out, err = run(["train", A9A_TRAIN, "--model", path, *FAST])
    assert code == 0, err
    return path, out


@pytest.fixture(scope="module")
def three_classes(tmp_path_factory):
    """A 3-class table as two Parquet files and one CSV file, with a string ``label`` column."""
    frame = three_class_frame()
    folder = tmp_path_factory.mktemp("table")
    (folder / "parts").mkdir()
    frame.iloc[:700].to_parquet(folder / "parts" / "p0.parquet")
    frame.iloc[700:].to_parquet(folder / "parts" / "p1.parquet")
    frame.to_csv(folder / "all.csv", index=False)
    return folder, frame


# -- LIBSVM


def test_a_fit_whose_first_read_holds_every_row_says_one_read(tmp_path):
    """The primal solver's first read keeps a sample; where it holds every row, the Newton steps
    are made on those rows and the fit reads the data once: the summary says "1 read of the data",
    not "0 passes" (the passes of a streamed fit are numbered from 0)."""
    rng = np.random.RandomState(0)
    X = rng.randn(5_000, 5)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)]).assign(label=(X[:, 0] > 0).astype(int))
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    code, out, err = run(["train", tmp_path / "t.parquet", "--label", "label", "--model", tmp_path / "m"])
    assert code == 0, err
    assert ": 1 read of the data, relative duality gap" in out and "0 passes" not in out
    model = dask_streamsvm.load(tmp_path / "m")  # n_iter_: its Newton steps after the read (issue 50)
    assert model.n_iter_ == len(model.history_) - 1 >= 1 and {r["pass"] for r in model.history_} == {0}


def test_train_libsvm_prints_summary_and_saves(a9a_model):
    path, out = a9a_model
    assert path.exists()
    assert "32,561 rows x 123 features" in out
    assert "2 classes" in out and "relative duality gap" in out
    reads = re.search(r": (\d+) reads? of the data, relative", out)  # not passes: they count from 0
    assert reads is not None and 1 <= int(reads.group(1)) <= dask_streamsvm.load(path).n_iter_ + 1, out
    assert len(out.strip().splitlines()) == 1
    model = dask_streamsvm.load(path)
    assert model.duality_gap_ <= 1e-2
    assert f"{model.duality_gap_:.2e}" in out


def test_evaluate_libsvm(a9a_model):
    path, _ = a9a_model
    code, out, err = run(["evaluate", path, A9A_TEST, "--json"])
    assert code == 0, err
    result = json.loads(out)
    model = dask_streamsvm.load(path)
    X_test, y_test = load_a9a("test")
    assert result["rows"] == 16281
    assert result["accuracy"] > 0.8
    assert result["accuracy"] == pytest.approx(model.score(X_test, y_test))
    assert 0.85 < result["roc_auc"] <= 1.0
    assert result["training_duality_gap"] == model.duality_gap_
    assert result["training_objective"] == model.objective_

    code, out, _ = run(["evaluate", path, A9A_TEST])
    assert code == 0
    assert "accuracy" in out and "ROC AUC" in out and "training duality gap" in out


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_predict_libsvm(a9a_model, tmp_path, suffix):
    path, _ = a9a_model
    target = tmp_path / f"predictions{suffix}"
    code, out, err = run(["predict", path, A9A_TEST, "--out", target])
    assert code == 0, err
    assert str(target) in out
    result = pd.read_csv(target) if suffix == ".csv" else pd.read_parquet(target)
    assert list(result.columns) == ["prediction", "decision"]
    X_test, _ = load_a9a("test")
    model = dask_streamsvm.load(path)
    assert len(result) == X_test.shape[0]
    np.testing.assert_array_equal(result["prediction"].to_numpy(), model.predict(X_test))
    np.testing.assert_allclose(result["decision"].to_numpy(), model.decision_function(X_test))

    # An existing output is kept unless --overwrite.
    assert_one_line_error(*run(["predict", path, A9A_TEST, "--out", target]), "exists", "--overwrite")
    assert run(["predict", path, A9A_TEST, "--out", target, "--overwrite"])[0] == 0


def test_info(a9a_model):
    path, _ = a9a_model
    code, out, err = run(["info", path])
    assert code == 0, err
    words = ("LinearSVC", "classes", "n_features", "123", "passes", "duality gap", "objective", "version 1")
    assert all(word in out for word in words), out
    info = json.loads(run(["info", path, "--json"])[1])
    model = dask_streamsvm.load(path)
    assert info["estimator"] == "LinearSVC"
    assert info["format_version"] == 1
    assert info["classes"] == [-1.0, 1.0]
    assert info["n_features"] == 123
    assert info["passes"] == model.n_iter_
    # The reads of the data train's summary counted (its passes count from 0; a read may feed several).
    trained = re.search(r"(\d+) reads? of the data", a9a_model[1])
    assert trained is not None and info["reads"] == int(trained.group(1)), a9a_model[1]
    assert f"({info['reads']} read" in out
    assert info["duality_gap"] == model.duality_gap_
    assert info["params"]["tol"] == 1e-2 and info["params"]["random_state"] == 0


def test_evaluate_reports_precision_recall_f1_and_the_confusion_matrix(a9a_model):
    """Accuracy alone misleads on imbalanced data (a9a is 76% negative): evaluate gives the
    positive class's precision, recall and F1 and the confusion matrix, as scikit-learn counts them."""
    from sklearn.metrics import confusion_matrix, f1_score, precision_score, recall_score

    path, _ = a9a_model
    result = json.loads(run(["evaluate", path, A9A_TEST, "--json"])[1])
    X_test, y_test = load_a9a("test")
    predicted = dask_streamsvm.load(path).predict(X_test)
    assert result["precision"] == pytest.approx(precision_score(y_test, predicted, pos_label=1.0))
    assert result["recall"] == pytest.approx(recall_score(y_test, predicted, pos_label=1.0))
    assert result["f1"] == pytest.approx(f1_score(y_test, predicted, pos_label=1.0))
    assert result["classes"] == [-1.0, 1.0]
    assert result["confusion_matrix"] == confusion_matrix(y_test, predicted, labels=[-1.0, 1.0]).tolist()
    out = run(["evaluate", path, A9A_TEST])[1]
    assert "precision (class 1.0)" in out and "recall" in out and "F1" in out
    assert "confusion matrix (rows: true class, columns: predicted)" in out
    assert f"{result['confusion_matrix'][0][0]:,}" in out


def test_a_gap_that_rounding_makes_negative_prints_as_zero(a9a_model, tmp_path):
    path, _ = a9a_model
    model = dask_streamsvm.load(path)
    model.duality_gap_ = -3e-17  # P - D of an exact optimum, after rounding
    model.save(tmp_path / "rounded.model")
    info = json.loads(run(["info", tmp_path / "rounded.model", "--json"])[1])
    assert info["duality_gap"] == 0.0
    assert "0.00e+00" in run(["info", tmp_path / "rounded.model"])[1]
    out = run(["evaluate", tmp_path / "rounded.model", A9A_TEST])[1]
    assert "training duality gap" in out and "-3.00e-17" not in out and "0.00e+00" in out


def test_class_weight_option(tmp_path):
    weighted = tmp_path / "weighted.model"
    code, _, err = run(["train", A9A_TRAIN, "--model", weighted, "--class-weight", "1:3,-1:1", *FAST])
    assert code == 0, err
    model = dask_streamsvm.load(weighted)
    assert model.class_weight == {1: 3.0, -1: 1.0}
    X_test, _ = load_a9a("test")
    plain = LinearSVC(tol=1e-2, max_iter=20, random_state=0).fit(*load_a9a("train"))
    assert (model.predict(X_test) == 1).mean() > (plain.predict(X_test) == 1).mean() + 0.05
    code, _, err = run(["train", A9A_TRAIN, "--model", weighted, "--class-weight", "balanced", "--overwrite"])
    assert code == 0 and dask_streamsvm.load(weighted).class_weight == "balanced"
    code, out, err = run(["train", A9A_TRAIN, "--model", tmp_path / "x.model", "--class-weight", "1=3"])
    assert_one_line_error(code, out, err, "--class-weight '1=3'", "LABEL:WEIGHT")


def test_cache_as_a_share_of_the_rows(tmp_path):
    path = tmp_path / "share.model"
    argv = ["train", A9A_TRAIN, "--model", path, "--cache", "10%", "--solver", "streamsvm", *FAST]
    code, _, err = run(argv)
    assert code == 0, err
    model = dask_streamsvm.load(path)
    assert model.cache_bytes == "10%"
    assert 0 < max(r["cache_bytes"] for r in model.history_) <= 0.1 * 8_544_960  # a9a as the cache stores it


def test_scale_option_standardizes_while_training(tmp_path):
    path = tmp_path / "scaled.model"
    code, _, err = run(["train", A9A_TRAIN, "--model", path, "--scale", *FAST])
    assert code == 0, err
    model = dask_streamsvm.load(path)
    assert type(model.feature_map).__name__ == "Standardize"
    X_test, y_test = load_a9a("test")
    assert (model.predict(X_test) == y_test).mean() > 0.84


def test_a_progress_bar_by_default_on_a_terminal_and_never_with_quiet():
    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    args = cli.build_parser().parse_args(["train", A9A_TRAIN, "--model", "m"])
    assert cli._verbosity(args, Stream(True)) == 1 and cli._verbosity(args, Stream(False)) == 0
    quiet = cli.build_parser().parse_args(["train", A9A_TRAIN, "--model", "m", "--quiet"])
    assert cli._verbosity(quiet, Stream(True)) == 0
    verbose = cli.build_parser().parse_args(["train", A9A_TRAIN, "--model", "m", "--verbose"])
    assert cli._verbosity(verbose, Stream(False)) == 1


# -- tables


def test_train_evaluate_predict_parquet(three_classes, tmp_path):
    folder, frame = three_classes
    model_path = tmp_path / "m.model"
    code, out, err = run(["train", folder / "parts" / "*.parquet", "--label", "label", "--model", model_path])
    assert code == 0, err
    assert "1,200 rows x 4 features, 3 classes ('x', 'y', 'z')" in out
    model = dask_streamsvm.load(model_path)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]

    code, out, err = run(["evaluate", model_path, folder / "parts", "--label", "label", "--json"])
    assert code == 0, err
    result = json.loads(out)
    assert result["rows"] == 1200 and result["accuracy"] > 0.8 and result["roc_auc"] > 0.9
    assert len(result["training_duality_gap"]) == 3

    target = tmp_path / "predictions.parquet"
    code, out, err = run(["predict", model_path, folder / "parts", "--label", "label", "--out", target])
    assert code == 0, err
    result = pd.read_parquet(target)
    assert list(result.columns) == ["prediction", "decision_x", "decision_y", "decision_z"]
    assert len(result) == len(frame)
    np.testing.assert_array_equal(result["prediction"].to_numpy(), model.predict(frame[["a", "b", "c", "d"]]))


# 45 s, nearly all writing checkpoints: each holds the row cache's whole default capacity
# (cache_bytes='1GB', a 2 GB file for 1,200 rows).  Back in `make test` once they hold only
# the rows in use.
@pytest.mark.slow
def test_checkpoints_resume_and_skipped_rows(three_classes, tmp_path):
    folder, frame = three_classes
    bad = frame.copy()
    bad.loc[bad.index[[3, 50]], "b"] = np.nan
    bad.to_csv(tmp_path / "bad.csv", index=False)
    train = ["train", tmp_path / "bad.csv", "--label", "label", "--solver", "sbm", *FAST]
    code, out, err = run([*train, "--model", tmp_path / "a.model"])
    assert_one_line_error(code, out, err, "partition 0, row 3", "column 'b'", "on_invalid='skip'")
    checkpoints = ["--skip-invalid", "--checkpoint-dir", tmp_path / "ck"]
    code, out, err = run([*train, *checkpoints, "--model", tmp_path / "a.model"])
    assert code == 0, err
    assert "1,198 rows" in out  # the two rows with NaN were dropped
    assert (tmp_path / "ck" / "checkpoint.zip").exists()
    code, out, err = run([*train, *checkpoints, "--resume", "--model", tmp_path / "b.model"])
    assert code == 0, err
    first, resumed = dask_streamsvm.load(tmp_path / "a.model"), dask_streamsvm.load(tmp_path / "b.model")
    np.testing.assert_array_equal(first.coef_, resumed.coef_)
    code, out, err = run([*train, "--resume", "--model", tmp_path / "c.model"])
    assert_one_line_error(code, out, err, "--resume", "--checkpoint-dir")


def test_csv_input_and_memory_solver(three_classes, tmp_path):
    folder, frame = three_classes
    model_path = tmp_path / "m.model"
    argv = ["train", folder / "all.csv", "--label", "label", "--model", model_path, "--solver", "memory"]
    code, out, err = run([*argv, "--loss", "hinge", "--C", "0.5", "--no-intercept"])
    assert code == 0, err
    assert "in memory on 1,200 rows" in out
    model = dask_streamsvm.load(model_path)
    assert model.loss == "hinge" and model.C == 0.5 and not model.fit_intercept
    assert np.all(model.intercept_ == 0)

    target = tmp_path / "predictions.csv"
    # Without --label the model ignores the label column (not one of its features).
    code, _, err = run(["predict", model_path, folder / "all.csv", "--out", target])
    assert code == 0, err
    assert len(pd.read_csv(target)) == len(frame)


def test_zero_based_libsvm_as_scikit_learn_writes_it(three_classes, tmp_path):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    y = np.where(X @ [1.0, -1.0, 0.5, 0.0] > 0, 1, -1)
    path = tmp_path / "zero.svm"
    dump_svmlight_file(X, y, str(path), zero_based=True)  # indices from 0: scikit-learn's default
    model_path = tmp_path / "zero.model"
    argv = ["train", path, "--model", model_path, "--solver", "memory", "--seed", "0"]
    # Without the flag: the line, and the flag that reads it.
    assert_one_line_error(*run(argv), "zero.svm, line 1", "feature index 0", "--zero-based")
    code, out, err = run([*argv, "--zero-based"])
    assert code == 0, err
    assert "300 rows x 4 features" in out
    X_read, y_read = read_libsvm(str(path), zero_based=True)
    expected = LinearSVC(solver="memory", tol=1e-3, max_iter=1000, random_state=0)
    expected.fit(X_read.compute(), y_read.compute())
    model = dask_streamsvm.load(model_path)
    np.testing.assert_array_equal(model.coef_, expected.coef_)
    np.testing.assert_array_equal(model.intercept_, expected.intercept_)
    # evaluate and predict read the file the same way.
    code, out, err = run(["evaluate", model_path, path, "--zero-based", "--json"])
    assert code == 0, err
    assert json.loads(out)["accuracy"] == pytest.approx(expected.score(X, y))
    target = tmp_path / "predictions.csv"
    code, out, err = run(["predict", model_path, path, "--zero-based", "--out", target])
    assert code == 0, err
    np.testing.assert_array_equal(pd.read_csv(target)["prediction"].to_numpy(), expected.predict(X))
    folder, _ = three_classes
    argv = ["train", folder / "all.csv", "--label", "label", "--zero-based", "--model", tmp_path / "t.model"]
    assert_one_line_error(*run(argv), "--zero-based applies to LIBSVM")


def test_memory_solver_on_libsvm_and_a_wider_file(tmp_path):
    model_path = tmp_path / "test.model"
    code, out, err = run(["train", A9A_TEST, "--model", model_path, "--solver", "memory", *FAST])
    assert code == 0, err
    # a9a.t uses features 1..122 only; its model has 122 features.
    assert "in memory on 16,281 rows x 122 features" in out
    code, out, err = run(["evaluate", model_path, A9A_TRAIN])
    assert_one_line_error(code, out, err, "a9a.bz2", "122", "123 features")


# -- errors


def test_missing_file_is_one_line_exit_2(tmp_path):
    missing = tmp_path / "nothere.svm"
    code, out, err = run(["train", missing, "--model", tmp_path / "m.model"])
    assert_one_line_error(code, out, err, "no such file", "nothere.svm")
    assert_one_line_error(*run(["train", tmp_path / "*.parquet", "--model", "m"]), "no file matches")
    assert_one_line_error(*run(["info", missing]), "no such model file")


def test_table_needs_an_existing_label(three_classes, tmp_path):
    folder, _ = three_classes
    model = tmp_path / "m.model"
    assert_one_line_error(*run(["train", folder / "parts", "--model", model]), "--label", "'label'")
    assert_one_line_error(
        *run(["train", folder / "parts", "--label", "income", "--model", model]), "'income' is not a column"
    )
    assert not model.exists()


def test_libsvm_refuses_label_and_tables_refuse_n_features(three_classes, tmp_path):
    folder, _ = three_classes
    model = tmp_path / "m.model"
    assert_one_line_error(*run(["train", A9A_TEST, "--label", "y", "--model", model]), "LIBSVM")
    argv = ["train", folder / "all.csv", "--label", "label", "--n-features", "4", "--model", model]
    assert_one_line_error(*run(argv), "--n-features")
    argv = ["train", folder / "all.csv", folder / "parts", "--label", "label", "--model", model]
    assert_one_line_error(*run(argv), "mix formats")
    assert_one_line_error(*run(["train", folder / "all.csv", "--format", "libsvm", "--label", "label",
                                "--model", model]), "LIBSVM")  # fmt: skip


def test_bad_model_files(a9a_model, tmp_path):
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"not a model\n")
    assert_one_line_error(*run(["info", garbage]), "garbage.model")
    assert_one_line_error(*run(["evaluate", garbage, A9A_TEST]), "garbage.model")
    assert_one_line_error(*run(["info", tmp_path]), "directory")


def test_library_errors_and_usage_errors(a9a_model, tmp_path):
    model = tmp_path / "m.model"
    assert_one_line_error(*run(["train", A9A_TEST, "--model", model, "--C", "-1"]), "C must be")
    assert_one_line_error(*run(["train", A9A_TEST, "--model", model, "--cache", "12XB"]), "cache_bytes")
    assert_one_line_error(*run(["train", A9A_TEST, "--model", model, "--cache", "0%"]), "above 0%")
    assert_one_line_error(*run(["train", A9A_TEST, "--model", tmp_path / "no" / "m"]), "does not exist")
    assert_one_line_error(*run(["train", A9A_TEST]), "--model", "--help")
    assert_one_line_error(*run(["train", A9A_TEST, "--model", model, "--loss", "log"]), "--loss")
    cluster = ["train", A9A_TEST, "--model", model, "--cluster", "cocoa"]
    assert_one_line_error(*run(cluster), "--scheduler ADDRESS")
    assert_one_line_error(*run(["frobnicate"]), "frobnicate")
    assert_one_line_error(*run([]), "COMMAND")
    path, _ = a9a_model
    assert_one_line_error(*run(["predict", path, A9A_TEST, "--out", tmp_path / "p.json"]), ".parquet")
    # Training on the test file gives 122 features; the a9a model has 123.
    assert not model.exists()


def test_traceback_flag_shows_the_exception(tmp_path):
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"junk")
    with pytest.raises(ValueError, match="not a dask_streamsvm model file"):
        main(["--traceback", "info", str(garbage)])
    with pytest.raises(ValueError, match="not a dask_streamsvm model file"):
        main(["info", str(garbage), "--traceback"])


def test_keyboard_interrupt_exits_130(monkeypatch, a9a_model):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_info", interrupted)
    code, out, err = run(["info", a9a_model[0]])
    assert code == 130
    assert err.strip() == "dask-streamsvm: interrupted"


def test_help_and_version():
    code, out, _ = run(["--version"])
    assert code == 0 and dask_streamsvm.__version__ in out
    code, out, _ = run(["train", "--help"])
    assert code == 0 and "--cache" in out and "--scheduler" in out
    assert "--zero-based" in out and "--overwrite" in out


def test_python_m_dask_streamsvm_help():
    done = subprocess.run(
        [sys.executable, "-m", "dask_streamsvm", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for command in ("train", "predict", "evaluate", "info", "demo"):
        assert command in done.stdout


# -- demo


@pytest.mark.slow  # among make test's slowest (issue 51: the default suite in six minutes)
def test_demo_quick_writes_table_and_png(tmp_path):
    png = tmp_path / "convergence.png"
    code, out, err = run(["demo", "--quick", "--plot", png])
    assert code == 0, err
    for row in ("test accuracy", "primal objective", "relative duality gap", "passes", "seconds"):
        assert row in out
    assert "LIBLINEAR" in out and "10% cache" in out
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_demo_plot_without_matplotlib(monkeypatch, tmp_path):
    from dask_streamsvm import _demo

    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)
    png = tmp_path / "convergence.png"
    assert _demo._plot({}, png, 0.1, 1e-4) is False
    assert not png.exists()


def test_demo_rejects_bad_cache_fraction():
    assert_one_line_error(*run(["demo", "--cache-fraction", "0"]), "--cache-fraction")


# -- Files in and out of the ``dask-streamsvm`` command and of ``read_libsvm`` (docs/reliability.md)


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


# -- no input is ever written over


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


# -- output paths are checked before the work starts


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


def test_an_output_that_is_a_fifo_is_refused_without_blocking(table, tmp_path):
    """``predict --out FIFO --overwrite`` opened the FIFO and waited for a reader for ever (issue 50,
    item 3): every output path refuses a FIFO before any work; in a child, so that a write that
    blocks fails the test, not the suite."""
    d, model = table
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    os.mkfifo(tmp_path / "m2.model")
    cases = [
        ["predict", str(model), str(d / "rows.csv"), "--out", str(fifo), "--overwrite"],
        ["predict", str(model), str(d / "rows.csv"), "--out", str(fifo)],
        [
            "train",
            str(d / "rows.csv"),
            "--label",
            "label",
            "--model",
            str(tmp_path / "m2.model"),
            "--overwrite",
        ],
    ]
    outcomes = child_json_lines(_COMMANDS, *(json.dumps(argv) for argv in cases))
    for argv, (code, err) in zip(cases, outcomes, strict=True):
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (argv, code, err)
        assert "is a FIFO (named pipe), not a regular file: outputs are written to regular files" in lines[0]


def test_predict_never_writes_through_a_symlink(table, tmp_path, monkeypatch):
    """``predict --out LINK --overwrite`` wrote the file the link points to, even in another directory
    (issue 50, item 6): a link as an output is refused, a dangling one too, and nothing is written."""
    d, model = table
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = elsewhere / "precious.csv"
    precious.write_text("keep me\n")
    (tmp_path / "link.csv").symlink_to(precious)
    (tmp_path / "dangling.csv").symlink_to(elsewhere / "created.csv")
    (tmp_path / "dir.parquet").symlink_to(elsewhere)
    monkeypatch.setattr(dask_streamsvm, "load", lambda path: pytest.fail("the model was read first"))
    for out in ("link.csv", "dangling.csv", "dir.parquet"):
        code, stdout, err = run(["predict", model, d / "rows.csv", "--out", tmp_path / out, "--overwrite"])
        assert_one_line_error(code, stdout, err, "--out", "is a symbolic link")
    assert precious.read_text() == "keep me\n" and not (elsewhere / "created.csv").exists()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.csv"]


def test_train_replaces_a_symlinked_model_path_and_leaves_its_target(svm_file, tmp_path):
    """A model file is written aside and renamed over its path: a link there is replaced, never
    written through."""
    target = tmp_path / "target.model"
    target.write_text("not this one")
    link = tmp_path / "link.model"
    link.symlink_to(target)
    code, out, err = run(["train", svm_file, "--model", link, "--overwrite", *FAST])
    assert code == 0, err
    assert not link.is_symlink() and target.read_text() == "not this one"


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


# -- info prints what a file holds, escaped


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


# -- compressed LIBSVM files


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


# -- names with glob characters


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


# -- issue 36, round three: a FIFO as a data input


@pytest.fixture
def fifos(tmp_path):
    """FIFOs named as a CSV, a LIBSVM and a Parquet file, one inside a Parquet directory, a link to
    one, and a saved model and real files for the commands."""
    X, y = noisy_linear_data(60, 3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y)
    frame.to_csv(tmp_path / "real.csv", index=False)
    LinearSVC(random_state=0).fit(frame[["a", "b", "c"]], y).save(tmp_path / "model.dsvm")
    for name in ("fifo.csv", "fifo.svm", "fifo.parquet"):
        os.mkfifo(tmp_path / name)
    (tmp_path / "parts").mkdir()
    frame.to_parquet(tmp_path / "parts" / "part0.parquet")
    os.mkfifo(tmp_path / "parts" / "part1.parquet")
    (tmp_path / "link.csv").symlink_to(tmp_path / "fifo.csv")
    return tmp_path


_COMMANDS = """
    import contextlib, io, json, sys
    from dask_streamsvm.cli import main
    for argv in map(json.loads, sys.argv[1:]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        print(json.dumps([code, err.getvalue()]), flush=True)
"""


def test_a_fifo_as_the_data_input_of_every_command_is_refused_without_blocking(fifos):
    d = fifos
    model, out = str(d / "model.dsvm"), str(d / "out.csv")
    cases = [
        (["train", str(d / "fifo.csv"), "--label", "y", "--model", str(d / "m.dsvm")], "fifo.csv"),
        (["train", str(d / "fifo.svm"), "--model", str(d / "m.dsvm")], "fifo.svm"),
        (["train", str(d / "parts"), "--label", "y", "--model", str(d / "m.dsvm")], "part1.parquet"),
        (["train", str(d / "f*o.csv"), "--label", "y", "--model", str(d / "m.dsvm")], "fifo.csv"),
        (["predict", model, str(d / "fifo.csv"), "--out", out], "fifo.csv"),
        (["predict", model, str(d / "link.csv"), "--out", out], "link.csv"),
        (["predict", model, str(d / "fifo.parquet"), "--out", out], "fifo.parquet"),
        (["evaluate", model, str(d / "fifo.csv"), "--label", "y"], "fifo.csv"),
        (["evaluate", model, str(d / "real.csv"), str(d / "fifo.csv"), "--label", "y"], "fifo.csv"),
    ]
    outcomes = child_json_lines(_COMMANDS, *(json.dumps(argv) for argv, _ in cases))
    assert len(outcomes) == len(cases)
    for (argv, name), (code, err) in zip(cases, outcomes, strict=True):
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (argv, code, err)
        assert lines[0].startswith("dask-streamsvm: error: ") and name in lines[0], (argv, err)
        assert "FIFO (named pipe), not a regular file" in lines[0], (argv, err)
    assert not (d / "m.dsvm").exists() and not os.path.exists(out)


_LIBRARY = """
    import json, sys
    from dask_streamsvm import LinearSVC, OnePassSVC, read_libsvm
    from dask_streamsvm.io import open_path
    d = sys.argv[1]
    calls = [
        lambda: LinearSVC().fit(d + "/fifo.csv", "y"),
        lambda: LinearSVC().fit(d + "/fifo.svm", None),
        lambda: LinearSVC().fit(d + "/fifo.parquet", "y"),
        lambda: LinearSVC().fit(d + "/parts", "y"),
        lambda: LinearSVC().fit(d + "/link.csv", "y"),
        lambda: OnePassSVC().fit(d + "/fifo.csv", "y"),
        lambda: read_libsvm([d + "/fifo.svm"]),
        lambda: open_path(d + "/f*o.csv", "y"),
    ]
    for call in calls:
        try:
            call()
            print(json.dumps(["done", ""]), flush=True)
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]), flush=True)
"""


def test_a_fifo_given_to_fit_or_the_readers_is_refused_without_blocking(fifos):
    outcomes = child_json_lines(_LIBRARY, fifos)
    names = ["fifo.csv", "fifo.svm", "fifo.parquet", "part1.parquet", "link.csv", "fifo.csv", "fifo.svm"]
    assert len(outcomes) == len(names) + 1
    for name, (kind, message) in zip([*names, "fifo.csv"], outcomes, strict=True):
        assert kind == "ValueError", (name, kind, message)
        assert name in message and "is a FIFO (named pipe), not a regular file" in message, message


def test_a_device_as_data_is_named_as_such(tmp_path):
    with pytest.raises(ValueError, match="'/dev/null' is a character device, not a regular file"):
        LinearSVC().fit("/dev/null", None)


# -- OnePassSVC and BudgetedSVC (issue 53) ----------------------------------------------------------


@pytest.mark.parametrize("model_type", ["onepass", "budgeted"])
def test_train_predict_evaluate_and_info_of_a_kernel_or_one_pass_model(tmp_path, model_type):
    """``train --model-type onepass|budgeted`` saves the model, ``predict`` writes what the library's
    model predicts, ``info`` shows its support vectors or its ball, ``evaluate`` says it has no
    certificate."""
    frame = three_class_frame(n=240)
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    model = tmp_path / "m.dsvm"
    own = (
        ["--budget", "12", "--passes", "2", "--gamma", "0.5"]
        if model_type == "budgeted"
        else ["--lookahead", "3"]
    )
    code, out, err = run(["train", csv, "--label", "label", "--model", model, "--model-type", model_type,
                          "--seed", "0", "--quiet", *own])  # fmt: skip
    assert code == 0, err
    name = {"onepass": "OnePassSVC", "budgeted": "BudgetedSVC"}[model_type]
    assert out.startswith(f"Trained {name} (C=1") and f"Model saved to {model}." in out
    loaded = dask_streamsvm.load(model)
    assert type(loaded).__name__ == name
    code, out, err = run(["predict", model, csv, "--label", "label", "--out", tmp_path / "p.csv"])
    assert code == 0, err
    written = pd.read_csv(tmp_path / "p.csv")
    features = frame.drop(columns="label")
    np.testing.assert_array_equal(written["prediction"].to_numpy(), loaded.predict(features))
    decision = written[[f"decision_{c}" for c in loaded.classes_]].to_numpy()
    np.testing.assert_allclose(decision, loaded.decision_function(features), rtol=1e-12)
    code, out, err = run(["info", model])
    assert code == 0, err
    assert f"estimator       {name}" in out
    if model_type == "budgeted":
        assert (
            "support vectors [12, 12, 12] per problem (budget 12 each)" in out
            and "gamma_          0.5" in out
        )
    else:
        assert "ball radius" in out and "core vectors" in out
    info = json.loads(run(["info", model, "--json"])[1])
    assert info["estimator"] == name and info["n_features"] == features.shape[1]
    code, out, err = run(["evaluate", model, csv, "--label", "label", "--json"])
    assert code == 0, err
    result = json.loads(out)
    assert result["training_duality_gap"] is None and result["accuracy"] == loaded.score(
        features, frame.label
    )


def test_budgeted_verbose_prints_its_epochs_and_onepass_refuses_verbose(tmp_path):
    frame = three_class_frame(n=120)
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    argv = ["train", csv, "--label", "label", "--model-type", "budgeted", "--budget", "5", "--passes", "3"]
    code, out, err = run([*argv, "--verbose", "--model", tmp_path / "b.dsvm"])
    assert code == 0, err
    assert [line.split(":")[0] for line in out.splitlines()[:3]] == [
        f"BudgetedSVC epoch {k} of 3" for k in (1, 2, 3)
    ]
    code, out, err = run(["train", csv, "--label", "label", "--model-type", "onepass", "--verbose",
                          "--model", tmp_path / "o.dsvm"])  # fmt: skip
    assert_one_line_error(code, out, err, "--verbose sets an option of --model-type")


# -- The L1 and elastic-net penalties (issue 54) -----------------------------------------------------


@pytest.mark.parametrize(
    ("options", "estimator", "params", "shown"),
    [
        (["--penalty", "l1"], "LinearSVC", {"penalty": "l1"}, "l1 (l1_ratio=1)"),
        (["--model-type", "logistic", "--l1-ratio", "0.5"], "LogisticRegression", {"l1_ratio": 0.5},
         "elasticnet (l1_ratio=0.5)"),
    ],
)  # fmt: skip
def test_train_predict_evaluate_and_info_of_an_l1_model(tmp_path, options, estimator, params, shown):
    """``train --penalty l1`` and ``--l1-ratio 0.5`` stream the file through the primal Newton reads,
    as the library's model on the same lazily read rows does;
    ``predict`` writes its predictions, ``evaluate`` its accuracy, ``info`` its penalty and nonzero
    weights."""
    rng = np.random.RandomState(0)
    X = rng.randn(80, 6)
    y = np.where(X @ [1.0, -2.0, 0.5, 0.0, 0.0, 0.0] > 0, 1, -1)
    data = tmp_path / "t.svm"
    data.write_text("".join(f"{t} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n"
                            for t, row in zip(y, X, strict=True)))  # fmt: skip
    model = tmp_path / "m.dsvm"
    argv = ["train", data, "--model", model, "--C", "0.05", "--tol", "1e-8", "--seed", "0", "--quiet"]
    code, out, err = run([*argv, *options])
    assert code == 0, err
    loaded = dask_streamsvm.load(model)
    assert type(loaded).__name__ == estimator and loaded.solver == "auto"
    assert all(loaded.get_params()[k] == v for k, v in params.items())
    nonzero = np.count_nonzero(loaded.coef_)
    assert 0 < nonzero < loaded.coef_.size  # a sparse model
    assert " streamed on 80 rows x 6 features" in out and f"{nonzero} of 6 weights nonzero" in out, out
    library = getattr(dask_streamsvm, estimator)(C=0.05, tol=1e-8, random_state=0, **params)
    library.fit(*read_libsvm(str(data)))
    X_read, y_read = dask.compute(*read_libsvm(str(data)))
    np.testing.assert_allclose(loaded.coef_, library.coef_, rtol=1e-12, atol=1e-15)

    code, out, err = run(["predict", model, data, "--out", tmp_path / "p.csv"])
    assert code == 0, err
    written = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_array_equal(written["prediction"].to_numpy(), library.predict(X_read))
    np.testing.assert_allclose(written["decision"].to_numpy(), library.decision_function(X_read), rtol=1e-9)
    result = json.loads(run(["evaluate", model, data, "--json"])[1])
    assert result["accuracy"] == library.score(X_read, y_read)

    code, out, err = run(["info", model])
    assert code == 0, err
    assert f"penalty         {shown}: {nonzero} of 6 weights nonzero" in out, out
    info = json.loads(run(["info", model, "--json"])[1])
    assert info["penalty"] == shown.split()[0] and info["nonzero_weights"] == nonzero
    assert info["weights"] == 6


def test_info_of_an_l2_model_shows_its_penalty_without_counting_weights(a9a_model):
    path, _ = a9a_model
    out = run(["info", path])[1]
    assert "penalty         l2 (l1_ratio=0)\n" in out
    info = json.loads(run(["info", path, "--json"])[1])
    assert (info["penalty"], info["l1_ratio"], info["nonzero_weights"]) == ("l2", 0.0, None)


def test_an_l1_penalty_with_a_streaming_solver_is_one_line_before_training(svm_file, tmp_path, no_fit):
    argv = ["train", svm_file, "--model", tmp_path / "m", "--penalty", "l1"]
    assert_one_line_error(
        *run([*argv, "--solver", "sbm"]), "--solver sbm", "--penalty l1 streams files through the primal"
    )
    assert not (tmp_path / "m").exists()
    code, out, err = run([*argv, "--checkpoint-dir", tmp_path / "ck"])
    assert_one_line_error(code, out, err, "--checkpoint-dir", "drop --checkpoint-dir")
    code, out, err = run([*argv, "--scheduler", "tcp://127.0.0.1:1", "--cluster", "cocoa"])
    assert_one_line_error(code, out, err, "--cluster cocoa trains the L2 penalty only")
    assert not (tmp_path / "m").exists()

"""``dask-streamsvm train`` on a cluster: ``--dual``, ``--cluster``, ``--scale`` and the summary line.

The options and the summary are checked without a cluster; the fits, in-process through
``main(argv)`` as in ``tests/test_cli.py``, on a ``LocalCluster`` of two single-thread worker
processes given by ``--scheduler``.
"""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import dask_streamsvm
from dask_streamsvm import LinearSVC, cli
from dask_streamsvm.cli.commands import _advice, _summary, _where
from dask_streamsvm.features import Standardize

from ._helpers import assert_one_line_error, run

distributed = pytest.importorskip("distributed")

TIMEOUTS = {  # a loaded machine (another suite running) must not look like lost workers
    "distributed.comm.timeouts.connect": "120s",
    "distributed.comm.timeouts.tcp": "300s",
    "distributed.scheduler.worker-ttl": "15 minutes",
}


def _args(*options):
    return cli.build_parser().parse_args(["train", "data.parquet", "--model", "m.model", *options])


def raw_pixels(n, seed=0):
    """``n`` rows of three integer "pixel" values in 0..255 (raw scale, as the UCI skin set's B, G,
    R) and labels 1 and 2 of a noisy hyperplane: the rows on which CoCoA+ and averaging stall."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 256, size=(n, 3))
    score = X @ np.array([1.0, -0.6, 0.3]) - 90.0 + 25.0 * rng.standard_normal(n)
    return pd.DataFrame(X, columns=["b", "g", "r"]).assign(label=np.where(score > 0, 1, 2))


# -- options, without a cluster ----------------------------------------------------------------


def test_dual_and_cluster_become_linearsvc_parameters():
    assert _where(_args()) == {"dual": "auto", "cluster": None}  # no --scheduler: this process
    assert _where(_args("--dual", "false")) == {"dual": False, "cluster": None}
    assert _where(_args("--dual", "true")) == {"dual": True, "cluster": None}
    scheduler = ("--scheduler", "tcp://host:8786")
    assert _where(_args(*scheduler)) == {"dual": "auto", "cluster": "auto"}  # the default on a cluster
    assert _where(_args(*scheduler, "--dual", "false")) == {"dual": False, "cluster": "auto"}
    for mode in ("auto", "average", "cocoa", "sbm"):
        assert _where(_args(*scheduler, "--cluster", mode))["cluster"] == mode
    # In memory, and checkpointed streaming, train in this process; the scheduler reads the rows.
    assert _where(_args(*scheduler, "--solver", "memory"))["cluster"] is None
    assert _where(_args(*scheduler, "--checkpoint-dir", "ck"))["cluster"] is None


@pytest.mark.parametrize("mode", ["auto", "average", "cocoa", "sbm"])
def test_cluster_without_scheduler_is_an_error_that_names_it(tmp_path, mode):
    (tmp_path / "x.parquet").write_bytes(b"")  # never opened: the options are refused first
    argv = [
        "train",
        tmp_path / "x.parquet",
        "--label",
        "y",
        "--model",
        tmp_path / "m.model",
        "--cluster",
        mode,
    ]
    assert_one_line_error(*run(argv), f"--cluster {mode}", "--scheduler ADDRESS")
    assert not (tmp_path / "m.model").exists()


def test_cluster_refuses_options_that_train_in_this_process(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"")
    # An address nothing listens on: the options are refused before any connection.
    base = ["train", tmp_path / "x.parquet", "--label", "y", "--model", tmp_path / "m.model"]
    base += ["--scheduler", "tcp://127.0.0.1:1", "--cluster", "cocoa"]
    assert_one_line_error(*run([*base, "--solver", "memory"]), "--cluster cocoa", "--solver memory")
    assert_one_line_error(*run([*base, "--checkpoint-dir", tmp_path / "ck"]), "--checkpoint-dir", "--cluster")


def test_dual_takes_auto_true_or_false(tmp_path):
    argv = ["train", "x.parquet", "--model", tmp_path / "m.model", "--dual", "no"]
    assert_one_line_error(*run(argv), "--dual", "'no'")
    (tmp_path / "x.parquet").write_bytes(b"")  # never opened: the options are refused first
    argv = ["train", tmp_path / "x.parquet", "--label", "y", "--model", tmp_path / "m.model"]
    assert_one_line_error(*run([*argv, "--dual", "false", "--loss", "hinge"]), "--dual false", "--loss hinge")
    help_text = run(["train", "--help"])[1]
    assert "--dual {auto,true,false}" in help_text and "--cluster {auto,average,cocoa,sbm}" in help_text


def test_dual_false_trains_the_primal_newton_solver_in_this_process(tmp_path):
    raw_pixels(3_000).to_parquet(tmp_path / "raw.parquet")
    model_path = tmp_path / "m.model"
    code, out, err = run(["train", tmp_path / "raw.parquet", "--label", "label", "--model", model_path,
                          "--dual", "false", "--seed", "0"])  # fmt: skip
    assert code == 0, err
    model = dask_streamsvm.load(model_path)
    assert model.dual is False and model.history_[-1]["solver"] == "newton"
    assert "streamed on 3,000 rows x 3 features" in out and "converged" in out and "on a cluster" not in out


def _fitted(parts, method, gap, loss="squared_hinge", n_iter=7):
    """A stand-in for a model fitted on a cluster: what the summary line reads."""
    return SimpleNamespace(
        duality_gap_=gap, objective_=123.0, classes_=np.array([1, 2]), n_features_in_=3, loss=loss,
        n_iter_=n_iter, cluster_parts_=parts, history_=[{"method": "x"}, {"method": method}],
    )  # fmt: skip


PARTS = [
    {"worker": "tcp://a:1", "partitions": [0, 2], "rows": 122_500},
    {"worker": "tcp://b:1", "partitions": [1, 3], "rows": 122_557},
]


def test_summary_of_a_cluster_fit_gives_rows_workers_and_method():
    args = _args("--scheduler", "tcp://host:8786")
    line = _summary(_fitted(PARTS, "newton", 4e-4, n_iter=5), args, None, 1.5)
    assert "on 245,057 rows x 3 features on a cluster of 2 workers (method: newton)" in line
    assert "5 passes" in line and "(tol 0.001, converged)" in line and "streamed" not in line
    line = _summary(_fitted(PARTS, "cocoa", 0.998, n_iter=30), args, None, 1.5)
    assert "(method: cocoa)" in line and "30 rounds" in line and "not converged" in line
    one_worker = [dict(p, worker="tcp://a:1") for p in PARTS]
    assert "on a cluster of 1 worker (method: truncated_newton)" in _summary(
        _fitted(one_worker, "truncated_newton", 0.0), args, None, 1.0
    )
    # A fit in this process: the rows it counted, no cluster.
    local = SimpleNamespace(**{**vars(_fitted(PARTS, "newton", 0.0)), "cluster_parts_": None})
    assert "streamed on 1,000 rows x 3 features, 2 classes" in _summary(local, _args(), 1_000, 1.0)


def test_advice_after_an_unconverged_fit_points_to_what_converges():
    scheduler = ("--scheduler", "tcp://host:8786")
    on_cluster = {"rows": 10, "workers": 2}

    def advice(method, *options, loss="squared_hinge"):
        model = SimpleNamespace(loss=loss)
        return _advice(model, _args(*options), None if method is None else {**on_cluster, "method": method})

    text = advice("average", *scheduler, "--cluster", "average")
    assert "raise --passes or loosen --tol" in text
    assert "--dual false or --cluster auto trains by Newton steps on the cluster" in text
    assert "raw pixel values" in text and "--scale" in text
    # CoCoA+ chosen by auto (hinge loss): only squared hinge has Newton steps.
    text = advice("cocoa", *scheduler, "--loss", "hinge", loss="hinge")
    assert "--loss squared_hinge --dual false trains" in text and "--cluster auto" not in text
    # --dual true keeps auto on CoCoA+: the advice is --dual false alone.
    assert "--dual false trains" in advice("cocoa", *scheduler, "--cluster", "cocoa", "--dual", "true")
    # Newton steps that stopped early, already standardized: only more steps or a looser tol.
    assert advice("newton", *scheduler, "--scale") == "raise --passes or loosen --tol"
    assert "--dual false" not in advice(None) and "--scale" in advice(None)


# -- on a LocalCluster ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def scheduler():
    import dask

    with (
        dask.config.set(TIMEOUTS),
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit="1GiB",
            dashboard_address=":0",  # None still serves HTTP on 8787, and warns when that is taken
            silence_logs=40,
        ) as cluster,
    ):
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def raw_folder(tmp_path_factory):
    """40,000 raw-scale rows (integers 0..255) as a folder of four Parquet files: more rows than the
    primal solver's warm-start sample (20,000), so that its Newton steps read the parts."""
    folder = tmp_path_factory.mktemp("raw") / "pixels"
    folder.mkdir()
    frame = raw_pixels(40_000)
    for i in range(4):
        frame.iloc[10_000 * i : 10_000 * (i + 1)].to_parquet(folder / f"part{i}.parquet")
    return folder, frame


def _objective(frame, **params):
    """The single-machine optimum's primal objective (pandas input: in this process)."""
    model = LinearSVC(dual=False, tol=1e-8, **params).fit(frame.drop(columns=["label"]), frame["label"])
    return float(model.objective_)


def test_raw_scale_data_converges_on_a_cluster_with_the_defaults(scheduler, raw_folder, tmp_path):
    """The issue's case: raw pixel values, where CoCoA+ and averaging stall, train to --tol with
    no option but --scheduler, and the summary says on how many rows and by which method."""
    folder, frame = raw_folder
    model_path = tmp_path / "m.model"
    argv = ["train", folder, "--label", "label", "--model", model_path, "--scheduler", scheduler]
    code, out, err = run(argv)
    assert code == 0, err
    assert "on 40,000 rows x 3 features on a cluster of 2 workers (method: newton)" in out, out
    assert "(tol 0.001, converged)" in out, out
    model = dask_streamsvm.load(model_path)
    assert {record["method"] for record in model.history_} == {"newton"}  # saved with the model
    assert model.duality_gap_ <= 1e-3 and model.n_iter_ >= 1  # Newton steps that read the parts
    # The certified gap bounds the distance to the single-machine optimum.
    optimum = _objective(frame)
    assert -1e-12 <= (model.objective_ - optimum) / model.objective_ <= model.duality_gap_ + 1e-9  # rounding

    code, out, err = run(
        ["evaluate", model_path, folder, "--label", "label", "--json", "--scheduler", scheduler]
    )
    assert code == 0, err
    assert json.loads(out)["rows"] == 40_000


def test_scale_trains_on_the_cluster(scheduler, raw_folder, tmp_path):
    folder, frame = raw_folder
    model_path = tmp_path / "scaled.model"
    argv = ["train", folder, "--label", "label", "--model", model_path, "--scheduler", scheduler, "--scale"]
    code, out, err = run(argv)
    assert code == 0, err
    assert "40,000 rows x 3 features on a cluster of 2 workers (method: newton)" in out, out
    assert "(tol 0.001, converged)" in out, out
    model = dask_streamsvm.load(model_path)
    assert isinstance(model.feature_map, Standardize)
    optimum = _objective(frame, feature_map=Standardize())  # the scales of all the rows, in this process
    assert -1e-12 <= (model.objective_ - optimum) / model.objective_ <= model.duality_gap_ + 1e-9  # rounding


def test_unconverged_cocoa_on_raw_scale_data_says_what_to_try(scheduler, raw_folder, tmp_path):
    folder, _ = raw_folder
    argv = ["train", folder, "--label", "label", "--model", tmp_path / "c.model", "--scheduler", scheduler]
    code, out, err = run([*argv, "--cluster", "cocoa", "--passes", "5", "--seed", "0"])
    assert code == 0, err
    assert "on 40,000 rows x 3 features on a cluster of 2 workers (method: cocoa)" in out, out
    assert "5 rounds" in out and "not converged" in out
    assert "--dual false or --cluster auto trains by Newton steps on the cluster" in out
    assert "--scale" in out
    assert "warning" in err  # the estimator's ConvergenceWarning, one line


def test_dual_false_with_a_scheduler_trains_newton_steps_on_the_cluster(scheduler, raw_folder, tmp_path):
    folder, _ = raw_folder
    model_path = tmp_path / "n.model"
    argv = ["train", folder, "--label", "label", "--model", model_path, "--scheduler", scheduler]
    code, out, err = run([*argv, "--dual", "false"])
    assert code == 0, err
    assert "(method: newton)" in out and "(tol 0.001, converged)" in out
    model = dask_streamsvm.load(model_path)
    assert model.dual is False and model.history_[-1]["method"] == "newton"


def test_three_classes_train_and_evaluate_through_a_scheduler(scheduler, tmp_path):
    """One-vs-rest on a cluster from Parquet parts, and evaluate reading there."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1200, 4))
    y = np.array(["x", "y", "z"])[np.argmax(X[:, :3] + 0.3 * rng.standard_normal((1200, 3)), axis=1)]
    parts = tmp_path / "parts"
    parts.mkdir()
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(label=y)
    frame.iloc[:700].to_parquet(parts / "p0.parquet")
    frame.iloc[700:].to_parquet(parts / "p1.parquet")
    model_path = tmp_path / "m.model"
    code, out, err = run(
        ["train", parts, "--label", "label", "--model", model_path, "--scheduler", scheduler]
    )
    assert code == 0, err
    assert "1,200 rows x 4 features on a cluster of" in out and "3 classes ('x', 'y', 'z')" in out
    argv = ["evaluate", model_path, parts, "--label", "label", "--json", "--scheduler", scheduler]
    code, out, err = run(argv)
    assert code == 0, err
    result = json.loads(out)
    assert result["rows"] == 1200 and result["accuracy"] > 0.8

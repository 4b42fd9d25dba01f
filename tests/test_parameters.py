"""Every public parameter, checked before any read: a table of bad values per estimator and per command.

For each parameter of :class:`LinearSVC`, :class:`OnePassSVC` and :class:`BudgetedSVC` (from
``get_params()``) and each option of ``dask-streamsvm train``, ``predict`` and ``evaluate`` (from
the parser), the tables list the bad values of the kinds that apply: negative, zero, NaN, infinite,
subnormal, too large, of the wrong type, a path of the wrong kind.  A bad value must raise a
ValueError or TypeError (a command: exit status 2 and one line) that names the parameter (the
option), shows the value and says what to pass, before the data is read: the estimators get a Dask
collection whose every partition raises :class:`ReadAttempted` when computed, and the commands' data
files are watched by an audit hook (Python's ``open`` events).  Huge values a fit can use
(``max_iter=10**12``, ``cache_bytes=10**16``: the cache grows with the rows it holds) are rows too,
"accepted": the fit goes on to read the data.  A parameter or option without a row fails
:func:`test_every_parameter_has_rows` and :func:`test_every_option_has_rows`.

A row may be marked ``xfail`` (strict: with the reason it fails, until the change that makes it
pass), and ``partial`` says why ``partial_fit`` fails it, or that it does not apply there.
"""

import argparse
import contextlib
import math
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest

from dask_streamsvm import BudgetedSVC, LinearSVC, LogisticRegression, OnePassSVC

NAN, INF = float("nan"), float("inf")
SUBNORMAL = 1e-320  # below float64's smallest normal number, 2.2e-308
HUGE_BYTES = 10**30  # beyond int64: no byte count the engine can hold


class ReadAttempted(Exception):
    """A partition of the refusing source was computed: the fit read data."""


def refusing_source(reads, n_features=3):
    """A Dask Array ``X`` and labels ``y`` whose partitions append to ``reads`` and raise when computed."""

    def part(i, shape):
        reads.append(i)
        raise ReadAttempted(f"partition {i} was read")

    def array(shape, dtype):
        parts = [da.from_delayed(dask.delayed(part)(i, shape), shape, dtype) for i in range(2)]
        return da.concatenate(parts)

    return array((10, n_features), np.float64), array((10,), np.int64)


# -- the estimators' table ----------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """A path made for the test: ``"file"`` (a regular file), ``"under a file"`` (a path below a
    file), ``"refusing"`` (a directory no file can be created in), ``"missing"`` (a directory
    to create, below a writable one)."""

    kind: str


@dataclass(frozen=True)
class Row:
    """``param=value``: refused (the default) or ``accepted``; ``shown``: what of the value the
    message must show (default: its repr); ``xfail``: why it fails today; ``partial``: why
    ``partial_fit`` fails it today, or ``"skip: ..."`` why it does not apply there."""

    param: str
    value: object
    accepted: bool = False
    shown: str = None
    xfail: str = None
    partial: str = None


def bad(param, *values, xfail=None, shown=None, partial=None):
    return [Row(param, v, xfail=xfail, shown=shown, partial=partial) for v in values]


def fine(param, *values, xfail=None):
    return [Row(param, v, accepted=True, xfail=xfail) for v in values]


def positive_float(param, huge=1e300, optional=False):
    """A finite number > 0 (never subnormal; ``optional``: or None); ``huge`` is accepted."""
    wrong = (-1, 0, NAN, INF, -INF, SUBNORMAL, "1", [1.0], *([] if optional else [None]))
    return [*bad(param, *wrong), *fine(param, huge)]


def boolean(param):
    return bad(param, "no", 2, None)


def directory(param, partial=None):
    """A path of a directory the fit can write in: created if missing."""
    wrong = [Place("file"), Place("under a file"), Place("refusing")]
    return [*bad(param, 1, ["dir"], *wrong, partial=partial), *fine(param, Place("missing"))]


# C: from MIN_C = 1e-150 for every estimator (the squares of C or of 1 / C stay normal numbers), to
# 1e150 for BudgetedSVC (lambda = 1 / (n_samples C) stays one).
SMALL_C = [*bad("C", 1e-151, 1e-200), *fine("C", 1e-150)]

LINEAR = [
    *positive_float("C"),
    *SMALL_C,
    *bad("penalty", "l3", "elasticnet", 1, None),
    *bad("loss", "x", None, 1),
    *bad("dual", "yes", 1, None),
    *bad("multi_class", "x", None),
    *bad("feature_map", "poly", 1),
    *boolean("fit_intercept"),
    *bad("intercept_scaling", -1, 0, NAN, INF, SUBNORMAL, "1", 1e200),
    *fine("intercept_scaling", 1e100),
    *bad("class_weight", "bal", [1, 2], 1.0),
    *bad("class_weight", {0: -1}, {0: NAN}, {0: INF}, {0: "a"}, {0: SUBNORMAL}, {1: None}),
    *fine("class_weight", {0: 0, 1: 1e300}),
    *positive_float("tol"),
    *bad("max_iter", 0, -1, 1.5, "a", None),
    *fine("max_iter", 10**12, 10**30),
    *bad("solver", "x", None),
    *bad("cache_bytes", -1, 0, "abc", 1.5, NAN, True, "0%", "200%", HUGE_BYTES, "1e30TB"),
    *fine("cache_bytes", 10**16, "10000TB", "10PB"),
    *bad("block_bytes", -1, 0, "abc", 1.5, True, HUGE_BYTES),
    *fine("block_bytes", 10**16),
    *bad("inner_iter", 0, -1, 1.5, "a"),
    *fine("inner_iter", 10**12),
    *bad("cache_policy", "x", None),
    *boolean("deterministic"),
    *bad("prefetch", 0, -1, 1.5, None),
    *fine("prefetch", 10**9),
    *boolean("shuffle"),
    *bad("alpha_store", "x", None),
    *boolean("probability"),
    *bad("callbacks", 1, [1], "abc"),
    *bad("validation_data", "abc", (1,), 1),
    *bad("cluster", "x", 1),
    *bad("on_invalid", "x", None),
    *bad("retries", -1, 1.5, "a", None),
    *fine("retries", 10**12),
    *positive_float("read_timeout", optional=True),
    *bad("spill", "yes", 2, None),
    *directory("spill_dir"),
    *directory("checkpoint_dir", partial="skip: partial_fit refuses every checkpoint_dir (check_partial)"),
    *bad("checkpoint_every", -1, NAN, INF, "a"),
    *fine("checkpoint_every", 0, 1e300),
    *bad("random_state", -1, 2**33, "a", 1.5),
    *bad("verbose", -1, "a", 1.5, None),
]

ONEPASS = [
    *positive_float("C"),
    *SMALL_C,
    *bad("lookahead", 0, -1, 1.5, "a", 10**6, 10**30),
    *boolean("fit_intercept"),
    *bad("intercept_scaling", -1, 0, NAN, INF, SUBNORMAL, "1", 1e200),
    *boolean("normalize"),
    *boolean("standardize"),
    *boolean("shuffle"),
    *bad("prefetch", 0, 1.5),
    *fine("prefetch", 10**9),
    *bad("random_state", -1, "a"),
]

BUDGETED = [
    *positive_float("C", huge=1e150),
    *SMALL_C,
    *bad("C", 1.01e150, 1e306),
    *positive_float("gamma"),
    *bad("gamma", "x"),
    *bad("budget", 1, 0, 1.5, "a", 10**9, 10**30),
    *bad("max_iter", 0, 1.5),
    *fine("max_iter", 10**12),
    *bad("merge", "x", None),
    *boolean("fit_intercept"),
    *boolean("shuffle"),
    *bad("prefetch", 0, 1.5),
    *bad("verbose", -1, "a", 1.5, None),
    *bad("random_state", -1, "a"),
]

# LogisticRegression: LinearSVC's rows of the parameters it shares, its penalty (deprecated, as
# scikit-learn 1.8's), l1_ratio and its multi_class ("auto", "ovr" or "multinomial", not LinearSVC's
# "crammer_singer").
_LOGISTIC_OWN = {"loss", "multi_class", "probability", "penalty"}
LOGISTIC = [
    *[row for row in LINEAR if row.param not in _LOGISTIC_OWN],
    *bad("penalty", "l3", 1),
    *bad("l1_ratio", -0.1, 1.5, NAN, INF, "a", None, True),
    *bad("multi_class", "x", "crammer_singer", "Auto", None),
]

TABLES = {LinearSVC: LINEAR, OnePassSVC: ONEPASS, BudgetedSVC: BUDGETED, LogisticRegression: LOGISTIC}


def _label(value):
    if isinstance(value, Place):
        return f"<{value.kind}>"
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}..."


def _cases(method="fit", accepted=False):
    """The rows of every table for ``method`` ("fit" or "partial_fit"), refused or ``accepted``."""
    for estimator, rows in TABLES.items():
        for row in rows:
            if row.accepted != accepted:
                continue
            why = row.partial if method == "partial_fit" and row.partial else row.xfail
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            if why and why.startswith("skip: "):
                marks = [pytest.mark.skip(reason=why[len("skip: ") :])]
            ident = f"{estimator.__name__}-{row.param}={_label(row.value)}-{method}"
            yield pytest.param(estimator, row, method, marks=marks, id=ident)


@pytest.fixture
def places(tmp_path):
    """The paths :class:`Place` names, made in ``tmp_path``."""
    file = tmp_path / "a-file"
    file.write_text("not a directory\n")
    refusing = tmp_path / "read-only"
    refusing.mkdir()
    refusing.chmod(0o555)
    made = {"file": file, "under a file": file / "sub", "missing": tmp_path / "missing" / "deeper"}
    made["refusing"] = refusing if not _writable(refusing) else _refusing_elsewhere()
    yield made
    refusing.chmod(0o755)


def _writable(directory):
    """Whether a file can be created in ``directory`` (root's can be in a read-only one)."""
    try:
        probe = directory / ".probe"
        probe.write_text("")
    except OSError:
        return False
    probe.unlink()
    return True


def _refusing_elsewhere():
    """A directory that refuses new files whoever we are: /proc, where it is one; else None."""
    proc = Path("/proc")
    return proc if proc.is_dir() and not _writable(proc) else None


def _resolved(value, places):
    if not isinstance(value, Place):
        return value
    path = places[value.kind]
    if path is None:
        pytest.skip(f"no {value.kind} directory on this machine (running as root without /proc)")
    return str(path)


# "Says what to pass": the message gives the rule or the remedy, or says what the value is not (a
# directory, a model file, an int: argparse's "invalid int value") or that it does not exist.
FIX = re.compile(
    r"\b(must|give|pass|use|choose|omit|name)\b|\bnot an? \w+|invalid \w+ value|no such|does not exist",
    re.IGNORECASE,
)


def _shown(value, row_shown):
    """The texts of which a message showing ``value`` holds one (as a token: "no" is not in "not")."""
    if row_shown is not None:
        return [row_shown]
    texts = [repr(value)] if isinstance(value, str) else [repr(value), str(value)]
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        texts.append(repr(float(value)))
    return texts


def assert_says(message, name, shown):
    """``message`` names ``name`` (if not None), shows one of ``shown`` and says what to pass."""
    if name is not None:
        assert name in message, f"the message does not name {name}: {message}"
    shows = (re.search(rf"(?<![\w.]){re.escape(s)}(?!\w)", message) for s in shown)
    assert any(shows), f"the message does not show {shown[0]}: {message}"
    assert FIX.search(message), f"the message does not say what to pass: {message}"


def _fit(estimator, method, X, y):
    if method == "fit":
        return estimator.fit(X, y)
    return estimator.partial_fit(X, y, classes=np.array([0, 1]))


@pytest.mark.parametrize(("estimator", "row", "method"), [*_cases("fit"), *_cases("partial_fit")])
def test_a_bad_value_is_refused_naming_it_before_any_read(estimator, row, method, places):
    value = _resolved(row.value, places)
    reads = []
    X, y = refusing_source(reads)
    with pytest.raises((ValueError, TypeError)) as caught:
        _fit(estimator(**{row.param: value}), method, X, y)
    assert reads == [], f"{row.param}={value!r} was refused after {len(reads)} partition reads"
    assert_says(str(caught.value), row.param, _shown(value, row.shown))


@pytest.mark.parametrize(("estimator", "row", "method"), list(_cases(accepted=True)))
def test_a_huge_value_a_fit_can_use_is_accepted(estimator, row, method, places):
    value = _resolved(row.value, places)
    reads = []
    X, y = refusing_source(reads)
    with pytest.raises(ReadAttempted):
        estimator(**{row.param: value}).fit(X, y)
    assert reads


@pytest.mark.parametrize("estimator", list(TABLES))
def test_every_parameter_has_rows(estimator):
    params = set(estimator().get_params(deep=False))
    rows = {row.param for row in TABLES[estimator]}
    assert params - rows == set(), f"parameters of {estimator.__name__} without a row: {params - rows}"
    assert rows - params == set(), f"rows of {estimator.__name__} for no parameter: {rows - params}"


# -- the command line's table -----------------------------------------------------------------


class _Opens:
    """The watched files the process opened (an audit hook sees every ``open``, Python's and the OS
    module's); nothing is recorded while nothing is watched."""

    watched = frozenset()
    seen = []
    releaser = None  # the thread of watching() that opens a FIFO for writing: its opens are not the command's


def _audit(event, args):
    if event != "open" or not _Opens.watched or not isinstance(args[0], str | bytes | os.PathLike):
        return
    if threading.get_ident() == _Opens.releaser:  # an audit event comes before the open: even a failed
        return  # attempt of the releaser would count as the command's (a flaky failure on a loaded machine)
    try:
        path = os.path.realpath(os.fsdecode(args[0]))
    except (TypeError, ValueError):
        return
    if path in _Opens.watched:
        _Opens.seen.append(path)


sys.addaudithook(_audit)  # for the session; a no-op while nothing is watched


@contextlib.contextmanager
def watching(*paths):
    """Record, in the list yielded, the opens of ``paths``; a FIFO among them is opened for
    writing whenever a reader has it open, so that a reader that opened it ends (and is counted)
    rather than blocks."""
    seen, stop = [], threading.Event()
    _Opens.watched, _Opens.seen = frozenset(os.path.realpath(p) for p in paths), seen
    fifos = [p for p in paths if os.path.exists(p) and not os.path.isfile(p) and not os.path.isdir(p)]

    def release():
        _Opens.releaser = threading.get_ident()
        while not stop.wait(0.02):
            for fifo in fifos:
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:  # no reader has it open
                    continue
                seen.append(fifo)
                os.close(fd)  # the reader sees the end of the file

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()
        _Opens.watched, _Opens.seen, _Opens.releaser = frozenset(), [], None


@dataclass(frozen=True)
class Option:
    """``dask-streamsvm COMMAND ... OPTION VALUE``: refused (the default) or ``accepted``.

    ``option``: what is given (``"--C"``; ``"paths"`` and ``"model"`` replace the positional
    argument); ``value``: its text, or a :class:`Place`, or ``"<fifo>"``; ``named``: what the
    message must name (default: ``option``; None for the input paths, named by their value);
    ``shown``: what of the value it must show (default: the value); ``schema``: the check needs
    the data's columns, so it may read them; ``data``: ``"csv"`` or ``"svm"`` (LIBSVM) input.
    """

    command: str
    dest: str
    option: str
    value: object
    accepted: bool = False
    named: object = "option"
    shown: str = None
    schema: bool = False
    data: str = "csv"
    xfail: str = None


def options(command, dest, option, *values, **extra):
    return [Option(command, dest, option, v, **extra) for v in values]


def output(command, dest, option):
    """An output file: not a directory, in a directory that exists and takes new files (a file
    ``out`` in a file, in a missing directory, in one that refuses new files)."""
    wrong = (Place("directory"), Place("file"), Place("missing"), Place("refusing"))
    return options(command, dest, option, *wrong)


CLI = [
    *options("train", "paths", "paths", "missing.csv", "<fifo>", named=None),
    *options("train", "label", "--label", "nosuch", schema=True),
    *options("train", "format", "--format", "x", "json"),
    *options("train", "scheduler", "--scheduler", "notanaddress", named="scheduler"),
    *output("train", "model", "--model"),
    *options("train", "loss", "--loss", "x", "l1", "log_loss"),
    *options("train", "model_type", "--model-type", "x", "logistic_regression"),
    *options("train", "penalty", "--penalty", "x", "l3", "elasticnet"),
    *options("train", "penalty", "--penalty", "l1", accepted=True),  # trained in memory (--solver memory)
    # 0.5: of --model-type logistic, refused for the default svm (pointing to --penalty).
    *options("train", "l1_ratio", "--l1-ratio", "abc", "-0.1", "2", "nan", "inf", "0.5"),
    *options("train", "multi_class", "--multi-class", "x", "crammer_singer", "ovr"),
    *options("train", "C", "--C", "abc", "-1", "0", "nan", "inf", "1e-320"),
    *options("train", "cache", "--cache", "-1", "0", "abc", "200%", "1e30TB"),
    *options("train", "cache", "--cache", "10000TB", "10PB", accepted=True),
    *options("train", "passes", "--passes", "1.5", "abc", "0", "-1"),
    *options("train", "passes", "--passes", str(10**12), accepted=True),
    *options("train", "tol", "--tol", "abc", "0", "-1", "nan", "inf"),
    *options("train", "solver", "--solver", "x"),
    *options("train", "cluster", "--cluster", "x"),
    *options("train", "dual", "--dual", "x", "yes"),
    *options("train", "seed", "--seed", "abc", "1.5", "-1", str(2**40)),
    *options("train", "n_features", "--n-features", "abc", "0", "-1", data="svm"),
    *options("train", "class_weight", "--class-weight", "x"),
    *options("train", "class_weight", "--class-weight", "1:-5", "1:nan", shown="1:"),
    # The options of --model-type budgeted and onepass (given to the default, svm: refused too).
    *options("train", "budget", "--budget", "abc", "0", "-1", "1"),
    *options("train", "gamma", "--gamma", "abc", "x"),
    *options("train", "lookahead", "--lookahead", "abc", "0", "1.5", "5"),
    *options(
        "train", "checkpoint_dir", "--checkpoint-dir", Place("file"), Place("under a file"), Place("refusing")
    ),
    *options("predict", "model", "model", "missing.model", Place("directory"), "<csv>", "<fifo>"),
    *options("predict", "paths", "paths", "missing.csv", "<fifo>", named=None),
    *options("predict", "format", "--format", "x"),
    *options("predict", "scheduler", "--scheduler", "notanaddress", named="scheduler"),
    *output("predict", "out", "--out"),
    *options("predict", "out", "--out", "out.txt", "<csv>"),
    *options("evaluate", "model", "model", "missing.model", Place("directory"), "<csv>", "<fifo>"),
    *options("evaluate", "paths", "paths", "missing.csv", "<fifo>", named=None),
    *options("evaluate", "label", "--label", "nosuch", schema=True),
    *options("evaluate", "format", "--format", "x"),
    *options("evaluate", "scheduler", "--scheduler", "notanaddress", named="scheduler"),
]

# Options that take a value none of which is bad (flags take none and need no entry).
NO_BAD_VALUE = {
    ("predict", "label"): "a label column to leave out if the input has it: any name will do",
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A CSV table (label ``y``), the same rows as LIBSVM, and a model trained on the table."""
    from sklearn.datasets import dump_svmlight_file

    from ._helpers import run

    root = tmp_path_factory.mktemp("cli")
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    y = (X[:, 0] > 0).astype(np.int64)
    csv = root / "train.csv"
    csv.write_text("a,b,c,y\n" + "".join(f"{a},{b},{c},{t}\n" for (a, b, c), t in zip(X, y, strict=True)))
    svm = root / "train.svm"
    dump_svmlight_file(X, y, str(svm))
    model = root / "trained.model"
    code, out, err = run(["train", csv, "--label", "y", "--model", model, "--quiet"])
    assert code == 0, err
    other = root / "other.csv"
    other.write_text(csv.read_text())
    return {"csv": str(csv), "svm": str(svm), "model": str(model), "other csv": str(other)}


def _argv(row, inputs, places, tmp_path):
    """The command line of ``row`` and the value as given."""
    data = inputs[row.data]
    value = row.value
    if value == "<fifo>":
        value = str(tmp_path / "fifo.csv")
        os.mkfifo(value)
    elif value == "<csv>":  # a table where a model file is wanted, or the input as the output
        value = inputs["csv"] if row.dest == "out" else inputs["other csv"]
    elif isinstance(value, Place):
        value = _resolved(value, places)
        if row.dest in ("model", "out") and row.option.startswith("--") and row.value.kind != "directory":
            value = os.path.join(value, "out.csv" if row.dest == "out" else "out.model")  # a file in it
    elif row.dest in ("paths", "model", "out") and not value.startswith("-"):
        value = str(tmp_path / value)
    label = ["--label", "y"] if row.data == "csv" else []
    model, paths = inputs["model"], [data]
    if row.option == "model":
        model = value
    if row.option == "paths":
        paths = [value]
    new_model, new_out = str(tmp_path / "new.model"), str(tmp_path / "predictions.csv")
    base = {
        "train": ["train", *paths, *label, "--model", new_model, "--quiet"],
        "predict": ["predict", model, *paths, "--out", new_out],
        "evaluate": ["evaluate", model, *paths, *label],
    }[row.command]
    extra = [row.option, value] if row.option.startswith("--") else []
    return [*base, *extra], value


@pytest.fixture
def cli_places(places, tmp_path):
    """:func:`places`, and a directory (where a file is wanted); after the test, a default Dask
    client a command left behind is closed (:func:`_left_client`), so that no later compute of
    this process goes to it."""
    directory = tmp_path / "a-directory"
    directory.mkdir()
    yield {**places, "directory": directory}
    client = _left_client()
    if client is not None:
        client.close()


def _left_client():
    """The default ``distributed`` client, or None.  A ``Client(address)`` that fails to connect
    stays the default one (until closed or collected): a compute then waits on it for ever."""
    import distributed

    try:
        return distributed.default_client()
    except ValueError:
        return None


def _cli_cases(accepted):
    for row in CLI:
        if row.accepted != accepted:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=row.xfail)] if row.xfail else []
        ident = f"{row.command}-{row.option}={_label(row.value)}"
        yield pytest.param(row, marks=marks, id=ident)


@pytest.mark.parametrize("row", list(_cli_cases(accepted=False)))
def test_a_bad_option_is_refused_in_one_line_before_any_read(row, inputs, cli_places, tmp_path):
    from ._helpers import assert_one_line_error, run

    argv, value = _argv(row, inputs, cli_places, tmp_path)
    watched = [inputs["csv"], inputs["svm"], *([value] if "fifo" in str(value) else [])]
    with watching(*watched) as opened:
        code, out, err = run(argv)
    if not row.schema:
        assert opened == [], f"{row.option} {value!r} was refused after the data was opened: {err}"
    named = row.option if row.named == "option" else row.named
    assert_one_line_error(code, out, err)
    shown = [row.shown] if row.shown is not None else [str(value), repr(str(value))]
    assert_says(err, named, shown)


@pytest.mark.parametrize("row", list(_cli_cases(accepted=True)))
def test_a_huge_option_a_fit_can_use_is_accepted(row, inputs, cli_places, tmp_path):
    from ._helpers import run

    argv, _ = _argv(row, inputs, cli_places, tmp_path)
    with watching(inputs["csv"]) as opened:
        code, out, err = run(argv)
    assert code == 0, err
    assert opened


def _command_parsers():
    from dask_streamsvm.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: commands.choices[name] for name in ("train", "predict", "evaluate")}


@pytest.mark.parametrize("command", ["train", "predict", "evaluate"])
def test_every_option_has_rows(command):
    parser = _command_parsers()[command]
    takes_values = {a.dest for a in parser._actions if a.nargs != 0}  # flags (and --help) take none
    rows = {row.dest for row in CLI if row.command == command}
    rows |= {dest for (c, dest) in NO_BAD_VALUE if c == command}
    assert takes_values - rows == set(), f"options of {command} without a row: {takes_values - rows}"
    assert rows - takes_values == set(), f"rows of {command} for no option: {rows - takes_values}"


def test_validate_params_names_the_parameter_on_its_error():
    """The error of a declared check carries the parameter it checked (the command line names the
    option that set it from there)."""
    from dask_streamsvm._validation import validate_params

    with pytest.raises(ValueError) as caught:
        validate_params(LinearSVC(tol=-1.0))
    assert caught.value.parameter == "tol"


def test_the_new_checks_refuse_what_their_parameters_cannot_take():
    """The checks of booleans, verbosity, random states, pairs and the intercept's scaling refuse
    and accept as the rows say, each naming its parameter and value."""
    from dask_streamsvm import _validation as checks

    cases = [
        (checks.boolean, "shuffle", ["no", 2, None], [True, np.False_]),
        (checks.verbosity, "verbose", [-1, "a", 1.5, None], [0, 3, True]),
        (
            checks.random_state,
            "random_state",
            [-1, 2**33, "a", 1.5],
            [None, 0, 2**32 - 1, np.random.RandomState(0)],
        ),
        (checks.pair, "validation_data", ["abc", (1,), 1], [None, (1, 2), [1, 2]]),
        (checks.intercept_scaling, "intercept_scaling", [-1, 0, SUBNORMAL, 1e200, NAN], [1e-300, 1.0, 1e150]),
    ]
    for check, name, refused, accepted in cases:
        for value in refused:
            with pytest.raises((ValueError, TypeError)) as caught:
                check(name, value)
            assert_says(str(caught.value), name, _shown(value, None))
        for value in accepted:
            assert check(name, value) is not None or value is None
    state = np.random.RandomState(0)
    expected = np.random.RandomState(0).randint(1000)
    assert checks.random_state("random_state", state) is state
    assert state.randint(1000) == expected  # checked, not drawn from


@pytest.mark.parametrize("command", ["train", "predict", "evaluate"])
def test_a_refused_scheduler_address_leaves_no_default_client(command, inputs, cli_places, tmp_path):
    """``--scheduler`` with a malformed address is refused, and leaves no client behind: ``main``
    runs in-process (the tests, a program calling it), where a failed ``Client(address)`` left as
    the default one would take every later compute and never answer."""
    row = Option(command, "scheduler", "--scheduler", "notanaddress")
    argv, _ = _argv(row, inputs, cli_places, tmp_path)
    from ._helpers import run

    code, out, err = run(argv)
    assert code == 2, err
    assert _left_client() is None, "the failed Client('notanaddress') is the default client"

"""The ``dask-streamsvm`` command: train, predict, evaluate and inspect models from the shell.

::

    dask-streamsvm train data/*.parquet --label income --model adult.model --cache 2GB
    dask-streamsvm train train.svm.bz2 --model a9a.model --passes 20 --tol 1e-4
    dask-streamsvm train train.svm.bz2 --model a9a-logistic.model --model-type logistic
    dask-streamsvm train train.svm.bz2 --model a9a-rbf.model --model-type budgeted --budget 200
    dask-streamsvm train train.svm.bz2 --model a9a-l1.model --penalty l1 --C 0.1
    dask-streamsvm train train.svm.bz2 --model a9a-net.model --model-type logistic --l1-ratio 0.5
    dask-streamsvm train digits/ --label digit --model digits.model --model-type logistic --multi-class ovr
    dask-streamsvm train data/ --label income --model adult.model --scheduler tcp://host:8786
    dask-streamsvm predict adult.model new/*.parquet --out predictions.parquet
    dask-streamsvm predict a9a-logistic.model test.svm.bz2 --out predictions.csv --proba
    dask-streamsvm evaluate adult.model test/*.parquet --label income --json
    dask-streamsvm info adult.model
    dask-streamsvm demo --plot demo_convergence.png
    dask-streamsvm compile --jobs 4

Input paths are Parquet files or directories, CSV files or LIBSVM text
files (compressed or not), or globs of them; several paths of one format
make one collection, read lazily by Dask.  ``--scheduler ADDRESS`` runs the
work on a ``distributed`` cluster: ``train`` then trains there
(``--cluster``, ``auto`` by default), the other commands read there.

Output paths are checked before any data is read, and no command writes
over one of its inputs, even with ``--overwrite``.

Exit status: 0 on success, 2 for a usage error or an error in the input
(printed as one line, ``dask-streamsvm: error: ...``; add ``--traceback``
for the full trace), 130 when interrupted.

The parser and :func:`main` are here; the commands are in
:mod:`.commands` (``info`` in :mod:`.info`, ``compile`` in
:mod:`.precompile`), the paths they read and write in :mod:`.paths`, and what
they print in :mod:`.text`.  Each command's handler is looked up here
(``cmd_train``, ...) when the parser is built.
"""

import argparse
import sys

from .commands import (
    LINEAR_OPTIONS,
    MODEL_TYPES,
    cmd_demo,
    cmd_evaluate,
    cmd_predict,
    cmd_train,
    evaluation,
)
from .commands import verbosity as _verbosity  # noqa: F401 - the name the tests read
from .info import cmd_info
from .paths import Data
from .precompile import cmd_compile
from .text import PROG, USER_ERRORS, UserError, error_message, printable

__all__ = [
    "PROG", "Data", "UserError", "build_parser", "cmd_compile", "cmd_demo", "cmd_evaluate", "cmd_info",
    "cmd_predict", "cmd_train", "evaluation", "main",
]  # fmt: skip


# engine.problem.SOLVERS, written out: importing engine.problem imports scikit-learn and numba, which
# --help does without (tests/test_front_door.py checks that the two agree).
SOLVERS = ("auto", "memory", "streamsvm", "sbm", "bm", "band")


class _Losses:
    """Text made from the engine's registry of losses (:mod:`~dask_streamsvm.engine.plan.losses`, the one
    place that names them), read when the help that shows it is printed: the registry imports numba,
    which ``dask-streamsvm --help`` and ``info`` do without."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        from ..engine.plan import losses

        return self.text(losses)


class _StoreWithLosses(argparse.Action):
    """argparse's ``store``, whose help may show the losses: ``%(svm_losses)s``, ``%(newton_losses)s``
    (the SVM's that have Newton steps), ``%(default_loss)s`` and ``%(logistic_loss)s``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.svm_losses = _Losses(lambda losses: " or ".join(losses.SVM_LOSSES))
        self.newton_losses = _Losses(
            lambda losses: " or ".join(name for name in losses.SVM_LOSSES if losses.loss_of(name).newton)
        )
        self.default_loss = _Losses(lambda losses: losses.DEFAULT.name)
        self.logistic_loss = _Losses(lambda losses: losses.LOGISTIC.name)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised so that ``main`` prints them as one line."""

    def error(self, message):
        raise UserError(f"{message} (see '{self.prog} --help')")


# -- parser ------------------------------------------------------------------------------


def _add_feature_map_options(parser):
    """Options of the feature map applied to the rows before the linear model.

    ``--scale``: :class:`~dask_streamsvm.features.Standardize`.  ``train``
    turns them into the model's keyword arguments (:mod:`.commands`) and
    the saved model carries the map (a standardized model's coefficients
    are the raw features'), so ``predict`` and ``evaluate`` need no options
    of their own.
    """
    parser.add_argument(
        "--scale", action="store_true",
        help="standardize each feature while training (one more read for the scales): for features "
        "far from unit scale, such as raw pixel values or counts",
    )  # fmt: skip


def _add_input_options(parser, label_help):
    """The input paths and how to read them: the options of every command that reads data."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="Parquet, CSV or LIBSVM files, or globs")
    parser.add_argument("--label", metavar="COL", help=label_help)
    parser.add_argument(
        "--format",
        choices=("auto", "parquet", "csv", "libsvm"),
        default="auto",
        help="input format (default: from the file names; directories are Parquet)",
    )
    parser.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM: feature indices count from 0, as scikit-learn's dump_svmlight_file writes them",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="run on the distributed scheduler at ADDRESS (tcp://host:8786)"
    )


def _positive_int(text):
    """argparse type: an integer >= 1 (the parser's one-line error names the option and the value)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _gamma(text):
    """argparse type of ``--gamma``: "scale" or a number (checked > 0 with the model's parameters)."""
    if text == "scale":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0 or 'scale', got {text!r}") from None


def _unit_interval(text):
    """argparse type of ``--l1-ratio``: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0.0 <= value <= 1.0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}")
    return value


def _svm_loss(text):
    """argparse type of ``--loss``: a loss of the SVM (the logistic loss is ``--model-type logistic``)."""
    from ..engine.plan import losses

    if text in losses.SVM_LOSSES:
        return text
    if text == losses.LOGISTIC.name:
        raise argparse.ArgumentTypeError(
            f"{text!r} is the loss of logistic regression, which has no --loss: use "
            "--model-type logistic and drop --loss"
        )
    choices = ", ".join(repr(name) for name in losses.SVM_LOSSES)
    raise argparse.ArgumentTypeError(f"must be one of {choices} (the SVM's losses), got {text!r}")


def build_parser():
    """The ``dask-streamsvm`` argument parser; each command's ``handler`` is its ``cmd_NAME`` here."""
    traceback = argparse.ArgumentParser(add_help=False)
    traceback.add_argument(
        "--traceback", action="store_true", default=argparse.SUPPRESS, help="show the full trace on errors"
    )
    parser = _Parser(
        prog=PROG,
        description="Linear SVMs and logistic regression on data larger than memory, with Dask, and a "
        "certificate of optimality.",
        epilog="Run 'dask-streamsvm COMMAND --help' for a command's options.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--traceback", action="store_true", default=False, help="show the full trace on errors"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    train = commands.add_parser(
        "train",
        parents=[traceback],
        help="fit a model (LinearSVC by default) and save it",
        description="Fit a LinearSVC (--model-type svm, the default), a LogisticRegression "
        "(--model-type logistic), a OnePassSVC (--model-type onepass) or a BudgetedSVC (--model-type "
        "budgeted) and save it. The options of the linear models (--loss, --tol, --solver, ...) are "
        "refused for the other two.",
    )
    _add_input_options(
        train, "label column of Parquet/CSV input (required there; LIBSVM lines carry their label)"
    )
    train.add_argument("--model", required=True, metavar="OUT", help="model file to write")
    train.add_argument(
        "--overwrite", action="store_true", help="replace OUT if it exists (never an input of the command)"
    )
    train.add_argument(
        "--model-type",
        choices=tuple(MODEL_TYPES),
        default="svm",
        help="svm (the default): a LinearSVC; logistic: a LogisticRegression (the logistic loss, and "
        "predict --proba gives its own probabilities); onepass: a OnePassSVC (one read of the data, "
        "--lookahead); budgeted: a BudgetedSVC, a Gaussian-kernel SVM on a budget of support vectors "
        "(--budget, --gamma, --passes epochs)",
    )
    loss = train.add_argument(
        "--loss",
        type=_svm_loss,
        default=None,
        action=_StoreWithLosses,
        metavar="LOSS",
        help="the SVM's loss: %(svm_losses)s (default: LinearSVC's, %(default_loss)s); --model-type "
        "logistic has its own, %(logistic_loss)s",
    )
    # Set once argparse has checked the metavar (it formats it when the argument is added): read
    # when a usage or help is printed, as {name,name}.
    loss.metavar = _Losses(lambda losses: "{" + ",".join(losses.SVM_LOSSES) + "}")
    train.add_argument(
        "--penalty",
        action=_StoreWithLosses,
        choices=("l2", "l1"),
        default=None,
        help="--model-type svm: l2 (the default) or l1, LIBLINEAR's -s 5 (a sparse model; --loss "
        "%(newton_losses)s): the file streams through the primal Newton reads (--solver memory: loaded, "
        "then trained in memory)",
    )
    train.add_argument(
        "--l1-ratio",
        type=_unit_interval,
        default=None,
        metavar="R",
        help="--model-type logistic: the L1 share of the elastic-net penalty, 0 (the default: L2) to 1 "
        "(L1, LIBLINEAR's -s 6); above 0 the file streams through the primal Newton reads (--solver "
        "memory: loaded, then trained in memory)",
    )
    train.add_argument(
        "--multi-class",
        choices=("auto", "ovr", "multinomial"),
        default=None,
        help="--model-type logistic, three classes or more: multinomial (the softmax model, "
        "scikit-learn's LogisticRegression()), ovr (a binary problem per class, LIBLINEAR's -s 0), or "
        "auto (the default: multinomial where it trains, else ovr)",
    )
    train.add_argument("--C", type=float, default=1.0, help="cost of a unit of loss (default: 1.0)")
    train.add_argument(
        "--cache",
        default=LINEAR_OPTIONS["cache"][1],
        metavar="BYTES",
        help="row cache budget when streaming: bytes, or a share of the rows such as 10%% (default: 1GB)",
    )
    train.add_argument(
        "--passes",
        type=int,
        default=None,
        metavar="N",
        help="most passes over the data (default: 1000); --model-type budgeted: its epochs (default: 20)",
    )
    train.add_argument(
        "--tol",
        type=float,
        default=LINEAR_OPTIONS["tol"][1],
        help="relative duality gap to reach (default: 1e-3)",
    )
    train.add_argument(
        "--solver",
        choices=SOLVERS,
        default=LINEAR_OPTIONS["solver"][1],
        help="streamsvm, sbm or bm stream files through the cache, band (auto where it applies) keeps "
        "the rows near the margin from a sample's solution; memory loads them (--penalty l1 and "
        "--l1-ratio above 0 stream through the primal Newton reads, or train in memory)",
    )
    train.add_argument(
        "--dual",
        action=_StoreWithLosses,
        choices=("auto", "true", "false"),
        default=LINEAR_OPTIONS["dual"][1],
        help="true: the dual solvers (--solver); false: primal Newton steps (--loss %(newton_losses)s or "
        "--model-type logistic), on the cluster with --scheduler, for tall data or features far from "
        "unit scale; auto (default): the primal where the rows far outnumber the features",
    )
    train.add_argument(
        "--cluster",
        choices=("auto", "average", "cocoa", "sbm"),
        default=None,
        help="how --scheduler's workers train: auto (the default) picks the method that reaches --tol "
        "for the data's width and loss (Newton, truncated Newton or CoCoA+); average: a model per "
        "worker, averaged (one shot); cocoa: CoCoA+ rounds; sbm: SBM's passes on one worker, the "
        "partitions read on theirs (--solver memory and --checkpoint-dir train in this process)",
    )
    train.add_argument(
        "--probability",
        action="store_true",
        help="--model-type svm: fit Platt's sigmoids too (probability=True), so that predict --proba "
        "gives probabilities (a LogisticRegression has its own)",
    )
    train.add_argument(
        "--budget",
        type=_positive_int,
        default=None,
        metavar="N",
        help="--model-type budgeted: most support vectors per one-vs-rest problem (default: 500)",
    )
    train.add_argument(
        "--gamma",
        type=_gamma,
        default=None,
        metavar="G",
        help="--model-type budgeted: the Gaussian kernel's exp(-G ||x - x'||^2), a number or 'scale' "
        "(the default: 1 / (n_features * X.var()), one more read of the data)",
    )
    train.add_argument(
        "--lookahead",
        type=_positive_int,
        default=None,
        metavar="L",
        help="--model-type onepass: rows outside the ball buffered before it is updated (default: 10)",
    )
    train.add_argument("--no-intercept", action="store_true", help="fit no intercept")
    train.add_argument("--seed", type=int, default=None, metavar="N", help="random seed of the row order")
    train.add_argument(
        "--n-features",
        type=_positive_int,
        default=None,
        metavar="N",
        help="LIBSVM: number of features (default: read)",
    )
    train.add_argument(
        "--verbose",
        action="store_true",
        help="show a progress bar per pass (the default on a terminal); --model-type budgeted: a line "
        "per epoch",
    )
    train.add_argument("--quiet", action="store_true", help="no progress bar, even on a terminal")
    train.add_argument(
        "--class-weight",
        metavar="W",
        default=None,
        help="'balanced', or LABEL:WEIGHT pairs such as '1:5,-1:1' (default: every class 1)",
    )
    train.add_argument(
        "--skip-invalid",
        action="store_true",
        help="drop rows with NaN or infinite values or missing labels, and count them (default: stop)",
    )
    train.add_argument(
        "--checkpoint-dir", metavar="DIR", default=None, help="streaming: write a checkpoint after every pass"
    )
    train.add_argument(
        "--resume", action="store_true", help="go on from the checkpoint in --checkpoint-dir, if there is one"
    )
    _add_feature_map_options(train)
    train.set_defaults(handler=cmd_train)

    predict = commands.add_parser(
        "predict",
        parents=[traceback],
        help="write predictions of a saved model",
        description="Predict with a saved model; writes 'prediction' and 'decision' column(s), and "
        "with --proba a 'proba_CLASS' column per class.",
    )
    predict.add_argument("model", metavar="MODEL", help="model file")
    _add_input_options(predict, "label column to leave out, if the input has it")
    predict.add_argument(
        "--out", required=True, metavar="OUT", help="OUT.parquet (a directory of parts) or OUT.csv (one file)"
    )
    predict.add_argument(
        "--overwrite", action="store_true", help="replace OUT if it exists (never an input of the command)"
    )
    predict.add_argument(
        "--proba",
        action="store_true",
        help="also write each class's probability: a LogisticRegression's own; a LinearSVC's Platt "
        "probabilities, for a model fitted with probability=True",
    )
    predict.set_defaults(handler=cmd_predict)

    evaluate = commands.add_parser(
        "evaluate",
        parents=[traceback],
        help="accuracy and ROC AUC of a saved model",
        description="Accuracy, ROC AUC and the training certificate of a saved model on labelled data.",
    )
    evaluate.add_argument("model", metavar="MODEL", help="model file")
    _add_input_options(evaluate, "label column of Parquet/CSV input")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.set_defaults(handler=cmd_evaluate)

    info = commands.add_parser(
        "info", parents=[traceback], help="describe a saved model", description="Describe a saved model."
    )
    info.add_argument("model", metavar="MODEL", help="model file")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(handler=cmd_info)

    demo = commands.add_parser(
        "demo",
        parents=[traceback],
        help="a9a streamed out of core next to LIBLINEAR",
        description="Train on UCI Adult (a9a) streamed through a small cache, in memory, and with LIBLINEAR.",
    )
    demo.add_argument("--plot", metavar="PNG", help="write the convergence plot here (needs matplotlib)")
    demo.add_argument(
        "--cache-fraction",
        type=float,
        default=0.1,
        metavar="F",
        help="row cache as a fraction of the data's bytes (default: 0.1)",
    )
    demo.add_argument("--quick", action="store_true", help="a looser tolerance, for a run of a few seconds")
    demo.set_defaults(handler=cmd_demo)

    compile_ = commands.add_parser(
        "compile",
        parents=[traceback],
        help="compile the kernels ahead, into numba's cache",
        description="Compile the numba kernels of every estimator and path into numba's cache, by small "
        "fits in child processes, so that later processes load them instead of compiling (for an "
        "install, a container image or a cluster's machines: docs/guide/compile.md). The cache is "
        "NUMBA_CACHE_DIR when set, else beside the package's source when writable, else the user's.",
    )
    compile_.add_argument(
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="child processes at once (default: the cores this process may use)",
    )
    compile_.add_argument("--json", action="store_true", help="print one JSON object")
    compile_.set_defaults(handler=cmd_compile)
    return parser


# -- entry point -------------------------------------------------------------------------


def main(argv=None):
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    traceback = "--traceback" in (sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit_:  # --help and --version
            return exit_.code if isinstance(exit_.code, int) else 0
        traceback = args.traceback
        return args.handler(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except (UserError, *USER_ERRORS) as exc:
        if traceback:
            raise
        print(f"{PROG}: error: {printable(error_message(exc))}", file=sys.stderr)
        return 2

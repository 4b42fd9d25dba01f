"""The commands: ``train``, ``predict``, ``evaluate``, ``info`` and ``demo``, each ``cmd_NAME(args)``
returning the exit status.

They import the estimators, Dask and scikit-learn when they run, so that
``--help`` and a usage error import none of them.
"""

import contextlib
import json
import os
import sys
import time
import warnings

import numpy as np

from .paths import (
    TABLE_SUFFIXES,
    check_checkpoint_dir,
    check_output,
    expand_paths,
    load_model,
    open_data,
    read_model_file,
)
from .text import PROG, UserError, in_option_words, numbers_text, one_line, printable


@contextlib.contextmanager
def _scheduler(address):
    """Run the block inside ``distributed.Client(address)``, or on the local scheduler.

    The block is the command's every read of its input, in this thread: the warnings pandas raises
    about Dask's own Parquet code (its ``inplace=True``, deprecated by pandas 3.1, once per partition
    read) are hidden in it (:func:`~dask_streamsvm.io.dask_parquet_deprecations_hidden`).
    """
    from ..io import dask_parquet_deprecations_hidden

    with dask_parquet_deprecations_hidden():
        if address is None:
            yield None
        else:
            with _client(address) as client:
                yield client


@contextlib.contextmanager
def _client(address):
    """``distributed.Client(address)``, its failure to connect a one-line error."""
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - distributed is a dependency
        raise UserError(f"--scheduler needs the 'distributed' package ({exc})") from None
    try:
        client = Client(address)
    except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address at all
        import distributed

        with contextlib.suppress(ValueError):  # a Client that failed can stay the default: every
            distributed.default_client().close()  # later compute in this process would wait on it
        raise UserError(
            f"cannot connect to the scheduler at --scheduler {address!r}: {exc}; give the address of a "
            "running scheduler, such as tcp://host:8786"
        ) from None
    with client:
        yield client


# ``train --model-type``: the estimator of each type, by its name in :mod:`dask_streamsvm` (imported
# when ``train`` runs).  ``svm`` is the default; the last two are the kernel and one-pass models.
MODEL_TYPES = {"svm": "LinearSVC", "logistic": "LogisticRegression", "onepass": "OnePassSVC",
               "budgeted": "BudgetedSVC"}  # fmt: skip
LINEAR_TYPES = ("svm", "logistic")

# ``train``'s options that set the linear models only, and their defaults (the parser's): given to
# another --model-type, a one-line error.
LINEAR_OPTIONS = {
    "loss": ("--loss", None), "probability": ("--probability", False), "tol": ("--tol", 1e-3),
    "solver": ("--solver", "auto"), "dual": ("--dual", "auto"), "cluster": ("--cluster", None),
    "cache": ("--cache", "1GB"), "class_weight": ("--class-weight", None),
    "skip_invalid": ("--skip-invalid", False), "checkpoint_dir": ("--checkpoint-dir", None),
    "resume": ("--resume", False), "scale": ("--scale", False),
}  # fmt: skip
# ``train``'s options that set some model types only (their default: None or False), and those types.
OWN_OPTIONS = {
    "budget": ("--budget", ("budgeted",)), "gamma": ("--gamma", ("budgeted",)),
    "lookahead": ("--lookahead", ("onepass",)), "passes": ("--passes", ("svm", "logistic", "budgeted")),
    "verbose": ("--verbose", ("svm", "logistic", "budgeted")), "penalty": ("--penalty", ("svm",)),
    "l1_ratio": ("--l1-ratio", ("logistic",)), "multi_class": ("--multi-class", ("logistic",)),
}  # fmt: skip

# The option of each model parameter the train command sets (the rest keep their names).
_OPTIONS = {
    "max_iter": "--passes", "cache_bytes": "--cache", "random_state": "--seed",
    "fit_intercept": "--no-intercept", "l1_ratio": "--l1-ratio", "multi_class": "--multi-class",
}  # fmt: skip
# The passes of a linear model without --passes (a kernel model's default is its own).
DEFAULT_PASSES = 1000


def _checked_model(model):
    """``model``'s parameters checked as ``fit`` checks them, before any data is opened; a bad one is a
    one-line error naming the option that set it."""
    from .._validation import checked_params

    try:
        checked_params(model)
    except (TypeError, ValueError) as exc:
        name = getattr(exc, "parameter", None)
        option = _OPTIONS.get(name, "--" + name.replace("_", "-")) if name else "an option"
        raise UserError(f"{option}: {exc}") from None


_DUAL = {"auto": "auto", "true": True, "false": False}


def _estimator(args):
    """The estimator class ``--model-type`` names, and the keyword arguments of its own options:
    ``--loss`` for the SVM (``LinearSVC``'s default without it); none for logistic regression,
    whose loss is its own (``--loss`` with it: :func:`_check_train_options`)."""
    import dask_streamsvm

    estimator = getattr(dask_streamsvm, MODEL_TYPES[args.model_type])
    if args.model_type == "budgeted":
        own = {"budget": args.budget, "gamma": args.gamma, "max_iter": args.passes}
        return estimator, {**{k: v for k, v in own.items() if v is not None}, "verbose": verbosity(args)}
    if args.model_type == "onepass":
        return estimator, {} if args.lookahead is None else {"lookahead": args.lookahead}
    if args.model_type == "logistic":
        own = {"l1_ratio": args.l1_ratio, "multi_class": args.multi_class}
        return estimator, {k: v for k, v in own.items() if v is not None}
    own = {} if args.loss is None else {"loss": args.loss}  # else LinearSVC's default
    if args.penalty is not None:
        own["penalty"] = args.penalty
    return estimator, {**own, "probability": True} if args.probability else own


def _given(flag, value):
    """An option as given on the command line: a flag alone, or with its value."""
    return flag if value is True else f"{flag} {value}"


def _check_model_type_options(args):
    """Refuse an option that sets no parameter of the ``--model-type`` trained: one line naming it."""
    kind, name = args.model_type, MODEL_TYPES[args.model_type]
    if kind not in LINEAR_TYPES:
        for dest, (flag, default) in LINEAR_OPTIONS.items():
            value = getattr(args, dest)
            if value != default:
                raise UserError(
                    f"{_given(flag, value)} sets an option of the linear models (--model-type svm or "
                    f"logistic); --model-type {kind} trains a {name}, which has none: omit {flag}"
                )
    for dest, (flag, kinds) in OWN_OPTIONS.items():
        value = getattr(args, dest)
        if value is not None and value is not False and kind not in kinds:  # --l1-ratio 0 is given
            types = " or ".join(kinds)
            raise UserError(
                f"{_given(flag, value)} sets an option of --model-type {types}, not of --model-type "
                f"{kind} (a {name}): omit {flag}, or give --model-type {kinds[0]}"
            )


def _check_train_options(args):
    """Refuse the combinations of ``train``'s options that no fit takes, before anything heavy is
    imported or any data opened: one line, in the options' words (an L1 part in the penalty's:
    :func:`_check_sparse_penalty`)."""
    _check_penalty_of_the_other_model(args)
    _check_model_type_options(args)
    _check_sparse_penalty(args)
    if args.model_type == "logistic" and args.loss is not None:
        from ..engine.plan import losses  # read already by --loss's check

        raise UserError(
            f"--loss {args.loss} is a loss of the SVM, but --model-type logistic trains a "
            f"LogisticRegression, which has its own loss ({losses.LOGISTIC.name}): drop --loss, or "
            f"give --model-type svm to train a LinearSVC with --loss {args.loss}"
        )
    if args.model_type == "logistic" and args.probability:
        raise UserError(
            "--probability fits Platt's sigmoids to a LinearSVC; --model-type logistic trains a "
            "LogisticRegression, whose probabilities are its own (predict --proba): drop --probability"
        )
    if args.resume and args.checkpoint_dir is None:
        raise UserError("--resume continues from a checkpoint: give --checkpoint-dir DIR too")


def _check_penalty_of_the_other_model(args):
    """``--penalty`` given to logistic regression, or ``--l1-ratio`` to the SVM: one line pointing to
    the option of the model trained."""
    if args.model_type == "logistic" and args.penalty is not None:
        ratio = 1 if args.penalty == "l1" else 0
        raise UserError(
            f"--penalty {args.penalty} sets the penalty of --model-type svm (a LinearSVC); --model-type "
            "logistic trains a LogisticRegression, whose penalty is --l1-ratio (0: L2, 1: L1, between: "
            f"the elastic net): give --l1-ratio {ratio} instead of --penalty"
        )
    if args.model_type == "svm" and args.l1_ratio is not None:
        raise UserError(
            f"--l1-ratio {args.l1_ratio:g} sets the elastic net of --model-type logistic (a "
            "LogisticRegression); --model-type svm trains a LinearSVC, whose penalty is --penalty l2 or "
            "l1: give --penalty l1 instead of --l1-ratio, or --model-type logistic"
        )


def sparse_penalty(args):
    """The option that gives the model to train an L1 part in its penalty (``--penalty l1``,
    ``--l1-ratio R`` above 0), as given; None for the L2 penalty."""
    if args.model_type == "svm" and args.penalty == "l1":
        return "--penalty l1"
    if args.model_type == "logistic" and args.l1_ratio:
        return f"--l1-ratio {args.l1_ratio:g}"
    return None


def _check_sparse_penalty(args):
    """What an L1 part in the penalty cannot train, refused in one line before anything is read:
    ``--loss hinge``, ``--dual true``, and the streaming dual solvers, ``--cluster average`` or
    ``cocoa`` and ``--checkpoint-dir`` (files stream through the primal Newton reads, and train on a
    cluster's workers by the same reads; ``--solver memory`` loads them)."""
    given = sparse_penalty(args)
    if given is None:
        return
    if args.loss is not None:
        from ..engine.plan import losses  # read already by --loss's check

        if not losses.loss_of(args.loss).newton:
            newton = " or ".join(name for name in losses.SVM_LOSSES if losses.loss_of(name).newton)
            raise UserError(
                f"{given} trains --loss {newton} (LIBLINEAR's -s 5), not --loss {args.loss}: its "
                f"coordinate descent needs the loss's second derivative; give --loss {newton} or drop "
                f"--loss, or --penalty l2 for --loss {args.loss}"
            )
    if args.dual == "true":
        raise UserError(
            f"--dual true (the dual solvers) trains the L2 penalty only, and {given} is not: drop --dual "
            "(or give --dual false), or train the L2 penalty"
        )
    newton_only = (
        f"{given} streams files through the primal Newton reads only (the dual solvers, averaging and "
        "CoCoA+ train the L2 penalty)"
    )
    if args.solver not in ("auto", "memory"):
        raise UserError(
            f"--solver {args.solver} is a dual solver, but {newton_only}: drop --solver, or give "
            "--solver memory to load the rows"
        )
    if args.cluster not in (None, "auto"):
        raise UserError(
            f"--cluster {args.cluster} trains the L2 penalty only, and {newton_only}: drop --cluster"
        )
    if args.checkpoint_dir is not None:
        raise UserError(
            f"--checkpoint-dir checkpoints the dual solvers' streamed fits, and {newton_only}: drop "
            "--checkpoint-dir"
        )


def _where(args):
    """The model's ``dual`` and ``cluster`` from ``--dual``, ``--cluster`` and ``--scheduler``.

    With ``--scheduler`` the fit trains on the cluster (``--cluster``, ``"auto"`` by default: the
    estimator picks Newton, truncated Newton or CoCoA+), except ``--solver memory`` and
    ``--checkpoint-dir``, which train in this process (the partitions read on the cluster).
    Without it, the fit is in this process and ``--cluster`` is an error.
    """
    if args.cluster is not None:
        if args.scheduler is None:
            raise UserError(f"--cluster {args.cluster} trains on a Dask cluster: give --scheduler ADDRESS")
        if args.solver == "memory":
            raise UserError(
                f"--cluster {args.cluster} trains on the cluster's workers and --solver memory in this "
                "process: drop one of them"
            )
        if args.checkpoint_dir is not None:
            raise UserError(
                f"--checkpoint-dir checkpoints a fit streamed in this process, not --cluster "
                f"{args.cluster}: drop one of them"
            )
    if args.dual == "false" and args.loss is not None:  # an SVM's loss (the logistic loss has Newton steps)
        from ..engine.plan import losses  # read already by --loss's check

        if not losses.loss_of(args.loss).newton:
            newton = " or ".join(name for name in losses.SVM_LOSSES if losses.loss_of(name).newton)
            raise UserError(
                f"--dual false (primal Newton steps) trains --loss {newton}, not --loss {args.loss}: "
                f"give --loss {newton}, or --dual auto for the dual solvers"
            )
    in_process = args.scheduler is None or args.solver == "memory" or args.checkpoint_dir is not None
    return {"dual": _DUAL[args.dual], "cluster": None if in_process else (args.cluster or "auto")}


def _feature_map_params(args):
    """The model's keyword arguments of the feature-map options."""
    if getattr(args, "scale", False):
        from ..features import Standardize

        return {"feature_map": Standardize()}
    return {}


def _fit_with_warnings(model, *fit_args, **fit_kwargs):
    """``model.fit`` with warnings printed as one line each (the model is kept), their advice and the
    progress's notes naming the command's options (:func:`in_option_words`)."""
    from sklearn.exceptions import ConvergenceWarning

    from .._progress import advice_words

    token = advice_words.set(in_option_words)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(*fit_args, **fit_kwargs)
    finally:
        advice_words.reset(token)
    for w in caught:
        print(f"{PROG}: warning: {printable(one_line(in_option_words(str(w.message))))}", file=sys.stderr)


def rows_streamed(history):
    """Rows of the training data, from a streamed fit's ``history_`` (every read counts them), or None."""
    records = [r for r in history if "rows_read" in r and "pass" in r]
    if not records:
        return None
    first = min(records, key=lambda r: r["pass"])
    return int(first["rows_read"]) // (int(first["pass"]) + 1)


def _in_memory(data):
    """Compute the collections (``--solver memory``): pandas/SciPy ``X`` and NumPy ``y``."""
    import dask

    if data.is_table:
        frame = data.frame.compute()
        return frame.drop(columns=[data.label]), frame[data.label].to_numpy()
    X, y = dask.compute(data.X, data.y)
    return X, y


def cmd_train(args):
    """Fit a ``LinearSVC`` (``--model-type svm``) or a ``LogisticRegression`` (``--model-type
    logistic``) on the input and save it; prints what was trained and its certificate."""
    # The options and paths first, with the standard library alone: a mistake is answered before
    # scikit-learn, numba and Dask are imported (seconds), as a user waits for it.
    _check_train_options(args)
    linear = args.model_type in LINEAR_TYPES
    where = _where(args) if linear else {}
    paths = expand_paths(args.paths)
    if args.checkpoint_dir is None:
        check_output(args.model, "--model", paths, overwrite=args.overwrite, replaced=True)
    else:  # the checkpoint is an input too when resuming
        from ..engine.store.checkpoint import FILE

        checkpoint = os.path.join(args.checkpoint_dir, FILE)
        check_output(args.model, "--model", [*paths, checkpoint], overwrite=args.overwrite, replaced=True)
        check_checkpoint_dir(args.checkpoint_dir, checkpoint, paths)
    estimator, own = _estimator(args)
    common = {"C": args.C, "fit_intercept": not args.no_intercept, "random_state": args.seed}
    if not linear:
        model = estimator(**common, **own)
    else:
        model = estimator(
            **common,
            tol=args.tol,
            max_iter=DEFAULT_PASSES if args.passes is None else args.passes,
            solver=args.solver,
            cache_bytes=args.cache,
            verbose=verbosity(args),
            class_weight=_class_weight(args.class_weight),
            on_invalid="skip" if args.skip_invalid else "raise",
            checkpoint_dir=args.checkpoint_dir,
            **own,
            **where,
            **_feature_map_params(args),
        )
    _checked_model(model)  # before the data is opened: the error names the option
    resume = {"resume": True} if args.resume else {}
    with _scheduler(args.scheduler):
        data = open_data(args, paths, label_needed=True, n_features=args.n_features)
        start = time.perf_counter()
        if args.solver == "memory":
            X, y = _in_memory(data)
            n_rows = X.shape[0]
            _fit_with_warnings(model, X, y)
        elif data.is_table:
            _fit_with_warnings(model, data.frame, data.label, **resume)
        else:
            _fit_with_warnings(model, data.X, data.y, **resume)
        if args.solver != "memory" and linear:
            n_rows = rows_streamed(model.history_)
        seconds = time.perf_counter() - start
    model.save(args.model)
    print(_summary(model, args, n_rows, seconds) if linear else _kernel_summary(model, args, seconds))
    return 0


def _classes_text(model):
    """The classes of a fitted model as ``train`` prints them: the first ten, in order."""
    classes = ", ".join(repr(c) for c in model.classes_.tolist()[:10])
    more = ", ..." if len(model.classes_) > 10 else ""
    return f"{len(model.classes_)} classes ({classes}{more})"


def _kernel_summary(model, args, seconds):
    """The line ``train`` prints for a ``BudgetedSVC`` or a ``OnePassSVC``: what was trained, on how
    many rows, and what its model holds (support vectors and merges; the ball)."""
    name = MODEL_TYPES[args.model_type]
    head = f"Trained {name} (C={args.C:g}"
    if args.model_type == "budgeted":
        stats = model.merge_stats_
        rows = stats["steps"] // max(model.n_iter_, 1)
        vectors = model.n_support_.tolist()
        shown = vectors[0] if len(vectors) == 1 else vectors
        head += f", gamma_={model.gamma_:.4g}, budget={model.budget}) on {rows:,} rows x "
        body = (
            f"{_count(model.n_iter_, 'epoch', 'epochs')}, support vectors {shown} (budget {model.budget} "
            f"per problem), {stats['merges']:,} merges"
        )
    else:
        radius, core = np.atleast_1d(model.radius_).tolist(), np.atleast_1d(model.n_core_vectors_).tolist()
        radius = numbers_text(radius[0] if len(radius) == 1 else radius, ".4g")
        head += f", lookahead={model.lookahead}) on "
        body = f"one pass, ball radius {radius}, core vectors {core[0] if len(core) == 1 else core}"
        if model.majority_fallback_:
            body += ", the constant model of the majority class kept (majority_fallback_)"
    return (
        f"{head}{model.n_features_in_:,} features, {_classes_text(model)}: {body}, {seconds:.2f} s. "
        f"Model saved to {args.model}."
    )


def _summary(model, args, n_rows, seconds):
    """The line ``train`` prints: what was trained, where, on how many rows, and its certificate
    (with what to try when it stopped above ``--tol``)."""
    gap = max(float(np.max(model.duality_gap_)), 0.0)  # rounding can make a gap of 0 negative
    objective = float(np.sum(model.objective_))
    problems = np.size(model.objective_)
    summed = "" if problems == 1 else f" (sum over {problems} one-vs-rest problems)"
    cluster = _cluster_fit(model)
    if cluster is not None:
        n_rows = cluster["rows"]
    rows = "" if n_rows is None else f"{n_rows:,} rows x "
    status = "converged" if gap <= args.tol else f"not converged: {_advice(model, args, cluster)}"
    if cluster is None:
        where = "in memory on " if args.solver == "memory" else "streamed on "
        after = ""
    else:
        workers = cluster["workers"]
        method = "" if cluster["method"] is None else f" (method: {cluster['method']})"
        where, after = "on ", f" on a cluster of {workers} worker{'' if workers == 1 else 's'}{method}"
    rounds = cluster is not None and cluster["method"] == "cocoa"
    # Streamed: reads of the data (passes count from 0, and one read may feed several: a sample's steps).
    reads = reads_made(model.history_, n_rows) if cluster is None and args.solver != "memory" else None
    if reads is not None:
        count = f"{_count(reads, 'read', 'reads')} of the data"
    else:
        one, many = ("round", "rounds") if rounds else ("pass", "passes")
        count = _count(model.n_iter_, one, many)
    # The SVM's loss is an option; logistic regression's is its name.
    params = f"C={args.C:g}" if args.model_type == "logistic" else f"loss={model.loss}, C={args.C:g}"
    given = sparse_penalty(args)
    if given is not None:
        params = f"{given.removeprefix('--').replace('-', '_').replace(' ', '=')}, {params}"
        after += f", {nonzero_text(np.count_nonzero(model.coef_), np.size(model.coef_))}"
    return (
        f"Trained {MODEL_TYPES[args.model_type]} ({params}) {where}{rows}"
        f"{model.n_features_in_:,} features{after}, {_classes_text(model)}: "
        f"{count}, relative duality gap {gap:.2e} (tol {args.tol:g}, {status}), "
        f"primal objective {objective:.6g}{summed}, {seconds:.2f} s. Model saved to {args.model}."
    )


def nonzero_text(nonzero, size):
    """The weights an L1 model keeps, as ``train`` and ``info`` print them."""
    return f"{nonzero:,} of {size:,} weights nonzero"


def reads_made(history, n_rows):
    """Reads of the training data a streamed fit made (its ``history_``'s last record's rows read over
    the ``n_rows``), or None where the history does not count them."""
    rows_read = history[-1].get("rows_read") if history else None
    if not n_rows or rows_read is None:
        return None
    return round(int(rows_read) / n_rows)


def _count(n, one, many):
    return f"{n} {one if n == 1 else many}"


def _cluster_fit(model):
    """``{"rows", "workers", "method"}`` of a fit on a cluster, or None for a fit in this process:
    the rows summed over the parts (``cluster_parts_``), the workers that trained them, and the
    method the fit used (``history_``'s ``"method"``: ``"newton"``, ``"truncated_newton"``,
    ``"cocoa"`` or ``"average"``; None where the record has none)."""
    parts = getattr(model, "cluster_parts_", None)
    if not parts:
        return None
    return {
        "rows": sum(int(part["rows"]) for part in parts),
        "workers": len({part["worker"] for part in parts}),
        "method": model.history_[-1].get("method") if model.history_ else None,
    }


def _advice(model, args, cluster):
    """What to try after a fit that stopped above ``--tol``: more passes or a looser tolerance; on
    a cluster, after CoCoA+ rounds or an average, the primal Newton steps (of the squared hinge or
    the logistic loss; the hinge has none), which reach the optimum in a few reads where the dual
    methods can need hundreds of rounds; and,
    without ``--scale``, standardizing, for raw-scale features (pixel values, counts), on which
    every method needs more steps."""
    from ..engine.plan import losses
    from ..engine.plan.problem import DUAL_CLUSTER_MODES

    tips = ["raise --passes or loosen --tol"]
    method = None if cluster is None else cluster["method"]
    if method in DUAL_CLUSTER_MODES:
        loss = losses.LOGISTIC.name if args.model_type == "logistic" else model.loss
        if not losses.loss_of(loss).newton:  # a loss without Newton steps: the SVM's other one has them
            newton = next(name for name in losses.SVM_LOSSES if losses.loss_of(name).newton)
            options = f"--loss {newton} --dual false trains"
        elif args.cluster in DUAL_CLUSTER_MODES and args.dual != "true":
            options = "--dual false or --cluster auto trains"
        else:
            options = "--dual false trains"
        tips.append(f"{options} by Newton steps on the cluster, usually to --tol in a few reads")
    if not getattr(args, "scale", False):
        tips.append("for features far from unit scale (raw pixel values, counts) add --scale")
    return "; ".join(tips)


def verbosity(args, stream=None):
    """``verbose`` of the fit: a progress bar per pass with ``--verbose``, and by default when
    standard error is a terminal (as pip draws one); none with ``--quiet`` or in logs."""
    if args.quiet:
        return 0
    stream = sys.stderr if stream is None else stream
    return 1 if args.verbose or bool(getattr(stream, "isatty", lambda: False)()) else 0


def _label(text):
    """A label given on the command line: an int, a float, or the string itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _class_weight(value):
    """``--class-weight``: None, ``"balanced"``, or ``"LABEL:WEIGHT,..."`` as a dict."""
    if value is None or value == "balanced":
        return value
    weights = {}
    for item in value.split(","):
        label, sep, weight = item.strip().rpartition(":")
        try:
            number = float(weight)
        except ValueError:
            number = None
        if not sep or not label or number is None:
            raise UserError(
                f"--class-weight {value!r}: give 'balanced' or LABEL:WEIGHT pairs separated by commas, "
                "as in '1:5,-1:1' (the labels as they appear in the data)."
            )
        weights[_label(label)] = number
    return weights


def _prediction_frame(model, data, proba=False):
    """A lazy Dask DataFrame with ``prediction`` and ``decision`` column(s), and with ``proba`` a
    ``proba_CLASS`` column per class (``model.predict_proba``, in the order of ``classes_``)."""
    import dask.dataframe as dd

    multi = len(model.classes_) > 2
    prediction = model.predict(data.X)
    decision = model.decision_function(data.X)
    proba_columns = [f"proba_{c}" for c in model.classes_] if proba else []
    if data.is_table:
        if multi:
            decision = decision.rename(columns={c: f"decision_{c}" for c in decision.columns})
            frame = decision.assign(prediction=prediction)[["prediction", *decision.columns]]
        else:
            frame = prediction.to_frame(name="prediction").assign(decision=decision)
        if proba:
            probabilities = model.predict_proba(data.X)  # columns: the classes as str
            pairs = zip(proba_columns, probabilities.columns, strict=True)
            frame = frame.assign(**{name: probabilities[column] for name, column in pairs})
        return frame

    import dask
    import pandas as pd

    columns = [f"decision_{c}" for c in model.classes_] if multi else ["decision"]

    def to_frame(labels, scores, probabilities=None):
        frame = pd.DataFrame(np.reshape(scores, (len(labels), len(columns))), columns=columns)
        frame.insert(0, "prediction", labels)
        if probabilities is not None:
            frame[proba_columns] = np.reshape(probabilities, (len(labels), len(proba_columns)))
        return frame

    empty_proba = np.zeros((0, len(proba_columns))) if proba else None
    meta = to_frame(model.classes_[:0], np.zeros((0, len(columns))), empty_proba)
    blocks = [prediction.to_delayed().ravel(), decision.to_delayed().ravel()]
    if proba:
        blocks.append(model.predict_proba(data.X).to_delayed().ravel())
    parts = [dask.delayed(to_frame)(*block) for block in zip(*blocks, strict=True)]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def cmd_predict(args):
    out = args.out
    lower = out.lower().rstrip("/")
    if lower.endswith(TABLE_SUFFIXES["parquet"]):
        kind = "parquet"
    elif lower.endswith((".csv", ".csv.gz", ".csv.bz2")):
        kind = "csv"
    else:
        raise UserError(f"--out {out!r}: name a .parquet (a directory of parts) or a .csv file")
    paths = expand_paths(args.paths)
    check_output(out, "--out", [args.model, *paths], overwrite=args.overwrite, directory=kind == "parquet")
    if args.proba:  # from the file's own table, before an estimator is imported (seconds)
        meta, _ = read_model_file(args.model)
        if meta["estimator"] not in ("LinearSVC", "LogisticRegression"):
            raise UserError(
                f"--proba: {args.model!r} is a {meta['estimator']}, which gives no probabilities (its "
                "decision values are written as 'decision'): omit --proba, or train a LogisticRegression "
                "with 'train --model-type logistic'"
            )
        if meta["estimator"] == "LinearSVC" and not meta["params"].get("probability"):
            _no_probabilities(args.model, meta["estimator"])
    model = load_model(args.model)
    if args.proba and not hasattr(model, "predict_proba"):  # a LinearSVC fitted without Platt's sigmoids
        _no_probabilities(args.model, type(model).__name__)
    with _scheduler(args.scheduler):
        data = open_data(args, paths, label_needed=False, n_features=model.n_features_in_)
        frame = _prediction_frame(model, data, proba=args.proba)
        start = time.perf_counter()
        if kind == "parquet":
            frame.to_parquet(out, write_index=False, overwrite=bool(args.overwrite))
        else:
            frame.to_csv(out, single_file=True, index=False)
        seconds = time.perf_counter() - start
    print(f"Predictions ({', '.join(frame.columns)}) written to {out} in {seconds:.2f} s.")
    return 0


def _no_probabilities(path, estimator):
    raise UserError(
        f"--proba: {path!r} is a {estimator} fitted without probability=True, which has no "
        "probabilities: train it with 'train --probability' (Platt scaling), train a LogisticRegression "
        "with 'train --model-type logistic', or drop --proba"
    )


def _roc_auc(y, scores, classes):
    """Binary ROC AUC on the decision values, or one-vs-rest macro over classes."""
    from sklearn.metrics import roc_auc_score

    if scores.ndim == 1:
        positive = y == classes[1]
        if positive.all() or not positive.any():
            return None
        return float(roc_auc_score(positive, scores))
    aucs = []
    for c, label in enumerate(classes):
        positive = y == label
        if positive.any() and not positive.all():
            aucs.append(roc_auc_score(positive, scores[:, c]))
    return float(np.mean(aucs)) if aucs else None


def evaluation(model, data):
    """The model's class (``estimator``), and its accuracy, ROC AUC and training certificate on
    ``data`` (a dict)."""
    import dask

    predicted, scores, y = dask.compute(model.predict(data.X), model.decision_function(data.X), data.y)
    y = np.asarray(y)
    predicted, scores = np.asarray(predicted), np.asarray(scores)
    certified = hasattr(model, "duality_gap_")  # a linear model's certificate (none for the others)
    gap = np.maximum(model.duality_gap_, 0.0) if certified else None  # rounding: never below 0
    objective = model.objective_ if certified else None
    return {
        "estimator": type(model).__name__,
        "rows": int(y.shape[0]),
        "accuracy": float(np.mean(predicted == y)) if y.shape[0] else None,
        "roc_auc": _roc_auc(y, scores, model.classes_),
        **_class_metrics(y, predicted, model.classes_),
        "training_duality_gap": _numbers(gap),
        "training_objective": _numbers(objective),
    }


def _numbers(value):
    """A number, or a list of them per problem, as JSON holds it (None stays None)."""
    if value is None:
        return None
    return float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=float).tolist()


def _class_metrics(y, predicted, classes):
    """Precision, recall and F1 (of the positive class, the second, for two classes; else the
    mean over classes) and the confusion matrix (rows: true classes, columns: predicted)."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    labels = list(classes)
    binary = len(labels) == 2
    if y.shape[0] == 0:
        scores = (None, None, None)
    else:
        which = {"average": "binary", "pos_label": labels[-1]} if binary else {"average": "macro"}
        scores = precision_recall_fscore_support(y, predicted, labels=labels, zero_division=0, **which)[:3]
    return {
        "precision": None if scores[0] is None else float(scores[0]),
        "recall": None if scores[1] is None else float(scores[1]),
        "f1": None if scores[2] is None else float(scores[2]),
        "classes": [c.item() if hasattr(c, "item") else c for c in labels],
        "confusion_matrix": confusion_matrix(y, predicted, labels=labels).tolist(),
    }


def cmd_evaluate(args):
    model = load_model(args.model)
    paths = expand_paths(args.paths)
    with _scheduler(args.scheduler):
        data = open_data(args, paths, label_needed=True, n_features=model.n_features_in_)
        result = evaluation(model, data)
    if args.json:
        print(json.dumps(result))
        return 0
    auc = "undefined (one class only)" if result["roc_auc"] is None else f"{result['roc_auc']:.4f}"
    accuracy = "undefined (no rows)" if result["accuracy"] is None else f"{result['accuracy']:.4f}"
    kind = "" if len(model.classes_) == 2 else " (one-vs-rest, macro)"
    which = f" (class {model.classes_[-1]})" if len(model.classes_) == 2 else " (macro)"
    print(f"{'model':32}{result['estimator']}")
    print(f"{'rows':32}{result['rows']:,}")
    print(f"{'accuracy':32}{accuracy}")
    print(f"{'ROC AUC' + kind:32}{auc}")
    for name in ("precision", "recall", "f1"):
        value = "undefined (no rows)" if result[name] is None else f"{result[name]:.4f}"
        print(f"{(name if name != 'f1' else 'F1') + which:32}{value}")
    for line in _confusion_text(result["classes"], result["confusion_matrix"]).splitlines():
        print(printable(line))  # the labels come from the data: no escape sequence acts
    if result["training_duality_gap"] is None:
        print(f"{'training duality gap':32}none (a {result['estimator']} has no certificate)")
    else:
        print(f"{'training duality gap':32}{numbers_text(result['training_duality_gap'], '.2e')}")
        print(f"{'training objective':32}{numbers_text(result['training_objective'], '.6g')}")
    return 0


def _confusion_text(classes, matrix):
    """The confusion matrix as text: a row per true class, a column per predicted class."""
    names = [str(c) for c in classes]
    width = max([len(n) for n in names] + [len(f"{v:,}") for row in matrix for v in row] + [4])
    lines = ["confusion matrix (rows: true class, columns: predicted)"]
    lines.append(" " * (width + 2) + " ".join(n.rjust(width) for n in names))
    for name, row in zip(names, matrix, strict=True):
        lines.append(name.rjust(width) + "  " + " ".join(f"{v:,}".rjust(width) for v in row))
    return "\n".join(lines)


def cmd_demo(args):
    from .._demo import run_demo

    if not args.cache_fraction > 0:
        raise UserError(f"--cache-fraction must be > 0, got {args.cache_fraction}")
    if args.plot is not None:
        check_output(args.plot, "--plot", [], overwrite=True)
    run_demo(plot=args.plot, cache_fraction=args.cache_fraction, quick=args.quick)
    return 0

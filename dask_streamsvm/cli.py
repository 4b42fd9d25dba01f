"""The ``dask-streamsvm`` command: train, predict, evaluate and inspect models from the shell.

::

    dask-streamsvm train data/*.parquet --label income --model adult.model --cache 2GB
    dask-streamsvm train train.svm.bz2 --model a9a.model --passes 20 --tol 1e-4
    dask-streamsvm predict adult.model new/*.parquet --out predictions.parquet
    dask-streamsvm evaluate adult.model test/*.parquet --label income --json
    dask-streamsvm info adult.model
    dask-streamsvm demo --plot demo_convergence.png

Input paths are Parquet files or directories, CSV files or LIBSVM text
files (compressed or not), or globs of them; several paths of one format
make one collection, read lazily by Dask.  ``--scheduler ADDRESS`` runs the
work on a ``distributed`` cluster.

Output paths are checked before any data is read, and no command writes
over one of its inputs, even with ``--overwrite``.

Exit status: 0 on success, 2 for a usage error or an error in the input
(printed as one line, ``dask-streamsvm: error: ...``; add ``--traceback``
for the full trace), 130 when interrupted.
"""

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import warnings
from glob import escape, glob

import numpy as np

PROG = "dask-streamsvm"
_TABLE_SUFFIXES = {
    "parquet": (".parquet", ".pq"),
    "csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".tsv"),
}
# Expected problems with the user's input: one line and exit status 2.
# (pyarrow's errors derive from ValueError and OSError.)
_USER_ERRORS = (ValueError, TypeError, OSError)


class UserError(Exception):
    """A problem with the command line or its input, said in one line."""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised so that ``main`` prints them as one line."""

    def error(self, message):
        raise UserError(f"{message} (see '{self.prog} --help')")


# -- input -----------------------------------------------------------------------------


def _expand(paths):
    """Paths and globs -> existing paths (remote URLs are passed through unchecked).

    A name with ``*``, ``?`` or ``[`` that exists as given is that file, not a glob.
    """
    found = []
    for path in paths:
        if "://" in path or os.path.exists(path):
            found.append(path)
        elif any(c in path for c in "*?["):
            matches = sorted(glob(path))
            if not matches:
                raise UserError(f"no file matches {path!r}")
            found.extend(matches)
        else:
            raise UserError(f"no such file or directory: {path!r}")
    return found


def _table_source(paths):
    """``paths`` as Dask's table readers take them, each file read as named.

    Dask reads one path as named but expands every path of a list as a
    glob, and a name with ``[`` that matches nothing is then silently
    dropped: those names are escaped.
    """
    if len(paths) == 1:
        return paths[0]
    return [p if "://" in p else escape(p) for p in paths]


def _format_of(path):
    from .io import _LIBSVM_SUFFIXES

    lower = path.lower().rstrip("/")
    if lower.endswith(_TABLE_SUFFIXES["parquet"]) or os.path.isdir(path):
        return "parquet"
    if lower.endswith(_TABLE_SUFFIXES["csv"]):
        return "csv"
    if lower.endswith(_LIBSVM_SUFFIXES):
        return "libsvm"
    raise UserError(f"cannot tell the format of {path!r} from its name: pass --format parquet, csv or libsvm")


class Data:
    """The input of a command as lazy Dask collections.

    ``X`` holds the features (a Dask Array with CSR chunks for LIBSVM, a
    Dask DataFrame for tables), ``y`` the labels (None when a table has no
    label column), ``frame`` the whole table (None for LIBSVM), and
    ``label`` the label column's name.
    """

    def __init__(self, fmt, X, y, frame=None, label=None):
        self.format, self.X, self.y, self.frame, self.label = fmt, X, y, frame, label

    @property
    def is_table(self):
        return self.frame is not None


def _open(args, paths, *, label_needed, n_features=None):
    """Open ``paths`` (``args.paths`` expanded) as :class:`Data`.

    ``label_needed``: a table must name an existing label column
    (``--label``); otherwise ``--label`` is optional and only dropped when
    the table has that column.  ``n_features`` (LIBSVM only) fixes the width.
    """
    fmt = args.format
    if fmt == "auto":
        formats = {p: _format_of(p) for p in paths}
        fmt = formats[paths[0]]
        mixed = sorted({f"{p} ({f})" for p, f in formats.items() if f != fmt})
        if mixed:
            raise UserError(
                f"the inputs mix formats: {paths[0]!r} is {fmt} but {', '.join(mixed[:3])} is not; "
                "give files of one format"
            )
    if fmt == "libsvm":
        from .io import read_libsvm

        if args.label is not None:
            raise UserError(
                f"--label {args.label} names a column of a table, but {paths[0]!r} is read as LIBSVM, "
                "whose lines start with their label: drop --label"
            )
        X, y = read_libsvm(paths, n_features=n_features, zero_based=args.zero_based)
        return Data(fmt, X, y)

    import dask.dataframe as dd

    if getattr(args, "n_features", None) is not None:
        raise UserError("--n-features applies to LIBSVM files; a table's width is its number of columns")
    if args.zero_based:
        raise UserError("--zero-based applies to LIBSVM files (their feature indices); drop it for a table")
    source = _table_source(paths)
    frame = dd.read_parquet(source) if fmt == "parquet" else dd.read_csv(source)
    columns = [str(c) for c in frame.columns]
    label = args.label
    if label is None:
        if label_needed:
            raise UserError(
                f"{paths[0]!r} is a {fmt} table: name its label column with --label "
                f"(its columns are {_short_list(columns)})"
            )
        return Data(fmt, frame, None, frame)
    if label not in frame.columns:
        if label_needed:
            raise UserError(
                f"--label {label!r} is not a column of the input; its columns are {_short_list(columns)}"
            )
        return Data(fmt, frame, None, frame)
    return Data(fmt, frame.drop(columns=[label]), frame[label], frame, label)


def _short_list(items, n=12):
    items = list(items)
    shown = ", ".join(repr(i) for i in items[:n])
    return f"[{shown}{', ...' if len(items) > n else ''}] ({len(items)} in all)"


@contextlib.contextmanager
def _scheduler(address):
    """Run the block inside ``distributed.Client(address)``, or on the local scheduler."""
    if address is None:
        yield None
        return
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - distributed is a dependency
        raise UserError(f"--scheduler needs the 'distributed' package ({exc})") from None
    try:
        client = Client(address)
    except OSError as exc:
        raise UserError(f"cannot connect to the scheduler at {address!r}: {exc}") from None
    with client:
        yield client


def _load_model(path):
    from . import load

    if not os.path.exists(path):
        raise UserError(f"no such model file: {path!r}")
    if os.path.isdir(path):
        raise UserError(f"{path!r} is a directory, not a model file")
    return load(path)


def _model_file_header(path):
    """Format name, version and writing library version from a model file's ``model.json`` (bounded)."""
    from .engine.archive import ArchiveReader

    with ArchiveReader(path, "dask_streamsvm model file") as archive:
        meta = archive.meta
    return meta.get("format"), meta.get("version"), meta.get("library_version")


# -- feature maps ------------------------------------------------------------------------


def _add_feature_map_options(parser):
    """Options of the feature map applied to the rows before the linear model.

    ``--scale``: :class:`~dask_streamsvm.features.Standardize`.  :func:`_feature_map_params` turns
    them into ``LinearSVC`` keyword arguments; ``train`` passes those on and the saved model
    carries the map (a standardized model's coefficients are the raw features'), so ``predict``
    and ``evaluate`` need no options of their own.
    """
    parser.add_argument(
        "--scale", action="store_true",
        help="standardize each feature while training (one more read for the scales): for features "
        "far from unit scale, such as raw pixel values or counts",
    )  # fmt: skip


def _feature_map_params(args):
    """``LinearSVC`` keyword arguments of the feature-map options."""
    if getattr(args, "scale", False):
        from .features import Standardize

        return {"feature_map": Standardize()}
    return {}


# -- commands ----------------------------------------------------------------------------


def _fit_with_warnings(model, *fit_args, **fit_kwargs):
    """``model.fit`` with warnings printed as one line each (the model is kept)."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(*fit_args, **fit_kwargs)
    for w in caught:
        print(f"{PROG}: warning: {_printable(_one_line(str(w.message)))}", file=sys.stderr)


def _rows_streamed(model):
    """Rows of the training data, from the streaming history (every read counts them), or None."""
    records = [r for r in model.history_ if "rows_read" in r and "pass" in r]
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


def _inside(path, directory):
    return path.startswith(directory.rstrip(os.sep) + os.sep)


def _check_not_an_input(path, flag, inputs, *, holds=False):
    """Refuse an output that is one of the command's ``inputs`` (paths), or lies in an input directory.

    ``holds``: the output is a directory replaced as a whole, so it must not
    hold an input either.  Links are followed: a link to an input is that input.
    """
    real = os.path.realpath(path)
    for source in inputs:
        if "://" in source:
            continue
        source_real = os.path.realpath(source)
        same = real == source_real
        if not same and os.path.exists(path) and os.path.exists(source):
            same = os.path.samefile(path, source)  # hard links
        if same:
            raise UserError(
                f"{flag} {path!r} is {source!r}, an input of this command: writing it would destroy "
                "the input (--overwrite does not allow that); choose another path"
            )
        if _inside(real, source_real):
            raise UserError(
                f"{flag} {path!r} is inside the input directory {source!r}; choose a path outside it"
            )
        if holds and _inside(source_real, real):
            raise UserError(
                f"{flag} {path!r} holds the input {source!r}, which writing it would delete; "
                "choose another path"
            )


def _check_directory(directory, flag, path):
    """Refuse now a missing, non-directory or unwritable ``directory`` that ``path`` is to be written in."""
    if not os.path.isdir(directory):
        above = directory
        while not os.path.exists(above) and os.path.dirname(above) != above:
            above = os.path.dirname(above)
        if os.path.exists(above) and not os.path.isdir(above):
            raise UserError(f"cannot write {flag} {path!r}: {above!r} is a file, not a directory")
        raise UserError(f"cannot write {flag} {path!r}: the directory {directory!r} does not exist")
    try:  # a test file: permissions, read-only file systems and full disks answer as the real write will
        handle, probe = tempfile.mkstemp(dir=directory, prefix=".dask-streamsvm-write-test-")
    except OSError as exc:
        raise UserError(
            f"cannot write {flag} {path!r}: the directory {directory!r} refuses new files "
            f"({exc.strerror or exc}); choose a directory you can write to"
        ) from None
    os.close(handle)
    os.remove(probe)


def _check_output(path, flag, inputs, *, overwrite, directory=False):
    """Refuse, before any work, an output that would replace an input or that cannot be written.

    ``path`` is a file to write (``directory=True``: a directory of parts
    replaced as a whole); an existing one needs ``overwrite``, and no input
    is ever written over.
    """
    if not path:
        raise UserError(f"{flag} is empty; give a file name")
    _check_not_an_input(path, flag, inputs, holds=directory)
    if os.path.isdir(path) and not directory:
        raise UserError(f"{flag} {path!r} is a directory; give a file name")
    if os.path.lexists(path) and not overwrite:
        raise UserError(f"{flag} {path!r} exists: remove it or pass --overwrite")
    _check_directory(os.path.dirname(os.path.abspath(path)), flag, path)


def _check_checkpoint_dir(directory, checkpoint, inputs):
    """Refuse, before any work, a ``--checkpoint-dir`` its ``checkpoint`` file could not be written in."""
    flag = "--checkpoint-dir"
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise UserError(f"{flag} {directory!r} is a file, not a directory; give a directory")
    _check_not_an_input(checkpoint, flag, inputs)
    existing = os.path.abspath(directory)  # the fit creates the missing directories
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    _check_directory(existing, flag, directory)


def cmd_train(args):
    from . import LinearSVC
    from .engine.checkpoint import FILE

    paths = _expand(args.paths)
    if args.checkpoint_dir is None:
        _check_output(args.model, "--model", paths, overwrite=args.overwrite)
    else:  # the checkpoint is an input too when resuming
        checkpoint = os.path.join(args.checkpoint_dir, FILE)
        _check_output(args.model, "--model", [*paths, checkpoint], overwrite=args.overwrite)
        _check_checkpoint_dir(args.checkpoint_dir, checkpoint, paths)
    data = _open(args, paths, label_needed=True, n_features=args.n_features)
    model = LinearSVC(
        C=args.C,
        loss=args.loss,
        fit_intercept=not args.no_intercept,
        tol=args.tol,
        max_iter=args.passes,
        solver=args.solver,
        cache_bytes=args.cache,
        random_state=args.seed,
        verbose=_verbosity(args),
        class_weight=_class_weight(args.class_weight),
        cluster=args.cluster,
        on_invalid="skip" if args.skip_invalid else "raise",
        checkpoint_dir=args.checkpoint_dir,
        **_feature_map_params(args),
    )
    if args.resume and args.checkpoint_dir is None:
        raise UserError("--resume continues from a checkpoint: give --checkpoint-dir DIR too")
    resume = {"resume": True} if args.resume else {}
    if args.cluster is not None and (args.scheduler is None or args.solver == "memory"):
        raise UserError("--cluster trains on a Dask cluster: give --scheduler ADDRESS (not --solver memory)")
    with _scheduler(args.scheduler):
        start = time.perf_counter()
        if args.solver == "memory":
            X, y = _in_memory(data)
            n_rows = X.shape[0]
            _fit_with_warnings(model, X, y)
        elif data.is_table:
            _fit_with_warnings(model, data.frame, data.label, **resume)
        else:
            _fit_with_warnings(model, data.X, data.y, **resume)
        if args.solver != "memory":
            n_rows = _rows_streamed(model)
        seconds = time.perf_counter() - start
    model.save(args.model)
    gap = max(float(np.max(model.duality_gap_)), 0.0)  # rounding can make a gap of 0 negative
    objective = float(np.sum(model.objective_))
    problems = np.size(model.objective_)
    summed = "" if problems == 1 else f" (sum over {problems} one-vs-rest problems)"
    rows = "" if n_rows is None else f"{n_rows:,} rows x "
    classes = ", ".join(repr(c) for c in model.classes_.tolist()[:10])
    more = ", ..." if len(model.classes_) > 10 else ""
    status = "converged" if gap <= args.tol else "not converged: raise --passes or loosen --tol"
    solver = "in memory" if args.solver == "memory" else "streamed"
    passes = f"{model.n_iter_} pass{'' if model.n_iter_ == 1 else 'es'}"
    print(
        f"Trained LinearSVC (loss={args.loss}, C={args.C:g}) {solver} on {rows}"
        f"{model.n_features_in_:,} features, {len(model.classes_)} classes ({classes}{more}): "
        f"{passes}, relative duality gap {gap:.2e} (tol {args.tol:g}, {status}), "
        f"primal objective {objective:.6g}{summed}, {seconds:.2f} s. Model saved to {args.model}."
    )
    return 0


def _verbosity(args, stream=None):
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


def _prediction_frame(model, data):
    """A lazy Dask DataFrame with ``prediction`` and ``decision`` column(s)."""
    import dask.dataframe as dd

    multi = len(model.classes_) > 2
    prediction = model.predict(data.X)
    decision = model.decision_function(data.X)
    if data.is_table:
        if multi:
            decision = decision.rename(columns={c: f"decision_{c}" for c in decision.columns})
            return decision.assign(prediction=prediction)[["prediction", *decision.columns]]
        return prediction.to_frame(name="prediction").assign(decision=decision)

    import dask
    import pandas as pd

    columns = [f"decision_{c}" for c in model.classes_] if multi else ["decision"]

    def to_frame(labels, scores):
        frame = pd.DataFrame(np.reshape(scores, (len(labels), len(columns))), columns=columns)
        frame.insert(0, "prediction", labels)
        return frame

    meta = to_frame(model.classes_[:0], np.zeros((0, len(columns))))
    parts = [
        dask.delayed(to_frame)(p, d)
        for p, d in zip(prediction.to_delayed().ravel(), decision.to_delayed().ravel(), strict=True)
    ]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def cmd_predict(args):
    out = args.out
    lower = out.lower().rstrip("/")
    if lower.endswith(_TABLE_SUFFIXES["parquet"]):
        kind = "parquet"
    elif lower.endswith((".csv", ".csv.gz", ".csv.bz2")):
        kind = "csv"
    else:
        raise UserError(f"--out {out!r}: name a .parquet (a directory of parts) or a .csv file")
    paths = _expand(args.paths)
    _check_output(out, "--out", [args.model, *paths], overwrite=args.overwrite, directory=kind == "parquet")
    model = _load_model(args.model)
    data = _open(args, paths, label_needed=False, n_features=model.n_features_in_)
    with _scheduler(args.scheduler):
        frame = _prediction_frame(model, data)
        start = time.perf_counter()
        if kind == "parquet":
            frame.to_parquet(out, write_index=False, overwrite=bool(args.overwrite))
        else:
            frame.to_csv(out, single_file=True, index=False)
        seconds = time.perf_counter() - start
    print(f"Predictions ({', '.join(frame.columns)}) written to {out} in {seconds:.2f} s.")
    return 0


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
    """Accuracy, ROC AUC and the training certificate of ``model`` on ``data`` (a dict)."""
    import dask

    predicted, scores, y = dask.compute(model.predict(data.X), model.decision_function(data.X), data.y)
    y = np.asarray(y)
    predicted, scores = np.asarray(predicted), np.asarray(scores)
    gap, objective = np.maximum(model.duality_gap_, 0.0), model.objective_  # rounding: never below 0
    return {
        "rows": int(y.shape[0]),
        "accuracy": float(np.mean(predicted == y)) if y.shape[0] else None,
        "roc_auc": _roc_auc(y, scores, model.classes_),
        **_class_metrics(y, predicted, model.classes_),
        "training_duality_gap": float(gap) if np.ndim(gap) == 0 else np.asarray(gap).tolist(),
        "training_objective": objective if np.isscalar(objective) else np.asarray(objective).tolist(),
    }


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
    model = _load_model(args.model)
    data = _open(args, _expand(args.paths), label_needed=True, n_features=model.n_features_in_)
    with _scheduler(args.scheduler):
        result = evaluation(model, data)
    if args.json:
        print(json.dumps(result))
        return 0
    auc = "undefined (one class only)" if result["roc_auc"] is None else f"{result['roc_auc']:.4f}"
    accuracy = "undefined (no rows)" if result["accuracy"] is None else f"{result['accuracy']:.4f}"
    kind = "" if len(model.classes_) == 2 else " (one-vs-rest, macro)"
    which = f" (class {model.classes_[-1]})" if len(model.classes_) == 2 else " (macro)"
    print(f"{'rows':32}{result['rows']:,}")
    print(f"{'accuracy':32}{accuracy}")
    print(f"{'ROC AUC' + kind:32}{auc}")
    for name in ("precision", "recall", "f1"):
        value = "undefined (no rows)" if result[name] is None else f"{result[name]:.4f}"
        print(f"{(name if name != 'f1' else 'F1') + which:32}{value}")
    for line in _confusion_text(result["classes"], result["confusion_matrix"]).splitlines():
        print(_printable(line))  # the labels come from the data: no escape sequence acts
    print(f"{'training duality gap':32}{_numbers(result['training_duality_gap'], '.2e')}")
    print(f"{'training objective':32}{_numbers(result['training_objective'], '.6g')}")
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


def _numbers(value, spec):
    if isinstance(value, list):
        return "[" + ", ".join(format(v, spec) for v in value) + "]"
    return format(value, spec)


def cmd_info(args):
    model = _load_model(args.model)
    fmt, version, written_by = _model_file_header(args.model)
    params = model.get_params(deep=False)
    gap, objective = model.duality_gap_, model.objective_
    info = {
        "file": args.model,
        "format": fmt,
        "format_version": version,
        "written_by": written_by,
        "estimator": type(model).__name__,
        "classes": model.classes_.tolist(),
        "n_features": int(model.n_features_in_),
        "feature_names": None
        if getattr(model, "feature_names_in_", None) is None
        else [str(c) for c in model.feature_names_in_],
        "passes": int(model.n_iter_),
        "duality_gap": float(max(gap, 0.0)) if np.ndim(gap) == 0 else np.maximum(gap, 0.0).tolist(),
        "objective": objective if np.isscalar(objective) else np.asarray(objective).tolist(),
        "params": {k: v for k, v in params.items() if k not in ("callbacks", "validation_data")},
    }
    if args.json:
        print(json.dumps(info, default=str))  # JSON escapes control characters (and all non-ASCII)
        return 0
    # The file's text goes to a terminal: _printable keeps its escape sequences from acting.
    lines = [
        f"{'model file':16}{args.model} ({fmt} version {version}, written by dask_streamsvm {written_by})",
        f"{'estimator':16}{info['estimator']}",
        f"{'classes':16}{_short_list(info['classes'])}",
        f"{'n_features':16}{info['n_features']:,}",
    ]
    if info["feature_names"] is not None:
        lines.append(f"{'feature names':16}{_short_list(info['feature_names'], 8)}")
    gap = _numbers(info["duality_gap"], ".2e")
    shown = ", ".join(f"{k}={v!r}" for k, v in info["params"].items())
    lines += [
        f"{'passes':16}{info['passes']}",
        f"{'duality gap':16}{gap} (relative, certified at the end of training)",
        f"{'objective':16}{_numbers(info['objective'], '.8g')}",
        f"{'parameters':16}{shown}",
    ]
    for line in lines:
        print(_printable(line))
    return 0


def cmd_demo(args):
    from ._demo import run_demo

    if not args.cache_fraction > 0:
        raise UserError(f"--cache-fraction must be > 0, got {args.cache_fraction}")
    if args.plot is not None:
        _check_output(args.plot, "--plot", [], overwrite=True)
    run_demo(plot=args.plot, cache_fraction=args.cache_fraction, quick=args.quick)
    return 0


# -- parser ------------------------------------------------------------------------------


def _add_input_options(parser, label_help):
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


def build_parser():
    traceback = argparse.ArgumentParser(add_help=False)
    traceback.add_argument(
        "--traceback", action="store_true", default=argparse.SUPPRESS, help="show the full trace on errors"
    )
    parser = _Parser(
        prog=PROG,
        description="Linear SVMs on data larger than memory, with Dask, and a certificate of optimality.",
        epilog="Run 'dask-streamsvm COMMAND --help' for a command's options.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--traceback", action="store_true", default=False, help="show the full trace on errors"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    train = commands.add_parser(
        "train",
        parents=[traceback],
        help="fit a LinearSVC and save it",
        description="Fit a LinearSVC and save it.",
    )
    _add_input_options(
        train, "label column of Parquet/CSV input (required there; LIBSVM lines carry their label)"
    )
    train.add_argument("--model", required=True, metavar="OUT", help="model file to write")
    train.add_argument(
        "--overwrite", action="store_true", help="replace OUT if it exists (never an input of the command)"
    )
    train.add_argument(
        "--loss",
        choices=("squared_hinge", "hinge"),
        default="squared_hinge",
        help="squared_hinge (LIBLINEAR -s 1, the default) or hinge (-s 3)",
    )
    train.add_argument("--C", type=float, default=1.0, help="cost of a unit of loss (default: 1.0)")
    train.add_argument(
        "--cache", default="1GB", metavar="BYTES",
        help="row cache budget when streaming: bytes, or a share of the rows such as 10%% (default: 1GB)",
    )
    train.add_argument(
        "--passes", type=int, default=1000, metavar="N", help="most passes over the data (default: 1000)"
    )
    train.add_argument(
        "--tol", type=float, default=1e-3, help="relative duality gap to reach (default: 1e-3)"
    )
    train.add_argument(
        "--solver",
        choices=("auto", "memory", "streamsvm", "sbm", "bm"),
        default="auto",
        help="streamsvm (auto), sbm or bm stream files through the cache; memory loads them",
    )
    train.add_argument(
        "--cluster",
        choices=("average", "cocoa"),
        default=None,
        help="with --scheduler: a model per worker, averaged, or CoCoA+ rounds to the optimum",
    )
    train.add_argument("--no-intercept", action="store_true", help="fit no intercept")
    train.add_argument("--seed", type=int, default=None, metavar="N", help="random seed of the row order")
    train.add_argument(
        "--n-features", type=int, default=None, metavar="N", help="LIBSVM: number of features (default: read)"
    )
    train.add_argument(
        "--verbose", action="store_true", help="show a progress bar per pass (the default on a terminal)"
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
        description="Predict with a saved model; writes 'prediction' and 'decision' column(s).",
    )
    predict.add_argument("model", metavar="MODEL", help="model file")
    _add_input_options(predict, "label column to leave out, if the input has it")
    predict.add_argument(
        "--out", required=True, metavar="OUT", help="OUT.parquet (a directory of parts) or OUT.csv (one file)"
    )
    predict.add_argument(
        "--overwrite", action="store_true", help="replace OUT if it exists (never an input of the command)"
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
    return parser


# -- entry point -------------------------------------------------------------------------


def _one_line(text):
    return " ".join(str(text).split())


def _printable(text):
    """``text`` with its non-printable characters escaped (``\\x1b``, ``\\n``, ``\\u202e``).

    Text read from files (a model's metadata, a line quoted in an error)
    could otherwise move the cursor, clear the screen or forge output;
    letters of any script are kept as they are.
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


def _message(exc):
    text = str(exc)
    notes = getattr(exc, "__notes__", ())
    text = " ".join([text or type(exc).__name__, *notes])
    if isinstance(exc, FileNotFoundError) and exc.filename and str(exc.filename) not in text:
        text = f"{text}: {exc.filename}"
    return _one_line(text)


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
    except (UserError, *_USER_ERRORS) as exc:
        if traceback:
            raise
        print(f"{PROG}: error: {_printable(_message(exc))}", file=sys.stderr)
        return 2

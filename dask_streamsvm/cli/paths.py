"""What a command reads and writes: input paths opened as lazy Dask collections, and output
paths checked before any work (no command writes over one of its inputs, even with ``--overwrite``)."""

import os
import stat
import tempfile
from glob import escape, glob

from .text import UserError, printable, short_list

TABLE_SUFFIXES = {
    "parquet": (".parquet", ".pq"),
    "csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".tsv"),
}


# -- input -----------------------------------------------------------------------------


def expand_paths(paths):
    """Paths and globs -> existing paths (remote URLs are passed through unchecked).

    A name with ``*``, ``?`` or ``[`` that exists as given is that file, not a glob.
    Each local path must be a regular file or a directory of them
    (:func:`~dask_streamsvm._input_paths.check_input_path`): a FIFO or a device is
    refused before anything opens it.
    """
    from .._input_paths import check_input_path

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
    for path in found:
        try:
            check_input_path(path)
        except ValueError as exc:
            raise UserError(str(exc)) from None
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
    from ..io import LIBSVM_SUFFIXES

    lower = path.lower().rstrip("/")
    if lower.endswith(TABLE_SUFFIXES["parquet"]) or os.path.isdir(path):
        return "parquet"
    if lower.endswith(TABLE_SUFFIXES["csv"]):
        return "csv"
    if lower.endswith(LIBSVM_SUFFIXES):
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


def open_data(args, paths, *, label_needed, n_features=None):
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
        from ..io import read_libsvm

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
                f"(its columns are {short_list(columns)})"
            )
        return Data(fmt, frame, None, frame)
    if label not in frame.columns:
        if label_needed:
            raise UserError(
                f"--label {label!r} is not a column of the input; its columns are {short_list(columns)}"
            )
        return Data(fmt, frame, None, frame)
    return Data(fmt, frame.drop(columns=[label]), frame[label], frame, label)


# The model file's format (dask_streamsvm._persist: FORMAT, VERSION, WHAT, ESTIMATORS), written out so that
# info reads a file without importing the estimators (tests/test_front_door.py checks that they agree).
MODEL_FORMAT, MODEL_VERSION = "dask-streamsvm-model", 1
MODEL_FILE = "dask_streamsvm model file"
MODEL_ESTIMATORS = ("LinearSVC", "LogisticRegression", "OnePassSVC", "BudgetedSVC")


def _check_model_path(path):
    if not os.path.exists(path):
        raise UserError(f"no such model file: {path!r}")
    if os.path.isdir(path):
        raise UserError(f"{path!r} is a directory, not a model file")


def load_model(path):
    from .. import load

    _check_model_path(path)
    return load(path)


def read_model_file(path):
    """``(meta, arrays)`` of a model file, read without building the model (nor importing an
    estimator): its format and version, the estimator it names, and every array against its
    checksum, dtype and shape are checked (:mod:`~dask_streamsvm.engine.store.archive`), the parameters
    and their fit to the arrays are not (:func:`load_model` checks those)."""
    from ..engine.store.archive import read_archive

    _check_model_path(path)
    meta, arrays = read_archive(path, MODEL_FORMAT, MODEL_VERSION, MODEL_FILE)
    name = meta.get("estimator")
    if not isinstance(name, str) or name not in MODEL_ESTIMATORS:
        known = sorted(MODEL_ESTIMATORS)
        raise ValueError(f"{path}: unknown estimator {printable(repr(name))[:80]}; expected one of {known}.")
    for table in ("params", "attributes"):
        if not isinstance(meta.get(table), dict):
            raise ValueError(f"{path}: model.json lacks its {table!r} table.")
    if "classes_" not in arrays:
        raise ValueError(f"{path}: inconsistent model file: classes_ is missing")
    return meta, arrays


# -- output ----------------------------------------------------------------------------


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


def _check_kind(path, flag, *, replaced):
    """Refuse an existing output that is not a regular file or a directory (a FIFO would block the
    write, a device or socket take it), and a symbolic link the write would follow (``replaced``:
    the output is written aside and renamed over the path, which replaces the link itself)."""
    if not os.path.lexists(path):
        return
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        if replaced:
            return
        raise UserError(
            f"{flag} {path!r} is a symbolic link (to {os.readlink(path)!r}): writing it would write where "
            "it points, which --overwrite does not allow; remove the link or give the path of a file"
        )
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        from .._input_paths import file_kind

        raise UserError(
            f"{flag} {path!r} is {file_kind(mode)}, not a regular file: outputs are written to regular "
            "files; give the path of a file"
        )


def check_output(path, flag, inputs, *, overwrite, directory=False, replaced=False):
    """Refuse, before any work, an output that would replace an input or that cannot be written.

    ``path`` is a file to write (``directory=True``: a directory of parts
    replaced as a whole); an existing one needs ``overwrite``, and no input
    is ever written over.  A FIFO, a device or a socket is refused, and so is
    a symbolic link, unless the output is ``replaced`` (written aside and
    renamed over the path, as model files are), which replaces the link.
    """
    if not path:
        raise UserError(f"{flag} is empty; give a file name")
    _check_not_an_input(path, flag, inputs, holds=directory)
    _check_kind(path, flag, replaced=replaced)
    if os.path.isdir(path) and not directory:
        raise UserError(f"{flag} {path!r} is a directory; give a file name")
    if os.path.lexists(path) and not overwrite:
        raise UserError(f"{flag} {path!r} exists: remove it or pass --overwrite")
    _check_directory(os.path.dirname(os.path.abspath(path)), flag, path)


def check_checkpoint_dir(directory, checkpoint, inputs):
    """Refuse, before any work, a ``--checkpoint-dir`` its ``checkpoint`` file could not be written in."""
    flag = "--checkpoint-dir"
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise UserError(f"{flag} {directory!r} is a file, not a directory; give a directory")
    _check_not_an_input(checkpoint, flag, inputs)
    existing = os.path.abspath(directory)  # the fit creates the missing directories
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    _check_directory(existing, flag, directory)

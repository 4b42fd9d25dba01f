"""What kind of file a path is, checked with the standard library alone: the data readers
(:mod:`dask_streamsvm.io`) and the command line's argument checks (:mod:`dask_streamsvm.cli.paths`)
refuse a FIFO, a device or a socket before anything opens it, the command line before it imports
NumPy, Dask or a solver."""

import os
import stat


def file_kind(mode):
    """What a file of ``mode`` (``os.stat``) is, in words, when it is not a regular file or directory."""
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((what for test, what in kinds if test(mode)), "not a regular file")


def _not_regular(path, mode, inside=None):
    where = f"{path!r} (in the input directory {inside!r})" if inside is not None else repr(path)
    return ValueError(
        f"{where} is {file_kind(mode)}, not a regular file: data is read from regular files (or directories "
        "of them), since reading anything else may block or never end. Write the data to a file and "
        "pass that."
    )


def check_input_path(path):
    """Refuse, before anything opens it, a local data input that is not a regular file or a directory
    of them (a FIFO, a device, a socket): a ValueError naming it and what it is.

    A reader would block on a FIFO with no writer, or read a device for ever.
    Links are followed (a link to a FIFO is a FIFO); a directory's entries
    are checked at every depth, as Dask lists them.  Paths that do not
    exist are left to the reader (its own error), and URLs (``s3://...``)
    are not checked.
    """
    text = os.fspath(path)
    if "://" in str(text):
        return
    try:
        mode = os.stat(text).st_mode
    except (OSError, ValueError):  # missing, a broken link, an unreadable parent: the reader says so
        return
    if stat.S_ISREG(mode):
        return
    if not stat.S_ISDIR(mode):
        raise _not_regular(str(text), mode)
    for folder, _, files in os.walk(text):
        for name in files:
            entry = os.path.join(folder, name)
            try:
                mode = os.stat(entry).st_mode
            except OSError:
                continue
            if not stat.S_ISREG(mode):
                raise _not_regular(entry, mode, inside=str(text))

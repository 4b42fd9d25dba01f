"""What the command prints: its name, its one-line errors, and text made safe for a terminal."""

PROG = "dask-streamsvm"
# Expected problems with the user's input: one line and exit status 2.
# (pyarrow's errors derive from ValueError and OSError.)
USER_ERRORS = (ValueError, TypeError, OSError)


class UserError(Exception):
    """A problem with the command line or its input, said in one line."""


def one_line(text):
    return " ".join(str(text).split())


def printable(text):
    """``text`` with its non-printable characters escaped (``\\x1b``, ``\\n``, ``\\u202e``).

    Text read from files (a model's metadata, a line quoted in an error)
    could otherwise move the cursor, clear the screen or forge output;
    letters of any script are kept as they are.
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


def error_message(exc):
    """The one line that says what ``exc`` is: its message, its notes, and the file it names."""
    text = str(exc)
    notes = getattr(exc, "__notes__", ())
    text = " ".join([text or type(exc).__name__, *notes])
    if isinstance(exc, FileNotFoundError) and exc.filename and str(exc.filename) not in text:
        text = f"{text}: {exc.filename}"
    return one_line(text)


def short_list(items, n=12):
    """The first ``n`` of ``items`` (reprs), and how many there are in all."""
    items = list(items)
    shown = ", ".join(repr(i) for i in items[:n])
    return f"[{shown}{', ...' if len(items) > n else ''}] ({len(items)} in all)"


def numbers_text(value, spec):
    if isinstance(value, list):
        return "[" + ", ".join(format(v, spec) for v in value) + "]"
    return format(value, spec)


# The library's advice in the words of the command line: the estimator's parameters it names, as the
# options that set them (the note on unscaled features, the warning of an unconverged fit).
_OPTION_WORDS = (
    ("pass feature_map=Standardize() (dask_streamsvm.features)", "add --scale"),
    (
        "Increase max_iter, loosen tol, or use a smaller C",
        "Raise --passes, loosen --tol, or use a smaller --C",
    ),
)


def in_option_words(text):
    """``text`` (a warning or note of the library) with its advice naming the command's options."""
    for library, command in _OPTION_WORDS:
        text = text.replace(library, command)
    return text

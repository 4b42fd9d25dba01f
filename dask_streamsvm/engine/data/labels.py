"""The labels of a collection: partitioned as X is, counted partition by partition, merged.

:func:`label_partitions` checks that the labels (and the weights) are
partitioned as X is.  :meth:`~.source.DaskSource.label_counts` runs
:func:`count_labels_of` on each partition's labels and weights and
:func:`merge_label_counts` on the results; a cluster runs the first on
its workers.  Labels that mix strings and numbers are an error that
names a partition holding each.
"""

import numpy as np

from .checks import invalid_labels, label_error


def label_partitions(v, n_parts, row_chunks, name, optimize=True):
    """The delayed partitions of the labels or weights ``v`` (``name``: ``"y"`` or ``"sample_weight"``).

    They must match X's ``n_parts`` partitions, and its ``row_chunks``
    when both are known; ``[None] * n_parts`` without ``v``.
    ``optimize=False`` keeps the graph's keys, which X's tasks may share.
    """
    if v is None:
        return [None] * n_parts
    if not hasattr(v, "__dask_graph__"):  # not a Dask collection
        raise TypeError(
            f"{name} must be a Dask Array or Series like X, got {type(v).__name__}; "
            f"wrap it with dask.array.from_array({name}, chunks=X.chunks[0])."
        )
    if getattr(v, "ndim", 1) != 1:
        raise ValueError(f"{name} must be 1-D, got {v.ndim} dimensions.")
    parts = list(np.ravel(v.to_delayed(optimize_graph=optimize)))
    if len(parts) != n_parts:
        raise ValueError(
            f"{name} has {len(parts)} partitions but X has {n_parts}; partition them alike "
            f"(for arrays: {name}.rechunk(X.chunks[0]); for frames: pass the whole frame and "
            "the label column's name, fit(frame, 'label'), since Dask may merge the partitions "
            "of a frame read from Parquet when only a few of its columns are selected)."
        )
    chunks = getattr(v, "chunks", None)
    if row_chunks is not None and chunks is not None:
        known = not (any(np.isnan(row_chunks)) or any(np.isnan(chunks[0])))
        if known and tuple(chunks[0]) != tuple(row_chunks):
            raise ValueError(
                f"{name}'s chunks {chunks[0]} do not match X's row chunks {row_chunks}; "
                f"rechunk with {name} = {name}.rechunk((X.chunks[0],))."
            )
    return parts


def merge_label_counts(results, allow_empty=False, partitions=None):
    """``(classes, counts, weighted classes, totals)`` of the partitions' (or parts') label counts
    (:func:`count_labels_of`'s): ``totals`` the sample weight of each class's rows.

    ``partitions`` numbers the results, for the error when some hold
    string labels and others numbers.
    """
    _check_label_types(results, partitions)
    counts, totals = {}, {}
    weighted = set()
    for labels, n, positive, weight in results:
        for label, c, t in zip(labels.tolist(), n.tolist(), weight.tolist(), strict=True):
            counts[label] = counts.get(label, 0) + c
            totals[label] = totals.get(label, 0.0) + t
        weighted.update(positive.tolist())
    if not counts and not allow_empty:
        raise ValueError("the collection has no rows: every partition is empty.")
    classes = np.array(sorted(counts))
    n = np.array([counts[c] for c in classes.tolist()], dtype=np.int64)
    weight = np.array([totals[c] for c in classes.tolist()], dtype=np.float64)
    return classes, n, np.array(sorted(weighted)), weight


def _label_type(label):
    return "string" if isinstance(label, str | bytes) else "number"


def _mixed_labels(string_at, number_at):
    """The error for string and numeric labels: ``(where, label)`` of one of each."""
    (ws, s), (wn, n) = string_at, number_at
    return ValueError(
        f"the labels mix strings and numbers: {ws} has the label {s!r} and {wn} the label {n!r}. Give y "
        "one type in every partition (y.astype(str), or the strings converted to numbers)."
    )


def _check_label_types(results, partitions):
    """A ValueError if some of ``results`` have string labels and others numbers."""
    first = {}  # type -> (where, label)
    for k, (labels, *_) in enumerate(results):
        where = f"part {k}" if partitions is None else f"partition {partitions[k]}"
        for label in labels.tolist():
            first.setdefault(_label_type(label), (where, label))
        if len(first) == 2:
            raise _mixed_labels(first["string"], first["number"])


def count_labels_of(p, y, w):
    """``(labels, counts, labels of positive weight, totals)`` of partition ``p``'s labels ``y`` and
    weights ``w`` (None: every row weighs 1), ``totals`` the weight of each label's rows; a missing
    or infinite label is an error naming its row."""
    return tally_labels(*label_index_of(p, y), w)


def label_index_of(p, y):
    """``(labels, index)`` of partition ``p``'s labels ``y``: its distinct labels as
    :func:`numpy.unique` gives them, and each row's label's position among them (int64, one per
    row), so that a read counting the labels and summing by class sorts them at most once; a missing
    or infinite label is an error naming its row, labels mixing strings and numbers one naming
    one of each."""
    y = np.asarray(y).ravel()
    invalid = invalid_labels(y)
    if invalid.any():
        r = int(np.flatnonzero(invalid)[0])
        raise ValueError(label_error(f"partition {p}, row {r}", y[r]))
    indexed = _indexed_integers(y)
    if indexed is not None:
        return indexed
    try:
        labels, index = np.unique(y, return_inverse=True)
    except TypeError:  # labels that do not sort together: strings and numbers
        first = {}
        for r, label in enumerate(y.tolist()):
            first.setdefault(_label_type(label), (f"partition {p}, row {r}", label))
        if len(first) < 2:
            raise
        raise _mixed_labels(first["string"], first["number"]) from None
    return labels, index.ravel().astype(np.int64, copy=False)


def tally_labels(labels, index, w):
    """:func:`count_labels_of`'s tuple from :func:`label_index_of`'s ``(labels, index)`` and the
    weights ``w`` (None: every row weighs 1)."""
    k = labels.shape[0]
    counts = np.bincount(index, minlength=k)
    if w is None:
        return labels, counts, labels, counts.astype(np.float64)
    w = np.asarray(w, dtype=np.float64).ravel()
    totals = np.bincount(index, weights=w, minlength=k)
    if w.min(initial=1.0) > 0:
        return labels, counts, labels, totals
    return labels, counts, labels[np.bincount(index[w > 0], minlength=k) > 0], totals


# Integer labels (or floats of integer values) whose span (largest less smallest) is below
# COUNT_SPAN_PER_ROW times their rows, or below COUNT_SPAN_MIN, are indexed by a bincount (an array
# of the span's length): one pass over the labels, where np.unique sorts them.  On 1,000,000 labels
# of three classes: 4 ms against 38-40 ms (the first call in a process 0.30 s).
COUNT_SPAN_PER_ROW = 2
COUNT_SPAN_MIN = 1024


def _indexed_integers(y):
    """:func:`label_index_of`'s pair for integer labels ``y`` (or floats whose values are integers)
    by a bincount (:data:`COUNT_SPAN_PER_ROW`), the labels of ``y``'s dtype as :func:`numpy.unique`
    gives them; None for other labels, or a span too wide."""
    if y.dtype.kind not in "iuf" or not y.shape[0]:
        return None
    lo, hi = y.min(), y.max()
    if y.dtype.kind == "f" and not (-(2.0**53) <= lo and hi <= 2.0**53):  # beyond exact integers
        return None
    if y.dtype.kind == "u" and int(hi) > np.iinfo(np.int64).max:  # beyond the offsets' int64
        return None
    if float(hi) - float(lo) >= max(COUNT_SPAN_MIN, COUNT_SPAN_PER_ROW * y.shape[0]):
        return None
    base = int(lo)
    if y.dtype.kind == "f":
        offsets = y.astype(np.int64)
        if not np.array_equal(offsets, y):  # a fraction: np.unique's labels
            return None
        offsets -= base
    elif base == 0:  # unsigned offsets as intp: older NumPy's bincount refuses uint64
        offsets = y.astype(np.intp, copy=False) if y.dtype.kind == "u" else y
    else:
        offsets = y.astype(np.int64) - base
    present = np.bincount(offsets) > 0
    labels = (np.flatnonzero(present) + base).astype(y.dtype)
    return labels, (np.cumsum(present, dtype=np.int64) - 1)[offsets]


class UnseenClass(Exception):
    """A label outside the classes a first read trains with (:class:`LabelTally`)."""


class LabelTally:
    """The label count of a first read that trains while it counts (:func:`~..fit.fit`).

    The fit guesses the classes from the first partition with rows and
    trains on them from the first read on; the trainer calls
    :meth:`on_labels` with every block it takes, before it encodes the
    labels.  The blocks of read 0 are counted as :meth:`~.source.DaskSource.label_counts`
    counts partitions (the rows checked, skipped rows left out, rows of zero
    weight counted); a label outside the guess raises :class:`UnseenClass`,
    and the fit counts the classes again and starts over.  Other attributes
    are the wrapped ``hooks``' (the estimator's pass hooks).
    """

    def __init__(self, hooks, classes):
        self.hooks, self.classes, self.results = hooks, classes, []

    def __getattr__(self, name):
        if self.hooks is None:
            raise AttributeError(name)
        return getattr(self.hooks, name)

    def on_labels(self, pass_k, block):
        if pass_k != 0:
            return
        counted = count_labels_of(block.partition, block.y, block.sample_weight)
        if counted[0].shape[0] and not np.isin(counted[0], self.classes).all():
            raise UnseenClass
        self.results.append(counted)

    def labels(self):
        """``(classes, counts, weighted classes, totals)`` of read 0, once it is whole."""
        return merge_label_counts(self.results)


# A stream whose rows of a partition (or, in memory without shuffling, consecutive rows) differ in
# label less than this share as often as rows drawn at random is named sorted by label (OnePassSVC's and
# BudgetedSVC's warnings) (a random order: 1 in expectation; sorted by label: about 0).
SORTED_LABEL_MIX = 0.5


def partition_label_mix(label_counts):
    """How often two rows of one partition differ in label, as a share of how often two rows of the
    whole data do; ``label_counts``: every partition's ``(labels, counts, ...)``.

    Rows in a random order give 1 in expectation (the pairs of a partition are pairs drawn without
    replacement); partitions that each hold one class give 0.  None when no two rows differ.
    """
    totals, within, pairs = {}, 0.0, 0.0
    for labels, counts, *_ in label_counts:
        counts = np.asarray(counts, dtype=np.float64)
        n = counts.sum()
        within += (n * n - np.sum(counts * counts)) / 2.0
        pairs += n * (n - 1.0) / 2.0
        for label, c in zip(labels.tolist(), counts.tolist(), strict=True):
            totals[label] = totals.get(label, 0.0) + c
    N = np.array(list(totals.values()))
    differ = (N.sum() ** 2 - np.sum(N * N)) / (N.sum() * (N.sum() - 1.0)) if N.sum() > 1 else 0.0
    if differ == 0.0 or pairs == 0.0:
        return None
    return within / (pairs * differ)


def order_label_mix(index):
    """How often consecutive rows differ in label (``index``: their classes' positions in stream
    order), as a share of how often two rows drawn at random do (1 in expectation for a random order,
    about 0 when sorted by label); None when no two rows differ."""
    n = index.shape[0]
    if n < 2:
        return None
    shares = np.bincount(index) / n
    differ = (1.0 - np.sum(shares * shares)) * n / (n - 1.0)
    if differ == 0.0:
        return None
    return np.count_nonzero(index[1:] != index[:-1]) / ((n - 1) * differ)

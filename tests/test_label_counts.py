"""The count of a partition's labels (``count_labels_of``) and their index (``label_index_of``):
integer labels by a bincount, any others by ``np.unique``, the same result either way."""

import numpy as np
import pytest

from dask_streamsvm.engine.data import labels as label_counts
from dask_streamsvm.engine.data.labels import (
    COUNT_SPAN_MIN,
    COUNT_SPAN_PER_ROW,
    count_labels_of,
    label_index_of,
)


def _by_unique(y, w):
    """``count_labels_of``'s tuple by ``np.unique`` alone (what it gave before the bincount)."""
    labels, index, counts = np.unique(y, return_inverse=True, return_counts=True)
    if w is None:
        return labels, counts, labels, counts.astype(np.float64)
    totals = np.bincount(index.ravel(), weights=w, minlength=labels.shape[0])
    return labels, counts, np.unique(y[w > 0]), totals


_rng = np.random.default_rng(0)
LABELS = {
    "int64": _rng.integers(0, 3, 500),
    "negative int8": _rng.integers(-5, 3, 500).astype(np.int8),
    "uint16 with gaps": _rng.choice(np.array([2, 7, 9], dtype=np.uint16), 500),
    "uint64": _rng.integers(0, 4, 500).astype(np.uint64),
    "float64 of integers": _rng.integers(-2, 2, 500).astype(np.float64),
    "float32 of integers": _rng.integers(0, 5, 500).astype(np.float32),
    "float fractions": _rng.choice([0.5, 1.0, 2.25], 500),
    "signed zeros": np.array([-0.0, 0.0, 1.0, -0.0]),
    "floats beyond 2**53": np.array([2.0**60, 2.0**60, 1.0]),
    "a wide span": np.array([0, 10**9, 0, 5]),
    "large int64 of a narrow span": np.array([2**62, 2**62 + 1, 2**62]),
    "uint64 beyond int64": np.array([2**63, 2**63 + 1, 2**63], dtype=np.uint64),
    "bool": _rng.integers(0, 2, 500).astype(bool),
    "strings": _rng.choice(np.array(["a", "bb", "c"]), 500),
    "objects": _rng.choice(np.array(["x", "y"], dtype=object), 500),
    "one row": np.array([7]),
}


@pytest.mark.parametrize("name", list(LABELS))
@pytest.mark.parametrize("weights", ["none", "positive", "some zero", "a class all zero"])
def test_a_count_of_labels_is_np_uniques_for_every_kind_of_label(name, weights):
    y = LABELS[name]
    n = y.shape[0]
    w = {
        "none": None,
        "positive": np.random.default_rng(1).uniform(0.1, 2.0, n),
        "some zero": np.where(np.arange(n) % 3 == 0, 0.0, 1.5),
        "a class all zero": np.where(y == y[0], 0.0, 1.0),
    }[weights]
    got, expected = count_labels_of(0, y, w), _by_unique(y, w)
    parts = ("labels", "counts", "weighted", "totals")
    for part, a, b in zip(parts, got, expected, strict=True):
        assert a.dtype == b.dtype, part
        np.testing.assert_array_equal(a, b, err_msg=part)


def test_integer_labels_are_counted_by_a_bincount_within_the_span_and_by_np_unique_beyond(monkeypatch):
    """The bincount takes labels whose span (max - min) is below ``COUNT_SPAN_MIN`` or
    ``COUNT_SPAN_PER_ROW`` times the rows, whichever is more, and none beyond: its array is the span's."""
    assert (COUNT_SPAN_MIN, COUNT_SPAN_PER_ROW) == (1024, 2)
    sorted_ = []
    real_unique = np.unique

    def counting_unique(*args, **kwargs):
        sorted_.append(1)
        return real_unique(*args, **kwargs)

    monkeypatch.setattr(label_counts.np, "unique", counting_unique)

    def by_unique(y):
        sorted_.clear()
        count_labels_of(0, y, None)
        return bool(sorted_)

    assert not by_unique(np.array([0, COUNT_SPAN_MIN - 1]))  # two rows: the span's floor holds
    assert by_unique(np.array([0, COUNT_SPAN_MIN]))
    n = COUNT_SPAN_MIN  # enough rows that the rows' share is the larger bound
    span = COUNT_SPAN_PER_ROW * n
    assert not by_unique(np.r_[np.zeros(n - 1, dtype=np.int64), span - 1])
    assert by_unique(np.r_[np.zeros(n - 1, dtype=np.int64), span])
    assert by_unique(np.array([0.0, 0.5]))  # fractions sort
    assert not by_unique(np.array([3.0, 1.0, 3.0]))


def test_a_missing_or_infinite_label_is_still_an_error_naming_its_row():
    with pytest.raises(ValueError, match="partition 4, row 2: the label is infinite"):
        count_labels_of(4, np.array([0.0, 1.0, np.inf]), None)
    with pytest.raises(ValueError, match="partition 4, row 1: the label is missing"):
        count_labels_of(4, np.array([0.0, np.nan]), None)


@pytest.mark.parametrize("name", list(LABELS))
def test_a_label_index_is_np_uniques_for_every_kind_of_label(name):
    """The first read sorts a partition's labels once: its index (each row's position among the
    labels) is ``np.unique``'s inverse, by the bincount or by ``np.unique`` itself."""
    y = LABELS[name]
    labels, index = label_index_of(0, y)
    expected_labels, expected_index = np.unique(y, return_inverse=True)
    assert labels.dtype == expected_labels.dtype and index.dtype == np.int64
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_array_equal(index, expected_index.ravel())
    np.testing.assert_array_equal(labels[index], y)

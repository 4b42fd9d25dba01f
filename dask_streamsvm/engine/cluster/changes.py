"""Changes of ``W`` in CoCoA+, whole or on the few columns a part's rows touch (sparse data).

A part whose rows touch few of ``W``'s columns (:func:`touched_columns`) fetches those columns
of the broadcast ``W`` only (:func:`narrow`) and sends its change on them only
(:class:`Change`); the tree of additions adds changes on the union of their columns
(:func:`add_changes`) while it stays small, so the bytes that move between workers follow the
columns the rows touch rather than the model's width.
"""

import numpy as np


class Change:
    """A change of ``W`` on some of its columns only: ``values[:, i]`` is column ``cols[i]``'s
    (``width`` columns in all).  What a part whose rows touch few of the columns sends up
    CoCoA+'s tree, and the part of ``w`` it is sent: bytes in proportion to its columns."""

    def __init__(self, cols, values, width):
        self.cols, self.values, self.width = cols, values, int(width)

    @property
    def nbytes(self):
        return self.cols.nbytes + self.values.nbytes

    def dense(self):
        out = np.zeros((self.values.shape[0], self.width))
        out[:, self.cols] = self.values
        return out


def touched_columns(rows, bias, n_features):
    """The columns of ``W`` a part's rows touch (the bias's too), int64 and sorted; None when
    more than a third of them, where sending whole vectors costs about as much."""
    if not isinstance(rows, tuple) or len(rows) != 3:  # dense rows (or a feature map's): all
        return None
    cols = np.unique(rows[1])
    if bias != 0.0:
        cols = np.append(cols, n_features)
    cols = cols.astype(np.int64)
    return cols if 3 * cols.size <= n_features + 1 else None


def widened(W, width):
    """``W`` as a dense ``(k, width)`` array (zeros outside a :class:`Change`'s columns)."""
    return W.dense() if isinstance(W, Change) else W


def narrow(W, cols):
    """The columns ``cols`` of ``W``, as a :class:`Change` (run where ``W`` is: what the part
    whose rows touch them fetches)."""
    return Change(cols, W[:, cols], W.shape[1])


def add_changes(first, second):
    """The sum of two changes of ``W``, dense or :class:`Change`; a :class:`Change` while the
    union of their columns stays under a third of ``W``'s."""
    if isinstance(first, Change) and isinstance(second, Change):
        cols = np.union1d(first.cols, second.cols)
        if 3 * cols.size <= first.width:
            values = np.zeros((first.values.shape[0], cols.size))
            values[:, np.searchsorted(cols, first.cols)] += first.values
            values[:, np.searchsorted(cols, second.cols)] += second.values
            return Change(cols, values, first.width)
    return widened(first, None) + widened(second, None)

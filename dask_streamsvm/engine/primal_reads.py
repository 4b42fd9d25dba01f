"""The primal Newton solver's reads of a Dask source: the first read, and one read per Newton step.

:func:`first_read` is the read that counts the classes, made the primal
solver's first read; :func:`stream_read` is the ``read`` that
:func:`~.primal.solve_primal` calls on a :class:`~.source.DaskSource`.  The
sums of each block are :func:`~.primal_sums.block_sums`.
"""

from dataclasses import dataclass

import numpy as np

from ..kernels.losses import newton_terms
from .primal_sums import Sums, augmented_rows, block_sums, chunk_rows, gram, too_large
from .problem import encode_block

__all__ = ["MOMENT_BYTES", "first_read", "read_once", "stream_read"]


def read_once(source, plan, counts):
    """The blocks of one read of ``source`` with ``plan``'s reader settings; each block's rows,
    bytes, skipped rows and retries are added to ``counts`` (a :class:`Sums`) as it passes."""
    from .reader import read_blocks

    blocks = read_blocks(source, prefetch=plan.prefetch, retries=plan.retries, read_timeout=plan.read_timeout)
    for _, block in blocks:
        counts.skipped += block.n_skipped
        counts.retries += block.retries
        counts.rows += block.n_rows
        counts.bytes += block.nbytes if block.n_rows else 0
        yield block


def stream_read(source, plan, on_block=None, start=0):
    """``read`` for :func:`~.primal.solve_primal` on a :class:`~.source.DaskSource`: one read of every
    partition per call, the sums of each block added as it arrives.  ``on_block(k, block)`` is
    called for every block of read ``k`` (from ``start``).  Read 0 (``start=0``: no
    :func:`~.primal.first_read` before) checks the values (:func:`too_large`), naming the partition."""
    reads = [start]
    loss, bias, feature_map = plan.loss_code, plan.bias, plan.feature_map

    def read(W, S, todo):
        total = Sums.zeros(len(todo), W.shape[1])
        counts = Sums.zeros(0, 0)
        first = reads[0] == 0
        for block in read_once(source, plan, counts):
            if block.n_rows:
                Y, cost = encode_block(plan, block)
                where = f"partition {block.partition}: " if first else None
                total.add(block_sums(block.X, Y[todo], cost[todo], W, S, bias, loss, feature_map, where))
            if on_block is not None:
                on_block(reads[0], block)
        reads[0] += 1
        for name in ("rows", "skipped", "retries", "bytes"):
            setattr(total, name, getattr(counts, name))
        return total

    return read


# The most the first read's per-class Gram matrices may take; beyond, it only counts the labels.
MOMENT_BYTES = 256 << 20


@dataclass
class _ClassMoments:
    """Sums over one class's rows: weights, rows of positive weight, ``sum w x`` and ``sum w x x^T``."""

    weight: float
    weighted_rows: int
    first: np.ndarray
    second: np.ndarray


def first_read(source, plan, width, on_block=None):
    """The read that finds the classes, made the first Newton read: ``(labels, first)``.

    Counts the labels of every partition as :meth:`~.source.DaskSource.label_counts` does
    (``labels`` is its ``(classes, counts, weighted classes)``), and sums, per class, the weights
    and the first and second moments of its rows (with the bias, and the feature map's features).
    At ``w = 0`` every row is active with ``xi = 1``, so each problem's Newton sums there are
    combinations of these: ``first(plan)`` returns them as :class:`Sums` once ``plan`` has the
    labels (None if the classes' matrices would pass :data:`MOMENT_BYTES`; the first Newton read
    then reads again).  ``plan`` needs no labels; ``width`` is the model's width without the bias.

    The read checks the values it sums (:func:`~.primal_sums.too_large`): with ``dual=False`` a
    value the primal solver cannot train on is a ValueError naming its partition and column; with
    ``"auto"`` (the dual solvers may train) the moments are dropped, and the first Newton read,
    if there is one, refuses it.
    """
    from .source import count_labels_of, merge_label_counts

    D = width + 1
    counts, ids, moments = [], [], {}
    totals = Sums.zeros(0, D)
    for block in read_once(source, plan, totals):
        counts.append(count_labels_of(block.partition, block.y, block.sample_weight))
        ids.append(block.partition)
        if moments is not None and block.n_rows:
            moments = _add_moments(moments, block, plan, D)
        if on_block is not None:
            on_block(0, block)
    labels = merge_label_counts(counts, partitions=ids)

    def first(plan):
        if moments is None:
            return None
        k = plan.n_problems
        sums = Sums.zeros(k, D)
        for name in ("rows", "skipped", "retries", "bytes"):
            setattr(sums, name, getattr(totals, name))
        for j, label in enumerate(plan.classes.tolist()):
            m = moments[label]
            for c in range(k):
                cost = plan.costs[c, j]
                loss, factor, weight = newton_terms(plan.loss_code, cost, 1.0)  # every row's, at w = 0
                sums.loss[c] += cost * loss * m.weight
                sums.alpha[c] += factor * m.weight
                sums.v[c] += factor * plan.signs[c, j] * m.first
                sums.hessian[c] += weight * m.second
                sums.active[c] += m.weighted_rows if cost > 0 else 0
        return sums

    return labels, first


def _add_moments(moments, block, plan, D):
    """``moments`` with the block's rows added per class; None once they would pass MOMENT_BYTES,
    or at a value the primal solver cannot train on (a ValueError with ``dual=False``)."""
    labels, inverse = np.unique(np.asarray(block.y).ravel(), return_inverse=True)
    keys = labels.tolist()
    if len(set(moments) | set(keys)) * D * D * 8 > MOMENT_BYTES:
        return None
    for key in keys:
        if key not in moments:
            moments[key] = _ClassMoments(0.0, 0, np.zeros(D), np.zeros((D, D)))
    weights = block.sample_weight
    step = chunk_rows(D)
    for lo in range(0, block.n_rows, step):
        hi = min(lo + step, block.n_rows)
        Xa = augmented_rows(block.X, lo, hi, plan.bias, plan.feature_map)
        if (reason := too_large(Xa, plan.bias, plan.feature_map is not None)) is not None:
            if plan.dual is False:
                raise ValueError(f"partition {block.partition}: {reason}")
            return None
        which, w = inverse[lo:hi], weights[lo:hi]
        for j in np.unique(which):
            rows = which == j
            m, wj = moments[keys[j]], w[rows]
            m.weight += float(wj.sum())
            m.weighted_rows += int((wj > 0).sum())
            m.first += np.asarray(Xa[rows].T @ wj).ravel()
            m.second += gram(Xa[rows], wj)
    return moments

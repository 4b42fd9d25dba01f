"""Sums added in a tree on the workers.

:func:`tree_sum` adds the parts' results in pairs on the workers, ``ceil(log2 K)`` levels deep,
so that only the root's sum reaches the client: CoCoA+'s changes of ``w``
(:func:`~.cocoa.add_updates`) and the Newton solver's :class:`~..primal.sums.Sums`
(:func:`add_sums`) go up it.  :func:`fit_primal_cluster` makes every Newton step one read of
every part on its worker (:func:`part_sums`), exact as on one machine: the sums are the data's
sums.
"""

import numpy as np

from .runtime import submit


def add_sums(first, second):
    """Two parts' sums added, their bands of rows joined (:func:`~..primal.newton.band_step`): a node of
    the tree reduction, run on a worker."""
    bands = [getattr(first, "band", None), getattr(second, "band", None)]
    total = first.add(second)
    total.band = _joined_bands(*bands)
    return total


def _joined_bands(first, second):
    if first is None or second is None:
        return first if second is None else second
    from ..primal.reads import Sample, joined_pieces

    joined = []
    for a, b in zip(first, second, strict=True):
        if a is None or b is None:
            joined.append(a if b is None else b)
            continue
        pieces = [(np.zeros(x.n_rows), x.X, x.y, x.sample_weight) for x in (a, b)]
        _, X, y, w = joined_pieces(pieces)
        # The shortfalls each part's read took, where both kept them (newton.band_step subtracts
        # the band at them).
        taken = a.shortfall is not None and b.shortfall is not None
        shortfall = np.concatenate([a.shortfall, b.shortfall]) if taken else None
        # The rows either part left out: the smaller of their smallest keys (one metric for all).
        outside = min(a.outside, b.outside)
        joined.append(Sample(X, y, w, a.rows_seen + b.rows_seen, outside, a.metric, shortfall=shortfall))
    return joined


def add_softmax_sums(first, second):
    """Two parts' ``(sums, counts)`` added: a node of the tree, run on a worker."""
    first[0].add(second[0])
    for name in ("rows", "skipped", "bytes", "retries"):
        setattr(first[1], name, getattr(first[1], name) + getattr(second[1], name))
    return first


def tree_sum(client, futures, workers, add=add_sums):
    """The sum of ``futures`` (each on the worker of the same index) added in pairs on the workers
    by ``add``, ``ceil(log2 K)`` levels deep: a future of the root, on ``workers[0]``."""
    level = list(zip(futures, workers, strict=True))
    while len(level) > 1:
        paired = []
        for i in range(0, len(level) - 1, 2):
            (first, worker), (second, _) = level[i], level[i + 1]
            paired.append((submit(client, add, first, second, worker=worker), worker))
        level = paired + level[len(paired) * 2 :]  # an odd one out moves up a level as it is
    return level[0][0]

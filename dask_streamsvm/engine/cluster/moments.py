"""``feature_map=Standardize()`` on a cluster: the columns' moments read on the workers and added in
the tree, the scales learned from their sum, and parts whose reads scale their rows.

As on one machine (:func:`~..fit._fit_stream`), the scales take one read of the data: each part's
worker reads its own partitions (:func:`part_moments`, rows of weight 0 left out) into the
:class:`~dask_streamsvm.features.column_maps.ColumnMoments` of its rows, the parts' moments are
combined in pairs on the workers (:func:`~.tree.tree_sum` with :func:`add_moments`, Chan et al.'s
update, the one that combines a machine's blocks), and only their sum, ``O(d)`` numbers, reaches
the client, which learns the scales from it (:func:`learn_scaler`).  Every later read of a part
scales its rows as they are loaded (:class:`ScaledPacked`).

The result is the one machine's: the same bits where its read combines the same blocks in the same
grouping (one part, or the parts' moments combined in the tree's order), and otherwise the same
sums grouped differently: means within a few units of float64's precision ``eps``, scales within
about ``eps |mean| / std`` relative (below 1e-12 unless a column's mean is some 1e4 times its spread).
"""

from dataclasses import replace

from sklearn.base import clone

from .parts import Packed
from .runtime import cancel_check, cancelled_on_error, gather, submit, synchronous, wait
from .tree import tree_sum


def prepared_scaler(plan):
    """A copy of ``plan.scaler`` (an unfitted :class:`~dask_streamsvm.features.Standardize`) as a fit
    learns it: without an intercept (``plan.bias == 0``), ``with_mean="auto"`` does not centre."""
    scaler = clone(plan.scaler)
    if plan.bias == 0.0 and scaler.with_mean == "auto":
        scaler.set_params(with_mean=False)
    return scaler


def part_moments(packed, plan, n_features):
    """The :class:`~dask_streamsvm.features.column_maps.ColumnMoments` of one part's rows of positive
    weight (one read of its partitions, in order, on this worker).

    The part's rows are checked as a standardized fit checks them (``scaled``: their ``x . x`` is
    checked once scaled, so values whose squares overflow are learned from, not refused).
    """
    from ..data.reader import read_blocks

    stop_if_cancelled = cancel_check()  # a failed fit's read stops at the next block

    def rows(blocks):
        for _, block in blocks:
            stop_if_cancelled()
            yield block.X[block.sample_weight > 0]

    with synchronous():
        source = packed.source()
        source.scaled = True
        source.row_transform = None  # the raw rows, whatever the part was packed with
        blocks = read_blocks(
            source, prefetch=plan.prefetch, retries=plan.retries, read_timeout=plan.read_timeout
        )
        return plan.scaler.moments(rows(blocks), n_features)


def add_moments(first, second):
    """Two parts' moments combined: a node of the tree reduction, run on a worker."""
    return first.combine(second)


def learn_scaler(client, placement, plan, n_features):
    """``plan.scaler`` learned from the rows of ``placement``'s parts on their workers: ``(the fitted
    Standardize, the placement whose parts scale their rows as they read them)``.

    One read of every part (:func:`part_moments`), its moments added in the tree on the workers; a
    lost worker or a slow read raises as every cluster read does (:func:`~.runtime.gather`), and
    the read's tasks are cancelled.
    """
    scaler = prepared_scaler(plan)
    scaler.moments((), n_features)  # its parameters checked here, before any read
    task_plan = plan.replace(scaler=scaler)
    parts, workers = placement.parts, placement.workers
    with cancelled_on_error(client):  # a failed read leaves no task of it running
        futures = [
            submit(client, part_moments, packed, task_plan, n_features, worker=w) for w, packed in parts
        ]
        wait(client, futures, workers, placement.reads)
        root = tree_sum(client, futures, workers, add=add_moments)
        scaler.learn_moments(gather(client, [root], workers)[0])
    parts = [(worker, ScaledPacked(packed, scaler)) for worker, packed in placement.parts]
    return scaler, replace(placement, parts=parts)


class ScaledPacked(Packed):
    """A part's :class:`~.parts.Packed` whose source scales its rows as it loads them: the source's
    ``row_transform`` is the fitted scaler's ``scale_rows`` and its rows' ``x . x`` is checked once
    scaled, as on one machine.

    The part's pickled source is kept as it is (its bytes are not made again); the scaler travels
    with every task that reads the part, ``16 d`` bytes (``nbytes`` counts them).
    """

    def __init__(self, packed, scaler):
        self.data, self.n_partitions, self.held = packed.data, packed.n_partitions, packed.held
        self.given = None
        self.scaler = scaler

    @property
    def nbytes(self):
        return len(self.data) + self.scaler.mean_.nbytes + self.scaler.scale_.nbytes

    def source(self):
        source = super().source()
        source.scaled = True
        source.row_transform = self.scaler.scale_rows
        return source


def scaled_parts(client, source, plan, placement):
    """``(scaler, placement)``: with ``plan.scaler``, the scales learned on the workers
    (:func:`learn_scaler`) and the client's ``source`` made to scale its rows too (a part dealt
    anew from it, after a lost worker, reads scaled rows); without, ``(None, placement)``."""
    if plan.scaler is None:
        return None, placement
    scaler, placement = learn_scaler(client, placement, plan, source.n_features)
    source.scaled = True
    source.row_transform = scaler.scale_rows
    return scaler, placement

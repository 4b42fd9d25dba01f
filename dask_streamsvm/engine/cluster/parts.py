"""Data placement: which worker holds which partitions of the collection, and their labels.

The collection's partitions are split into ``K`` parts, one per worker.  Each part is a
:meth:`DaskSource.subset <dask_streamsvm.engine.data.source.DaskSource.subset>` pickled once on the
client (:class:`Packed`): it ships its partitions' *graphs* to its worker, where a task
computes them with Dask's synchronous scheduler, or, when the cluster holds the data already,
it names the futures the task gets the data from (:func:`make_parts`).  :func:`place` counts
the parts' labels on their workers, warns of parts whose label mixes differ
(:func:`skewed_parts`) and, for data read from files on every read, deals the partitions anew
so that the mixes are alike.  :class:`Placement` is what a method trains on, and its
:meth:`~Placement.record` what the user reads as ``cluster_parts_``.
"""

from dataclasses import dataclass

import numpy as np

from ..data.graphs import culled_graph
from ..data.labels import merge_label_counts
from ..plan.sizes import row_bytes, share_bytes
from .runtime import TaskInput, compute_on, gather, require_workers, submit, synchronous, wait

# Parts whose shares of a class differ by more than this are "skewed" (:func:`skewed_parts`).
SKEW = 0.25


class Packed(TaskInput):
    """A part's source, pickled once on the client: every task that reads the part gets these bytes.

    ``nbytes`` is what one task carries to its worker.  ``held``: per partition, the futures of
    its ``(x, y, w)`` (None where it has none) when the cluster holds the data (a persisted or
    in-memory collection, :func:`make_parts`); the source then carries no graph, and each task
    gets the data from Dask (``given``, on the worker).
    """

    def __init__(self, source, held=None):
        import cloudpickle

        self.data = cloudpickle.dumps(source)
        self.n_partitions = source.n_partitions
        self.held = held
        self.given = None

    @property
    def nbytes(self):
        return len(self.data)

    def source(self):
        import pickle

        source = pickle.loads(self.data)  # noqa: S301 - our own bytes, made by the client of this fit
        if self.given is not None:
            source.use_data(self.given)
        return source


def part_source(packed, prints=None):
    """``packed``'s source on this worker, its reads checked against ``prints``: the fingerprints of
    the part's first read (:func:`read_prints` of the task that made it, on this worker or on one
    since lost), or None for that first read.

    Every task unpickles a source of its own, and a source's reads are checked against its own first
    reads only (:func:`~..data.reader.source_prints`): the first read's fingerprints travel with the
    later reads' tasks, so that a partition that gives other rows stops the fit with the error of one
    machine (:meth:`~..data.fingerprint.PartitionPrints.expect`), whichever worker reads it.
    """
    from ..data.reader import source_prints

    source = packed.source()
    if prints is not None:  # after the source has its row_transform: the table of its scaled rows
        source_prints(source).expect(prints)
    return source


def read_prints(source):
    """The fingerprints of the partitions read from ``source`` so far, an ``(n, 2)`` int64 table of
    partition and value (16 bytes a partition) for :func:`part_source`."""
    from ..data.reader import source_prints

    return source_prints(source).state()


@dataclass
class Placement:
    """A cluster fit's parts: ``parts`` ``[(worker, Packed)]``, per part its partitions' numbers in
    the collection (``partitions``) and its merged label counts (``counts``), the read limits of a
    task that reads a part (``reads``, :func:`read_limits`), the warning of parts whose label
    mixes differ (``skew``, or None), and per part its partitions' positions in ``source``
    (``ids``).  Built once a fit (:func:`parts_of`) and handed to the method as a value; the
    labels counted (:func:`place`, or the parts' first read, :func:`~.newton.sampled_parts`) give a
    new one."""

    parts: list
    partitions: list
    counts: list
    reads: tuple = None
    skew: str = None
    ids: list = None

    @property
    def workers(self):
        return [worker for worker, _ in self.parts]

    @property
    def rows(self):
        """Rows per part."""
        return [int(np.sum(c[1])) for c in self.counts]

    def record(self):
        """``cluster_parts_``: per part, its worker, its partitions' numbers and its rows."""
        return [
            {"worker": worker, "partitions": list(partitions), "rows": rows}
            for worker, partitions, rows in zip(self.workers, self.partitions, self.rows, strict=True)
        ]


def parts_of(client, source, plan):
    """Who holds which partitions of ``source`` on ``client``'s workers, before any read: a
    :class:`Placement` without counts."""
    parts, part_ids = make_parts(client, source, plan.read_timeout)
    reads = read_limits(plan, source, part_ids)
    partitions = [[source.partition_id(i) for i in ids] for ids in part_ids]
    return Placement(parts, partitions, [], reads, ids=part_ids)


def place(client, source, plan, mode=None, placement=None):
    """The parts of ``placement`` (:func:`parts_of`'s; None: made here) with their labels counted on
    their workers, the labels alone read: ``(plan with its labels, Placement)``.  (The Newton steps
    and the band count them in the parts' first read, :func:`~.newton.sampled_parts`.)

    With ``mode`` (``"average"`` or ``"cocoa"``) the parts' label mixes are compared
    (:func:`skewed_parts`), and partitions read from files on every read, where a partition's
    worker does not matter, are dealt anew when the mixes differ (:func:`_mixed_parts`).
    """
    placement = parts_of(client, source, plan) if placement is None else placement
    parts, part_ids, reads = placement.parts, placement.ids, placement.reads
    counts = gather(client, [submit(client, count_labels, s, worker=w) for w, s in parts], reads=reads)
    plan = plan.with_labels(*merge_label_counts([c for part in counts for c in part]))
    part_counts = [merge_label_counts(part, allow_empty=True) for part in counts]
    skew = None
    if mode is not None:
        skew = skewed_parts(part_counts, plan.classes, [w for w, _ in parts], mode)
        if skew and not any(source.held()):  # read from files every time: deal the partitions anew
            parts, part_ids, part_counts = _mixed_parts(source, parts, part_ids, counts, plan.classes)
            skew = skewed_parts(part_counts, plan.classes, [w for w, _ in parts], mode)
            reads = read_limits(plan, source, part_ids)
    partitions = [[source.partition_id(i) for i in ids] for ids in part_ids]
    return plan, Placement(parts, partitions, part_counts, reads, skew, ids=part_ids)


def assign_parts(n_partitions, workers):
    """``[(worker, partitions)]``: part ``k`` holds partitions ``k, k + K, ...``.

    ``K`` is the number of workers, or of partitions if there are fewer.
    """
    if not workers:
        raise ValueError("the Dask cluster has no workers; start some before fitting.")
    n_parts = min(len(workers), n_partitions)
    return [(workers[k], list(range(k, n_partitions, n_parts))) for k in range(n_parts)]


def make_parts(client, source, read_timeout=None):
    """The fit's parts: ``[(worker, Packed)]`` and, per part, its partitions (this source's numbers).

    Where the cluster holds the data already (persisted: ``X.persist()``), the collection is split
    by where its partitions are (``client.who_has``): every worker trains on the partitions it
    holds, and no rows move.  Data the graph holds (``da.from_array``, ``dd.from_pandas``) is
    computed once on the workers, partition ``p`` on worker ``p mod K``; the tasks of the fit
    then take it from their worker's memory instead of carrying it.  Otherwise (files, tasks)
    partition ``p`` is read on worker ``p mod K`` every time (:func:`assign_parts`), so that the
    cluster trains on more than its memory; each of ``x``, ``y`` and the weights is treated so
    on its own (labels in memory do not pull lazy rows into memory).  ``read_timeout``: seconds
    a partition may take to compute.
    """
    workers = require_workers(client)  # no worker: the documented error, never a queue without end
    kinds = source.held()
    given = tuple(kind is not None for kind in kinds)
    if not any(given):
        assignment = assign_parts(source.n_partitions, workers)
        return [(w, Packed(source.subset(ids))) for w, ids in assignment], [ids for _, ids in assignment]
    futures = _held_futures(client, source, kinds, workers)
    flat = [(f, source.partition_id(p)) for p, part in enumerate(futures) for f in part if f is not None]
    seconds = None if read_timeout is None else read_timeout * -(-len(futures) // len(workers))
    wait(client, [f for f, _ in flat], reads=None if seconds is None else (seconds, [p for _, p in flat]))
    first = [next(f for f in part if f is not None) for part in futures]
    for part in futures:  # a partition that failed raises its error here
        for future in part:
            if future is not None and future.status == "error":
                future.result()
    n_parts = min(len(workers), len(futures))
    by_worker = {}
    who = client.who_has(first) if kinds[0] == "persisted" else {}
    for p, future in enumerate(first):
        holders = sorted(who.get(future.key) or [workers[p % n_parts]])
        by_worker.setdefault(holders[0], []).append(p)
    assignment = sorted(by_worker.items())
    parts = [(w, Packed(source.subset(ids, given), held=[futures[p] for p in ids])) for w, ids in assignment]
    return parts, [ids for _, ids in assignment]


def _held_futures(client, source, kinds, workers):
    """Per partition, futures of its ``x, y, w`` computed on the cluster where ``kinds`` (from
    :meth:`~..data.source.DaskSource.held`) says the cluster or the graph holds them (None elsewhere):
    persisted ones where they are, the others partition ``p`` on worker ``p mod K`` (its culled
    graph goes to the scheduler once).  The futures keep their graphs: Dask computes again what
    a lost worker held."""
    n_parts = min(len(workers), source.n_partitions)
    futures = []
    for p, part in enumerate(source.partitions):
        held = [d if kind is not None else None for d, kind in zip(part, kinds, strict=True)]
        culled = culled_graph(tuple(held))
        row = []
        for d, kind in zip(culled, kinds, strict=True):
            if d is None:
                row.append(None)
            elif kind == "persisted":
                row.append(client.compute(d))
            else:
                row.append(compute_on(client, d, workers[p % n_parts]))
        futures.append(tuple(row))
    return futures


def read_limits(plan, source, part_ids):
    """``reads`` for :func:`~.runtime.gather`: the seconds a part may take to read its partitions
    one after the other, and their numbers; None without ``plan.read_timeout``."""
    if plan.read_timeout is None:
        return None
    seconds = plan.read_timeout * max(len(ids) for ids in part_ids)
    return seconds, [[source.partition_id(i) for i in ids] for ids in part_ids]


def count_labels(packed):
    """Per partition of a part, ``(classes, counts, weighted classes, totals)`` (empty arrays for
    none), the labels alone read."""
    with synchronous():
        return packed.source().label_counts(allow_empty=True, merged=False)


def part_row_bytes(packed, plan):
    """Bytes per row of a part as the row cache stores them (:func:`~..plan.sizes.row_bytes`)."""
    with synchronous():
        return row_bytes(packed.source(), plan.n_problems, plan.feature_map)


def with_part_cache(client, plan, placement, rows=None):
    """``plan`` with its share of memory (``plan.cache_share``, from ``cache_bytes="10%"``) in
    bytes: the share of ``rows`` (None: the largest part's), in bytes per row measured on the first
    part's worker (one more read of its first partition with rows); ``plan`` itself without a
    share."""
    if plan.cache_share is None:
        return plan
    worker, packed = placement.parts[0]
    per_row = gather(client, [submit(client, part_row_bytes, packed, plan, worker=worker)], [worker])[0]
    rows = max(placement.rows) if rows is None else rows
    return plan.with_cache_bytes(share_bytes(plan.cache_share, rows, per_row))


def class_shares(counts, classes):
    """``(len(counts), len(classes))``: each ``(labels, counts, ...)``'s share of each class."""
    shares = np.zeros((len(counts), len(classes)))
    column = {label: j for j, label in enumerate(classes.tolist())}
    for i, (labels, n, *_) in enumerate(counts):
        total = max(int(np.sum(n)), 1)
        for label, count in zip(labels.tolist(), np.asarray(n).tolist(), strict=True):
            shares[i, column[label]] = count / total
    return shares


def skewed_parts(part_counts, classes, workers, mode):
    """The warning for parts whose label mixes differ strongly (None if they are alike): a part
    without a class that is 1% of the rows or more, or a class whose share differs by more than
    :data:`SKEW` between parts.
    Each part's model (averaging) or local steps (CoCoA+) then pull far from the others', and
    the fit needs far more rounds, or averages to a poor model."""
    if len(part_counts) < 2:
        return None
    shares = class_shares(part_counts, classes)
    spread = shares.max(axis=0) - shares.min(axis=0)
    rows = np.array([float(np.sum(c[1])) for c in part_counts])
    overall = rows @ shares / max(rows.sum(), 1.0)
    missing = (shares.min(axis=0) == 0.0) & (overall >= 0.01)
    if spread.max() <= SKEW and not missing.any():
        return None
    c = int(np.argmax(np.where(missing, np.inf, spread)))
    lo, hi = int(np.argmin(shares[:, c])), int(np.argmax(shares[:, c]))
    return (
        f"the cluster's parts hold different label mixes: class {classes[c]!r} is "
        f"{shares[lo, c]:.0%} of the rows on worker {workers[lo]} and {shares[hi, c]:.0%} on "
        f"{workers[hi]}. cluster={mode!r} then needs many more rounds or returns a worse model. "
        "Shuffle the rows before fitting (for a DataFrame: ddf.sample(frac=1, random_state=0), "
        "or sort by a random key) so that every partition mixes the classes."
    )


def _mixed_parts(source, parts, part_ids, counts, classes):
    """Parts dealt anew so that their label mixes are alike: ``(parts, part ids, part counts)``.

    The partitions, sorted by their share of the first class (ties by the next), are dealt to
    the parts back and forth (0, 1, ..., K-1, K-1, ..., 0, ...), so each part gets partitions
    from every stretch of the order.  For data read from files on every read, where a
    partition's worker does not matter."""
    workers = [w for w, _ in parts]
    ids = [p for part in part_ids for p in part]
    per_partition = [c for part in counts for c in part]
    order = np.lexsort(class_shares(per_partition, classes).T[::-1])  # by the first class's share, ...
    K = len(workers)
    dealt = [[] for _ in range(K)]
    for rank, i in enumerate(order):
        lap, slot = divmod(rank, K)
        dealt[slot if lap % 2 == 0 else K - 1 - slot].append(i)
    new_ids = [sorted(ids[i] for i in part) for part in dealt]
    new_parts = [(w, Packed(source.subset(part))) for w, part in zip(workers, new_ids, strict=True)]
    position = {p: i for i, p in enumerate(ids)}
    new_counts = [
        merge_label_counts([per_partition[position[p]] for p in part], allow_empty=True) for part in new_ids
    ]
    return new_parts, new_ids, new_counts

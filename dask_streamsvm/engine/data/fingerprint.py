"""Fingerprints of partitions: the same rows on every read, or an error naming the partition.

A multi-pass fit reads every partition many times and certifies each pass
with the loss of the rows it read.  If a later read returns other rows, or
the same rows in another order (an unordered query, files rewritten during
the fit, a resumed fit on changed data), the dual variables no longer
belong to the rows they were trained on and the certificate would describe
a problem nobody posed.  So the reader fingerprints every partition it
reads and compares the fingerprint with the first read's (or, resuming,
with the one the checkpoint saved).  The first read of the source, by any
reader: every reader of one source shares its table
(:func:`~.reader.source_prints`), so a solver whose reads are readers of
their own (the primal Newton solver's) is checked as one reader of many
passes is.  On a cluster every task makes a reader of its own, on its
part's worker or, after a lost worker, on another: the part's first read
sends its fingerprints back, and they travel with the later reads' tasks
(:meth:`PartitionPrints.expect`, :func:`~...cluster.parts.part_source`).

A fingerprint is 64 bits of BLAKE2b over the partition's row count, the
rows skipped, every label and sample weight, and the values of up to
:data:`SAMPLED_ROWS` rows spread evenly over the partition (all their
stored values and, for sparse rows, their column indices).  Labels and
weights are a few bytes per row; the sampled rows keep the cost
independent of the width of the data.  A change confined to feature values
of rows outside the sample is not seen: the fingerprint is a cheap guard
against a source that misbehaves, not a checksum of the data.
"""

import hashlib

import numpy as np
import scipy.sparse as sp

SAMPLED_ROWS = 32


def _bytes_of(values):
    values = np.asarray(values)
    if values.dtype.kind in "OUS":  # labels as strings or Python objects: hash their text
        return "\x1f".join(map(repr, values.tolist())).encode("utf-8", "surrogatepass")
    return np.ascontiguousarray(values).tobytes()


def block_fingerprint(block):
    """The fingerprint of a :class:`~.source.Block`, as a signed 64-bit integer."""
    h = hashlib.blake2b(digest_size=8)
    h.update(np.array([block.n_rows, block.n_skipped], dtype=np.int64).tobytes())
    h.update(_bytes_of(block.y))
    h.update(_bytes_of(block.sample_weight))
    n = block.n_rows
    if n:
        rows = np.unique(np.linspace(0, n - 1, min(n, SAMPLED_ROWS)).astype(np.int64))
        X = block.X
        if sp.issparse(X):
            sample = sp.csr_matrix(X[rows])
            for part in (sample.indptr, sample.indices, sample.data):
                h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(_bytes_of(np.asarray(X)[rows]))
    return int(np.frombuffer(h.digest(), dtype=np.int64)[0])


class PartitionPrints:
    """The fingerprint of every partition read so far; later reads must match.

    ``saved`` is a table of :meth:`state` from a checkpoint: the
    fingerprints of the fit that wrote it, which a resumed read must match.
    """

    def __init__(self, saved=None):
        self._prints = {}
        self._resumed = set()
        if saved is not None:
            for p, value in np.asarray(saved, dtype=np.int64).reshape(-1, 2).tolist():
                self._prints[p] = value
                self._resumed.add(p)

    def check(self, block):
        """Record ``block``'s fingerprint, or raise ValueError if its partition read differently before."""
        self._compare(block.partition, block_fingerprint(block))

    def expect(self, table):
        """Take ``table`` (another reader's :meth:`state`: the first reads of partitions, made in
        another process) as these partitions' first reads: later reads must match it, and one that
        does not raises the error of a partition that changed during the fit.  A cluster's part is
        read by a new reader on every task, possibly on another worker: its first read's
        fingerprints travel with the later reads' tasks."""
        for p, value in np.asarray(table, dtype=np.int64).reshape(-1, 2).tolist():
            self._compare(p, value)

    def _compare(self, p, value):
        known = self._prints.setdefault(p, value)
        if known == value:
            self._resumed.discard(p)
            return
        if p in self._resumed:
            raise ValueError(
                f"partition {p} is not the one the checkpoint was written on: its rows, their order or "
                "their labels differ. Resume only on the data the fit started on, or fit with "
                "resume=False (or another checkpoint_dir) to start over."
            )
        raise ValueError(
            f"partition {p} gave other rows on this read than on its first (rows, their order or their "
            "labels differ): the data changed during the fit, or the source does not return its rows "
            "in a fixed order (an unordered query, files rewritten while reading). The fit needs the "
            "same rows on every read: persist the collection or write it to Parquet first."
        )

    def state(self):
        """The fingerprints as an ``(n, 2)`` int64 table of partition and value (for checkpoints)."""
        table = sorted(self._prints.items())
        return np.array(table, dtype=np.int64).reshape(-1, 2)

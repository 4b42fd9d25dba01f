"""Global row ids of a stream, learned as its partitions are first read."""

import numpy as np


class RowIds:
    """Global row ids, learned partition by partition on the first pass.

    Partition lengths may be unknown up front (``nan`` chunks); the first
    read of a partition assigns it the next free range of ids, and later
    reads must return as many rows.
    """

    def __init__(self):
        self._offsets = {}
        self.n_rows = 0

    def ids(self, partition, n_rows):
        if partition not in self._offsets:
            self._offsets[partition] = (self.n_rows, n_rows)
            self.n_rows += n_rows
        offset, known = self._offsets[partition]
        if known != n_rows:
            raise ValueError(
                f"partition {partition} had {known} rows on the first pass and {n_rows} now; the "
                "collection must give the same rows on every read (persist it or write it to "
                "Parquet first)."
            )
        return np.arange(offset, offset + n_rows, dtype=np.int64)

    def state(self):
        """The ids learned so far, as an ``(n, 3)`` array of partition, offset, rows (for checkpoints)."""
        table = [(p, offset, n) for p, (offset, n) in sorted(self._offsets.items())]
        return np.array(table, dtype=np.int64).reshape(-1, 3)

    @classmethod
    def from_state(cls, table):
        ids = cls()
        for p, offset, n in np.asarray(table, dtype=np.int64).tolist():
            ids._offsets[p] = (offset, n)
            ids.n_rows = max(ids.n_rows, offset + n)
        return ids

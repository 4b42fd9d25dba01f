"""Checkpoints of a streaming fit: the trainer's whole state at the end of a pass.

A checkpoint is one file, ``checkpoint.zip`` in the user's
``checkpoint_dir``: NumPy arrays (``W``, every row's dual variable and the
dual's running sums, the cache's rows and per-row state slot for slot, the
random generator's state, the row ids learned on the first read, the
classes) and JSON (the pass, certificates, history, counters, and a
fingerprint of the data layout and the parameters that shape the
solution).  It is written by :func:`~dask_streamsvm._persist.write_archive`:
streamed beside the old file, flushed to disk and renamed over it, so a
crash at any moment leaves the previous checkpoint or the new one, whole.

Resuming rebuilds the trainer from the file and starts the reader at the
next pass.  Every decision of the trainers depends on the data, the seed
and row counts only, never on timing, so a resumed fit makes the same
steps as one that was never stopped and ends at the same model, bit for
bit.
"""

import json
import os
import time

import numpy as np

FORMAT = "dask-streamsvm-checkpoint"
VERSION = 1
FILE = "checkpoint.zip"


def plain(value):
    """A value as plain JSON: NumPy scalars become Python numbers."""
    return value.item() if isinstance(value, np.generic) else value


class Checkpoints:
    """Where and how often a fit writes its checkpoint.

    Parameters
    ----------
    directory : path
        Created if missing; holds :data:`FILE`.
    every : float or None
        Seconds: write at the end of the first pass that ends at least
        this long after the last checkpoint (the first pass always writes).
        None writes at the end of every pass.
    fingerprint : dict
        JSON values that must be equal for a checkpoint to be resumed: the
        data's layout and the parameters that shape the solution.
    """

    def __init__(self, directory, every, fingerprint):
        self.directory = os.fspath(directory)
        self.every = every
        self.fingerprint = json.loads(json.dumps(fingerprint))
        self.last = None
        self.written = 0

    @property
    def path(self):
        return os.path.join(self.directory, FILE)

    def due(self):
        return self.every is None or self.last is None or time.perf_counter() - self.last >= self.every

    def save(self, state, arrays):
        from .. import __version__
        from .._persist import write_archive

        os.makedirs(self.directory, exist_ok=True)
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "library_version": __version__,
            "fingerprint": self.fingerprint,
            "state": state,
        }
        write_archive(self.path, meta, arrays, compress=False)
        self.last = time.perf_counter()
        self.written += 1

    def load(self):
        """``(state, arrays)`` of the checkpoint in the directory, or None if there is none.

        A checkpoint written for other data or other parameters raises a
        ValueError naming what differs.
        """
        from .._persist import read_archive

        if not os.path.exists(self.path):
            return None
        meta, arrays = read_archive(self.path, FORMAT, VERSION, "dask_streamsvm checkpoint")
        saved = meta.get("fingerprint")
        if not isinstance(saved, dict) or not isinstance(meta.get("state"), dict):
            raise ValueError(f"{self.path}: the checkpoint lacks its fingerprint or state.")
        differ = sorted(
            k for k in set(saved) | set(self.fingerprint) if saved.get(k) != self.fingerprint.get(k)
        )
        if differ:
            detail = "; ".join(f"{k}: {saved.get(k)!r} then, {self.fingerprint.get(k)!r} now" for k in differ)
            raise ValueError(
                f"the checkpoint in {self.directory} was written by a fit with other data or parameters "
                f"({detail}). Fit with the same ones to resume, or with resume=False (or another "
                "checkpoint_dir) to start over."
            )
        self.last = time.perf_counter()
        return meta["state"], arrays

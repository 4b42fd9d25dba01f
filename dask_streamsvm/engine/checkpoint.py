"""Checkpoints of a streaming fit: the trainer's whole state at the end of a pass.

A checkpoint is one file, ``checkpoint.zip`` in the user's
``checkpoint_dir``: NumPy arrays (``W``, every row's dual variable and the
dual's running sums, the cache's rows and per-row state slot for slot, the
random generator's state, the row ids learned on the first read, the
classes) and JSON (the pass, certificates, history, counters, and a
fingerprint of the data layout and the parameters that shape the
solution).  It is an archive of :mod:`.archive`, written by
:func:`~.archive.write_archive`: streamed beside the old file, flushed to
disk and renamed over it, so a crash at any moment leaves the previous
checkpoint or the new one, whole.

Resuming rebuilds the trainer from the file and starts the reader at the
next pass.  Every decision of the trainers depends on the data, the seed
and row counts only, never on timing, so a resumed fit makes the same
steps as one that was never stopped and ends at the same model, bit for
bit.
"""

import json
import os
import time

from .archive import read_archive, write_archive

FORMAT = "dask-streamsvm-checkpoint"
VERSION = 1
FILE = "checkpoint.zip"


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
        os.makedirs(self.directory, exist_ok=True)
        meta = {"fingerprint": self.fingerprint, "state": state}
        write_archive(self.path, FORMAT, VERSION, meta, arrays, compress=False)
        self.last = time.perf_counter()
        self.written += 1

    def load(self):
        """``(state, arrays)`` of the checkpoint in the directory, or None if there is none.

        A checkpoint written for other data or other parameters raises a
        ValueError naming what differs.
        """
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


# Parameters a resumed fit may change: they steer how long it runs and what it reports, not its steps.
RESUMABLE_CHANGES = (
    "tol", "max_iter", "callbacks", "verbose", "validation_data", "prefetch", "retries", "checkpoint_dir",
    "checkpoint_every", "alpha_store", "cluster",
)  # fmt: skip


def data_fingerprint(params, source):
    """What a checkpoint must match to be resumed: the data's layout and the parameters that shape w.

    ``params`` are the estimator's (``get_params(deep=False)``); those in
    :data:`RESUMABLE_CHANGES` are left out, and values without a plain JSON
    form are compared by their ``repr``.
    """
    kept = {k: v for k, v in params.items() if k not in RESUMABLE_CHANGES}
    for name in ("random_state", "feature_map", "class_weight"):
        if name in kept:
            kept[name] = repr(kept[name])
    return {
        **kept,
        "n_partitions": source.n_partitions,
        "n_features": source.n_features,
        "dtype": str(source.dtype),
        "sparse": bool(source.is_sparse),
    }


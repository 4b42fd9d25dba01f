"""Checkpoints of a streaming fit: the trainer's whole state at the end of a pass.

A checkpoint is one file, ``checkpoint.zip`` in the user's
``checkpoint_dir``: NumPy arrays (``W``, the best certified weights so far
and their primal values, every row's dual variable and the dual's running
sums, the cache's rows and per-row state slot for slot, the random
generator's state, the row ids learned on the first read, the classes) and
JSON (the pass, certificates, history, counters, and a
fingerprint of the data layout and the parameters that shape the
solution).  It is an archive of :mod:`.archive`, written by
:func:`~.archive.write_archive`: streamed beside the old file, flushed to
disk and renamed over it, so a crash at any moment leaves the previous
checkpoint or the new one, whole.  The directory is created, and proven
writable, when the fit starts, before it reads any data.

Resuming reads the file with the checks and bounds of a model file
(:class:`~.archive.ArchiveReader`: a damaged or foreign file raises
ValueError), compares its fingerprint before reading its arrays, rebuilds
the trainer from it and starts the reader at the next pass.  Every
decision of the trainers depends on the data, the seed and row counts
only, never on timing, so a resumed fit makes the same steps as one that
was never stopped and ends at the same model, bit for bit.
"""

import hashlib
import json
import os
import time

import numpy as np

from .archive import ArchiveReader, cut, prepare_directory, write_archive

FORMAT = "dask-streamsvm-checkpoint"
VERSION = 4  # 2: the fingerprint's parameters in canonical form (:func:`canonical`), not their repr;
# 3: StreamSVM's schedule state (``piece_sweeps``, ``unsolved_rows``); 4: the best certified weights
# so far and their primal values (``best_W``, ``best_primal``), which the model returned may be
FILE = "checkpoint.zip"
WHAT = "dask_streamsvm checkpoint"


class Checkpoints:
    """Where and how often a fit writes its checkpoint.

    Parameters
    ----------
    directory : path
        Created if missing; holds :data:`FILE`.  Checked here, before the
        fit reads any data (:func:`~.archive.prepare_directory`, which checks
        ``spill_dir`` too): a path that is not a directory, or one where no
        file can be created, raises ValueError naming ``checkpoint_dir``; a
        value that is no path, TypeError.
    every : float or None
        Seconds: write at the end of the first pass that ends at least
        this long after the last checkpoint (the first pass always writes).
        None writes at the end of every pass.
    fingerprint : dict
        JSON values that must be equal for a checkpoint to be resumed: the
        data's layout and the parameters that shape the solution.
    """

    def __init__(self, directory, every, fingerprint):
        self.directory = prepare_directory(directory, "checkpoint_dir", FILE)
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
        with ArchiveReader(self.path, WHAT) as archive:
            archive.expect(FORMAT, VERSION)
            self._check_fingerprint(archive.meta)  # before the arrays are read
            state, arrays = archive.meta["state"], archive.arrays()
        self.last = time.perf_counter()
        return state, arrays

    def _check_fingerprint(self, meta):
        saved = meta.get("fingerprint")
        if not isinstance(saved, dict) or not isinstance(meta.get("state"), dict):
            raise ValueError(f"{self.path}: the checkpoint lacks its fingerprint or state.")
        saved = _with_schedule(saved, self.fingerprint)
        differ = sorted(
            k for k in set(saved) | set(self.fingerprint) if saved.get(k) != self.fingerprint.get(k)
        )
        if differ:
            detail = "; ".join(f"{k}: {saved.get(k)!r} then, {self.fingerprint.get(k)!r} now" for k in differ)
            named = ""
            if differ == ["schedule"]:  # solver="auto" chose another schedule than the one that wrote it
                named = f" (solver={saved['schedule']!r} names the schedule that wrote it)"
            raise ValueError(
                f"the checkpoint in {self.directory} was written by a fit with other data or parameters "
                f"({cut(detail)}). Fit with the same ones to resume{named}, or with resume=False (or "
                "another checkpoint_dir) to start over."
            )


# Parameters a resumed fit may change: they steer how long it runs and what it reports, not its steps;
# and "solver", whose schedule the fingerprint holds ("schedule"): "auto" and the schedule it chose
# take the same steps (a checkpoint is a streaming schedule's, engine/choice.py: place).
RESUMABLE_CHANGES = (
    "tol", "max_iter", "callbacks", "verbose", "validation_data", "prefetch", "retries", "checkpoint_dir",
    "checkpoint_every", "alpha_store", "cluster", "read_timeout", "spill", "spill_dir", "solver",
)  # fmt: skip
# The schedules a checkpoint names (``schedule``; plan.problem.STREAMING_SOLVERS, which the store's
# room may not import: tests/test_layers.py), and the one "auto" streamed before the fingerprint held
# it (2026-12-02): a file written then names its schedule by its solver alone.
SCHEDULES = ("streamsvm", "sbm", "bm")
EARLIER_AUTO_SCHEDULE = SCHEDULES[0]


def _with_schedule(saved, now):
    """The fingerprint ``saved`` as it is compared with ``now``: its schedule (its own, or the one its
    solver then decided) where ``now`` names one, and its solver's name only where ``now`` has one."""
    saved = dict(saved)
    solver = saved.get("solver") if "solver" in now else saved.pop("solver", None)
    if "schedule" in now and "schedule" not in saved:
        saved["schedule"] = solver if solver in SCHEDULES else EARLIER_AUTO_SCHEDULE
    return saved


def data_fingerprint(params, source):
    """What a checkpoint must match to be resumed: the data's layout and the parameters that shape w.

    ``params`` are the estimator's (``get_params(deep=False)``); those in
    :data:`RESUMABLE_CHANGES` are left out, and the others are compared in
    :func:`canonical` form, so that equal values written differently (a
    dict's keys in another order, a NumPy scalar for a number) match.
    """
    kept = {k: canonical(v) for k, v in params.items() if k not in RESUMABLE_CHANGES}
    return {
        **kept,
        "n_partitions": source.n_partitions,
        "n_features": source.n_features,
        "dtype": str(source.dtype),
        "sparse": bool(source.is_sparse),
    }


def canonical(value):
    """A JSON form of a parameter value that equal values share however they are written.

    NumPy scalars and arrays become Python numbers and lists; a dict
    becomes ``{"dict": [[key, value], ...]}`` sorted by key; a feature map
    (anything with ``get_params``) ``{class name: its parameters}``; a
    ``RandomState`` a digest of its state (a generator in the same state
    draws the same seeds); anything else its ``repr``.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {"dict": sorted(([canonical(k), canonical(v)] for k, v in value.items()), key=_key_order)}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return canonical(value.tolist())
    if isinstance(value, np.random.RandomState):
        state = json.dumps(canonical(value.get_state(legacy=False)), sort_keys=True)
        return {"RandomState": hashlib.sha256(state.encode()).hexdigest()}
    if hasattr(value, "get_params"):
        return {type(value).__name__: canonical(value.get_params(deep=False))}
    return repr(value)


def _key_order(pair):
    """Sort key of a canonical ``[key, value]`` pair: numbers, then strings, then anything else."""
    key = pair[0]
    if isinstance(key, int | float):
        return (0, key, "")
    if isinstance(key, str):
        return (1, 0, key)
    return (2, 0, json.dumps(key, sort_keys=True))

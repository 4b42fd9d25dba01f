"""Data changes: a partition whose rows are not the same from one read to the next, or not those a
checkpoint was written on.  A fit that returns a model after a changed read is a false certificate.

- ``changed-between-reads``: from a random read after the first training
  read on, a random partition returns its rows in another order, with some
  labels flipped, or with its values scaled.  Checked: a ValueError naming
  the partition.
- ``changed-under-resume``: a fit with ``checkpoint_dir`` stops unconverged
  after 1 to 3 passes; resumed on data whose random partition has some
  labels flipped or its rows reordered, it must refuse, naming the
  partition; resumed on the same data (the control), it must reach the
  uninterrupted fit's model bit for bit.
- ``changed-between-primal-reads``: ``dual=False`` (the primal Newton solver), a random partition
  changed from a random read after the first on (as ``changed-between-reads``, or its odd rows
  scaled 5x with their labels kept, the issue's trial).  Expected: the ValueError naming the
  partition that the dual solvers raise.
"""

import re
import warnings

import numpy as np

from benchmarks.reliability.common import (
    N_PARTS,
    PART_ROWS,
    attempt,
    changing_collection,
    chunked,
    data,
    fit_solver,
    params,
    vector,
)

CHANGES = ("reorder rows", "flip labels", "scale values")


def _some_rows(rng):
    """1 to a quarter of a partition's row numbers, at random."""
    return rng.choice(PART_ROWS, size=rng.randint(1, PART_ROWS // 4 + 1), replace=False)


def changed_partition_trial(rng, changes, reads, fit, solver):
    """A random partition changes (one of ``changes``) from a random read in ``range(*reads)`` on;
    ``fit(data)`` must stop with the error naming it.  The trial's record."""
    target, from_read = int(rng.randint(N_PARTS)), int(rng.randint(*reads))
    change = changes[rng.randint(len(changes))]
    order = rng.permutation(PART_ROWS)
    flipped = _some_rows(rng)
    factor = rng.uniform(0.5, 2.0)
    served = []

    def changed(i, read, rows, labels):
        if i != target or read < from_read:
            return rows, labels
        served.append(read)
        if change == "reorder rows":
            return rows[order], labels[order]
        if change == "flip labels":
            labels[flipped] = 1 - labels[flipped]
            return rows, labels
        if change == "scale odd rows 5x":
            rows[1::2] *= 5.0
            return rows, labels
        return rows * factor, labels

    outcome, message, _ = attempt(lambda: fit(changing_collection(changed)))
    pattern = rf"partition {target} gave other rows on this read than on its first"
    return {
        "solver": solver, "partition": target, "from_read": from_read, "change": change,
        "changed_reads": len(served), "outcome": outcome,
        "detected": outcome == "ValueError" and bool(re.search(pattern, message)),
        "false_certificate": outcome == "returned" and bool(served), "message": (message or "")[:300],
    }  # fmt: skip


def trial_changed_between_reads(rng, solver):
    """From a random read after the first pass's (read 1) on, a random partition changes."""
    return changed_partition_trial(rng, CHANGES, (2, 5), lambda data: fit_solver(solver, data), solver)


def trial_changed_under_resume(rng, solver, reference, work):
    from sklearn.exceptions import ConvergenceWarning

    from dask_streamsvm import LinearSVC

    X, y = data()
    stop_after, target = int(rng.randint(1, 4)), int(rng.randint(N_PARTS))
    change = ("flip labels", "reorder rows")[rng.randint(2)]
    X2, y2 = X.copy(), y.copy()
    if change == "flip labels":
        flipped = target * PART_ROWS + _some_rows(rng)
        y2[flipped] = 1 - y2[flipped]
    else:
        order = target * PART_ROWS + rng.permutation(PART_ROWS)
        rows = slice(target * PART_ROWS, (target + 1) * PART_ROWS)
        X2[rows], y2[rows] = X[order], y[order]
    checkpoint = work / "ck"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = LinearSVC(**{**params(solver), "max_iter": stop_after}, checkpoint_dir=checkpoint)
        first.fit(*chunked(X, y))
    unconverged = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    checkpointed = (checkpoint / "checkpoint.zip").exists()
    resumed = dict(checkpoint_dir=checkpoint, resume=True)
    outcome, message, _ = attempt(lambda: fit_solver(solver, chunked(X2, y2), **resumed))
    pattern = rf"partition {target} is not the one the checkpoint was written on"
    control, control_message, model = attempt(lambda: fit_solver(solver, chunked(X, y), **resumed))
    return {
        "solver": solver, "stopped_after": stop_after, "unconverged": unconverged,
        "checkpointed": checkpointed, "partition": target, "change": change, "outcome": outcome,
        "refused": outcome == "ValueError" and bool(re.search(pattern, message)),
        "message": (message or "")[:300], "control_outcome": control,
        "control_same": model is not None and bool(np.array_equal(vector(model), reference)),
        "control_message": (control_message or "")[:300],
    }  # fmt: skip


PRIMAL_CHANGES = (*CHANGES, "scale odd rows 5x")  # the last: the trial (odd rows, labels kept)


def trial_changed_between_primal_reads(rng, solver):
    """``dual=False``: from a random read after the first on (read 0 counts the classes and is the
    first Newton read), a random partition changes; the primal solver must stop as the dual ones do."""
    fit = lambda data: fit_solver("auto", data, dual=False)  # noqa: E731
    return changed_partition_trial(rng, PRIMAL_CHANGES, (1, 4), fit, "primal")

"""Reads: a partition's read fails, for a while, for good, by hanging, or in the middle of a refit.

- ``transient``: random partitions fail with OSError 1 or 2 times on random
  passes.  Checked: the model is the fault-free one, and ``read_retries``
  counts every failure.
- ``permanent``: a random partition raises on a random pass.  Checked: the
  original exception reaches the caller, how long after the fault, and no
  reader thread or temporary file (``alpha_store="disk"``) is left.
- ``hung``: a random partition's read blocks, from a random read on (the
  label count's or a training pass's), until the trial releases it; the fit
  has ``read_timeout=0.5``.  Checked: a TimeoutError naming the partition,
  raised while the read was still blocked, and how long after the timeout
  (counted from the start of the hung read); no reader thread left, and the
  threads computing the hung read gone once it is released.
- ``failed-refit``: a fitted model is refitted on other data (other classes,
  another width, both, or three classes) and a random partition raises on a
  random read.  Checked: the exception reaches the caller, every fitted
  attribute (``*_``) is the same object as before and predictions are
  unchanged.
"""

import re
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.reliability.common import (
    N_PARTS,
    attempt,
    changing_collection,
    chunked,
    data,
    fit_solver,
    reader_threads,
    vector,
)


def trial_transient(rng, solver, reference):
    plan = {}
    for p in rng.choice(N_PARTS, size=rng.randint(1, 4), replace=False):
        plan[(int(rng.randint(0, 3)), int(p))] = int(rng.randint(1, 3))  # (read of the partition, failures)
    reads, failed, injected = {}, {}, {"n": 0}
    lock = threading.Lock()

    def flaky(i, rows):
        with lock:
            k = reads.get(i, 0)  # the how-manieth successful read of partition i this is
            if failed.get((k, i), 0) < plan.get((k, i), 0):
                failed[(k, i)] = failed.get((k, i), 0) + 1
                injected["n"] += 1
                raise OSError(5, f"I/O error reading partition {i}")
            reads[i] = k + 1
        return rows

    model = fit_solver(solver, read=flaky, retries=2)
    counted = model.history_[-1]["read_retries"]
    return {
        "solver": solver, "faults": injected["n"], "counted": counted,
        "same": bool(np.array_equal(vector(model), reference)),
    }  # fmt: skip


class InjectedFault(RuntimeError):
    pass


def trial_permanent(rng, solver):
    target, on_read = int(rng.randint(N_PARTS)), int(rng.randint(0, 3))
    reads, fault = {}, {}
    lock = threading.Lock()

    def failing(i, rows):
        with lock:
            k = reads.get(i, 0)
            reads[i] = k + 1
        if i == target and k == on_read:
            fault["at"] = time.perf_counter()
            raise InjectedFault(f"partition {i}, read {k}")
        return rows

    temp = Path(tempfile.mkdtemp(prefix="bench-reliability-"))
    old, tempfile.tempdir = tempfile.tempdir, str(temp)
    raised = None
    try:
        fit_solver(solver, read=failing, alpha_store="disk")
    except InjectedFault as exc:
        raised = exc
    finally:
        tempfile.tempdir = old
    ended = time.perf_counter()
    left = list(temp.iterdir())
    temp.rmdir() if not left else None
    return {
        "solver": solver, "partition": target, "read": on_read, "reached": "at" in fault,
        "original_error": raised is not None, "latency_s": ended - fault["at"] if "at" in fault else None,
        "reader_threads_left": reader_threads(), "temp_files_left": len(left),
    }  # fmt: skip


READ_TIMEOUT = 0.5  # seconds, for the hung-read trials


def trial_hung(rng, solver):
    target, on_read = int(rng.randint(N_PARTS)), int(rng.randint(0, 4))  # read 0: the label count
    release, hung = threading.Event(), {"blocked": False}

    def hang(i, read, rows, labels):
        if i == target and read >= on_read:
            hung.setdefault("at", time.perf_counter())
            hung["blocked"] = True
            try:
                release.wait(120)  # released by the trial once the fit is over
            finally:
                hung["blocked"] = False
        return rows, labels

    try:
        outcome, message, _ = attempt(
            lambda: fit_solver(solver, changing_collection(hang), read_timeout=READ_TIMEOUT), TimeoutError
        )
        ended, blocked = time.perf_counter(), hung["blocked"]
        readers = reader_threads()  # before the release: no reader may be left waiting for the read
    finally:
        release.set()
    named, during = False, None
    if outcome == "TimeoutError":
        one = re.search(r"partition (\d+) was not read within read_timeout", message)
        some = re.search(r"partition\(s\) ([\d, .]+) were not read within read_timeout", message)
        named = bool(one and int(one[1]) == target) or bool(
            some and str(target) in re.findall(r"\d+", some[1])
        )
        during = "label count" if some else "training pass" if one else None
    return {
        "solver": solver, "partition": target, "read": on_read, "reached": "at" in hung,
        "outcome": outcome, "named": named, "during": during, "returned_while_blocked": blocked,
        "after_timeout_s": ended - hung["at"] - READ_TIMEOUT if "at" in hung else None,
        "reader_threads_left": readers, "read_threads_left": reader_threads("dask-streamsvm-read"),
        "message": (message or "")[:300],
    }  # fmt: skip


REFITS = ("other classes", "other width", "both", "three classes")


def trial_failed_refit(rng, solver):
    X, y = data()
    model = fit_solver(solver, chunked(X, y))
    before = {k: v for k, v in vars(model).items() if k.endswith("_")}
    predicted = model.predict(X)
    change = REFITS[rng.randint(len(REFITS))]
    X2, y2 = X, y
    if change in ("other width", "both"):
        X2 = np.hstack([X, rng.randn(len(y), rng.randint(1, 4))])
    if change in ("other classes", "both"):
        y2 = y + 5
    if change == "three classes":
        y2 = y + (X[:, 0] > 0.5)
    target, on_read = int(rng.randint(N_PARTS)), int(rng.randint(0, 3))  # read 0: the label count
    reached = []

    def failing(i, read, rows, labels):
        if i == target and read == on_read:
            reached.append(read)
            raise InjectedFault(f"partition {i}, read {read}")
        return rows, labels

    outcome, message, _ = attempt(lambda: model.fit(*changing_collection(failing, X2, y2)), InjectedFault)
    added = sorted(k for k in vars(model) if k.endswith("_") and k not in before)
    replaced = sorted(k for k, v in before.items() if getattr(model, k, None) is not v) + added
    try:
        same_predictions = bool(np.array_equal(model.predict(X), predicted))
    except Exception:  # noqa: BLE001 - a model that cannot predict its old data is a mixed one
        same_predictions = False
    return {
        "solver": solver, "change": change, "partition": target, "read": on_read, "reached": bool(reached),
        "outcome": outcome, "attributes_replaced": replaced, "same_predictions": same_predictions,
        "message": (message or "")[:300],
    }  # fmt: skip

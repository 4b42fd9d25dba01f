"""Inputs: data that a fit must refuse, at once and naming where the fault is.

- ``bad-value``: a NaN, an infinity or a negative weight at a random row.
  Checked: the error names that partition and row; with
  ``on_invalid="skip"`` the row is dropped and counted.
- ``bad-csr``: a CSR matrix with one flaw at a random row (a column index
  negative or >= n_features, indptr decreasing, indptr[-1] past the
  entries), given in memory to ``LinearSVC().fit`` and, as one partition of
  a Dask Array, to ``LinearSVC(solver="sbm").fit``.  Each fit runs in a
  child process of its own (under a memory limit), so that a crash is seen
  as a signal.  Expected: a ValueError, which for Dask names the partition
  and row; "accepted" is a model fitted on corrupt data.
- ``fifo-input``: a FIFO with no writer, named ``.csv`` or ``.svm``, as the data input of
  ``LinearSVC().fit(path)`` or of ``dask-streamsvm train``, ``predict`` or ``evaluate``, each in a
  child process killed after :data:`FIFO_TIMEOUT` s.  Expected: refused at once (a ValueError, or
  exit status 2) naming the FIFO; "hang" is a child killed.
"""

import json
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np

from benchmarks._common import ROOT
from benchmarks.reliability.common import (
    N_FEATURES,
    PART_ROWS,
    attempt,
    chunked,
    data,
    fit_solver,
    how_ended,
    in_child,
    limit_memory,
    params,
)


def trial_bad_value(rng, solver):
    import dask.array as da

    from dask_streamsvm import LinearSVC

    X, y = data()
    w = np.ones(len(y))
    row, col = int(rng.randint(len(y))), int(rng.randint(N_FEATURES))
    kind = ["nan", "inf", "weight"][rng.randint(3)]
    if kind == "weight":
        w[row] = -1.0
    else:
        X[row, col] = np.nan if kind == "nan" else np.inf
    chunks = PART_ROWS
    args = (da.from_array(X, chunks=chunks), da.from_array(y, chunks=chunks), da.from_array(w, chunks=chunks))
    p, r = divmod(row, PART_ROWS)
    named = False
    try:
        LinearSVC(**params(solver)).fit(*args)
    except ValueError as exc:
        named = bool(re.search(rf"partition {p}, row {r} \(row {row} of the collection\)", str(exc)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearSVC(**params(solver), on_invalid="skip").fit(*args)
    return {"solver": solver, "kind": kind, "named": named, "skipped": model.history_[0]["rows_skipped"]}


# Bad CSR matrices: each fit in a child process, which imports this module and calls fit_bad_csr.
CSR_PARTS, CSR_ROWS, CSR_FEATURES = 4, 50, 20
CSR_FLAWS = {  # flaw: the values it may take (an index, the amount indptr drops, the excess over nnz)
    "negative index": (-1, -2, -(2**31), -(2**40)),
    "index >= n_features": (CSR_FEATURES, CSR_FEATURES + 1, 2**31 - 1, 2**40),
    "indptr decreasing": (1, 2, 3),
    "indptr[-1] > nnz": (1, 7, 2**40),
}


def sparse_data(seed):
    """A CSR matrix of ``CSR_PARTS * CSR_ROWS`` rows, each with an entry to break, and labels."""
    import scipy.sparse as sp

    rng = np.random.RandomState(seed)
    n = CSR_PARTS * CSR_ROWS
    dense = rng.randn(n, CSR_FEATURES) * (rng.rand(n, CSR_FEATURES) < 0.3)
    dense[np.arange(n), np.arange(n) % CSR_FEATURES] = 1.0 + rng.rand(n)
    return sp.csr_matrix(dense), (dense @ rng.randn(CSR_FEATURES) > 0).astype(np.int64)


def corrupt_csr(X, flaw, row, value, entry):
    """``X`` (CSR, changed in place) with ``flaw`` in ``row`` (``indptr[-1] > nnz``: the last row)."""
    wide = not -(2**31) <= value < 2**31 - 8
    indptr = X.indptr.astype(np.int64 if wide else X.indptr.dtype)
    indices = X.indices.astype(np.int64 if wide else X.indices.dtype)
    if flaw in ("negative index", "index >= n_features"):
        start, stop = indptr[row], indptr[row + 1]
        indices[start + entry % (stop - start)] = value
    elif flaw == "indptr decreasing":
        indptr[row + 1] = indptr[row] - value  # the row has a negative length
    else:
        indptr[-1] = indices.shape[0] + value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X.indptr, X.indices = indptr, indices
    return X


def fit_bad_csr(spec):
    """In a child process: fit on the matrix ``spec`` describes; print the outcome as a JSON line."""
    import dask
    import dask.array as da
    import scipy.sparse as sp

    from dask_streamsvm import LinearSVC

    spec = json.loads(spec)
    X, y = sparse_data(spec["seed"])
    flaw, p, value, entry = spec["flaw"], spec["partition"], spec["value"], spec["entry"]
    last = flaw == "indptr[-1] > nnz"
    settings = dict(max_iter=20, tol=1e-3, random_state=0)
    if spec["mode"] == "memory":
        row = X.shape[0] - 1 if last else p * CSR_ROWS + spec["row"]
        args, model = (corrupt_csr(X, flaw, row, value, entry), y), LinearSVC(**settings)
        where = rf"\brow {row}\b"
    else:
        row = CSR_ROWS - 1 if last else spec["row"]
        parts = [X[i * CSR_ROWS : (i + 1) * CSR_ROWS] for i in range(CSR_PARTS)]
        parts[p] = corrupt_csr(parts[p], flaw, row, value, entry)
        meta = sp.csr_matrix((0, CSR_FEATURES))
        blocks = [da.from_delayed(dask.delayed(q), shape=q.shape, dtype=q.dtype, meta=meta) for q in parts]
        args = da.concatenate(blocks), da.from_array(y, chunks=CSR_ROWS)
        model = LinearSVC(solver=spec["solver"], cache_bytes=30_000, inner_iter=3, **settings)
        where = rf"\bpartition {p}\b.*\brow {row}\b"
    limit_memory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome, message, _ = attempt(lambda: model.fit(*args))
    outcome = "accepted" if outcome == "returned" else outcome
    named = outcome == "ValueError" and bool(re.search(where, message))
    print(json.dumps({"outcome": outcome, "named": named, "message": (message or "")[:300]}), flush=True)


def trial_bad_csr(rng, solver):
    flaw = sorted(CSR_FLAWS)[rng.randint(len(CSR_FLAWS))]
    spec = {
        "seed": int(rng.randint(2**31)), "flaw": flaw, "partition": int(rng.randint(CSR_PARTS)),
        "row": int(rng.randint(CSR_ROWS - 1)), "entry": int(rng.randint(2**31)),
        "value": int(CSR_FLAWS[flaw][rng.randint(len(CSR_FLAWS[flaw]))]), "solver": solver,
    }  # fmt: skip
    record = dict(spec)
    for mode in ("memory", "dask"):
        returncode, out, err = in_child(fit_bad_csr, json.dumps({**spec, "mode": mode}), timeout=300)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        record[mode] = json.loads(lines[-1]) if lines else {"outcome": how_ended(returncode), "message": err}
    return record


FIFO_TIMEOUT = 30  # seconds a child reading a FIFO has before it counts as hung
FIFO_USES = ("fit(path)", "train", "predict", "evaluate")


def fit_path(path):
    """In a child process: ``LinearSVC().fit(path, ...)``; print the outcome as a JSON line."""
    from dask_streamsvm import LinearSVC

    label = "label" if path.endswith(".csv") else None
    outcome, message, _ = attempt(lambda: LinearSVC(max_iter=5).fit(path, label))
    print(json.dumps({"outcome": outcome, "message": (message or "")[:300]}), flush=True)


def _fifo_model(work):
    """A model file the CLI can predict and evaluate with, trained on :func:`data` as a table."""
    from dask_streamsvm import LinearSVC

    X, y = data()
    model = fit_solver("sbm", chunked(X, y))
    path = work / "trained.model"
    LinearSVC.save(model, path)
    return path


def trial_fifo_input(rng, solver, work):
    """A FIFO (no writer) as the data input of ``fit(path)`` or a command: it must be refused at
    once, naming the path; a child process that has not returned after ``FIFO_TIMEOUT`` s hangs."""
    use = FIFO_USES[rng.randint(len(FIFO_USES))]
    fmt = ("csv", "svm")[rng.randint(2)]
    fifo = work / f"data.{fmt}"
    os.mkfifo(fifo)
    label = ["--label", "label"] if fmt == "csv" else []
    start = time.perf_counter()
    if use == "fit(path)":
        returncode, out, err = in_child(fit_path, str(fifo), timeout=FIFO_TIMEOUT)
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        result = lines[0] if lines else {"outcome": how_ended(returncode), "message": err}
    else:
        model = _fifo_model(work) if use != "train" else None
        argv = {
            "train": ["train", fifo, *label, "--model", work / "new.model", "--quiet"],
            "predict": ["predict", model, fifo, "--out", work / "predictions.csv"],
            "evaluate": ["evaluate", model, fifo, *label],
        }[use]
        command = [sys.executable, "-m", "dask_streamsvm", *map(str, argv)]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=FIFO_TIMEOUT, env=env)
            status = "usage error (exit 2)" if done.returncode == 2 else how_ended(done.returncode)
            result = {"outcome": status, "message": done.stderr.strip()[-300:]}
        except subprocess.TimeoutExpired:
            result = {"outcome": how_ended(None), "message": ""}
    seconds = time.perf_counter() - start
    named = str(fifo) in result["message"] or fifo.name in result["message"]
    refused = result["outcome"] in ("ValueError", "usage error (exit 2)") and named
    fifo.unlink()
    return {"use": use, "format": fmt, "seconds": seconds, "refused": refused, "named": named, **result}

"""How much StreamSVM's asynchronous trainer sweeps while its reader has nothing new (issue 51).

The asynchronous trainer (``LinearSVC(solver="streamsvm")``, the default
``deterministic=False``) sweeps its cache while the reader computes the next
partitions.  Sweeps of a cache that has not changed since it was solved
teach it nothing; on 2 cores they take the core the reader needs.  This
script measures the work per read in two cases, each fit in a fresh
interpreter (``_common.run_child``) after a small warm-up fit of the same
kind, so that compiling is not counted:

``sweeps_waiting`` counts the sweeps after which the reader had nothing
ready (any sweep, the ones a solve needs too); ``sweeps_idle`` the sweeps
made only because the reader had nothing ready (the asynchronous
schedule's own, ``IDLE_SWEEPS`` at most between two solves of the cache in
:mod:`dask_streamsvm.engine.dual.streamsvm`).

* ``a9a``: the a9a LIBSVM file cut into ``--partitions`` (200) row blocks
  (:func:`dask_streamsvm.io.csr_to_dask`), a cache of ``--a9a-cache`` (1%)
  of its bytes as the row memory counts them
  (:func:`benchmarks.bench_schedules.row_memory_bytes`), L1 loss, C = 1, no
  intercept, tol 1e-3: sweeps, sweeps made while the reader had nothing
  ready, row visits, reads and fit seconds;
* ``tall``: a dense 2M x 60 float32 Parquet set (``--tall-rows``,
  :func:`benchmarks.bench_primal.synthetic`, 20 files, written once under
  ``--workdir``), cache 10%, squared hinge, C = 0.01, one training read
  (``max_iter=1``): row visits per row in the first read (the first
  record's ``row_visits`` over the rows);
* ``tall-fit``: the same fit to tol 1e-3 (``max_iter=30``): reads, row
  visits and seconds to the certificate;
* ``tall-memory``: the in-memory dual solver (``solver="memory"``,
  LIBLINEAR's DCD with the same certificate) on the same rows, read into
  RAM first (not timed), to tol 1e-3;
* ``read``: one plain Dask read of the tall set, first and best of two
  (``bench_process``'s read child), the unit the fits are quoted in.

Each case runs in each ``--busy`` condition: beside that many busy
processes (``python -c "while True: pass"``, started a second before the
child and stopped after it).  Run ``python -m benchmarks.bench_trainer_wait
[--cases a9a,tall,tall-fit] [--busy 0,1]``; the results, with the load
(``os.getloadavg``) before and after each fit, go to ``--out``
(``benchmarks/results/trainer_wait.json``).  The trainer before issue 51's
rhythm is measured by running this file against that commit's package
(``PYTHONPATH`` of a worktree at 432922e), with ``--out`` elsewhere.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._common import ROOT, machine, payload_header, run_child, save_json

RESULTS = ROOT / "benchmarks" / "results" / "trainer_wait.json"
KEYS = (
    "row_visits",
    "sweeps",
    "sweeps_waiting",
    "visits_waiting",
    "sweeps_idle",
    "visits_idle",
    "trainer_wait_s",
)


def _a9a(spec):
    import numpy as np

    from benchmarks.bench_schedules import load_libsvm, row_memory_bytes
    from dask_streamsvm.io import csr_to_dask

    X, y = load_libsvm("a9a")
    if spec.get("rows"):
        X, y = X[: spec["rows"]], y[: spec["rows"]]
    nbytes = row_memory_bytes(X.shape[0], X.nnz, X.shape[1], X.dtype.itemsize, sparse=True)
    X_dask, y_dask = csr_to_dask(X, y.astype(np.float64), spec["partitions"])
    return X_dask, y_dask, X.shape[0], int(spec["cache"] * nbytes)


def _tall(spec):
    import dask.dataframe as dd

    frame = dd.read_parquet(spec["path"])
    return frame, "label", spec["rows"], "10%"  # fit(frame, "label"): its partitions stay whole


def child_memory(spec):
    """The in-memory dual solver on the tall set's rows (read first, not timed), to tol 1e-3."""
    from benchmarks.bench_primal import read_parquet_rows
    from dask_streamsvm import LinearSVC

    X, y = read_parquet_rows(spec["path"])
    params = {"C": 0.01, "tol": 1e-3, "dual": True, "solver": "memory", "fit_intercept": False}
    params["random_state"] = 0
    LinearSVC(**params).fit(X[:2000], y[:2000])  # the kernels loaded
    load = os.getloadavg()[0]
    start = time.perf_counter()
    clf = LinearSVC(**params).fit(X, y)
    return {"case": spec["case"], "busy": spec.get("busy", 0), "load_before": load,
            "load_after": os.getloadavg()[0], "fit_seconds": time.perf_counter() - start,
            "gap": float(clf.duality_gap_)}  # fmt: skip


def child_fit(spec):
    """One fit of ``spec["case"]``: the history's counters, reads and seconds (warm kernels)."""
    import warnings

    from dask_streamsvm import LinearSVC

    case = {"a9a": _a9a, "tall": _tall, "tall-fit": _tall}[spec["case"]]
    params = {
        "a9a": {"C": 1.0, "loss": "hinge", "tol": 1e-3, "max_iter": 50},
        "tall": {"C": 0.01, "loss": "squared_hinge", "tol": 1e-3, "max_iter": 1},
        "tall-fit": {"C": 0.01, "loss": "squared_hinge", "tol": 1e-3, "max_iter": 30},
    }[spec["case"]]
    common = {"solver": "streamsvm", "fit_intercept": False, "random_state": 0, **params}
    X, y, n_rows, cache = case(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tall fit stops after one read, unconverged
        # Compiles the kernels of the same layout on a few partitions.
        warm = {**spec, "rows": 3000} if spec["case"] == "a9a" else None
        if warm is not None:
            Xw, yw, _, cw = _a9a(warm)
            LinearSVC(cache_bytes=cw, **{**common, "max_iter": 2}).fit(Xw, yw)
        else:
            LinearSVC(cache_bytes=cache, **{**common, "max_iter": 1}).fit(X.partitions[:2], y)
        load = os.getloadavg()[0]
        start = time.perf_counter()
        clf = LinearSVC(cache_bytes=cache, **common).fit(X, y)
        seconds = time.perf_counter() - start
    h = clf.history_
    first, last = h[0], h[-1]
    return {
        "case": spec["case"],
        "busy": spec.get("busy", 0),
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "fit_seconds": seconds,
        "passes": last["pass"],
        "reads": last["rows_read"] / n_rows,
        "gap": last["gap"],
        "first_read": {key: first.get(key) for key in KEYS},
        "first_read_visits_per_row": first["row_visits"] / n_rows,
        "final": {key: last.get(key) for key in KEYS},
        "visits_per_row": last["row_visits"] / n_rows,
        "waiting_share": last["sweeps_waiting"] / max(last["sweeps"], 1),
        "idle_share": (last.get("sweeps_idle") or 0) / max(last["sweeps"], 1),  # None before issue 51
    }


def tall_set(workdir, rows):
    """The tall Parquet set under ``workdir`` (written once)."""
    from benchmarks.bench_primal import synthetic, write_parquet

    path = Path(workdir) / f"tall-{rows}x60"
    if not (path / "part-00019.parquet").exists():
        X, y = synthetic(rows, 60)
        write_parquet(path, X, y, rows_per_file=-(-rows // 20))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="a9a,tall")
    parser.add_argument("--partitions", type=int, default=200, help="a9a's partitions")
    parser.add_argument("--a9a-cache", type=float, default=0.01, help="a9a's cache, a fraction of its bytes")
    parser.add_argument("--tall-rows", type=int, default=2_000_000)
    parser.add_argument("--workdir", default="/tmp/dask-streamsvm-bench")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--busy", default="0", help="busy processes beside the fit, one condition each")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    runs = []
    for busy in (int(b) for b in args.busy.split(",")):
        for case in args.cases.split(","):
            spec = {"case": case, "partitions": args.partitions, "cache": args.a9a_cache, "busy": busy}
            if case.startswith("tall") or case == "read":
                spec.update(path=str(tall_set(args.workdir, args.tall_rows)), rows=args.tall_rows)
            for _ in range(args.repeats):
                runs.append(_beside(busy, spec))
    payload = {**payload_header("bench_trainer_wait", argv), "machine": machine(), "runs": runs}
    save_json(Path(args.out), payload)


def _beside(busy, spec):
    """One fit of ``spec`` in a fresh child, beside ``busy`` busy processes."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(1.0 if procs else 0.0)
        if spec["case"] == "read":
            out = {**spec, **run_child("bench_process", "read", spec)}
        elif spec["case"] == "tall-memory":
            out = run_child("bench_trainer_wait", "memory", spec)
        else:
            out = run_child("bench_trainer_wait", "fit", spec)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    if spec["case"] in ("read", "tall-memory"):
        print(f"{spec['case']} beside {busy}: {out}", flush=True)
        return out
    f = out["final"]
    print(
        f"{spec['case']} beside {busy}: {out['fit_seconds']:.1f}s, {out['passes']} passes, "
        f"{out['reads']:.1f} reads, gap {out['gap']:.1e}; sweeps {f['sweeps']} ({f['sweeps_waiting']} with "
        f"the reader busy, {out['waiting_share']:.1%}; {f['sweeps_idle']} idle, {out['idle_share']:.1%}), "
        f"row visits {f['row_visits']:,}, trainer waited {f['trainer_wait_s']:.1f}s; first read "
        f"{out['first_read_visits_per_row']:.2f} visits a row; load {out['load_before']:.1f}-"
        f"{out['load_after']:.1f}",
        flush=True,
    )
    return out


if __name__ == "__main__":
    main()

"""The process a fit runs in: the tall default fit against a plain read, quiet and beside busy processes.

Users' fits share their machine: with the fit's own reader thread, with BLAS's threads, with other
programs.  This measures the fit as they run it, with the library's own thread settings (no
``--blas-threads``: the fit sets its BLAS threads itself, ``engine/plan/threads.py``), in three
conditions, one after another in one run:

- **quiet**: nothing else running;
- **beside 1**: one busy process (``python -c "while True: pass"``) running throughout;
- **beside 4**: four of them.

In each condition, each measurement in a fresh interpreter (the numba cache warm: a warm-up fit in
a first child), interleaved ``--repeats`` times:

- two plain Dask reads of the tall Parquet set (each partition to a float32 array) in one child: the
  first, as a fresh process makes it, and the best of the two, as ``bench_primal`` times a read;
- the default fit ``LinearSVC(C, tol).fit(frame[features], frame["label"])`` (``dual="auto"``: the
  primal Newton solver), with its reads, CPU-seconds and the gap reached;
- in memory on the same rows (read into RAM in the child first, not timed): our ``LinearSVC(
  dual=False)`` against scikit-learn's ``LinearSVC(dual=False)`` (LIBLINEAR's primal solver), each
  at its default tolerance.

The figures are the medians over the repeats, and the ratios are of medians of the same condition:
fit / plain read, and LIBLINEAR / ours.  Issue 51's goals are printed beside them: quiet, at most
3.5 plain reads' time; beside one busy process, at most 1.2x the quiet ratio; beside four, at most
2x; in memory at least 2x faster than LIBLINEAR in every condition.

    python -m benchmarks.bench_process                        # writes 2M x 60 to a temp dir
    python -m benchmarks.bench_process --data-dir /tmp/tall   # reuses <dir>/dense
    python -m benchmarks.bench_process --rows 200000 --repeats 1 --conditions quiet   # quick

Results: ``benchmarks/results/process.json`` and the section "The process a fit runs in" of
``docs/benchmarks.md``.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import _common
from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

MARKER = "## The process a fit runs in"
CONDITIONS = {"quiet": 0, "beside 1": 1, "beside 4": 4}  # name -> busy processes beside the fit
# Issue 51's goals: fit / plain read quiet (at most), that ratio beside 1 and 4 busy processes over
# the quiet one (at most), LIBLINEAR / ours in memory (at least).
GOALS = {"quiet_reads": 3.5, "beside 1": 1.2, "beside 4": 2.0, "speedup": 2.0}
BUSY = "while True: pass"


def _timed(fn):
    start = time.perf_counter()
    cpu = time.process_time()
    out = fn()
    return out, time.perf_counter() - start, time.process_time() - cpu


def _open(path):
    import dask.dataframe as dd

    frame = dd.read_parquet(path)
    return frame, [c for c in frame.columns if c != "label"]


def _float32_rows(part):
    """A partition's rows as one float32 array (as a fit holds them), counted and dropped."""
    return part.to_numpy(dtype=np.float32).shape[0]


def child_read(spec):
    """Two plain Dask reads of the files, each partition to a float32 array joined into one array of
    every row: the first, as a fresh process makes it (as the fit's first read), and the best of the
    two (bench_primal's read)."""
    frame, features = _open(spec["path"])
    reads = [_timed(lambda: frame[features].to_dask_array(lengths=True).astype("float32").compute())
             for _ in range(2)]  # fmt: skip
    return {"read_s": reads[0][1], "read_cpu_s": reads[0][2], "best_read_s": min(r[1] for r in reads)}


def child_partition_read(spec):
    """Two plain Dask reads of the files that make each partition's float32 array and drop it, as a
    fit holds a partition at a time: the first, as a fresh process makes it (its fresh pages fault
    in, as the fit's first read's do), and the best of the two.  The joined read of
    :func:`child_read` also builds one array of every row (480 MB on the 2M x 60 set), whose fresh
    pages cost a second or more on some machines (this project's VM, on 2026-12-01 from 20:00 UTC:
    about 15 ms per 2 MB huge page; 0.2 ms at 23:20), and its ``lengths=True`` costs another pass over
    the partitions (0.5-1.6 s on the 2M x 60 set)."""
    import dask

    frame, features = _open(spec["path"])
    parts = frame[features].to_delayed()
    reads = [_timed(lambda: sum(dask.compute(*map(dask.delayed(_float32_rows), parts)))) for _ in range(2)]
    return {"partition_read_s": reads[0][1], "best_partition_read_s": min(r[1] for r in reads)}


def child_fit(spec):
    """The default fit on the files: seconds, CPU-seconds (every thread of the process), reads."""
    from benchmarks.bench_primal import count_reads
    from dask_streamsvm import LinearSVC

    frame, features = _open(spec["path"])
    if spec.get("warm_up"):  # numba's cache loaded before the timing, as in a user's second fit
        head = frame.partitions[0].compute().iloc[:2000]
        LinearSVC(C=spec["C"], tol=spec["tol"]).fit(head[features].to_numpy(), head["label"].to_numpy())
    model = LinearSVC(C=spec["C"], tol=spec["tol"])
    clf, wall, cpu = _timed(lambda: model.fit(frame[features], frame["label"]))
    return {"fit_s": wall, "fit_cpu_s": cpu, "gap": float(np.max(clf.duality_gap_)),
            "reads": count_reads(clf.history_, spec["n_rows"], int(clf.n_iter_))}  # fmt: skip


def child_memory(spec):
    """In memory on the files' rows: ours (``dual=False``) and scikit-learn's LIBLINEAR primal."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC as Liblinear

    from benchmarks.bench_primal import read_parquet_rows
    from dask_streamsvm import LinearSVC

    X, y = read_parquet_rows(spec["path"])
    LinearSVC(C=spec["C"], dual=False).fit(X[:2000], y[:2000])  # the kernels loaded
    ours, ours_s, ours_cpu = _timed(lambda: LinearSVC(C=spec["C"], dual=False).fit(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, ref_s, ref_cpu = _timed(lambda: Liblinear(C=spec["C"], dual=False).fit(X, y))
    return {"ours_s": ours_s, "ours_cpu_s": ours_cpu, "ours_gap": float(np.max(ours.duality_gap_)),
            "liblinear_s": ref_s, "liblinear_cpu_s": ref_cpu}  # fmt: skip


def run_child(task, spec):
    return _common.run_child("bench_process", task, spec)


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def measure(condition, spec, repeats):
    """The condition's reads, fits and in-memory fits, interleaved, beside its busy processes."""
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(CONDITIONS[condition])]
    try:
        time.sleep(1.0 if busy else 0.0)  # the busy loops are running before the first timing
        load_start = _load()
        run_child("fit", {**spec, "warm_up": True})  # kernels compiled and cached, if they were not
        reads, fits, memory = [], [], []
        for _ in range(repeats):
            reads.append(run_child("read", spec))
            fits.append(run_child("fit", {**spec, "warm_up": True}))
            memory.append(run_child("memory", spec))
        load_end = _load()
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()

    def median(rows, key):
        return statistics.median(row[key] for row in rows)

    row = {"condition": condition, "busy": CONDITIONS[condition], "load_start": load_start,
           "load_end": load_end, "repeats": repeats}  # fmt: skip
    for runs, keys in ((reads, ("read_s", "read_cpu_s", "best_read_s")),
                       (fits, ("fit_s", "fit_cpu_s", "reads", "gap")),
                       (memory, ("ours_s", "ours_cpu_s", "liblinear_s", "liblinear_cpu_s"))):  # fmt: skip
        row.update({key: median(runs, key) for key in keys})
    row["fit_over_read"] = row["fit_s"] / row["read_s"]
    row["fit_over_best_read"] = row["fit_s"] / row["best_read_s"]
    row["speedup"] = row["liblinear_s"] / row["ours_s"]
    pairs = ((reads, "read_s"), (fits, "fit_s"), (memory, "ours_s"), (memory, "liblinear_s"))
    row["runs"] = {key: [r[key] for r in runs] for runs, key in pairs}
    return row


def main(argv=None):
    from benchmarks.bench_primal import synthetic, write_parquet

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=60)
    parser.add_argument("--rows-per-file", type=int, default=100_000)
    parser.add_argument("--data-dir", default=None, help="read <dir>/dense instead of writing it")
    parser.add_argument("--C", type=float, default=0.01)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conditions", default=",".join(CONDITIONS), help="of: " + ", ".join(CONDITIONS))
    args = parser.parse_args(argv)

    work = None
    if args.data_dir:
        path = Path(args.data_dir) / "dense"
    else:
        work = Path(tempfile.mkdtemp(prefix="bench_process_"))
        path = work / "dense"
        X, y = synthetic(args.rows, args.features)
        write_parquet(path, X, y, args.rows_per_file)
        del X, y
    import pyarrow.parquet as pq

    n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(path.glob("*.parquet")))
    spec = {"path": str(path), "C": args.C, "tol": args.tol, "n_rows": n_rows}
    payload = {**payload_header("bench_process", argv), "machine": machine(), "rows": n_rows, "C": args.C,
               "features": args.features, "tol": args.tol, "goals": GOALS, "rows_out": []}  # fmt: skip
    try:
        for condition in args.conditions.split(","):
            payload["rows_out"].append(measure(condition.strip(), spec, args.repeats))
            print(payload["rows_out"][-1], flush=True)
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    payload["children_cpu_s"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    save_json(ROOT / "benchmarks" / "results" / "process.json", payload)
    write_report(payload)


def write_report(payload):
    rows = payload["rows_out"]
    quiet = next((r for r in rows if r["condition"] == "quiet"), None)
    lines = [
        "",
        f"Command: `{payload['command']}`; {payload['date']}, {payload['machine'].get('cores', '?')} cores. "
        f"The tall set: {payload['rows']:,} rows x {payload['features']} float32 features in Parquet, "
        f"C = {payload['C']:g}, tol = {payload['tol']:g}. Each figure the median of {rows[0]['repeats']} "
        "fresh children, interleaved, with the library's own thread settings (the fit sets BLAS to one "
        'thread); the busy processes are `python -c "while True: pass"`. In memory: the same rows, '
        "ours `dual=False` against scikit-learn's `LinearSVC(dual=False)` (LIBLINEAR's primal solver).",
        "",
        "| condition | load (start, end) | plain read s (first, best of 2) | fit s | fit CPU-s | reads "
        "| fit / first read | fit / best read | vs quiet | ours in memory s | LIBLINEAR s "
        "| LIBLINEAR / ours |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        against = r["fit_over_read"] / quiet["fit_over_read"] if quiet else None
        lines.append(
            f"| {r['condition']} | {r['load_start'][0]:.1f}, {r['load_end'][0]:.1f} | {r['read_s']:.2f}, "
            f"{r.get('best_read_s', float('nan')):.2f} | {r['fit_s']:.2f} | {r['fit_cpu_s']:.1f} "
            f"| {r['reads']:.2f} "
            f"| {r['fit_over_read']:.2f} | {r.get('fit_over_best_read', float('nan')):.2f} "
            f"| {'' if against is None else f'{against:.2f}x'} | {r['ours_s']:.2f} | {r['liblinear_s']:.2f} "
            f"| {r['speedup']:.1f}x |"
        )
    goals = payload["goals"]
    lines += [
        "",
        f"Goals (issue 51): quiet at most {goals['quiet_reads']} plain reads' time; beside one busy process "
        f"at most {goals['beside 1']}x the quiet ratio, beside four at most {goals['beside 4']}x; in memory "
        f"at least {goals['speedup']}x faster than LIBLINEAR in every condition.",
        "",
    ]
    write_section(MARKER, lines)


if __name__ == "__main__":
    main()

"""The first fit in a fresh process: what numba's compilation adds, solver by solver.

For each solver and input layout (dense, CSR), three timings of the same small fit:

* **cold**: a fresh interpreter with an empty numba cache (``NUMBA_CACHE_DIR`` set to a new
  directory): the first fit compiles every kernel it calls and writes it to the cache;
* **warm**: a second fresh interpreter on the now-filled cache: the first fit loads the
  compiled kernels instead;
* **hot**: that second interpreter's second fit (nothing left to load).

``cold - warm`` is what a new process (a Dask worker, a container, a user whose site-packages
is read-only and who has no user cache yet) pays once.  The children also report
``import dask_streamsvm``'s time and, from numba's event API (``numba:compile``), the seconds
and number of the outermost compilations.

Run ``python -m benchmarks.bench_first_fit [--solvers memory,sbm] [--layouts dense]``; results
go to ``benchmarks/results/first_fit.json`` and the section "First fit in a fresh process" of
``docs/benchmarks.md``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "first_fit.json"
MARKER = "## First fit in a fresh process"
SOLVERS = [
    "memory",
    "primal",
    "primal-stream",
    "streamsvm",
    "sbm",
    "bm",
    "partial_fit",
    "onepass",
    "budgeted",
]
LAYOUTS = ["dense", "csr"]
ROWS, DENSE_FEATURES, SPARSE_FEATURES, PARTS = 20_000, 20, 200, 4
LABELS = {
    "memory": "dual, in memory",
    "primal": "dual=False, in memory",
    "primal-stream": "dual=False, streamed",
    "streamsvm": "StreamSVM",
    "sbm": "SBM",
    "bm": "BM",
    "partial_fit": "partial_fit",
    "onepass": "OnePassSVC",
    "budgeted": "BudgetedSVC",
}


def _data(layout):
    """``(X, y)`` in memory: dense 20,000 x 20 or CSR 20,000 x 200 (10 nonzeros a row)."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import make_classification

    if layout == "dense":
        return make_classification(ROWS, DENSE_FEATURES, random_state=0)
    X = sp.random(ROWS, SPARSE_FEATURES, density=0.05, format="csr", random_state=0)
    y = (X @ np.random.RandomState(0).randn(SPARSE_FEATURES) > 0).astype(np.int64)
    return X, y


def _dask(X, y):
    """``X`` and ``y`` as Dask arrays of :data:`PARTS` row blocks (CSR blocks for sparse ``X``)."""
    import dask
    import dask.array as da
    import numpy as np
    import scipy.sparse as sp

    step = -(-X.shape[0] // PARTS)
    if sp.issparse(X):
        meta = sp.csr_matrix((0, X.shape[1]), dtype=X.dtype)
        parts = [X[lo : lo + step] for lo in range(0, X.shape[0], step)]
        Xd = da.concatenate(
            [da.from_delayed(dask.delayed(p), p.shape, dtype=X.dtype, meta=meta) for p in parts]
        )
    else:
        Xd = da.from_array(X, chunks=(step, X.shape[1]))
    return Xd, da.from_array(np.asarray(y), chunks=step)


def _fit(solver, X, y):
    """One fit of ``solver`` (streaming ones on the Dask arrays, 10% cache)."""
    import dask_streamsvm as ds

    streamed = dict(cache_bytes="10%", max_iter=20, random_state=0)
    if solver == "memory":
        ds.LinearSVC(dual=True, solver="memory", random_state=0).fit(X, y)
    elif solver == "primal":
        ds.LinearSVC(dual=False).fit(X, y)
    elif solver == "primal-stream":
        ds.LinearSVC(dual=False, cache_bytes="10%").fit(*_dask(X, y))
    elif solver in ("streamsvm", "sbm", "bm"):
        ds.LinearSVC(dual=True, solver=solver, **streamed).fit(*_dask(X, y))
    elif solver == "partial_fit":
        ds.LinearSVC(random_state=0).partial_fit(*_dask(X, y), classes=[0, 1])
    elif solver == "onepass":
        ds.OnePassSVC(random_state=0).fit(*_dask(X, y))
    elif solver == "budgeted":
        ds.BudgetedSVC(budget=50, max_iter=2, random_state=0).fit(*_dask(X, y))
    else:
        raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")


def child(solver, layout):
    """In a fresh interpreter: import time, then two fits; seconds and numba's outermost compilations."""
    start = time.perf_counter()
    import warnings

    import dask
    from numba.core import event

    import dask_streamsvm  # noqa: F401  (the import being timed)

    import_s = time.perf_counter() - start
    depth, compiles, every = [0], [], [0]

    class Outermost(event.Listener):
        def on_start(self, ev):
            depth[0] += 1
            every[0] += 1
            if depth[0] == 1:
                compiles.append(-time.perf_counter())

        def on_end(self, ev):
            depth[0] -= 1
            if depth[0] == 0:
                compiles[-1] += time.perf_counter()

    event.register("numba:compile", Outermost())
    dask.config.set(scheduler="threads")
    X, y = _data(layout)
    fits, cpu, compile_s, n_compiles, n_functions = [], [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the capped streamed fits
        for _ in range(2):
            done, done_every = len(compiles), every[0]
            t, c = time.perf_counter(), time.process_time()
            _fit(solver, X, y)
            fits.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            compile_s.append(sum(compiles[done:]))
            n_compiles.append(len(compiles) - done)
            n_functions.append(every[0] - done_every)
    return {
        "import_s": import_s,
        "fit_s": fits,
        "cpu_s": cpu,
        "compile_s": compile_s,
        "compiles": n_compiles,
        "functions": n_functions,
    }


def _run_child(solver, layout, cache_dir):
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    code = (
        "import json; from benchmarks.bench_first_fit import child; "
        f"print('RESULT', json.dumps(child({solver!r}, {layout!r})))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"child {solver}/{layout} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(lines[-1][len("RESULT ") :])


def measure(solver, layout):
    """Cold (empty cache), warm (filled cache, fresh process) and hot (same process) first fits."""
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache_dir:
        cold = _run_child(solver, layout, cache_dir)
        warm = _run_child(solver, layout, cache_dir)
    return {
        "solver": solver,
        "layout": layout,
        "cold_s": cold["fit_s"][0],
        "warm_s": warm["fit_s"][0],
        "hot_s": warm["fit_s"][1],
        "extra_s": cold["fit_s"][0] - warm["fit_s"][0],
        "cold_cpu_s": cold["cpu_s"][0],
        "warm_cpu_s": warm["cpu_s"][0],
        "extra_cpu_s": cold["cpu_s"][0] - warm["cpu_s"][0],
        "cold_compile_s": cold["compile_s"][0],
        "cold_compiles": cold["compiles"][0],
        "cold_functions": cold["functions"][0],
        "warm_compiles": warm["compiles"][0],
        "import_cold_s": cold["import_s"],
        "import_warm_s": warm["import_s"],
    }


def _load():
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--solvers", default=",".join(SOLVERS), help="comma-separated, of: " + ", ".join(SOLVERS)
    )
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated, of: dense, csr")
    args = parser.parse_args(argv)
    solvers, layouts = args.solvers.split(","), args.layouts.split(",")
    for name in solvers:
        if name not in SOLVERS:
            parser.error(f"unknown solver {name!r}; expected some of {', '.join(SOLVERS)}")
    load_before = _load()
    rows = []
    for solver in solvers:
        for layout in layouts:
            row = measure(solver, layout)
            rows.append(row)
            print(
                f"{solver:14s} {layout:5s} cold {row['cold_s']:6.2f} s  warm {row['warm_s']:5.2f} s  "
                f"hot {row['hot_s']:5.2f} s  cold-warm {row['extra_s']:6.2f} s, "
                f"{row['extra_cpu_s']:6.2f} CPU-s  "
                f"({row['cold_compiles']} compilations of {row['cold_functions']} functions, "
                f"{row['cold_compile_s']:.2f} s)",
                flush=True,
            )
    payload = {**payload_header("bench_first_fit", argv), "machine": machine(), "rows": rows}
    payload["load_average"] = {"before": load_before, "after": _load()}
    save_json(RESULTS, payload)
    write_section(MARKER, report_lines(payload))
    return payload


def report_lines(payload):
    """The docs section: the command, the machine, and one row per solver and layout."""
    m, load = payload["machine"], payload["load_average"]
    rows = payload["rows"]
    imports = [r["import_warm_s"] for r in rows]
    lines = [
        "",
        f"`{payload['command']}` on {m['cores']} cores, {payload['date']}; numba {m['numba']}, "
        f"load average {load['before']:.1f} before, {load['after']:.1f} after.",
        "",
        f"Each row fits the same data three times: in a fresh process with an empty numba cache "
        f"(cold), in a second fresh process on the cache the first one filled (warm), and again in "
        f"that process (hot). Data: {ROWS:,} rows, dense {DENSE_FEATURES} features "
        f"(make_classification) or CSR {SPARSE_FEATURES} features with 10 nonzeros a row; streamed "
        f"solvers read a Dask array of {PARTS} blocks with a 10% cache and at most 20 passes. "
        "Compilations: numba's outermost `numba:compile` events of the cold fit, and all of them "
        "(functions, nested ones included); a warm fit compiles none. CPU: the fitting process's "
        "CPU seconds (all its threads). `import dask_streamsvm` took "
        f"{min(imports):.2f}-{max(imports):.2f} s in the warm children.",
        "",
        "| solver | input | cold | warm | hot | cold - warm | cold - warm, CPU "
        "| compilations / functions (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {LABELS[r['solver']]} | {r['layout']} | {r['cold_s']:.2f} s | {r['warm_s']:.2f} s | "
            f"{r['hot_s']:.2f} s | {r['extra_s']:.2f} s | {r['extra_cpu_s']:.2f} CPU-s | "
            f"{r['cold_compiles']} / {r.get('cold_functions', '?')} ({r['cold_compile_s']:.2f} s) |"
        )
    lines += [
        "",
        "numba caches compiled kernels beside the source (`__pycache__`) when that directory is "
        "writable, otherwise in the user's cache directory (`~/.cache/numba` on Linux, numba's "
        "user-wide locator), or in `NUMBA_CACHE_DIR` when set. Entries are keyed on the source "
        "file's contents, the argument types, numba's version and the CPU, so Dask worker "
        "processes of one user on one machine share one cache; workers under another user or "
        "`HOME` (containers) compile again unless `NUMBA_CACHE_DIR` points them at a shared, "
        "writable directory.",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()

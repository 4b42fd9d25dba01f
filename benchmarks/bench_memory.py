"""Peak memory of each solver against the memory guide's formula (docs/guide/memory.md).

For a Parquet directory of dense features and a ``label`` column, each fit
runs in a fresh interpreter (so its peak is its own), as
``LinearSVC(C, tol=1e-3, ...).fit(frame[features], frame["label"])``, and
records:

- the RSS just before ``fit`` (imports done, the Dask collection built);
- the peak RSS (``VmHWM``, and ``ru_maxrss``), and a timeline of RSS
  sampled every 10 ms from ``/proc/self/statm`` (kept at 100 ms in the
  results), with the time of the peak and the reads' ends;
- the formula: for the streaming dual trainers (``streamsvm``, ``sbm``,
  ``bm``, cache ``"10%"``) RSS at fit start + the row memory (StreamSVM:
  cache_bytes, the share resolved as the fit resolves it, rows x bytes a
  cached row; SBM: cache_bytes + block_bytes, by default twice
  cache_bytes; BM: block_bytes, by default twice cache_bytes) + (prefetch
  + 1) x one partition in its converted form + 12 bytes a row (the alpha
  store of two classes) + 50 MB; for the default fit (``dual="auto"``: the
  primal Newton solver, no cache) RSS at fit start + the larger of the warm
  start's sample (the first history record's ``sample_bytes``, 0 without one)
  and 1.5 x a read's band (``band_bytes``) + (prefetch + 1) x one partition
  + 50 MB; for ``loss="hinge"`` (the band from a sample) at the default cache, which holds
  every row, RSS at fit start + the rows' row memory as the rule that kept them counts it
  (``warm.band_held_bytes``: the rows, and the larger of the sample and the band) + 32 bytes a
  row (the vectors of a pass) + (prefetch + 1) x one partition + 50 MB (a band streamed: the
  Newton fit's formula).  A process's first fit also
  loads the compiled kernels (numba's cache and LLVM) and the modules and
  threads a fit brings: :data:`KERNEL_BYTES` more, measured as the RSS at
  fit start of a warm run less a cold one's.

A warm run (``--modes cold,warm``, the default: both) first fits the same
solver on 2,000 rows of the same kind, so that the kernels are loaded and
the threads exist before the RSS at fit start is taken; the formula of a
warm run has no kernels' term.

Run ``python -m benchmarks.bench_memory [--path /tmp/tall/dense] [--C 0.01]
[--solvers streamsvm,sbm,bm,newton,hinge] [--modes cold,warm]``; results go to
``benchmarks/results/memory.json`` and ``docs/benchmarks.md``.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "memory.json"
MARKER = "## Memory: peak RSS against the memory guide's formula"
SOLVERS = {  # name -> LinearSVC parameters
    "streamsvm": {"solver": "streamsvm", "cache_bytes": "10%"},
    "sbm": {"solver": "sbm", "cache_bytes": "10%"},
    "bm": {"solver": "bm", "cache_bytes": "10%"},
    "newton": {},  # the default fit: dual="auto" chooses the primal Newton solver on tall data
    "hinge": {"loss": "hinge"},  # the band from a sample; at the default cache on every row held
}
MB = 1e6
SLACK = 50 * MB  # the formula's allowance for the model, the history and small buffers
ALPHA_BYTES = 12  # a row's alpha store, two classes: 8 k + 4
# A process's first fit: the kernels loaded and the modules and threads a fit brings, measured as the RSS
# at fit start of a warm run less a cold one's: 66-69 MB on the tall set for every solver (2026-11-29;
# 70-71 MB in the 2026-11-26 run, which still used 45 MB here).
KERNEL_BYTES = 70 * MB
ROW_MEMORY = {"streamsvm": 1, "sbm": 2, "bm": 2}  # the row memory in cache_bytes (block_bytes' defaults)
# The band on every row held: a row's label index, shortfall, key and argpartition's index while a
# problem's pass is made and its band chosen (sample_band.MemoryBandRead), 8 bytes each.
BAND_VECTOR_BYTES = 32


# -- the child process ---------------------------------------------------------------------------


def _statm_rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _status(key):
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith(key)).split()[1]) * 1024


class Sampler:
    """RSS every ``every`` seconds on a thread of its own: ``(seconds since start, bytes)`` pairs."""

    def __init__(self, every=0.01):
        self.every = every
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        start = time.perf_counter()
        while not self._stop.is_set():
            self.samples.append((time.perf_counter() - start, _statm_rss()))
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _warm_up(spec, features, params):
    """A fit of the same solver on 2,000 rows of the same dtype: the kernels compiled or loaded."""
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    from dask_streamsvm import LinearSVC

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, len(features)), dtype=np.float32)
    frame = pd.DataFrame(X, columns=features)
    frame["label"] = np.where(X[:, 0] > 0, 1, -1)
    small = dd.from_pandas(frame, npartitions=2)
    LinearSVC(C=spec["C"], tol=1e-3, random_state=0, **params).fit(small[features], small["label"])


def child(spec):
    """One fit of ``spec["solver"]`` on ``spec["path"]``: its RSS record, as a dict."""
    import dask.dataframe as dd
    import numpy as np
    import pyarrow.parquet as pq

    from benchmarks.bench_primal import count_reads
    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine.plan.sizes import stored_bytes

    params = dict(SOLVERS[spec["solver"]])
    frame = dd.read_parquet(spec["path"])
    features = [c for c in frame.columns if c != "label"]
    if spec["warm"]:
        _warm_up(spec, features, params)
    X, y = frame[features], frame["label"]
    files = sorted(os.path.join(spec["path"], f) for f in os.listdir(spec["path"]) if f.endswith(".parquet"))
    rows = [pq.ParquetFile(f).metadata.num_rows for f in files]
    itemsize = 4 if all(str(t) == "float32" for t in X.dtypes) else 8
    label_size = np.dtype(str(frame["label"].dtype)).itemsize
    n_rows, n_features = sum(rows), len(features)
    # A partition as the reader hands it over: the C-ordered rows, the labels, the weights (float64).
    partition = max(rows) * (n_features * itemsize + label_size + 8)
    clf = LinearSVC(C=spec["C"], tol=1e-3, prefetch=spec["prefetch"], random_state=0, **params)
    start = _statm_rss()
    t = time.perf_counter()
    with Sampler() as sampler:
        clf.fit(X, y)
    seconds = time.perf_counter() - t
    peak = _status("VmHWM")
    import resource

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    history = clf.history_
    # The reads of the data, from the rows the last record counts as read: the band's passes over
    # every row held are records of their own, not reads (pass numbers would count them).
    reads = count_reads(history, n_rows, clf.n_iter_) if spec["solver"] in ("newton", "hinge") else None
    whole = spec["solver"] == "hinge" and reads == 1
    if whole:
        # Every row held by the first read, the sample and the band beside them (warm.band_held_bytes,
        # the rule that kept them), and the vectors of a pass.
        from dask_streamsvm.engine.primal.warm import band_held_bytes

        held = int(n_rows * band_held_bytes(n_features * itemsize + label_size + 8))
        formula = start + held + n_rows * BAND_VECTOR_BYTES + (spec["prefetch"] + 1) * partition + SLACK
    elif spec["solver"] in ("newton", "hinge"):
        # The warm start's sample is dropped before the Newton reads; a read's band may hold 1.5 times
        # its rows while they are chosen.
        sample = history[0].get("sample_bytes", 0) if history else 0
        held = int(max(sample, 1.5 * max((r.get("band_bytes") or 0 for r in history), default=0)))
        formula = start + held + (spec["prefetch"] + 1) * partition + SLACK
    else:
        held = stored_bytes(n_rows, n_rows * n_features, 1, np.dtype(f"float{8 * itemsize}"), False)
        held = ROW_MEMORY[spec["solver"]] * int(np.ceil(0.10 * held))  # cache_bytes="10%", resolved
        formula = start + held + (spec["prefetch"] + 1) * partition + ALPHA_BYTES * n_rows + SLACK
    if not spec["warm"]:
        formula += KERNEL_BYTES
    samples = sampler.samples
    at_peak = max(samples, key=lambda s: s[1]) if samples else (0.0, 0)
    timeline = [(round(s, 2), round(b / MB, 1)) for s, b in samples[:: max(1, len(samples) // 600)]]
    return {
        "solver": spec["solver"],
        "warm": spec["warm"],
        "seconds": seconds,
        "reads": reads or ((history[-1]["pass"] + 1) if history and "pass" in history[-1] else None),
        "start_rss_bytes": start,
        "peak_rss_bytes": peak,
        "ru_maxrss_bytes": maxrss,
        "sampled_peak_bytes": at_peak[1],
        "sampled_peak_s": at_peak[0],
        "held_bytes": held,
        "partition_bytes": partition,
        "rows": n_rows,
        "formula_bytes": formula,
        "over_formula": peak / formula - 1,
        "read_ends_s": [round(r["seconds"], 2) for r in history if "seconds" in r],
        "timeline_s_mb": timeline,
    }


def run_child(spec):
    """``child(spec)`` in a fresh interpreter (its peak RSS is its own)."""
    code = (
        "import json, sys\nfrom benchmarks.bench_memory import child\n"
        "print('RESULT ' + json.dumps(child(json.loads(sys.argv[1]))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode or not lines:
        raise RuntimeError(f"the {spec['solver']} child failed:\n{out.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


# -- the parent ----------------------------------------------------------------------------------


def _table(results):
    lines = [
        "| solver | reads | fit s | RSS at fit start MB | held MB | partition MB | formula MB "
        "| peak RSS MB | over the formula |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['solver']}{' (warm)' if r['warm'] else ''} | {r['reads']} | {r['seconds']:.1f} | "
            f"{r['start_rss_bytes'] / MB:.0f} | {r['held_bytes'] / MB:.0f} | "
            f"{r['partition_bytes'] / MB:.1f} | "
            f"{r['formula_bytes'] / MB:.0f} | {r['peak_rss_bytes'] / MB:.0f} | {r['over_formula']:+.0%} |"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--path", default="/tmp/tall/dense")
    parser.add_argument("--C", type=float, default=0.01)
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--prefetch", type=int, default=2)
    parser.add_argument("--modes", default="cold,warm", help="warm: fit 2,000 rows first (kernels loaded)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave the results and docs")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results = []
    for warm in [mode == "warm" for mode in args.modes.split(",")]:
        for solver in args.solvers.split(","):
            spec = dict(solver=solver, path=args.path, C=args.C, prefetch=args.prefetch, warm=warm)
            r = run_child(spec)
            results.append(r)
            print(_table([r])[-1], flush=True)
    payload = {
        **payload_header("bench_memory", argv),
        "load_1min_before": load,
        "load_1min_after": os.getloadavg()[0],
        "machine": machine(),
        "path": args.path,
        "C": args.C,
        "prefetch": args.prefetch,
        "results": results,
    }
    if args.no_write:
        return payload
    save_json(RESULTS, payload)
    lines = [
        "",
        f"Command: `{payload['command']}`; {payload['date']}, {os.cpu_count()} cores, load "
        f"{load:.2f} before and {payload['load_1min_after']:.2f} after (1-minute average). Each fit in its "
        f"own interpreter, `LinearSVC(C={args.C}, tol=1e-3, prefetch={args.prefetch})` on `{args.path}`. "
        "Formula (see the memory guide): RSS at fit start + held (the row memory: StreamSVM's cache of "
        "10%, SBM's cache and block, BM's block; the Newton warm start's sample, or every row where the "
        'first read kept them; for `loss="hinge"` on every row held, the rows, sample and band as '
        "`warm.band_held_bytes` counts them, and 32 bytes a row) + (prefetch + 1) x one partition + 12 "
        "bytes a row for the dual trainers + 50 MB, + 70 MB for the kernels of a process's first fit (not "
        "in a warm run).",
        "",
        *_table(results),
        "",
    ]
    write_section(MARKER, lines)
    return payload


if __name__ == "__main__":
    main()

"""The hinge in memory: the band from a sample against dual coordinate descent, on NumPy rows.

``LinearSVC(loss="hinge", C)`` on dense rows in memory, each fit in a fresh process after a warm-up
fit on 50,000 of the rows and a streamed band fit on them (numba's cache loaded), at the default tol
(1e-3) and at most ``--max-iter`` passes: ``solver="auto"`` (the band from a sample where the door's
rule takes it, ``engine/choice.py: memory_band``; the method it ran is recorded, and whether the band
gave way to the dual) and ``solver="memory"`` (dual coordinate descent, LIBLINEAR's method).  A fit past
``--timeout`` seconds is stopped and recorded as such.

Sets: the tall sets of ``bench_two_reads`` made in memory (2M x 60 float32 Gaussian rows and the same
rows on a 0..255 scale, ``bench_primal.synthetic``), 1M x 20 Gaussian rows with labels of a hyperplane
and heavy noise (scale 3), a9a's rows tiled 62 times (2M x 123, dense float32, Gaussian noise of 0.01
added), and below the rule's rows: a9a, ijcnn1 (dense) and the HIGGS subset, where ``"auto"`` keeps
the dual.

    python -m benchmarks.bench_memory_band
    python -m benchmarks.bench_memory_band --sets tall_dense a9a --C 1 --busy 0,1

Results: ``benchmarks/results/memory_band.json`` and the section "The hinge in memory" of
``docs/benchmarks.md``.
"""

import argparse
import time

import numpy as np

from benchmarks._common import ROOT, run_header, save_json, timed_children, write_section

MARKER = "## The hinge in memory: the band from a sample"
RESULTS = ROOT / "benchmarks" / "results" / "memory_band.json"
SETS = ("tall_dense", "tall_raw", "noisy_1m", "a9a_tiled", "a9a", "ijcnn1", "higgs")
SOLVERS = ("auto", "memory")
WARM_ROWS = 50_000


def make_set(name):
    """``(X, y)`` of the set ``name`` of :data:`SETS`: dense C-ordered rows."""
    from benchmarks.bench_primal import load_higgs, synthetic
    from benchmarks.bench_schedules import load_libsvm

    if name in ("tall_dense", "tall_raw"):
        return synthetic(2_000_000, 60, raw=name == "tall_raw")
    if name == "noisy_1m":
        rng = np.random.default_rng(1)
        X = rng.standard_normal((1_000_000, 20), dtype=np.float32)
        y = np.where(X @ rng.standard_normal(20) + 3.0 * rng.standard_normal(X.shape[0]) > 0, 1, -1)
        return X, y
    if name == "higgs":
        return load_higgs()
    X, y = load_libsvm(name.removesuffix("_tiled"))
    X = X.toarray().astype(np.float32)
    if name.endswith("_tiled"):
        rng = np.random.default_rng(0)
        X = np.tile(X, (62, 1))
        X += 0.01 * rng.standard_normal(X.shape, dtype=np.float32)
        y = np.tile(y, 62)
    return np.ascontiguousarray(X), y


def child_fit(spec):
    """One fit of ``spec`` on its set: seconds, CPU-seconds, passes, gap, the method it ran."""
    import warnings

    import dask.array as da

    from dask_streamsvm import LinearSVC

    X, y = make_set(spec["set"])
    params = dict(loss="hinge", C=spec["C"], solver=spec["solver"], max_iter=spec["max_iter"])
    # The kernels loaded, not timed: the dual's in memory, the band's streamed (the same kernels).
    head, labels = X[:WARM_ROWS], y[:WARM_ROWS]
    LinearSVC(**params).fit(head, labels)
    chunks = -(-head.shape[0] // 4)
    LinearSVC(loss="hinge", solver="band", max_iter=2).fit(
        da.from_array(head, chunks=(chunks, -1)), da.from_array(labels, chunks=chunks)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start, cpu = time.perf_counter(), time.process_time()
        model = LinearSVC(**params).fit(X, y)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    solvers = [r.get("solver") for r in model.history_]
    said = [str(w.message) for w in caught]
    return {
        "seconds": seconds,
        "cpu_s": cpu,
        "n_iter": int(np.max(model.n_iter_)),
        "gap": float(np.max(model.duality_gap_)),
        "band": "band" in solvers,
        "gave_way": any("gave way" in m for m in said),
        "converged": not any("did not reach tol" in m for m in said),
        "rows": int(X.shape[0]),
        "features": int(X.shape[1]),
    }


def measure(args):
    specs = [
        {"set": name, "C": C, "solver": solver, "max_iter": args.max_iter}
        for name in args.sets
        for C in args.C
        for solver in SOLVERS
    ]
    return timed_children("bench_memory_band", specs, args.busy, args.timeout)


def report(payload):
    from dask_streamsvm.engine.primal.warm import MEMORY_BAND_SAMPLES

    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; load at the start {payload['load']}; commit {payload['commit']}.",
        "",
        '`LinearSVC(loss="hinge", C)` on dense NumPy rows, each fit in a fresh process after a warm-up '
        f"fit and a streamed band fit on {WARM_ROWS:,} of the rows, tol 1e-3 (the default), at most "
        f"{payload['max_iter']} passes, "
        f"stopped after {payload['timeout']} s. *auto ran*: `band` (the band from a sample), `band, gave "
        "way` (its first pass certified too little of its step, and dual coordinate descent trained from "
        "the start), or `dual`. Seconds (passes, gap); *no*: stopped at max_iter above tol. The rule "
        "(`engine/choice.py: memory_band`, `engine/primal/warm.py: band_from_memory`): rows at least "
        f"{MEMORY_BAND_SAMPLES} times the sample a streamed fit keeps (4,000 a column of the model, at "
        "least 20,000).",
        "",
        '| set | rows x features | C | busy beside | load | auto ran | auto s | solver="memory" s | '
        "memory / auto |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(r):
        if r["seconds"] is None:
            return f"> {payload['timeout']} (stopped)"
        converged = "" if r["converged"] else ", no"
        return f"{r['seconds']:.2f} ({r['n_iter']}, {r['gap']:.1e}{converged})"

    by = {(r["set"], r["C"], r["busy"], r["solver"]): r for r in payload["records"]}
    for (name, C, busy, solver), auto in by.items():
        if solver != "auto":
            continue
        dual = by[(name, C, busy, "memory")]
        ran = "-" if auto["seconds"] is None else ("dual" if not auto["band"] else "band")
        if auto.get("gave_way"):
            ran += ", gave way"
        shape = "-" if auto["seconds"] is None else f"{auto['rows']:,} x {auto['features']}"
        ratio = "-"
        if auto["seconds"] is not None and dual["seconds"] is not None:
            ratio = f"{dual['seconds'] / auto['seconds']:.2f}"
        lines.append(
            f"| {name} | {shape} | {C:g} | {busy} | {auto['load']} | {ran} | {cell(auto)} | {cell(dual)} | "
            f"{ratio} |"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--C", nargs="+", type=float, default=[0.01, 1.0])
    parser.add_argument("--busy", type=lambda s: [int(b) for b in s.split(",")], default=[0])
    parser.add_argument("--max-iter", type=int, default=100, help="passes a fit may make at most")
    parser.add_argument("--timeout", type=int, default=180, help="seconds a fit may take")
    args = parser.parse_args(argv)
    payload = run_header("bench_memory_band", argv)
    payload.update(timeout=args.timeout, max_iter=args.max_iter)
    payload["records"] = measure(args)
    save_json(RESULTS, payload)
    write_section(MARKER, report(payload))


if __name__ == "__main__":
    main()

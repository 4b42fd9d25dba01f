"""The hinge on wide text on a 2-worker LocalCluster: ``cluster="auto"`` against CoCoA+ (issue 52).

The wide set of ``bench_wide_hinge`` (bench_text's generator: 200,000 rows x 200,000 columns of 50
nonzeros, unit norm, labels from a noisy linear rule; LIBSVM files), read on a ``LocalCluster`` of 2
single-thread worker processes.  Per method, in a fresh process that starts its own cluster and fits
a small set first (the workers' kernels loaded): ``LinearSVC(loss="hinge", C=1, fit_intercept=False,
tol=1e-3, max_iter=60, random_state=0)`` with ``cluster="auto"`` (the default ``cache_bytes`` of
1 GB holds every row: the parts' first read keeps them all and the first worker solves their
problem, ``engine/cluster/newton.py: fit_band_cluster``) and ``cluster="cocoa"`` (CoCoA+ rounds).
Reported: the fit's seconds, its reads or rounds after the first read, the gap, the test accuracy,
and LIBLINEAR's load + fit on one process (``bench_wide_hinge``'s measure).

``--parts K ...``: instead, ``cluster="auto"`` on K parts (K = 2, 8, 32, 100): K single-thread
workers of an in-process ``LocalCluster`` (a cluster fit makes one part per worker; the workers share
one process, as ``bench_cluster_band``'s do), the files read in blocks of at most a K-th of the text
so that every worker holds a part, each K in a fresh process after a small fit on the same cluster;
``--cache`` the ``cache_bytes`` of these fits (``default``: 1 GB).  Beside them, the optimum: the
rows loaded and solved in memory to a certified 1e-9 (dual coordinate descent), whose objective
bounds each fit's true suboptimality (checked against its gap) and whose test accuracy is the one
every exact solver tends to.

Run: ``python -m benchmarks.bench_wide_hinge_cluster [--rows 200000] [--features 200000]``, or with
``--parts 2 8 32 100 [--cache default 10%]``.  Writes ``benchmarks/results/wide_hinge_cluster.json``
(``wide_hinge_cluster_parts.json``) and the section "The hinge on wide text on a cluster" ("K parts:
the hinge on wide text on a cluster") of docs/benchmarks.md.
"""

import argparse
import glob
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ENV_AT_START, ROOT, machine, run_child, run_header, save_json, write_section
from benchmarks.bench_cluster_band import reads_after_first
from benchmarks.bench_text import write_wide

RESULTS = ROOT / "benchmarks" / "results" / "wide_hinge_cluster.json"
SECTION = "## The hinge on wide text on a cluster"
PARTS_RESULTS = ROOT / "benchmarks" / "results" / "wide_hinge_cluster_parts.json"
PARTS_SECTION = "## K parts: the hinge on wide text on a cluster"
METHODS = ("auto", "cocoa")
GOAL_READS = 5  # issue 52: at most 5 rounds to 1e-3 at K = 2, 8, 32, 100


def _fit_on(cluster, spec, params, blocksize, small_rows):
    """On ``cluster``: a small fit of the first file's first ``small_rows`` rows, a chunk a worker
    (the workers' kernels loaded), then the timed fit of every file read in ``blocksize`` blocks: its
    seconds, partitions, methods, reads or rounds, gap, objective, test accuracy and sample."""
    import warnings

    import dask.array as da
    from dask.distributed import Client
    from sklearn.datasets import load_svmlight_file

    from benchmarks.bench_peers import load_test
    from dask_streamsvm import LinearSVC, read_libsvm

    chunk = max(1, small_rows // len(cluster.workers))
    with Client(cluster) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Xs, ys = load_svmlight_file(sorted(glob.glob(spec["train"]))[0], n_features=spec["n_features"])
        n = chunk * len(cluster.workers)
        Xs, ys = da.from_array(Xs[:n], chunks=(chunk, Xs.shape[1])), da.from_array(ys[:n], chunks=chunk)
        LinearSVC(**params).fit(Xs, ys, client=client)
        X, y = read_libsvm(spec["train"], n_features=spec["n_features"], blocksize=blocksize)
        clf = LinearSVC(**params)
        t = time.perf_counter()
        clf.fit(X, y, client=client)
        seconds = time.perf_counter() - t
    Xt, yt = load_test(spec["test"])
    methods = list(dict.fromkeys(r.get("method") for r in clf.history_))
    return {
        "fit_s": seconds, "partitions": int(X.numblocks[0]), "methods": [m for m in methods if m],
        "passes": reads_after_first(clf.history_), "gap": float(clf.duality_gap_),
        "objective": float(clf.objective_),
        "accuracy": float(np.mean(clf.predict(Xt) == yt)),
        "sample_rows": next((int(r["sample_rows"]) for r in clf.history_ if "sample_rows" in r), None),
    }  # fmt: skip


def child_cluster(spec):
    from dask.distributed import LocalCluster

    params = dict(loss="hinge", C=spec["C"], fit_intercept=False, tol=1e-3, max_iter=60, random_state=0,
                  cluster=spec["method"])  # fmt: skip
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        return _fit_on(cluster, spec, params, spec["blocksize"], 2_000)


def _load_rows(spec):
    """Every training file loaded by scikit-learn: ``(X, y)``, CSR float64."""
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    parts = [load_svmlight_file(f, n_features=spec["n_features"]) for f in sorted(glob.glob(spec["train"]))]
    return sp.vstack([p[0] for p in parts]).tocsr(), np.concatenate([p[1] for p in parts])


def child_optimum(spec):
    """The problem solved in memory to a certified 1e-9: its objective and test accuracy."""
    from benchmarks.bench_peers import load_test
    from dask_streamsvm import LinearSVC

    X, y = _load_rows(spec)
    clf = LinearSVC(loss="hinge", C=spec["C"], fit_intercept=False, tol=1e-9, max_iter=10_000).fit(X, y)
    Xt, yt = load_test(spec["test"])
    return {"objective": float(clf.objective_), "gap": float(clf.duality_gap_),
            "accuracy": float(np.mean(clf.predict(Xt) == yt))}  # fmt: skip


def child_parts(spec):
    """``cluster="auto"`` on ``spec["K"]`` single-thread workers of an in-process LocalCluster."""
    from dask.distributed import LocalCluster

    K = spec["K"]
    params = dict(loss="hinge", C=spec["C"], fit_intercept=False, tol=1e-3, max_iter=60, random_state=0)
    if spec["cache"] != "default":
        params["cache_bytes"] = spec["cache"]
    # blocks of at most a K-th of the text: at least K partitions, one part per worker
    blocksize = max(1, sum(os.path.getsize(f) for f in glob.glob(spec["train"])) // K)
    with LocalCluster(
        n_workers=K, threads_per_worker=1, processes=False, dashboard_address=":0", memory_limit=0
    ) as cluster:  # fmt: skip
        return {"K": K, "cache": spec["cache"], **_fit_on(cluster, spec, params, blocksize, 2_000)}


def parts_report(payload):
    spec, best = payload["spec"], payload["optimum"]
    lines = [
        "",
        f"`{payload['command']}`, {payload['date']}, load {payload['load']} at the start; commit "
        f"{payload['commit']}. The wide set of the section 'The hinge on wide text on a cluster' "
        f"({spec['n_rows']:,} rows x "
        f"{spec['n_features']:,} columns, 50 nonzeros a row, {spec['files']} LIBSVM files); "
        "`LinearSVC(loss='hinge', C=1, fit_intercept=False, tol=1e-3, max_iter=60, random_state=0)`, "
        "`cluster='auto'`, on K parts: K single-thread workers of an in-process `LocalCluster` (a cluster "
        "fit makes one part per worker), the files read in blocks of at most a K-th of the text, each K in "
        "a fresh process after a small fit on the same cluster. *after the first read*: reads (the band) "
        "or rounds (CoCoA+) after the read that counts the classes and keeps the parts' samples; counts, "
        "not times (the K workers share 2 cores). *true bound*: the objective's distance from the optimum "
        f"({best['objective']:.6f}, solved in memory to a certified gap of {best['gap']:.1e}; its test "
        f"accuracy {best['accuracy']:.5f}) is within the gap. Goal: at most {GOAL_READS} to 1e-3.",
        "",
        "| cache_bytes | K | partitions | method | after the first read | gap | true bound | test accuracy "
        "| seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in payload["records"]:
        sub = (r["objective"] - best["objective"]) / r["objective"]
        cache = "1GB (default)" if r["cache"] == "default" else r["cache"]
        lines.append(
            f"| {cache} | {r['K']} | {r['partitions']} | {', '.join(r['methods'])} | {r['passes']} | "
            f"{r['gap']:.1e} | {'yes' if sub <= r['gap'] + 1e-12 else 'NO'} | {r['accuracy']:.5f} | "
            f"{r['fit_s']:.1f} |"
        )
    met = [r for r in payload["records"] if r["gap"] <= 1e-3 and r["passes"] <= GOAL_READS]
    lines += ["", f"Within the goal: {len(met)} of {len(payload['records'])} fits.", ""]
    after = {m for r in payload["records"] for m in r["methods"][1:]}  # what the band gave way to
    if any(r["passes"] == 0 for r in payload["records"]) and after:
        instead = {
            "cocoa": "CoCoA+ trains, its rounds damped by sigma' = K",
            "sbm": "SBM's trainer on the first worker trains (`cluster='sbm'`), each partition read on its "
            "part's worker and brought to it",
        }
        lines += [
            "Where the parts' first read keeps every row (the default cache: a K-th of 1 GB holds each "
            "part), the first worker solves the data's problem and no round follows, at every K. Where it "
            f"does not (10%), {'; '.join(instead.get(m, m) for m in sorted(after))}. *after the first "
            "read* counts the band's read and every pass (or round) of the method after it.",
            "",
        ]
    return lines


def report(payload):
    row, spec = payload["row"], payload["spec"]
    liblinear = row["liblinear"]
    base = liblinear["load_s"] + liblinear["fit_s"]
    lines = [
        "",
        f"`{payload['command']}`, {payload['date']}, load {payload['load']} at the start; commit "
        f"{payload['commit']}. {spec['n_rows']:,} rows x {spec['n_features']:,} columns, 50 nonzeros a row "
        f"({row['text_mb']:.0f} MB of LIBSVM text in {spec['files']} files); hinge, "
        "C = 1, no intercept, tol 1e-3, on a `LocalCluster` of 2 single-thread worker processes, each "
        "method in a fresh process after a small fit on the same cluster. `auto`: the default "
        "`cache_bytes` (1 GB) holds every row, so the parts' first read keeps them all and the first "
        "worker solves their problem (dual coordinate descent); `cocoa`: CoCoA+ rounds. *after the first "
        "read*: reads (auto) or rounds (cocoa). LIBLINEAR: scikit-learn's `load_svmlight_file` of every "
        f"file ({liblinear['load_s']:.2f} s) and its `LinearSVC(loss='hinge')` ({liblinear['fit_s']:.2f} s) "
        f"in one process, test accuracy {liblinear['accuracy']:.4f}.",
        "",
        "| cluster | fit s | after the first read | gap | test accuracy | fit / LIBLINEAR load + fit |",
        "|---|---|---|---|---|---|",
    ]
    for method in METHODS:
        r = row[method]
        lines.append(
            f"| {method} ({', '.join(m for m in r['methods'] if m)}) | {r['fit_s']:.2f} | {r['passes']} | "
            f"{r['gap']:.1e} | {r['accuracy']:.4f} | {r['fit_s'] / base:.2f} |"
        )
    auto, cocoa = row["auto"], row["cocoa"]
    lines += [
        "",
        f"`cluster='auto'` takes {auto['fit_s'] / base:.2f} of LIBLINEAR's load and fit and "
        f"{auto['fit_s'] / cocoa['fit_s']:.2f} of CoCoA+'s time ({cocoa['passes']} rounds), no round after "
        "the read that counts the classes; its test accuracy is within 0.001 of LIBLINEAR's.",
        "",
    ]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=200_000)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--render", action="store_true", help="the docs section again from the results")
    parser.add_argument("--parts", type=int, nargs="*", default=[], help="K: cluster='auto' on K parts")
    parser.add_argument("--cache", nargs="+", default=["default"], help="cache_bytes of the --parts fits")
    args = parser.parse_args(argv)
    if args.render:
        write_section(SECTION, report(json.loads(RESULTS.read_text())))
        if PARTS_RESULTS.exists():
            write_section(PARTS_SECTION, parts_report(json.loads(PARTS_RESULTS.read_text())))
        return
    if args.parts:
        return parts_main(args, argv)
    payload = run_header("bench_wide_hinge_cluster", argv)
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="bench-wide-hinge-cluster-") as tmp:
        spec = write_wide(Path(tmp), args.rows, n_features=args.features)
        spec["scratch"] = tmp
        row = {"text_mb": sum(os.path.getsize(f) for f in glob.glob(spec["train"])) / 1e6}
        row["liblinear"] = run_child("bench_wide_hinge", "liblinear", spec)
        print(f"liblinear: {row['liblinear']}", flush=True)
        for method in METHODS:
            row[method] = run_child("bench_wide_hinge_cluster", "cluster", {**spec, "method": method},
                                    env=ENV_AT_START)  # fmt: skip
            print(f"{method}: {row[method]}", flush=True)
        spec["files"] = len(glob.glob(spec["train"]))
    payload.update(machine=machine(), spec=spec, row=row)
    save_json(RESULTS, payload)
    write_section(SECTION, report(payload))
    print(f"wrote {RESULTS.relative_to(ROOT)} and docs/benchmarks.md")


def parts_main(args, argv):
    payload = run_header("bench_wide_hinge_cluster", argv)
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="bench-wide-hinge-cluster-") as tmp:
        spec = write_wide(Path(tmp), args.rows, n_features=args.features)
        spec["files"] = len(glob.glob(spec["train"]))
        payload["optimum"] = run_child("bench_wide_hinge_cluster", "optimum", spec)
        print(f"optimum: {payload['optimum']}", flush=True)
        records = []
        for cache in args.cache:
            for K in args.parts:
                r = run_child("bench_wide_hinge_cluster", "parts", {**spec, "K": K, "cache": cache},
                              env=ENV_AT_START)  # fmt: skip
                print(f"K={K}, {cache}: {r}", flush=True)
                records.append(r)
    payload.update(machine=machine(), spec=spec, records=records)
    save_json(PARTS_RESULTS, payload)
    write_section(PARTS_SECTION, parts_report(payload))
    print(f"wrote {PARTS_RESULTS.relative_to(ROOT)} and docs/benchmarks.md")


if __name__ == "__main__":
    main(sys.argv[1:])

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

Run: ``python -m benchmarks.bench_wide_hinge_cluster [--rows 200000] [--features 200000]``.
Writes ``benchmarks/results/wide_hinge_cluster.json`` and the section "The hinge on wide text on a
cluster" of docs/benchmarks.md.
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
from benchmarks.bench_text import write_wide

RESULTS = ROOT / "benchmarks" / "results" / "wide_hinge_cluster.json"
SECTION = "## The hinge on wide text on a cluster"
METHODS = ("auto", "cocoa")


def child_cluster(spec):
    import warnings

    import dask.array as da
    from dask.distributed import Client, LocalCluster
    from sklearn.datasets import load_svmlight_file

    from benchmarks.bench_peers import load_test
    from dask_streamsvm import LinearSVC, read_libsvm

    params = dict(loss="hinge", C=spec["C"], fit_intercept=False, tol=1e-3, max_iter=60, random_state=0)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        # a small fit first, of the first file's first rows: the workers' kernels loaded
        first = sorted(glob.glob(spec["train"]))[0]
        Xs, ys = load_svmlight_file(first, n_features=spec["n_features"])
        Xs, ys = (
            da.from_array(Xs[:2_000], chunks=(1_000, Xs.shape[1])),
            da.from_array(ys[:2_000], chunks=1_000),
        )
        LinearSVC(cluster=spec["method"], **params).fit(Xs, ys, client=client)
        X, y = read_libsvm(spec["train"], n_features=spec["n_features"], blocksize=spec["blocksize"])
        clf = LinearSVC(cluster=spec["method"], **params)
        t = time.perf_counter()
        clf.fit(X, y, client=client)
        seconds = time.perf_counter() - t
    Xt, yt = load_test(spec["test"])
    methods = list(dict.fromkeys(r.get("method") for r in clf.history_))
    return {
        "fit_s": seconds, "methods": methods, "passes": int(clf.n_iter_), "gap": float(clf.duality_gap_),
        "accuracy": float(np.mean(clf.predict(Xt) == yt)),
        "sample_rows": next((int(r["sample_rows"]) for r in clf.history_ if "sample_rows" in r), None),
    }  # fmt: skip


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
    args = parser.parse_args(argv)
    if args.render:
        write_section(SECTION, report(json.loads(RESULTS.read_text())))
        return
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


if __name__ == "__main__":
    main(sys.argv[1:])

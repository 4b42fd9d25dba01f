"""Two reads: the tall default fit certified from its second read, against a plain read.

The default fit on tall data (``LinearSVC(C).fit(frame[features], frame["label"])``: ``dual="auto"``,
the primal Newton solver) reads the rows once to count the classes and keep a sample, solves the
sample in memory, and reads them a second time at the sample's solution, keeping the band of rows
nearest the hinge point.  Where the band's step moves no row outside the band across the hinge
point (``engine/primal/newton.py: band_certificate``), that read certifies the step's point and the
fit ends after two reads; else a third read certifies it.

For each tall set (2M x 60 float32 rows in Parquet: dense Gaussian features, and the same rows on a
0..255 scale) and each C, in each condition (quiet, and beside ``--busy`` busy processes,
``python -c "while True: pass"``), each in a fresh interpreter with the numba cache loaded by a
warm-up fit first (as ``bench_process``), interleaved ``--repeats`` times:

- two plain Dask reads of the files (each partition to a float32 array, joined into one array of
  every row): the first, as a fresh process makes it, and the best of the two
  (``bench_process.child_read``);
- two partition reads in another fresh process, each making each partition's float32 array and
  dropping it, as a fit holds a partition at a time: the first and the best of the two
  (``bench_process.child_partition_read``);
- the default fit: its seconds, CPU-seconds, reads, gap, whether the last read's band certified
  the fit (``band_certified``), and the seconds of the solve in memory after the first read
  (``solve_s``: the first record's ``warm_start_s``, the sample's solve, or every row's where the
  first read kept them).

``--before DIR``: the fits also run on the package in ``DIR`` (a ``git worktree`` of an earlier
commit), in the same run, interleaved (with ``--memory``, its in-memory fits too, ``--repeats``
each).  ``--prefetch N``: the fits also run with the estimator's
``prefetch=N`` (partitions read ahead; default 2), interleaved too (version ``prefetch=N``).  Issue
52's goal: 2 reads to a 1e-3 gap, in at most 2.5 plain reads' time.

    python -m benchmarks.bench_two_reads --data-dir /tmp/tall              # <dir>/dense, <dir>/raw
    python -m benchmarks.bench_two_reads --data-dir /tmp/tall --before /tmp/wt_before --busy 0,1

Results: ``benchmarks/results/two_reads.json`` and the section "Two reads" of ``docs/benchmarks.md``.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

MARKER = "## Two reads"
GOALS = {"reads": 2, "fit_over_read": 2.5}
BUSY = "while True: pass"
SETS = {"dense": "dense", "raw": "raw 0..255"}
RUN_KEYS = ("fit_s", "reads", "gap", "record_s", "solve_s", "band_bytes", "package")  # kept of each fit
READ_KEYS = ("read_s", "best_read_s", "partition_read_s", "best_partition_read_s")  # kept of each read
# The estimator's parameters by ``--loss``: the default fit, and the hinge with a 10% cache (issue 52:
# solver="auto" trains it from a sample, the band within the cache).
LOSSES = {"squared_hinge": {}, "hinge": {"loss": "hinge", "cache_bytes": "10%"}}
HINGE_MARKER = "## The hinge from a sample"
HINGE_GOALS = {"reads": 3, "fit_over_read": 3.5}
MEMORY_KEYS = ("memory_s", "memory_cpu_s", "memory_gap")  # of each in-memory fit (medians of the repeats)
MEMORY_HINGE_PASSES = 100  # the in-memory hinge's passes at most: it stalls near a gap of 1 on raw 0..255


def child_fit(spec):
    """The default fit on the files, after a warm-up fit that loads the numba cache."""
    import numpy as np

    from benchmarks.bench_primal import count_reads
    from benchmarks.bench_process import _open, _timed
    from dask_streamsvm import LinearSVC

    frame, features = _open(spec["path"])
    head = frame.partitions[0].compute().iloc[:2000]
    params = {"C": spec["C"], "tol": spec["tol"], **LOSSES[spec.get("loss", "squared_hinge")]}
    if spec.get("cache_bytes"):
        params["cache_bytes"] = spec["cache_bytes"]
    if spec.get("prefetch"):
        params["prefetch"] = spec["prefetch"]
    LinearSVC(**params).fit(head[features].to_numpy(), head["label"].to_numpy())
    LinearSVC(**params).fit(frame.partitions[:2][features], frame.partitions[:2]["label"])  # its kernels
    model = LinearSVC(**params)
    clf, wall, cpu = _timed(lambda: model.fit(frame[features], frame["label"]))
    last = clf.history_[-1]
    return {
        "fit_s": wall, "fit_cpu_s": cpu, "gap": float(np.max(clf.duality_gap_)),
        "reads": count_reads(clf.history_, spec["n_rows"], int(clf.n_iter_)),
        "band_certified": bool(last.get("band_certified", False)),
        "band_bytes": int(max(r.get("band_bytes") or 0 for r in clf.history_)),
        "record_s": [round(float(r["seconds"]), 3) for r in clf.history_],
        "solve_s": clf.history_[0].get("warm_start_s"),
    }  # fmt: skip


def child_cluster(spec):
    """The default fit on a LocalCluster of 2 single-thread worker processes reading the files (with
    ``dual=False`` the Newton solver on the workers), after a warm-up fit on it."""
    import numpy as np
    from dask.distributed import Client, LocalCluster

    from benchmarks.bench_primal import count_reads
    from benchmarks.bench_process import _open, _timed
    from dask_streamsvm import LinearSVC

    frame, features = _open(spec["path"])
    loss = spec.get("loss", "squared_hinge")
    params = {"C": spec["C"], "tol": spec["tol"], **LOSSES[loss]}
    if spec.get("cache_bytes"):
        params["cache_bytes"] = spec["cache_bytes"]
    if loss == "squared_hinge":  # the Newton steps on the workers
        params["dual"] = False
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:  # fmt: skip
        head = frame.partitions[:2]  # two partitions: the kernels loaded on both workers
        LinearSVC(**params).fit(head[features], head["label"], client=client)
        model = LinearSVC(**params)
        clf, wall, cpu = _timed(lambda: model.fit(frame[features], frame["label"], client=client))
        # the same fit again on the same workers: a cluster kept between fits, its memory used before
        _, again, _ = _timed(lambda: LinearSVC(**params).fit(frame[features], frame["label"], client=client))
    first = clf.history_[0]
    return {
        "fit_s": wall, "fit_cpu_s": cpu, "gap": float(np.max(clf.duality_gap_)), "again_s": again,
        "reads": count_reads(clf.history_, spec["n_rows"], int(clf.n_iter_)),
        "band_certified": bool(clf.history_[-1].get("band_certified", False)),
        "band_bytes": 0, "record_s": [round(float(r["seconds"]), 3) for r in clf.history_],
        "warm_start_s": first.get("warm_start_s"),
        "bytes_received": int(clf.history_[-1].get("bytes_received", 0)),
    }  # fmt: skip


def child_softmax_cluster(spec):
    """``LogisticRegression`` (the softmax model, three classes) on a LocalCluster
    of 2 single-thread worker processes reading the files, after a warm-up fit on two partitions;
    then the same fit again on the same cluster."""
    import numpy as np
    from dask.distributed import Client, LocalCluster

    from benchmarks.bench_process import _open, _timed
    from dask_streamsvm import LogisticRegression

    frame, features = _open(spec["path"])
    # three classes: 0, 1 or 2 by f0 + f1 - f2 below -0.5, within, above 0.5 (Dask's own expressions,
    # which the workers of an earlier checkout unpickle too)
    score = frame["f0"] + frame["f1"] - frame["f2"]
    frame = frame.assign(label3=(score > -0.5).astype("int64") + (score > 0.5).astype("int64"))
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:  # fmt: skip
        head = frame.partitions[:2]
        LogisticRegression(tol=spec["tol"]).fit(head[features], head["label3"], client=client)
        model = LogisticRegression(tol=spec["tol"])
        clf, wall, cpu = _timed(lambda: model.fit(frame[features], frame["label3"], client=client))
        _, again, _ = _timed(
            lambda: LogisticRegression(tol=spec["tol"]).fit(frame[features], frame["label3"], client=client)
        )
    return {
        "fit_s": wall, "fit_cpu_s": cpu, "again_s": again, "gap": float(np.max(clf.duality_gap_)),
        "reads": int(np.ceil(clf.history_[-1]["rows_read"] / spec["n_rows"] - 1e-9)),
        "n_iter": int(clf.n_iter_), "record_s": [round(float(r["seconds"]), 3) for r in clf.history_],
    }  # fmt: skip


def child_memory(spec):
    """Ours in memory on the files' rows (read into RAM first, not timed), after a warm-up fit on a few
    of them: ``dual=False`` for the squared hinge; for the hinge the in-memory dual solver
    (``solver="memory"``, LIBLINEAR's DCD), at most :data:`MEMORY_HINGE_PASSES` passes."""
    import warnings

    from benchmarks.bench_primal import read_parquet_rows
    from benchmarks.bench_process import _timed
    from dask_streamsvm import LinearSVC

    X, y = read_parquet_rows(spec["path"])
    hinge = spec.get("loss") == "hinge"
    params = {"loss": "hinge", "max_iter": MEMORY_HINGE_PASSES} if hinge else {"dual": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the hinge's passes may end before tol: its gap is recorded
        LinearSVC(C=spec["C"], **params).fit(X[:2000], y[:2000])
        model, wall, cpu = _timed(lambda: LinearSVC(C=spec["C"], tol=spec["tol"], **params).fit(X, y))
    return {"memory_s": wall, "memory_cpu_s": cpu, "memory_gap": float(model.duality_gap_)}


def child_read(spec):
    from benchmarks.bench_process import child_read as plain_read

    return plain_read(spec)


def child_partition_read(spec):
    from benchmarks.bench_process import child_partition_read as partition_read

    return partition_read(spec)


def run_child(task, spec, package=None):
    """``child_<task>(spec)`` in a fresh interpreter; ``package``: a checkout whose ``dask_streamsvm``
    it imports instead of this one's."""
    prelude = f"import sys; sys.path.insert(0, {package!r})\n" if package else ""
    code = (
        "import json\n"
        f"from benchmarks.bench_two_reads import child_{task}\n"  # this checkout's benchmarks
        + prelude
        + f"out = child_{task}(json.loads({json.dumps(json.dumps(spec))}))\n"
        "import dask_streamsvm\n"
        "out['package'] = dask_streamsvm.__file__\n"
        "print('RESULT ' + json.dumps(out))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=False, env=env
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"child {task} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(lines[-1][len("RESULT ") :])


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def measure(
    busy, path, name, Cs, tol, n_rows, repeats, before, loss="squared_hinge", cache_bytes=None, prefetch=None
):
    """One set in one condition: its plain reads and its fits at each C, interleaved; ``prefetch``:
    also this package's fits with ``prefetch`` partitions read ahead (version ``prefetch=N``)."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    try:
        time.sleep(1.0 if procs else 0.0)
        load_start = _load()
        versions = {"now": (None, None), **({"before": (before, None)} if before else {})}
        if prefetch:
            versions[f"prefetch={prefetch}"] = (None, prefetch)
        reads, fits = [], {(v, C): [] for v in versions for C in Cs}
        for _ in range(repeats):
            reads.append(run_child("read", {"path": str(path)}))
            reads[-1].update(run_child("partition_read", {"path": str(path)}))
            for C in Cs:
                for version, (package, ahead) in versions.items():
                    spec = {"path": str(path), "C": C, "tol": tol, "n_rows": n_rows, "loss": loss}
                    spec.update(cache_bytes=cache_bytes, prefetch=ahead)
                    fits[version, C].append(run_child("fit", spec, package))
        load_end = _load()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    read_s = statistics.median(r["read_s"] for r in reads)
    best_s = statistics.median(r["best_read_s"] for r in reads)
    part_s = statistics.median(r["partition_read_s"] for r in reads)
    best_part_s = statistics.median(r["best_partition_read_s"] for r in reads)
    rows = []
    for (version, C), runs in fits.items():
        fit_s = statistics.median(r["fit_s"] for r in runs)
        rows.append({
            "data": name, "C": C, "version": version, "busy": busy, "load_start": load_start,
            "load_end": load_end, "read_s": read_s, "best_read_s": best_s, "fit_s": fit_s,
            "fit_cpu_s": statistics.median(r["fit_cpu_s"] for r in runs),
            "solve_s": _median_of(r.get("solve_s") for r in runs),
            "reads": max(r["reads"] for r in runs), "gap": max(r["gap"] for r in runs),
            "band_certified": all(r["band_certified"] for r in runs),
            "fit_over_read": fit_s / read_s, "fit_over_best_read": fit_s / best_s,
            "partition_read_s": part_s, "best_partition_read_s": best_part_s,
            "fit_over_partition_read": fit_s / part_s, "fit_over_best_partition_read": fit_s / best_part_s,
            "runs": [{k: r[k] for k in RUN_KEYS} for r in runs],
            "read_runs": [{k: r[k] for k in READ_KEYS} for r in reads],
        })  # fmt: skip
        print(rows[-1] | {"runs": None, "read_runs": None}, flush=True)
    return rows


def _median_of(values):
    """The median of the values that are not None (None if none is)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def memory_rows(args):
    """Ours in memory (``dual=False``) on each set's rows at each C, in each condition: the fit's
    in-memory counterpart; with ``--before``, the earlier package's too, interleaved, ``--repeats``
    fits each (medians)."""
    rows = []
    versions = {"now": None, **({"before": args.before} if args.before else {})}
    for busy in (int(b) for b in args.busy.split(",")):
        procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
        try:
            time.sleep(1.0 if procs else 0.0)
            for kind in ("dense", "raw"):
                for C in args.Cs:
                    load = _load()
                    spec = {
                        "path": str(Path(args.data_dir) / kind),
                        "C": C,
                        "tol": args.tol,
                        "loss": args.loss,
                    }
                    runs = {version: [] for version in versions}
                    for _ in range(args.repeats):
                        for version, package in versions.items():
                            runs[version].append(run_child("memory", spec, package))
                    for version, outs in runs.items():
                        out = {key: statistics.median(o[key] for o in outs) for key in MEMORY_KEYS}
                        row = {"data": SETS[kind], "C": C, "busy": busy, "load_start": load, **out}
                        rows.append(row | {"version": version, "package": outs[0]["package"]})
                        print(rows[-1], flush=True)
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
    return rows


def cluster_rows(path, C, tol, before, loss="squared_hinge", cache_bytes=None):
    """The dense set's fit on a 2-worker LocalCluster, now and (``before``) on the earlier package
    (``cache_bytes``: the fits', else the loss's)."""
    import pyarrow.parquet as pq

    n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(path.glob("*.parquet")))
    rows = []
    for version, package in {"now": None, **({"before": before} if before else {})}.items():
        load = _load()
        spec = {
            "path": str(path),
            "C": C,
            "tol": tol,
            "n_rows": n_rows,
            "loss": loss,
            "cache_bytes": cache_bytes,
        }
        out = run_child("cluster", spec, package)
        rows.append({"version": version, "C": C, "load_start": load, "load_end": _load(), **out})
        print(rows[-1], flush=True)
    return rows


def main(argv=None):
    from benchmarks.bench_primal import synthetic, write_parquet

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", default="/tmp/tall", help="<dir>/dense and <dir>/raw (written if absent)"
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=60)
    parser.add_argument("--C", type=float, nargs="+", default=[0.01, 1.0], dest="Cs")
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--busy", default="0", help="busy processes beside the fits: a list, e.g. 0,1")
    parser.add_argument("--sets", default="dense,raw")
    parser.add_argument("--before", default=None, help="a checkout of an earlier commit, timed too")
    parser.add_argument(
        "--out", default=None, help="results/<OUT>.json instead, and docs/benchmarks.md left as it is"
    )
    parser.add_argument("--loss", default="squared_hinge", choices=sorted(LOSSES))
    parser.add_argument(
        "--cache-bytes", default=None, help="the fits' cache_bytes (default: the loss's, above)"
    )
    parser.add_argument(
        "--prefetch", type=int, default=None,
        help="also the fits with this many partitions read ahead (the estimator's prefetch; default 2)",
    )  # fmt: skip
    parser.add_argument(
        "--memory", action="store_true", help="ours in memory on the same rows, quiet and beside --busy"
    )
    parser.add_argument(
        "--softmax-cluster", action="store_true",
        help="also LogisticRegression's softmax model (three classes) on the dense set on a 2-worker "
        "LocalCluster, quiet, --repeats times (with --sets '' alone)",
    )  # fmt: skip
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="also the dense set on a 2-worker LocalCluster, quiet, each C --repeats times (with --sets '' "
        "alone)",
    )
    args = parser.parse_args(argv)

    import pyarrow.parquet as pq

    payload = {
        **payload_header("bench_two_reads", argv),
        "machine": machine(),
        "goals": HINGE_GOALS if args.loss == "hinge" else GOALS,
        "loss": args.loss,
        "cache_bytes": args.cache_bytes,
        "rows_out": [],
    }
    default_out = "two_reads_hinge" if args.loss == "hinge" else "two_reads"
    results = ROOT / "benchmarks" / "results" / f"{args.out or default_out}.json"
    sets = [kind for kind in args.sets.split(",") if kind]
    if (
        not sets and results.exists()
    ):  # --sets "": the cluster's rows beside the last run's single-machine ones
        command = "python -m benchmarks.bench_two_reads " + shlex.join(sys.argv[1:] if argv is None else argv)
        payload = {**json.loads(results.read_text()), "cluster_command": command}
        payload["cluster_date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for kind in sets:
        path = Path(args.data_dir) / kind
        if not any(path.glob("*.parquet")):
            X, y = synthetic(args.rows, args.features, raw=kind == "raw")
            write_parquet(path, X, y, 100_000)
            del X, y
        n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(path.glob("*.parquet")))
        for busy in (int(b) for b in args.busy.split(",")):
            payload["rows_out"] += measure(
                busy, path, SETS[kind], args.Cs, args.tol, n_rows, args.repeats, args.before, args.loss,
                args.cache_bytes, args.prefetch,
            )  # fmt: skip
    if args.memory:
        payload["memory"] = memory_rows(args)
        payload["memory_command"] = "python -m benchmarks.bench_two_reads " + shlex.join(
            sys.argv[1:] if argv is None else argv
        )
    if args.cluster:
        payload["cluster"] = [
            dict(row, repeat=repeat)
            for repeat in range(args.repeats)
            for C in args.Cs
            for row in cluster_rows(
                Path(args.data_dir) / "dense", C, args.tol, args.before, args.loss, args.cache_bytes
            )
        ]
    if args.softmax_cluster:
        path = Path(args.data_dir) / "dense"
        n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(path.glob("*.parquet")))
        payload["softmax_cluster"] = []
        for repeat in range(args.repeats):
            for version, package in {"now": None, **({"before": args.before} if args.before else {})}.items():
                load = _load()
                out = run_child(
                    "softmax_cluster", {"path": str(path), "tol": args.tol, "n_rows": n_rows}, package
                )
                row = {"version": version, "repeat": repeat, "load_start": load, "load_end": _load(), **out}
                payload["softmax_cluster"].append(row)
                print(row, flush=True)
    save_json(results, payload)
    if args.out is None:
        (write_hinge_report if args.loss == "hinge" else write_report)(payload)


def write_hinge_report(payload):
    lines = [
        f"`{payload['command']}`, {payload['date']}, on {os.cpu_count()} cores.",
        "",
        '`LinearSVC(loss="hinge", C, cache_bytes="10%")` on the same 2M x 60 float32 rows in 20 Parquet '
        'files (`solver="auto"`: the band from a sample, `engine/primal/sample_band.py`), each measurement '
        "in a fresh process after warm-up fits (numba's cache loaded), medians of the repeats; the plain "
        'read as above. `before`: the package named by `--before` (`solver="auto"` was StreamSVM), in the '
        "same run. Goal (issue 52): at most 3 reads and 3.5 plain reads' time; raw 0..255 converges.",
        "",
        *_fit_table(payload["rows_out"]),
    ]
    lines += _partition_summary(payload["rows_out"])
    lines += [
        "",
        "By record: to the first record (the read that counts the classes and keeps the sample, and the "
        "sample's solve), then each read with its band's solve, medians of the repeats. Certified by the "
        "band: the band's whole step was certified without another read; else the part of it the bound "
        "certifies (`band_reach`) ends at the point returned, paired with the band's dual value.",
    ]
    lines += _memory_table(
        payload,
        f'`LinearSVC(loss="hinge", C)` on the same rows read into RAM first (`solver="auto"`: the band '
        "from a sample in memory on these rows since 2026-12-02, dual coordinate descent before), at most "
        f"{MEMORY_HINGE_PASSES} passes, in a fresh process after a warm-up fit",
        gap=True,
    )
    lines += _whole_table(ROOT / "benchmarks" / "results" / "two_reads_hinge_whole.json")
    lines += _before_table(ROOT / "benchmarks" / "results" / "two_reads_hinge_before.json")
    lines += _certificates_table(ROOT / "benchmarks" / "results" / "hinge_band_certificates.json")
    lines += _cluster_table(
        payload, '`loss="hinge"`, `cache_bytes="10%"`: the band on the workers', "now only"
    )
    write_section(HINGE_MARKER, ["", *lines, ""])


def _memory_table(payload, what, gap=False):
    """Ours in memory on the same rows (``--memory``, ``what`` it ran), and the out-of-core fit over
    it; with ``gap``, the gap the in-memory fit reached too."""
    if not payload.get("memory"):
        return []
    lines = [
        "",
        f"`{payload['memory_command']}`: ours in memory ({what}), and the out-of-core fit above of the "
        "same package over it:",
        "",
        "| data | C | busy beside | load | package | in memory s | in memory CPU-s | "
        + ("its gap | " if gap else "")
        + "out of core / in memory |",
        "|---|---|---|---|---|---|---|" + ("---|" if gap else "") + "---|",
    ]
    for m in payload["memory"]:
        version = m.get("version", "now")
        fit = next(
            (r for r in payload["rows_out"]
             if (r["data"], r["C"], r["busy"], r["version"]) == (m["data"], m["C"], m["busy"], version)),
            None,
        )  # fmt: skip
        ratio = f"{fit['fit_s'] / m['memory_s']:.2f}" if fit else "-"
        reached = f"{m.get('memory_gap', float('nan')):.1e} | " if gap else ""
        lines.append(
            f"| {m['data']} | {m['C']:g} | {m['busy']} | {m['load_start'][0]} | {version} | "
            f"{m['memory_s']:.2f} | {m['memory_cpu_s']:.1f} | {reached}{ratio} |"
        )
    return lines


def _whole_table(path):
    """The run with ``--loss hinge --cache-bytes 1GB --out two_reads_hinge_whole``, where there is one:
    a cache that holds every row, so that the first read keeps them and the band trains on them in
    memory (``warm.whole_sample``)."""
    if not path.exists():
        return []
    run = json.loads(path.read_text())
    before = any(r.get("version") == "before" for r in run["rows_out"])
    lines = [
        "",
        f"`{run['command']}`, {run['date']}: the same fits with `cache_bytes={run['cache_bytes']!r}` (the "
        "default), which holds every row with the band's sample and band: the first read keeps them and "
        "the band trains on them in memory, its passes the reads (`warm.whole_sample`)"
        + (
            ", against the package named by `--before` (a sample and two reads), in the same run"
            if before
            else ""
        )
        + ":",
        "",
        *_fit_table(run["rows_out"]),
        *_partition_summary([r for r in run["rows_out"] if r["version"] == "now"]),
    ]
    return lines + _memory_table(
        run,
        '`LinearSVC(loss="hinge", C)` on the same rows read into RAM first (the band in memory)',
        gap=True,
    )


def _before_table(path):
    """The run with ``--before`` and ``--out two_reads_hinge_before`` (StreamSVM), where there is one."""
    if not path.exists():
        return []
    before = json.loads(path.read_text())
    lines = [
        "",
        f'`{before["command"]}`, {before["date"]}: the package before the band (`solver="auto"` streamed '
        "the hinge with StreamSVM) beside this one, in the same run, quiet, one fit each:",
        "",
        "| data | C | load (start, end) | package | reads | gap | fit s | plain read s (first, best) "
        "| fit / best read |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in before["rows_out"]:
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['load_start'][0]}, {r['load_end'][0]} | {r['version']} | "
            f"{r['reads']} | {r['gap']:.1e} | {r['fit_s']:.2f} | {r['read_s']:.2f}, {r['best_read_s']:.2f} | "
            f"{r['fit_over_best_read']:.2f} |"
        )
    return [
        *lines,
        "",
        "StreamSVM on the raw 0..255 set was not timed: it stalls near a gap of 1 there (issue 52).",
    ]


def _cache_table(path):
    """The run with ``--cache-bytes`` below the rows' bytes and ``--out two_reads_cache``, where there is
    one: the Newton reads streamed, where the default cache holds every row."""
    if not path.exists():
        return []
    run = json.loads(path.read_text())
    return [
        "",
        f"`{run['command']}`, {run['date']}: the same fits with `cache_bytes={run['cache_bytes']!r}`, "
        "below the rows' 480 MB: the first read keeps a sample of 244,000 rows, and the Newton reads "
        "stream (the out-of-core path):",
        "",
        *_fit_table(run["rows_out"]),
        *_partition_summary(run["rows_out"]),
    ]


def _certificates_table(path):
    """``python -m benchmarks.check_hinge_band``'s results, where there are some."""
    if not path.exists():
        return []
    lines = [
        "",
        f"The certificates against the optimum (`python -m benchmarks.check_hinge_band`, `{path.name}`): "
        "each default fit above (tol 1e-3) beside the optimum of the same 2M rows solved in memory by the "
        "same smoothed Newton solver to a certified gap below 1e-9. The suboptimality is at least "
        "`(objective - optimum's primal) / objective`:",
        "",
        "| data | C | reads | certified gap | suboptimality at least | certified gap covers it "
        "| in memory s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in json.loads(path.read_text()):
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['reads']} | {r['certified_gap']:.3g} | "
            f"{r['suboptimality_at_least']:.3g} | {'yes' if r['holds'] else 'NO'} | {r['in_memory_s']:.1f} |"
        )
    return lines


def write_report(payload):
    before = any(r.get("version") == "before" for r in payload["rows_out"])
    lines = [
        f"`{payload['command']}`, {payload['date']}, on {os.cpu_count()} cores.",
        "",
        'The tall default fit (`LinearSVC(C)`, `dual="auto"`: the primal Newton solver) on 2M x 60 '
        "float32 rows in 20 Parquet files (480 MB: the default `cache_bytes` of 1 GB holds them, so the "
        "first read keeps every row and the fit is their solve in memory after it; the out-of-core path, "
        "with a cache below the rows, is measured below), each measurement in a fresh process after a "
        "warm-up fit (numba's cache loaded), medians of the repeats; the plain read is a Dask read of "
        "every partition to a float32 array joined into one of every row, the first a fresh process makes"
        " and the best of two; the partition read, in another fresh process, makes each partition's "
        "float32 array and drops it, as a fit holds a partition at a time (the joined read's array of "
        "every row, 480 MB, costs the faults of its fresh pages, and its `lengths=True` reads every "
        "partition once more), the first and the "
        "best of two."
        + (
            " `before`: the package named by `--before` (a checkout of an earlier commit), timed in the same "
            "run."
            if before
            else ""
        )
        + " Goal (issue 52): 2 reads, at most 2.5 plain reads' time.",
        "",
        *_fit_table(payload["rows_out"]),
    ]
    lines += _partition_summary(payload["rows_out"])
    lines += [
        "",
        "By record: the seconds from the fit's start to its first record (the first read, which counts "
        "the classes and keeps the sample, and the sample's solve in memory), from each record to the next "
        "(a read; a record's time is taken when its read ends, before the step it makes), and from the last "
        "record to the fit's end (the last step: for the band's certificate, its step and the certificate "
        "of it), medians of the repeats.",
    ]
    lines += _memory_table(
        payload,
        "`LinearSVC(C, dual=False)` on the same rows read into RAM first, in a fresh process after a "
        "warm-up fit",
    )
    lines += _cache_table(ROOT / "benchmarks" / "results" / "two_reads_cache.json")
    lines += _cluster_table(
        payload,
        "`dual=False`",
        "the warm start is solved on a worker" + (", on the client before" if before else ""),
    )
    write_section(MARKER, ["", *lines, ""])


def _cluster_table(payload, fit, versions):
    """The cluster's table of ``payload`` (none where it has no cluster rows)."""
    if not payload.get("cluster"):
        return []
    lines = [
        "",
        f"`{payload.get('cluster_command', payload['command'])}`, "
        f"{payload.get('cluster_date', payload['date'])}: on a LocalCluster of 2 single-thread "
        f"worker processes (the dense set, {fit}, after a warm-up fit on two partitions; one fit each; "
        f"{versions}):",
        "",
        "| package | C | load (start, end) | reads | certified by the band | gap | fit s | warm start s "
        "| by record s | the same fit again s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in payload["cluster"]:
        again = f"{r['again_s']:.2f}" if r.get("again_s") is not None else "-"
        lines.append(
            f"| {r['version']} | {r['C']:g} | {r['load_start'][0]}, {r['load_end'][0]} | {r['reads']} | "
            f"{'yes' if r['band_certified'] else 'no'} | {r['gap']:.1e} | {r['fit_s']:.2f} | "
            f"{r['warm_start_s']:.2f} | {_by_record([r])} | {again} |"
        )
    return lines


def _fit_table(rows):
    """The fits' table: a header and a line per row of ``rows_out``."""
    lines = [
        "| data | C | busy beside | load (start, end) | package | reads | certified by the band | gap "
        "| fit s | fit CPU-s | plain read s (first, best) | fit / first read | fit / best read "
        "| partition read s (first, best) | fit / first partition read | fit / best partition read "
        "| by record s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        part, best = r.get("partition_read_s"), r.get("best_partition_read_s")  # none in earlier runs
        by_part = (
            ("-", "-", "-")
            if part is None
            else (f"{part:.2f}, {best:.2f}", f"{r['fit_s'] / part:.2f}", f"{r['fit_s'] / best:.2f}")
        )
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['busy']} | {r['load_start'][0]}, {r['load_end'][0]} | "
            f"{r['version']} | {r['reads']} | {'yes' if r['band_certified'] else 'no'} | {r['gap']:.1e} | "
            f"{r['fit_s']:.2f} | {r['fit_cpu_s']:.1f} | {r['read_s']:.2f}, {r['best_read_s']:.2f} | "
            f"{r['fit_over_read']:.2f} | {r['fit_over_best_read']:.2f} | "
            f"{by_part[0]} | {by_part[1]} | {by_part[2]} | {_by_record(r['runs'])} |"
        )
    return lines


def _partition_summary(rows):
    """A sentence per condition: the fit over the partition read (none where no run timed it)."""
    lines = []
    for busy in sorted({r["busy"] for r in rows if r.get("partition_read_s")}):
        these = [r for r in rows if r["busy"] == busy and r.get("partition_read_s")]
        first = [r["fit_s"] / r["partition_read_s"] for r in these]
        best = [r["fit_s"] / r["best_partition_read_s"] for r in these]
        where = "quiet" if busy == 0 else f"beside {busy} busy process{'es' if busy > 1 else ''}"
        lines += [
            "",
            f"Against the partition read ({where}): the fit takes {min(first):.1f}-{max(first):.1f} times a "
            f"fresh process's first and {min(best):.1f}-{max(best):.1f} times the best; against the joined "
            f"read's best, {min(r['fit_over_best_read'] for r in these):.2f}-"
            f"{max(r['fit_over_best_read'] for r in these):.2f}.",
        ]
    return lines


def _by_record(runs):
    """The median seconds to the first record, between records, and after the last, joined by +."""
    marks = [[*run["record_s"], run["fit_s"]] for run in runs]
    spans = [[m[0]] + [b - a for a, b in zip(m, m[1:], strict=False)] for m in marks]
    return " + ".join(f"{statistics.median(s[i] for s in spans):.2f}" for i in range(len(spans[0])))


if __name__ == "__main__":
    main()

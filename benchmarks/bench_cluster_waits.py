"""Cluster waits: what a fit on a 2-worker LocalCluster costs and leaves behind, now and before.

Each measure is a fresh interpreter that starts a ``LocalCluster`` of two single-thread worker
processes, makes one small fit (the workers import the library), then times each method's fit on
ijcnn1 (49,990 x 22, 4 partitions of a Dask array from memory) and counts the tasks the scheduler
still holds one second after the fit returned, Python's garbage collector left as it is:

- ``cocoa``: ``LinearSVC(loss="hinge", cluster="cocoa", max_iter=30, tol=1e-12)``, 30 rounds;
- ``band``: ``LinearSVC(loss="hinge", cache_bytes="10%")``, ``cluster="auto"``;
- ``newton``: ``LinearSVC(dual=False, tol=1e-10)``;
- ``average``: ``LinearSVC(cluster="average")``.

``--before DIR``: the same in the package of ``DIR`` (a ``git worktree`` of an earlier commit; the
workers import it too), alternated with this checkout's, ``--repeats`` times each; ``--busy 0,1``:
quiet, then beside one busy process (``python -c "while True: pass"``).

    python -m benchmarks.bench_cluster_waits --before /tmp/before --busy 0,1 --repeats 3

Results: ``benchmarks/results/cluster_waits.json`` and the section "Cluster waits: the futures'
states looked at" of ``docs/benchmarks.md``.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from ._common import ROOT, beside_busy, data_dir, run_header, save_json, write_section

MARKER = "## Cluster waits: the futures' states looked at"
METHODS = {
    "cocoa": {"loss": "hinge", "cluster": "cocoa", "max_iter": 30, "tol": 1e-12},
    "band": {"loss": "hinge", "cache_bytes": "10%"},
    "newton": {"dual": False, "tol": 1e-10},
    "average": {"cluster": "average"},
}


def child_fits(spec):
    """Each method's seconds, records and the tasks left on the scheduler 1 s after it returned."""
    import gc
    import time
    import warnings

    import distributed
    from sklearn.datasets import load_svmlight_file

    import dask_streamsvm
    from dask_streamsvm import LinearSVC
    from dask_streamsvm.io import csr_to_dask

    X, y = load_svmlight_file(str(data_dir() / "ijcnn1.bz2"))
    Xd, yd = csr_to_dask(X.tocsr(), y, 4)
    out = {"package": dask_streamsvm.__file__}
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        warnings.simplefilter("ignore")  # the capped fits warn of max_iter: not what is measured
        LinearSVC(cluster="cocoa", max_iter=2, random_state=0).fit(Xd, yd, client=client)
        for name, params in METHODS.items():
            gc.collect()  # what a method before left in cycles goes now, not during this one
            time.sleep(0.5)
            start = time.perf_counter()
            model = LinearSVC(random_state=0, **params).fit(Xd, yd, client=client)
            seconds = time.perf_counter() - start
            time.sleep(1.0)
            left = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
            out[name] = {"seconds": round(seconds, 3), "records": len(model.history_), "tasks_left": left}
            del model
    return out


def run_fits(package):
    """:func:`child_fits` in a fresh interpreter importing ``dask_streamsvm`` from ``package`` (None:
    this checkout), its workers too."""
    code = (  # this checkout's benchmarks; the package (imported in child_fits) from PYTHONPATH
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from benchmarks.bench_cluster_waits import child_fits\n"
        f"sys.path.remove({str(ROOT)!r})\n"
        "print('RESULT ' + json.dumps(child_fits({})))\n"
    )
    env = dict(os.environ, PYTHONPATH=package or str(ROOT))  # the workers' package too
    proc = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"child failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(lines[-1][len("RESULT ") :])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="a checkout of an earlier commit, timed too")
    parser.add_argument("--busy", default="0", help="busy processes beside the fits, e.g. 0,1")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    payload = run_header("bench_cluster_waits", argv)
    versions = {"now": None, **({"before": args.before} if args.before else {})}
    rows = []
    for busy in [int(b) for b in args.busy.split(",")]:
        with beside_busy(busy):
            for repeat in range(args.repeats):
                for version, package in versions.items():
                    load = round(os.getloadavg()[0], 2)
                    out = run_fits(package)
                    rows.append({"version": version, "busy": busy, "repeat": repeat, "load": load, **out})
                    print(json.dumps(rows[-1]), flush=True)
    payload["rows"] = rows
    save_json(ROOT / "benchmarks" / "results" / "cluster_waits.json", payload)
    write_section(MARKER, report_lines(payload))


def report_lines(payload):
    """The docs' section: per busy level and method, the medians now and before, their ratio, and
    the tasks left."""
    rows = payload["rows"]
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; load at the start {payload['load']}; commit {payload['commit']}.",
        "",
        "Each measure a fresh process starting a `LocalCluster` of 2 single-thread worker processes, "
        "one small fit, then each method's fit on ijcnn1 (49,990 x 22, 4 partitions of a Dask array "
        "from memory), C = 1: `cocoa` 30 CoCoA+ rounds of the hinge, `band` the hinge at "
        '`cache_bytes="10%"` (`cluster="auto"`), `newton` `dual=False` to 1e-10, `average` '
        '`cluster="average"`. *tasks left*: the tasks the scheduler held 1 s after the fit returned '
        "(Python's collector left as it is), over the repeats. *before*: the package of `--before`, "
        "its workers too, alternated with this one's; medians of the repeats.",
        "",
        "| busy beside | method | now s | before s | now / before | tasks left now | tasks left before |",
        "|---|---|---|---|---|---|---|",
    ]
    for busy in sorted({r["busy"] for r in rows}):
        for name in METHODS:
            now = [r[name] for r in rows if r["busy"] == busy and r["version"] == "now"]
            before = [r[name] for r in rows if r["busy"] == busy and r["version"] == "before"]
            t_now = float(np.median([m["seconds"] for m in now]))
            t_before = float(np.median([m["seconds"] for m in before])) if before else None
            ratio = f"{t_now / t_before:.2f}" if t_before else "-"
            left_now = ", ".join(str(m["tasks_left"]) for m in now)
            left_before = ", ".join(str(m["tasks_left"]) for m in before) or "-"
            shown = f"{t_before:.2f}" if t_before else "-"
            lines.append(
                f"| {busy} | {name} | {t_now:.2f} | {shown} | {ratio} | {left_now} | {left_before} |"
            )
    return lines


if __name__ == "__main__":
    main()

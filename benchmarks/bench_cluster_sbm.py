"""SBM on one worker against CoCoA+ and ``cluster="auto"`` on a 2-worker LocalCluster (issue 52).

The hinge at a 10% cache on a9a, w8a and ijcnn1 (``LinearSVC(loss="hinge", C=1, fit_intercept=False,
cache_bytes="10%", tol=1e-3, random_state=0)``, each set a Dask array of 8 CSR partitions), per set a
fresh interpreter that starts a ``LocalCluster`` of two single-thread worker processes and makes one
small fit first (the workers import the library and compile), then:

- ``sbm``: ``cluster="sbm"`` (``engine/cluster/root_sbm.py``: one machine's SBM trainer on the first
  worker, each partition read on its part's worker and brought to it);
- ``auto``: ``cluster="auto"``: the band from a sample, and SBM on one worker where it gives way;
- ``cocoa``: ``cluster="cocoa"``, at most ``--rounds`` rounds;
- ``one machine``: ``cluster=None`` on the same array in the fitting process (``solver="auto"``:
  the band, StreamSVM where it gives way).

*reads*: the reads of the rows after the first (``bench_cluster_band.reads_after_first``: SBM's
passes, the band's reads after the one that kept its sample, CoCoA+'s rounds).  ``--busy 0,1``:
quiet, then beside one busy process (``python -c "while True: pass"``).

    python -m benchmarks.bench_cluster_sbm --busy 0,1

Results: ``benchmarks/results/cluster_sbm_local.json`` and the section "SBM on one worker: a
2-worker LocalCluster" of ``docs/benchmarks.md``.
"""

import argparse
import json
import os

from ._common import (
    ENV_AT_START,
    ROOT,
    beside_busy,
    data_dir,
    run_child,
    run_header,
    save_json,
    write_section,
)

MARKER = "## SBM on one worker: a 2-worker LocalCluster"
SETS = ("a9a", "w8a", "ijcnn1")
FILES = {"a9a": "a9a.bz2", "w8a": "w8a.bz2", "ijcnn1": "ijcnn1.bz2"}
PARAMS = {
    "loss": "hinge",
    "C": 1.0,
    "fit_intercept": False,
    "cache_bytes": "10%",
    "tol": 1e-3,
    "random_state": 0,
}
METHODS = ("sbm", "auto", "cocoa", "one machine")


def child_fits(spec):
    """Each method's seconds, reads, gap and methods on the set ``spec["data"]``."""
    import time
    import warnings

    import distributed
    from sklearn.datasets import load_svmlight_file

    from benchmarks.bench_cluster_band import reads_after_first
    from dask_streamsvm import LinearSVC
    from dask_streamsvm.io import csr_to_dask

    X, y = load_svmlight_file(str(data_dir() / FILES[spec["data"]]))
    Xd, yd = csr_to_dask(X.tocsr(), y, 8)
    out = {}
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        warnings.simplefilter("ignore")  # CoCoA+'s capped rounds warn of max_iter: its gap is recorded
        LinearSVC(cluster="sbm", loss="hinge", max_iter=1, random_state=0).fit(
            Xd[:2000], yd[:2000], client=client
        )
        LinearSVC(cluster=None, loss="hinge", max_iter=1, random_state=0).fit(Xd[:2000], yd[:2000])
        for name in METHODS:
            params = dict(PARAMS, max_iter=spec["rounds"] if name == "cocoa" else 30)
            cluster_mode = None if name == "one machine" else name
            start = time.perf_counter()
            model = LinearSVC(cluster=cluster_mode, **params).fit(
                Xd, yd, client=None if name == "one machine" else client
            )
            seconds = time.perf_counter() - start
            out[name] = {
                "seconds": round(seconds, 3),
                "reads": reads_after_first(model.history_),
                "gap": float(model.duality_gap_),
                "methods": [
                    m for m in dict.fromkeys(r.get("method") or r.get("solver") for r in model.history_) if m
                ],
            }
            del model
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--busy", default="0", help="busy processes beside the fits, e.g. 0,1")
    parser.add_argument("--rounds", type=int, default=100, help="CoCoA+'s rounds at most")
    args = parser.parse_args(argv)
    payload = run_header("bench_cluster_sbm", argv)
    rows = []
    for busy in [int(b) for b in args.busy.split(",")]:
        with beside_busy(busy):
            for data in args.sets:
                load = round(os.getloadavg()[0], 2)
                out = run_child(
                    "bench_cluster_sbm", "fits", {"data": data, "rounds": args.rounds}, env=ENV_AT_START
                )
                rows.append({"data": data, "busy": busy, "load": load, **out})
                print(json.dumps(rows[-1]), flush=True)
    payload["rows"], payload["rounds"] = rows, args.rounds
    save_json(ROOT / "benchmarks" / "results" / "cluster_sbm_local.json", payload)
    write_section(MARKER, report_lines(payload))


def report_lines(payload):
    """Per busy level and set, each method's reads, gap and seconds, and its seconds over SBM's."""
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; load at the start {payload['load']}; commit {payload['commit']}.",
        "",
        "`LinearSVC(loss='hinge', C=1, fit_intercept=False, cache_bytes='10%', tol=1e-3)` on each set as a "
        "Dask array of 8 CSR partitions, in a fresh process per set and busy level that starts a "
        "`LocalCluster` of 2 single-thread worker processes and makes two small fits first: `sbm` "
        "(`cluster='sbm'`), `auto` (`cluster='auto'`: the band, SBM where it gives way), `cocoa` "
        f"(`cluster='cocoa'`, at most {payload['rounds']} rounds) and `one machine` (`cluster=None`: "
        "`solver='auto'` in the fitting process). *reads*: the reads of the rows after the first (SBM's "
        "passes, the band's reads after the one that kept its sample, CoCoA+'s rounds); *load*: the "
        "1-minute load average when the set's process started.",
        "",
        "| busy beside | load | data | method | methods run | reads | gap | seconds | seconds / sbm's |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in payload["rows"]:
        base = row["sbm"]["seconds"]
        for name in METHODS:
            r = row[name]
            lines.append(
                f"| {row['busy']} | {row['load']} | {row['data']} | {name} | {', '.join(r['methods'])} | "
                f"{r['reads']} | {r['gap']:.1e} | {r['seconds']:.2f} | {r['seconds'] / base:.2f} |"
            )
    return lines


if __name__ == "__main__":
    main()

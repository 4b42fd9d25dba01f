"""solver="auto"'s dual schedule: SBM within cache_bytes against StreamSVM (issue 52).

Where neither the band from a sample nor the primal solver trains, ``solver="auto"`` streams a dual
schedule (``engine/choice.py: AUTO_SCHEDULE``): SBM since 2026-12-02, its cache and blocks sharing
``cache_bytes`` half and half (``FitPlan.scheduled``); StreamSVM, with the whole budget its cache,
before.  Here both, on a9a, w8a and ijcnn1 as Dask arrays of 16 partitions, ``cache_bytes="10%"``,
C = 1, tol 1e-3:

- ``loss="hinge"``: the band from a sample first; where its first step is hardly certified it gives
  way to the dual schedule after its first read (on a9a and w8a);
- ``loss="squared_hinge", dual=True``: the dual schedule from the start.

Each fit in a fresh process after a warm-up fit, the schedule set in that process
(``choice.AUTO_SCHEDULE``), beside 0 and 1 busy processes (``--busy``).  Writes
``benchmarks/results/auto_schedule.json`` and the section "solver='auto''s dual schedule" of
docs/benchmarks.md.

Run: ``python -m benchmarks.bench_auto_schedule [--busy 0,1] [--repeats 1]``
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

from benchmarks._common import (
    N_FEATURES,
    ROOT,
    data_dir,
    machine,
    payload_header,
    save_json,
    timed_children,
    write_section,
)

RESULTS = ROOT / "benchmarks" / "results" / "auto_schedule.json"
SECTION = "## solver='auto''s dual schedule: SBM sharing cache_bytes against StreamSVM"
SETS = ("a9a", "w8a", "ijcnn1")
LOSSES = ("hinge", "squared_hinge")
SCHEDULES = ("sbm", "streamsvm")


def child_fit(spec):
    import dask.array as da
    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine import choice

    choice.AUTO_SCHEDULE = choice.GIVE_WAY_SCHEDULE = spec["schedule"]
    X, y = load_svmlight_file(str(data_dir() / f"{spec['set']}.bz2"), n_features=N_FEATURES[spec["set"]])
    step = -(-X.shape[0] // 16)
    Xd, yd = da.from_array(X, chunks=(step, X.shape[1])), da.from_array(y, chunks=step)
    kw = {"loss": spec["loss"], "C": 1.0, "cache_bytes": "10%", "tol": 1e-3, "max_iter": 60}
    kw["random_state"] = 0
    if spec["loss"] == "squared_hinge":
        kw["dual"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LinearSVC(**{**kw, "max_iter": 2}).fit(Xd, yd)  # the compiled kernels loaded
        start = time.perf_counter()
        clf = LinearSVC(**kw).fit(Xd, yd)
        seconds = time.perf_counter() - start
    dual = [r for r in clf.history_ if r.get("solver") in SCHEDULES]
    held = [r.get("peak_used_bytes", r.get("cache_bytes")) for r in dual]
    return {
        "seconds": seconds, "reads": int(clf.n_iter_), "gap": float(clf.duality_gap_),
        "ran": sorted({r.get("solver") for r in clf.history_}), "held_bytes": max(held, default=None),
    }  # fmt: skip


def report(payload):
    rows = payload["records"]
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; load at the start {payload['load_at_start']}; 2 cores.",
        "",
        "`LinearSVC(loss, C=1, cache_bytes='10%', tol=1e-3, max_iter=60, random_state=0)` (`dual=True` "
        "for the squared hinge) on each set as a Dask array of 16 partitions, each fit in a fresh process"
        " after a warm-up fit; *schedule*: the dual schedule `solver='auto'` streams, set in that process"
        " (`choice.AUTO_SCHEDULE` and `GIVE_WAY_SCHEDULE`: `sbm`, its cache and blocks sharing "
        "`cache_bytes`; `streamsvm`, its cache the whole budget, what `'auto'` streamed before "
        "2026-12-02). After this run `'auto'` streams SBM, and StreamSVM where the band gives way (on the"
        " hinge here). *ran*: the methods `history_` names (the hinge's band first, which gives way on "
        "a9a and w8a). *rows held*: the most row memory the dual schedule's rows took (SBM: cache plus "
        "block; each partition, 6% of the rows, is larger than a block of 5% and is trained a block-sized "
        "piece at a time, since 2026-12-03; held whole before; StreamSVM: its cache). Medians of the "
        "repeats.",
        "",
        "| set | loss | busy beside | load | schedule | ran | reads | gap | s | rows held MB "
        "| sbm / streamsvm |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = {(r["set"], r["loss"], r["busy"]) for r in rows}
    keys = sorted(keys, key=lambda k: (k[2], SETS.index(k[0]), LOSSES.index(k[1])))
    for key in keys:
        med = {}
        for schedule in SCHEDULES:
            mine = [r for r in rows if (r["set"], r["loss"], r["busy"]) == key and r["schedule"] == schedule]
            if mine:
                med[schedule] = (mine, float(np.median([r["seconds"] for r in mine])))
        for schedule, (mine, seconds) in med.items():
            last = mine[-1]
            held = "-" if last["held_bytes"] is None else f"{last['held_bytes'] / 1e6:.2f}"
            both = schedule == "sbm" and len(med) == 2
            ratio = f"{med['sbm'][1] / med['streamsvm'][1]:.2f}" if both else ""
            cells = [
                *key[:2], str(key[2]), f"{last['load']:.2f}", schedule, ", ".join(last["ran"]),
                str(last["reads"]), f"{last['gap']:.1e}", f"{seconds:.2f}", held, ratio,
            ]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    write_section(SECTION, [*lines, ""])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_auto_schedule", description=__doc__)
    parser.add_argument("--busy", default="0,1", help="busy processes beside the fits, comma-separated")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    specs = [
        {"set": name, "loss": loss, "schedule": schedule}
        for _ in range(args.repeats)
        for name in SETS
        for loss in LOSSES
        for schedule in SCHEDULES
    ]
    busy = [int(b) for b in args.busy.split(",")]
    records = timed_children("bench_auto_schedule", specs, busy, timeout=600)
    payload = {**payload_header("bench_auto_schedule", argv), "machine": machine(), "load_at_start": load,
               "records": records}  # fmt: skip
    save_json(RESULTS, payload)
    report(payload)
    print(f"wrote {RESULTS.relative_to(ROOT)} and docs/benchmarks.md")


if __name__ == "__main__":
    main(sys.argv[1:])

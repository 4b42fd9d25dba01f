"""The primal solver's warm start and band, measured: what sample and band sizes the rules need.

Out of core the Newton solver (``dual=False``) reads the data once to count the classes and keep a
uniform sample of rows, solves the sample's problem in memory (its costs scaled to the row count)
and starts the full reads there (``dask_streamsvm.engine.primal.warm.warm_start``).  Each full read
also keeps the rows of margin nearest 1 (the band), and the next point minimizes the model in
which those rows are exact and the others quadratic (``primal.band_step``).  This script runs the
same arithmetic on rows in memory (a read is one pass of ``block_sums`` over all rows), so it
measures relative duality gaps, not read times, on a tall dense set, the same rows on a 0..255
scale, and a set with 5% positive labels:

- the gap at the sample's solution ``w0`` (what the first full read certifies), after one plain
  Newton step from it and after two, for several sample sizes;
- the gap after one band step from ``w0`` (the rule's sample), for several band shares.

With the default tol of 1e-3, a fit takes three reads (the sample's, ``w0``'s, the next point's)
where the third column (plain) or the band column is at most 1e-3.

    python -m benchmarks.bench_warm_start            # 2M x 60, as the issue measured
    python -m benchmarks.bench_warm_start --rows 500000
"""

import argparse
import os
import time

import numpy as np

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

MARKER = "## Warm start and band of the primal solver"


def tall_sets(n, d):
    from benchmarks.bench_primal import synthetic

    X, y = synthetic(n, d)
    yield "dense", X, y
    yield "raw 0..255", synthetic(n, d, raw=True)[0], y
    rng = np.random.default_rng(3)
    score = X[:, :5].sum(axis=1)
    skewed = np.where(score > np.quantile(score, 0.95), 1, -1).astype(np.int8)
    flip = rng.random(n) < 0.01
    skewed[flip] = -skewed[flip]
    yield "5% positive", X, skewed


def _plan(y, C):
    from dask_streamsvm.engine.plan.problem import FitPlan

    classes, counts = np.unique(y, return_counts=True)
    return FitPlan(C=C, tol=1e-3, max_iter=50, loss="squared_hinge", solver="memory").with_labels(
        classes, counts, classes
    )


def _gap(X, Y, cost, w):
    """The relative duality gap the solver certifies at ``w`` (one read)."""
    from dask_streamsvm.engine.primal.sums import block_sums

    sums = block_sums(X, Y, cost, w[None, :], np.zeros((1, w.shape[0])), 1.0, 1)
    g = w - sums.v[0]
    primal = 0.5 * float(w @ w) + float(sums.loss[0])
    return 0.5 * float(g @ g) / primal, g, np.eye(w.shape[0]) + sums.hessian[0]


def rows_for(name, X, y, C, samples, shares):
    from dask_streamsvm.engine.primal import warm as primal
    from dask_streamsvm.engine.primal.reads import Sample

    n, width = X.shape
    plan = _plan(y, C)
    index = np.searchsorted(plan.classes, y)
    Y, cost = plan.signs[:, index], plan.costs[:, index]
    out = []
    rule = primal.sample_rows(width)
    for m in sorted(set(samples) | {rule}):
        if m >= n:
            continue
        keep = np.sort(np.random.default_rng(0).choice(n, m, replace=False))
        start = time.perf_counter()
        W0, _, _ = primal.warm_start(Sample(X[keep], y[keep], np.ones(m), n), plan, width)
        warm_s = time.perf_counter() - start
        w = W0[0]
        gaps = []
        for _ in range(3):  # w0, then two plain Newton steps
            gap, g, H = _gap(X, Y, cost, w)
            gaps.append(gap)
            w = w - np.linalg.solve(H, g)
        row = {"data": name, "C": C, "sample_rows": m, "warm_s": warm_s, "gaps": gaps, "band": []}
        if m == rule:
            gap0, g, H = _gap(X, Y, cost, W0[0])
            margins = Y[0] * (X @ W0[0][:-1] + W0[0][-1])
            for share in shares:
                K = int(share * n)
                band = np.sort(np.argpartition(np.abs(margins - 1.0), K)[:K])
                start = time.perf_counter()
                d = primal.band_step(W0[0], g, H, Sample(X[band], Y[0, band], cost[0, band], n), plan)
                step_s = time.perf_counter() - start
                row["band"].append({"share": share, "gap": _gap(X, Y, cost, W0[0] + d)[0], "step_s": step_s})
        out.append(row)
        print(row, flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=60)
    parser.add_argument("--samples", default="20000,61000,600000", help="sample sizes besides the rule's")
    parser.add_argument("--shares", default="0.01,0.05,0.1,0.2", help="band shares of the rows")
    args = parser.parse_args(argv)
    payload = {**payload_header("bench_warm_start", argv), "machine": machine(), "load": [os.getloadavg()[0]]}
    samples = [int(s) for s in args.samples.split(",")]
    shares = [float(s) for s in args.shares.split(",")]
    payload["rows"] = []
    for name, X, y in tall_sets(args.rows, args.features):
        for C in (0.01, 1.0):
            payload["rows"] += rows_for(name, X, y, C, samples, shares)
    payload["load"].append(os.getloadavg()[0])
    save_json(ROOT / "benchmarks" / "results" / "warm_start.json", payload)
    write_report(payload, args)


def write_report(payload, args):
    from dask_streamsvm.engine.primal import warm as primal

    rule = primal.sample_rows(args.features)
    lines = [
        "",
        f"`{payload['command']}` on {payload['machine']['cores']} cores, {payload['date']} (load "
        f"{payload['load'][0]:.1f} at the start, {payload['load'][1]:.1f} at the end; seconds are for "
        "orientation only).",
        "",
        f"{args.rows:,} rows x {args.features} float32 features, squared hinge.  Relative duality gap at the",
        "sample's solution `w0` (the first full read), after one plain Newton step from it (the second",
        "full read) and after two (the third); the sample rule's size is "
        f"{rule:,} rows (`primal.sample_rows`).",
        "",
        "| data | C | sample rows | solve s | gap at w0 | after 1 step | after 2 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in payload["rows"]:
        g = r["gaps"]
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['sample_rows']:,} | {r['warm_s']:.2f} | {g[0]:.1e} | "
            f"{g[1]:.1e} | {g[2]:.1e} |"
        )
    lines += [
        "",
        "From the rule's sample, one band step instead of the plain Newton step: the relative gap the",
        "next full read certifies, for bands of a share of the rows (`primal.BAND_SHARE` is "
        f"{primal.BAND_SHARE:g}), and the seconds of the step in memory.",
        "",
    ]
    banded = [r for r in payload["rows"] if r["band"]]
    if banded:
        shares = " | ".join(f"band {100 * b['share']:g}%" for b in banded[0]["band"])
        lines.append(f"| data | C | {shares} |")
        lines.append("|---|---|" + "---|" * len(banded[0]["band"]))
        for r in banded:
            cells = " | ".join(f"{b['gap']:.1e} ({b['step_s']:.2f} s)" for b in r["band"])
            lines.append(f"| {r['data']} | {r['C']:g} | {cells} |")
    write_section(MARKER, lines + [""])


if __name__ == "__main__":
    main()

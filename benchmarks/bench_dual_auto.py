"""dual="auto" in memory: the primal Newton solver against dual coordinate descent, per kind of rows.

The figures behind :data:`dask_streamsvm.engine.choice.DENSE_PRIMAL_RATIO`: ``LinearSVC`` (squared
hinge) and ``LogisticRegression`` (binary) at C = 1 and the default tol (1e-3) on NumPy and SciPy
rows in memory, each fit in a fresh process after a warm-up fit on 500 of the rows, with
``dual=True``, ``dual=False`` and ``dual="auto"`` (the method it chose is recorded).  A fit past
``--timeout`` seconds is stopped and recorded as such.

Sets (generated, seed 0): Gaussian rows labelled by a random hyperplane with Gaussian noise of the
given scale (3: 5% of the labels flipped at 300 features, 17: 24%), and text-like
rows (a Zipf vocabulary, 50 nonzeros a row, rows of unit norm).

    python -m benchmarks.bench_dual_auto
    python -m benchmarks.bench_dual_auto --sets dense_mid text --busy 0,1

Results: ``benchmarks/results/dual_auto.json`` and the section "dual="auto" in memory" of
``docs/benchmarks.md``.
"""

import argparse
import time

import numpy as np

from benchmarks._common import ROOT, run_header, save_json, timed_children, write_section
from dask_streamsvm.engine.choice import DENSE_PRIMAL_RATIO, PRIMAL_RATIO

MARKER = '## dual="auto" in memory: the primal solver on dense rows'
RESULTS = ROOT / "benchmarks" / "results" / "dual_auto.json"
SETS = {
    "dense_square": ("dense", 3_000, 1_000, 3.0),
    "dense_r6": ("dense", 6_000, 1_000, 3.0),
    "dense_r10": ("dense", 10_000, 1_000, 3.0),
    "dense_r30": ("dense", 30_000, 1_000, 3.0),
    "dense_300_r3": ("dense", 1_000, 300, 3.0),
    "dense_300_r6": ("dense", 1_800, 300, 3.0),
    "dense_300_r10": ("dense", 3_000, 300, 3.0),
    "dense_mid": ("dense", 20_000, 300, 3.0),
    "dense_mid_noisy": ("dense", 20_000, 300, 17.0),
    "dense_wide": ("dense", 100_000, 2_000, 3.0),
    "text": ("text", 200_000, 100_000, 0.3),
}
ESTIMATORS = ("LinearSVC", "LogisticRegression")
DUALS = {"True": True, "False": False, "auto": "auto"}
TOL = 1e-3  # the estimators' default, which the fits keep


def make_set(name):
    """``(X, y)`` of the set ``name`` of :data:`SETS`."""
    import scipy.sparse as sp

    kind, n, d, noise = SETS[name]
    rng = np.random.default_rng(0)
    if kind == "dense":
        X = rng.standard_normal((n, d))
        y = (X @ rng.standard_normal(d) + noise * rng.standard_normal(n) > 0).astype(int)
        return X, y
    nnz = 50
    rows = np.repeat(np.arange(n), nnz)
    cols = (rng.zipf(1.3, n * nnz) - 1) % d
    X = sp.csr_matrix((rng.exponential(1.0, n * nnz), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
    margins = X @ (rng.standard_normal(d) * (rng.random(d) < 0.2))
    y = (margins + noise * margins.std() * rng.standard_normal(n) > 0).astype(int)
    return X, y


def child_fit(spec):
    """One fit of ``spec``'s estimator and ``dual`` on its set: seconds, passes, gap, the method."""
    import warnings

    import dask_streamsvm

    X, y = make_set(spec["set"])
    estimator = getattr(dask_streamsvm, spec["estimator"])
    dual = DUALS[spec["dual"]]
    estimator(dual=dual).fit(X[:500], y[:500])  # the kernels loaded or compiled: not timed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model = estimator(C=1.0, dual=dual).fit(X, y)
        seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "n_iter": int(np.max(model.n_iter_)),
        "gap": float(np.max(model.duality_gap_)),
        "method": "primal" if "solver" in model.history_[-1] else "dual",  # the dual records none
        "warnings": sorted({w.category.__name__ for w in caught}),
    }


def measure(args):
    specs = [
        {"set": name, "estimator": estimator, "dual": dual}
        for name in args.sets
        for estimator in ESTIMATORS
        for dual in DUALS
    ]
    return timed_children("bench_dual_auto", specs, args.busy, args.timeout)


def report(payload):
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; load at the start {payload['load']}; commit {payload['commit']}.",
        "",
        "Each fit in a fresh process after a warm-up fit on 500 of the rows, C = 1, tol 1e-3 (the "
        f"default), at most the default max_iter; stopped after {payload['timeout']} s. *rows / width*: "
        'the rows over the features plus the bias. *auto chose*: the method `dual="auto"` ran. '
        "Passes: the dual's passes or the primal's Newton steps; *no*: it stopped at max_iter, its gap "
        'above tol (a ConvergenceWarning). The rule (`engine/choice.py`): `dual="auto"` in memory takes '
        f"the primal solver on dense rows from {DENSE_PRIMAL_RATIO} rows a column (features plus the "
        f"bias), on sparse rows from {PRIMAL_RATIO}.",
        "",
        "| set | rows x features | rows / width | estimator | busy beside | dual=True s (passes, gap) | "
        "dual=False s (steps, gap) | auto chose | auto s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(r):
        if r["seconds"] is None:
            return f"> {payload['timeout']} (stopped)"
        converged = "" if r["gap"] <= TOL else ", no"  # stopped at max_iter, above tol
        return f"{r['seconds']:.2f} ({r['n_iter']}, {r['gap']:.1e}{converged})"

    by = {(r["set"], r["estimator"], r["busy"], r["dual"]): r for r in payload["records"]}
    for (name, estimator, busy, dual), _ in by.items():
        if dual != "True":
            continue
        kind, n, d, _noise = SETS[name]
        auto = by[(name, estimator, busy, "auto")]
        chose = "-" if auto["seconds"] is None else auto["method"]
        auto_s = "-" if auto["seconds"] is None else f"{auto['seconds']:.2f}"
        lines.append(
            f"| {name} ({kind}) | {n:,} x {d:,} | {n / (d + 1):.1f} | {estimator} | {busy} | "
            f"{cell(by[(name, estimator, busy, 'True')])} | {cell(by[(name, estimator, busy, 'False')])} | "
            f"{chose} | {auto_s} |"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--busy", type=lambda s: [int(b) for b in s.split(",")], default=[0])
    parser.add_argument("--timeout", type=int, default=120, help="seconds a fit may take")
    args = parser.parse_args(argv)
    payload = run_header("bench_dual_auto", argv)
    payload["timeout"] = args.timeout
    payload["records"] = measure(args)
    save_json(RESULTS, payload)
    write_section(MARKER, report(payload))


if __name__ == "__main__":
    main()

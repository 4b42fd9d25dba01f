"""Data preparation: what scaling and class weights change, measured for the user guide's page.

1. Scaling: a tall set of raw 0..255 values (``--rows`` x 20, labels from a plane far from the
   origin), trained with the dual solvers in memory and streamed from a Dask Array, with and
   without ``feature_map=Standardize()``: passes, the certified gap, seconds, training accuracy.
   The streamed fit counts one more read for the scales.
2. Class imbalance: a9a's positives (24%) thinned to 5% of the rows, with and without
   ``class_weight="balanced"``: test accuracy, and the minority's recall and precision.

Writes ``benchmarks/results/data_prep.json`` and the "Data preparation" section of
docs/benchmarks.md.
"""

import argparse
import time
import warnings

import numpy as np

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "data_prep.json"
MARKER = "## Data preparation"
SEED = 0


def raw_pixels(n_rows, n_features=20, seed=SEED):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 256, (n_rows, n_features)).astype(np.float64)
    w = rng.standard_normal(n_features)
    y = np.where((X - 128.0) @ w + 30.0 * rng.standard_normal(n_rows) > 0, 1, -1)
    return X, y


def scaling(args):
    import dask.array as da
    from sklearn.exceptions import ConvergenceWarning

    from dask_streamsvm import LinearSVC, Standardize

    X, y = raw_pixels(args.rows)
    chunk = -(-args.rows // 8)
    streamed = (da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk))
    records = []
    for where, data, extra in [
        ("memory", (X, y), {"max_iter": args.memory_passes}),
        ("Dask Array, streamed", streamed, {"solver": "streamsvm", "cache_bytes": "10%",
                                            "max_iter": args.stream_passes}),
    ]:  # fmt: skip
        for scaled in (False, True):
            params = {"dual": True, "tol": 1e-3, "random_state": SEED, **extra}
            if scaled:
                params["feature_map"] = Standardize()
            t = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                clf = LinearSVC(**params).fit(*data)
            seconds = time.perf_counter() - t
            records.append(
                {
                    "where": where, "standardize": scaled, "passes": int(clf.n_iter_),
                    "max_iter": params["max_iter"], "gap": float(clf.duality_gap_), "seconds": seconds,
                    "train_accuracy": float((clf.predict(X) == y).mean()),
                    "advice": any("not scaled" in str(w.message) for w in caught),
                }
            )  # fmt: skip
            print(records[-1], flush=True)
    return records


def imbalance():
    from sklearn.metrics import precision_score, recall_score

    from benchmarks.bench_schedules import load_libsvm
    from dask_streamsvm import LinearSVC

    X, y = load_libsvm("a9a")
    X_test, y_test = load_libsvm("a9a.t")
    rng = np.random.default_rng(SEED)
    positives = np.flatnonzero(y == 1)
    keep_pos = rng.choice(positives, size=int(0.05 / 0.95 * (y == -1).sum()), replace=False)
    rows = np.sort(np.concatenate([np.flatnonzero(y == -1), keep_pos]))
    X, y = X[rows], y[rows]
    records = []
    for weight in (None, "balanced"):
        clf = LinearSVC(class_weight=weight, tol=1e-4, random_state=SEED).fit(X, y)
        predicted = clf.predict(X_test)
        records.append(
            {
                "class_weight": weight, "train_positive_share": float((y == 1).mean()),
                "test_accuracy": float((predicted == y_test).mean()),
                "minority_recall": float(recall_score(y_test, predicted, pos_label=1)),
                "minority_precision": float(precision_score(y_test, predicted, pos_label=1, zero_division=0)),
            }
        )  # fmt: skip
        print(records[-1], flush=True)
    return records


def report(payload):
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; machine: {payload['machine']['cores']} cores. Squared hinge, C = 1, "
        "dual solvers, tol 1e-3. Raw 0..255 values, "
        f"{payload['settings']['rows']:,} rows x 20; the Dask Array streamed with a cache of 10% of the "
        "rows.",
        "",
        "| data | Standardize() | passes (max) | certified gap | seconds | training accuracy | "
        "warning advises scaling |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in payload["scaling"]:
        lines.append(
            f"| {r['where']} | {'yes' if r['standardize'] else 'no'} | {r['passes']} ({r['max_iter']}) | "
            f"{r['gap']:.3g} | {r['seconds']:.1f} | {100 * r['train_accuracy']:.1f}% | "
            f"{'yes' if r['advice'] else 'no (converged)' if r['gap'] <= 1e-3 else 'no'} |"
        )
    lines += [
        "",
        "Class imbalance: a9a's training rows with its positives thinned to 5%, tested on a9a.t as it "
        "is (24% positive), squared hinge, C = 1.",
        "",
        "| class_weight | positives in training | test accuracy | positives' recall | positives' precision |",
        "|---|---|---|---|---|",
    ]
    for r in payload["imbalance"]:
        lines.append(
            f"| {r['class_weight']} | {100 * r['train_positive_share']:.1f}% | "
            f"{100 * r['test_accuracy']:.2f}% | {100 * r['minority_recall']:.1f}% | "
            f"{100 * r['minority_precision']:.1f}% |"
        )
    lines += ["", "Raw results: `benchmarks/results/data_prep.json`.", ""]
    write_section(MARKER, lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--memory-passes", type=int, default=1000)
    parser.add_argument("--stream-passes", type=int, default=50)
    args = parser.parse_args(argv)
    payload = {**payload_header("bench_data_prep", argv), "machine": machine(), "settings": vars(args)}
    payload["scaling"] = scaling(args)
    payload["imbalance"] = imbalance()
    save_json(RESULTS, payload)
    report(payload)


if __name__ == "__main__":
    main()

"""Probabilities: Brier score of ``probability=True`` against scikit-learn's calibration.

On a9a (train, then the test file): our ``LinearSVC(probability=True)`` in
memory (5-fold cross-fitted Platt sigmoid, model on all rows) and streamed
with a cache of 10% of the data (a hashed tenth of the rows held out),
against ``CalibratedClassifierCV(sklearn.svm.LinearSVC(), method="sigmoid")``
(5 folds, an ensemble of five calibrated LIBLINEAR models). Lower is better.

Run ``python -m benchmarks.bench_calibration``; results go to
``benchmarks/results/bench_calibration.json`` and ``docs/benchmarks.md``.
"""

import time
import warnings

from benchmarks._common import ROOT, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_calibration.json"
MARKER = "## Probabilities: Brier score against scikit-learn's CalibratedClassifierCV"


def main(argv=None):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import brier_score_loss
    from sklearn.svm import LinearSVC as LiblinearSVC

    from dask_streamsvm import LinearSVC
    from dask_streamsvm.datasets import load_a9a, load_a9a_dask

    X, y = load_a9a("train")
    X_test, y_test = load_a9a("test")
    data_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    rows = []
    for C in (0.1, 1.0):
        fits = {
            "ours, in memory": lambda C=C: LinearSVC(C=C, probability=True, random_state=0).fit(X, y),
            "ours, streamed (10% cache)": lambda C=C: LinearSVC(
                C=C, probability=True, cache_bytes=data_bytes // 10, random_state=0
            ).fit(*load_a9a_dask("train")),
            "CalibratedClassifierCV(LIBLINEAR)": lambda C=C: CalibratedClassifierCV(
                LiblinearSVC(C=C, dual=True, random_state=0), method="sigmoid"
            ).fit(X, y),
        }
        for name, fit in fits.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t = time.perf_counter()
                model = fit()
                seconds = time.perf_counter() - t
            brier = brier_score_loss(y_test == 1, model.predict_proba(X_test)[:, 1])
            rows.append({"C": C, "method": name, "brier": float(brier), "fit_seconds": seconds})
            print(f"C={C:g} {name:36} Brier {brier:.5f}  fit {seconds:.2f} s", flush=True)
    payload = {**payload_header("bench_calibration", argv), "results": rows}
    save_json(RESULTS, payload)
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}. a9a train (32,561 rows) to fit, a9a test (16,281 rows) to score; "
        "Brier score of P(y = +1), lower is better. Fit seconds include compilation on first use.",
        "",
        "| C | method | Brier | fit s |",
        "|---|---|---|---|",
        *[f"| {r['C']:g} | {r['method']} | {r['brier']:.5f} | {r['fit_seconds']:.2f} |" for r in rows],
        "",
        "Raw results: `benchmarks/results/bench_calibration.json`.",
        "",
    ]
    write_section(MARKER, lines)


if __name__ == "__main__":
    main()

"""Multinomial logistic regression in memory, timed: ours against scikit-learn's lbfgs and
newton-cholesky on digits (1,797 x 64, 10 classes) and a generated 20,000 x 50 set of 5 classes.

Each fit's best of two runs in one process (numba's cache loaded first), with each library's own
thread settings, as users run them (on a shared 2-core machine threaded scikit-learn's times varied
fivefold between runs: run it quiet, and say the load), and its relative suboptimality
against scikit-learn's ``newton-cholesky`` at ``tol=1e-10``; ours with its certified
gap.  A quick check for docs/guide/solvers.md ("The multinomial model"), not part of
``python -m benchmarks``::

    python -m benchmarks.check_multinomial_time
"""

import time
import warnings

import numpy as np
from scipy.special import logsumexp
from sklearn.datasets import load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLogistic

from dask_streamsvm import LogisticRegression

C = 1.0


def objective(X, y, coef, intercept):
    Z = X @ coef.T + intercept
    index = np.searchsorted(np.unique(y), y)
    return 0.5 * np.sum(coef**2) + C * np.sum(logsumexp(Z, axis=1) - Z[np.arange(len(y)), index])


def best_of_two(make):
    times, model = [], None
    for _ in range(2):
        start = time.perf_counter()
        model = make()
        times.append(time.perf_counter() - start)
    return min(times), model


def main():
    X, y = make_classification(20000, 50, n_informative=20, n_classes=5, random_state=0)
    digits = load_digits(return_X_y=True)
    sets = {"digits (1797 x 64, 10 classes)": digits, "generated (20000 x 50, 5 classes)": (X, y)}
    warnings.simplefilter("ignore", ConvergenceWarning)
    LogisticRegression(multi_class="multinomial").fit(*digits)  # numba's cache, loaded once
    for name, (X, y) in sets.items():
        ref = SkLogistic(C=C, tol=1e-10, solver="newton-cholesky").fit(X, y)
        optimum = objective(X, y, ref.coef_, ref.intercept_)
        print(f"{name}: P* = {optimum!r}", flush=True)
        fits = [
            ("ours tol=1e-3", lambda: LogisticRegression(multi_class="multinomial", C=C, tol=1e-3)),
            ("ours tol=1e-8", lambda: LogisticRegression(multi_class="multinomial", C=C, tol=1e-8)),
            ("scikit-learn lbfgs (defaults: tol=1e-4, max_iter=100)", lambda: SkLogistic(C=C)),
            ("scikit-learn lbfgs max_iter=1000", lambda: SkLogistic(C=C, max_iter=1000)),
            ("scikit-learn newton-cholesky (tol=1e-4)", lambda: SkLogistic(C=C, solver="newton-cholesky")),
        ]
        for label, model in fits:
            seconds, fitted = best_of_two(lambda model=model, X=X, y=y: model().fit(X, y))
            excess = (objective(X, y, fitted.coef_, fitted.intercept_) - optimum) / optimum
            gap = getattr(fitted, "duality_gap_", None)
            certified = "" if gap is None else f"  certified gap {gap:.1e}"
            print(f"  {label:55s} {seconds:7.3f} s  suboptimality {excess:.1e}{certified}", flush=True)


if __name__ == "__main__":
    main()

"""The agreement ``tests/test_l1.py`` asserts, printed: L1 and elastic-net fits against scikit-learn.

For each set the tests use (3,000 random rows of a9a, w8a and ijcnn1, and a 400 x 8 generated set):
our certified ``duality_gap_``, ``(ours - scikit-learn's) / ours`` in our objective (scikit-learn's
weights evaluated by our own objective), the numbers of nonzero weights and our passes.
``LinearSVC(penalty="l1")`` against LIBLINEAR ``-s 5`` (scikit-learn's ``LinearSVC(penalty="l1",
dual=False)``), ``LogisticRegression(l1_ratio=1)`` against ``solver="liblinear"``, and the elastic
net (``l1_ratio=0.5``) against ``saga`` with a column of ones.  No timings: seconds are not measured.

    python -m benchmarks.check_l1_agreement
"""

import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression as SkLogistic
from sklearn.svm import LinearSVC as SkLinearSVC

from dask_streamsvm import LinearSVC, LogisticRegression
from dask_streamsvm.kernels.losses import LOGISTIC, SQUARED_HINGE
from tests.test_l1 import _data, _value


def _pure_l1(name):
    X, y = _data(name)
    for what, ours, theirs, code in [
        (
            "LinearSVC l1",
            LinearSVC(penalty="l1", tol=1e-9, random_state=0),
            SkLinearSVC(penalty="l1", dual=False, tol=1e-10, max_iter=100_000),
            SQUARED_HINGE,
        ),
        (
            "logistic l1",
            LogisticRegression(l1_ratio=1.0, tol=1e-9, random_state=0),
            SkLogistic(l1_ratio=1.0, solver="liblinear", tol=1e-10, max_iter=100_000),
            LOGISTIC,
        ),
    ]:
        ours.fit(X, y)
        theirs.fit(X, y)
        w = np.r_[theirs.coef_.ravel(), theirs.intercept_]
        reference = _value(X, y, w, code, (1.0, 0.0), ours.classes_, ours.C)
        print(
            f"{name:7s} {what:13s} X={X.shape} gap={ours.duality_gap_:.2e} "
            f"(ours - sklearn)/ours={(ours.objective_ - reference) / ours.objective_:+.2e} "
            f"nonzeros ours={np.count_nonzero(ours.coef_)} sklearn={np.count_nonzero(theirs.coef_)} "
            f"passes={ours.n_iter_}",
            flush=True,
        )


def _elastic_net():
    X, y = _data("dense")
    ours = LogisticRegression(l1_ratio=0.5, C=0.5, tol=1e-10, random_state=0).fit(X, y)
    saga = SkLogistic(l1_ratio=0.5, C=0.5, solver="saga", fit_intercept=False, tol=1e-10, max_iter=100_000)
    saga.fit(np.hstack([X, np.ones((X.shape[0], 1))]), y)
    reference = _value(X, y, saga.coef_.ravel(), LOGISTIC, (0.5, 0.5), ours.classes_, ours.C)
    print(
        f"dense   elastic net 0.5 gap={ours.duality_gap_:.2e} "
        f"(ours - saga)/ours={(ours.objective_ - reference) / ours.objective_:+.2e}"
    )


def main():
    warnings.simplefilter("ignore")  # scikit-learn's own convergence warnings at tol 1e-10
    for name in ["a9a", "w8a", "ijcnn1", "dense"]:
        _pure_l1(name)
    _elastic_net()


if __name__ == "__main__":
    main()

"""``class_weight="balanced"`` as scikit-learn 1.9 computes it: by the sample weight of each class's
rows (``sum(w) / (k * w_j)``), not by their count, for the one-vs-rest problems and the joint models
alike, in memory, streamed and on a cluster."""

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression as SkLogisticRegression
from sklearn.svm import LinearSVC as SkLinearSVC
from sklearn.utils.class_weight import compute_class_weight

from dask_streamsvm import LinearSVC, LogisticRegression
from dask_streamsvm.engine.data.labels import count_labels_of, merge_label_counts
from dask_streamsvm.engine.plan.problem import balanced_weights

from ._helpers import two_worker_client


def _weighted(n_classes, n=1500, seed=0):
    """Unbalanced classes whose sample weights unbalance them otherwise: the class of most rows
    weighs least per row, so weights by rows and by sample weight differ."""
    X, y = make_classification(
        n, 6, n_informative=4, n_redundant=0, n_classes=n_classes, n_clusters_per_class=1,
        weights=[0.6, *[0.4 / (n_classes - 1)] * (n_classes - 1)], random_state=seed,
    )  # fmt: skip
    w = np.random.RandomState(seed).uniform(0.2, 1.0, n) * np.where(y == 0, 0.3, 2.0)
    return X, y, w


def test_balanced_weights_are_scikit_learns():
    X, y, w = _weighted(3)
    totals = np.bincount(y, weights=w)
    expected = compute_class_weight("balanced", classes=np.arange(3), y=y, sample_weight=w)
    np.testing.assert_allclose(balanced_weights(totals), expected, rtol=1e-14)
    by_rows = compute_class_weight("balanced", classes=np.arange(3), y=y)
    assert np.abs(balanced_weights(totals) - by_rows).max() > 0.1  # the rule makes a difference
    np.testing.assert_allclose(balanced_weights([2.0, 0.0, 6.0]), [8 / 6, 0.0, 8 / 18], rtol=1e-15)


def test_the_label_counts_carry_each_classs_weight():
    y = np.array([1, 2, 1, 3, 2, 1])
    w = np.array([0.5, 1.0, 0.0, 2.0, 3.0, 1.5])
    labels, counts, positive, totals = count_labels_of(0, y, w)
    np.testing.assert_array_equal(counts, [3, 2, 1])
    np.testing.assert_array_equal(totals, [2.0, 4.0, 2.0])
    merged = merge_label_counts([count_labels_of(0, y[:3], w[:3]), count_labels_of(1, y[3:], None)])
    np.testing.assert_array_equal(merged[1], [3, 2, 1])
    np.testing.assert_array_equal(merged[3], [0.5 + 1.0, 1.0 + 1.0, 1.0])  # no weights: a row weighs 1


@pytest.mark.parametrize("n_classes", [2, 3])
def test_linear_svc_balanced_with_sample_weights_is_scikit_learns(n_classes):
    X, y, w = _weighted(n_classes)
    sk = SkLinearSVC(class_weight="balanced", tol=1e-12, max_iter=200_000, random_state=0)
    sk.fit(X, y, sample_weight=w)
    ours = LinearSVC(class_weight="balanced", tol=1e-12, random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, sk.intercept_, atol=1e-6)


def test_logistic_regression_balanced_with_sample_weights_is_scikit_learns():
    X, y, w = _weighted(2)
    sk = SkLogisticRegression(
        class_weight="balanced", solver="liblinear", tol=1e-12, max_iter=100_000, random_state=0
    ).fit(X, y, sample_weight=w)
    ours = LogisticRegression(class_weight="balanced", tol=1e-12, random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, sk.intercept_, atol=1e-6)


@pytest.mark.parametrize("dual", [True, False])
def test_streamed_balanced_weights_are_the_in_memory_ones(dual):
    """Streamed, the read that counts the classes sums their weights: the dual solvers' count of the
    labels and the primal solver's first read alike."""
    X, y, w = _weighted(3)
    memory = LinearSVC(class_weight="balanced", dual=dual, tol=1e-8, random_state=0)
    memory.fit(X, y, sample_weight=w)
    chunks = 300
    Xd, yd, wd = da.from_array(X, chunks=(chunks, 6)), da.from_array(y, chunks), da.from_array(w, chunks)
    with dask.config.set(scheduler="sync"):
        streamed = LinearSVC(class_weight="balanced", dual=dual, tol=1e-8, random_state=0)
        streamed.fit(Xd, yd, sample_weight=wd)
    # each problem's objective within the two certified gaps of the other's: the same problems
    gaps = (streamed.duality_gap_ + memory.duality_gap_) * memory.objective_
    assert np.all(np.abs(streamed.objective_ - memory.objective_) <= gaps + 1e-12 * memory.objective_)
    sk = SkLinearSVC(class_weight="balanced", tol=1e-12, max_iter=200_000, random_state=0)
    sk.fit(X, y, sample_weight=w)  # and scikit-learn's problems
    np.testing.assert_allclose(streamed.coef_, sk.coef_, atol=1e-3 * np.abs(sk.coef_).max())


def test_balanced_weights_on_a_cluster_are_the_in_memory_ones():
    pytest.importorskip("distributed")
    X, y, w = _weighted(2, n=3000)
    memory = LogisticRegression(class_weight="balanced", tol=1e-10).fit(X, y, sample_weight=w)
    Xd, yd, wd = da.from_array(X, chunks=(500, 6)), da.from_array(y, 500), da.from_array(w, 500)
    with two_worker_client() as client:
        ours = LogisticRegression(class_weight="balanced", tol=1e-10).fit(
            Xd, yd, sample_weight=wd, client=client
        )
    assert ours.history_[-1]["method"] == "newton"
    gap = (ours.duality_gap_ + memory.duality_gap_) * memory.objective_
    assert abs(ours.objective_ - memory.objective_) <= gap + 1e-12 * memory.objective_

"""scikit-learn's estimator contract."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dask_streamsvm import BudgetedSVC, HashingMap, LinearSVC, LogisticRegression, OnePassSVC, PolynomialMap

# The dual solver stops at a relative duality gap of ``tol``; fitting with
# weights and fitting with removed/repeated rows then reach different points
# within that gap, not the same coefficients to rtol=1e-7 (scikit-learn's own
# LinearSVC declares the same).  Equivalence at a tight tol is tested in
# test_linear.py (test_integer_sample_weight_equals_repeated_rows,
# test_zero_sample_weight_equals_dropping_rows).
EXPECTED_FAILED = {
    "check_sample_weight_equivalence_on_dense_data": "stops at tol, see comment above",
    "check_sample_weight_equivalence_on_sparse_data": "stops at tol, see comment above",
}


def expected_failed(estimator):
    if isinstance(estimator, OnePassSVC | BudgetedSVC):
        return {}
    # The L1 and elastic-net penalties, the linear models without partial_fit (hidden by available_if:
    # their solver needs every row at once, so the checks that call partial_fit where a model has one
    # skip it), pass the sample-weight checks too: their fits end with Newton steps on the nonzero
    # weights, which on these small sets agree to the checks' rtol of 1e-7.
    if not hasattr(estimator, "partial_fit"):
        return {}
    # The degree-2 map on check_class_weight_classifiers (squared blobs, values in the thousands,
    # class weight 1000) does not converge in its max_iter=1000; it failed while the last pass's
    # model was returned, and passes since the certified model of lowest primal is.
    return EXPECTED_FAILED


# Some checks fit deliberately ill-conditioned problems (features around 100,
# class weights of 1000) with default max_iter; the ConvergenceWarning there is
# the intended behaviour, not a failure.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
# OnePassSVC's one pass puts every row of some checks' tiny random sets in one class, and says so.
@pytest.mark.filterwarnings("ignore::dask_streamsvm.onepass.OneClassWarning")
@parametrize_with_checks(
    [
        LinearSVC(random_state=0),
        LinearSVC(multi_class="crammer_singer", random_state=0),
        LinearSVC(feature_map=PolynomialMap(), random_state=0),
        LinearSVC(feature_map=HashingMap(n_features=64), random_state=0),
        LogisticRegression(random_state=0),
        LogisticRegression(dual=True, random_state=0),
        LinearSVC(penalty="l1", dual=False, random_state=0),
        LogisticRegression(l1_ratio=0.5, random_state=0),
        LogisticRegression(l1_ratio=1.0, random_state=0),
        LogisticRegression(multi_class="multinomial", random_state=0),
        OnePassSVC(random_state=0),
        OnePassSVC(lookahead=1, random_state=0),
        BudgetedSVC(budget=50, max_iter=5, random_state=0),
    ],
    expected_failed_checks=expected_failed,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)

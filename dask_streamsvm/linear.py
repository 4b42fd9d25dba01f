"""``LinearSVC``: LIBLINEAR's L1/L2-loss linear SVM with an exact certificate."""

import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._validation import (
    as_kernel_rows,
    check_choice,
    check_class_weight,
    check_positive_float,
    check_positive_int,
    check_sample_weight,
)
from .engine.memory import LOSSES, BinaryProblem, solve_in_memory

SOLVERS = ("auto", "memory")


def _compute_if_dask(*arrays):
    """Bring small Dask collections into memory (for ``solver='memory'``)."""
    if not any(hasattr(a, "__dask_graph__") for a in arrays):
        return arrays
    import dask

    return dask.compute(*arrays)


class LinearSVC(ClassifierMixin, BaseEstimator):
    """Linear support vector classifier solved in the dual, as LIBLINEAR does.

    Minimises, for each binary problem (one-vs-rest for more classes)::

        1/2 ||w||^2 + sum_i C_i loss(y_i (w . x_i + b))

    with ``loss`` the hinge (L1 loss) or the squared hinge (L2 loss), the
    bias ``b`` learned as the weight of a constant feature of value
    ``intercept_scaling`` (and therefore regularised, as in LIBLINEAR), and
    ``C_i = C * class_weight[y_i] * sample_weight[i]``.  The solver is dual
    coordinate descent (Hsieh et al. 2008) with LIBLINEAR's shrinking; it
    stops on the exact relative duality gap, a certificate that the primal
    objective is within ``tol`` of the optimum.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter: cost of a unit of loss. Must be > 0.
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        Squared hinge (LIBLINEAR ``-s 1``) or hinge (``-s 3``).
    fit_intercept : bool, default=True
        Learn an intercept, as the weight of a constant feature.
    intercept_scaling : float, default=1.0
        Value of that constant feature (LIBLINEAR's ``-B``). Larger values
        make the intercept less regularised.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the samples of each class. One-vs-rest problems
        weight their positive class only, as LIBLINEAR does.
    tol : float, default=1e-3
        Stop when the relative duality gap ``(P - D) / P`` is at most this.
    max_iter : int, default=1000
        Maximum number of passes over the data, per binary problem.
    solver : {"auto", "memory"}, default="auto"
        ``"memory"`` holds all rows in RAM (Dask input is computed first).
        ``"auto"`` picks ``"memory"``.
    random_state : int, RandomState or None, default=None
        Seeds the row permutations; the same seed gives the same model.
    verbose : int, default=0
        Print one line per pass when > 0.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, only when X has string column names
    n_iter_ : int
        Largest number of passes over the binary problems.
    objective_ : float or ndarray of shape (n_classes,)
        Primal objective of the returned model (one per one-vs-rest problem).
    duality_gap_ : float or ndarray of shape (n_classes,)
        Relative duality gap of the returned model.
    history_ : list of dict
        One record per pass: ``class``, ``pass``, ``seconds`` (since the start
        of ``fit``), ``primal``, ``dual``, ``gap`` (relative) and ``active``
        (rows left in the active set after shrinking).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm import LinearSVC
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [3.0, 0.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> clf = LinearSVC(tol=1e-6, random_state=0).fit(X, y)
    >>> clf.predict([[2.5, 0.0]])
    array([1])
    >>> bool(clf.duality_gap_ <= 1e-6)
    True
    """

    def __init__(
        self,
        C=1.0,
        *,
        loss="squared_hinge",
        fit_intercept=True,
        intercept_scaling=1.0,
        class_weight=None,
        tol=1e-3,
        max_iter=1000,
        solver="auto",
        random_state=None,
        verbose=0,
    ):
        self.C = C
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_params(self):
        C = check_positive_float("C", self.C)
        check_choice("loss", self.loss, LOSSES)
        tol = check_positive_float("tol", self.tol)
        max_iter = check_positive_int("max_iter", self.max_iter)
        check_choice("solver", self.solver, SOLVERS)
        check_class_weight(self.class_weight)
        bias = 0.0
        if self.fit_intercept:
            bias = check_positive_float("intercept_scaling", self.intercept_scaling)
        return C, tol, max_iter, bias

    def fit(self, X, y, sample_weight=None):
        """Fit the model to ``X`` and ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            NumPy, SciPy sparse, pandas, or a Dask Array/DataFrame small
            enough to compute into memory.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multiplier of ``C``; rows of weight 0 are ignored.

        Returns
        -------
        self
        """
        clock_start = time.perf_counter()
        C, tol, max_iter, bias = self._check_params()
        X, y, sample_weight = _compute_if_dask(X, y, sample_weight)
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            order="C",
            accept_large_sparse=True,
        )
        check_classification_targets(y)
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        self.classes_ = classes = np.unique(y)
        if classes.shape[0] < 2:
            raise ValueError(
                "LinearSVC needs samples of at least 2 classes, but the data contains "
                f"only one class: {classes.tolist()[0]!r}. Pass y with two or more distinct labels."
            )
        if not (sample_weight > 0).any():
            raise ValueError(
                "sample_weight is zero for every row, so there is nothing to train on. "
                "Give some rows a positive weight."
            )
        weighted_classes = np.unique(y[sample_weight > 0])
        if weighted_classes.shape[0] < 2:
            raise ValueError(
                "LinearSVC needs samples of at least 2 classes with positive sample_weight, "
                f"but only class {weighted_classes.tolist()} has any. Give rows of another class "
                "a positive weight."
            )
        class_weight = compute_class_weight(self.class_weight, classes=classes, y=y)
        y_index = np.searchsorted(classes, y)
        rows = as_kernel_rows(X)
        n_features = X.shape[1]
        rng = check_random_state(self.random_state)

        if classes.shape[0] == 2:
            # classes_[1] is the positive class, as in scikit-learn.
            targets = [(1, (y_index == 1).astype(np.float64) * 2.0 - 1.0, C * class_weight[y_index])]
        else:
            # One-vs-rest: LIBLINEAR weights only the positive side.
            targets = []
            for k in range(classes.shape[0]):
                is_k = y_index == k
                cost = np.where(is_k, C * class_weight[k], C)
                targets.append((k, is_k.astype(np.float64) * 2.0 - 1.0, cost))
        seeds = rng.randint(np.iinfo(np.int64).max, size=len(targets), dtype=np.int64)

        log = self._print_record if self.verbose else None
        results = []
        for (k, y_pm, cost), seed in zip(targets, seeds, strict=True):
            problem = BinaryProblem(rows, y_pm, cost * sample_weight, self.loss, bias, n_features)
            results.append(
                solve_in_memory(
                    problem,
                    tol=tol,
                    max_iter=max_iter,
                    seed=int(seed),
                    clock_start=clock_start,
                    log=log,
                    label=classes.tolist()[k],
                )
            )

        W = np.vstack([r.w for r in results])
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1] * bias
        self.n_iter_ = max(r.passes for r in results)
        objective = np.array([r.certificate.primal for r in results])
        gap = np.array([r.certificate.relative_gap for r in results])
        single = len(results) == 1
        self.objective_ = float(objective[0]) if single else objective
        self.duality_gap_ = float(gap[0]) if single else gap
        self.history_ = [record for r in results for record in r.history]
        unconverged = [
            classes.tolist()[k] for (k, _, _), r in zip(targets, results, strict=True) if not r.converged
        ]
        if unconverged:
            which = "" if single else f" for classes {unconverged}"
            warnings.warn(
                f"LinearSVC did not reach tol={self.tol:g} (relative duality gap) within "
                f"max_iter={max_iter} passes{which}; the final gap is {np.max(gap):.3g}. "
                "Increase max_iter, loosen tol, or (for loss='hinge') use a smaller C.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _print_record(self, r):
        print(
            f"[LinearSVC] class={r['class']!r} pass {r['pass']}: primal={r['primal']:.6f} "
            f"dual={r['dual']:.6f} gap={r['gap']:.3e} active={r['active']} "
            f"t={r['seconds']:.3f}s",
            flush=True,
        )

    def decision_function(self, X):
        """Signed distance to the hyperplane(s).

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        (X,) = _compute_if_dask(X)
        X = validate_data(
            self,
            X,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            reset=False,
            accept_large_sparse=True,
        )
        scores = safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class labels: positive score for the second class, else argmax."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[scores.argmax(axis=1)]

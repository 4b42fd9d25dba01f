"""``LinearSVC``: LIBLINEAR's L1/L2-loss linear SVM with an exact certificate."""

import os
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
from .engine.cache import parse_bytes
from .engine.memory import LOSSES, BinaryProblem, solve_in_memory
from .engine.source import DaskSource, is_dask_collection
from .engine.streamsvm import solve_streamsvm
from .io import as_dask, open_path

SOLVERS = ("auto", "memory", "streamsvm")


def _compute_if_dask(*arrays):
    """Bring small Dask collections into memory (for ``solver='memory'``)."""
    if not any(is_dask_collection(a) for a in arrays):
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
        Maximum number of passes over the data (per binary problem in
        memory; reads of the collection when streaming, plus one read to
        certify the final model if they did not converge).
    solver : {"auto", "memory", "streamsvm"}, default="auto"
        ``"memory"`` holds all rows in RAM (Dask input is computed first).
        ``"streamsvm"`` streams partitions through a cache of at most
        ``cache_bytes`` (Matsushima et al. 2012). ``"auto"`` streams Dask
        collections and file paths and solves in-memory data in memory.
    cache_bytes : int or str, default="1GB"
        Memory budget of the row cache for ``solver="streamsvm"``: an
        int or a string such as ``"512MB"`` or ``"2GiB"``.
    prefetch : int, default=2
        Partitions the reader thread computes ahead of the trainer.
    shuffle : bool, default=True
        Shuffle the partition order and the rows of each partition on every
        pass (from ``random_state``).
    alpha_store : {"memory", "disk"}, default="memory"
        Where streaming keeps the dual variable of every row (8 bytes per
        row and class, plus 4 for its cache slot): in RAM, or in
        memory-mapped files in a temporary directory, for row counts whose
        dual state does not fit.
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
        cache_bytes="1GB",
        prefetch=2,
        shuffle=True,
        alpha_store="memory",
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
        self.cache_bytes = cache_bytes
        self.prefetch = prefetch
        self.shuffle = shuffle
        self.alpha_store = alpha_store
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
        X : {array-like, sparse matrix, DataFrame, Dask Array, Dask DataFrame}
            In-memory data (NumPy, SciPy sparse, pandas) is solved in memory.
            Dask collections are streamed through the row cache
            (``solver="streamsvm"``) unless ``solver="memory"`` asks to
            compute them into memory.
        y : array-like, Dask Array or Series, or the label column's name
            when ``X`` is a Dask DataFrame.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multiplier of ``C``; rows of weight 0 are ignored. For
            Dask input, a Dask Array or Series partitioned like ``X``.

        Returns
        -------
        self
        """
        clock_start = time.perf_counter()
        C, tol, max_iter, bias = self._check_params()
        out_of_core = is_dask_collection(X) or isinstance(X, str | os.PathLike)
        streaming = self.solver == "streamsvm" or (self.solver == "auto" and out_of_core)
        if streaming:
            return self._fit_stream(X, y, sample_weight, C, tol, max_iter, bias, clock_start)
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
        classes, counts = np.unique(y, return_counts=True)
        weighted_classes = np.unique(y[sample_weight > 0]) if (sample_weight > 0).any() else classes[:0]
        signs, costs = self._problem_tables(classes, counts, weighted_classes, C)
        y_index = np.searchsorted(classes, y)
        rows = as_kernel_rows(X)
        seeds = check_random_state(self.random_state).randint(
            np.iinfo(np.int64).max, size=signs.shape[0], dtype=np.int64
        )
        log = self._print_record if self.verbose else None
        results = [
            solve_in_memory(
                BinaryProblem(
                    rows, signs[c, y_index], costs[c, y_index] * sample_weight, self.loss, bias, X.shape[1]
                ),
                tol=tol,
                max_iter=max_iter,
                seed=int(seeds[c]),
                clock_start=clock_start,
                log=log,
                label=self._problem_label(c),
            )
            for c in range(signs.shape[0])
        ]
        self._set_model(
            np.vstack([r.w for r in results]),
            bias,
            [r.certificate for r in results],
            max(r.passes for r in results),
            [record for r in results for record in r.history],
            [r.converged for r in results],
        )
        return self

    def _problem_tables(self, classes, counts, weighted_classes, C):
        """Labels and costs of each binary problem, by class index.

        Returns ``signs`` and ``costs`` of shape (n_problems, n_classes): a
        row of class j in problem c has label ``signs[c, j]`` and
        ``C_i = costs[c, j] * sample_weight_i``.  Binary: one problem with
        ``classes_[1]`` positive and ``C * class_weight[y]``.  One-vs-rest:
        LIBLINEAR weights only the positive class of each problem.
        """
        self.classes_ = classes
        if classes.shape[0] < 2:
            raise ValueError(
                "LinearSVC needs samples of at least 2 classes, but the data contains "
                f"only one class: {classes.tolist()[0]!r}. Pass y with two or more distinct labels."
            )
        if weighted_classes.shape[0] == 0:
            raise ValueError(
                "sample_weight is zero for every row, so there is nothing to train on. "
                "Give some rows a positive weight."
            )
        if weighted_classes.shape[0] < 2:
            raise ValueError(
                "LinearSVC needs samples of at least 2 classes with positive sample_weight, "
                f"but only class {weighted_classes.tolist()} has any. Give rows of another class "
                "a positive weight."
            )
        y_for_weights = np.repeat(classes, counts)
        class_weight = compute_class_weight(self.class_weight, classes=classes, y=y_for_weights)
        k = classes.shape[0]
        if k == 2:
            return np.array([[-1.0, 1.0]]), (C * class_weight)[None, :]
        same = np.eye(k, dtype=bool)
        signs = np.where(same, 1.0, -1.0)
        costs = np.where(same, C * class_weight[None, :], C)
        return signs, costs

    def _problem_label(self, c):
        labels = self.classes_.tolist()
        return labels[1] if len(labels) == 2 else labels[c]

    def _set_model(self, W, bias, certificates, n_iter, history, converged):
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1] * bias
        self.n_iter_ = int(n_iter)
        objective = np.array([c.primal for c in certificates])
        gap = np.array([c.relative_gap for c in certificates])
        single = len(certificates) == 1
        self.objective_ = float(objective[0]) if single else objective
        self.duality_gap_ = float(gap[0]) if single else gap
        self.history_ = history
        unconverged = [self._problem_label(c) for c, ok in enumerate(converged) if not ok]
        if unconverged:
            which = "" if single else f" for classes {unconverged}"
            warnings.warn(
                f"LinearSVC did not reach tol={self.tol:g} (relative duality gap) within "
                f"max_iter={self.max_iter} passes{which}; the final gap is {np.max(gap):.3g}. "
                "Increase max_iter, loosen tol, or (for loss='hinge') use a smaller C.",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _fit_stream(self, X, y, sample_weight, C, tol, max_iter, bias, clock_start):
        cache_bytes = parse_bytes(self.cache_bytes)
        prefetch = check_positive_int("prefetch", self.prefetch)
        check_choice("alpha_store", self.alpha_store, ("memory", "disk"))
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            X, y, sample_weight = as_dask(X, y, sample_weight)
        source = DaskSource(X, y, sample_weight)
        classes, counts, weighted_classes = source.label_counts()
        signs, costs = self._problem_tables(classes, counts, weighted_classes, C)
        self.n_features_in_ = source.n_features
        names = source.feature_names
        if names is not None and all(isinstance(c, str) for c in source.column_labels):
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

        def encode(block):
            y_index = np.searchsorted(classes, block.y)
            y_index = np.minimum(y_index, classes.shape[0] - 1)
            unknown = classes[y_index] != block.y
            if unknown.any():
                label = block.y[np.flatnonzero(unknown)[0]].item()
                raise ValueError(
                    f"partition {block.partition} has label {label!r}, which is not among the classes "
                    f"{classes.tolist()} found in y; the collection changed between reads."
                )
            return signs[:, y_index], costs[:, y_index] * block.sample_weight

        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int64).max, dtype=np.int64))
        result = solve_streamsvm(
            source,
            encode,
            n_problems=signs.shape[0],
            loss=self.loss,
            bias=bias,
            tol=tol,
            max_iter=max_iter,
            cache_bytes=cache_bytes,
            prefetch=prefetch,
            shuffle=bool(self.shuffle),
            seed=seed,
            labels=[self._problem_label(c) for c in range(signs.shape[0])],
            alpha_store=self.alpha_store,
            clock_start=clock_start,
            log=self._print_record if self.verbose else None,
        )
        self._set_model(
            result.W, bias, result.certificates, result.passes, result.history,
            [result.converged] * signs.shape[0],
        )  # fmt: skip
        return self

    def _print_record(self, r):
        where = f"active={r['active']}" if "active" in r else f"cache_rows={r['cache_rows']}"
        print(
            f"[LinearSVC] class={r['class']!r} pass {r['pass']}: primal={r['primal']:.6f} "
            f"dual={r['dual']:.6f} gap={r['gap']:.3e} {where} t={r['seconds']:.3f}s",
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

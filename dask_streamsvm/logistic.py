"""``LogisticRegression``: LIBLINEAR's L2-regularised logistic regression with an exact certificate.

The estimator's parameters, the problem it names and its probabilities; the
fit, its plan and the fitted attributes are every linear model's
(:mod:`dask_streamsvm._linear_model`), and so are the solvers: the logistic
loss is one of the engine's losses (:mod:`dask_streamsvm.engine.plan.losses`).
"""

import numbers
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._lazy import map_rows
from ._linear_model import PARAMETER_CONSTRAINTS, LinearModel, parameter_docs
from ._validation import check_choice, one_of, unit_interval
from .engine.data.source import is_dask_collection
from .engine.plan.problem import LOGISTIC_LOSS
from .linear import LinearSVC


def _penalty_check(name, value):
    """Check: ``"l1"``, ``"l2"`` or ``"elasticnet"`` (or the default, ``"deprecated"``)."""
    if isinstance(value, str) and value == "deprecated":
        return value
    return check_choice(name, value, ("l1", "l2", "elasticnet"))


class LogisticRegression(LinearModel):
    """Logistic regression solved with a certificate, in memory, out of core or on a Dask cluster.

    Minimises, for two classes (and each one-vs-rest problem, below)::

        1/2 ||w||^2 + sum_i C_i log(1 + exp(-y_i (w . x_i + b)))

    with the bias ``b`` learned as the weight of a constant feature of value
    ``intercept_scaling`` (and therefore regularised, as in LIBLINEAR's
    ``-s 0`` and ``-s 7`` and scikit-learn's ``solver="liblinear"``), and
    ``C_i = C * class_weight[y_i] * sample_weight[i]``.  The solvers are
    dual coordinate descent (Yu, Huang and Lin 2011: a one-dimensional
    Newton solve per coordinate, every dual variable strictly inside its
    box ``0 < alpha_i < C_i``), streamed through a row cache chosen by each
    row's share of the duality gap as :class:`~dask_streamsvm.LinearSVC`'s
    are, and, on tall data, primal Newton steps, one read of the rows each
    (the Hessian ``I + sum_i C_i sigma(m_i) sigma(-m_i) x_i x_i^T``, or its
    products on wide data).  Every solver stops on the exact relative
    duality gap: the dual of the logistic loss is an entropy, ``D(alpha) =
    sum_i H_i(alpha_i) - 1/2 ||w(alpha)||^2``, whose value is exact for any
    ``alpha`` in the box, so ``duality_gap_`` bounds how far
    ``objective_`` is from the optimum.

    More than two classes train the softmax model of scikit-learn 1.9's
    ``LogisticRegression()`` by default (``multi_class="auto"``)::

        1/2 ||W||_F^2 + sum_i C_i [logsumexp_k(w_k . x_i + b_k) - (w_{y_i} . x_i + b_{y_i})]

    with the intercept ``b`` *not* penalised, as in scikit-learn (and
    ``intercept_scaling`` unused), by Newton's method, certified by the
    multinomial dual (an entropy over each row's simplex; see
    :mod:`dask_streamsvm.engine.primal.multinomial`);
    ``multi_class="ovr"`` trains one binary problem per class instead, the
    positive class weighted (LIBLINEAR's and scikit-learn's ``liblinear``
    way).  ``predict_proba`` is the model's own: ``sigma(w . x + b)`` for
    two classes, normalised over
    the classes for one-vs-rest as scikit-learn normalises it, the softmax
    of the scores for the multinomial model; no Platt step is needed.

    Parameters
    ----------
    C : float, default=1.0
        Inverse of the regularisation strength: the cost of a unit of loss,
        as scikit-learn's ``C``. Must be > 0.
    penalty : {"l1", "l2", "elasticnet"}, default="deprecated"
        Deprecated, as in scikit-learn 1.8 and later (a ``FutureWarning``):
        use ``l1_ratio``.  ``"l2"`` is ``l1_ratio=0``, ``"l1"`` is
        ``l1_ratio=1`` and ``"elasticnet"`` takes ``l1_ratio`` as it is;
        where ``penalty`` and ``l1_ratio`` disagree, ``penalty`` wins, with a
        warning, as in scikit-learn.
    l1_ratio : float in [0, 1], default=0.0
        The elastic-net mix ``r`` of the regulariser ``r ||w||_1 + (1 - r)/2
        ||w||^2`` (scikit-learn 1.9's): 0 is the L2 penalty above, 1 pure L1
        (LIBLINEAR's ``-s 6``), between them the elastic net; the bias
        weight is penalised like any other.  With ``l1_ratio > 0`` (``dual``
        False or ``"auto"``) in-memory rows train by coordinate descent with
        a Newton direction per feature (CDN, Yuan et al. 2010;
        :mod:`dask_streamsvm.engine.primal.l1`), and tall rows (at least
        100 times the features) and a Dask collection or path by the primal
        Newton reads, each step the minimiser of the
        read's quadratic model plus the penalty (newGLMNET's step,
        :mod:`dask_streamsvm.engine.primal.penalties`), streamed or on a
        cluster, at most 4,096 features plus the bias; certified by a
        duality gap either way.  ``solver="memory"`` computes a collection
        into memory (coordinate descent on short rows).
    multi_class : {"auto", "ovr", "multinomial"}, default="auto"
        ``"multinomial"``: the softmax model over all classes at once,
        scikit-learn 1.9's ``LogisticRegression()``; with two classes it is
        scikit-learn's binary model (``coef_`` of one row), its intercept
        unpenalised.  It trains in memory, streamed from a Dask collection
        or path (Newton steps of one read each from a sample's solution, at
        most 4,096 classes times features plus one), and on a Dask cluster
        (the same steps, and beyond that width Newton-CG with the Hessian's
        products on the rows the workers hold), with ``l1_ratio=0``, ``dual`` False or ``"auto"``, no
        ``partial_fit`` and no feature map but
        :class:`~dask_streamsvm.features.Standardize`; other parameters are
        refused with an error that names them.  ``"ovr"``: one binary
        problem per class (one for two classes), as above, which every solver
        trains (scikit-learn's ``OneVsRestClassifier(LogisticRegression())``
        gives its model with scikit-learn's unpenalised intercept).
        ``"auto"``: the multinomial model for three classes or more where it
        trains (as the parameters above, and streamed on one machine where
        the classes, counted by the first read, times the features plus one
        are at most 4,096), else one-vs-rest, as scikit-learn 1.9 fits one
        binary problem per class with ``solver="liblinear"``; two classes are
        the binary problem of ``"ovr"`` (its bias regularised, as
        LIBLINEAR's).  ``multi_class_`` says which was fitted.
    dual : {"auto", True, False}, default="auto"
        ``True``: the dual solvers (``solver``). ``False``: the primal
        Newton solver (LIBLINEAR ``-s 0``), one read of the data per step:
        for tall data, badly scaled features or a large ``C``. Streaming,
        it forms the Hessian (4095 features at most); in memory and on a
        cluster wide models take its products.  ``"auto"``: the primal
        solver where ``solver`` is ``"auto"`` or ``"memory"`` and the rows
        outnumber the features (plus the bias)
        :data:`~dask_streamsvm.engine.choice.PRIMAL_RATIO` times or more
        (in memory on dense rows without a feature map,
        :data:`~dask_streamsvm.engine.choice.DENSE_PRIMAL_RATIO` times; on
        a cluster, see ``cluster``); else the dual.
    fit_intercept : bool, default=True
        Learn an intercept, as the weight of a constant feature.
    intercept_scaling : float, default=1.0
        Value of that constant feature (LIBLINEAR's ``-B``, scikit-learn's
        ``intercept_scaling`` with ``solver="liblinear"``). Larger values
        make the intercept less regularised.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the samples of each class. One-vs-rest problems
        weight their positive class only, as LIBLINEAR does.  ``"balanced"``
        weighs class ``j`` by ``n / (k n_j)``, ``n_j`` the sample weight of
        its rows and ``n`` theirs all (their counts without
        ``sample_weight``), as scikit-learn 1.9.
    tol : float, default=1e-3
        Stop when the relative duality gap ``(P - D) / P`` is at most this:
        a certificate that ``objective_`` is within ``tol`` (relative) of the
        optimum.
    max_iter : int, default=1000
        Maximum number of passes over the data (per binary problem in
        memory; reads of the collection when streaming, plus one read to
        certify the final model if they did not converge).
    solver : {"auto", "memory", "streamsvm", "sbm", "bm"}, default="auto"
        As :class:`~dask_streamsvm.LinearSVC`'s: ``"memory"`` holds all rows
        in RAM; ``"streamsvm"`` (dual cached loops), ``"sbm"`` (selective
        block minimization) and ``"bm"`` (block minimization) stream Dask
        collections and paths through a row cache of ``cache_bytes``;
        ``"auto"`` streams Dask collections and paths and solves in-memory
        data in memory.
    feature_map : map of :mod:`dask_streamsvm.features` or None, default=None
        Train on ``phi(x)`` computed inside the solver from the stored raw
        rows (COFFIN), or scale the features with
        :class:`~dask_streamsvm.features.Standardize`, as for
        :class:`~dask_streamsvm.LinearSVC`.
    cluster : {"auto", "average", "cocoa", "sbm", None}, default="auto"
        ``"auto"``: a Dask collection or path trains on the cluster of the
        active ``dask.distributed`` client (or ``fit(..., client=...)``) with
        ``solver="auto"``; anything else in this process.  On a cluster each
        worker reads its part of the partitions, and ``"auto"`` runs Newton
        steps whose sums are added in a tree on the workers (``"newton"``,
        or Hessian products beyond 1,023 features: ``"truncated_newton"``),
        as exact as on one machine; with ``dual=True``, CoCoA+
        (``"cocoa"``).  ``"sbm"``: one machine's SBM on the first part's
        worker, the partitions read on their parts' workers and brought to
        it, as :class:`~dask_streamsvm.LinearSVC` has it.  ``"average"``:
        each worker trains on its part and the
        models are averaged by rows, certified by the dual point the average
        itself gives.  None: in this process.

    {parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, only when X has string column names
    multi_class_ : {"multinomial", "ovr"}
        The model the fit trained: the softmax model, or the binary problems
        (one-vs-rest, or one for two classes); ``multi_class="auto"``
        decides it by the classes and the parameters.
    n_iter_ : int
        Largest number of passes over the binary problems (Newton steps for
        the multinomial model).
    objective_ : float or ndarray of shape (n_classes,)
        Primal objective of the returned model (one per one-vs-rest problem;
        one for the multinomial model).
    duality_gap_ : float or ndarray of shape (n_classes,)
        Relative duality gap of the returned model.
    history_ : list of dict
        One record per pass, as :class:`~dask_streamsvm.LinearSVC`'s.
    cluster_parts_ : list of dict, only after a fit with ``cluster``
        Per part of the cluster fit: the ``worker``, its ``partitions`` and
        its ``rows``.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm import LogisticRegression
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [3.0, 0.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> clf = LogisticRegression(C=10.0, tol=1e-8, random_state=0).fit(X, y)
    >>> clf.predict([[2.5, 0.0]])
    array([1])
    >>> proba = clf.predict_proba([[2.5, 0.0]])
    >>> bool(proba[0, 1] > 0.5 and abs(proba.sum() - 1.0) < 1e-12)
    True
    >>> bool(clf.duality_gap_ <= 1e-8)
    True
    """

    def __init__(
        self,
        C=1.0,
        *,
        penalty="deprecated",
        l1_ratio=0.0,
        multi_class="auto",
        dual="auto",
        fit_intercept=True,
        intercept_scaling=1.0,
        class_weight=None,
        tol=1e-3,
        max_iter=1000,
        solver="auto",
        feature_map=None,
        cache_bytes="1GB",
        block_bytes=None,
        inner_iter=None,
        cache_policy="informative",
        deterministic=False,
        prefetch=2,
        shuffle=True,
        alpha_store="memory",
        callbacks=None,
        validation_data=None,
        cluster="auto",
        on_invalid="raise",
        retries=2,
        read_timeout=None,
        spill="auto",
        spill_dir=None,
        checkpoint_dir=None,
        checkpoint_every=None,
        random_state=None,
        verbose=0,
    ):
        self.C = C
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.multi_class = multi_class
        self.dual = dual
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.feature_map = feature_map
        self.cache_bytes = cache_bytes
        self.block_bytes = block_bytes
        self.inner_iter = inner_iter
        self.cache_policy = cache_policy
        self.deterministic = deterministic
        self.prefetch = prefetch
        self.shuffle = shuffle
        self.alpha_store = alpha_store
        self.callbacks = callbacks
        self.validation_data = validation_data
        self.cluster = cluster
        self.on_invalid = on_invalid
        self.retries = retries
        self.read_timeout = read_timeout
        self.spill = spill
        self.spill_dir = spill_dir
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {
        **PARAMETER_CONSTRAINTS,
        "penalty": _penalty_check,
        "l1_ratio": unit_interval,
        "multi_class": one_of("auto", "ovr", "multinomial"),
    }

    def _model(self):
        return LOGISTIC_LOSS, False, False

    def _multinomial(self):
        return isinstance(self.multi_class, str) and self.multi_class == "multinomial"

    def _fitted_kind(self, softmax):
        return {"multi_class_": "multinomial" if softmax else "ovr"}

    def _softmax_fitted(self):
        return getattr(self, "multi_class_", None) == "multinomial"

    def _sparse_penalty(self):
        """As :meth:`_penalty` reads the parameters (``penalty``, where given, wins), without its
        checks and warnings: the words of an L1 part, or None."""
        ratio, penalty = self.l1_ratio, self.penalty
        if isinstance(penalty, str) and penalty in ("l1", "l2"):  # penalty wins where it is given
            return f"penalty={penalty!r}" if penalty == "l1" else None
        real = isinstance(ratio, numbers.Real) and not isinstance(ratio, bool)
        return f"l1_ratio={ratio!r}" if real and 0.0 < ratio <= 1.0 else None

    def _penalty(self, params):
        """``(words, l1_ratio)`` as scikit-learn 1.9 reads ``penalty`` and ``l1_ratio``: ``penalty``
        is deprecated (a FutureWarning), and where it is given it wins over ``l1_ratio``."""
        ratio, penalty = params["l1_ratio"], params["penalty"]
        if penalty == "deprecated":
            return f"l1_ratio={ratio:g}", ratio
        warnings.warn(
            "'penalty' was deprecated in scikit-learn 1.8 and will be removed in 1.10, and is here: "
            "leave it at its default and use l1_ratio instead (l1_ratio=0 for penalty='l2', "
            "l1_ratio=1 for penalty='l1', a number between 0 and 1 for penalty='elasticnet').",
            FutureWarning,
            stacklevel=6,
        )
        given = {"l2": 0.0, "l1": 1.0}.get(penalty, ratio)
        if given != ratio:
            warnings.warn(
                f"Inconsistent values: penalty={penalty!r} with l1_ratio={ratio:g}; penalty={penalty!r} "
                f"is used (l1_ratio={given:g}). Pass l1_ratio only.",
                UserWarning,
                stacklevel=6,
            )
        return f"penalty={penalty!r}", given

    # -- probabilities: the model's own ---------------------------------------------------

    def _proba(self, rows):
        scores = self._scores(rows)
        if scores.ndim == 1:
            positive = _sigmoid(scores)
            return np.column_stack([1.0 - positive, positive])
        if self._softmax_fitted():
            return _softmax(scores)
        proba = _sigmoid(scores)  # one-vs-rest: each class's own, normalised as scikit-learn does
        return proba / proba.sum(axis=1, keepdims=True)

    def predict_proba(self, X):
        """Class probabilities, ``sigma(w . x + b)`` of the model (normalised over the classes of a
        one-vs-rest model; the softmax of the scores ``z_k = w_k . x + b_k`` for the multinomial
        model of more than two classes).

        Returns an array of shape (n_samples, n_classes), columns in the
        order of ``classes_`` (a lazy Dask Array or DataFrame for Dask input,
        a block per partition).
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return map_rows(self, X, self._proba, columns=self.classes_, name="proba")
        return self._proba(self._check_in_memory(X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))  # lazy for Dask results too


def _sigmoid(z):
    """``1 / (1 + exp(-z))`` elementwise, without overflow."""
    out = np.empty_like(z, dtype=np.float64)
    positive = z >= 0
    out[positive] = 1.0 / (1.0 + np.exp(-z[positive]))
    e = np.exp(z[~positive])
    out[~positive] = e / (1.0 + e)
    return out


def _softmax(z):
    """``exp(z_k) / sum_l exp(z_l)`` along each row, without overflow."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# The parameters LogisticRegression shares with LinearSVC, documented once (LinearSVC's docstring).
SHARED_PARAMETERS = (
    "cache_bytes", "block_bytes", "inner_iter", "cache_policy", "deterministic", "prefetch", "shuffle",
    "alpha_store", "callbacks", "validation_data", "on_invalid", "retries", "read_timeout", "spill",
    "spill_dir", "checkpoint_dir", "checkpoint_every", "random_state", "verbose",
)  # fmt: skip
LogisticRegression.__doc__ = LogisticRegression.__doc__.replace(
    "    {parameters}\n", parameter_docs(LinearSVC.__doc__, SHARED_PARAMETERS)
)

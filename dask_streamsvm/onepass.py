"""``OnePassSVC``: the L2-SVM in one pass, as a streaming minimum enclosing ball.

Rai, Daume III & Venkatasubramanian (IJCAI 2009), Algorithms 1 and 2: the
estimator checks parameters and input; the balls are
:class:`~dask_streamsvm.engine.onepass.Balls` (the driver) and
:mod:`dask_streamsvm.kernels.meb` (the kernels, with the maths).
"""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._stream_classifier import StreamClassifier, checked_params
from ._validation import anything, boolean, check_positive_int, integer, positive_float
from ._validation import random_state as random_state_check
from .engine.onepass import Balls
from .features import Standardize

# Rows of the first streamed block kept to check the model on; rows scaled at a time when standardizing.
PROBE_ROWS = 4096
FEED_ROWS = 65536
_FIRST_BLOCK = "first block"  # the scaling is learned from the first block fed (a str: pickles as itself)
# The largest lookahead: an update solves a cone program over the buffered rows in O(lookahead**3)
# work (measured: 1.9 s for 100 rows, 31 s for 256; 128 takes about 4 s), so a larger one makes
# a fit run for minutes to hours without a word (docs/benchmarks.md measures lookahead 1 to 50).
MAX_LOOKAHEAD = 128


def _lookahead(name, value):
    """Check: an integer in ``[1, MAX_LOOKAHEAD]``, with the reason for the bound."""
    value = check_positive_int(name, value)
    if value > MAX_LOOKAHEAD:
        raise ValueError(
            f"{name} must be at most {MAX_LOOKAHEAD}, got {name}={value}: each update of the ball solves "
            f"a cone program over the {name} buffered rows in O({name}**3) work (about 2 s for 100 rows, "
            f"30 s for 256), so a fit would run for minutes or hours. Pass {MAX_LOOKAHEAD} or less "
            "(docs/benchmarks.md measures 1 to 50; the default is 10)."
        )
    return value


def _learn_scaling(X, *, centre):
    """:class:`Standardize` fitted to the block ``X`` (dense rows centred when ``centre``), computed on
    ``X`` divided by each column's largest |x| so that squares of large values cannot overflow."""
    top = np.asarray(abs(X).max(axis=0).toarray() if sp.issparse(X) else np.abs(X).max(axis=0), float).ravel()
    top = np.where(top > 0.0, top, 1.0)
    blocks = (
        X[i : i + FEED_ROWS] / top
        if not sp.issparse(X)
        else sp.csr_matrix(X[i : i + FEED_ROWS]).multiply(1.0 / top).tocsr()
        for i in range(0, X.shape[0], FEED_ROWS)
    )
    scaler = Standardize(with_mean="auto" if centre else False).learn(blocks, X.shape[1])
    scaler.mean_, scaler.scale_ = scaler.mean_ * top, scaler.scale_ * top
    return scaler


class OneClassWarning(UserWarning):
    """A fit whose model puts every training row in one class although the rows hold several."""


class OnePassSVC(StreamClassifier):
    """Linear L2-SVM learned in a single pass: the streaming minimum enclosing ball.

    Rai, Daume III & Venkatasubramanian (IJCAI 2009): the L2-SVM
    ``min ||w||^2 + C sum_i xi_i^2`` s.t. ``y_i w . x_i >= 1 - xi_i`` is the
    minimum enclosing ball of the points ``[y_i x_i ; C^(-1/2) e_i]`` when
    the rows have equal norms.  Each row is read once: a row inside the
    current ball is dropped; a row outside it grows the ball to enclose it
    (Algorithm 1, ``lookahead=1``, a closed-form step), or waits in a buffer
    of ``lookahead`` rows whose enclosing ball with the current one is then
    solved exactly (Algorithm 2).  The ball's radius is within 3/2 of the
    exact one; memory is ``O(n_features * lookahead)`` per class, however
    long the stream.  One-vs-rest for more than two classes (a ball each).

    The answer is an approximation by construction: there is no
    duality-gap certificate as :class:`~dask_streamsvm.LinearSVC` gives.
    A fit on in-memory rows whose model puts every training row in one
    class, although they hold several, warns (:class:`OneClassWarning`):
    on features of very different scales, or far from the origin, the ball
    can miss the data.

    Parameters
    ----------
    C : float, default=1.0
        Cost of the squared slacks; > 0.
    lookahead : int, default=10
        Rows outside the ball buffered before the ball is updated (the
        paper's L): 1 is Algorithm 1; larger values (Algorithm 2) solve a
        small cone program of the ball and ``lookahead`` rows (to a
        relative gap of 1e-10) and make the result less sensitive to the
        order of the stream, at ``O(lookahead^3)`` work per update (about
        2 s for 100 rows), hence at most :data:`MAX_LOOKAHEAD` (128).  The
        default 10 was more accurate than 1 on each of the six sets of
        ``benchmarks/bench_onepass.py`` (by 1 to 20 points), for about
        1.5 times the seconds.
    fit_intercept : bool, default=True
        Learn an intercept as the weight of a constant feature of value
        ``intercept_scaling`` (regularised like the others), as LIBLINEAR.
    intercept_scaling : float, default=1.0
    normalize : bool, default=True
        Scale every row (with its constant feature) to unit norm as it is
        read.  The equivalence with the SVM needs ``||x_i||`` to be the same
        for every row (the paper's ``k(x, x) = kappa``); otherwise the ball
        favours rows of large norm.  The scaling does not change which side
        of the hyperplane a row falls on, so ``predict`` takes rows as they
        are.  ``normalize=False`` requires rows of equal norms and raises a
        ValueError naming the first row that differs.
    standardize : bool, default=True
        With ``normalize=True``: centre the columns of dense rows and
        scale every column to unit variance, by the means and standard
        deviations of the first block the fit reads (in memory: every row;
        a Dask collection or a file: its first partition in the stream's
        order; ``partial_fit``: the rows of its first call), and fold the
        scaling back into ``coef_`` and ``intercept_``.  Normalizing rows
        of features far from the origin (raw pixel values, positive
        counts) puts the two classes at opposite poles of the sphere,
        whose enclosing ball is centred near the origin whatever the
        labels: without it the model can put every row in one class.
        Sparse rows are scaled, never centred (they would lose their
        zeros), and without an intercept nothing is centred.  Memory and
        reads are unchanged: the statistics come from rows already read.
    shuffle : bool, default=True
        ``fit``: visit the rows in a random order (partitions and the rows
        of each, from ``random_state``); ``partial_fit`` keeps the order.
    prefetch : int, default=2
        Partitions of a Dask collection the reader thread computes ahead.
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    standardize_ : Standardize or None
        The scaling the fit applied (:class:`~dask_streamsvm.features.Standardize`,
        its ``mean_``, ``scale_`` and ``n_samples_seen_``), or None.
    radius_ : float or ndarray of shape (n_classes,)
        Radius of the final ball (per one-vs-rest problem).
    n_core_vectors_ : int or ndarray of shape (n_classes,)
        Rows that updated the ball (the paper's M; with lookahead, every
        buffered row counts).
    n_features_in_ : int
    feature_names_in_ : ndarray of str, only when X has string column names

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm import OnePassSVC
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, -1.0], [3.0, -1.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> OnePassSVC(random_state=0).fit(X, y).predict([[2.5, -1.0]])
    array([1])
    """

    def __init__(
        self,
        C=1.0,
        *,
        lookahead=10,
        fit_intercept=True,
        intercept_scaling=1.0,
        normalize=True,
        standardize=True,
        shuffle=True,
        prefetch=2,
        random_state=None,
    ):
        super().__init__(C, shuffle=shuffle, prefetch=prefetch, random_state=random_state)
        self.lookahead = lookahead
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.normalize = normalize
        self.standardize = standardize

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # One pass over a ball within 3/2 of the optimum: on scikit-learn's 3-blob check, one-vs-rest
        # trains to 64% accuracy with lookahead=1 (68% with 5), below the check's 83%; 92% with 10.
        tags.classifier_tags.poor_score = self.lookahead < 10
        return tags

    _parameter_constraints = {
        "C": positive_float,
        "lookahead": _lookahead,
        "fit_intercept": boolean,
        "intercept_scaling": anything,  # checked with fit_intercept (checked_params)
        "normalize": boolean,
        "standardize": boolean,
        "shuffle": boolean,
        "prefetch": integer(),
        "random_state": random_state_check,
    }

    # -- training -----------------------------------------------------------------------

    def fit(self, X, y):
        """Learn from every row of ``X`` once.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, Dask Array, Dask DataFrame, path}
            Dask collections (and Parquet, CSV or LIBSVM paths) are read
            once, a partition at a time, by a reader thread; the labels are
            read once before that, to know the classes.
        y : array-like, Dask Array or Series, or str (a Dask DataFrame's label column)

        Returns
        -------
        self
        """
        params = checked_params(self)
        self.__dict__.pop("_balls", None)
        source, X, y = self._input(X, y, reset=True)
        if source is not None:
            self._start(source.label_counts()[0], params, probe="first")
            seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
            for rows, signs, order in self._signed_blocks(source, shuffle=bool(self.shuffle), seed=seed):
                self._feed(rows, signs, order)
        else:
            self._start(np.unique(y), params, probe="all")
            order = np.arange(X.shape[0])
            if self.shuffle:
                order = check_random_state(self.random_state).permutation(X.shape[0])
            self._feed(X, self._signs(y), order)
        self._set_model(self._balls.finish())  # partial_fit may go on with the stream from here
        probe, self._probe, self._probe_rows = self._probe, (None, None, True), None  # keep no rows
        self._warn_if_one_class(*probe)
        return self

    def _warn_if_one_class(self, X, index, whole):
        """Warn when the model puts every row of ``X`` (training rows: all of them in memory, else
        the first block's first rows; ``index``: their classes' positions) in one class while they
        hold several: the ball's hyperplane missed the data."""
        if X is None or np.unique(index).shape[0] < 2:
            return
        predicted = np.unique(self._labels(X))
        if predicted.shape[0] == 1:
            label = predicted[0].item() if hasattr(predicted[0], "item") else predicted[0]
            rows = (
                f"every one of its {X.shape[0]:,} training rows"
                if whole
                else f"every one of the {X.shape[0]:,} training rows it checked (the first read)"
            )
            warnings.warn(
                f"OnePassSVC predicts class {label!r} for {rows}: the one-pass ball did not separate the "
                f"classes (C={self.C:g}, fit_intercept={self.fit_intercept}, "
                f"standardize={self.standardize}). Scale the features to comparable ranges, try a larger "
                "C or lookahead, or train LinearSVC, which certifies its model.",
                OneClassWarning,
                stacklevel=3,
            )

    def partial_fit(self, X, y, classes=None):
        """Feed a block of a stream, in its order; the buffer carries over to the next call.

        ``classes`` (every class of the stream) is required on the first
        call, unless the model was fitted by :meth:`fit`, whose stream it
        continues.  The model after each call includes the rows still
        buffered, so cutting a stream into blocks differently gives the
        same model.
        """
        params = checked_params(self)
        first = getattr(self, "_balls", None) is None
        classes = self._partial_fit_classes(classes, first=first)
        source, X, y = self._input(X, y, reset=first)
        if first:
            self._start(classes, params)
        if source is not None:
            for rows, signs, order in self._signed_blocks(source):
                self._feed(rows, signs, order)
        else:
            self._feed(X, self._signs(y), np.arange(X.shape[0]))
        self._set_model(self._balls.finished_copy())
        return self

    def _start(self, classes, params, probe=None):
        """A fresh ball per problem, over ``n_features_in_`` features, of the checked ``params``; the
        scaling comes with the first block fed, and so do the rows the model is checked on
        (``probe``: "all" of them, the "first" ``PROBE_ROWS``, or None)."""
        k = self._check_classes(classes, "OnePassSVC")
        self._bias = bias = params["bias"]
        normalize = bool(self.normalize)
        self._balls = Balls(
            k,
            self.n_features_in_,
            C=params["C"],
            lookahead=params["lookahead"],
            bias=bias,
            normalize=normalize,
        )
        self._scaler = _FIRST_BLOCK if (self.standardize and normalize) else None
        self._probe_rows = probe
        self._probe = (None, None, True)

    def _feed(self, X, signs, order):
        """Rows ``order`` of the block ``X`` into the balls, standardized; the first block sets the
        scaling and keeps rows to check the model on (all of them in memory, else the first
        ``PROBE_ROWS``)."""
        if isinstance(self._scaler, str):
            self._scaler = _learn_scaling(X, centre=self._bias > 0.0)
        if self._probe_rows is not None and self._probe[0] is None:
            whole = self._probe_rows == "all"
            keep = slice(None) if whole else order[:PROBE_ROWS]
            self._probe = (X if whole else X[keep], self._class_index(signs[:, keep]), whole)
        if self._scaler is None:
            self._balls.feed(X, signs, order)
            return
        for start in range(0, order.shape[0], FEED_ROWS):  # scaled a slice at a time: no copy of X
            part = order[start : start + FEED_ROWS]
            self._balls.feed(self._scaler.scale_rows(X[part]), signs[:, part], np.arange(part.shape[0]))

    @staticmethod
    def _class_index(signs):
        """Each row's class position from its +1/-1 signs (one problem: binary)."""
        return (signs[0] > 0).astype(np.intp) if signs.shape[0] == 1 else signs.argmax(axis=0)

    def _set_model(self, balls):
        W = balls.weights()
        coef, intercept = W[:, :-1].copy(), W[:, -1] * self._bias
        self.standardize_ = self._scaler if isinstance(self._scaler, Standardize) else None
        if self.standardize_ is not None:
            coef, intercept = self.standardize_.fold(coef, intercept)
        self.coef_, self.intercept_ = coef, intercept
        single = W.shape[0] == 1
        R, M = balls.state.R, balls.state.M
        self.radius_ = float(R[0]) if single else R.copy()
        self.n_core_vectors_ = int(M[0]) if single else M.copy()

    # -- prediction ---------------------------------------------------------------------

    def _scores(self, X):
        scores = X @ self.coef_.T + self.intercept_
        scores = np.asarray(scores)
        return scores.ravel() if scores.shape[1] == 1 else scores

"""``OnePassSVC``: the L2-SVM in one pass, as a streaming minimum enclosing ball.

Rai, Daume III & Venkatasubramanian (IJCAI 2009), Algorithms 1 and 2: the
estimator checks parameters and input; the balls are
:class:`~dask_streamsvm.engine.models.onepass.Balls` (the driver) and
:mod:`dask_streamsvm.kernels.meb` (the kernels, with the maths).
"""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._fit_context import fitted_in_context
from ._persist import (
    ModelFile,
    booleans,
    check_shapes,
    count,
    declared_classes,
    distinct_classes,
    feature_names,
    integers,
    names_of,
    number,
    real,
)
from ._stream_classifier import StreamClassifier
from ._validation import anything, boolean, check_positive_int, checked_params, cost, integer
from ._validation import random_state as random_state_check
from .engine.data.labels import SORTED_LABEL_MIX, merge_label_counts, order_label_mix, partition_label_mix
from .engine.models.onepass import BALL_ARRAYS, Balls
from .features import Standardize

# Most training rows a streamed fit keeps (spread evenly over the stream) to check its model on;
# rows scaled at a time when standardizing.
PROBE_ROWS = 4096
FEED_ROWS = 65536
_FIRST_BLOCK = "first block"  # the scaling is learned from the first block fed (a str: pickles as itself)
# The largest lookahead: an update solves a cone program over the buffered rows in O(lookahead**3)
# work (measured: 1.9 s for 100 rows, 31 s for 256; 128 takes about 4 s), so a larger one makes
# a fit run for minutes to hours without a word (docs/benchmarks.md measures lookahead 1 to 50).
MAX_LOOKAHEAD = 128
# The root-mean-square norm of the standardized rows, against the constant feature's value
# (intercept_scaling, 1 by default).  Unit variance alone gives centred rows the norm
# sqrt(n_features), beside which a constant feature of 1 is a small part of every normalized row:
# the ball cannot learn the offset, and on centred one-hot columns (whose groups no longer add up to
# a constant feature of their own) it fell to 66% test accuracy on a9a (majority 76%) and 76% on
# ijcnn1 (majority 90.5%).  Against unit variance alone and RMS norms 1, 1.41 and 2.83, 2 lost the
# least on average (2.4 points) against the best of them, over five dense sets at lookahead 1 and 10,
# and at most 9.7 (digits at lookahead 1; 2.83: at most 8.9 but 7.9 and 8.9 on ijcnn1 and the far
# set) (`python -m benchmarks.bench_onepass --row-norms`, docs/benchmarks.md).
STANDARDIZED_ROW_NORM = 2.0


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
    ``X`` divided by each column's largest |x| so that squares of large values cannot overflow; its
    scales then grown by one factor so that the scaled rows' root-mean-square norm is
    :data:`STANDARDIZED_ROW_NORM` (from the column moments: ``E||z||^2 = sum_j (var_j + (mean_j -
    centre_j)^2) / scale_j^2``)."""
    top = np.asarray(abs(X).max(axis=0).toarray() if sp.issparse(X) else np.abs(X).max(axis=0), float).ravel()
    top = np.where(top > 0.0, top, 1.0)
    blocks = (
        X[i : i + FEED_ROWS] / top
        if not sp.issparse(X)
        else sp.csr_matrix(X[i : i + FEED_ROWS]).multiply(1.0 / top).tocsr()
        for i in range(0, X.shape[0], FEED_ROWS)
    )
    scaler = Standardize(with_mean="auto" if centre else False)
    moments = scaler.moments(blocks, X.shape[1])
    scaler.learn_moments(moments)
    mean = np.ldexp(moments.mean, moments.shift)
    var = np.ldexp(moments.m2 / moments.rows, 2 * moments.shift)
    sqnorm = float(np.sum((var + (mean - scaler.mean_) ** 2) / scaler.scale_**2))
    grow = np.sqrt(sqnorm) / STANDARDIZED_ROW_NORM if sqnorm > 0.0 else 1.0
    scaler.mean_, scaler.scale_ = scaler.mean_ * top, scaler.scale_ * (top * grow)
    return scaler


def _per_problem(attributes, name, problems):
    """The list attribute ``name`` of a model file, a value per problem."""
    values = attributes[name]
    if not (isinstance(values, list) and len(values) == problems):
        raise ValueError(f"{name} must be a list of {problems} value(s), got {values!r}"[:200])
    return values


def _ball_array(arrays, name, depth):
    """The array ``name`` of :data:`~.engine.models.onepass.BALL_ARRAYS`, checked as its kind says
    (``ball_n_buf``: at most the buffer's ``depth``)."""
    kind = BALL_ARRAYS[name]
    if kind == "boolean":
        return booleans(arrays, name)
    if kind == "count":
        return integers(arrays, name, high=depth if name == "ball_n_buf" else 2**62)
    return real(arrays, name, low=0.0 if kind == "non-negative" else None)


def _row_norm(attributes, normalize):
    """``row_norm`` of a model file: None, or with ``normalize=False`` the ``x . x`` (> 0) of every row."""
    norm = attributes["row_norm"]
    if norm is None:
        return None
    if normalize:
        raise ValueError("row_norm is saved, but normalize is True (every row is scaled to norm 1)")
    return number({"row_norm": norm}, "row_norm")


class MajorityClassWarning(UserWarning):
    """A fitted :class:`OnePassSVC` no better than predicting the majority class on the training rows
    it checked (every row in memory; streamed, up to :data:`PROBE_ROWS` spread over the stream),
    which hold several classes (putting every row in one class is the extreme case), or fitted on
    rows that came sorted by label, the order that brings the one-pass ball there."""


# The warning's name from when it covered the one-class case only: the same class, so that filters
# and ``pytest.warns`` on either name see every such warning.
OneClassWarning = MajorityClassWarning


class _CheckRows:
    """Rows of a stream kept as they are read, to check the fitted model on without another read:
    every ``stride``-th row of the stream's order, so at most :data:`PROBE_ROWS` of ``n_rows``."""

    def __init__(self, n_rows):
        self.stride = max(1, -(-int(n_rows) // PROBE_ROWS))
        self.seen, self.rows, self.index = 0, [], []

    def keep(self, X, index, order):
        """Of the block ``X`` read in ``order`` (``index``: its rows' class positions), the rows whose
        place in the stream is a multiple of ``stride``."""
        picked = order[(-self.seen) % self.stride :: self.stride]
        self.seen += order.shape[0]
        if picked.shape[0]:
            self.rows.append(X[picked])
            self.index.append(index[picked])

    def where(self):
        """The kept rows, in the warning's words."""
        n = sum(rows.shape[0] for rows in self.rows)
        step = "every row" if self.stride == 1 else f"one row in {self.stride}"
        return f"the {n:,} training rows it checked ({step} of the stream, kept as it was read)"

    def stacked(self):
        """``(rows, index)`` of every kept row, or ``(None, None)``."""
        if not self.rows:
            return None, None
        stack = sp.vstack(self.rows, format="csr") if sp.issparse(self.rows[0]) else np.vstack(self.rows)
        return stack, np.concatenate(self.index)


def _plain(label):
    """A NumPy scalar label as the Python value it holds (for the warning's ``repr``)."""
    return label.item() if hasattr(label, "item") else label


def _sorted_partitions(label_counts):
    """The warning's account of partitions sorted by label (``label_counts``: each partition's), or
    None when the rows of a partition mix their labels as rows drawn at random would."""
    mix = partition_label_mix(label_counts)
    if mix is None or mix >= SORTED_LABEL_MIX:
        return None
    pure = [int(np.count_nonzero(np.asarray(c))) == 1 for _, c, *_ in label_counts if np.sum(c) > 0]
    return (
        f"{sum(pure)} of its {len(pure)} partitions hold one class, and two rows of a partition differ "
        f"in label {mix:.0%} as often as two rows of the whole data. The fit shuffles the order of the "
        "partitions and of the rows within each, which cannot mix them: the ball read long runs of one "
        "class. Shuffle the rows across partitions before the fit (write them in a random order; with "
        "Dask, add a column of random numbers and shuffle on it)"
    )


def _sorted_rows(index):
    """The warning's account of in-memory rows kept sorted by label (``index``: their classes'
    positions, in order; ``shuffle=False``), or None."""
    mix = order_label_mix(index)
    if mix is None or mix >= SORTED_LABEL_MIX:
        return None
    return (
        f"consecutive rows differ in label {mix:.0%} as often as rows drawn at random, and "
        "shuffle=False kept their order. Pass shuffle=True (the default)"
    )


class OnePassSVC(ModelFile, StreamClassifier):
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
    duality-gap certificate as :class:`~dask_streamsvm.LinearSVC` gives,
    and on some data it is no better than the majority class (at
    lookahead 10: a9a in 4 to 8 stream orders of 20, ijcnn1 in 15 to 20;
    docs/papers/onepass.md).  So
    :meth:`fit` scores its model on the training rows it can score without
    another read (every row in memory; streamed, up to 4,096 rows spread
    over the stream, kept as they were read) and warns
    (:class:`MajorityClassWarning`) when it is no better there than
    predicting the majority class, saying whether the rows came sorted by
    label; the fit then returns that constant model instead
    (``majority_fallback_``), never one worse than it on those rows.  The
    ball is also sensitive to the order of the stream: rows sorted by label
    across a collection's partitions are not mixed by the fit's shuffling
    of the partitions.

    Parameters
    ----------
    C : float, default=1.0
        Cost of the squared slacks; at least 1e-150.
    lookahead : int, default=10
        Rows outside the ball buffered before the ball is updated (the
        paper's L): 1 is Algorithm 1; larger values (Algorithm 2) solve a
        small cone program of the ball and ``lookahead`` rows (to a
        relative gap of 1e-10) and make the result less sensitive to the
        order of the stream, at ``O(lookahead^3)`` work per update (about
        2 s for 100 rows), hence at most :data:`MAX_LOOKAHEAD` (128).  The
        default 10 was more accurate than 1 on a9a, phishing, digits 8 vs 9
        and the far-from-the-origin set of ``benchmarks/bench_onepass.py``
        (by 4 to 20 points), the same on w8a, and 1.5 points less on
        ijcnn1 (both below its majority class), for about 1.5 times the
        seconds.
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
        zeros), and without an intercept nothing is centred.  The scaled
        rows are then shrunk together to a root-mean-square norm of 2
        (:data:`STANDARDIZED_ROW_NORM`), so that the constant feature
        (``intercept_scaling``) stays a fair part of every normalized row:
        beside unit-variance columns, whose rows have norm
        ``sqrt(n_features)``, the ball could not learn the offset.  Memory
        and reads are unchanged: the statistics come from rows already read.
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
        ``scale_`` is each column's standard deviation times one factor,
        the scaled rows' root-mean-square norm over 2.
    radius_ : float or ndarray of shape (n_classes,)
        Radius of the final ball (per one-vs-rest problem).
    n_core_vectors_ : int or ndarray of shape (n_classes,)
        Rows that updated the ball (the paper's M; with lookahead, every
        buffered row counts).
    majority_fallback_ : bool
        Whether :meth:`fit` kept the constant model of the majority class
        (``coef_`` 0) in place of the ball's, which scored no better than
        it on the training rows checked (with a
        :class:`MajorityClassWarning`); ``radius_`` and
        ``n_core_vectors_`` still describe the ball, and
        :meth:`partial_fit` goes on from it.
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
        # trains to 64% accuracy with lookahead=1 (73% with 5), below the check's 83%; 92% with 10.
        tags.classifier_tags.poor_score = self.lookahead < 10
        return tags

    _parameter_constraints = {
        "C": cost(
            "the ball's points carry C ** -0.5 as a coordinate, and under the bound the squares of "
            "1 / C overflow float64 (C = 1e-160 already trains another model than C = 1e-150)."
        ),
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

        The fitted model is then checked on the training rows it can score
        without another read (every row in memory; streamed, up to
        :data:`PROBE_ROWS` kept as they were read, spread over the stream):
        if it is no better there than predicting the majority class, the fit
        warns (:class:`MajorityClassWarning`), saying whether the rows were
        sorted by label, and keeps the constant model of the majority class
        instead (``majority_fallback_``).

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
        return fitted_in_context(self, OnePassSVC._fit, X, y, scored=(X, y))

    def _fit(self, params, X, y):
        self.__dict__.pop("_balls", None)
        source, X, y = self._input(X, y, reset=True)
        if source is not None:
            counts = source.label_counts(merged=False)
            ids = [source.partition_id(p) for p in range(len(counts))]
            classes, n_rows, *_ = merge_label_counts(counts, partitions=ids)
            self._start(classes, params)
            kept = _CheckRows(n_rows.sum())
            seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
            for rows, signs, order in self._signed_blocks(source, shuffle=bool(self.shuffle), seed=seed):
                kept.keep(rows, self._class_index(signs), order)
                self._feed(rows, signs, order)
            self._set_model(self._balls.finish())  # partial_fit may go on with the stream from here
            self._check_model(*kept.stacked(), kept.where(), _sorted_partitions(counts))
        else:
            self._start(np.unique(y), params)
            order = np.arange(X.shape[0])
            if self.shuffle:
                order = check_random_state(self.random_state).permutation(X.shape[0])
            signs = self._signs(y)
            self._feed(X, signs, order)
            self._set_model(self._balls.finish())
            index = self._class_index(signs)
            sorted_note = None if self.shuffle else _sorted_rows(index)
            self._check_model(X, index, f"its {X.shape[0]:,} training rows", sorted_note)
        return self

    def _check_model(self, X, index, where, sorted_by_label):
        """Warn (once) when the model's accuracy on the training rows ``X`` (``index``: their classes'
        positions; ``where`` names them), which hold several classes, is no better than the majority
        class's share of them, or when the rows came sorted by label (``sorted_by_label``: the
        account of it, or None)."""
        if X is None:
            return
        shares = np.bincount(index, minlength=self.classes_.shape[0]) / index.shape[0]
        if np.count_nonzero(shares) < 2:
            return  # one class among the rows: the majority class is always right
        predicted = self._labels(X)
        accuracy = float(np.mean(predicted == self.classes_[index]))
        if accuracy > shares.max() and not sorted_by_label:
            return
        most = int(np.argmax(shares))
        majority = _plain(self.classes_[most])
        against = f"predicting the majority class {majority!r} for every row ({shares.max():.1%}"
        said = np.unique(predicted)
        kept = ""
        if accuracy <= shares.max():  # never a model worse than the constant one on the rows checked
            self._keep_majority(most)
            kept = "; the fit keeps that constant model instead (coef_ 0, majority_fallback_ True)"
        if said.shape[0] == 1:
            found = (
                f"OnePassSVC predicts class {_plain(said[0])!r} for every one of {where}, which hold "
                f"{np.count_nonzero(shares)} classes: accuracy {accuracy:.1%}, no better than {against}"
            )
        elif accuracy <= shares.max():
            found = f"OnePassSVC scores {accuracy:.1%} accuracy on {where}, no better than {against}"
        else:  # better than the majority class, but from rows sorted by label
            found = f"OnePassSVC scores {accuracy:.1%} accuracy on {where}, against {against}"
        why = (
            f" The rows came sorted by label, the order the one-pass ball is worst at: {sorted_by_label}, or"
            if sorted_by_label
            else " The one-pass ball is within 3/2 of the optimal radius, not of the best classifier, and "
            "depends on the order of the stream. Shuffle the rows if they are ordered, try another C or a "
            "larger lookahead, or"
        )
        warnings.warn(
            f"{found}; C={self.C:g}, lookahead={self.lookahead}, standardize={self.standardize}){kept}."
            + why
            + " train LinearSVC (its partial_fit for a stream read a block at a time), which certifies "
            "its model.",
            MajorityClassWarning,
            stacklevel=3,
        )

    def _keep_majority(self, most):
        """The constant model that predicts class ``most`` (its position in ``classes_``) for every row:
        ``coef_`` 0 and the intercepts that make its score the largest (binary: its sign)."""
        k = self.classes_.shape[0]
        self.coef_ = np.zeros_like(self.coef_)
        if k == 2:
            self.intercept_ = np.array([1.0 if most == 1 else -1.0])
        else:
            self.intercept_ = np.where(np.arange(k) == most, 1.0, -1.0)
        self.majority_fallback_ = True

    def partial_fit(self, X, y, classes=None):
        """Feed a block of a stream, in its order; the buffer carries over to the next call.

        ``classes`` (every class of the stream) is required on the first
        call, unless the model was fitted by :meth:`fit`, whose stream it
        continues.  The model after each call includes the rows still
        buffered, so cutting a stream into blocks differently gives the
        same model.  Unlike :meth:`fit`, it does not check the model
        against the majority class (a stream's first blocks would warn of
        every early model); score it on rows of your own.
        """
        return fitted_in_context(self, OnePassSVC._partial_fit, X, y, classes, state=("_balls", "_scaler"))

    def _partial_fit(self, params, X, y, classes):
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

    def _start(self, classes, params):
        """A fresh ball per problem, over ``n_features_in_`` features, of the checked ``params``; the
        scaling comes with the first block fed."""
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

    def _feed(self, X, signs, order):
        """Rows ``order`` of the block ``X`` into the balls, standardized; the first block sets the
        scaling."""
        if isinstance(self._scaler, str):
            self._scaler = _learn_scaling(X, centre=self._bias > 0.0)
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
        self.majority_fallback_ = False  # the ball's model (_check_model may keep the constant one)
        single = W.shape[0] == 1
        R, M = balls.state.R, balls.state.M
        self.radius_ = float(R[0]) if single else R.copy()
        self.n_core_vectors_ = int(M[0]) if single else M.copy()

    # -- prediction ---------------------------------------------------------------------

    def _scores(self, X):
        scores = X @ self.coef_.T + self.intercept_
        scores = np.asarray(scores)
        return scores.ravel() if scores.shape[1] == 1 else scores

    # -- model files (dask_streamsvm._persist) ------------------------------------------

    def _file_state(self):
        arrays = {"classes_": self.classes_, "coef_": self.coef_, "intercept_": self.intercept_}
        arrays.update(self._balls.saved())
        scaler = self._scaler if isinstance(self._scaler, Standardize) else None
        standardize = None
        if scaler is not None:
            arrays.update(standardize_mean_=scaler.mean_, standardize_scale_=scaler.scale_)
            standardize = {"with_mean": scaler.with_mean, "n_samples_seen_": int(scaler.n_samples_seen_)}
        attributes = {
            **names_of(self),
            "majority_fallback_": bool(self.majority_fallback_),
            "radius_": np.atleast_1d(self.radius_).tolist(),
            "n_core_vectors_": np.atleast_1d(self.n_core_vectors_).tolist(),
            "standardize_": standardize,
            "row_norm": self._balls.norm,
        }
        return arrays, attributes

    def _file_shapes(self, attributes, k):
        """The shape of every array of a model file of ``k`` classes, with the scaling's if saved."""
        problems = 1 if k == 2 else k
        n_features = count(attributes, "n_features_in_", low=1)
        lookahead = checked_params(self)["lookahead"]
        shapes = {"classes_": (k,), "coef_": (problems, n_features), "intercept_": (problems,)}
        shapes.update(Balls.saved_shapes(problems, n_features, lookahead))
        if attributes.get("standardize_") is not None:
            shapes.update(standardize_mean_=(n_features,), standardize_scale_=(n_features,))
        return shapes, f"{k} classes, n_features_in_={n_features} and lookahead={lookahead}"

    def _check_file_table(self, attributes, table):
        check_shapes(table, *self._file_shapes(attributes, declared_classes(table)))

    def _set_file_state(self, arrays, attributes):
        params = checked_params(self)
        classes = distinct_classes(arrays)
        n_features = count(attributes, "n_features_in_", low=1)
        problems = 1 if classes.shape[0] == 2 else classes.shape[0]
        names = feature_names(attributes, n_features)
        coef, intercept = real(arrays, "coef_"), real(arrays, "intercept_")
        fallback = attributes["majority_fallback_"]
        if not isinstance(fallback, bool):
            raise ValueError(f"majority_fallback_ must be true or false, got {fallback!r}")
        if fallback and coef.any():
            raise ValueError("majority_fallback_ is true, but coef_ is not 0 (the constant model's)")
        radius = [number({"radius_": r}, "radius_") for r in _per_problem(attributes, "radius_", problems)]
        cores = _per_problem(attributes, "n_core_vectors_", problems)
        core = [count({"n_core_vectors_": m}, "n_core_vectors_", low=0) for m in cores]
        balls = Balls(
            problems, n_features, C=params["C"], lookahead=params["lookahead"], bias=params["bias"],
            normalize=bool(self.normalize),
        )  # fmt: skip
        depth = params["lookahead"] if params["lookahead"] > 1 else 0
        saved = {name: _ball_array(arrays, name, depth) for name in BALL_ARRAYS}
        balls.restore(saved, _row_norm(attributes, self.normalize))
        scaler = self._saved_scaler(arrays, attributes, params)
        self.classes_, self.n_features_in_ = classes, n_features
        self.__dict__.update(names)
        self._bias, self._balls, self._scaler = params["bias"], balls, scaler
        self.coef_, self.intercept_, self.majority_fallback_ = coef, intercept, fallback
        self.standardize_ = scaler if isinstance(scaler, Standardize) else None
        self.radius_ = radius[0] if problems == 1 else np.asarray(radius)
        self.n_core_vectors_ = core[0] if problems == 1 else np.asarray(core, dtype=np.int64)

    def _saved_scaler(self, arrays, attributes, params):
        """The scaling a model file holds (``standardize_``): a :class:`Standardize`; else None, or,
        with ``standardize`` and ``normalize`` but no rows read, the first block's to come."""
        saved = attributes["standardize_"]
        scaling = self.standardize and self.normalize
        if saved is None:
            return _FIRST_BLOCK if scaling else None
        if not scaling:
            raise ValueError("standardize_ is saved, but standardize or normalize is False")
        if not (isinstance(saved, dict) and set(saved) == {"with_mean", "n_samples_seen_"}):
            raise ValueError(f"standardize_ must be {{with_mean, n_samples_seen_}}, got {saved!r}"[:200])
        if saved["with_mean"] not in ("auto", False):
            raise ValueError(f"standardize_'s with_mean must be 'auto' or false, got {saved['with_mean']!r}")
        scaler = Standardize(with_mean=saved["with_mean"])
        scaler.mean_ = real(arrays, "standardize_mean_")
        scaler.scale_ = real(arrays, "standardize_scale_")
        if not (scaler.scale_ > 0.0).all():
            raise ValueError("standardize_scale_ must be > 0")
        scaler.n_samples_seen_ = count(saved, "n_samples_seen_", low=1)
        scaler.n_features_in_ = scaler.mean_.shape[0]
        return scaler

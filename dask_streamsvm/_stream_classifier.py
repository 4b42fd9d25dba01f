"""What the single-model streaming classifiers share: parameters, input, labels and prediction."""

import os

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._fit_tasks import CallbackSupportMixin
from ._lazy import map_rows
from ._validation import validated_rows
from .engine.data.reader import read_blocks
from .engine.data.source import DaskSource, is_dask_collection, is_dask_dataframe
from .engine.data.waiting import computed
from .engine.plan.calibration import probabilities
from .engine.plan.problem import class_index
from .features import Standardize
from .io import dask_parquet_deprecations_hidden, open_path


def feature_spec(feature_map, n_features):
    """The kernels' spec of ``feature_map`` for ``n_features`` raw features, or None (no map, or
    :class:`~dask_streamsvm.features.Standardize`, which scales the rows as they are read and is
    folded into the model)."""
    if feature_map is None or isinstance(feature_map, Standardize):
        return None
    if not hasattr(feature_map, "spec"):
        raise TypeError(
            f"feature_map must be a map of dask_streamsvm.features (PolynomialMap, ...) or None, "
            f"got {feature_map!r}."
        )
    return feature_map.spec(n_features)


def input_names(source):
    """``feature_names_in_`` of a :class:`~dask_streamsvm.engine.data.source.DaskSource`, or None.

    The column names of a Dask DataFrame whose every column label is a str
    (scikit-learn's rule); None for a Dask Array or other labels.
    """
    names = source.feature_names
    if names is not None and all(isinstance(c, str) for c in source.column_labels):
        return names
    return None


class StreamClassifier(CallbackSupportMixin, ClassifierMixin, BaseEstimator):
    """Base of the classifiers: :class:`~dask_streamsvm.LinearSVC`, :class:`~dask_streamsvm.OnePassSVC`
    and :class:`~dask_streamsvm.BudgetedSVC`.

    With scikit-learn 1.9 or later every one takes scikit-learn's callbacks
    (``set_callbacks``, :mod:`~dask_streamsvm._fit_tasks`).

    One binary problem for two classes (``classes_[1]`` positive), one per
    class (one-vs-rest) for more.  Subclasses give ``_scores(rows)``, one
    column per problem (a vector for one problem).  The parameters every
    subclass has are stored here, as scikit-learn's ``BaseSGD`` does.
    """

    def __init__(self, C=1.0, *, shuffle=True, prefetch=2, random_state=None):
        self.C = C
        self.shuffle = shuffle
        self.prefetch = prefetch
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- input ----------------------------------------------------------------------------

    def _input(self, X, y, *, reset):
        """``(source, None, None)`` for a Dask collection or a path, else ``(None, X, y)`` checked in memory.

        With ``reset``, the input's width and column names become
        ``n_features_in_`` and ``feature_names_in_``; without, a Dask
        collection of another width is an error (``validate_data`` checks
        arrays in memory).
        """
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            return (None, *self._validated(X, y, reset=reset))
        return self._adopt_width(DaskSource(X, y), reset=reset), None, None

    def _adopt_width(self, source, *, reset):
        """``source``; with ``reset`` its width and column names become ``n_features_in_`` and
        ``feature_names_in_``, without it another width than the fitted one is an error."""
        if reset:
            self.n_features_in_ = source.n_input_features
            names = input_names(source)
            if names is None:
                self.__dict__.pop("feature_names_in_", None)
            else:
                self.feature_names_in_ = names
        elif source.n_input_features != self.n_features_in_:
            raise ValueError(
                f"X has {source.n_input_features} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        return source

    def _validated(self, X, y, *, reset):
        X, y = validated_rows(self, X, y, reset=reset)
        check_classification_targets(y)
        return X, y

    def _signed_blocks(self, source, *, passes=1, shuffle=False, seed=0):
        """``(rows, signs, order)`` of every block of ``source`` that has rows (:func:`read_blocks`)."""
        for _, block in read_blocks(
            source, passes=passes, prefetch=self.prefetch, shuffle=shuffle, seed=seed
        ):
            if block.n_rows > 0:
                yield block.X, self._signs(block.y), block.order

    def _partial_fit_classes(self, classes, *, first):
        """``partial_fit``'s classes: required on the first call, and the fitted ones after it."""
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            return np.unique(np.asarray(classes))
        if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(
                f"`classes={np.unique(classes).tolist()!r}` is not the same as on the last call to "
                f"partial_fit, was: {self.classes_.tolist()!r}."
            )
        return self.classes_

    # -- labels ---------------------------------------------------------------------------

    def _signs(self, y):
        """+1/-1 labels of each problem, shape (n_problems, n_rows); unknown labels are an error."""
        classes = self.classes_

        def unknown(label):
            return f"y has label {label!r}, which is not among the classes {classes.tolist()}."

        index = class_index(classes, y, unknown)
        if self.classes_.shape[0] == 2:
            return np.where(index == 1, 1.0, -1.0)[None, :]
        return np.where(index[None, :] == np.arange(self.classes_.shape[0])[:, None], 1.0, -1.0)

    def _check_classes(self, classes, name):
        if classes.shape[0] < 2:
            raise ValueError(
                f"{name} needs samples of at least 2 classes, but the data contains only one class: "
                f"{classes.tolist()[0]!r}."
            )
        self.classes_ = classes
        return 1 if classes.shape[0] == 2 else classes.shape[0]

    # -- prediction ---------------------------------------------------------------------

    def _check_in_memory(self, X):
        """In-memory ``X`` checked against the fitted input: the rows ``_scores`` reads."""
        return validated_rows(self, X, reset=False)[0]

    def decision_function(self, X):
        """Signed distance to the hyperplane(s).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, Dask Array, Dask DataFrame}
            Dask input gives a lazy result with the same partitions: a Dask
            Array for a Dask Array, a Dask Series (two classes) or DataFrame
            (a column per class) for a Dask DataFrame, whose columns other
            than the model's features (a label column, say) are ignored.

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            columns = None if self.classes_.shape[0] == 2 else self.classes_
            return map_rows(self, X, self._scores, columns=columns, name="decision")
        return self._scores(self._check_in_memory(X))

    def predict(self, X):
        """Class labels: positive score for the second class, else argmax.

        Dask input gives a lazy Dask Array or Series with its partitions.
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return map_rows(self, X, self._labels, name="prediction")
        return self._labels(self._check_in_memory(X))

    def _labels(self, X):
        scores = self._scores(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[scores.argmax(axis=1)]

    @dask_parquet_deprecations_hidden()
    def score(self, X, y, sample_weight=None):
        """Accuracy on ``(X, y)``; for a Dask DataFrame ``y`` may name its label column."""
        if not is_dask_collection(X):
            return super().score(X, y, sample_weight=sample_weight)
        from sklearn.metrics import accuracy_score

        if isinstance(y, str) and is_dask_dataframe(X):
            y = X[y]
        predicted, y, sample_weight = computed([self.predict(X), y, sample_weight])
        return float(accuracy_score(np.asarray(y), np.asarray(predicted), sample_weight=sample_weight))

    # -- probabilities (estimators with ``probability=True`` and fitted ``probA_``, ``probB_``) --

    def _has_probability(self):
        if not getattr(self, "probability", False):
            raise AttributeError("predict_proba needs probability=True at fit time.")
        return True

    def _proba(self, rows):
        return probabilities(self._scores(rows), self.probA_, self.probB_)

    @available_if(_has_probability)
    def predict_proba(self, X):
        """Class probabilities by Platt scaling (``probability=True``).

        Returns an array of shape (n_samples, n_classes), columns in the
        order of ``classes_`` (a lazy Dask Array or DataFrame for Dask input).
        """
        check_is_fitted(self, "probA_")
        if is_dask_collection(X):
            return map_rows(self, X, self._proba, columns=self.classes_, name="proba")
        return self._proba(self._check_in_memory(X))

    @available_if(_has_probability)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))  # lazy for Dask results too

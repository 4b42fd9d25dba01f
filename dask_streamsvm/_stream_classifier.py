"""What the single-model streaming classifiers share: labels, input checks and prediction."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._lazy import map_rows
from .engine.source import is_dask_collection

_ROWS = {"accept_sparse": "csr", "dtype": [np.float64, np.float32]}


class StreamClassifier(ClassifierMixin, BaseEstimator):
    """Base of :class:`~dask_streamsvm.OnePassSVC` and :class:`~dask_streamsvm.BudgetedSVC`.

    One binary problem for two classes (``classes_[1]`` positive), one per
    class (one-vs-rest) for more.  Subclasses give ``_scores(rows)``, one
    column per problem (a vector for one problem).
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _validated(self, X, y, *, reset):
        X, y = validate_data(self, X, y, reset=reset, order="C", accept_large_sparse=True, **_ROWS)
        check_classification_targets(y)
        return X, y

    def _signs(self, y):
        """+1/-1 labels of each problem, shape (n_problems, n_rows); unknown labels are an error."""
        y = np.asarray(y).ravel()
        index = np.minimum(np.searchsorted(self.classes_, y), self.classes_.shape[0] - 1)
        unknown = self.classes_[index] != y
        if unknown.any():
            raise ValueError(
                f"y has label {y[np.flatnonzero(unknown)[0]].item()!r}, which is not among the classes "
                f"{self.classes_.tolist()}."
            )
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

    def decision_function(self, X):
        """Scores per problem (a vector for two classes); lazy for Dask input."""
        check_is_fitted(self)
        if is_dask_collection(X):
            columns = None if self.classes_.shape[0] == 2 else self.classes_
            return map_rows(self, X, self._scores, columns=columns, name="decision")
        return self._scores(validate_data(self, X, reset=False, **_ROWS))

    def predict(self, X):
        """Class labels: positive score for the second class, else argmax; lazy for Dask input."""
        check_is_fitted(self)
        if is_dask_collection(X):
            return map_rows(self, X, self._labels, name="prediction")
        return self._labels(validate_data(self, X, reset=False, **_ROWS))

    def _labels(self, X):
        scores = self._scores(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[scores.argmax(axis=1)]

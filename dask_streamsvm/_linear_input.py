"""How ``LinearSVC``'s input becomes rows: validation, encoding, the source and the validation set.

Kept apart from :mod:`dask_streamsvm.linear`, which fits: everything here
reads the input (in memory, a Dask collection or a path) and the feature map,
and nothing here trains.
"""

import os

import numpy as np
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets

from ._lazy import feature_frame
from ._stream_classifier import StreamClassifier, feature_spec
from ._validation import check_sample_weight, checked_sparse, drop_invalid, validated_rows
from .engine.data.source import DaskSource, is_dask_collection, is_dask_dataframe
from .engine.fit import MemoryData
from .engine.plan.problem import linear_scores
from .io import as_dask, open_path


class LinearInput(StreamClassifier):
    """The input side of :class:`~dask_streamsvm.LinearSVC` (a base class; no parameters of its own)."""

    def _memory_data(self, X, y, sample_weight, reset=True):
        """In-memory input (Dask collections computed first; a path read, a DataFrame's label column
        named by ``y`` taken out) as validated :class:`MemoryData` (``reset``: the input sets
        ``n_features_in_``, else is checked against it)."""
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if isinstance(y, str) and hasattr(X, "columns"):  # solver="memory" on a table: its label column
            if y not in X.columns:
                raise ValueError(
                    f"y={y!r} names no column of X; its columns are {list(X.columns)[:10]}. Pass the label "
                    "column's name, or the labels themselves."
                )
            X, y = X.drop(columns=[y]), X[y]
        if any(is_dask_collection(a) for a in (X, y, sample_weight)):
            import dask

            X, y, sample_weight = dask.compute(X, y, sample_weight)
        X, y, sample_weight, skipped = self._drop_invalid(X, y, sample_weight)
        X, y = self._validated(X, y, reset=reset)
        check_classification_targets(y)
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        if hasattr(self.feature_map, "expand"):  # virtual examples: train on every row's variants
            X, y, sample_weight = self.feature_map.expand(X, y, sample_weight)
        return MemoryData(X, y, sample_weight, skipped)

    def _cluster_source(self, X, y, sample_weight):
        """The source of a cluster fit: a Dask collection or a path, never in-memory data."""
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            raise TypeError(
                f"cluster={self.cluster!r} trains on a Dask Array or DataFrame (or a path), got "
                f"{type(X).__name__}; wrap it with dask.array.from_array or dask.dataframe.from_pandas, "
                "or set cluster=None to train in this process."
            )
        return self._source(X, y, sample_weight)

    def _drop_invalid(self, X, y, sample_weight):
        """In-memory input with the invalid rows dropped (``on_invalid="skip"``), and their count."""
        if self.on_invalid != "skip":
            return X, y, sample_weight, 0
        encoder = self.feature_map if self._encoding else None
        scaled = getattr(self.feature_map, "scales_rows", False)  # x . x checked once scaled
        return drop_invalid(X, y, sample_weight, encoder=encoder, scaled=scaled)

    def _source(self, X, y, sample_weight, check_width=False):
        """A :class:`DaskSource` of the input (paths opened, in-memory data wrapped).

        Sets ``n_features_in_`` and ``feature_names_in_``, or with
        ``check_width`` checks the input's width against them.
        """
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            X, y, sample_weight = as_dask(checked_sparse(X), y, sample_weight)
        source = DaskSource(X, y, sample_weight, encoder=self._source_encoder(), on_invalid=self.on_invalid)
        return self._adopt_width(source, reset=not check_width)

    def _validation_set(self):
        """``validation_data`` as checked in-memory rows and labels, or None."""
        data = self.validation_data
        if data is None:
            return None
        if not isinstance(data, tuple | list) or len(data) != 2:
            raise ValueError("validation_data must be a pair (X_val, y_val).")
        X_val, y_val = data
        if is_dask_dataframe(X_val):
            y_val = X_val[y_val] if isinstance(y_val, str) else y_val
            X_val = feature_frame(self, X_val)
        elif hasattr(X_val, "columns") and hasattr(self, "feature_names_in_"):
            X_val = X_val[list(self.feature_names_in_)]
        if is_dask_collection(X_val) or is_dask_collection(y_val):
            import dask

            X_val, y_val = dask.compute(X_val, y_val)
        if self._encoding:
            X_val = self._validated(X_val, reset=False)[0]
        else:
            X_val = check_array(
                X_val, accept_sparse="csr", dtype=[np.float64, np.float32], accept_large_sparse=True
            )
        y_val = np.asarray(y_val).ravel()
        if X_val.shape[1] != self._raw_width() or y_val.shape[0] != X_val.shape[0]:
            raise ValueError(
                f"validation_data has {X_val.shape[0]} rows x {X_val.shape[1]} features and {y_val.shape[0]} "
                f"labels; the training data has {self.n_features_in_} features."
            )
        return X_val, y_val

    # -- prediction ----------------------------------------------------------------------

    def _scores(self, rows):
        W = np.hstack([self.coef_, self.intercept_[:, None]])
        scores = linear_scores(rows, W, 1.0, feature_spec(self.feature_map, self._raw_width()))
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _check_in_memory(self, X):
        return self._validated(X, reset=False)[0]

    def _validated(self, X, y=None, *, reset):
        return validated_rows(self, X, y, reset=reset, encoder=self.feature_map if self._encoding else None)

    def _source_encoder(self):
        """The map the Dask source applies to each partition as it is read, or None."""
        if self._encoding or hasattr(self.feature_map, "expand"):
            return self.feature_map
        return None

    @property
    def _encoding(self):
        """Whether ``feature_map`` encodes the input (its columns may hold strings)."""
        return bool(getattr(self.feature_map, "reads_strings", False))

    def _raw_width(self):
        """Columns of the (encoded) raw rows the kernels read, for the fitted input width."""
        fmap = self.feature_map
        return self.n_features_in_ if fmap is None else fmap.raw_width(self.n_features_in_)

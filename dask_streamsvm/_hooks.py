"""What ``fit`` does between passes: validation scores, progress, callbacks, interrupt warnings.

The engine calls these hooks (:mod:`dask_streamsvm.engine.trainer` for the
streaming schedules, :func:`dask_streamsvm.engine.memory.solve_problems` in
memory); they need the estimator's parameters and fitted classes, so they
live above the engine.
"""

import warnings

import numpy as np
from sklearn.utils import check_array

from ._lazy import feature_frame
from ._progress import PassProgress, pass_line
from .engine.problem import linear_scores
from .engine.source import is_dask_collection, is_dask_dataframe


class PassHooks:
    """What ``fit`` does after every pass: validation score, progress, callbacks."""

    def __init__(self, estimator, bias, n_partitions=None, cache_bytes=None):
        self.estimator = estimator
        self.bias = bias
        self.callbacks = list(estimator.callbacks or [])
        self.verbose = estimator.verbose
        self.validation = validation_set(estimator)
        self.cache_bytes = cache_bytes
        self.progress = PassProgress(n_partitions) if n_partitions is not None and self.verbose == 1 else None
        self.stopped = False
        self.interrupted = None  # in memory: the pass an interrupt stopped at

    def _call(self, record):
        stop = False
        for callback in self.callbacks:
            stop = bool(callback(record)) or stop
        self.stopped = self.stopped or stop
        return stop

    def _score(self, W, c=None):
        X_val, y_val = self.validation
        spec = self.estimator._feature_spec(self.estimator._raw_width())
        scores = linear_scores(X_val, W, self.bias, spec)
        classes = self.estimator.classes_
        if c is not None:  # one one-vs-rest problem: its own binary accuracy
            return float(np.mean((scores[:, 0] > 0) == (y_val == classes[c])))
        if W.shape[0] == 1:
            return float(np.mean(classes[(scores[:, 0] > 0).astype(np.intp)] == y_val))
        return float(np.mean(classes[scores.argmax(axis=1)] == y_val))

    def memory(self, c):
        multi = self.estimator.classes_.shape[0] > 2

        def on_pass(record, w):
            if self.validation is not None:
                record["validation_score"] = self._score(w[None, :], c if multi else None)
            if self.verbose:
                print(pass_line(record), flush=True)
            return self._call(record)

        return on_pass

    def joint(self, record, W):
        """After a pass of a problem over all classes (Crammer-Singer in memory)."""
        return self.on_pass([record], W)

    def on_block(self, pass_k, block, W, fill):
        """For every block a streaming pass reads (the engine's hook)."""
        if self.progress is not None:
            self.progress.block(pass_k, block.n_rows, fill)

    def on_note(self, text):
        """Advice the engine gives once, after the first pass (the features look unscaled): shown
        with the progress, whatever the fit's outcome (the warning repeats it if it does not converge)."""
        if self.progress is not None:
            self.progress.note(f"note:{text}")
        elif self.verbose:
            print(f"note:{text}", flush=True)

    def on_pass(self, records, W):
        """After every streaming pass, with its records (the engine's hook); true stops the fit."""
        if self.validation is not None:
            score = self._score(W)
            for record in records:
                record["validation_score"] = score
        if self.progress is not None:
            fill = None if self.cache_bytes is None else records[0]["cache_bytes"] / self.cache_bytes
            self.progress.end_pass(records, fill)
        elif self.verbose:
            for record in records:
                print(pass_line(record), flush=True)
        summary = dict(records[0])
        if len(records) > 1:
            summary.update(
                {
                    "class": None,
                    "primal": sum(r["primal"] for r in records),
                    "dual": sum(r["dual"] for r in records),
                    "gap": max(r["gap"] for r in records),
                }
            )
        return self._call(summary)


def validation_set(estimator):
    """``validation_data`` as checked in-memory rows and labels, or None."""
    data = estimator.validation_data
    if data is None:
        return None
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise ValueError("validation_data must be a pair (X_val, y_val).")
    X_val, y_val = data
    if is_dask_dataframe(X_val):
        if isinstance(y_val, str):
            y_val = X_val[y_val]
        X_val = feature_frame(estimator, X_val)
    elif hasattr(X_val, "columns") and hasattr(estimator, "feature_names_in_"):
        X_val = X_val[list(estimator.feature_names_in_)]
    if is_dask_collection(X_val) or is_dask_collection(y_val):
        import dask

        X_val, y_val = dask.compute(X_val, y_val)

    if estimator._encoding:
        X_val = estimator._validated(X_val, reset=False)[0]
    else:
        X_val = check_array(
            X_val, accept_sparse="csr", dtype=[np.float64, np.float32], accept_large_sparse=True
        )
    y_val = np.asarray(y_val).ravel()
    if X_val.shape[1] != estimator._raw_width() or y_val.shape[0] != X_val.shape[0]:
        raise ValueError(
            f"validation_data has {X_val.shape[0]} rows x {X_val.shape[1]} features and {y_val.shape[0]} "
            f"labels; the training data has {estimator.n_features_in_} features."
        )
    return X_val, y_val


def warn_interrupted(estimator, passes):
    gap = np.max(np.atleast_1d(estimator.duality_gap_))
    warnings.warn(
        f"fit was interrupted (KeyboardInterrupt); the model is the one certified after pass {passes} "
        f"(relative duality gap {gap:.3g}). Fit again to go on"
        + (", with resume=True to start from the last checkpoint." if estimator.checkpoint_dir else "."),
        UserWarning,
        stacklevel=5,
    )

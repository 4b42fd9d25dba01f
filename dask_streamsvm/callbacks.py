"""Callbacks for ``fit``: called after every pass, they may stop it.

A callback is any callable taking the pass's history record (a dict, see
``LinearSVC.history_``) and returning a true value to stop the fit.  In
memory the one-vs-rest problems are solved one after another and the
callback sees each problem's passes (``record["class"]`` says which); a
stop ends the current problem.  Streaming solves all problems in the same
reads; the callback then sees one record per read, whose ``gap`` is the
largest over the problems and whose ``primal`` and ``dual`` are their sums,
and a stop ends the fit.  The model returned after a stop is the state of
the last pass, certified: its ``duality_gap_`` is exact.
"""

import math


class EarlyStopping:
    """Stop when a monitored value has not improved for ``patience`` passes.

    A pass is a record: a pass over the data, a cluster's CoCoA+ round, or, where a fit steps on
    the rows one read kept (the primal solver's first read keeps every row that fits
    ``cache_bytes``: its records all carry that read's ``pass``), each such step.  Each fit starts
    over.

    Parameters
    ----------
    patience : int, default=5
        Passes (records) without improvement tolerated before stopping.
    min_delta : float, default=0.0
        Smallest change that counts as an improvement.
    monitor : str, default="validation_score"
        Field of the history record to watch; ``"validation_score"`` needs
        ``validation_data`` in the estimator.
    mode : {"max", "min"}, default="max"
        Whether larger (scores) or smaller (gaps, objectives) is better.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm import LinearSVC
    >>> from dask_streamsvm.callbacks import EarlyStopping
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 5)); y = (X[:, 0] > 0).astype(int)
    >>> clf = LinearSVC(tol=1e-12, max_iter=50, validation_data=(X, y),
    ...                 callbacks=[EarlyStopping(patience=2)]).fit(X, y)
    >>> clf.n_iter_ < 50
    True
    """

    def __init__(self, patience=5, min_delta=0.0, monitor="validation_score", mode="max"):
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}.")
        self.patience = patience
        self.min_delta = min_delta
        self.monitor = monitor
        self.mode = mode
        self._state = {}

    def _start_fit(self):
        """A fit starts (called by the estimator's ``fit``): what the last one saw is forgotten."""
        self._state = {}

    def __call__(self, record):
        if self.monitor not in record:
            raise ValueError(
                f"EarlyStopping monitors {self.monitor!r}, which the history record lacks (fields: "
                f"{sorted(record)}); for 'validation_score' pass validation_data=(X_val, y_val)."
            )
        value = record[self.monitor]
        key = record.get("class")
        best, best_step, step, last = self._state.get(key, (None, 0, -1, None))
        here = (record.get("pass", record.get("round")), record.get("seconds"))  # a round: a cluster's pass
        if not _follows(here, last):  # a new fit, or the same problem again
            best, best_step, step = None, 0, -1
        step += 1
        if value is None or (isinstance(value, float) and math.isnan(value)):
            self._state[key] = (best, best_step, step, here)
            return False
        sign = 1.0 if self.mode == "max" else -1.0
        if best is None or sign * (value - best) > self.min_delta:
            best, best_step = value, step
        self._state[key] = (best, best_step, step, here)
        return step - best_step >= self.patience


def _follows(here, last):
    """Whether a record at ``here`` (its pass and seconds) is the next of the problem whose last
    record was at ``last``: a later pass, or the same pass (a further step on its rows) unless its
    seconds are earlier, which only a new fit's are (a fit through an estimator also says when it
    starts, :meth:`EarlyStopping._start_fit`)."""
    if last is None:
        return False
    (k, seconds), (last_k, last_seconds) = here, last
    if k is None or last_k is None or k != last_k:
        return k is None or last_k is None or k > last_k
    return seconds is None or last_seconds is None or seconds >= last_seconds


class TimeLimit:
    """Stop the fit after ``seconds`` of wall time (checked after each pass).

    The model returned is the last pass's, with its exact duality gap.
    """

    def __init__(self, seconds):
        self.seconds = seconds

    def __call__(self, record):
        return record["seconds"] >= self.seconds

"""What ``fit`` does between passes: validation scores, progress, callbacks (the estimator's own and
scikit-learn's, :mod:`._fit_tasks`), interrupt warnings.

The engine calls these hooks (:mod:`dask_streamsvm.engine.dual.trainer` for the
streaming schedules, :func:`dask_streamsvm.engine.dual.memory.solve_problems` in
memory); they need the estimator's parameters and fitted classes, so they
live above the engine.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._progress import PassProgress, advice_words, part_line, pass_line, round_line
from .engine.plan.problem import linear_scores, model_weights


class PassHooks:
    """What ``fit`` does after every pass: validation score, progress, callbacks.

    ``callbacks`` and ``verbose`` are the estimator's parameters, ``validation`` its checked
    ``(X_val, y_val)`` or None, ``feature_map`` the kernels' spec of its feature map (None for
    none).  The engine calls :meth:`start` once it knows the classes (and the partitions and the
    cache of a streamed fit), then the other hooks.

    ``tasks``: scikit-learn's callbacks' task tree (:class:`~._fit_tasks.FitTasks`), told of every
    step, or None.  ``fitted``: a callable returning the estimator's fitted attributes that a model
    of ``W`` needs beside ``classes_``, ``coef_`` and ``intercept_`` (``n_features_in_``...), or
    None where the engine's ``W`` is not the model's (a ``Standardize()`` map): the steps then carry
    no model.
    """

    def __init__(self, callbacks=None, verbose=0, validation=None, feature_map=None, tasks=None, fitted=None):
        self.callbacks = list(callbacks or [])
        for callback in self.callbacks:  # one made per fit: a callback that counts passes starts over
            start = getattr(callback, "_start_fit", None)
            if callable(start):
                start()
        self.tasks = tasks
        self.fitted = fitted
        self.crammer_singer = False
        self.solved = None  # in memory, one-vs-rest: every problem's latest weights (zeros: not solved yet)
        self.verbose = verbose
        self.validation = validation
        self.feature_map = feature_map
        self.bias = 1.0
        self.classes = None
        self.cache_bytes = None
        self.progress = None
        self.stopped = False
        self.name = "LinearSVC"  # the model's, in the lines verbose prints (the plan's, from start)

    def start(self, plan, n_partitions=None, cache_bytes=None):
        """The fit's plan (bias, classes), and for a streamed fit its partitions and cache budget."""
        self.bias, self.classes, self.cache_bytes = plan.bias, plan.classes, cache_bytes
        self.crammer_singer = plan.crammer_singer
        self.name = plan.estimator
        if self.progress is None and n_partitions is not None and self.verbose == 1:
            self.progress = PassProgress(n_partitions)

    def _call(self, record):
        stop = False
        for callback in self.callbacks:
            stop = bool(callback(record)) or stop
        self.stopped = self.stopped or stop
        return stop

    def _model(self, W):
        """The fitted attributes of the model ``W`` (the engine's), as a callable for scikit-learn's
        callbacks (evaluated only where one asks for the fitted model); None where there is none."""
        if self.fitted is None or self.classes is None or W is None:
            return None

        def attributes():
            coef, intercept = model_weights(W, self.bias, self.crammer_singer)
            return {**self.fitted(), "classes_": self.classes, "coef_": coef, "intercept_": intercept}

        return attributes

    def _step(self, name, W=None, problem=None):
        """A step of the fit has ended (scikit-learn's callbacks): true if one asks to stop."""
        if self.tasks is None:
            return False
        n_problems = None if problem is None else self.classes.shape[0]
        stop = self.tasks.step(name, self._model(W), problem=problem, n_problems=n_problems)
        self.stopped = self.stopped or stop
        return stop

    def wants_rounds(self):
        """Whether anyone hears of the cluster's rounds and parts (a line, a callback)."""
        return bool(self.callbacks or self.verbose or self.tasks is not None)

    def on_round(self, record):
        """After every CoCoA+ round (a line with ``verbose``): true (some callback said stop)
        stops the rounds."""
        if self.verbose:
            print(round_line(record, self.name), flush=True)
        stop = any([bool(callback(record)) for callback in self.callbacks])
        return self._step("round") or stop

    def on_part(self, record):
        """After each part of ``cluster="average"`` is trained (a line with ``verbose``)."""
        if self.verbose:
            print(part_line(record, self.name), flush=True)
        self._step("part")

    def _score(self, W, c=None):
        X_val, y_val = self.validation
        scores = linear_scores(X_val, W, self.bias, self.feature_map)
        classes = self.classes
        if c is not None:  # one one-vs-rest problem: its own binary accuracy
            return float(np.mean((scores[:, 0] > 0) == (y_val == classes[c])))
        if W.shape[0] == 1:
            return float(np.mean(classes[(scores[:, 0] > 0).astype(np.intp)] == y_val))
        return float(np.mean(classes[scores.argmax(axis=1)] == y_val))

    def memory(self, c):
        multi = self.classes.shape[0] > 2

        def on_pass(record, w):
            if self.validation is not None:
                record["validation_score"] = self._score(w[None, :], c if multi else None)
            if self.verbose:
                print(pass_line(record, self.name), flush=True)
            stop = self._call(record)
            if self.tasks is None:  # no task tree to tell: nothing kept, nothing copied
                return stop
            if not multi:
                return self._step("pass", w[None, :]) or stop
            if self.solved is None:
                self.solved = np.zeros((self.classes.shape[0], w.shape[0]))
            self.solved[c] = w
            return self._step("pass", self.solved.copy(), problem=c) or stop

        return on_pass

    def joint(self, record, W):
        """After a pass of a problem over all classes (Crammer-Singer in memory)."""
        return self.on_pass([record], W, step="pass")

    def on_block(self, pass_k, block, W, fill):
        """For every block a streaming pass reads (the engine's hook)."""
        if self.progress is not None:
            self.progress.block(pass_k, block.n_rows, fill, getattr(block, "partition", None))

    def on_note(self, text):
        """Advice the engine gives once, after the first pass (the features look unscaled): shown
        with the progress, whatever the fit's outcome (the warning repeats it if it does not converge),
        in the words of :data:`~._progress.advice_words` where it is set (the command line's)."""
        words = advice_words.get()
        text = text if words is None else words(text)
        if self.progress is not None:
            self.progress.note(f"note:{text}")
        elif self.verbose:
            print(f"note:{text}", flush=True)

    def on_pass(self, records, W, step="read"):
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
                print(pass_line(record, self.name), flush=True)
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
        stop = self._call(summary)
        return self._step(step, W) or stop


def warn_interrupted(estimator, passes):
    """The warning of a fit a KeyboardInterrupt stopped, once the estimator holds the certified model."""
    gap = np.max(np.atleast_1d(estimator.duality_gap_))
    warnings.warn(
        f"fit was interrupted (KeyboardInterrupt); the model is the one certified after pass {passes} "
        f"(relative duality gap {gap:.3g}). Fit again to go on"
        + (", with resume=True to start from the last checkpoint." if estimator.checkpoint_dir else "."),
        UserWarning,
        stacklevel=5,
    )


def warn_uncertified(passes, interrupted=False, advice=""):
    """The warning of a fit stopped before any read certified a trained model (its last certificate
    is the starting point's, ``w = 0``): the model returned is the trained one, without a bound.
    ``advice``: a sentence on badly scaled features (:func:`~.engine.plan.problem.scale_advice`),
    which keep the dual solvers' models from improving on ``w = 0``, or ``""``."""
    how = "was interrupted (KeyboardInterrupt)" if interrupted else "stopped"
    warnings.warn(
        f"fit {how} after {passes + 1} read(s), before a read certified what it trained: the model is "
        "the one trained so far, not certified (objective_ and duality_gap_ are NaN; the last "
        "certificate is that of w = 0). Let the fit read the data at least once more (a larger "
        "max_iter, or a callback that stops later) for a model with a certified duality gap." + advice,
        ConvergenceWarning,
        stacklevel=5,
    )

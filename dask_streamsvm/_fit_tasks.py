"""scikit-learn's callbacks (``sklearn.callback``, scikit-learn 1.9): a fit as a tree of tasks.

``estimator.set_callbacks(ProgressBar(), ScoringMonitor(scoring="accuracy"))`` works on every
estimator, on every fit path (in memory, streamed, on a cluster): the fit is the root task, and
each step that ends with a model is a leaf below it, told to the callbacks as it ends:

- a **read** of the data (a streamed or cluster fit: a Newton step, a band step, a StreamSVM or SBM
  pass), a **pass** over in-memory rows, a CoCoA+ **round**, a **part** of ``cluster="average"``
  trained, or an **epoch** of :class:`~dask_streamsvm.BudgetedSVC`;
- in memory, one-vs-rest solves its problems one after another: each **problem** is a task whose
  leaves are its passes.

A leaf carries the model of its step where the step has one (``fitted_estimator``: the estimator
as if the fit had stopped there, the problems not yet solved at zero): ScoringMonitor scores it.
It scores on ``validation_data`` where the estimator has it, else on the training rows where they
are in memory; a streamed fit does not hold its rows, so there a ScoringMonitor scores nothing
unless ``validation_data`` is given, and the fit warns of it.  A CoCoA+ round's model stays on the
workers until the last round, and a model trained on a ``Standardize()`` map is the scaled
features' until the fit folds the scales in: those steps carry no model (their progress is told).
A callback's ``on_fit_task_end`` that returns true stops the fit as a callback of ``callbacks=``
does.  ``partial_fit`` tells no task (as in scikit-learn).

On a scikit-learn without the API (before 1.9) the estimators have no ``set_callbacks`` and none
of this runs.  :class:`~sklearn.callback.ProgressBar` needs ``rich``
(``pip install dask-streamsvm[progress]``).
"""

import warnings

from .engine.data.source import is_dask_collection
from .engine.data.waiting import computed

try:
    from sklearn.callback import CallbackSupportMixin, ScoringMonitor, with_callbacks
except ImportError:  # scikit-learn before 1.9: no callbacks, no set_callbacks

    class CallbackSupportMixin:
        """Nothing: this scikit-learn has no ``sklearn.callback``."""

    ScoringMonitor = None

    def with_callbacks(method):
        """The fit method as it is: there are no callbacks to tear down."""
        return method


class FitTasks:
    """The task tree of one ``fit``: the root task, begun at the first step (when the fit knows
    its problems) or at the end, and a leaf per step.

    ``estimator`` is the user's (the callbacks' ``setup`` saw it), ``root`` its root context,
    ``scoring`` the rows ``(X, y)`` a step's model is scored on (or None), ``max_steps`` the steps
    the root expects (``max_iter``).
    """

    def __init__(self, estimator, root, scoring, max_steps):
        self.estimator = estimator
        self.root = root
        self.scoring = scoring
        self.max_steps = max_steps
        self.begun = False
        self.problems = {}  # in memory, one-vs-rest: each problem's task, by class position

    def _begin_root(self, problems=None):
        if not self.begun:
            self.begun = True
            self.root.max_subtasks = self.max_steps if problems is None else problems
            self._begin(self.root)

    def _scored(self):
        return (None, None) if self.scoring is None else self.scoring

    def _begin(self, context):
        X, y = self._scored()
        context.call_on_fit_task_begin(estimator=self.estimator, X=X, y=y)

    @staticmethod
    def _child(parent, name, max_subtasks=0):
        """A new subtask of ``parent``; one beyond what ``parent`` said it expects makes its count
        unknown rather than fail (a fit may take more steps than ``max_iter``: the read that
        counts the classes, the band's reads before another solver takes over)."""
        if parent.max_subtasks is not None and len(parent._children_map) >= parent.max_subtasks:
            parent.max_subtasks = None
        return parent.subcontext(task_name=name, max_subtasks=max_subtasks)

    def step(self, name, model=None, problem=None, n_problems=None):
        """A step ``name`` (``"read"``, ``"pass"``, ``"round"``, ``"part"`` or ``"epoch"``) has ended,
        with ``model`` (a callable returning the fitted attributes of the model it ends with, or
        None): true if a callback asks to stop.
        ``problem``: in memory, the one-vs-rest problem (of ``n_problems``) the pass is of."""
        parent = self.root
        if problem is None:
            self._begin_root()
        else:
            self._begin_root(problems=n_problems)
            if problem not in self.problems:
                for done in [c for c in self.problems if c != problem]:  # the earlier problem ended
                    self._end(self.problems.pop(done), None)
                self.problems[problem] = self._child(self.root, "problem", max_subtasks=self.max_steps)
                self._begin(self.problems[problem])
            parent = self.problems[problem]
        leaf = self._child(parent, name)
        self._begin(leaf)
        return self._end(leaf, model)

    def _end(self, context, model):
        X, y = self._scored()
        return bool(
            context.call_on_fit_task_end(estimator=self.estimator, X=X, y=y, reconstruction_attributes=model)
        )

    def end(self):
        """The fit has ended, its model published on the estimator."""
        self._begin_root()
        for c in list(self.problems):
            self._end(self.problems.pop(c), None)
        self._end(self.root, {})


def _scoring_rows(estimator, X, y):
    """The rows ``(X, y)`` a step's model is scored on: ``validation_data`` (a Dask one computed
    once), else the training rows where they are in memory; None for neither."""
    validation = getattr(estimator, "validation_data", None)
    if isinstance(validation, tuple | list) and len(validation) == 2:
        X_val, y_val = validation
        if is_dask_collection(X_val) and isinstance(y_val, str):  # a Dask DataFrame and its label column
            X_val, y_val = X_val.drop(columns=[y_val]), X_val[y_val]
        if is_dask_collection(X_val) or is_dask_collection(y_val):
            X_val, y_val = computed([X_val, y_val])
        return X_val, y_val
    if X is None or y is None or isinstance(y, str) or hasattr(X, "__fspath__") or isinstance(X, str):
        return None
    if is_dask_collection(X) or is_dask_collection(y):
        return None
    return X, y


def fit_tasks(estimator, X, y, max_steps):
    """The :class:`FitTasks` of a ``fit`` of ``X``, ``y``: its callbacks set up (None where no callback
    of scikit-learn's is set).  The fit method is wrapped in :func:`with_callbacks`, which tears
    them down however it ends."""
    callbacks = getattr(estimator, "_skl_callbacks", None)
    if not callbacks or ScoringMonitor is None:
        return None
    root = estimator._init_callback_context(max_subtasks=max_steps)
    scoring = _scoring_rows(estimator, X, y)
    if scoring is None and any(isinstance(c, ScoringMonitor) for c in callbacks):
        warnings.warn(
            f"{type(estimator).__name__} streams its rows, so ScoringMonitor has none to score each "
            "step's model on, and records nothing: pass validation_data=(X_val, y_val) to score "
            "every step on those rows.",
            UserWarning,
            stacklevel=4,
        )
    return FitTasks(estimator, root, scoring, max_steps)

"""The one fit context of every estimator: :func:`fitted_in_context`.

``fit`` and ``partial_fit`` of :class:`~dask_streamsvm.LinearSVC`,
:class:`~dask_streamsvm.LogisticRegression`, :class:`~dask_streamsvm.OnePassSVC` and
:class:`~dask_streamsvm.BudgetedSVC` run the estimator's own training in the same context:

- **validation**: the parameters checked once, before anything is read (``_parameter_constraints``),
  and handed to the training as ``params``;
- **the warnings filter**: Dask's own pandas deprecations hidden around its reads
  (:func:`~dask_streamsvm.io.dask_parquet_deprecations_hidden`);
- **BLAS on one thread** (:func:`~dask_streamsvm.engine.plan.threads.blas_threads`), beside the
  fit's own reader and trainer threads, unless the user chose the BLAS threads;
- **SIGTERM** unwound as Ctrl-C would be (:func:`sigterm_unwinds`), so that a fit removes its spill
  and temporary files before the process ends;
- **scikit-learn's callbacks** (``set_callbacks``, :mod:`._fit_tasks`): for ``fit``, set up before
  and torn down after, however it ends; the fit is their root task, which ends once the model is
  published;
- **the atomic publish**: the training runs on a copy of the estimator, whose fitted attributes then
  replace these in one step.  A fit that fails or is interrupted leaves the estimator as it was
  (unfitted before its first fit, so that ``predict`` meanwhile raises NotFittedError), and nobody
  sees ``n_features_in_`` or ``classes_`` of new data beside ``coef_`` of the old model.  Run as a
  ``dask.distributed`` task, the fit leaves the worker's thread pool while it runs, so that its
  reads can run on that worker.

SIGTERM during a fit.

SIGTERM's default action ends a process at once: no ``finally`` block
runs, so a streaming fit would leave its spill directory and the files of
``alpha_store="disk"`` behind.  While a fit runs in the main thread,
:func:`sigterm_unwinds` turns SIGTERM into :class:`Terminated`, an
exception that no part of a fit catches (a KeyboardInterrupt returns the
certified model; SIGTERM asks the process to end): the fit's ``with``
blocks run and remove what it wrote, the default action is restored and
the signal raised again, so the process ends as SIGTERM asked, killed by
it, after the clean-up.

A program that handles or ignores SIGTERM itself keeps its handler:
nothing is installed then (its handler decides), nor outside the main
thread, where Python delivers no signal.
"""

import contextlib
import copy
import signal
import threading

from ._fit_tasks import fit_tasks, with_callbacks
from ._validation import checked_params
from .engine.data.waiting import seceded
from .engine.plan.threads import blas_threads
from .io import dask_parquet_deprecations_hidden


class Terminated(SystemExit):
    """SIGTERM arrived during a fit.  A SystemExit with status 128 + SIGTERM, so that, raised
    anywhere the fit's own handler cannot see it, the interpreter still ends as SIGTERM asks."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


@contextlib.contextmanager
def sigterm_unwinds():
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (once: a second
    SIGTERM while the fit unwinds is ignored, so that its clean-up finishes); the process then
    ends by SIGTERM.  The previous handler is restored however the block ends."""
    sigterm = getattr(signal, "SIGTERM", None)
    if (
        sigterm is None
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(sigterm) is not signal.SIG_DFL
    ):
        yield
        return
    received = []

    def terminate(signum, frame):
        if not received:
            received.append(signum)
            raise Terminated()

    signal.signal(sigterm, terminate)
    try:
        yield
    except Terminated:
        if not received:  # raised by someone else: not ours to act on
            raise
    finally:
        signal.signal(sigterm, signal.SIG_DFL)
        if received:  # the fit has unwound, however: end as SIGTERM asked, by its default action
            signal.raise_signal(sigterm)
    if received:  # pragma: no cover - only if SIGTERM is blocked in this thread
        raise Terminated()


def fitted_in_context(estimator, train, *args, state=(), scored=None, **kwargs):
    """``train(staged, params, *args, **kwargs)`` on a copy ``staged`` of ``estimator`` in the fit
    context (the module docstring), its fitted attributes then published on ``estimator``: returns
    ``estimator``.

    ``params``: the estimator's parameters, checked (:func:`~._validation.checked_params`).
    ``state``: names of attributes that the training updates in place (a stream's state carried
    from one ``partial_fit`` to the next): the copy trains on copies of them, so that a training
    that fails leaves the estimator's own as they were.  The parameters stay the estimator's.
    ``scored``: for ``fit``, its ``(X, y)``: scikit-learn's callbacks see the fit as a task tree
    (:class:`~._fit_tasks.FitTasks`, at ``staged._fit_tasks`` while it trains), its steps scored on
    these rows where they are in memory; None (``partial_fit``) tells them nothing.
    """
    if scored is not None and getattr(estimator, "_skl_callbacks", None):
        return with_callbacks(_fitted)(estimator, train, args, kwargs, state, scored)
    return _fitted(estimator, train, args, kwargs, state, None)


def _fitted(estimator, train, args, kwargs, state, scored):
    with dask_parquet_deprecations_hidden(), sigterm_unwinds(), blas_threads(1):
        params = checked_params(estimator)
        tasks = None if scored is None else fit_tasks(estimator, *scored, max_steps=params.get("max_iter", 0))
        staged = copy.copy(estimator)
        for name in state:
            if name in vars(staged):
                setattr(staged, name, copy.deepcopy(getattr(staged, name)))
        if tasks is not None:
            staged._fit_tasks = tasks
        with seceded():
            train(staged, params, *args, **kwargs)
        staged.__dict__.pop("_fit_tasks", None)
        names = estimator._get_param_names()
        kept = {k: v for k, v in vars(estimator).items() if k in names}
        estimator.__dict__ = {**{k: v for k, v in vars(staged).items() if k not in names}, **kept}
        if tasks is not None:
            tasks.end()
    return estimator

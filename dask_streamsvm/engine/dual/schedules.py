"""The one entry of every streaming fit: :func:`fit_stream`.

``LinearSVC.fit`` on a Dask collection or a path, ``LinearSVC.partial_fit``
and each worker of ``cluster="average"`` call it with a source and a
:class:`~..plan.problem.FitPlan`; the plan's ``solver`` picks the schedule:

=============  ==============================================================
``streamsvm``  StreamSVM's dual cached loops (:mod:`.streamsvm`)
``sbm``        selective block minimization (:mod:`.sbm`)
``bm``         block minimization: SBM with ``cache_bytes=0``
``partial``    one read of the source, one SBM block per partition, alphas
               forgotten (:mod:`.partial`): ``partial_fit``
=============  ==============================================================

The multi-pass schedules read the source up to ``max_iter + 1`` times and
certify every pass (:mod:`.trainer`); ``partial`` keeps no dual variable of
the rows it forgets and so has no certificate.
"""

import time

from ..data.reader import read_blocks
from ..data.source import Block
from ..plan.problem import STREAMING_SOLVERS, class_index, signs_and_costs
from ..plan.result import FitResult
from ..store.archive import plain_array
from .partial import OnePassSBM
from .sbm import BlockTrainer
from .streamsvm import StreamSVMTrainer
from .trainer import run_trainer

# The trainer of each streaming schedule, by the names :data:`..plan.problem.STREAMING_SOLVERS` declares.
TRAINERS = dict(zip(STREAMING_SOLVERS, (StreamSVMTrainer, BlockTrainer, BlockTrainer), strict=True))


def fit_stream(source, plan, hooks=None, *, clock_start=None, checkpoints=None, resume=None, state=None):
    """Train ``plan`` on ``source``: a :class:`~..plan.result.FitResult`.

    Parameters
    ----------
    source : :class:`~..data.source.DaskSource`
        Or, for ``plan.solver="partial"``, a list of in-memory
        :class:`~..data.source.Block` to train on in that order.
    plan : :class:`~..plan.problem.FitPlan` with its label tables.
    hooks : object or None
        ``on_pass`` and ``on_block`` callables (see :mod:`.trainer`).
    clock_start : float or None
        ``time.perf_counter()`` at the start of the fit, for the history's
        ``seconds``.
    checkpoints, resume
        A :class:`~..store.checkpoint.Checkpoints` to write at pass ends, and a
        loaded checkpoint to go on from (multi-pass schedules).
    state : :class:`~.partial.OnePassSBM` or None
        ``partial``: the stream to go on with (None: a new one).
    """
    clock_start = time.perf_counter() if clock_start is None else clock_start
    if plan.solver == "partial":
        return _one_pass(source, plan, state, clock_start)
    trainer = TRAINERS[plan.solver]
    return run_trainer(
        source,
        plan,
        lambda store: trainer(source, plan, store, hooks, clock_start),
        checkpoints=None if checkpoints is None else _LabelledCheckpoints(checkpoints, plan),
        resume=resume,
    )


class _LabelledCheckpoints:
    """Checkpoints that also carry the plan's label counts, so that resuming need not count them again."""

    def __init__(self, checkpoints, plan):
        self.checkpoints = checkpoints
        self.arrays = {
            "classes": plain_array("classes", plan.classes),
            "class_counts": plan.counts,
            "weighted_classes": plain_array("weighted_classes", plan.weighted_classes),
            "class_totals": plan.class_totals,
        }

    def due(self):
        return self.checkpoints.due()

    def save(self, state, arrays):
        self.checkpoints.save(state, {**arrays, **self.arrays})


def _one_pass(source, plan, stream, clock_start):
    """``partial_fit``'s pass: every block of ``source`` through one-pass SBM."""
    if isinstance(source, list):
        blocks = ((0, block) for block in source)
        n_features = source[0].X.shape[1]
    else:
        blocks = read_blocks(
            source, prefetch=plan.prefetch, shuffle=plan.shuffle, seed=plan.seed, retries=plan.retries,
            read_timeout=plan.read_timeout,
        )  # fmt: skip
        n_features = source.n_features
    if stream is None:
        stream = OnePassSBM(plan, n_features)
    history = []
    for _, block in blocks:
        if block.n_rows + block.n_skipped == 0:
            continue
        y_index = class_index(
            plan.classes, block.y,
            lambda label: (
                f"y has label {label!r}, which is not among the classes {plan.classes.tolist()} given "
                "to partial_fit; pass every class of the stream in `classes`."
            ),
        )  # fmt: skip
        record = stream.add_block(block.X, *signs_and_costs(plan, y_index, block.sample_weight))
        record["seconds"] = time.perf_counter() - clock_start
        record["rows_skipped"] = block.n_skipped
        history.append(record)
    return FitResult(
        W=stream.W, passes=stream.blocks, converged=False, certificates=[], history=history, state=stream
    )


def memory_blocks(X, y, sample_weight, n_skipped=0):
    """In-memory rows as the one block ``fit_stream`` takes for ``partial``."""
    return [Block(partition=0, X=X, y=y, sample_weight=sample_weight, n_skipped=n_skipped)]

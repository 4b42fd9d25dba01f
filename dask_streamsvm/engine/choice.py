"""Which method a fit runs, and where, chosen once: the door's two questions and their one answer.

A fit asks twice, each time once:

1. **where** (:func:`place`, before the input is opened): ``cluster="auto"`` resolved to the active
   client's cluster or this process (:func:`where_to_fit`), streaming or in memory, and what the plan
   cannot do with this input (a ValueError before any read).  The answer is a :class:`Placement`.
2. **how** (:func:`choose`, once the input is opened and its width known): a :class:`Method`, the
   one record of the fit's method: where it runs, primal Newton or dual coordinate descent, the
   streaming schedule or the cluster's method (:func:`cluster_method`), and what the first read does.
   Where the rows are not known before a read (``dual="auto"`` streamed), primal or dual is left open
   (``Method.primal`` None) and decided by the second stage, :func:`after_count`, once the read that
   counts the classes has counted the rows.

The rules they apply are named here too: :func:`primal_blocker` (what the primal solver cannot
train), :func:`use_primal` (``dual="auto"`` on tall data, :data:`PRIMAL_RATIO`; in memory on dense rows,
:data:`DENSE_PRIMAL_RATIO`) and
:func:`cluster_method`.
"""

import dataclasses
import os
from dataclasses import dataclass

import scipy.sparse as sp

from .cluster.runtime import resolve_client
from .data.parquet import footer_rows
from .data.source import is_dask_collection, rows_trained
from .data.spill import check_spill_dir
from .plan.losses import band_blocker as loss_band_blocker
from .plan.losses import newton_blocker, sparse_penalty_blocker
from .plan.problem import BAND_SOLVER, DUAL_CLUSTER_MODES, STREAMING_SOLVERS, model_width
from .primal.l1 import SOLVER_NAME as L1_SOLVER
from .primal.multinomial import SOLVER_NAME as MULTINOMIAL_SOLVER
from .primal.multinomial_reads import AUTO_MIN_CLASSES, auto_softmax, check_model_width, softmax_columns
from .primal.multinomial_reads import READS_SCHEDULE as MULTINOMIAL_READS
from .primal.newton import MAX_WIDTH, check_width
from .primal.sums import CG_WIDTH, MAX_VALUE, too_large
from .primal.warm import band_from_memory

# dual="auto" picks the primal Newton solver when the rows outnumber the model's width (features plus
# bias) this many times: measured in benchmarks/bench_primal.py (docs/benchmarks.md, "primal").
PRIMAL_RATIO = 100
# ... and in memory on dense rows without a feature map, this many times (scikit-learn's dual="auto"
# takes the primal from 1): there a Newton step costs no read, and dual coordinate descent slows on
# dense rows of large norm.  benchmarks/bench_dual_auto.py (docs/benchmarks.md, 'dual="auto" in
# memory'), Gaussian rows, C = 1, tol 1e-3: from 10 rows a column the primal is as fast or faster
# (up to 50x), where LinearSVC's dual stops at max_iter with a gap of 0.01-0.69 and
# LogisticRegression's ran past 120 s on 100,000 x 2,000; at 6, the primal 1.2-1.5x faster on three
# fits of four, the dual 1.9x on the fourth (LinearSVC, 6,000 x 1,000, at 948 of its 1,000 passes);
# at 3, the dual 1.3-4.7x faster.  Sparse rows keep PRIMAL_RATIO: on 200,000 x 100,000 text rows the
# dual was 1.5-2.3x faster.
DENSE_PRIMAL_RATIO = 5
# dual="auto" makes the read that counts the classes the primal solver's first read up to this width.
FIRST_READ_WIDTH = 256
# The dual schedule solver="auto" streams where neither the band from a sample nor the primal solver
# trains (a model wider than MAX_WIDTH, too few rows a column for the band's sample, a band that gave
# way, a feature map, a checkpoint, dual=True): SBM, cache and blocks sharing cache_bytes
# (FitPlan.scheduled): its rows within the budget, as StreamSVM's cache (a partition larger than a
# block trains a block-sized piece at a time, dual/sbm.py).  At equal
# memory SBM reached a 1e-3 gap first (docs/benchmarks.md, "Out of core at a disk's speed": a9a,
# w8a, ijcnn1 at 10% and 1% of the rows, 0.74-1.00 of StreamSVM's seconds; and on 200,000 x 200,000
# text at 10%, docs/guide/solvers.md; where partitions are larger than a block, trained in pieces,
# 0.95-1.34 on those sets, docs/benchmarks.md "solver='auto''s dual schedule").  cache_policy="paper",
# StreamSVM's own rule, keeps StreamSVM.
AUTO_SCHEDULE = STREAMING_SOLVERS[1]
PAPER_SCHEDULE = STREAMING_SOLVERS[0]
# Where the band from a sample gives way after its first read (more rows near the margin than the
# budget holds), StreamSVM trains, its cache the whole budget: there SBM took 0.87-0.91 of its seconds
# on a9a and 1.84-2.10 on w8a (at 10%, docs/benchmarks.md, "solver='auto''s dual schedule").
GIVE_WAY_SCHEDULE = STREAMING_SOLVERS[0]
# Where a fit runs (Method.where), and the methods a cluster fit may run (``history_``'s "method").
WHERE = ("memory", "stream", "cluster")
CLUSTER_METHODS = ("newton", "truncated_newton", "band", "cocoa", "average", "sbm")
# What a streamed fit's first read does (Method.first_read), unless a checkpoint holds the counts:
# train the dual solvers while it counts (text), keep the primal solver's sample and moments while it
# counts, or count the labels alone.
FIRST_READS = ("trains", "primal", "labels")


@dataclass(frozen=True)
class Placement:
    """Where a fit runs (:func:`place`): ``plan`` with ``cluster="auto"`` resolved, the cluster's
    ``client`` (None in this process), ``where`` (one of :data:`WHERE`) and what the input is."""

    plan: object
    client: object
    where: str
    checkpointing: bool = False
    resuming: bool = False


@dataclass(frozen=True)
class Method:
    """The method of one fit (:func:`choose`; :func:`after_count` for ``primal`` left open).

    ``where``: one of :data:`WHERE`; ``primal``: the primal Newton solver (True), the dual solvers
    (False), or None: decided once the rows are counted; ``schedule``: the dual solver (``"memory"``
    in memory, a streaming schedule streamed); ``cluster``: one of :data:`CLUSTER_METHODS` on a
    cluster; ``first_read``: a streamed fit's, one of :data:`FIRST_READS`; ``known_rows``: the rows
    known before any read (a Dask Array's chunks, Parquet footers), or None; ``note``: why
    ``dual="auto"`` chose the dual solvers where the rows' count chose the primal one, for the user.
    """

    where: str
    primal: bool | None
    schedule: str | None = None
    cluster: str | None = None
    first_read: str | None = None
    known_rows: int | None = None
    note: str | None = None

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def place(plan, X, client=None, *, checkpointing=False, resuming=False, validating=False):
    """Where a fit of ``plan`` on the input ``X`` runs, as a :class:`Placement`; a ValueError for
    what it cannot do with this input, before any read.

    ``X`` is out of core when it is a Dask collection or a path.  ``checkpointing``: a
    ``checkpoint_dir`` is set; ``resuming``: ``resume=True``; ``validating``: ``validation_data`` is
    set.  ``plan.spill_dir`` is checked as ``checkpoint_dir`` is (:func:`~.data.spill.check_spill_dir`).
    """
    out_of_core, input_name = is_dask_collection(X) or isinstance(X, str | os.PathLike), type(X).__name__
    plan, client = where_to_fit(
        plan, client, out_of_core=out_of_core, checkpointing=checkpointing, validating=validating
    )
    check_spill_dir(plan.spill_dir)
    streaming = streams(plan, out_of_core)
    if (checkpointing or resuming) and (plan.cluster is not None or not streaming):
        raise ValueError(
            "checkpoint_dir and resume=True apply to the streaming solvers (solver='streamsvm', 'sbm' "
            "or 'bm', or 'auto' on a Dask collection or path) without cluster; this fit is "
            f"solver={plan.solver!r}, cluster={plan.cluster!r} on {input_name}."
        )
    if resuming and not checkpointing:
        raise ValueError("resume=True needs checkpoint_dir, the directory the checkpoint is in.")
    if plan.multinomial or plan.multinomial_auto:
        blocker = multinomial_blocker(plan, streaming, input_name, checkpointing)
        if blocker is not None and plan.multinomial:
            raise ValueError(blocker)
        if blocker is not None:  # multi_class="auto": the one-vs-rest problems, as the parameters ask
            plan = plan.settled(False)
    if plan.sparse_penalty:
        plan = _check_sparse_penalty(plan, streaming, input_name, checkpointing)
    elif plan.dual is False:
        _check_primal(plan, streaming, checkpointing)
    if plan.scaler is not None:
        _check_scaler(plan, validating)
    if plan.cluster is not None:
        unsupported = {
            "multi_class='crammer_singer'": plan.crammer_singer,
            "probability=True": plan.probability,
            "validation_data": validating,
        }
        for what, used in unsupported.items():
            if used:
                raise ValueError(f"cluster={plan.cluster!r} does not support {what} yet; use cluster=None.")
        if plan.cluster == "sbm" and plan.solver == PAPER_SCHEDULE:
            raise ValueError(
                f"cluster='sbm' trains SBM's blocks and cache on one worker, and solver={plan.solver!r} "
                "names StreamSVM's schedule; pass solver='auto' (or 'sbm', or 'bm')."
            )
        where, client = "cluster", resolve_client(client)
    else:
        where, client = ("stream" if streaming else "memory"), None
    return Placement(plan, client, where, checkpointing=checkpointing, resuming=resuming)


def choose(placement, plan, data):
    """The :class:`Method` of a fit of ``plan`` (its feature map's spec set) on the opened ``data``
    (:class:`~.fit.MemoryData` or a :class:`~.data.source.DaskSource`), placed by :func:`place`.

    In memory the rows are known: primal or dual is decided here.  On a cluster the method follows
    from the plan and the width (:func:`cluster_method`).  Streamed, the first read is chosen
    (:data:`FIRST_READS`, unless a resumed fit's checkpoint holds the counts): text, which every read
    parses, trains the dual solvers while it counts where the primal solver can never apply; the
    primal solver's first read keeps its sample while it counts where it applies and is cheap;
    else the labels alone are counted.  Primal or dual is then decided here where the plan says
    (``dual=True`` or ``False``, or a first read that trains the dual solvers), else after the
    count (:func:`after_count`).
    """
    if plan.multinomial_auto and placement.where == "cluster":  # counted by the first read
        return Method("cluster", True, cluster=softmax_method(plan, data.n_features))
    if plan.multinomial_auto:  # one-vs-rest's method, until the classes are counted
        method = choose(placement, plan.settled(False), data)
        if data.text and method.first_read != "primal":  # text's every read parses whole rows: that
            # read keeps the sample the softmax model's reads start from, as one-vs-rest's may
            method = method.replace(first_read="primal", known_rows=footer_rows(data))
        return method
    schedule = dual_schedule(plan)
    if placement.where == "memory" and plan.sparse_penalty:
        if plan.feature_map is not None:
            raise ValueError(
                f"{plan.penalty} does not support a feature map yet (its solver reads the features "
                "column by column); compute the mapped features first and pass feature_map=None."
            )
        # The Newton reads of a streamed fit, made in memory, at any shape (the model on the free
        # weights, formed or descended by the rows' columns), and CDN only from their point where
        # they stop above tol (engine/fit.py, _polished); values the primal solver cannot sum go to
        # CDN.  On tall rows they take a handful of steps where coordinate descent takes passes
        # (docs/benchmarks.md, "The L1 and elastic-net penalties": a9a 0.13 s against 3.5 s).
        # Measured at C = 0.1, 1, 10, tol 1e-3: the default pure L1 took 0.03-0.20 s where CDN took
        # 1.3-6.3 s on 2,000 x 500 dense rows, 0.06-1.4 s where 0.42-52 s on 50,000 x 20,000 text rows
        # (docs/benchmarks.md, "The L1 penalty in memory on short rows"); LinearSVC(penalty="l1")
        # took 0.09-3.3 s where 4.9-76 s on the dense rows, 0.20 and 1.2 s where 0.63 and 19 s on the
        # text at C = 0.1 and 1, and at C = 10 46.6 s to a 1e-3 gap where CDN stood at 0.48 after
        # 1,000 passes (32 s; one process, 2026-12-01); against scikit-learn's, docs/benchmarks.md,
        # "LinearSVC(penalty='l1') in memory".
        if plan.scaler is not None or too_large(data.X, plan.bias, augmented=False) is None:
            return Method("memory", True, schedule=None)
        return Method("memory", True, schedule=L1_SOLVER)
    if placement.where == "memory" and plan.multinomial:
        if plan.feature_map is not None:
            raise ValueError(
                "multi_class='multinomial' does not support a feature map yet (its solver reads the "
                "features as they are); compute the mapped features first and pass feature_map=None, "
                "or feature_map=Standardize()."
            )
        # On tall rows the Newton reads of a streamed fit, made in memory, start from a sample's
        # solution where Newton from 0 takes damped steps over every row; values the reads do not
        # take (beyond 1e12) keep Newton from 0, which takes them.
        n_rows, n_features = data.X.shape
        K = data.labels()[0].shape[0]
        width = K * softmax_columns(plan, n_features)
        tall = n_rows >= PRIMAL_RATIO * width and width <= MAX_WIDTH
        if tall and (plan.scaler is not None or too_large(data.X, plan.bias, augmented=False) is None):
            return Method("memory", True, schedule=MULTINOMIAL_READS)
        return Method("memory", True, schedule=MULTINOMIAL_SOLVER)
    if placement.where == "memory":
        n_rows, n_features = data.X.shape
        dense = not sp.issparse(data.X) and plan.feature_map is None  # a map's values are not checked
        ratio = DENSE_PRIMAL_RATIO if dense else PRIMAL_RATIO  # before its first step (too_large)
        primal = use_primal(plan, n_rows, n_features, streaming=False, ratio=ratio)
        beyond = None
        if primal and plan.dual == "auto" and plan.feature_map is None and plan.scaler is None:
            beyond = too_large(data.X, plan.bias, augmented=False)  # the primal solver's first check
        if beyond is not None:
            return Method("memory", False, schedule="memory", note=_dual_note(beyond))
        if not primal and memory_band(plan, data.X):
            return Method("memory", False, schedule=BAND_SOLVER)
        return Method("memory", primal, schedule=None if primal else "memory")
    n_features = data.n_features
    if plan.multinomial and placement.where in ("stream", "cluster"):  # its first read counts the classes
        if plan.feature_map is not None:
            raise ValueError(
                "multi_class='multinomial' does not support a feature map yet (its Newton reads use "
                "the features as they are); compute the mapped features first and pass "
                "feature_map=None, or feature_map=Standardize()."
            )
        if placement.where == "cluster":
            method = softmax_method(plan, n_features)
            return Method("cluster", True, schedule=MULTINOMIAL_SOLVER, cluster=method)
        check_model_width(2, softmax_columns(plan, n_features))
        return Method(
            "stream", True, schedule=MULTINOMIAL_SOLVER, first_read="primal", known_rows=footer_rows(data)
        )
    if plan.sparse_penalty and placement.where == "stream":  # its reads form the Hessian: before any read
        check_width(plan, plan.model_width(n_features) + 1)
    if placement.where == "cluster":
        method = cluster_method(plan, n_features)
        primal = method in ("newton", "truncated_newton")
        named = plan.solver if plan.solver in STREAMING_SOLVERS else PAPER_SCHEDULE  # cluster.fit's
        return Method("cluster", primal, schedule=None if primal else named, cluster=method)
    checkpointing = placement.checkpointing
    blocker = band_blocker(plan, n_features, checkpointing)
    if plan.solver == BAND_SOLVER and blocker is not None:
        raise ValueError(
            f"solver='band' (the band from a sample) does not support {blocker}; "
            "use solver='auto', 'streamsvm', 'sbm' or 'bm'."
        )
    if blocker is None:  # the band from a sample: the first read keeps the sample while it counts
        return Method(
            "stream", False, schedule=BAND_SOLVER, first_read="primal", known_rows=footer_rows(data)
        )
    could_be_primal = plan.dual is not True and use_primal(
        plan, None, n_features, checkpointing=checkpointing
    )  # fmt: skip
    primal = {True: False, False: True}.get(plan.dual)
    if plan.dual == "auto" and not could_be_primal:
        primal = False
    known = None
    if trains_while_counting(plan, data, could_be_primal, checkpointing):
        first = "trains"
    else:
        cheap = plan.model_width(n_features) + 1 <= FIRST_READ_WIDTH
        if plan.dual is False or (plan.dual == "auto" and could_be_primal and cheap):
            known = footer_rows(data)  # Parquet's footers, a few kB a file, read once
        trained = rows_trained(data, known)  # virtual examples: the rows the read will give
        first = "primal" if _first_read_trains(plan, n_features, trained, checkpointing) else "labels"
    return Method("stream", primal, schedule=schedule, first_read=first, known_rows=known)


def after_count(method, plan, n_rows, n_features, beyond=None):
    """The second stage of :func:`choose`: ``method`` with primal or dual decided, now that the read
    that counted the classes has counted ``n_rows`` rows (``method`` itself where it was decided).
    ``beyond``: why that read found values the primal solver cannot train on (its first read's
    check), or None: ``dual="auto"`` then chooses the dual solvers, and says why (``note``)."""
    if method.primal is not None:
        return method
    primal = use_primal(plan, n_rows, n_features, checkpointing=False)
    if primal and beyond is not None:
        return method.replace(primal=False, note=_dual_note(beyond))
    return method.replace(primal=primal)


def _dual_note(beyond):
    """What the user is told when ``dual="auto"`` chose the dual solvers for values too large."""
    return (
        f"dual='auto' trained with the dual solvers, not the primal Newton solver the rows' count "
        f"chose: {beyond.split(': the primal solver')[0]}, beyond the {MAX_VALUE:g} the primal solver "
        "takes. Scale the features (feature_map=Standardize()) for the primal solver, or set "
        "dual=True to choose the dual solvers yourself."
    )


def streams(plan, out_of_core):
    """Whether a fit of ``plan`` streams its rows (a streaming solver or the band, or ``"auto"`` on
    a Dask collection or path: ``out_of_core``) rather than solving them in memory."""
    named = plan.solver in STREAMING_SOLVERS or plan.solver == BAND_SOLVER
    return named or (plan.solver == "auto" and out_of_core)


def dual_schedule(plan, gave_way=False):
    """The dual streaming schedule of a fit of ``plan`` on one machine: the one named, else with
    ``"auto"`` :data:`AUTO_SCHEDULE`, :data:`PAPER_SCHEDULE` where ``cache_policy="paper"`` (StreamSVM's
    own rule) asks for StreamSVM and :data:`GIVE_WAY_SCHEDULE` where the band from a sample gave way
    (``gave_way``); ``solver="band"``, whose rows the primal sums cannot take, StreamSVM."""
    if plan.solver in STREAMING_SOLVERS:
        return plan.solver
    if plan.solver != "auto" or plan.cache_policy == "paper":
        return PAPER_SCHEDULE
    return GIVE_WAY_SCHEDULE if gave_way else AUTO_SCHEDULE


def band_applies(plan, n_rows, n_features, complete):
    """Whether ``solver="auto"`` keeps the band from a sample once the rows are counted: on tall data
    (``n_rows`` at least :data:`PRIMAL_RATIO` times the model's width, as the primal solver), or where
    the sample holds every row (``complete``: its solve in memory is the fit).  Elsewhere a sample
    the budget holds is too small for the band, and the dual schedules train."""
    width = model_width(n_features, plan.feature_map) + 1
    return plan.solver != "auto" or complete or n_rows >= PRIMAL_RATIO * width


def memory_band(plan, X):
    """Whether ``solver="auto"`` trains the hinge loss on the in-memory rows ``X`` by the band from a
    sample (:func:`~.primal.sample_band.fit_band_memory`), as it does streamed: on dense rows
    without a feature map, enough of them (:func:`~.primal.warm.band_from_memory`), ``dual="auto"``
    (``True`` names dual coordinate descent), nothing in ``plan`` blocking it (:func:`band_blocker`)
    and no value beyond those the smoothed Newton sums (``too_large``)."""
    if sp.issparse(X) or plan.solver != "auto" or plan.dual is True:  # dual=True: coordinate descent
        return False
    if band_blocker(plan, X.shape[1]) is not None:
        return False
    if not band_from_memory(X.shape[0], model_width(X.shape[1], plan.feature_map)):
        return False
    return plan.scaler is not None or too_large(X, plan.bias, augmented=False) is None


def band_blocker(plan, n_features, checkpointing=False):
    """What of ``plan`` the band from a sample (:mod:`~.primal.sample_band`) cannot train streamed (a
    phrase), or None: it is ``solver="auto"``'s method for the hinge loss on a Dask collection or
    path, and ``"band"``'s."""
    width = model_width(n_features, plan.feature_map) + 1
    loss = "multi_class='crammer_singer'" if plan.crammer_singer else loss_band_blocker(plan.loss)
    blockers = {
        loss: loss is not None,
        f"solver={plan.solver!r}": plan.solver not in ("auto", BAND_SOLVER),
        "dual=False": plan.dual is False,
        "probability=True": plan.probability,
        "a feature map": plan.feature_map is not None,
        "checkpoint_dir": checkpointing,
        # Rows wider than the smoothed Newton's Hessian train by dual coordinate descent
        # (dual.offset) where the band is named; "auto" keeps the dual schedules for them, which
        # reach the gap in fewer reads there (docs/benchmarks.md, the band on wide text).
        f"solver='auto' on a model {width} wide (features plus intercept, more than {MAX_WIDTH})": (
            width > MAX_WIDTH and plan.solver == "auto"
        ),
    }
    return next((what for what, blocks in blockers.items() if blocks), None)


def where_to_fit(plan, client, *, out_of_core, checkpointing=False, validating=False):
    """``(plan, client)`` with ``cluster="auto"`` resolved: on the cluster of ``client`` (or the
    active ``distributed`` client) for a Dask collection or path, where a cluster fit supports the
    plan; else in this process (``plan.cluster`` None, ``client`` None).

    In-memory input, a solver named (``"memory"`` or a streaming one: this process's engines), a
    checkpoint, ``validation_data``, ``probability=True`` and Crammer-Singer train in this process,
    as does a fit run inside a Dask task (a ``GridSearchCV`` on a Dask backend: its worker's client
    is not the user's cluster to use) or under a local Dask scheduler set in ``dask.config``
    (``scheduler="sync"``, ``"threads"`` or ``"processes"``, which Dask itself prefers to a client).
    """
    if plan.cluster != "auto":
        return plan, client
    local = plan.replace(cluster=None)
    in_process = (
        not out_of_core or plan.solver != "auto" or checkpointing or validating or plan.probability
        or plan.crammer_singer or (client is None and _local_scheduler())
    )  # fmt: skip
    if in_process:
        return local, None
    client = client if client is not None else _active_client()
    return (local, None) if client is None else (plan, client)


def _local_scheduler():
    """Whether ``dask.config`` names a scheduler of this process (not a distributed client)."""
    import dask

    scheduler = dask.config.get("scheduler", None)
    return isinstance(scheduler, str) and scheduler in (
        "sync", "synchronous", "single-threaded", "threads", "threading", "processes", "multiprocessing"
    )  # fmt: skip


def _active_client():
    """The active ``distributed`` client outside a Dask task, or None (``distributed`` is not
    imported for this: without it imported there is no client)."""
    import sys

    if "distributed" not in sys.modules:
        return None
    import distributed

    try:
        distributed.get_worker()
        return None  # in a task: the worker's client is not for this fit
    except ValueError:
        pass
    try:
        return distributed.get_client()
    except ValueError:
        return None


def primal_blocker(plan, streaming=True, checkpointing=False):
    """What of ``plan`` the primal Newton solver cannot train (a phrase for an error), or None
    (``streaming``: on a Dask collection or path)."""
    loss = None if plan.crammer_singer else newton_blocker(plan.loss)  # Crammer-Singer's is its own
    blockers = {
        loss: loss is not None,
        "multi_class='crammer_singer'": plan.crammer_singer,
        "probability=True on a Dask collection": plan.probability and streaming,
        f"solver={plan.solver!r}, a dual solver": plan.solver not in ("auto", "memory"),
        "checkpoint_dir": checkpointing,
        # dual=False trains on a cluster too; "auto" keeps cluster= meaning its dual method
        f"cluster={plan.cluster!r}": plan.cluster in DUAL_CLUSTER_MODES and plan.dual == "auto",
    }
    return next((what for what, blocks in blockers.items() if blocks), None)


def _check_sparse_penalty(plan, streaming, input_name, checkpointing=False):
    """What the L1 and elastic-net penalties (``plan.l1_ratio > 0``) cannot train: a ValueError in
    scikit-learn's words, before any read.  In memory their coordinate descent trains them
    (:mod:`.primal.l1`); streamed and on a cluster the Newton reads (:mod:`.primal.penalties`), so
    that ``dual="auto"`` means ``dual=False`` there: the plan returned says so."""
    unsupported = "Unsupported set of arguments: the combination of"
    blocker = None if plan.crammer_singer else sparse_penalty_blocker(plan.loss)
    if blocker is not None:
        raise ValueError(f"{unsupported} {plan.penalty} and {blocker} is not supported; use that loss.")
    if plan.crammer_singer:
        raise ValueError(
            f"{unsupported} {plan.penalty} and multi_class='crammer_singer' is not supported; use "
            "multi_class='ovr'."
        )
    if plan.dual is True:
        raise ValueError(
            f"{unsupported} {plan.penalty} and dual=True is not supported (the dual solvers solve the "
            "L2-penalised problem only); use dual=False or dual='auto'."
        )
    if not streaming and plan.cluster is None:
        return plan
    if plan.solver != "auto" or plan.cluster in DUAL_CLUSTER_MODES:
        named = plan.solver not in ("auto", "memory")
        instead = ["solver='auto' (or 'memory' to train in memory)"] if named else []
        instead += ["cluster='auto' (or None)"] if plan.cluster in DUAL_CLUSTER_MODES else []
        raise ValueError(
            f"{plan.penalty} trains streamed and on a cluster by Newton reads only, and this fit names "
            f"solver={plan.solver!r}, cluster={plan.cluster!r} on {input_name} (the dual solvers, the "
            f"band, averaging, CoCoA+ and SBM solve the L2-penalised problem only). "
            f"Pass {' and '.join(instead)}."
        )
    blocker = primal_blocker(plan.replace(dual=False), streaming, checkpointing)
    if blocker is not None:
        raise ValueError(f"{plan.penalty} out of core (its Newton reads) does not support {blocker}.")
    return plan.replace(dual=False)


def multinomial_blocker(plan, streaming, input_name, checkpointing=False):
    """Why the multinomial model (``multi_class="multinomial"``) cannot train ``plan``: the error's
    words, or None.  It trains by Newton's method, in memory (:mod:`.primal.multinomial`), and
    streamed and on a cluster a read per step (:mod:`.primal.multinomial_reads`,
    :mod:`.cluster.newton`); ``multi_class="auto"`` trains the one-vs-rest problems where this names
    a reason (:func:`place`)."""
    if plan.dual is True:
        return (
            "multi_class='multinomial' with dual=True is not supported (the dual solvers solve the "
            "one-vs-rest problems); use dual='auto' or dual=False, or multi_class='ovr'."
        )
    if plan.cluster in DUAL_CLUSTER_MODES:
        return (
            f"multi_class='multinomial' trains on a cluster by Newton reads only, and cluster="
            f"{plan.cluster!r} on {input_name} names a dual method (averaging, CoCoA+ and SBM solve the "
            "one-vs-rest problems). Pass cluster='auto', or multi_class='ovr'."
        )
    if not streaming:
        return None
    blockers = {
        f"solver={plan.solver!r} (a streaming solver of the one-vs-rest problems)": plan.solver != "auto",
        "checkpoint_dir": checkpointing,
    }
    blocker = next((what for what, blocks in blockers.items() if blocks), None)
    if blocker is None:
        return None
    return (
        f"multi_class='multinomial' streams its rows by Newton reads only, which do not support "
        f"{blocker}; pass solver='auto' (or 'memory' to train in memory), or use multi_class='ovr'."
    )


def settle_multinomial(placement, plan, data):
    """``plan`` with ``multi_class="auto"`` decided where it can be before any read: in memory by
    the classes of the rows' labels, and streamed or on a cluster the one-vs-rest problems where a
    feature map is set; streamed also where even :data:`~.primal.multinomial_reads.AUTO_MIN_CLASSES`
    classes would be too wide for the reads (:func:`~.primal.multinomial_reads.auto_softmax`; a
    cluster takes the Hessian's products beyond).  Elsewhere the read that counts the classes
    decides (:func:`~.fit.fit`'s methods)."""
    if not plan.multinomial_auto:
        return plan
    if plan.feature_map is not None:  # the softmax model trains on the features as they are
        return plan.settled(False)
    if placement.where == "memory":
        return plan.settled(auto_softmax(data.labels()[0].shape[0]))
    if placement.where == "cluster":  # any width: Hessian products beyond the reads' formed Hessian
        return plan
    return (
        plan
        if auto_softmax(AUTO_MIN_CLASSES, softmax_columns(plan, data.n_features))
        else plan.settled(False)
    )


def _check_primal(plan, streaming, checkpointing):
    """``dual=False`` where the primal solver cannot train ``plan``: a ValueError naming why."""
    blocker = primal_blocker(plan, streaming, checkpointing)
    if blocker is not None:
        raise ValueError(
            f"dual=False (the primal Newton solver) does not support {blocker}; "
            "use dual=True (the dual solvers) or dual='auto'."
        )


def use_primal(plan, n_rows, n_features, *, streaming=True, checkpointing=False, ratio=PRIMAL_RATIO):
    """Whether a fit of ``plan`` on ``n_rows`` rows of ``n_features`` runs the primal Newton solver
    (``dual=False``, or ``"auto"`` where the rows are at least ``ratio`` times the model's width);
    ValueError if ``dual=False`` cannot.  ``n_rows`` None asks whether it could for some number of
    rows (the model is narrow enough, nothing blocks)."""
    if plan.dual is True:
        return False
    if plan.dual is False:
        _check_primal(plan, streaming, checkpointing)
        return True
    width = model_width(n_features, plan.feature_map) + 1
    narrow = primal_blocker(plan, streaming, checkpointing) is None and width <= MAX_WIDTH
    return narrow and (n_rows is None or n_rows >= ratio * width)


def trains_while_counting(plan, source, could_be_primal, checkpointing):
    """Whether the first read of ``source`` trains the dual solvers while it counts the classes:
    text, whose every read parses it, where the primal solver never applies whatever the rows'
    count (``could_be_primal`` false), with costs that do not depend on the counts (no
    ``class_weight="balanced"``), no scales to learn first (their read leaves the text spilled, and
    the count cheap) and no checkpoint."""
    return (
        bool(source.text) and plan.scaler is None and not checkpointing
        and not isinstance(plan.class_weight, str) and not could_be_primal
    )  # fmt: skip


def _first_read_trains(plan, n_features, known_rows, checkpointing):
    """Whether the read that counts the classes also sums their rows' moments, so that it is the
    primal solver's first Newton read: with ``dual=False``, and with ``"auto"`` where the primal
    solver applies, the moments are cheap (at most :data:`FIRST_READ_WIDTH` features) and the
    collection's rows, ``known_rows`` before any read, are enough for it.  Otherwise the classes
    are counted as for the dual solvers, from the labels alone where the source allows."""
    if plan.dual is True:
        return False
    if plan.dual is False:
        return True
    return (
        plan.model_width(n_features) + 1 <= FIRST_READ_WIDTH
        and known_rows is not None
        and use_primal(plan, known_rows, n_features, checkpointing=checkpointing)
    )


def softmax_method(plan, n_features):
    """The cluster method of the softmax model (``multi_class="multinomial"``, or ``"auto"`` before
    its classes are counted) on ``n_features`` raw features: as the binary problem's
    (:func:`cluster_method`), ``"newton"`` where one class's row is at most
    :data:`~.primal.sums.CG_WIDTH` wide (a first read counts the classes and keeps a sample; the
    Hessian formed where ``K`` rows are at most :data:`~.primal.newton.MAX_WIDTH` wide, its products
    beyond), else ``"truncated_newton"`` (the parts read once, counted, and Newton-CG from 0)."""
    return "truncated_newton" if plan.model_width(n_features) + 1 > CG_WIDTH else "newton"


def cluster_method(plan, n_features):
    """The method a cluster fit of ``plan`` runs on ``n_features`` raw features: one of
    :data:`CLUSTER_METHODS`.

    ``dual=False``, and ``cluster="auto"`` where the loss has Newton pieces (the squared hinge) and
    the dual is not asked for: Newton steps, the Hessian formed and added up the tree when the model
    (plus the bias) is at most :data:`~.primal.sums.CG_WIDTH` wide (``"newton"``), its products
    otherwise (``"truncated_newton"``): both converge in a number of reads that does not grow with
    the workers.  Where only the dual applies, ``"auto"`` runs the band from a sample (``"band"``,
    :func:`band_blocker`: the hinge loss, the reads not growing with the workers either, SBM's trainer
    on one worker where it gives up: :mod:`.cluster.root_sbm`), else CoCoA+ (``"cocoa"``:
    Crammer-Singer, a feature map, ``dual=True`` with the squared hinge).  ``"average"``, ``"cocoa"``
    and ``"sbm"`` with ``dual="auto"`` run what they name.
    """
    newton = plan.dual is False or (
        plan.cluster == "auto" and plan.dual == "auto" and primal_blocker(plan, streaming=True) is None
    )
    if not newton:
        # The band at any width: rows wider than CG_WIDTH only where the parts' samples hold every row
        # (their problem solved on one worker; cluster.newton.fit_band_cluster), SBM otherwise.
        if plan.cluster == "auto" and band_blocker(plan.replace(solver=BAND_SOLVER), n_features) is None:
            return BAND_SOLVER
        return "cocoa" if plan.cluster == "auto" else plan.cluster
    # The sparse penalties too: their steps descend the formed Hessian's coordinates where it is
    # formed, and beyond it the damped orthant-wise Newton step from its products (primal.penalties,
    # "Products"; primal.newton._Problem.damp).
    wide = plan.model_width(n_features) + 1 > CG_WIDTH
    return "truncated_newton" if wide else "newton"


def _check_scaler(plan, validating):
    """What ``feature_map=Standardize()`` cannot train with: a clear error, before any read."""
    if validating:
        raise ValueError(
            "feature_map=Standardize() does not support validation_data yet (its rows would be scored "
            "before scaling); score a held-out set after the fit instead."
        )
    if plan.scaler.with_mean is True and plan.bias == 0.0:
        raise ValueError(
            "Standardize(with_mean=True) with fit_intercept=False: centring the features adds an "
            "intercept to the raw features' model. Use with_mean='auto' (no centring without an "
            "intercept) or fit_intercept=True."
        )

"""Which method a fit runs, and where: the choices :func:`~.fit.fit` makes before any solve.

- **where** (:func:`where_to_fit`): ``cluster="auto"`` resolved to the active client's cluster or
  this process; streaming or in memory (:func:`streams`);
- **primal or dual** (:func:`use_primal`): the primal Newton solver with ``dual=False``, or with
  ``"auto"`` on tall data (:data:`PRIMAL_RATIO`) where it applies (:func:`primal_blocker`), and
  whether the read that counts the classes is its first (:func:`first_read_trains`);
- **the cluster's method** (:func:`cluster_method`): Newton with formed Hessians, truncated Newton,
  CoCoA+ or averaging.
"""

from .plan.losses import newton_blocker
from .plan.problem import STREAMING_SOLVERS, model_width
from .primal.newton import MAX_WIDTH
from .primal.sums import CG_WIDTH

# dual="auto" picks the primal Newton solver when the rows outnumber the model's width (features plus
# bias) this many times: measured in benchmarks/bench_primal.py (docs/benchmarks.md, "primal").
PRIMAL_RATIO = 100
# dual="auto" makes the read that counts the classes the primal solver's first read up to this width.
FIRST_READ_WIDTH = 256


def streams(plan, out_of_core):
    """Whether a fit of ``plan`` streams its rows (a streaming solver, or ``"auto"`` on a Dask
    collection or path: ``out_of_core``) rather than solving them in memory."""
    return plan.solver in STREAMING_SOLVERS or (plan.solver == "auto" and out_of_core)


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
        f"cluster={plan.cluster!r}": plan.cluster in ("average", "cocoa") and plan.dual == "auto",
    }
    return next((what for what, blocks in blockers.items() if blocks), None)


def use_primal(plan, n_rows, n_features, *, streaming=True, checkpointing=False):
    """Whether a fit of ``plan`` on ``n_rows`` rows of ``n_features`` runs the primal Newton solver
    (``dual=False``, or ``"auto"`` on tall data); ValueError if ``dual=False`` cannot."""
    if plan.dual is True:
        return False
    blocker = primal_blocker(plan, streaming, checkpointing)
    if plan.dual is False:
        if blocker is not None:
            raise ValueError(
                f"dual=False (the primal Newton solver) does not support {blocker}; "
                "use dual=True (the dual solvers) or dual='auto'."
            )
        return True
    width = model_width(n_features, plan.feature_map) + 1
    return blocker is None and width <= MAX_WIDTH and n_rows >= PRIMAL_RATIO * width


def first_read_trains(plan, width, known_rows, n_features, checkpointing=False):
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
        width + 1 <= FIRST_READ_WIDTH
        and known_rows is not None
        and use_primal(plan, known_rows, n_features, checkpointing=checkpointing)
    )


# The methods a cluster fit may run (``history_``'s ``"method"``, :func:`cluster_method`).
CLUSTER_METHODS = ("newton", "truncated_newton", "cocoa", "average")


def cluster_method(plan, n_features):
    """The method a cluster fit of ``plan`` runs on ``n_features`` raw features: one of
    :data:`CLUSTER_METHODS`.

    ``dual=False``, and ``cluster="auto"`` where the loss has Newton pieces (the squared hinge) and
    the dual is not asked for: Newton steps, the Hessian formed and added up the tree when the model
    (plus the bias) is at most :data:`~..primal_sums.CG_WIDTH` wide (``"newton"``), its products
    otherwise (``"truncated_newton"``): both converge in a number of reads that does not grow with
    the workers.  Where only the dual applies (the hinge loss, ``dual=True``, Crammer-Singer),
    ``"auto"`` runs CoCoA+ (``"cocoa"``).  ``"average"`` and ``"cocoa"`` with ``dual="auto"`` run
    what they name.
    """
    newton = plan.dual is False or (
        plan.cluster == "auto" and plan.dual == "auto" and primal_blocker(plan, streaming=True) is None
    )
    if not newton:
        return "cocoa" if plan.cluster == "auto" else plan.cluster
    return "truncated_newton" if plan.model_width(n_features) + 1 > CG_WIDTH else "newton"

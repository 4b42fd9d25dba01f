"""The cluster's dual methods behind one call: :func:`fit_cluster` places the parts, counts their
labels, sizes their caches, and runs ``plan.cluster``'s method."""

from .average import fit_average
from .cocoa import fit_cocoa
from .moments import scaled_parts
from .parts import place, with_part_cache
from .runtime import scheduler_lost

CLUSTER_MODES = ("auto", "average", "cocoa")


def fit_cluster(client, source, plan, *, clock_start, on_round=None):
    """Train ``plan`` (without labels yet) on ``source`` over ``client``'s workers: a
    :class:`~..result.FitResult` with its ``plan`` (labels counted on the workers, a share of
    memory in bytes), ``messages`` (warnings for the user) and ``parts`` (``cluster_parts_``).

    ``plan.cluster`` is ``"average"`` (:mod:`.average`) or ``"cocoa"`` (:mod:`.cocoa`).
    ``on_round(record)``, after every CoCoA+ round, stops the rounds with a true value.  A
    ``plan.cache_share`` (``cache_bytes="10%"``) is that share of the largest part's bytes, for
    every worker's cache (:func:`~.parts.with_part_cache`).  A lost scheduler raises
    :class:`~.runtime.SchedulerLost`.
    """
    if plan.cluster not in ("average", "cocoa"):
        raise ValueError(
            f"cluster must be one of {', '.join(map(repr, CLUSTER_MODES))} to train on a cluster, got "
            f"cluster={plan.cluster!r}; use cluster=None to train in this process."
        )
    try:
        return _fit_cluster(client, source, plan, clock_start, on_round)
    except Exception as exc:
        lost = scheduler_lost(client, exc)
        if lost is None:
            raise
        raise lost from exc


def _fit_cluster(client, source, plan, clock_start, on_round):
    plan, placement = place(client, source, plan, mode=plan.cluster)
    scaler, placement = scaled_parts(client, source, plan, placement)
    plan = with_part_cache(client, plan, placement)
    if plan.cluster == "average":
        result = fit_average(client, placement, plan, clock_start)
    else:
        width = plan.model_width(source.n_features)
        result = fit_cocoa(client, placement, plan, width, clock_start, on_round=on_round)
    result.plan, result.scaler = plan, scaler
    result.messages = ([placement.skew] if placement.skew else []) + result.messages
    return result

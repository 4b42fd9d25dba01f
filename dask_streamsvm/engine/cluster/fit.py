"""A fit on the cluster behind one call: :func:`fit_on_cluster` runs the method the door chose
(:func:`~..choice.cluster_method`): Newton steps summed up the tree (the Hessian formed,
:mod:`.newton`, or its products, :mod:`.products`; the multinomial model's in either, by its
width, :func:`~..choice.softmax_method`), or
the dual methods, whose parts it places, whose labels it counts and whose caches it sizes
(averaging, :mod:`.average`; CoCoA+, :mod:`.cocoa`; SBM's trainer on one worker,
:mod:`.root_sbm`).  A lost scheduler raises
:class:`~.runtime.SchedulerLost`, and a failed fit leaves no task of it on the cluster."""

import numpy as np
from sklearn.utils import check_random_state

from ..plan.problem import CLUSTER_MODES, DUAL_CLUSTER_MODES, STREAMING_SOLVERS
from ..primal.sample_band import BandStalled, band_note
from .average import fit_average
from .cocoa import fit_cocoa
from .moments import scaled_parts
from .newton import fit_band_cluster, fit_primal_cluster, fit_softmax_cluster, settled_parts
from .parts import parts_of, place, with_part_cache
from .products import fit_products_cluster
from .root_sbm import fit_sbm_root, root_plan
from .runtime import cancelled_on_error, scheduler_lost

# Where the band from a sample gives way on a cluster (BandStalled), SBM's trainer on the first worker
# trains (cluster.root_sbm), with the passes of one machine whatever the workers: at a 10% cache on
# K = 2..100 workers it took a9a, w8a and ijcnn1 to 1e-3 in 3, 5-7 and 3-4 passes, where CoCoA+'s
# rounds grow with the workers (more than 500 at K = 8..100; docs/benchmarks.md, the section "SBM on
# one worker" on K parts).
GIVE_WAY_METHOD = "sbm"
GIVE_WAY_NAME = "SBM on one worker (cluster='sbm')"


def fit_on_cluster(client, source, plan, method, hooks, clock_start):
    """``plan`` (without labels yet) trained on ``source`` over ``client``'s workers by ``method``
    (``"newton"``, ``"truncated_newton"``, ``"band"``, ``"cocoa"``, ``"average"`` or ``"sbm"``): a
    :class:`~..plan.result.FitResult` with its ``plan`` (labels counted on the workers, a share of
    memory in bytes), ``messages`` (warnings for the user) and ``parts`` (``cluster_parts_``).
    Every history record names the method; ``hooks`` see every step or round, and may stop them.
    The parts are placed once (:func:`~.parts.parts_of`) and handed to the method.
    """
    source.scaled = plan.scaler is not None  # the rows' x . x is checked once scaled, as on one machine
    solver = plan.solver if plan.solver in STREAMING_SOLVERS else STREAMING_SOLVERS[0]
    if method == "sbm":  # SBM (or BM, named); "auto": its cache and blocks share the budget (fit_cluster)
        solver = plan.solver if plan.solver in ("sbm", "bm") else "auto"
    seed = int(check_random_state(plan.random_state).randint(np.iinfo(np.int32).max))
    plan = plan.replace(solver=solver, seed=seed)

    spent, why, after = [], None, "one read"  # the band's reads where it gave up, why (not its reach), when
    learned = {}  # where the band gave way: the labels and scales its first read learned (fit_cluster)

    def named(records):
        for record in records:
            record.setdefault("method", method)
        return records

    with cancelled_on_error(client):
        try:
            placement = parts_of(client, source, plan)

            def on_pass(records, W):
                return hooks.on_pass(named(records), W)

            if method == "band":  # each read one read of every part, SBM where the band gives up
                try:
                    result = fit_band_cluster(
                        client, source, plan, clock_start=clock_start, placement=placement, on_pass=on_pass,
                    )  # fmt: skip
                except BandStalled as stalled:  # its reads' records keep its name
                    spent, why, after = named(stalled.history), stalled.why, stalled.after
                    method = GIVE_WAY_METHOD
                    if stalled.counted is not None:  # the labels and scales the band's first read learned
                        plan, placement, learned["scaler"] = stalled.counted
                        learned["counted"] = True
                    plan = plan.replace(solver="auto")  # SBM's cache and blocks share the budget
            if method in ("newton", "truncated_newton"):  # each step one read (or evaluation) of every part
                newton = fit_primal_cluster if method == "newton" else fit_products_cluster
                if method == "newton" and plan.multinomial:
                    newton = fit_softmax_cluster
                read = {}
                # multi_class="auto": the parts' first read counts the classes (the wide model's
                # parts are counted as they are read, by fit_products_cluster)
                if plan.multinomial_auto and method == "newton":
                    read["sampled"] = settled_parts(client, source, plan, placement)
                    plan = read["sampled"][0]
                    newton = fit_softmax_cluster if plan.multinomial else fit_primal_cluster
                result = newton(
                    client, source, plan, clock_start=clock_start, on_pass=on_pass, placement=placement,
                    **read,
                )  # fmt: skip
            elif method != "band":  # the dual methods (SBM also where the band gave up)
                on_round = on_part = None
                if hooks.wants_rounds():

                    def on_round(record):
                        return hooks.on_round(named([record])[0])

                    on_part = hooks.on_part
                plan = plan.replace(cluster=method)
                result = fit_cluster(
                    client, source, plan, clock_start=clock_start, on_round=on_round, placement=placement,
                    on_part=on_part, on_pass=on_pass, **learned,
                )  # fmt: skip
                if spent:
                    result.history[:0] = spent
                    result.messages.append(
                        band_note(spent[-1].get("band_reach", 0.0), GIVE_WAY_NAME, why, after)
                    )
        except Exception as exc:
            lost = scheduler_lost(client, exc)
            if lost is None:
                raise
            raise lost from exc
    named(result.history)  # records the hooks did not see too (a warm start that solved all)
    return result


def fit_cluster(
    client, source, plan, *, clock_start, on_round=None, placement=None, on_part=None, on_pass=None,
    counted=False, scaler=None,
):  # fmt: skip
    """The dual methods: ``plan.cluster`` (``"average"``, :mod:`.average`, ``"cocoa"``,
    :mod:`.cocoa`, or ``"sbm"``, :mod:`.root_sbm`) on ``source`` over ``client``'s workers.

    ``on_round(record)``, after every CoCoA+ round, stops the rounds with a true value;
    ``on_part(record)`` is told of each part the average trains; ``on_pass(records, W)``, after
    every pass of SBM, stops the passes with a true value.  A ``plan.cache_share``
    (``cache_bytes="10%"``) is that share of the largest part's bytes, for every worker's cache
    (:func:`~.parts.with_part_cache`), and for SBM, whose one trainer sees every row, that share of
    all the rows' bytes, which its cache and blocks share (:func:`~.root_sbm.root_plan`).
    ``placement``: the parts (:func:`~.parts.parts_of`; None: made here).  ``counted``: SBM after
    the band gave way, ``plan`` holds the labels and ``placement`` the parts' label counts and
    scaled parts that the band's first read learned, ``scaler`` its scaler: neither the labels nor
    the scales are read again (before 2026-12-06 the labels were, and the scales where standardized).
    """
    if plan.cluster not in DUAL_CLUSTER_MODES:
        raise ValueError(
            f"cluster must be one of {', '.join(map(repr, CLUSTER_MODES))} to train on a cluster, got "
            f"cluster={plan.cluster!r}; use cluster=None to train in this process."
        )
    sbm = plan.cluster == "sbm"  # one trainer: the parts' label mixes do not matter
    if not (counted and sbm):
        plan, placement = place(client, source, plan, mode=None if sbm else plan.cluster, placement=placement)
        scaler, placement = scaled_parts(client, source, plan, placement)
    plan = with_part_cache(client, plan, placement, rows=sum(placement.rows) if sbm else None)
    if sbm:
        width = plan.model_width(source.n_features)
        plan = root_plan(plan)
        result = fit_sbm_root(client, placement, plan, width, on_pass=on_pass)
    elif plan.cluster == "average":
        result = fit_average(client, placement, plan, clock_start, on_part=on_part)
    else:
        width = plan.model_width(source.n_features)
        result = fit_cocoa(client, placement, plan, width, clock_start, on_round=on_round)
    result.plan, result.scaler = plan, scaler
    result.messages = ([placement.skew] if placement.skew else []) + result.messages
    return result

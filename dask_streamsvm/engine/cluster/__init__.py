"""Cluster mode: one model per Dask worker, averaged, or combined to the optimum by CoCoA+, and
the primal Newton solver (its Hessian, or its products) with its sums added on the workers.

``LinearSVC(cluster="average")`` and ``LinearSVC(cluster="cocoa")`` train on a
``dask.distributed`` cluster through :func:`fit_cluster`, the Newton methods (``dual=False``, and
``cluster="auto"`` where they apply: :func:`~..choice.cluster_method`) through
:func:`fit_primal_cluster` and :func:`fit_products_cluster`, each with the estimator's
:class:`~..plan.problem.FitPlan`, and all return a :class:`~..plan.result.FitResult`.  The data are read
where the tasks run; only models, updates and certificate sums come back to the client.

The rooms, each owning one job:

``runtime``
    The client and its workers: :func:`resolve_client`, submitting and gathering tasks
    (:func:`~.runtime.submit`, :func:`~.runtime.gather`, :func:`~.runtime.wait`) that never
    hang on a lost worker (:class:`WorkerLost`) or scheduler (:class:`SchedulerLost`), and the
    synchronous scheduler a worker's task reads its partitions with.
``parts``
    Data placement: which worker holds which partitions (:func:`make_parts`, :class:`Packed`,
    :func:`assign_parts`), their labels counted on the workers and compared, partitions dealt
    anew by label mix (:func:`~.parts.place`, :func:`skewed_parts`, :func:`class_shares`), the
    read limits of a part, a share of memory in bytes (:func:`~.parts.with_part_cache`), and the
    placement record the user reads (``cluster_parts_``).
``average``
    ``cluster="average"``: each worker trains its part out of core (:func:`train_part`, a
    :class:`~.average.PartFit`), the models averaged, :func:`combined_dual` certifying the average.
``cocoa``
    ``cluster="cocoa"``: CoCoA+ rounds (:func:`fit_cocoa`), the updates added up the tree, and
    the recovery of parts whose worker was lost.
``cocoa_local``
    A CoCoA+ part on its worker: read once (:func:`load_part`), held in memory (:class:`Part`,
    :func:`cocoa_round`) or read every round when larger than ``cache_bytes``
    (:class:`StreamingPart`).
``changes``
    Changes of ``w`` on the columns a part's rows touch (:class:`Change`): the sparse traffic of
    CoCoA+.
``tree``
    Sums added in a tree on the workers (:func:`tree_sum`, :func:`add_sums`).
``newton``
    The primal Newton solver on a cluster with the Hessian formed (narrow data):
    :func:`fit_primal_cluster`, every step one read of every part (:func:`part_sums`).
``products``
    Truncated Newton on a cluster (wide data): the parts' rows held on their workers, the
    Hessian's products summed up the tree and the conjugate gradient on the root's worker
    (:func:`fit_products_cluster`).
``moments``
    ``feature_map=Standardize()`` on a cluster: the columns' moments added up the tree, and
    parts that scale their rows (:func:`~.moments.learn_scaler`).
``root_sbm``
    ``cluster="sbm"``: one machine's SBM trainer on the first part's worker, fed each partition
    read on its part's worker (:func:`~.root_sbm.fit_sbm_root`): one machine's passes at any ``K``.
``fit``
    :func:`fit_cluster`: the parts placed, the labels counted, the dispatch between averaging,
    CoCoA+ and SBM.
"""

from .average import PartFit, combined_dual, train_part
from .changes import Change, add_changes, narrow, touched_columns, widened
from .cocoa import fit_cocoa
from .cocoa_local import Part, StaleRound, StreamingPart, cocoa_round, load_part, part_weights
from .fit import fit_cluster, fit_on_cluster
from .newton import fit_primal_cluster, part_sums
from .parts import Packed, assign_parts, class_shares, make_parts, skewed_parts
from .products import TruncatedNewton, fit_products_cluster
from .runtime import SchedulerLost, WorkerLost, resolve_client
from .tree import add_sums, tree_sum

__all__ = [
    "Change", "Packed", "Part", "PartFit", "SchedulerLost", "StaleRound", "StreamingPart",
    "TruncatedNewton", "fit_products_cluster",
    "WorkerLost", "add_changes", "add_sums", "assign_parts", "class_shares", "cocoa_round", "combined_dual",
    "fit_cluster", "fit_cocoa", "fit_on_cluster", "fit_primal_cluster", "load_part", "make_parts", "narrow",
    "part_sums",
    "part_weights", "resolve_client", "skewed_parts", "touched_columns", "train_part", "tree_sum", "widened",
]  # fmt: skip

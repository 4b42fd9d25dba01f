"""Sums added in a tree on the workers, and the primal Newton solver on a cluster (``dual=False``).

:func:`tree_sum` adds the parts' results in pairs on the workers, ``ceil(log2 K)`` levels deep,
so that only the root's sum reaches the client: CoCoA+'s changes of ``w``
(:func:`~.cocoa.add_updates`) and the Newton solver's :class:`~..primal.Sums`
(:func:`add_sums`) go up it.  :func:`fit_primal_cluster` makes every Newton step one read of
every part on its worker (:func:`part_sums`), exact as on one machine: the sums are the data's
sums.
"""

from dataclasses import replace

from ..result import FitResult
from .parts import place
from .runtime import gather, submit, synchronous, wait


def add_sums(first, second):
    """Two parts' sums added: a node of the tree reduction, run on a worker."""
    return first.add(second)


def tree_sum(client, futures, workers, add=add_sums):
    """The sum of ``futures`` (each on the worker of the same index) added in pairs on the workers
    by ``add``, ``ceil(log2 K)`` levels deep: a future of the root, on ``workers[0]``."""
    level = list(zip(futures, workers, strict=True))
    while len(level) > 1:
        paired = []
        for i in range(0, len(level) - 1, 2):
            (first, worker), (second, _) = level[i], level[i + 1]
            paired.append((submit(client, add, first, second, worker=worker), worker))
        level = paired + level[len(paired) * 2 :]  # an odd one out moves up a level as it is
    return level[0][0]


def part_sums(packed, plan, W, S, todo):
    """The :class:`~..primal.Sums` of one part's rows at ``W + S`` (one read of its partitions)."""
    from ..primal import stream_read

    with synchronous(), stream_read(packed.source(), plan, reads=1) as read:
        return read(W, S, todo)


def fit_primal_cluster(client, source, plan, *, clock_start, on_pass=None):
    """``dual=False`` on a cluster: every Newton step is one read of every part on its worker,
    the parts' sums reduced on the workers; a :class:`~..result.FitResult` with its ``plan``
    (labels counted on the workers) and ``parts``.

    Exact as on one machine (the sums are the data's sums), and what moves per step is ``W`` and
    ``S`` out to each part and one :class:`~..primal.Sums` (``O(k D^2)`` floats) per tree edge.
    """
    from ..primal import solve_primal

    plan, placement = place(client, source, plan)
    parts, workers = placement.parts, placement.workers
    moved = {"bytes_sent": 0, "bytes_received": 0}

    def read(W, S, todo):
        futures = [submit(client, part_sums, packed, plan, W, S, todo, worker=w) for w, packed in parts]
        wait(client, futures, workers, placement.reads)
        root = tree_sum(client, futures, workers)
        total = gather(client, [root], workers)[0]
        moved["bytes_sent"] += sum(packed.nbytes + W.nbytes + S.nbytes for _, packed in parts)
        moved["bytes_received"] += total.v.nbytes + total.hessian.nbytes + total.trial.nbytes
        return total

    def on_read(records, W):
        for record in records:
            record.update(moved, parts=len(parts))
        return on_pass is not None and on_pass(records, W)

    width = plan.model_width(source.n_features)
    result = solve_primal(read, plan, width, clock_start=clock_start, on_pass=on_read, source=source)
    if isinstance(result, FitResult):
        return replace(result, plan=plan, parts=placement.record())
    return FitResult(  # solve_primal's own record (PrimalResult), until it returns a FitResult
        W=result.W, certificates=result.certificates, passes=result.passes, converged=result.converged,
        history=result.history, interrupted=result.interrupted, plan=plan, parts=placement.record(),
    )  # fmt: skip

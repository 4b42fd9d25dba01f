"""``cluster="sbm"``: selective block minimization (Chang & Roth, KDD 2011) on one worker, the
parts' partitions read on their own workers and brought to it one block at a time.

SBM's speed is its cache of informative rows, trained with every block: on one machine it takes
a9a, w8a and ijcnn1 at a 10% cache to a 1e-3 gap in 2-4 reads, where its blocks without the cache
(block minimization) stall.  The cluster's parallel schemes cannot share that cache: CoCoA+'s
rounds grow with the workers, and the band from a sample needs 8-20 reads on a9a at that memory
(docs/benchmarks.md, "The hinge on a cluster of K parts").  Here the trainer of one machine's SBM
(:class:`~..dual.sbm.BlockTrainer`, its certificate and its decisions, which depend on the data and
the seed only) lives on the first part's worker (:class:`RootSBM`); the client feeds it a pass at a
time, each partition read by a task on the worker of its part (:func:`part_block`) and handed to
the trainer's task on the root (:func:`take_block`), at most ``plan.prefetch`` reads ahead of it,
so that a worker holds at most a few partitions beyond its cache.  The passes are one machine's
reads whatever the number of workers: the model is one machine's ``solver="sbm"`` on the same
partitions, bit for bit.  What it costs: every pass brings the rows to one worker (the network
carries the data once a pass, where CoCoA+ carries ``w`` a part a round) and trains on that
worker's core while the others read.

A lost worker stops the fit with :class:`~.runtime.WorkerLost` (the trainer's dual variables are
on the root), as the Newton steps' and the band's fits do.
"""

from collections import deque

import numpy as np

from ..data.fingerprint import PartitionPrints
from ..data.reader import pass_order, stamp
from ..data.row_ids import RowIds
from ..dual.alpha_store import AlphaStore
from ..dual.sbm import BlockTrainer
from ..dual.trainer import fit_rows, trainer_result
from .cocoa_local import StaleRound
from .parts import part_source
from .runtime import HeldState, gather, submit, synchronous, wait

# The share of ``cache_bytes`` SBM's cache takes where the solver is "auto" and no block_bytes is
# given, its blocks the rest (one machine's "auto" takes half, AUTO_SBM_CACHE, chosen for seconds at a
# disk's speed).  Here every pass carries the rows to one worker, and passes count: at a 10% budget
# on 2 and 8 workers (a9a, w8a, ijcnn1, the L1 loss, C = 1; docs/benchmarks.md, "SBM on one worker:
# its cache's share of the budget") the six fits took 32 passes to 1e-3 at half, 25 at three
# quarters (a9a 3, w8a 5 and 7, ijcnn1 3-4) and 25 at 0.85.
ROOT_CACHE = 0.75


def root_plan(plan):
    """``plan`` (its cache in bytes) as SBM's on the root: a solver named keeps its own split
    (:class:`~..plan.problem.FitPlan`), ``"auto"`` without ``block_bytes`` gives :data:`ROOT_CACHE`
    of ``cache_bytes`` to the cache and the rest to the blocks."""
    if plan.solver != "auto":
        return plan
    if plan.block_bytes is not None:
        return plan.replace(solver="sbm")
    cache = int(plan.cache_bytes * ROOT_CACHE)
    return plan.replace(solver="sbm", cache_bytes=cache, block_bytes=max(plan.cache_bytes - cache, 1))


class _Rows:
    """What the trainer asks of its source: the rows' width; the reads are the parts' own."""

    spill_bytes = 0
    is_part = False

    def __init__(self, n_features):
        self.n_features = n_features


class _Feeds:
    """The reader the trainer's records name: its waits are the client's (the reads' tasks)."""

    wait_for_room = 0.0
    busy_seconds = 0.0


class RootSBM(HeldState):
    """SBM's trainer on the root worker, fed the parts' blocks (see the module docstring).

    Each :meth:`take` and :meth:`end` names the step it is: the ``version``-th of the fit, so that a
    repeated or stray task leaves the trainer as it was (:class:`~.cocoa_local.StaleRound`).  It
    pickles without its lock (:class:`~.runtime.HeldState`).
    """

    def __init__(self, plan, n_features):
        self.plan = plan
        self.store = AlphaStore(plan.n_problems, loss=plan.loss_code)
        rows = _Rows(n_features)
        if fit_rows(plan, rows):
            self.store.reserve(fit_rows(plan, rows))
        self.trainer = BlockTrainer(rows, plan, self.store)
        self.trainer.reader = _Feeds()
        self.row_ids, self.prints = RowIds(), PartitionPrints()
        self.version = 0
        super().__init__()

    def take(self, block, pass_k, p, version):
        """The ``p``-th partition (the collection's order) of pass ``pass_k``, read on its part's
        worker: stamped as one machine's reader stamps it (:func:`~..data.reader.stamp`) and fed."""
        with self._lock:
            self._check(version)
            stamp(block, pass_k, p, self.row_ids, self.prints, self.plan.shuffle, self.plan.seed)
            self.trainer.feed(("block", pass_k, block))
            self.version += 1

    def end(self, pass_k, version):
        """Pass ``pass_k``'s end: its last block trained, the state at its start certified.
        ``(records, W, done)``: the pass's history records, the weights they certify, and whether
        the trainer is done (converged, or at ``max_iter``)."""
        with self._lock:
            self._check(version)
            trainer = self.trainer
            before = len(trainer.history)
            trainer.feed(("end", pass_k))
            self.version += 1
            return trainer.history[before:], trainer.W_snap.copy(), trainer.done

    def result(self):
        """The fit's :class:`~..plan.result.FitResult`, as one machine's :func:`~..dual.trainer.run_trainer`
        returns it."""
        with self._lock:
            return trainer_result(self.trainer)

    def _check(self, version):
        if version != self.version:
            raise StaleRound(
                f"an SBM step for version {version} of a trainer now at version {self.version}: "
                "the task was repeated or abandoned, and the trainer is left as it was."
            )


def start_root(plan, n_features):
    """A :class:`RootSBM` (a task on the root worker: it stays there, in the future's result)."""
    return RootSBM(plan, n_features)


def part_block(packed, i):
    """The ``i``-th partition of a part, read on its worker as one machine reads it."""
    with synchronous():
        return part_source(packed).load(i)


def take_block(root, block, after, pass_k, p, version):
    """:meth:`RootSBM.take` (``after``: the step before, so that the steps run in their order)."""
    root.take(block, pass_k, p, version)
    return version


def end_pass(root, after, pass_k, version):
    """:meth:`RootSBM.end`."""
    return root.end(pass_k, version)


def root_result(root, after):
    """:meth:`RootSBM.result`."""
    return root.result()


def fit_sbm_root(client, placement, plan, n_features, on_pass=None):
    """SBM's passes on the root worker to ``plan.tol``, at most ``plan.max_iter`` after the first: a
    :class:`~..plan.result.FitResult` as one machine's ``solver="sbm"`` gives it, with ``parts``.

    ``placement``: the parts with their labels counted (:func:`~.parts.place`); ``plan``: SBM's, with
    its cache and block bytes.  ``on_pass(records, W)``, after every pass, stops the passes with a
    true value.  A partition not read within ``plan.read_timeout`` seconds of the trainer's wait for
    it stops the fit with :class:`~..data.waiting.ReadTimeout` naming it.
    """
    parts, placed, ids = placement.parts, placement.workers, placement.ids
    root_worker = placed[0]
    where = {}  # the collection's order -> (part, its index in the part)
    for j, part_ids in enumerate(ids):
        for i, p in enumerate(part_ids):
            where[int(p)] = (j, i)
    n = len(where)
    ahead = max(int(plan.prefetch), 1)
    root = submit(client, start_root, plan, n_features, worker=root_worker)
    after, version, stop = None, 0, False
    for pass_k in range(plan.max_iter + 1):
        taken = deque()
        for p in pass_order(n, pass_k, plan.shuffle, plan.seed):
            j, i = where[int(p)]
            block = submit(client, part_block, parts[j][1], i, worker=placed[j])
            after = submit(
                client, take_block, root, block, after, pass_k, int(p), version, worker=root_worker
            )
            version += 1
            taken.append((block, after, placement.partitions[j][i]))
            if len(taken) > ahead:  # no more than `ahead` partitions read before the trainer takes them
                block, took, partition = taken.popleft()
                limit = None if plan.read_timeout is None else (plan.read_timeout, [[partition]])
                wait(client, [block], placed, limit)
                wait(client, [took], placed)
        ended = submit(client, end_pass, root, after, pass_k, version, worker=root_worker)
        version += 1
        records, W, done = gather(client, [ended], placed)[0]
        after = ended
        stop = on_pass is not None and bool(on_pass(records, W))
        if done or stop:
            break
    result = gather(client, [submit(client, root_result, root, after, worker=root_worker)], placed)[0]
    result.stopped = bool(stop) and not np.all(result.converged)
    result.parts = placement.record()
    return result

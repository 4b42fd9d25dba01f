"""CoCoA+'s local solver for a part larger than its worker's ``cache_bytes``: SBM, one read a round.

A part whose rows fit in ``cache_bytes`` is held in its worker's memory
(:class:`~.cluster.Part`) and every CoCoA+ round runs DCD passes on it.  A
larger part is a :class:`StreamingPart`: each round is one read of the
part's partitions by the same block trainer a single machine runs
(:class:`~.sbm.BlockTrainer`, Chang & Roth 2011), on CoCoA+'s local
subproblem instead of the whole problem, so the cluster trains on more
rows than its memory holds.  What the worker keeps between rounds is what
a single machine's SBM keeps between reads: the alpha of every row of the
part (:class:`~.cache.AlphaStore`), and the informative rows in a cache of
``cache_bytes``; a round's row memory is the cache plus one block of
``block_bytes`` (with ``solver="streamsvm"``, ``cache_bytes``), as on one
machine.

The local subproblem (Ma, Smith, Jaggi et al. 2015, with ``sigma'``): the
round starts from the broadcast ``w`` as its local ``v``; a coordinate step
on row ``i`` uses the gradient ``y_i v.x_i - 1 + D_ii alpha_i`` and the
curvature ``sigma' ||[x_i, b]||^2 + D_ii``, and adds ``sigma' delta y_i x_i`` to
``v`` (:func:`~..kernels.dcd.dcd_passes` with ``sigma``).  The part's change
of ``w`` is ``(v - w) / sigma'``.  The certificate's sums at ``w`` (loss
sum, ``sum alpha``, ``sum D alpha^2``) come from the same read, as a single
machine's pass certificate does (:meth:`~.trainer.PassCertifier._snapshot`).

A part's state changes in place (its rows are not copied every round).  A
round names the part's ``version`` (rounds it has done): a task that
repeats a round the part has already done, or runs after the client
rebuilt ``w`` from the part's alpha (:meth:`StreamingPart.weights`), fails
instead of changing it twice.
"""

import sys
import threading

import numpy as np

from ..kernels.dcd import ProblemArrays, Shrinking, dcd_passes
from ..kernels.objective import add_weighted_rows
from .cache import AlphaStore
from .layout import kernel_rows
from .problem import encode_block
from .reader import Reader
from .sbm import INNER_EPS, BlockTrainer


def synchronous():
    """Dask's synchronous scheduler while in the block: a worker's task computes its partitions
    itself, on its own thread, rather than asking the cluster."""
    import dask

    return dask.config.set(scheduler="sync")


class StaleRound(RuntimeError):
    """A CoCoA+ round for a state the part has left (a repeated or abandoned task)."""


class LocalBlockTrainer(BlockTrainer):
    """SBM on CoCoA+'s local subproblem: ``W`` is the local ``v``, steps scaled by ``sigma``.

    Each block (plus cache) gets ``plan.fixed_passes`` DCD passes (CoCoA+'s
    ``inner_iter``); the pass end records the certificate's sums instead
    of certifying the part, whose own gap means nothing for the whole
    problem.
    """

    def __init__(self, source, plan, store, sigma):
        super().__init__(source, plan, store)
        self.sigma = float(sigma)
        self.passes = plan.fixed_passes
        self.max_iter = sys.maxsize  # the client counts the rounds
        self.round_sums = None

    def _solve_block(self, memory, n):
        sigma = self.sigma
        for c in range(self.k):
            y, upper, diag, qd = memory.problem(c)
            # qd holds ||[x_i, b]||^2 + D_ii; the local subproblem's curvature scales the first term.
            problem = ProblemArrays(y, upper, diag, sigma * (qd - diag) + diag)
            index = memory.live[:n].astype(np.int64)
            out = dcd_passes(
                memory.layout, problem, index, memory.A[c], self.W[c], self.bias, self.passes, INNER_EPS,
                Shrinking(n, np.inf, -np.inf), self.rng_state, sigma,
            )  # fmt: skip
            self.stats["visits"] += int(out[0]) * n

    def _certify(self):
        k = self.k
        if self.sums_snap is None:  # a part with no rows
            self.round_sums = np.zeros((k, 3))
        else:
            self.round_sums = np.column_stack([self.loss_sum, self.sums_snap])
        self.sums_snap = None


class StreamingPart:
    """A CoCoA+ part read from its source every round (see the module docstring).

    ``update`` after a round is ``(dW, sums)`` as :func:`~.cluster.cocoa_round`
    gives it; ``stats`` holds the local trainer's counters (``memory_bytes``,
    the most its row memory allocated, among them).
    """

    out_of_core = True

    def __init__(self, source, plan, sigma, n_features):
        block_bytes = plan.block_bytes if plan.solver in ("sbm", "bm") else max(plan.cache_bytes, 1)
        self.plan = plan.replace(solver="sbm", block_bytes=block_bytes, alpha_store="memory")
        self.source, self.sigma, self.n_features = source, float(sigma), n_features
        self.store = AlphaStore(self.plan.n_problems)
        self.trainer = LocalBlockTrainer(source, self.plan, self.store, sigma)
        self.row_ids = self.prints = None
        self.version = 0
        self.update = None
        self._lock = threading.Lock()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def stats(self):
        return dict(self.trainer.stats)

    def run_round(self, W, version):
        """One round from the broadcast ``W``: one read, SBM on the local subproblem; ``(dW, sums)``."""
        with self._lock:
            self._check(version)
            plan, trainer = self.plan, self.trainer
            trainer.W[:] = W
            trainer.done = False
            with (
                synchronous(),
                Reader(
                    self.source, prefetch=plan.prefetch, max_passes=self.version + 1, shuffle=plan.shuffle,
                    seed=plan.seed, start_pass=self.version, retries=plan.retries, row_ids=self.row_ids,
                    prints=self.prints, read_timeout=plan.read_timeout,
                ) as reader,
            ):  # fmt: skip
                self.row_ids, self.prints = reader.row_ids, reader.prints
                trainer.run(reader)
            trainer.reader = None  # a thread: never pickled with the part
            self.version += 1
            self.update = ((trainer.W - W) / self.sigma, trainer.round_sums)
            return self.update

    def weights(self):
        """``(sum_i alpha_i y_i [x_i, b] per problem, version)``: the part's exact share of ``W``
        (one read of its partitions; none before its first round), and the version its next round
        must name (one more than before: a round started before this call fails)."""
        with self._lock:
            W = np.zeros((self.plan.n_problems, self.n_features + 1))
            if self.version == 0:  # alpha = 0; a round started before this must still not run
                self.version = 1
                return W, 1
            memory = self.trainer.memory
            if memory is not None:
                memory.write_back(self.store)
            alpha = self.store.alpha
            with synchronous():
                for p in range(self.source.n_partitions):
                    block = self.source.load(p)
                    if block.n_rows == 0:
                        continue
                    ids = self.row_ids.ids(block.partition, block.n_rows)
                    y_pm, _ = encode_block(self.plan, block)
                    rows = kernel_rows(block.X, self.plan.feature_map)  # CSR for a feature map
                    for c in range(W.shape[0]):
                        a = np.ascontiguousarray(alpha[c, ids])
                        add_weighted_rows(rows, y_pm[c], a, W[c], self.plan.bias)
            self.version += 1  # a round started before this read must not change alpha after it
            return W, self.version

    def _check(self, version):
        if version != self.version:
            raise StaleRound(
                f"a CoCoA+ round for version {version} of a part now at version {self.version}: "
                "the task was repeated or abandoned, and the part is left as it was."
            )

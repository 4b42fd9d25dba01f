"""A CoCoA+ part on its worker: its rows and dual variables, and its local rounds.

Each round a part starts from the broadcast ``w`` and solves CoCoA+'s local subproblem (Ma,
Smith, Jaggi et al. 2015, with ``sigma'``): a coordinate step on row ``i`` uses the gradient
``y_i v.x_i - 1 + D_ii alpha_i`` and the curvature ``sigma' ||[x_i, b]||^2 + D_ii``, and adds
``sigma' delta y_i x_i`` to the local ``v`` (:func:`~...kernels.dcd.dcd_passes` with
``sigma``).  The part's change of ``w`` is ``(v - w) / sigma'``, and the certificate's sums at
``w`` (loss sum, ``sum alpha``, ``sum D alpha^2``) come from the same round, as a single
machine's pass certificate does (:meth:`~..dual.trainer.PassCertifier._snapshot`).

:func:`load_part` reads a part's partitions once.  A part whose rows fit in ``cache_bytes`` is
held in its worker's memory (:class:`Part`) and every round runs ``inner_iter`` DCD passes on
it (:func:`cocoa_round`); the task copies the dual variables, so Dask may retry it.  A larger
part is a :class:`StreamingPart`: each round is one read of the part's partitions by the block
trainer a single machine runs (:class:`~..dual.sbm.BlockTrainer`, Chang & Roth 2011) on the local
subproblem, so the cluster trains on more rows than its memory holds.  What the worker keeps
between rounds is what a single machine's SBM keeps between reads: the alpha of every row of
the part (:class:`~..dual.alpha_store.AlphaStore`), and the informative rows in a cache of
``cache_bytes``; a round's row memory is the cache plus one block of ``block_bytes`` (with
``solver="streamsvm"``, ``cache_bytes``), as on one machine.

A streamed part's state changes in place (its rows are not copied every round).  A round names
the part's ``version`` (rounds it has done): a task that repeats a round the part has already
done, or runs after the client rebuilt ``w`` from the part's alpha (:meth:`StreamingPart.weights`),
fails instead of changing it twice.
"""

import sys

import numpy as np
import scipy.sparse as sp

from ...kernels.dcd import ProblemArrays, Shrinking, dcd_passes, row_sqnorms
from ...kernels.losses import upper_and_diag_arrays
from ...kernels.objective import add_weighted_rows, weighted_loss_sum
from ...kernels.rng import make_state
from ..data.reader import Reader, source_prints
from ..dual.alpha_store import AlphaStore
from ..dual.sbm import INNER_EPS, BlockTrainer
from ..dual.schedules import TRAINERS
from ..plan.layout import as_kernel_rows, kernel_rows
from ..plan.losses import loss_by_code
from ..plan.problem import class_index, column_max_abs, encode_block, signs_and_costs
from ..plan.sizes import stored_bytes
from .changes import Change, touched_columns, widened
from .runtime import HeldState, cancel_check, synchronous


class Part:
    """A part's rows, labels, costs and dual variables, kept in its worker's memory.

    ``Y``, ``cost``, ``upper``, ``diag``, ``qd`` and ``alpha`` are
    ``(problems, rows)``; ``qd`` holds ``sigma ||[x_i, b]||^2 + D_ii``.
    """

    def __init__(self, rows, Y, cost, loss, bias, sigma, n_features):
        loss = loss_by_code(loss)  # the kernels' code (a bool reads as the old flag)
        self.rows, self.Y, self.cost = rows, Y, cost
        self.loss, self.bias, self.sigma, self.n_features = loss, bias, sigma, n_features
        self.upper, self.diag = upper_and_diag_arrays(cost, loss.code)
        sq = np.empty(cost.shape[1])
        row_sqnorms(rows, bias, sq)
        self.qd = sigma * sq[None, :] + self.diag
        self.alpha = np.zeros_like(cost)
        self.update = None
        self.cols = touched_columns(rows, bias, n_features)

    @property
    def n_rows(self):
        return self.cost.shape[1]

    def with_alpha(self, alpha, update):
        new = object.__new__(Part)
        new.__dict__.update(self.__dict__)
        new.alpha, new.update = alpha, update
        return new


def load_part(packed, plan, sigma, n_features):
    """Read a part's partitions on this worker: a :class:`Part` with ``alpha = 0``, or, once they
    pass ``plan.cache_bytes`` (counted as the row cache stores rows), a :class:`StreamingPart`
    that reads them every round."""
    source = packed.source()
    first = source_prints(source)  # the first read, which a streaming part's later reads must match
    blocks, held, top = [], 0, None
    stop_if_cancelled = cancel_check()  # a failed fit's read stops at the next partition
    with synchronous():
        for p in range(source.n_partitions):
            stop_if_cancelled()
            block = source.load(p)
            first.check(block)
            if block.n_rows > 0:  # the columns' largest |x|: the scaling advice of a fit above tol
                seen = column_max_abs(block.X)
                top = seen if top is None else np.maximum(top, seen)
            held += _stored(block, plan.n_problems)
            if held > plan.cache_bytes:
                del blocks, block
                part = StreamingPart(source, plan, sigma, n_features)
                part.feature_max = top  # of the partitions read before it streamed
                return part
            if block.n_rows > 0:
                blocks.append(block)
    if not blocks:
        empty = np.zeros((plan.n_problems, 0))
        nothing = as_kernel_rows(np.zeros((0, 1)))
        return Part(nothing, empty, empty, plan.loss_code, 0.0, sigma, n_features)
    part = _held_part(blocks, plan, sigma, n_features)
    part.feature_max = top
    return part


def part_feature_max(part):
    """Each column's largest |x| over the rows a part read when it was loaded (None: no rows)."""
    return getattr(part, "feature_max", None)


def _held_part(blocks, plan, sigma, n_features):
    """The :class:`Part` of the rows of ``blocks``, held in memory."""
    if any(sp.issparse(b.X) for b in blocks):
        X = sp.vstack([sp.csr_matrix(b.X) for b in blocks], format="csr")
    else:
        X = np.vstack([b.X for b in blocks])
    y = np.concatenate([b.y for b in blocks])
    weight = np.concatenate([b.sample_weight for b in blocks])
    y_index = class_index(
        plan.classes, y,
        lambda label: (
            f"label {label!r} is not among the classes {plan.classes.tolist()} counted before training; "
            "the collection changed between reads."
        ),
    )  # fmt: skip
    rows = kernel_rows(X, plan.feature_map)
    Y, cost = signs_and_costs(plan, y_index, weight)
    return Part(rows, Y, cost, plan.loss_code, plan.bias, sigma, n_features)


def _stored(block, k):
    """Bytes ``block``'s rows take in a row cache (:func:`~..plan.sizes.stored_bytes`)."""
    X = block.X
    if sp.issparse(X):
        return stored_bytes(block.n_rows, X.nnz, k, X.dtype, True)
    return stored_bytes(block.n_rows, X.size, k, X.dtype, False)


def local_round(part, W, passes, seed, version):
    """A part's CoCoA+ round at ``W``: :func:`cocoa_round` for a part in memory, one read of its
    partitions for a :class:`StreamingPart` (at its ``version``); the part after it."""
    if isinstance(part, StreamingPart):
        part.run_round(W, version)
        return part
    return cocoa_round(part, W, passes, seed)


def cocoa_round(part, W, passes, seed):
    """Certificate sums of ``part`` at ``W``, then ``passes`` local DCD passes: the new part.

    ``part.update`` of the result is ``(dW, sums)``: the part's change of
    ``W`` and, per problem, ``(loss sum at W, sum alpha, sum D alpha^2)``.
    """
    W = widened(W, part.n_features + 1)
    k = W.shape[0]
    alpha = part.alpha.copy()  # the input part stays as it was: the task can be retried
    sums = np.zeros((k, 3))
    dW = np.zeros_like(W)
    for c in range(k):
        if part.n_rows == 0:
            continue
        w = np.ascontiguousarray(W[c], dtype=np.float64)
        sums[c, 0] = weighted_loss_sum(part.rows, part.Y[c], part.cost[c], w, part.bias, part.loss.code)
        sums[c, 1:] = part.loss.dual_sums(alpha[c], part.upper[c], part.diag[c])
        index = np.flatnonzero(part.cost[c] > 0.0).astype(np.int64)
        v = w.copy()
        a = alpha[c].copy()
        problem = ProblemArrays(part.Y[c], part.upper[c], part.diag[c], part.qd[c], part.loss.code)
        shrinking = Shrinking(index.shape[0], np.inf, -np.inf)
        rng_state = make_state(seed + c)
        dcd_passes(part.rows, problem, index, a, v, part.bias, passes, 0.0, shrinking, rng_state, part.sigma)
        alpha[c] = a
        dW[c] = (v - w) / part.sigma
    change = dW if part.cols is None else Change(part.cols, dW[:, part.cols], dW.shape[1])
    return part.with_alpha(alpha, (change, sums))


def update_of(part):
    """A part's ``(change of W, certificate sums, bytes moved between workers so far)``: a leaf
    of CoCoA+'s tree."""
    change, sums = part.update
    return change, sums, 0


def touched_of(part):
    """A part's :func:`~.changes.touched_columns` (None for a part read every round: it fetches
    all of ``w``)."""
    return getattr(part, "cols", None)


def part_weights(part):
    """``(sum_i alpha_i y_i [x_i, b] per problem, version)`` of a part: its exact share of ``W``, and
    the version its next round must name (:class:`StreamingPart`; 0 in memory)."""
    if isinstance(part, StreamingPart):
        return part.weights()
    W = np.zeros((part.cost.shape[0], part.n_features + 1))
    for c in range(W.shape[0]):
        if part.n_rows:
            add_weighted_rows(part.rows, part.Y[c], part.alpha[c], W[c], part.bias)
    return W, 0


def part_stats(part):
    """``cluster_parts_``'s entries of a CoCoA+ part: whether it is read every round, and the
    most bytes its row memory allocated (the rows themselves, for a part held in memory)."""
    if isinstance(part, StreamingPart):
        return {"out_of_core": True, "memory_bytes": int(part.stats["memory_bytes"])}
    arrays = part.rows if isinstance(part.rows, tuple) else (part.rows,)
    held = sum(a.nbytes for a in arrays if isinstance(a, np.ndarray))
    return {"out_of_core": False, "memory_bytes": int(held)}


# -- a part larger than its cache_bytes, read every round --------------------------------------


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
            y, upper, diag, qd, code = memory.problem(c, self.loss.code)
            # qd holds ||[x_i, b]||^2 + D_ii; the local subproblem's curvature scales the first term.
            problem = ProblemArrays(y, upper, diag, sigma * (qd - diag) + diag, code)
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


class StreamingPart(HeldState):
    """A CoCoA+ part read from its source every round (see the module docstring).

    ``update`` after a round is ``(dW, sums)`` as :func:`cocoa_round` gives it; ``stats`` holds
    the local trainer's counters (``memory_bytes``, the most its row memory allocated, among them).
    """

    out_of_core = True

    def __init__(self, source, plan, sigma, n_features):
        # The block trainer's schedules (SBM, BM) bring their blocks' bytes; StreamSVM's is its cache.
        blocks = TRAINERS.get(plan.solver) is BlockTrainer
        block_bytes = plan.block_bytes if blocks else max(plan.cache_bytes, 1)
        self.plan = plan.replace(solver="sbm", block_bytes=block_bytes, alpha_store="memory")
        self.source, self.sigma, self.n_features = source, float(sigma), n_features
        self.store = AlphaStore(self.plan.n_problems, loss=self.plan.loss_code)
        self.trainer = LocalBlockTrainer(source, self.plan, self.store, sigma)
        self.row_ids = self.prints = None
        self.version = 0
        self.update = None
        super().__init__()

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
            trainer.on_block = cancel_check()  # a cancelled round stops at its next block
            try:
                with (
                    synchronous(),
                    Reader(
                        self.source, prefetch=plan.prefetch, max_passes=self.version + 1,
                        shuffle=plan.shuffle, seed=plan.seed, start_pass=self.version, retries=plan.retries,
                        row_ids=self.row_ids, prints=self.prints, read_timeout=plan.read_timeout,
                    ) as reader,
                ):  # fmt: skip
                    self.row_ids, self.prints = reader.row_ids, reader.prints
                    trainer.run(reader)
            finally:
                trainer.reader = None  # a thread: never pickled with the part
                trainer.on_block = None  # bound to this task's worker: never pickled either
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
            stop_if_cancelled = cancel_check()
            with synchronous():
                for p in range(self.source.n_partitions):
                    stop_if_cancelled()
                    block = self.source.load(p)
                    prints = self.prints if self.prints is not None else source_prints(self.source)
                    prints.check(block)  # the rows its rounds trained on
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

"""Truncated Newton on a cluster (``dual=False`` on wide data): Hessian-vector products summed in a
tree on the workers, the conjugate gradient kept on one of them.

The rows stay where they are read: each part is read once on its worker (:func:`load_part`), its
labels counted there, and held in the worker's memory as a :class:`~..primal.sums.ProductRead`
whose products leave out the Hessian's identity term (the tree's root adds it once).  Every
Newton step is then

1. one evaluation of every part at the point ``w + s`` (:func:`evaluate`): the loss, ``sum alpha``,
   ``v = sum alpha_i y_i x_i``, the trial losses along ``s`` and the diagonal of the Hessian, sums
   added up the tree (:func:`~.tree.tree_sum`) as in memory, so the gradient, the line search and
   the certificate are the data's, exact;
2. a preconditioned conjugate gradient (:class:`~..primal.newton.ConjugateGradient`, the in-memory rule)
   whose state lives on the root's worker: for each product the parts fetch the direction ``p``
   from it (``d + 1`` numbers each), multiply by their active rows, and the products go up the
   tree; the root takes the step and sends the client three numbers.  Per product, at most
   ``2 K (d + 1)`` floats move between workers and a constant number through the client, and the
   number of products does not grow with the parts (the sums are the data's).

A sparse penalty's step minimises the read's model on its free weights: their block of the Hessian
formed by the parts and added up the tree where at most :data:`~..primal.sums.CG_WIDTH` are free;
beyond, descended on the root's worker by the columns of the parts' active rows, gathered there,
where they are few enough (:func:`gathers`); else the damped orthant steps of the products above.

The softmax model (``multi_class="multinomial"``, or ``"auto"`` from three classes) wider than the
reads' formed Hessian takes the same steps (:func:`softmax_products`): each part holds its rows as
:class:`~..primal.multinomial.SoftmaxProblem`, an evaluation adds up the parts'
:class:`~..primal.multinomial_reads.SoftmaxSums` (:func:`~..primal.multinomial_reads.problem_sums`:
with the Hessian's diagonal, not the Hessian), the
conjugate gradient's products are ``K (d + 1)`` numbers a part, and the loop and certificate are
:func:`~..primal.multinomial_reads.newton_reads`' (the step's dual point from one more product, of
the step taken).  Its parts are counted as they are read, so ``"auto"`` chooses the softmax model or
the binary problem's steps after that one read.

A worker lost during a step is survived: the parts it held are read again on live workers and
the step is made again from the same point, so the fit ends with the model of a fit never
interrupted (the sums are added in the same order), or with an error that names the lost worker.
A part read again must give the rows of its first read: its fingerprints, kept on the client, go
with the new read (:func:`~.parts.part_source`), and a partition that changed stops the fit naming it.
"""

import copy
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..data.labels import count_labels_of, merge_label_counts
from ..data.spill import remove_stale_spills
from ..primal.newton import held_on
from ..primal.penalties import penalty_of
from ..primal.sums import ProductRead, augmented_rows, kernel_columns, rows_nbytes
from ..store.archive import owned_prefix
from .moments import scaled_parts
from .parts import part_source, parts_of, read_prints
from .runtime import WorkerLost, cancel_check, gather, live_workers, no_workers, submit, synchronous, wait
from .tree import add_softmax_sums, add_sums, tree_sum

# Lost workers a fit survives before it gives up with an error naming them.
MAX_RECOVERIES = 3


class PartRows:
    """A part's rows on its worker: ``X`` (CSR or dense, float64, a feature map's features where the
    plan has one), raw labels ``y``, weights, per partition its label counts, and the read's
    ``rows``, ``skipped``, ``bytes``, ``retries``, and its blocks' fingerprints (``prints``,
    :func:`~.parts.read_prints`); :func:`encode_part` makes its :class:`ProductRead`."""

    def __init__(self, X, y, weight, counts, totals, prints=None):
        self.X, self.y, self.weight, self.counts, self.prints = X, y, weight, counts, prints
        self.spilled = isinstance(X.data if sp.issparse(X) else X, np.memmap)
        self.rows, self.skipped, self.bytes, self.retries = totals
        self.read = None

    @property
    def nbytes(self):
        """Bytes held in memory (a spilled part's rows are on disk), for Dask's memory accounting."""
        if self.read is not None:
            return 0 if self.read.spilled else self.read.nbytes
        return (0 if self.spilled else rows_nbytes(self.X)) + self.y.nbytes + self.weight.nbytes


def load_rows(packed, plan, n_features, prints=None):
    """One read of a part on its worker: a :class:`PartRows` (labels not yet encoded), its rows in
    memory, or in a worker-local spill (:class:`RowSpill`) once they pass :func:`part_budget`.
    ``prints``: the fingerprints of the part's first read, which a part read again (after a lost
    worker) must match (:func:`~.parts.part_source`)."""
    from ..primal.reads import read_once
    from ..primal.sums import Sums

    totals = Sums.zeros(0, 1)
    X, y, weight, counts = [], [], [], []
    budget, held, spill = part_budget(plan), 0, None
    width = n_features if plan.feature_map is None else plan.model_width(n_features)
    stop_if_cancelled = cancel_check()  # a failed fit's read stops at the next block
    source = part_source(packed, prints)
    with synchronous():
        for block in read_once(source, plan, totals):
            stop_if_cancelled()
            counts.append(count_labels_of(block.partition, block.y, block.sample_weight))
            if not block.n_rows:
                continue
            rows = block.X
            if plan.feature_map is not None:  # the map's features, made once (the bias column dropped)
                rows = augmented_rows(rows, 0, rows.shape[0], 1.0, plan.feature_map)[:, :-1]
            rows = (
                sp.csr_matrix(rows, dtype=np.float64) if sp.issparse(rows) else np.asarray(rows, np.float64)
            )
            X.append(rows)
            held += rows_nbytes(rows)
            if budget is not None and held > budget:  # the part's rows go to this worker's disk
                spill = spill or RowSpill(plan.spill_dir, width, sp.issparse(rows))
                spill.add(X)
                X, held = [], 0
            y.append(np.asarray(block.y).ravel())
            weight.append(np.asarray(block.sample_weight, dtype=np.float64))
    if spill is not None:
        spill.add(X)
        X = spill.rows()
    elif not X:
        X = np.zeros((0, width))
    elif any(sp.issparse(x) for x in X):
        X = sp.vstack([sp.csr_matrix(x) for x in X], format="csr")
    else:
        X = np.vstack(X)
    y = np.concatenate(y) if y else np.zeros(0)
    weight = np.concatenate(weight) if weight else np.zeros(0)
    totals = (totals.rows, totals.skipped, totals.bytes, totals.retries)
    return PartRows(X, y, weight, counts, totals, read_prints(source))


# The share of a worker's memory limit a part's rows may take before they go to its disk (without
# cache_bytes): the products, the active rows copied out and Dask's own use need the rest.
MEMORY_SHARE = 0.5


def part_budget(plan):
    """Bytes of rows a part holds in memory: ``cache_bytes``, else :data:`MEMORY_SHARE` of this
    worker's memory limit; None (no limit) outside a worker or without either."""
    if plan.cache_bytes is not None:
        return int(plan.cache_bytes)
    worker = this_worker()
    limit = None if worker is None else worker.memory_manager.memory_limit
    return int(MEMORY_SHARE * limit) if limit else None


def this_worker():
    """The Dask worker this runs on, or None outside one."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


# A worker spill directory's name: the stem, its owner's host and pid, random (as one machine's spill).
PART_STEM = "dask-streamsvm-part-"


class RowSpill:
    """A part's rows in files on its worker's disk (``spill_dir``, else the system's temporary
    directory), read back as memory maps: CSR (values, column indices, row offsets) or dense rows.
    The files are removed when the rows are released (their maps garbage-collected).

    A worker killed before (SIGKILL, the OOM killer) cannot remove its files: the directory's name
    carries its owner's host and pid (:data:`PART_STEM`, :func:`~..store.archive.owned_prefix`),
    and the next part spill on the same machine, in the same directory, removes those whose
    process is gone (:func:`~..data.spill.remove_stale_spills`), as one machine's spill does."""

    def __init__(self, spill_dir, width, sparse):
        parent = tempfile.gettempdir() if spill_dir is None else os.fspath(spill_dir)
        remove_stale_spills(parent, PART_STEM)
        self.path = Path(tempfile.mkdtemp(prefix=owned_prefix(PART_STEM), dir=parent))
        self.width, self.sparse, self.n_rows, self.nnz = width, sparse, 0, 0
        self.offsets = [np.zeros(1, dtype=np.int64)]
        self.files = {name: open(self.path / name, "wb") for name in ("data", "indices")}  # noqa: SIM115

    def add(self, blocks):
        for X in blocks:
            if self.sparse:
                X = sp.csr_matrix(X)
                self.files["data"].write(np.ascontiguousarray(X.data, np.float64).tobytes())
                self.files["indices"].write(np.ascontiguousarray(X.indices, np.int32).tobytes())
                self.offsets.append(self.nnz + X.indptr[1:].astype(np.int64))
                self.nnz += X.nnz
            else:
                self.files["data"].write(np.ascontiguousarray(X, np.float64).tobytes())
            self.n_rows += X.shape[0]

    def rows(self):
        import shutil
        import weakref

        for f in self.files.values():
            f.close()
        if self.n_rows == 0:
            shutil.rmtree(self.path, ignore_errors=True)
            return sp.csr_matrix((0, self.width)) if self.sparse else np.zeros((0, self.width))
        if self.sparse and self.nnz == 0:
            shutil.rmtree(self.path, ignore_errors=True)
            return sp.csr_matrix((self.n_rows, self.width))
        if self.sparse:
            anchor = np.memmap(self.path / "data", dtype=np.float64, mode="r", shape=(self.nnz,))
            indices = np.memmap(self.path / "indices", dtype=np.int32, mode="r", shape=(self.nnz,))
            indptr = np.concatenate(self.offsets)
            if self.nnz < np.iinfo(np.int32).max:  # scipy's kernels want one index type
                indptr = indptr.astype(np.int32)
            else:  # past int32's offsets: the indices in memory as int64 (the values stay mapped)
                indices = np.asarray(indices, dtype=np.int64)
            X = sp.csr_matrix((self.n_rows, self.width))
            X.data, X.indices, X.indptr = anchor, indices, indptr  # the maps themselves, not copies
        else:
            shape = (self.n_rows, self.width)
            X = anchor = np.memmap(self.path / "data", dtype=np.float64, mode="r", shape=shape)
        weakref.finalize(anchor, shutil.rmtree, self.path, True)  # views of it keep it alive
        return X


def encode_part(part, plan):
    """``part`` with its :class:`ProductRead` (the plan's labels set: signs and costs per problem);
    its raw rows are then held by the read only."""
    from ..plan.problem import class_index

    index = class_index(plan.classes, part.y, lambda label: f"the part has label {label!r}")
    encoded = copy.copy(part)
    encoded.read = ProductRead(
        part.X,
        plan.signs[:, index],
        plan.costs[:, index] * part.weight,
        plan.bias,
        plan.loss_code,
        identity=0.0,
        spilled=part.spilled,
    )
    encoded.X = encoded.y = encoded.weight = None
    return encoded


def part_counts(part):
    """A part's label counts (per partition) and the fingerprints of its read."""
    return part.counts, part.prints


class Evaluated:
    """A part evaluated at a point: its :class:`~..primal.sums.Sums` (with the Hessian's diagonal,
    no identity) and, per problem, the active rows and weights its products use."""

    def __init__(self, read, sums, terms):
        self.read, self.sums, self.terms = read, sums, terms


def evaluate(part, point, todo):
    """``part`` (a :class:`PartRows` with its read) at the points ``W + S`` of ``point``."""
    W, S = point
    read = part.read
    sums, terms = read.evaluate(W, S, todo)
    sums.diagonal = np.array([read.diagonal(X, d) for X, d in terms]).reshape(len(todo), W.shape[1])
    sums.rows, sums.skipped, sums.bytes, sums.retries = part.rows, part.skipped, 0, 0
    return Evaluated(read, sums, terms)


def sums_of(evaluated):
    """A copy of the part's sums (the tree adds into its first operand)."""
    return copy.deepcopy(evaluated.sums)


def part_product(evaluated, j, p):
    """The part's share of ``H p`` for problem ``j`` (without the identity)."""
    X, d = evaluated.terms[j]
    return evaluated.read.product(X, d, p)


def part_gram(evaluated, j, columns):
    """The part's share of the Hessian's block ``H_FF`` on the coordinates ``columns`` for problem
    ``j`` (without the identity: a part's read has none), from those columns of its active rows."""
    X, d = evaluated.terms[j]
    return evaluated.read.columns_gram(X, d, columns)


# A sparse penalty's model on more free weights than their block takes (more than
# :data:`~..primal.sums.CG_WIDTH`) is descended on the root's worker by the columns of every part's active
# rows (:meth:`TruncatedNewton.columns_direction`) where those rows are at most COLUMNS_SHARE times the
# largest part's rows in number and, on the free weights, in bytes, at most ``cache_bytes``, and
# ROOM_COPIES times them at most the root's room (:func:`gather_room`: the rows gathered, stacked, and
# their columns); else the damped orthant steps of the Hessian's products.  The rows' number is known
# on the client after the read: where they are too many, no task is made.  The model's sweeps
# (:data:`~..primal.penalties.COLUMNS_SWEEPS`, 10) then cost at most twenty passes over one part's rows
# on one worker, where the products' steps took 4-5 products a step (a pass of every part in parallel
# and three rounds of tasks each) and 3.6-5.8 times the steps.  Measured on a LocalCluster of 2
# single-thread workers, tol 1e-3 (2026-12-01): on benchmarks/bench_l1_wide_cluster.py's 50,000 x
# 20,000 text rows at C = 1, every row active or more than half of them, LinearSVC(penalty="l1") took
# 25.3 s (83 steps, 388 products) at a share of 1 and 6.2 s (23 steps, all gathered) at 2;
# LogisticRegression(l1_ratio=1) 8.3 s (35 steps) and 2.4 s (9), l1_ratio=0.5 6.1 s (25) and 1.3 s (4).
# On 4,000 x 2,000 sparse rows (15 nonzeros a row) LinearSVC(penalty="l1", C=10), 1,572 rows active at
# the end: the products' steps alone stood at a gap of 5.3e-3 after 2,000 steps and 460-533 s; gathered
# (a share of 1), 186 steps and 13-15 s to 9.7e-4 (198 steps in memory).  The logistic loss's rows are
# all active: on three equal parts or more, more than twice the largest part's.
COLUMNS_SHARE = 2.0
ROOM_COPIES = 3


def gather_room(plan):
    """Bytes of active rows the root may gather (:data:`COLUMNS_SHARE`): ``cache_bytes``, and on a
    worker with a memory limit the room below its spill target (Dask's ``distributed.worker.memory.
    target`` of the limit, less the process's memory now) over :data:`ROOM_COPIES`; None: no limit."""
    import dask

    limits = [] if plan.cache_bytes is None else [int(plan.cache_bytes)]
    worker = this_worker()
    limit = None if worker is None else worker.memory_manager.memory_limit
    if limit:
        target = dask.config.get("distributed.worker.memory.target", 0.6) or 1.0
        used = worker.monitor.get_process_memory()
        limits.append(max(int(target * limit) - int(used), 0) // ROOM_COPIES)
    return min(limits) if limits else None


def gathers(active, largest, room=None):
    """Whether the parts' active rows are gathered on the root: ``active`` and ``largest`` are ``(rows,
    bytes)`` of the active rows (on the free weights) and of the largest part's rows, ``room``
    :func:`gather_room`'s bytes (None: no limit).  The active rows must be at most
    :data:`COLUMNS_SHARE` of the largest part's in number and in bytes, and their bytes at most the
    room.  ``active`` bytes None: their number alone is checked (before they are counted)."""
    (rows, nbytes), (most_rows, most_bytes) = active, largest
    if rows > COLUMNS_SHARE * most_rows:
        return False
    return nbytes is None or (nbytes <= COLUMNS_SHARE * most_bytes and (room is None or nbytes <= room))


def part_active_columns(evaluated, j, free):
    """The part's active rows for problem ``j`` (``D_ii > 0``) on the features among ``free`` (a
    sparse penalty's free weights, the bias's last), the other features' values left out: a CSR
    matrix of the part's width and the rows' ``D_ii``, for :func:`root_columns_direction`."""
    X, d = evaluated.terms[j]
    rows = np.flatnonzero(d > 0.0)
    if rows.size < X.shape[0]:  # (where every row is active, no copy: the columns' cut makes one)
        X, d = X[rows], d[rows]
    features = free[free < X.shape[1]]
    on_free = sp.csr_matrix(X[:, features] if sp.issparse(X) else np.take(X, features, axis=1))
    indices = features[on_free.indices]
    return sp.csr_matrix((on_free.data, indices, on_free.indptr), shape=(rows.size, X.shape[1])), d


def part_active_nbytes(evaluated, j, free):
    """Bytes of the part's :func:`part_active_columns` (an upper bound for dense rows: every value of
    the free features'), counted without copying them."""
    X, d = evaluated.terms[j]
    active = d > 0.0
    n = int(active.sum())
    features = free[free < X.shape[1]]
    if not sp.issparse(X):
        return n * (features.size * 12 + 12) + 4
    mask = np.zeros(X.shape[1], dtype=bool)
    mask[features] = True
    counted = np.concatenate([[0], np.cumsum(mask[X.indices])])  # free values before each position
    values = int((counted[X.indptr[1:]] - counted[X.indptr[:-1]])[active].sum())
    return values * (X.data.itemsize + X.indices.itemsize) + (n + 1) * X.indptr.itemsize + n * d.itemsize


def part_rows_size(part):
    """``(rows, bytes)`` of the rows a part's read holds (on disk or in memory)."""
    return part.read.X.shape[0], rows_nbytes(part.read.X)


class GatheredTerms:
    """The active rows of every part, stacked on the root's worker, as
    :meth:`~..primal.penalties.Sparse.columns_direction` reads them (an
    :class:`~..primal.sums.ActiveTerms`' ``columns()`` and ``diagonal``)."""

    def __init__(self, columns, D, diagonal):
        self._columns, self.D, self.diagonal = columns, D, diagonal

    def columns(self):
        return self._columns, self.D


def root_columns_direction(penalty, w, g, diagonal, shift, bias, *blocks):
    """``(s, sweeps)``: the sparse penalty's model on its free weights descended by the columns of
    every part's active rows (``blocks``, :func:`part_active_columns`), as in memory."""
    rows = sp.vstack([rows for rows, _ in blocks], format="csr")
    D = np.concatenate([d for _, d in blocks])
    terms = GatheredTerms(kernel_columns(rows, bias), D, diagonal)
    s = penalty.columns_direction(w, g, terms, shift)
    return s, penalty.sweeps


def point_of(W, S):
    return W, S


def kept(value):
    """``value`` held on a worker, for the parts to fetch from there."""
    return value


def cg_start(g, diagonal):
    from ..primal.newton import ConjugateGradient

    return ConjugateGradient(g, diagonal)


def cg_direction(cg):
    return cg.p


def cg_take(cg, parts, identity=1.0, free=None):
    """The next state: a copy of ``cg`` stepped with ``H p = identity p + parts`` (the penalty's part
    of the Hessian, added here: the identity, or the softmax model's penalised columns), kept on the
    coordinates ``free`` where a sparse penalty's orthant holds some at zero
    (:func:`~..primal.newton.held_on`)."""
    following = copy.deepcopy(cg)
    return following.take(held_on(identity * cg.p + parts, free))


def cg_status(cg):
    return cg.done, cg.steps


def cg_result(cg):
    return cg.result()


def _nbytes(sums):
    """Bytes of the arrays a :class:`~..primal.sums.Sums` carries up the tree."""
    held = (sums.loss, sums.alpha, sums.v, sums.active, sums.trial, sums.longer, sums.diagonal)
    return int(sum(a.nbytes for a in held if a is not None))


def _add_arrays(first, second):
    return first + second


class _Operator:
    """The Hessian of problem ``j`` at the last evaluated point, for :class:`~..primal.newton._Problem`:
    ``solve(g, free, shift)`` is the conjugate gradient on the cluster (of ``H + shift I``)."""

    def __init__(self, driver, j, diagonal):
        self.driver, self.j, self.diagonal = driver, j, diagonal

    def solve(self, g, free=None, shift=0.0):
        return self.driver.conjugate_gradient(self.j, g, self.diagonal, free, shift)

    def gram(self, columns):
        """``H_FF``: the parts' blocks on ``columns`` added up the tree, the identity added once."""
        return self.driver.free_gram(self.j, columns)

    def columns_direction(self, penalty, w, g, shift=0.0):
        """The sparse penalty's model on its free weights descended by the rows' columns on the root's
        worker (:meth:`TruncatedNewton.columns_direction`), or None where the active rows are too many
        to gather (:func:`gathers`)."""
        return self.driver.columns_direction(self.j, penalty, w, g, self.diagonal, shift)


# -- the softmax model's parts (multi_class="multinomial" wider than the reads' formed Hessian) -------


def encode_softmax_part(part, problem):
    """``part`` with its :class:`~..primal.multinomial.SoftmaxProblem` for the softmax model
    ``problem`` (its classes and each class's cost factor); its raw rows are then held by it."""
    from ..plan.problem import class_index
    from ..primal.multinomial import SoftmaxProblem

    plan = problem.plan
    index = class_index(plan.classes, part.y, lambda label: f"the part has label {label!r}")
    cost = problem.class_cost[index] * part.weight
    X, spilled = part.X, part.spilled
    if not np.all(cost > 0):  # rows of no cost add nothing
        rows = np.flatnonzero(cost > 0)
        X, index, cost, spilled = X[rows], index[rows], cost[rows], False
    encoded = copy.copy(part)
    K = plan.classes.shape[0]
    fit_intercept = problem.fit_intercept
    encoded.read = SoftmaxProblem(X, index, cost, K, fit_intercept, spilled=spilled)
    encoded.X = encoded.y = encoded.weight = None
    return encoded


def softmax_evaluate(part, point, metric):
    """``part`` (its :class:`~..primal.multinomial.SoftmaxProblem`) at the point ``W``: an
    :class:`Evaluated` whose sums are ``(sums, counts)`` and whose terms its probabilities."""
    from ..primal.multinomial_reads import problem_sums
    from ..primal.sums import Sums

    W, _ = point
    P, sums = problem_sums(part.read, W, metric, hessian=False)
    counts = Sums.zeros(0, 0)
    counts.rows, counts.skipped = part.rows, part.skipped
    return Evaluated(part.read, (sums, counts), P)


def softmax_product(evaluated, j, p):
    """The part's share of the softmax Hessian's product with ``p`` (flat, class-major; the penalty
    left out)."""
    P = evaluated.terms
    return evaluated.read.loss_product(P, p.reshape(P.shape[1], -1)).ravel()


def softmax_products(driver, plan, n_features, start, counted, on_pass, clock_start):
    """The softmax model of ``plan`` (labels counted) by Newton-CG on the parts ``driver`` read
    (:func:`fit_softmax_products`), from ``start``: ``(W, problem)``, a warm start and the
    :class:`~..primal.multinomial_reads.SoftmaxModel` it was solved for (its metric the sample's),
    or None (from ``W = 0``); ``counted``: the records' totals of the reads before."""
    from ..primal.multinomial_reads import first_totals, softmax_model
    from ..primal.sums import Sums

    if start is None:
        problem = softmax_model(plan, n_features, plan.class_totals, products=True)
        W = np.zeros((plan.classes.shape[0], problem.penalised.shape[0]))
    else:
        W, problem = start
    driver.encode_softmax(problem)

    def on_read(records, W):
        driver.mark(records, method="truncated_newton", parts=len(driver.packed))
        return on_pass is not None and on_pass(records, W)

    counted = dict(counted) if counted else first_totals(Sums.zeros(0, 0))
    counted.setdefault("notes", {})
    return fit_softmax_products(driver, problem, W, counted, on_read, clock_start)


def fit_softmax_products(driver, problem, W, counted, on_pass, clock_start):
    """The softmax model ``problem`` by Newton-CG on the parts ``driver`` holds (encoded for it by
    :meth:`TruncatedNewton.encode_softmax`), from ``W``: the loop of
    :func:`~..primal.multinomial_reads.newton_reads`, each of its reads an evaluation of every part
    at a point, each step a conjugate gradient of Hessian products summed up the tree, and the
    certificate's step dual the product of the step taken (one more product)."""
    from ..primal.multinomial_reads import newton_reads

    K, D = W.shape

    def evaluate(point):
        sums, counts = driver.softmax_at(point)
        return sums, counts, {**driver.moved, "products": driver.products}

    def direction(sums, W, G):
        if problem.fit_intercept:  # the gradient has no part along the intercepts' null direction
            G = G.copy()
            G[:, -1] -= G[:, -1].mean()
        s, _ = driver.conjugate_gradient(0, G.ravel(), sums.diagonal.ravel() + driver.identity)
        return s.reshape(K, D), driver.product(0, s).reshape(K, D)

    return newton_reads(evaluate, problem, W, counted, on_pass, clock_start, direction=direction)


class TruncatedNewton:
    """``read`` for :func:`~..primal.newton.solve_primal` on a cluster's parts, with Hessian products.

    ``moved`` counts bytes: ``bytes_sent`` and ``bytes_received`` through the client,
    ``bytes_between_workers`` between workers, and of those ``product_bytes_between_workers``
    for the Hessian products (``products`` of them).
    """

    hessian_products = True

    def __init__(self, client, placement, plan, n_features, clock_start):
        self.client, self.plan, self.n_features = client, plan, n_features
        self.packed = [packed for _, packed in placement.parts]
        self.placed = list(placement.workers)
        self.reads = placement.reads
        self.moved = dict.fromkeys(
            ("bytes_sent", "bytes_received", "bytes_between_workers", "product_bytes_between_workers"), 0
        )
        self.products = 0
        self.recovered = []
        self.clock_start = clock_start
        self.prints = [None] * len(self.packed)  # per part, its first read's fingerprints (:meth:`count`)
        self.encoding = None  # (encode, what it encodes for): encode_part and a plan, or the softmax's
        self.product_task, self.identity = part_product, 1.0  # a part's product; the penalty's part of H
        self.evaluate_point = self._evaluate
        self.parts = [self._load(j) for j in range(len(self.packed))]
        self.evaluated = self.point = None
        self.largest = None  # (rows, bytes) of the largest part's rows (columns_direction)
        self.active = None  # per problem, its active rows at the last evaluated point
        self.columns_directions = 0  # directions from the active rows gathered on the root

    def _load(self, j, encoded=False):
        future = submit(
            self.client, load_rows, self.packed[j], self.plan, self.n_features, self.prints[j],
            worker=self.placed[j],
        )  # fmt: skip
        if encoded and self.encoding is not None:
            encode, target = self.encoding
            future = submit(self.client, encode, future, target, worker=self.placed[j])
        return future

    def mark(self, records, **fields):
        """Each record of the read just made gets ``fields``, and ``recovered``: the workers lost since
        the last read, whose parts were read again (where there were any)."""
        lost = [worker for event in self.recovered for worker in event["lost"]]
        self.recovered = []
        for record in records:
            record.update(fields)
            if lost:
                record["recovered"] = lost

    def count(self):
        """The parts' label counts (per part, per partition), once their one read is done; their
        fingerprints are kept, for a part read again after a lost worker to match."""

        def count():  # of the parts as they are now (a part read again after a loss included)
            counts = [
                submit(self.client, part_counts, f, worker=self.placed[j]) for j, f in enumerate(self.parts)
            ]
            return gather(self.client, counts, self.placed, self.reads)

        counts = self._retrying(count, reload=False)
        self.prints = [prints for _, prints in counts]
        return [part for part, _ in counts]

    def encode(self, plan):
        """The parts' rows encoded for ``plan`` (its labels set); the Hessian's identity term is its
        penalty's ``l2`` (1, or ``1 - l1_ratio`` for the elastic net and 0 for L1)."""
        self.plan, self.encoding = plan, (encode_part, plan)
        self.identity = penalty_of(plan).l2
        self._encode()

    def encode_softmax(self, problem):
        """The parts' rows encoded for the softmax model ``problem``
        (:class:`~..primal.multinomial_reads.SoftmaxModel`): its points are then evaluated by
        :meth:`softmax_at`, its products by :meth:`conjugate_gradient` and :meth:`product`."""
        K = problem.plan.classes.shape[0]
        self.plan, self.problem, self.encoding = problem.plan, problem, (encode_softmax_part, problem)
        self.product_task, self.identity = softmax_product, np.tile(problem.penalised, K)
        self.evaluate_point = self._softmax_evaluate
        self._encode()

    def _encode(self):
        encode, target = self.encoding
        self.parts = [
            submit(self.client, encode, f, target, worker=self.placed[j]) for j, f in enumerate(self.parts)
        ]
        self._retrying(lambda: wait(self.client, self.parts, self.placed), reload=True)

    # -- a Newton read --------------------------------------------------------------------------

    def __call__(self, W, S, todo):
        self.point = (np.array(W), np.array(S), list(todo))
        return self._retrying(self._evaluate, reload=True)

    def _evaluate(self):
        W, S, todo = self.point
        client, placed = self.client, self.placed
        point = submit(client, point_of, W, S, worker=placed[0])
        self.evaluated = [
            submit(client, evaluate, part, point, todo, worker=placed[j]) for j, part in enumerate(self.parts)
        ]
        sums = [submit(client, sums_of, e, worker=placed[j]) for j, e in enumerate(self.evaluated)]
        total = gather(client, [tree_sum(client, sums, placed, add=add_sums)], placed)[0]
        D = W.shape[1]
        moved = self._fanout() * (W.nbytes + S.nbytes) + self._tree_edges() * _nbytes(total)
        self.moved["bytes_between_workers"] += moved
        self.moved["bytes_sent"] += W.nbytes + S.nbytes
        longer = 0 if total.longer is None else total.longer.nbytes
        self.moved["bytes_received"] += total.v.nbytes + total.trial.nbytes + total.diagonal.nbytes + longer
        total.diagonal = total.diagonal + self.identity  # the penalty's part of the Hessian, once
        self.active = total.active
        total.operators = [_Operator(self, j, total.diagonal[j].reshape(D)) for j in range(len(todo))]
        return total

    def softmax_at(self, W):
        """The softmax model's ``(sums, counts)`` at ``W``: every part's
        :class:`~..primal.multinomial_reads.SoftmaxSums` (with the Hessian's diagonal, not the
        Hessian) added up the tree, and the rows they hold (a :class:`~..primal.sums.Sums`)."""
        self.point = np.array(W)
        return self._retrying(self._softmax_evaluate, reload=True)

    def _softmax_evaluate(self):
        W, client, placed = self.point, self.client, self.placed
        point = submit(client, point_of, W, None, worker=placed[0])
        metric = self.problem.metric
        self.evaluated = [
            submit(client, softmax_evaluate, part, point, metric, worker=placed[j])
            for j, part in enumerate(self.parts)
        ]
        sums = [submit(client, sums_of, e, worker=placed[j]) for j, e in enumerate(self.evaluated)]
        total = gather(client, [tree_sum(client, sums, placed, add=add_softmax_sums)], placed)[0]
        summed = total[0]
        self.moved["bytes_between_workers"] += self._fanout() * W.nbytes + self._tree_edges() * sum(
            a.nbytes for a in (summed.gradient, summed.diagonal, summed.targets, summed.shift_rows)
        )
        self.moved["bytes_sent"] += W.nbytes
        self.moved["bytes_received"] += summed.gradient.nbytes + summed.diagonal.nbytes
        return total

    def product(self, j, p):
        """The parts' products with ``p`` at the last evaluated point, added up the tree (the penalty's
        part left out): for the softmax model, the rows' Hessian times its step."""

        def again():
            if self.evaluated is None:
                self.evaluate_point()
            return self._product(j, p)

        return self._retrying(again, reload=True)

    def _product(self, j, p):
        client, placed = self.client, self.placed
        direction = submit(client, kept, p, worker=placed[0])
        products = [
            submit(client, self.product_task, e, j, direction, worker=placed[i])
            for i, e in enumerate(self.evaluated)
        ]
        self.products += 1
        per_product = (self._fanout() + self._tree_edges()) * p.nbytes
        self.moved["product_bytes_between_workers"] += per_product
        self.moved["bytes_between_workers"] += per_product
        return gather(client, [tree_sum(client, products, placed, add=_add_arrays)], placed)[0]

    def free_gram(self, j, columns):
        """The Hessian's block ``H_FF`` of problem ``j`` at the last evaluated point on the coordinates
        ``columns`` (a sparse penalty's free weights, :meth:`~..primal.penalties.Sparse.free_direction`):
        each part's block from its active rows, added up the tree, ``len(columns)^2`` floats per edge."""

        def again():
            if self.evaluated is None:
                self.evaluate_point()
            return self._free_gram(j, np.asarray(columns))

        return self._retrying(again, reload=True)

    def _free_gram(self, j, columns):
        client, placed = self.client, self.placed
        held = submit(client, kept, columns, worker=placed[0])
        blocks = [
            submit(client, part_gram, e, j, held, worker=placed[i]) for i, e in enumerate(self.evaluated)
        ]
        H = gather(client, [tree_sum(client, blocks, placed, add=_add_arrays)], placed)[0]
        self.moved["bytes_between_workers"] += self._fanout() * columns.nbytes + self._tree_edges() * H.nbytes
        self.moved["bytes_sent"] += columns.nbytes
        self.moved["bytes_received"] += H.nbytes
        H[np.diag_indices_from(H)] += self.identity  # the penalty's part of the Hessian, once
        return H

    def columns_direction(self, j, penalty, w, g, diagonal, shift=0.0):
        """The direction of a sparse penalty's model on its free weights (:func:`~..primal.penalties.
        orthant`) where too many are free for their block (:meth:`free_gram`): every part's active rows
        on the free weights' columns gathered on the root's worker and the model descended there by
        them (:func:`root_columns_direction`, newGLMNET's inner loop, as in memory), where those rows
        are few enough (:func:`gathers`); None where they are not (the caller takes the products'
        steps).  The model's sweeps are ``penalty.sweeps``."""

        def again():
            if self.evaluated is None:
                self.evaluate_point()
            return self._columns_direction(j, penalty, w, g, diagonal, shift)

        return self._retrying(again, reload=True)

    def _columns_direction(self, j, penalty, w, g, diagonal, shift):
        from ..primal.penalties import orthant

        client, placed = self.client, self.placed
        root = placed[0]
        if self.largest is None:
            sizes = [submit(client, part_rows_size, f, worker=placed[i]) for i, f in enumerate(self.parts)]
            sizes = gather(client, sizes, placed)
            self.largest = (max(rows for rows, _ in sizes), max(nbytes for _, nbytes in sizes))
        if not gathers((int(self.active[j]), None), self.largest):
            return None
        free = np.flatnonzero(orthant(w, g, penalty.l1)[0])
        held = submit(client, kept, free, worker=root)
        counted = [
            submit(client, part_active_nbytes, e, j, held, worker=placed[i])
            for i, e in enumerate(self.evaluated)
        ]
        *sizes, room = gather(client, [*counted, submit(client, gather_room, self.plan, worker=root)], placed)
        self.moved["bytes_between_workers"] += self._fanout() * free.nbytes
        self.moved["bytes_sent"] += free.nbytes
        if not gathers((int(self.active[j]), sum(sizes)), self.largest, room):
            return None
        blocks = [
            submit(client, part_active_columns, e, j, held, worker=placed[i])
            for i, e in enumerate(self.evaluated)
        ]
        self.columns_directions += 1
        result = submit(
            client, root_columns_direction, penalty, w, g, diagonal, shift, self.plan.bias, *blocks,
            worker=root,
        )  # fmt: skip
        s, penalty.sweeps = gather(client, [result], placed)[0]
        away = [n for n, worker in zip(sizes, placed, strict=True) if worker != root]
        self.moved["bytes_between_workers"] += sum(away)
        self.moved["bytes_sent"] += w.nbytes + g.nbytes + diagonal.nbytes
        self.moved["bytes_received"] += s.nbytes
        return s

    def conjugate_gradient(self, j, g, diagonal, free=None, shift=0.0):
        """``(s, products)`` for problem ``j`` at the last evaluated point (see the module), on the
        coordinates ``free`` (a mask, or None: all; a sparse penalty's orthant,
        :meth:`~..primal.penalties.Sparse.products_direction`), of the Hessian plus ``shift I`` (a
        sparse penalty's damping, :meth:`~..primal.newton._Problem.damp`)."""

        def solve():
            try:
                return self._conjugate_gradient(j, g, diagonal, free, shift)
            except Exception:
                self.evaluated = None  # made again from the same point after a recovery
                raise

        def again():
            if self.evaluated is None:
                self.evaluate_point()
            return solve()

        return self._retrying(again, reload=True)

    def _conjugate_gradient(self, j, g, diagonal, free=None, shift=0.0):
        client, placed = self.client, self.placed
        root = placed[0]
        identity = self.identity + shift
        state = submit(client, cg_start, g, diagonal + shift, worker=root)
        self.moved["bytes_sent"] += g.nbytes + diagonal.nbytes
        if free is not None:  # held on the root for every step
            free = submit(client, kept, free, worker=root)
            self.moved["bytes_sent"] += g.shape[0]
        per_product = (self._fanout() + self._tree_edges()) * g.nbytes
        done, steps = gather(client, [submit(client, cg_status, state, worker=root)], placed)[0]
        while not done:
            p = submit(client, cg_direction, state, worker=root)
            products = [
                submit(client, self.product_task, e, j, p, worker=placed[i])
                for i, e in enumerate(self.evaluated)
            ]
            summed = tree_sum(client, products, placed, add=_add_arrays)
            state = submit(client, cg_take, state, summed, identity, free, worker=root)
            done, steps = gather(client, [submit(client, cg_status, state, worker=root)], placed)[0]
            self.products += 1
            self.moved["product_bytes_between_workers"] += per_product
            self.moved["bytes_between_workers"] += per_product
            self.moved["bytes_received"] += 16
        s, steps = gather(client, [submit(client, cg_result, state, worker=root)], placed)[0]
        self.moved["bytes_received"] += s.nbytes
        return s, steps

    def _fanout(self):
        """Parts on another worker than the root's (each fetches what the root holds)."""
        return sum(worker != self.placed[0] for worker in self.placed)

    def _tree_edges(self):
        """Edges of :func:`~.tree.tree_sum` between two workers."""
        level, edges = list(self.placed), 0
        while len(level) > 1:
            pairs = [(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            edges += sum(a != b for a, b in pairs)
            level = [a for a, _ in pairs] + level[len(pairs) * 2 :]
        return edges

    # -- lost workers ----------------------------------------------------------------------------

    def _retrying(self, step, reload):
        """``step()``, made again after a lost worker's parts are read again (``reload``)."""
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                return step()
            except Exception as exc:  # noqa: BLE001 - a lost worker shows as many kinds of error
                gone = set(exc.workers) if isinstance(exc, WorkerLost) and exc.workers else self._gone()
                if not gone and not isinstance(exc, WorkerLost):
                    raise
                if attempt == MAX_RECOVERIES:
                    raise RuntimeError(
                        f"the truncated Newton fit lost workers {sorted(gone) or '(unknown)'} "
                        f"{MAX_RECOVERIES + 1} times ({type(exc).__name__}: {exc}); it cannot go on. Check "
                        "the workers' memory and logs (a worker killed for memory is restarted by its "
                        "nanny: raise its memory limit or use more workers) and fit again."
                    ) from exc
                self.recovered.append(
                    {"lost": sorted(gone), "seconds": time.perf_counter() - self.clock_start}
                )
                self._recover(gone, reload)
        raise AssertionError("unreachable")

    def _gone(self):
        """The workers of the fit that left the cluster."""
        try:
            alive = set(live_workers(self.client))
        except Exception:  # noqa: BLE001 - the scheduler is the one lost: not for us to recover
            return set()
        return {worker for worker in self.placed if worker not in alive}

    def _recover(self, gone, reload):
        from .runtime import held

        alive = live_workers(self.client)
        if not alive:
            raise no_workers(self.client)
        for j, future in enumerate(self.parts):
            if self.placed[j] in gone or not held(self.client, future):
                self.placed[j] = alive[j % len(alive)]
                self.parts[j] = self._load(j, self.plan if reload else None)
        self.evaluated = None


def fit_products_cluster(client, source, plan, *, clock_start, on_pass=None, placement=None):
    """``dual=False`` on a cluster with Hessian products (any width): a :class:`~..plan.result.FitResult`
    with its ``plan`` (labels counted as the parts are read) and ``parts``; its history's records
    carry the bytes moved and ``method="truncated_newton"``.  ``placement``: the parts
    (:func:`~.parts.parts_of`; None: made here), whose labels are counted as they are read."""
    from ..primal.newton import solve_primal

    placement = parts_of(client, source, plan) if placement is None else placement
    parts = placement.parts
    scaler, placement = scaled_parts(client, source, plan, placement)
    driver = TruncatedNewton(client, placement, plan, source.n_features, clock_start)
    counts = driver.count()
    plan = plan.with_labels(*merge_label_counts([c for part in counts for c in part]))
    placement.counts = [merge_label_counts(part, allow_empty=True) for part in counts]
    if plan.multinomial_auto:  # multi_class="auto": the softmax model from three classes on, any width
        from ..primal.multinomial_reads import auto_softmax

        plan = plan.settled(auto_softmax(plan.classes.shape[0]))
    if plan.multinomial:
        result = softmax_products(driver, plan, source.n_features, None, {}, on_pass, clock_start)
        return replace(result, plan=plan, parts=placement.record(), scaler=scaler)
    driver.encode(plan)
    width = plan.model_width(source.n_features)

    def on_read(records, W):
        driver.mark(
            records, **driver.moved, method="truncated_newton", parts=len(parts), products=driver.products,
            columns_directions=driver.columns_directions,
        )  # fmt: skip
        return on_pass is not None and on_pass(records, W)

    result = solve_primal(driver, plan, width, clock_start=clock_start, on_pass=on_read, source=source)
    return replace(result, plan=plan, parts=placement.record(), scaler=scaler)


def _register_sizes():
    """Dask's memory accounting of a worker counts a held part by its bytes, not its object's."""
    from dask.sizeof import sizeof

    sizeof.register(PartRows)(lambda part: part.nbytes)
    sizeof.register(Evaluated)(_evaluated_nbytes)


def _evaluated_nbytes(evaluated):
    """The weights, and the active rows where they were copied out of the part's (the softmax
    model's: its rows' probabilities)."""
    if isinstance(evaluated.terms, np.ndarray):
        return evaluated.terms.nbytes
    held = evaluated.read.X
    return sum((0 if X is held else rows_nbytes(X)) + d.nbytes for X, d in evaluated.terms)


_register_sizes()

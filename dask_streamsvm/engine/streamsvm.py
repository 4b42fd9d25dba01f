"""StreamSVM's dual cached loops (Matsushima, Vishwanathan & Smola, KDD 2012).

The reader thread (:class:`~.reader.Reader`) computes partitions ahead; this
module is the trainer, and the only writer of the cache, alpha and w.  Its
loop alternates

1. intake: take the next block and insert its rows in the cache, evicting a
   random cached row whenever the cache is full (Algorithm 1's reader);
2. sweeps: one DCD pass in random order over the cached rows of each
   problem (Algorithm 2's trainer), evicting the rows the paper calls
   uninformative: ``alpha = 0`` and ``G > eps``, or ``alpha = C`` and
   ``G < -eps``.  ``eps`` is the largest projected gradient of the previous
   sweep (``+inf`` at the start: Algorithm 2 prints it as "9"), multiplied
   by ``beta = 0.9`` after a sweep that found the cache over 90% full.
   The paper shrinks eps by beta at every step while the cache is over 90%
   full; once per sweep is our reading, which keeps eps from collapsing to
   zero within one sweep.  The shrink test is LIBLINEAR's, with
   ``(eps, -eps)`` as thresholds, so the kernel does the selection.

Between two intakes the trainer visits ``INNER_VISITS`` cached rows for
every row it inserted, then waits for the next block; the reader meanwhile
computes the next ``prefetch`` partitions.  A read costs far more than a
row visit (parsing, decoding, conversion), so it pays to work the cache
hard between reads: on a9a and on the synthetic benchmark 50 visits per
inserted row needed fewer reads and less time than 10 (SBM's inner
iterations) or 40, and about the time of 100.  The paper's trainer also sweeps
while it waits; that makes the model depend on timing, and a seed must fix
the model, so the schedule here depends on row counts only.
"""

import contextlib
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..kernels.cache import train_on_cache
from ..kernels.crammer_singer import cs_loss_sum, cs_train_on_cache
from ..kernels.features import spec_width
from ..kernels.objective import weighted_loss_sum
from ..kernels.rng import make_state
from .cache import AlphaStore, RowCache
from .certificate import Certificate
from .checkpoint import plain
from .layout import kernel_rows
from .reader import Reader
from .source import RowIds

BETA = 0.9  # eps <- beta * eps after a sweep over a nearly full cache
NEARLY_FULL = 0.9
INNER_VISITS = 50  # cached-row visits owed per inserted row


@dataclass
class StreamResult:
    W: np.ndarray  # (k, n_features + 1), the certified state
    passes: int
    converged: bool
    certificates: list
    history: list
    interrupted: bool = False  # a KeyboardInterrupt stopped the fit; W is the last certified pass's


def solve_streamsvm(
    source,
    encode,
    *,
    n_problems,
    loss,
    bias,
    tol,
    max_iter,
    cache_bytes,
    prefetch,
    shuffle,
    seed,
    labels=None,
    alpha_store="memory",
    clock_start=None,
    on_pass=None,
    on_block=None,
    crammer_singer=False,
    feature_map=None,
    **run_options,
):
    """Train ``n_problems`` binary SVMs on ``source`` through a bounded cache.

    ``encode(block)`` returns ``(y, cost)``, two ``(n_problems, n_rows)``
    float64 arrays: the +1/-1 labels and ``C_i`` of each problem.  With
    ``crammer_singer=True`` the ``n_problems`` rows are the storage of one
    Crammer-Singer problem over that many classes (+1 in a row's own class,
    its ``C_i`` in every row; :mod:`~dask_streamsvm.kernels.crammer_singer`),
    ``loss`` must be ``"hinge"`` and the result carries one certificate.
    ``feature_map``, a map's spec (:mod:`~dask_streamsvm.kernels.features`),
    trains on ``phi(x)`` while the cache holds the raw rows; ``W`` then has
    the map's width.

    ``on_pass(records, W)``, when given, is called after every reader pass
    with that pass's history records (one per problem) and the certified
    weights ``W`` (``(n_problems, n_features + 1)``, bias last; do not
    modify them); a true return value stops the fit at that certified
    state.  ``on_block(pass_k, block, W, fill)`` is called on the trainer
    thread for every block read, with the weights the pass certifies and the
    fraction of ``cache_bytes`` in use.  ``run_options`` (``retries``,
    ``checkpoints``, ``resume``) go to :func:`run_trainer`.
    """
    return run_trainer(
        source,
        lambda store: _Trainer(
            source, encode, store, k=n_problems, loss=loss, bias=bias, tol=tol, max_iter=max_iter,
            cache_bytes=cache_bytes, seed=seed, labels=labels, clock_start=clock_start,
            on_pass=on_pass, on_block=on_block, crammer_singer=crammer_singer, feature_map=feature_map,
        ),
        n_problems=n_problems, alpha_store=alpha_store, prefetch=prefetch, max_iter=max_iter,
        shuffle=shuffle, seed=seed, **run_options,
    )  # fmt: skip


def run_trainer(
    source, make_trainer, *, n_problems, alpha_store, prefetch, max_iter, shuffle, seed,
    retries=0, checkpoints=None, resume=None,
):  # fmt: skip
    """Run ``make_trainer(store)`` against a reader of ``max_iter + 1`` passes; its StreamResult.

    The dual store lives in RAM, or with ``alpha_store="disk"`` in a
    temporary directory removed on exit; reader thread and store are closed
    however the trainer ends.  ``retries`` goes to the reader.
    ``checkpoints`` (:class:`~.checkpoint.Checkpoints`) makes the trainer
    write its state at pass ends; ``resume``, a loaded checkpoint
    ``(state, arrays)``, restores the trainer and starts the reader at the
    pass after it.

    A KeyboardInterrupt stops the reader and, once a pass has been
    certified, returns that pass's model with ``interrupted=True``; before
    that it propagates.
    """
    interrupted = False
    with contextlib.ExitStack() as stack:
        directory = None
        if alpha_store == "disk":
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="dask-streamsvm-alpha-"))
        store = AlphaStore(n_problems, directory)
        stack.callback(store.close)
        trainer = make_trainer(store)
        trainer.checkpoints = checkpoints
        start, row_ids = 0, None
        if resume is not None:
            trainer.restore(*resume)
            start, row_ids = trainer.current + 1, RowIds.from_state(resume[1]["row_ids"])
        reader = stack.enter_context(
            Reader(
                source, prefetch=prefetch, max_passes=max_iter + 1, shuffle=shuffle, seed=seed,
                start_pass=start, retries=retries, row_ids=row_ids,
            )
        )  # fmt: skip
        try:
            trainer.run(reader)
        except KeyboardInterrupt:
            if trainer.certified is None:
                raise
            interrupted = True
    W, certificates, passes = trainer.certified
    return StreamResult(
        W=W,
        passes=passes,
        converged=trainer.converged and not interrupted,
        certificates=certificates,
        history=trainer.history[: trainer.certified_records],
        interrupted=interrupted,
    )


class _PassCertifier:
    """The certificate every reader pass carries, for the trainers of this package.

    At a pass's first block the trainer snapshots ``W`` and the dual of the
    matching alpha (from the store's running sums); every block read adds
    its loss under the snapshot; at the pass end the exact primal and dual
    of the snapshot are known.  Expects ``k, W, store, encode, bias,
    squared, crammer_singer, stats, labels, clock_start, reader, on_pass,
    tol, max_iter, history`` on the instance, and ``ROW_MEMORY``, the name of
    its :class:`~.cache.RowCache` attribute (saved in checkpoints).
    One-vs-rest problems get a certificate each; Crammer-Singer gets one
    for the joint problem.
    """

    def _snapshot(self, pass_k, memory):
        self.current = pass_k
        if memory is not None:
            memory.write_back(self.store)
        self.W_snap = self.W.copy()
        half_sq = 0.5 * np.einsum("ij,ij->i", self.W_snap, self.W_snap)
        if self.crammer_singer:  # kernels.crammer_singer: D = 1/2 sum A - 1/2 ||W||^2
            self.dual = np.array([0.5 * self.store.sums[:, 0].sum() - half_sq.sum()])
            self.loss_sum = np.zeros(1)
            return
        self.dual = self.store.sums[:, 0] - half_sq - 0.5 * self.store.sums[:, 1]
        self.loss_sum = np.zeros(self.k)

    def _sparse_for_map(self, block):
        """A feature map reads sparse rows: dense partitions are converted as they arrive."""
        if self.feature_map is not None and not sp.issparse(block.X):
            block.X = sp.csr_matrix(block.X)

    def _encode_and_score(self, block):
        """Labels and costs of ``block``; adds its loss under the snapshot to the pass's sum."""
        y_pm, cost = self.encode(block)
        rows = kernel_rows(block.X, self.feature_map)
        if self.crammer_singer:
            y_index = np.argmax(y_pm, axis=0)
            self.loss_sum[0] += cs_loss_sum(rows, y_index, cost[0], self.W_snap, self.bias)
        for c in range(0 if self.crammer_singer else self.k):
            self.loss_sum[c] += weighted_loss_sum(
                rows, y_pm[c], cost[c], self.W_snap[c], self.bias, self.squared
            )
        self.stats["rows"] += block.n_rows
        self.stats["bytes"] += block.nbytes
        self.stats["rows_skipped"] += block.n_skipped
        self.stats["read_retries"] += block.retries
        return y_pm, cost

    def _certify_pass(self, fields):
        """Certificates and history records of the pass; decides whether the fit is done."""
        half_sq = 0.5 * np.einsum("ij,ij->i", self.W_snap, self.W_snap)
        primal = (half_sq.sum() if self.crammer_singer else half_sq) + self.loss_sum
        self.certificates = [Certificate(float(p), float(d)) for p, d in zip(primal, self.dual, strict=True)]
        self.certified_pass = self.current
        base = {
            "pass": self.current,
            "seconds": time.perf_counter() - self.clock_start,
            "rows_read": self.stats["rows"],
            "bytes_read": self.stats["bytes"],
            "rows_skipped": self.stats["rows_skipped"],
            "read_retries": self.stats["read_retries"],
            **fields,
            "row_visits": self.stats["visits"],
            "trainer_wait_s": self.stats["wait_data"],
            "reader_wait_s": self.reader.wait_for_room,
            "reader_busy_s": self.reader.busy_seconds,
        }
        records = [
            {**base, "class": label, "primal": cert.primal, "dual": cert.dual, "gap": cert.relative_gap}
            for label, cert in zip(self.labels, self.certificates, strict=True)
        ]
        self.history.extend(records)
        # One assignment: an interrupt never sees weights of one pass with the certificate of another.
        self.certified = (self.W_snap, self.certificates, self.current)
        self.certified_records = len(self.history)
        stop = self.on_pass is not None and bool(self.on_pass(records, self.W_snap))
        if self.current > 0 and max(c.relative_gap for c in self.certificates) <= self.tol:
            self.converged = self.done = True
        elif self.current >= self.max_iter or stop:
            self.done = True
        if not self.done and self.checkpoints is not None and self.checkpoints.due():
            self.checkpoints.save(*self.checkpoint_state())

    # -- checkpoints (:mod:`.checkpoint`) -------------------------------------------------

    def checkpoint_state(self):
        """``(state, arrays)`` of the trainer at a pass end; :meth:`restore` takes them back."""
        state = {
            "current": self.current,
            "seconds": time.perf_counter() - self.clock_start,
            "certificates": [[c.primal, c.dual] for c in self.certificates],
            "history": [{k: plain(v) for k, v in r.items()} for r in self.history],
            "stats": {k: plain(v) for k, v in self.stats.items()},
            "cache": None,
        }
        arrays = {"W": self.W, "W_snap": self.W_snap, "rng_state": self.rng_state}
        arrays["row_ids"] = self.reader.row_ids.state()
        arrays.update({f"store.{k}": v for k, v in self.store.state().items()})
        cache = getattr(self, self.ROW_MEMORY)
        if cache is not None:
            state["cache"], cache_arrays = cache.state()
            arrays.update({f"cache.{k}": v for k, v in cache_arrays.items()})
        return state, arrays

    def restore(self, state, arrays):
        """The state :meth:`checkpoint_state` saved (a fresh trainer of the same fit)."""
        if arrays["W"].shape != self.W.shape:
            raise ValueError(f"the checkpoint's weights have shape {arrays['W'].shape}, not {self.W.shape}.")
        self.W[:] = arrays["W"]
        self.W_snap = arrays["W_snap"].copy()
        self.rng_state[:] = arrays["rng_state"]
        self.current = self.certified_pass = int(state["current"])
        self.clock_start = time.perf_counter() - float(state["seconds"])
        self.certificates = [Certificate(float(p), float(d)) for p, d in state["certificates"]]
        self.history = list(state["history"])
        self.certified = (self.W_snap, self.certificates, self.current)
        self.certified_records = len(self.history)
        self.stats.update(state["stats"])
        self.store.restore({k[6:]: v for k, v in arrays.items() if k.startswith("store.")})
        if state["cache"] is not None:
            cache_arrays = {k[6:]: v for k, v in arrays.items() if k.startswith("cache.")}
            setattr(
                self, self.ROW_MEMORY, RowCache.from_state(state["cache"], cache_arrays, self.feature_map)
            )


class _Trainer(_PassCertifier):
    """The single writer of cache, alpha and w (see the module docstring)."""

    ROW_MEMORY = "cache"

    def __init__(
        self,
        source,
        encode,
        store,
        *,
        k,
        loss,
        bias,
        tol,
        max_iter,
        cache_bytes,
        seed,
        labels,
        clock_start,
        on_pass,
        on_block,
        crammer_singer=False,
        feature_map=None,
    ):
        self.source, self.encode, self.k = source, encode, k
        self.squared = loss == "squared_hinge"
        self.crammer_singer, self.feature_map = crammer_singer, feature_map
        self.bias, self.tol, self.max_iter, self.cache_bytes = bias, tol, max_iter, cache_bytes
        self.labels = list(range(k)) if labels is None else list(labels)
        self.clock_start = time.perf_counter() if clock_start is None else clock_start
        self.on_pass, self.on_block = on_pass, on_block
        self.store = store
        self.W = np.zeros((k, model_width(source.n_features, feature_map) + 1))
        self.rng_state = make_state(seed)
        self.eps = np.full(k, np.inf)
        self.cache = None
        self.history = []
        self.certificates = None
        self.W_snap = self.dual = self.loss_sum = None
        self.converged = False
        self.certified_pass = 0
        self.current = -1
        self.pending = None  # (block, y, cost, next row) being inserted piecewise
        self.visits_owed = 0
        self.done = False
        self.stats = dict.fromkeys(
            ("wait_data", "visits", "rows", "bytes", "rows_skipped", "read_retries"), 0
        )
        self.certified, self.certified_records, self.checkpoints = None, 0, None

    def run(self, reader):
        self.reader = reader
        idle = True
        while not self.done:
            if idle or self.visits_owed <= 0:
                self._intake()
                if self.done:
                    break
            if self.cache is None or self.cache.n_live == 0 or self.current >= self.max_iter:
                idle = True
                continue
            idle = not self._train()

    # -- intake: blocks, pass ends ---------------------------------------------------

    def _intake(self):
        """Insert the next piece of a block; True if rows came in.

        A partition larger than a quarter of the cache is inserted a piece
        at a time, with sweeps in between, so that its rows get trained
        before the next pieces evict them.
        """
        if self.pending is not None:
            self._insert_next_piece()
            return True
        start = time.perf_counter()
        item = self.reader.get()
        self.stats["wait_data"] += time.perf_counter() - start
        while item is not None:
            kind = item[0]
            if kind == "block":
                self._take_block(item[1], item[2])
                if self.pending is not None:
                    self._insert_next_piece()
                return True
            if kind == "end":
                self._certify()
            else:  # "done"
                self.done = True
            if self.done:
                return False
            item = self.reader.get()
        return False

    def _take_block(self, pass_k, block):
        if pass_k != self.current:  # first block of a pass: snapshot the state it certifies
            self._snapshot(pass_k, self.cache)
        self._sparse_for_map(block)
        y_pm, cost = self._encode_and_score(block)
        if self.on_block is not None:
            fill = 0.0 if self.cache is None else self.cache.used_bytes / self.cache_bytes
            self.on_block(pass_k, block, self.W_snap, fill)
        if self.current < self.max_iter and block.n_rows > 0:
            if self.cache is None:
                self.cache = _new_cache(block, self.cache_bytes, self.source, self.k, self.feature_map)
            self.pending = (block, y_pm, cost, 0)

    def _insert_next_piece(self):
        block, y_pm, cost, start = self.pending
        piece = max(1, self.cache.n_slots // 4)
        stop = min(start + piece, block.n_rows)
        rows = block.order[start:stop]  # this pass's row order
        self.visits_owed += INNER_VISITS * (stop - start)
        self.cache.insert(
            block.X[rows], block.row_ids[rows], y_pm[:, rows], cost[:, rows],
            self.squared, self.bias, self.store, self.rng_state,
        )  # fmt: skip
        self.pending = None if stop == block.n_rows else (block, y_pm, cost, stop)

    def _certify(self):
        cache = self.cache
        self._certify_pass(
            {
                "cache_rows": cache.n_live if cache is not None else 0,
                "cache_bytes": cache.used_bytes if cache is not None else 0,
                "insertions": cache.insertions if cache is not None else 0,
                "evictions": cache.evictions if cache is not None else 0,
            }
        )

    def checkpoint_state(self):
        state, arrays = super().checkpoint_state()
        state["visits_owed"] = int(self.visits_owed)  # pass ends come with no block half inserted
        arrays["eps"] = self.eps
        return state, arrays

    def restore(self, state, arrays):
        super().restore(state, arrays)
        self.visits_owed = int(state["visits_owed"])
        self.eps[:] = arrays["eps"]

    # -- training ------------------------------------------------------------------

    def _train(self):
        """Sweep the cache until the visits owed are paid; False if nothing changed."""
        cache = self.cache
        budget = max(self.visits_owed, 1)
        # Crammer-Singer: one joint problem, one eps (the first entry).
        train = cs_train_on_cache if self.crammer_singer else train_on_cache
        visits, busy = train(
            cache.layout, cache.Y, cache.U, cache.D, cache.QD, cache.A, self.W, self.bias, self.eps, BETA,
            NEARLY_FULL, budget, cache.meta, cache.gid, cache.live, cache.pos, cache.free, self.store.slot_of,
            self.store.alpha, self.store.sums, cache.starts, cache.ends,
            cache.data.shape[0] if cache.sparse else 0, self.rng_state,
        )  # fmt: skip
        self.stats["visits"] += visits
        # A solved cache owes nothing more: new rows start a fresh account.
        self.visits_owed = self.visits_owed - visits if busy else 0
        return busy


def _new_cache(block, cache_bytes, source, k, feature_map):
    sparse = sp.issparse(block.X)
    nnz_per_row = block.X.nnz / max(block.n_rows, 1) if sparse else None
    return RowCache(cache_bytes, source.n_features, block.X.dtype, sparse, k, nnz_per_row, feature_map)


def model_width(n_features, feature_map):
    """Length of ``w`` without the bias: the map's output width, or the raw features."""
    return n_features if feature_map is None else spec_width(feature_map)

"""What every multi-pass streaming trainer shares: the reader loop's frame and the pass certificate.

:func:`run_trainer` sets up the dual store and the reader thread around a
trainer and closes both however it ends.  :class:`PassCertifier` is the
trainers' base (StreamSVM's in :mod:`.streamsvm`, SBM's and BM's in
:mod:`.sbm`): it encodes each block's labels (:func:`~..plan.problem.encode_block`),
adds its loss under the snapshot the pass certifies, scores the rows held
out for Platt scaling, and at the pass end computes the exact certificate
and the history records, then asks the hooks whether to stop.

Certificate of a pass.  At a pass's first block the trainer snapshots ``W``
and the dual of the matching alpha (from the store's running sums); every
block read adds its loss under the snapshot; at the pass end the exact
primal and dual of the snapshot are known.  One-vs-rest problems get a
certificate each; Crammer-Singer gets one for the joint problem.

Hooks.  ``hooks`` may be None or any object with the attributes
``on_pass(records, W)`` (after every pass, with that pass's history records,
one per problem, and the certified weights, bias last; a true return value
stops the fit at that certified state) and ``on_block(pass_k, block, W,
fill)`` (for every block read, with the weights the pass certifies and the
fraction of the row memory in use), and ``on_note(text)`` (once, after the
first pass, with advice on features far from unit scale,
:func:`~..plan.problem.scale_advice`); any may be None.
"""

import contextlib
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from ...kernels.crammer_singer import cs_loss_sum
from ...kernels.objective import weighted_loss_sum
from ...kernels.rng import make_state
from ..data.fingerprint import PartitionPrints
from ..data.reader import Reader
from ..data.row_ids import RowIds
from ..plan.calibration import held_out
from ..plan.certificate import Certificate, check_gap
from ..plan.layout import kernel_rows
from ..plan.losses import loss_of
from ..plan.problem import column_max_abs, cs_model, encode_block, linear_scores, scale_advice
from ..plan.result import FitResult
from ..store.archive import plain
from .alpha_store import AlphaStore
from .cache import RowCache

# Rows in memory are solved at KAPPA x the gap to beat (PassCertifier.solved_below): StreamSVM's
# cache, SBM's block plus cache.
KAPPA = 0.1


def fit_rows(plan, source):
    """The rows the fit counted, which ``source`` gives: what the alpha store and a row memory that
    can hold them all are sized to at once.  0 where none were counted, or where ``source`` is a
    cluster worker's part (the counts are the whole collection's)."""
    if plan.counts is None or getattr(source, "is_part", False):
        return 0
    return int(np.sum(plan.counts))


def reserve_full(cache, n_rows):
    """Give ``cache`` (a :class:`~.cache.RowCache`) its budget's slots at once when the fit's
    ``n_rows`` rows can fill them: grown by doubling, its last copy would hold the old arrays beside
    the new ones (1.5x the budget).  A budget above the data keeps growing with the rows held."""
    if n_rows >= cache.n_slots:
        cache.reserve(cache.n_slots, 0)


def run_trainer(source, plan, trainer, *, checkpoints=None, resume=None):
    """Run ``trainer(store)`` (a :class:`PassCertifier` factory) against a reader of
    ``plan.max_iter + 1`` passes; its :class:`~..plan.result.FitResult`: the certified ``W`` (a
    KeyboardInterrupt's: the last certified pass's), the held-out rows' decision values and labels
    of the read that certified it (Platt's, with a calibration seed), the last pass's weights and
    the dual's sums of its dual variables (``dual_sums``), and each column's largest ``|x|`` on
    the first read (``feature_max``).

    The dual store lives in RAM, or with ``plan.alpha_store="disk"`` in a
    temporary directory removed on exit; reader thread and store are closed
    however the trainer ends.  ``checkpoints`` (:class:`~..store.checkpoint.Checkpoints`)
    makes the trainer write its state at pass ends; ``resume``, a loaded
    checkpoint ``(state, arrays)``, restores the trainer and starts the
    reader at the pass after it.

    A KeyboardInterrupt stops the reader and, once a pass has been
    certified, returns that pass's model with ``interrupted=True``; before
    that it propagates.
    """
    interrupted = False
    with contextlib.ExitStack() as stack:
        directory = None
        if plan.alpha_store == "disk":
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="dask-streamsvm-alpha-"))
        store = AlphaStore(plan.n_problems, directory, loss=plan.loss_code)
        stack.callback(store.close)
        if resume is None and fit_rows(plan, source):
            # At its final size at once: grown by doubling, the old and the new arrays would be
            # held together while the first pass discovers the rows (1.5x the store at the peak).
            store.reserve(fit_rows(plan, source))
        trainer = trainer(store)
        trainer.checkpoints = checkpoints
        start, row_ids, prints = 0, None, None
        if resume is not None:
            trainer.restore(*resume)
            start, row_ids = trainer.current + 1, RowIds.from_state(resume[1]["row_ids"])
            prints = PartitionPrints(resume[1].get("prints"))
        # A trainer restored while it trained from its cache reads nothing more.
        passes = start if getattr(trainer, "in_cache", False) else plan.max_iter + 1
        reader = stack.enter_context(
            Reader(
                source, prefetch=plan.prefetch, max_passes=passes, shuffle=plan.shuffle,
                seed=plan.seed, start_pass=start, retries=plan.retries, row_ids=row_ids, prints=prints,
                read_timeout=plan.read_timeout,
            )
        )  # fmt: skip
        try:
            trainer.run(reader)
        except KeyboardInterrupt:
            if trainer.certified is None:
                raise
            interrupted = True
            reader.leave_reads()  # the certified model comes back at once
    return trainer_result(trainer, interrupted)


def trainer_result(trainer, interrupted=False):
    """The :class:`~..plan.result.FitResult` of ``trainer`` (a :class:`PassCertifier` that has
    certified a pass), as :func:`run_trainer` describes it."""
    W, certificates, passes = trainer.certified
    held = trainer.held
    return FitResult(
        dual_sums=trainer.certified_sums,
        feature_max=trainer.feature_max,
        W=W,
        passes=passes,
        converged=trainer.converged and not interrupted,
        certificates=certificates,
        history=trainer.history[: trainer.certified_records],
        interrupted=interrupted,
        held_scores=np.vstack(held["scores"]) if held["scores"] else np.zeros((0, W.shape[0])),
        held_y=np.concatenate(held["y"]) if held["y"] else np.zeros(0),
        trained_W=trainer.W.copy() if trainer.stats["visits"] else None,
    )


class PassCertifier:
    """The base of the multi-pass trainers: the certificate every reader pass carries.

    Subclasses set ``ROW_MEMORY``, the name of their :class:`~.cache.RowCache`
    attribute (saved in checkpoints), and implement ``run(reader)``.
    """

    ROW_MEMORY = None

    def __init__(self, source, plan, store, hooks, clock_start):
        self.source, self.plan, self.store = source, plan, store
        self.k = plan.n_problems
        self.loss = loss_of(plan.loss)  # its code for the kernels, its dual from the store's sums
        self.crammer_singer, self.feature_map = plan.crammer_singer, plan.feature_map
        self.bias, self.tol, self.max_iter = plan.bias, plan.tol, plan.max_iter
        self.labels = list(plan.labels)
        self.clock_start = time.perf_counter() if clock_start is None else clock_start
        self.on_pass = getattr(hooks, "on_pass", None)
        self.on_block = getattr(hooks, "on_block", None)
        self.on_note = getattr(hooks, "on_note", None)
        self.on_labels = getattr(hooks, "on_labels", None)  # a first read's class count (.labels)
        self.W = np.zeros((self.k, plan.model_width(source.n_features) + 1))
        self.rng_state = make_state(plan.seed)
        self.history = []
        self.certificates = None
        self.W_snap = self.dual = self.loss_sum = None
        self.converged = self.done = False
        self.certified_pass = 0
        self.current = -1
        counters = ("wait_data", "visits", "rows", "bytes", "rows_skipped", "read_retries")
        self.stats = dict.fromkeys(counters, 0)
        self.certified, self.certified_records, self.checkpoints = None, 0, None
        self._best = None  # (W, primal per problem): the certified weights of lowest primal so far
        self.sums_snap = self.certified_sums = None
        self.held = {"pass": None, "scores": [], "y": []}  # this read's held-out rows, for Platt
        self.feature_max = self.feature_pass = None  # columns' largest |x| on the first read

    def solved_below(self, start_gap):
        """The gap below which rows in memory (a cache, a block) count as solved.

        ``KAPPA`` times the smaller of ``start_gap`` (their gap during or
        after the first sweep since new rows came) and the last certified gap, and no
        lower than a tenth of what the stopping rule asks for: inner work
        in proportion to what is left to prove, and none spent past it.
        """
        goal, floor = start_gap, 0.0
        if self.certificates:
            goal = min(goal, sum(c.primal - c.dual for c in self.certificates))
            floor = 0.1 * self.tol * sum(abs(c.primal) for c in self.certificates)
        return max(KAPPA * goal, floor)

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
        self.sums_snap = self.store.sums.copy()
        self.dual = self.loss.dual_value(self.sums_snap, half_sq)
        self.loss_sum = np.zeros(self.k)

    def _read(self, pass_k, block, fill):
        """A block arrives: its ``(y, cost)``, its loss added to the pass's sum, held-out rows scored."""
        if self.feature_map is not None and not sp.issparse(block.X):
            block.X = sp.csr_matrix(block.X)  # a feature map reads sparse rows
        if self.on_labels is not None:
            self.on_labels(pass_k, block)
        y_pm, cost = encode_block(self.plan, block)
        if self.feature_pass is None:
            self.feature_pass = pass_k
        if pass_k == self.feature_pass and block.n_rows > 0:  # for the advice of an unconverged fit
            top = column_max_abs(block.X)
            self.feature_max = top if self.feature_max is None else np.maximum(self.feature_max, top)
        rows = kernel_rows(block.X, self.feature_map)
        if self.crammer_singer:
            y_index = np.argmax(y_pm, axis=0)
            self.loss_sum[0] += cs_loss_sum(rows, y_index, cost[0], self.W_snap, self.bias)
        for c in range(0 if self.crammer_singer else self.k):
            self.loss_sum[c] += weighted_loss_sum(
                rows, y_pm[c], cost[c], self.W_snap[c], self.bias, self.loss.code
            )
        self.stats["rows"] += block.n_rows
        self.stats["bytes"] += block.nbytes
        if pass_k == 0:  # rows skipped counted once: every read skips the same rows (fingerprinted)
            self.stats["rows_skipped"] += block.n_skipped
        self.stats["read_retries"] += block.retries
        if self.on_block is not None:
            self.on_block(pass_k, block, self.W_snap, fill)
        if self.plan.calibration_seed is not None:
            self._score_held_out(pass_k, block)
        return y_pm, cost

    def _score_held_out(self, pass_k, block):
        """Decision values of the block's held-out rows under the snapshot (Platt's data)."""
        held = self.held
        if pass_k != held["pass"]:
            held.update({"pass": pass_k, "scores": [], "y": []})
        mask = held_out(block.row_ids, self.plan.calibration_seed) & (block.sample_weight > 0)
        if mask.any():
            W = cs_model(self.W_snap) if self.crammer_singer else self.W_snap
            held["scores"].append(linear_scores(block.X[mask], W, self.bias, self.feature_map))
            held["y"].append(block.y[mask])

    def _certify_pass(self, fields):
        """Certificates and history records of the pass; decides whether the fit is done.

        ``fields``: the schedule's own entries of the records, or a callable
        that makes them from the certificates.
        """
        half_sq = 0.5 * np.einsum("ij,ij->i", self.W_snap, self.W_snap)
        primal = self.loss.primal_value(half_sq.sum() if self.crammer_singer else half_sq, self.loss_sum)
        self.certificates = [
            check_gap(Certificate(float(p), float(d)), f"pass {self.current}, class {label!r}")
            for p, d, label in zip(primal, self.dual, self.labels, strict=True)
        ]
        self.certified_pass = self.current
        if callable(fields):  # fields that need the certificates
            fields = fields(self.certificates)
        base = {
            "pass": self.current,
            "seconds": time.perf_counter() - self.clock_start,
            "solver": self.plan.solver,  # the schedule, which solver="auto" chose (choice.dual_schedule)
            "rows_read": self.stats["rows"],
            "bytes_read": self.stats["bytes"],
            "spill_bytes": self.source.spill_bytes,
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
        W_best, best = self._best_certified()
        # One assignment: an interrupt never sees weights of one pass with the certificate of another.
        self.certified = (W_best, best, self.current)
        self.certified_sums = (self.W_snap, self.sums_snap)
        self.certified_records = len(self.history)
        stop = self.on_pass is not None and bool(self.on_pass(records, self.W_snap))
        if self.current == self.feature_pass and self.on_note is not None:
            advice = scale_advice(self.feature_max)
            if advice:
                self.on_note(advice)
        if self.current > 0 and max(c.relative_gap for c in best) <= self.tol:
            self.converged = self.done = True
        elif self.current >= self.max_iter or stop:
            self.done = True
        if not self.done and self.checkpoints is not None and self.checkpoints.due():
            self.checkpoints.save(*self.checkpoint_state())

    def _best_certified(self):
        """``(W, certificates)``: per problem the certified weights of lowest primal value so far,
        with this pass's dual (dual coordinate descent's dual only rises, so it is the best seen).

        The last pass's primal can swing far above an earlier one's (unscaled features, a large
        C): the model returned is the best certified one.  Crammer-Singer's one certificate
        covers all the classes' weights together.
        """
        groups = [list(range(self.k))] if self.crammer_singer else [[c] for c in range(self.k)]
        if self._best is None or self._best[0].shape != self.W_snap.shape:
            self._best = (self.W_snap.copy(), [c.primal for c in self.certificates])
        W_best, primal_best = self._best
        for j, rows in enumerate(groups):
            if self.certificates[j].primal <= primal_best[j]:
                W_best[rows] = self.W_snap[rows]
                primal_best[j] = self.certificates[j].primal
        best = [Certificate(p, c.dual) for p, c in zip(primal_best, self.certificates, strict=True)]
        return W_best.copy(), best

    # -- checkpoints (:mod:`..store.checkpoint`) -------------------------------------------------

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
        # The best certified weights so far: the model returned, and the primal the stopping rule
        # compares, may be those of a pass before this one.
        arrays["best_W"], arrays["best_primal"] = self._best[0], np.array(self._best[1], dtype=np.float64)
        arrays["row_ids"] = self.reader.row_ids.state()
        arrays["prints"] = self.reader.prints.state()
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
        best_W, best_primal = arrays["best_W"], arrays["best_primal"]
        if best_W.shape != self.W.shape or best_primal.shape != (len(self.certificates),):
            raise ValueError(
                f"the checkpoint's best certified weights have shape {best_W.shape} with primal values "
                f"of shape {best_primal.shape}, not {self.W.shape} with ({len(self.certificates)},)."
            )
        self._best = (best_W.astype(np.float64), [float(p) for p in best_primal])
        best = [Certificate(p, c.dual) for p, c in zip(self._best[1], self.certificates, strict=True)]
        self.certified = (self._best[0].copy(), best, self.current)
        self.certified_records = len(self.history)
        self.stats.update(state["stats"])
        self.store.restore({k[6:]: v for k, v in arrays.items() if k.startswith("store.")})
        if state["cache"] is not None:
            cache_arrays = {k[6:]: v for k, v in arrays.items() if k.startswith("cache.")}
            setattr(
                self, self.ROW_MEMORY, RowCache.from_state(state["cache"], cache_arrays, self.feature_map)
            )

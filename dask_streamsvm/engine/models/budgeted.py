"""The BSGD driver: budgeted SGD with merging for the Gaussian-kernel SVM, a block at a time.

Budgeted stochastic gradient descent (Wang, Crammer & Vucetic 2012) on
``lambda/2 ||w||^2 + mean max(0, 1 - y f(x))`` (the L1 loss), ``lambda = 1 / (n C)``, with
``w = sum_j alpha_j phi(sv_j)`` kept to at most ``budget`` support vectors
per one-vs-rest problem: a step that adds one too many merges the vector of
smallest ``|alpha|`` into its best same-label partner (Glasmachers & Qaadan
2018, Algorithm 1), the merge found by golden section search or read from
precomputed tables of ``h(m, kappa)`` and ``WD(m, kappa)``.  The steps and
the merge are :mod:`dask_streamsvm.kernels.bsgd`; :class:`BSGD` holds their
state, runs them on blocks, and times them: the wall clock around each
kernel call, and budget maintenance in counter ticks converted to seconds
at the same rate.
"""

import os
import time

import numpy as np

from ...kernels import bsgd as kb
from ..data.reader import read_blocks
from ..plan.layout import as_kernel_rows

MERGES = {"gss": kb.GSS, "gss-precise": kb.GSS_PRECISE, "lookup-h": kb.LOOKUP_H, "lookup-wd": kb.LOOKUP_WD}
_TABLES = {}
# Wide, sparse rows (text, hashed features), where a linear model is the tool: BudgetedSVC warns at
# fit time when the rows have at least WIDE_FEATURES features and hold on average at most
# SPARSE_SHARE of them as nonzeros (:func:`linear_advice`).
WIDE_FEATURES = 1000
SPARSE_SHARE = 0.05
# The largest C BudgetedSVC takes: ``lambda = 1 / (n_samples C)`` must stay a positive float64, and
# at C = 1e306 on 600 rows it rounds to 0 (the steps ``1 / (lambda t)`` then divide by zero).  Up to
# this bound it does for any number of rows below 1e150.
MAX_C = 1e150
# Counters of each problem's budget maintenance (merges, removals, shadowed and equal decisions,
# margin violations): the columns of the kernels' ``stats``.
MERGE_COUNTERS = 5


def merge_tables():
    """``(h, WD)`` on the 401 x 401 grid of [0, 1]^2, by golden section search to 1e-10.

    Computed on first use (about a second) and kept for the process.
    """
    if "tables" not in _TABLES:
        _TABLES["tables"] = kb.build_tables(kb.GRID, 1e-10)
    return _TABLES["tables"]


def mean_nonzeros(X):
    """Nonzeros a row, on average, of rows in memory: a sparse matrix's stored entries, a dense
    array's entries other than 0."""
    if X.shape[0] == 0:
        return 0.0
    count = X.nnz if hasattr(X, "nnz") else np.count_nonzero(X)
    return count / X.shape[0]


def linear_advice(n_features, nonzeros):
    """The text of BudgetedSVC's warning for rows of ``n_features`` features with ``nonzeros`` nonzeros
    a row on average when they are wide and sparse (:data:`WIDE_FEATURES`, :data:`SPARSE_SHARE`), or
    None.

    On such rows (documents, hashed features) the data are close to
    linearly separable already and the Gaussian kernel of rows that share
    few features is nearly constant, so a linear model is as accurate; it
    is also faster: a BSGD step costs ``budget`` times the row's nonzeros,
    a linear step the nonzeros.
    """
    if n_features < WIDE_FEATURES or nonzeros > SPARSE_SHARE * n_features:
        return None
    return (
        f"BudgetedSVC: X is wide and sparse ({n_features:,} features, {nonzeros:.1f} nonzeros a row on "
        f"average, {nonzeros / n_features:.2%} of them): there a linear model is the right tool. "
        "dask_streamsvm.LinearSVC (or LogisticRegression, with C tuned) is as accurate on such data (text, "
        "hashed features) and far faster: on a 7,770 x 8,315 text-like set (python -m "
        "benchmarks.bench_budgeted --text) LinearSVC() reached a test F1 of 0.73 in 0.02 s, BudgetedSVC() "
        "0.003 in 7 s and 0.735 with C=16 (the Gaussian kernel of rows that share few features is nearly "
        "constant, so the kernel model needs a larger C than the linear one). The warning is for "
        f"{WIDE_FEATURES:,} features or more of which the rows hold {SPARSE_SHARE:.0%} or fewer; to train "
        "the kernel model anyway, filter sklearn.exceptions.EfficiencyWarning."
    )


def scale_gamma(X):
    """scikit-learn's ``gamma="scale"``, ``1 / (n_features X.var())``, of rows in memory (1 if constant)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if hasattr(X, "multiply"):
            mean = X.mean()
            var = X.multiply(X).mean() - mean * mean
        else:
            var = X.var()
    return _gamma_of_variance(var, X.shape[1])


def scale_gamma_of_source(source, prefetch):
    """:func:`scale_gamma` of a Dask source: one read of the collection for the variance."""
    total = square = count = 0.0
    for _, block in read_blocks(source, prefetch=prefetch):
        X = block.X
        values = X.data if hasattr(X, "data") and not isinstance(X, np.ndarray) else X
        with np.errstate(over="ignore", invalid="ignore"):
            total += float(np.sum(values, dtype=np.float64))
            square += float(np.sum(np.square(values, dtype=np.float64)))
        count += X.shape[0] * X.shape[1]
    if count == 0:
        return 1.0
    mean = total / count
    return _gamma_of_variance(square / count - mean * mean, source.n_input_features)


def model_bytes(n_problems, n_features, budget):
    """Bytes of a model of ``budget`` support vectors per problem: :class:`BSGD`'s ``SV`` (a column of
    ``n_features + 1`` values per slot), ``SVSQ`` and ``BETA``, ``budget + 1`` slots each."""
    return 8 * int(n_problems) * (int(budget) + 1) * (int(n_features) + 3)


def _physical_memory():
    """Bytes of this machine's memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not POSIX
        try:
            import psutil
        except ImportError:  # pragma: no cover - distributed installs psutil
            return None
        return int(psutil.virtual_memory().total)


def _size(n):
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _too_large(budget, n_problems, n_features, need, limit):
    most = max(limit // (8 * n_problems * (n_features + 3)) - 1, 0)
    return ValueError(
        f"budget={budget} would need {need:,} bytes ({_size(need)}) for the support vectors of "
        f"{n_problems} problem(s) of {n_features} features, more than {limit:,} bytes "
        f"({_size(limit)}), this machine's memory. Pass a smaller budget (at most {most:,} here; "
        "a few hundred to a few thousand support vectors is usual)."
    )


def check_budget(budget, n_problems, n_features):
    """Refuse, before anything is allocated, a ``budget`` whose model (:func:`model_bytes`) is larger
    than this machine's memory: a ValueError naming ``budget`` and the bytes it needs.

    Only the memory the machine has decides (not what is free now, which
    changes from one moment to the next): the model's arrays are allocated
    whole but filled one support vector at a time, so a budget that fits is
    only paid for as the support vectors come.
    """
    need, limit = model_bytes(n_problems, n_features, budget), _physical_memory()
    if limit is not None and need > limit:
        raise _too_large(budget, n_problems, n_features, need, limit)


def _gamma_of_variance(var, n_features):
    """``1 / (n_features var)``, 1 for constant features; a ValueError if the variance overflows."""
    if not np.isfinite(var):
        raise ValueError(
            "gamma='scale' needs the variance of the features, which overflows float64: the values are too "
            "large. The features need scaling (e.g. sklearn.preprocessing.StandardScaler or MaxAbsScaler), "
            "or pass a number as gamma."
        )
    return 1.0 / (n_features * var) if var > 0 else 1.0


class BSGD:
    """BSGD on ``n_problems`` problems over rows of ``n_features`` features.

    ``lambda = 1 / (n_samples C)`` (or ``lam``, a saved model's); ``merge``
    names the merge method (a key of :data:`MERGES`).  ``shadow``, another method or None, makes its own
    partner choice at every merge without acting on it, to count how often
    the two agree (``merge_stats()["equal_decisions"]``); it slows the
    merges, so it is for measurements only.
    """

    def __init__(self, n_problems, n_features, *, budget, gamma, C, n_samples, merge, shadow=None, lam=None):
        k, B = n_problems, int(budget)
        width = n_features + 1  # the kernels' layout: a bias feature, left at 0
        method = MERGES[merge]
        shadow = -1 if shadow is None else MERGES[shadow]
        lookup = method in (kb.LOOKUP_H, kb.LOOKUP_WD) or shadow in (kb.LOOKUP_H, kb.LOOKUP_WD)
        H, W = merge_tables() if lookup else (np.zeros((2, 2)), np.zeros((2, 2)))
        if lam is None:  # given: a saved model's (restore)
            lam = 1.0 / (max(n_samples, 1) * float(C))
        check_budget(B, k, n_features)
        self.settings = kb.BudgetSettings(float(gamma), lam, B, method, shadow, H, W)
        try:
            self.state = kb.BudgetState(
                t=np.ones(1, dtype=np.int64),
                SV=np.zeros((k, width, B + 1)),  # by feature: a column per slot
                SVSQ=np.zeros((k, B + 1)),
                BETA=np.zeros((k, B + 1)),
                n_sv=np.zeros(k, dtype=np.int64),
                stats=np.zeros((k, MERGE_COUNTERS), dtype=np.int64),
                merge_ticks=np.zeros(k, dtype=np.int64),
            )
        except MemoryError:  # less memory for this process than the machine has (a container's limit)
            need = model_bytes(k, n_features, B)
            raise ValueError(
                f"budget={B} needs {need:,} bytes ({_size(need)}) for the support vectors of {k} "
                f"problem(s) of {n_features} features, and allocating them failed (MemoryError): this "
                "process has less memory than that. Pass a smaller budget."
            ) from None
        self.kernel_seconds = 0.0  # wall clock in bsgd_block
        self.kernel_ticks = 0  # counter ticks over the same calls

    def steps(self, X, signs, order):
        """A step per row ``order`` of ``X``, in that order; ``signs[c, i]``: row i's +1/-1 in problem c."""
        rows = as_kernel_rows(X)
        signs, order = np.ascontiguousarray(signs), np.asarray(order, dtype=np.int64)
        start, start_ticks = time.perf_counter(), kb.ticks()
        kb.bsgd_block(rows, signs, order, self.settings, self.state)
        self.kernel_ticks += kb.ticks() - start_ticks
        self.kernel_seconds += time.perf_counter() - start

    def epochs(self, X, signs, passes, rng=None, on_epoch=None):
        """``passes`` epochs over rows in memory, each in a new ``rng.permutation`` (without: in order).

        ``on_epoch(epoch, info)``, if given, is called after every epoch
        (``epoch`` from 0) with :meth:`epoch_info`.
        """
        start = time.perf_counter()
        for epoch in range(passes):
            self.steps(X, signs, rng.permutation(X.shape[0]) if rng is not None else np.arange(X.shape[0]))
            if on_epoch is not None:
                on_epoch(epoch, self.epoch_info(passes, X.shape[0], time.perf_counter() - start))

    def stream(self, blocks, passes, on_epoch=None):
        """The steps of every ``(epoch, rows, signs, order)`` of ``blocks`` (the reads of a stream, in
        order); ``on_epoch(epoch, info)`` as in :meth:`epochs`, after the last block of each epoch."""
        start, rows, current = time.perf_counter(), 0, None
        for epoch, X, signs, order in blocks:
            if current is not None and epoch != current:
                self._epoch_done(on_epoch, current, passes, rows, start)
                rows = 0
            current = epoch
            self.steps(X, signs, order)
            rows += len(order)
        if current is not None:
            self._epoch_done(on_epoch, current, passes, rows, start)

    def _epoch_done(self, on_epoch, epoch, passes, rows, start):
        if on_epoch is not None:
            on_epoch(epoch, self.epoch_info(passes, rows, time.perf_counter() - start))

    def epoch_info(self, passes, rows, seconds):
        """What ``on_epoch`` is told after an epoch: ``epochs`` (of the fit), ``rows`` (of the
        epoch), ``support_vectors`` (a list, per problem), ``merges`` and ``removals`` so far, and
        ``seconds`` since the first epoch began."""
        stats = self.state.stats.sum(axis=0)
        return {
            "epochs": int(passes),
            "rows": int(rows),
            "support_vectors": self.state.n_sv.tolist(),
            "merges": int(stats[0]),
            "removals": int(stats[1]),
            "seconds": float(seconds),
        }

    @property
    def n_steps(self):
        return int(self.state.t[0]) - 1

    @property
    def scale(self):
        """``1 / (lambda t)``: the coefficients are ``beta`` times this."""
        return 1.0 / (self.settings.lam * max(self.n_steps, 1))

    def support(self):
        """``(support vectors, dual coefficients)``, a list of arrays each, one per problem."""
        s = self.state
        vectors = [np.ascontiguousarray(s.SV[c, :-1, :n].T) for c, n in enumerate(s.n_sv)]
        return vectors, [s.BETA[c, :n] * self.scale for c, n in enumerate(s.n_sv)]

    def scores(self, X):
        """``f_c(x)`` of every row (one column per problem)."""
        out = np.zeros((X.shape[0], self.state.SV.shape[0]))
        kb.predict_block(as_kernel_rows(X), self.state, self.settings.gamma, self.scale, out)
        return out

    def saved(self):
        """``(arrays, records)``: the state a model file keeps (see ``dask_streamsvm._persist``), from
        which :meth:`restore` rebuilds it exactly: the support vectors of every problem one after
        the other, their ``beta`` and squared norms, ``n_support_``, ``lambda``, the steps so far and
        the merge counters; the records are the timings of :meth:`merge_seconds`."""
        s = self.state
        n = s.n_sv
        arrays = {
            "n_support_": n.copy(),
            "support_vectors_": np.concatenate([s.SV[c, :-1, :m].T for c, m in enumerate(n)]),
            "beta": np.concatenate([s.BETA[c, :m] for c, m in enumerate(n)]),
            "sv_sqnorm": np.concatenate([s.SVSQ[c, :m] for c, m in enumerate(n)]),
            "gamma_": np.array([self.settings.gamma]),
            "lambda": np.array([self.settings.lam]),
            "steps": np.array([self.n_steps], dtype=np.int64),
            "merge_counts": s.stats.copy(),
            "merge_ticks": s.merge_ticks.copy(),
        }
        records = {"kernel_seconds": float(self.kernel_seconds), "kernel_ticks": int(self.kernel_ticks)}
        return arrays, records

    def restore(self, arrays, records):
        """Set what :meth:`saved` gave (checked by the caller: ``n_support_`` within the budget and
        summing to the vectors' rows) on this fresh driver of the same problems, features, budget,
        gamma and lambda."""
        s = self.state
        ends = np.cumsum(arrays["n_support_"])
        for c, (m, end) in enumerate(zip(arrays["n_support_"], ends, strict=True)):
            rows = slice(end - m, end)
            s.SV[c, :-1, :m] = arrays["support_vectors_"][rows].T
            s.BETA[c, :m], s.SVSQ[c, :m] = arrays["beta"][rows], arrays["sv_sqnorm"][rows]
        s.n_sv[:] = arrays["n_support_"]
        s.t[0] = int(arrays["steps"][0]) + 1
        s.stats[:], s.merge_ticks[:] = arrays["merge_counts"], arrays["merge_ticks"]
        self.kernel_seconds, self.kernel_ticks = records["kernel_seconds"], records["kernel_ticks"]

    def merge_seconds(self):
        """Seconds in budget maintenance: its ticks at the kernel calls' rate (nan without a counter)."""
        ticks = int(self.state.merge_ticks.sum())
        if ticks == 0:
            return 0.0
        if self.kernel_ticks <= 0:
            return float("nan")
        return ticks * self.kernel_seconds / self.kernel_ticks

    def merge_stats(self):
        """Counts of the merges so far (see ``BudgetedSVC.merge_stats_``), ``fit_seconds`` aside."""
        stats = self.state.stats.sum(axis=0)
        steps, problems = self.n_steps, self.state.stats.shape[0]
        return {
            "steps": steps,
            "margin_violations": int(stats[4]),
            "merges": int(stats[0]),
            "removals": int(stats[1]),
            "merge_frequency": float((stats[0] + stats[1]) / max(steps * problems, 1)),
            "shadow_decisions": int(stats[2]),
            "equal_decisions": int(stats[3]),
            "merge_seconds": self.merge_seconds(),
        }


def best_offsets(read, *, bins=4096, cap=1 << 20):
    """The offsets ``b_c`` that minimise ``sum_i max(0, 1 - y_ci (f_c(x_i) + b_c))`` exactly.

    The bias of the paper's objective, ``lambda/2 ||w||^2 + mean max(0,
    1 - y (w . phi(x) + b))``, is not regularised, so for the final ``w``
    the best ``b`` is a one-dimensional convex piecewise-linear problem.
    Its right derivative is ``#{z_i <= b} - n_positive`` with ``z_i = y_i -
    f(x_i)``: every ``b`` between the ``n_positive``-th and the next
    smallest ``z`` is optimal, and the midpoint is returned (with one class
    only, the extreme ``z``, an end of the optimal ray; the second array
    returned says which problems had rows of both labels).  ``read()`` yields
    ``(y, f)`` of every training row as ``(n_problems, rows)`` blocks of
    +1/-1 labels and decision values, anew at each call: a first read
    counts the rows and finds the range of ``z``, and
    :func:`order_statistics` reads on from there.
    """
    n_rows, positive, lo, hi = 0, 0, np.inf, -np.inf
    for y, f in read():
        if y.shape[1]:
            z = y - f
            n_rows, positive = n_rows + y.shape[1], positive + (y > 0).sum(axis=1)
            lo, hi = np.minimum(lo, z.min(axis=1)), np.maximum(hi, z.max(axis=1))
    if n_rows == 0:
        raise ValueError("no training rows to fit the intercept on.")
    first = np.clip(positive, 1, n_rows)
    second = np.where(positive > 0, np.minimum(positive + 1, n_rows), 1)
    low, high = order_statistics(
        lambda: (y - f for y, f in read()), first, second, lo, hi, n_rows, bins=bins, cap=cap
    )
    return 0.5 * (low + high), (positive > 0) & (positive < n_rows)


def order_statistics(read, first, second, lo, hi, n_rows, *, bins=4096, cap=1 << 20):
    """Per problem c, the ``first[c]``-th and ``second[c]``-th smallest (1-based, ``second - first``
    at most 1) of the ``n_rows`` values in ``[lo[c], hi[c]]`` that ``read()`` yields as
    ``(n_problems, rows)`` blocks, anew at each call; exactly.

    Memory stays bounded however many rows there are: each read either
    keeps the values of a window holding at most ``cap`` of them (and then
    sorts them) or counts the window's values in ``bins`` bins and narrows
    it to the bins holding the two ranks.  Rows in memory (at most ``cap``)
    take one read; streamed rows typically two.
    """
    k = len(first)
    window = [[lo[c], hi[c], True, 0, n_rows] for c in range(k)]  # lo, hi, closed at hi, below, inside
    out = np.zeros((2, k))
    todo, stuck = set(range(k)), set()  # stuck: a window the bins no longer narrow (floats too close)
    while todo:
        keep = {c: [] for c in todo if window[c][4] <= cap or c in stuck}
        counts = {c: np.zeros(bins, dtype=np.int64) for c in todo if c not in keep}
        edges = {c: np.linspace(window[c][0], window[c][1], bins + 1) for c in counts}
        seen = {c: [np.inf, -np.inf] for c in counts}
        for z in read():
            for c in todo:
                low, high, closed = window[c][:3]
                v = z[c][(z[c] >= low) & ((z[c] <= high) if closed else (z[c] < high))]
                if c in keep:
                    keep[c].append(v)
                elif v.shape[0]:
                    j = np.clip(np.searchsorted(edges[c], v, side="right") - 1, 0, bins - 1)
                    counts[c] += np.bincount(j, minlength=bins)
                    seen[c] = [min(seen[c][0], v.min()), max(seen[c][1], v.max())]
        for c in list(todo):
            below = window[c][3]
            if c in keep:
                values = np.sort(np.concatenate(keep[c]))
                out[:, c] = values[first[c] - below - 1], values[second[c] - below - 1]
            elif seen[c][0] == seen[c][1]:  # every value of the window is the same
                out[:, c] = seen[c][0]
            else:
                cum = below + np.cumsum(counts[c])
                a, b = np.searchsorted(cum, first[c]), np.searchsorted(cum, second[c])
                narrowed = [
                    edges[c][a], edges[c][b + 1], window[c][2] and b == bins - 1,
                    below + int(counts[c][:a].sum()), int(counts[c][a : b + 1].sum()),
                ]  # fmt: skip
                if narrowed[4] == window[c][4]:
                    stuck.add(c)
                window[c] = narrowed
                continue
            todo.discard(c)
    return out

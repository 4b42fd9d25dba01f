"""Degree-2 polynomial features computed on the fly (COFFIN) against materialised ``phi(X)``.

``LinearSVC(feature_map=PolynomialMap())`` trains on ``phi(x) = [x, x_i
x_j for i <= j]`` while the row memory holds the raw rows: the kernels
compute ``w . phi(x)`` (DOT), ``w += a phi(x)`` (ADD) and ``||phi(x)||^2``
from the raw row each time (Sonnenburg & Franc, COFFIN, ICML 2010).  The
alternative is to materialise ``phi(X)`` once (``PolynomialMap().
fit_transform(X)``, the columns of scikit-learn's ``PolynomialFeatures(2,
include_bias=False)``) and train a plain linear SVM on it.  Issue 6 sets
two goals: at least 20 times more rows in the same row memory on a9a, and
a DCD pass less than 2 times slower.  For each dataset and each map (the
explicit map, and the map hashed into ``--hash-buckets`` buckets) this
script measures, in one run:

1. Row memory.  Bytes per row as :class:`dask_streamsvm.engine.dual.cache.RowCache`
   counts them: the row's values and 4-byte column indices, plus the
   per-row solver state (a global id, three slot indices, start and end:
   48 bytes, and y, U, D, Qbar, alpha: 40 bytes per problem, one problem
   here), for the raw row (on the fly) and for ``phi(x)`` (materialised).
   Rows that fit in ``--budget-mb``: the number of slots a ``RowCache`` of
   that budget allocates for rows of the mean size, and the rows it holds
   after the data's rows are inserted in a random order (at most the
   data's rows).  A row of ``m`` nonzeros has ``m (m + 3) / 2`` nonzero
   degree-2 features, so the ratio of values alone is ``(m + 3) / 2``; the
   88 bytes of per-row state shrink the ratio further.
2. Seconds per DCD pass: the kernel :func:`dask_streamsvm.kernels.dcd.dcd_passes`
   on a :class:`dask_streamsvm.engine.dual.memory.BinaryProblem` of either layout,
   from alpha = 0 with shrinking, ``(t(N) - t(1)) / (N - 1)`` with each
   time the best of ``--repeats`` (as ``bench_kernel``), after a warm-up
   call.  Both layouts follow the same path (same active set and ``w`` up
   to rounding, which is checked).  Then a full in-memory fit
   (``LinearSVC(solver="memory", tol=1e-3)``) of each, which must reach
   the same objective in the same passes.
3. DOT and ADD alone, the paper's ``r_dot`` and ``r_add`` (section 4.3):
   :func:`~dask_streamsvm.kernels.objective.decision_values` (DOT on every
   row) and :func:`~dask_streamsvm.kernels.objective.add_weighted_rows`
   (ADD of every row, all alphas nonzero), best of ``--repeats`` after a
   warm-up call; on-the-fly seconds over materialised seconds.
4. Out of core (explicit map): ``LinearSVC(solver="sbm")`` and
   ``solver="streamsvm"`` on the rows as a Dask array of ``--partitions``
   blocks, ``cache_bytes`` a fixed fraction (``--ooc-memory``) of the raw
   rows' row memory for both layouts (so materialised, the cache holds
   fewer rows): reads and seconds until the certified relative duality
   gap first reaches 1e-3.  ``phi(X)`` is materialised beforehand and not
   counted in the materialised fit's seconds.

A fifth part measures weighted-degree string features on DNA-like
sequences as the data grow (the issue's second half; see
:mod:`benchmarks._weighted_degree`).

Data: a9a (LIBSVM ``.bz2``, 123 binary features, about 14 nonzeros a row,
so ``phi`` has about 117) and a synthetic sparse set generated here:
``--rows`` rows (1,000,000) of ``--features`` features (1,000), ``--nnz``
(10) random columns a row with standard normal values scaled by
``1/sqrt(nnz)`` (duplicates summed, so slightly fewer), labels the sign of
a random sparse weight vector on ``phi(x)`` with 5% flipped; its explicit
``phi`` has 501,500 features and about 64 nonzeros a row (0.8 GB
materialised).  Part 4 uses its first ``--ooc-rows`` rows.  The problem is
L1-loss (``loss="hinge"``), ``C = 0.1``, no intercept, float64 values,
seed 0.

Run ``python -m benchmarks.bench_feature_maps [--quick]``; results go to
``benchmarks/results/bench_feature_maps.json`` and ``docs/benchmarks.md``.

``--memory`` measures instead what a degree-2 fit costs in memory against
the size of ``w`` (issue 41): ``LinearSVC(feature_map=...)`` on a
text-like set of 7,770 rows and 8,315 features
(:func:`benchmarks.bench_budgeted.text_like`, about 30 nonzeros a row),
whose explicit degree-2 space has 34.6 million features, with the explicit
map, the polynomial kernel's map and a hashed map, in memory and out of
core (SBM and StreamSVM on a Dask array of 8 blocks).  Each fit runs in a
process of its own after a warm-up fit: the peak of the memory Python's
``tracemalloc`` traces during the fit (NumPy's arrays included) and the
growth of the peak resident set over the process's size before the fit,
both over ``coef_.nbytes``.  Results go to
``benchmarks/results/bench_feature_maps_memory.json`` (and the terminal),
not to ``docs/benchmarks.md``.
"""

import argparse
import os
import time
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp

from benchmarks._common import ROOT, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_feature_maps.json"
MARKER = "## Feature maps: computed on the fly against materialised"
SEED = 0
TARGET_GAP = 1e-3
N_PROBLEMS = 1
# Per-row solver state of the row cache (RowCache): gid, live, pos, free, start, end (int64) and
# y, U, D, Qbar, alpha (float64) per problem.
ROW_STATE_BYTES = 4 * 8 + 5 * 8 * N_PROBLEMS + 2 * 8
INDEX_BYTES = 4  # int32 column indices
GOAL_ROWS_RATIO = 20.0  # issue 6, on a9a
GOAL_PASS_RATIO = 2.0


# -- data ---------------------------------------------------------------------------


def load_a9a():
    from benchmarks.bench_schedules import load_libsvm
    from dask_streamsvm.features import canonical_csr

    X, y = load_libsvm("a9a")
    return canonical_csr(X), y


def synthetic_rows(n_rows, n_features, nnz_per_row, seed):
    """``n_rows`` CSR rows with ``nnz_per_row`` random columns each (duplicates summed)."""
    from dask_streamsvm.datasets import compact_csr

    rng = np.random.default_rng(seed)
    nnz = n_rows * nnz_per_row
    indices = rng.integers(0, n_features, size=nnz, dtype=np.int32)
    data = rng.standard_normal(nnz) / np.sqrt(nnz_per_row)
    indptr = np.arange(0, nnz + 1, nnz_per_row, dtype=np.int64)
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features))
    X.sum_duplicates()
    return compact_csr(X)


def degree_two_labels(Z, seed, density=0.2, flip=0.05):
    """Signs of a random sparse weight vector on the explicit ``phi(X)`` ``Z``, ``flip`` of them flipped."""
    rng = np.random.default_rng(seed + 1)
    w = rng.standard_normal(Z.shape[1]) * (rng.random(Z.shape[1]) < density)
    y = np.where(Z @ w > 0.0, 1.0, -1.0)
    flipped = rng.random(y.shape[0]) < flip
    y[flipped] = -y[flipped]
    return y


def materialise(fmap, X, chunk_rows):
    """``(phi(X), seconds)``: ``fmap.fit_transform`` by blocks of ``chunk_rows`` rows (bounded memory)."""
    from dask_streamsvm.datasets import compact_csr

    start = time.perf_counter()
    fmap.fit(X)
    parts = [fmap.transform(X[i : i + chunk_rows]) for i in range(0, X.shape[0], chunk_rows)]
    Z = compact_csr(sp.vstack(parts, format="csr"))
    Z.sum_duplicates()  # canonical, so that kernel_rows takes it without a copy
    return Z, time.perf_counter() - start


# -- part 1: row memory ---------------------------------------------------------------


def bytes_per_row(nnz_per_row, itemsize):
    """Mean row-memory bytes of a row: its values and int32 indices, plus the per-row solver state."""
    return ROW_STATE_BYTES + nnz_per_row * (itemsize + INDEX_BYTES)


def raw_nnz_for_ratio(target, itemsize):
    """Least nonzeros ``m`` a raw row needs for its degree-2 ``phi`` to take ``target`` times its bytes."""
    m = 1
    while bytes_per_row(m * (m + 3) / 2, itemsize) < target * bytes_per_row(m, itemsize):
        m += 1
    return m


def fill_cache(rows, y, spec, budget, C, seed):
    """A ``RowCache`` of ``budget`` bytes filled with ``rows`` in random order: what it allocates, holds."""
    from dask_streamsvm.engine.dual.alpha_store import AlphaStore
    from dask_streamsvm.engine.dual.cache import RowCache
    from dask_streamsvm.kernels.rng import make_state

    n = rows.shape[0]
    cache = RowCache(
        budget, rows.shape[1], rows.dtype, True, N_PROBLEMS, nnz_per_row=rows.nnz / n, feature_map=spec
    )
    order = np.random.default_rng(seed).permutation(n)[: min(n, 2 * cache.n_slots)]
    store = AlphaStore(N_PROBLEMS)
    block_y = y[order][None, :]
    cache.insert(rows[order], order.astype(np.int64), block_y, np.full_like(block_y, C), False, 0.0,
                 store, make_state(seed))  # fmt: skip
    return {
        "slots": int(cache.n_slots),
        "rows_held": int(cache.n_live),
        "rows_inserted": int(order.shape[0]),
        "allocated_bytes": int(cache.nbytes),
        "used_bytes": int(cache.used_bytes),
    }


def row_memory(X, Z, y, spec, args):
    budget = int(args.budget_mb * 1e6)
    n = X.shape[0]
    item = X.dtype.itemsize
    fly = {"nnz_per_row": X.nnz / n, "bytes_per_row": bytes_per_row(X.nnz / n, item)}
    mat = {"nnz_per_row": Z.nnz / n, "bytes_per_row": bytes_per_row(Z.nnz / n, Z.dtype.itemsize)}
    fly.update(fill_cache(X, y, spec, budget, args.C, SEED))
    mat.update(fill_cache(Z, y, None, budget, args.C, SEED))
    for side in (fly, mat):
        side["rows_by_formula"] = int(budget // side["bytes_per_row"])
        side["data_bytes"] = int(round(n * side["bytes_per_row"]))
    return {
        "budget_bytes": budget,
        "on_the_fly": fly,
        "materialised": mat,
        "bytes_ratio": mat["bytes_per_row"] / fly["bytes_per_row"],
        "values_ratio": mat["nnz_per_row"] / fly["nnz_per_row"],
        "rows_ratio": fly["slots"] / mat["slots"],
        "raw_nnz_for_goal": raw_nnz_for_ratio(GOAL_ROWS_RATIO, item),
    }


# -- parts 2 and 3: DCD passes, DOT and ADD ------------------------------------------------


def interleaved(repeats, calls):
    """Seconds of every call of ``calls`` (name -> ``(fn, reset)``), taken in turn ``repeats`` times.

    Each round times every call once (``reset()``, when given, runs before
    its call and is not timed), so that the layouts compared share the
    machine's state: on-the-fly kernels are compute-bound and their times
    move with the load of a shared host more than memory-bound ones do.
    """
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, (fn, reset) in calls.items():
            if reset is not None:
                reset()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def layouts(X, Z, spec):
    from dask_streamsvm.engine.plan.layout import kernel_rows

    return {"on_the_fly": kernel_rows(X, spec), "materialised": kernel_rows(Z)}


def relative_difference(a, b):
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a - b))) / scale


def dot_and_add(rows_by_layout, y, n_out, repeats):
    """Seconds of DOT and of ADD over every row, per layout; the ratios; the results' agreement."""
    from dask_streamsvm.kernels.objective import add_weighted_rows, decision_values

    n = y.shape[0]
    rng = np.random.default_rng(SEED)
    w = rng.standard_normal(n_out + 1)
    alpha = rng.random(n) + 0.01  # every row is added
    scores = {layout: np.empty(n) for layout in rows_by_layout}
    added = {layout: np.zeros(n_out + 1) for layout in rows_by_layout}
    calls = {}
    for layout, rows in rows_by_layout.items():
        s, v = scores[layout], added[layout]
        decision_values(rows, w, 0.0, s)  # compile, or load from numba's cache
        add_weighted_rows(rows, y, alpha, v, 0.0)
        calls[(layout, "dot")] = (partial(decision_values, rows, w, 0.0, s), None)
        calls[(layout, "add")] = (partial(add_weighted_rows, rows, y, alpha, v, 0.0), partial(v.fill, 0.0))
    times = interleaved(repeats, calls)
    out = {
        layout: {
            "dot_seconds": min(times[(layout, "dot")]),
            "add_seconds": min(times[(layout, "add")]),
            "dot_all_seconds": times[(layout, "dot")],
            "add_all_seconds": times[(layout, "add")],
        }
        for layout in rows_by_layout
    }
    fly, mat = out["on_the_fly"], out["materialised"]
    return {
        **out,
        "r_dot": fly["dot_seconds"] / mat["dot_seconds"],
        "r_add": fly["add_seconds"] / mat["add_seconds"],
        # The spread of the paired ratios (round by round) shows how much the host moved them.
        "r_dot_rounds": [a / b for a, b in zip(fly["dot_all_seconds"], mat["dot_all_seconds"], strict=True)],
        "r_add_rounds": [a / b for a, b in zip(fly["add_all_seconds"], mat["add_all_seconds"], strict=True)],
        "dot_max_relative_difference": relative_difference(scores["on_the_fly"], scores["materialised"]),
        "add_max_relative_difference": relative_difference(added["on_the_fly"], added["materialised"]),
    }


def dcd_run(problem, n_passes):
    """``(passes, active size, w)`` of ``n_passes`` DCD passes from alpha = 0 with shrinking."""
    from dask_streamsvm.kernels.dcd import ProblemArrays, Shrinking, dcd_passes
    from dask_streamsvm.kernels.rng import make_state

    n = problem.y.shape[0]
    alpha, w = np.zeros(n), np.zeros(problem.n_features + 1)
    index = np.arange(n, dtype=np.int64)
    arrays = ProblemArrays(problem.y, problem.upper, problem.diag, problem.qd, problem.loss_code)
    shrinking = Shrinking(n, np.inf, -np.inf)
    out = dcd_passes(
        problem.X, arrays, index, alpha, w, problem.bias, n_passes, 1e-14, shrinking, make_state(SEED)
    )
    return int(out[0]), int(out[1]), w


def dcd_per_pass(rows_by_layout, y, n_out, n_passes, args):
    """Seconds per DCD pass per layout, ``(t(N) - t(1)) / (N - 1)``, and the two runs' agreement."""
    from dask_streamsvm.engine.dual.memory import BinaryProblem

    problems, setup, runs, calls = {}, {}, {}, {}
    for layout, rows in rows_by_layout.items():
        start = time.perf_counter()
        problems[layout] = BinaryProblem(rows, y, np.full(y.shape[0], args.C), "hinge", 0.0, n_out)
        setup[layout] = time.perf_counter() - start  # ||phi(x)||^2 of every row
        dcd_run(problems[layout], 2)  # compile, or load from numba's cache
        runs[layout] = []
        calls[(layout, 1)] = (partial(dcd_run, problems[layout], 1), None)
        calls[(layout, n_passes)] = (
            lambda p=problems[layout], r=runs[layout]: r.append(dcd_run(p, n_passes)),
            None,
        )
    times = interleaved(args.repeats, calls)
    out, weights = {}, {}
    for layout in rows_by_layout:
        t1, tn = min(times[(layout, 1)]), min(times[(layout, n_passes)])
        done, active, w = runs[layout][-1]
        out[layout] = {
            "setup_seconds": setup[layout],
            "one_pass_seconds": t1,
            "n_passes_seconds": tn,
            "one_pass_all_seconds": times[(layout, 1)],
            "n_passes_all_seconds": times[(layout, n_passes)],
            "passes": done,
            "active_after": active,
            "seconds_per_pass": (tn - t1) / max(done - 1, 1),
        }
        weights[layout] = w
    fly, mat = out["on_the_fly"], out["materialised"]
    return {
        **out,
        "ratio": fly["seconds_per_pass"] / mat["seconds_per_pass"],
        "same_active_set_size": fly["active_after"] == mat["active_after"],
        "w_max_relative_difference": relative_difference(weights["on_the_fly"], weights["materialised"]),
    }


def fit_summary(clf, seconds):
    return {
        "seconds": seconds,
        "passes": int(clf.n_iter_),
        "objective": float(clf.objective_),
        "gap": float(clf.duality_gap_),
        "converged": bool(clf.duality_gap_ <= TARGET_GAP),
    }


def in_memory_fits(X, Z, y, fmap, args):
    """``LinearSVC(solver="memory")`` to a gap of 1e-3 on the raw rows with the map, and on ``phi(X)``."""
    from dask_streamsvm import LinearSVC

    out, coefs = {}, {}
    for layout, data, feature_map in (("on_the_fly", X, fmap), ("materialised", Z, None)):
        clf = LinearSVC(
            C=args.C, loss="hinge", fit_intercept=False, solver="memory", tol=TARGET_GAP,
            max_iter=args.max_iter, random_state=SEED, feature_map=feature_map,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unconverged fit shows in its gap
            start = time.perf_counter()
            clf.fit(data, y)
            seconds = time.perf_counter() - start
        out[layout] = fit_summary(clf, seconds)
        coefs[layout] = clf.coef_.ravel()
    fly, mat = out["on_the_fly"], out["materialised"]
    same_shape = coefs["on_the_fly"].shape == coefs["materialised"].shape
    return {
        **out,
        "seconds_ratio": fly["seconds"] / mat["seconds"],
        "objective_relative_difference": abs(fly["objective"] - mat["objective"]) / abs(mat["objective"]),
        "coef_max_relative_difference": (
            relative_difference(coefs["on_the_fly"], coefs["materialised"]) if same_shape else None
        ),
    }


# -- part 4: out of core ---------------------------------------------------------------


def out_of_core(name, X, Z, y, fmap, args):
    """SBM and StreamSVM fits of the Dask rows, raw with the map and materialised, at equal cache_bytes."""
    from dask_streamsvm import LinearSVC
    from dask_streamsvm.io import csr_to_dask

    n = X.shape[0]
    raw_bytes = n * bytes_per_row(X.nnz / n, X.dtype.itemsize)
    phi_bytes = n * bytes_per_row(Z.nnz / n, Z.dtype.itemsize)
    collections = {
        "on_the_fly": (*csr_to_dask(X, y, args.partitions), fmap),
        "materialised": (*csr_to_dask(Z, y, args.partitions), None),
    }
    rows = []
    for fraction in args.ooc_memory:
        budget = int(fraction * raw_bytes)
        for solver in ("sbm", "streamsvm"):
            row = {"data": name, "n_rows": n, "solver": solver, "memory_fraction": fraction,
                   "cache_bytes": budget, "raw_bytes": raw_bytes, "phi_bytes": phi_bytes}  # fmt: skip
            for layout, (X_dask, y_dask, feature_map) in collections.items():
                clf = LinearSVC(
                    C=args.C, loss="hinge", fit_intercept=False, solver=solver, cache_bytes=budget,
                    tol=TARGET_GAP, max_iter=args.ooc_max_iter, random_state=SEED, feature_map=feature_map,
                )  # fmt: skip
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    clf.fit(X_dask, y_dask)
                    seconds = time.perf_counter() - start
                history = clf.history_
                first = next((r for r in history if r["gap"] <= TARGET_GAP), None)
                last = history[-1]
                row[layout] = {
                    **fit_summary(clf, seconds),
                    "reads_to_target": None if first is None else first["rows_read"] / n,
                    "seconds_to_target": None if first is None else first["seconds"],
                    "reads": last["rows_read"] / n,
                    "last_gap": last["gap"],
                    "cache_rows": max((r.get("cache_rows") or 0) for r in history),
                    "memory_bytes": max((r.get("memory_bytes") or 0) for r in history) or None,
                    "history": [
                        {k: r.get(k) for k in ("pass", "seconds", "rows_read", "gap", "primal", "cache_rows")}
                        for r in history
                    ],
                }
            fly, mat = row["on_the_fly"], row["materialised"]
            row["objective_relative_difference"] = abs(fly["objective"] - mat["objective"]) / abs(
                mat["objective"]
            )
            print(
                f"{name:10s} {solver:9s} cache {fraction:.0%} of raw: reads to {TARGET_GAP:g} "
                f"{_fmt(fly['reads_to_target'], '.0f', 'n/r')} on the fly ({fly['seconds']:.1f}s), "
                f"{_fmt(mat['reads_to_target'], '.0f', 'n/r')} materialised ({mat['seconds']:.1f}s)",
                flush=True,
            )
            rows.append(row)
    return rows


# -- part 5: weighted-degree string features ------------------------------------------------


def weighted_degree_strings(args):
    """Weighted-degree features on DNA-like sequences as data grow (:mod:`benchmarks._weighted_degree`)."""
    from benchmarks._weighted_degree import weighted_degree_strings as measure

    sizes = args.wd_sizes
    print(f"weighted degree: {sizes}", flush=True)
    return {"sizes": sizes, "records": measure(sizes, seed=SEED)}


# -- the run -------------------------------------------------------------------------------


def warm_up(args):
    """Compile (or load from numba's cache) every kernel the fits use, on 2,000 rows of a9a, both layouts."""
    from dask_streamsvm import LinearSVC, PolynomialMap
    from dask_streamsvm.io import csr_to_dask

    X, y = load_a9a()
    X, y = X[:2000], y[:2000]
    fmap = PolynomialMap()
    Z, _ = materialise(fmap, X, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for data, feature_map in ((X, fmap), (Z, None)):
            common = {
                "C": args.C,
                "loss": "hinge",
                "fit_intercept": False,
                "max_iter": 2,
                "random_state": SEED,
            }
            LinearSVC(solver="memory", feature_map=feature_map, **common).fit(data, y)
            X_dask, y_dask = csr_to_dask(data, y, 8)
            for solver in ("sbm", "streamsvm"):
                LinearSVC(solver=solver, cache_bytes=200_000, feature_map=feature_map, **common).fit(
                    X_dask, y_dask
                )


def measure_dataset(name, X, y, args, n_passes, ooc_rows):
    """Every part for one dataset: both maps for parts 1-3, the explicit map out of core."""
    from dask_streamsvm import PolynomialMap

    maps = {"explicit": PolynomialMap(), f"hashed, {args.hash_buckets} buckets": PolynomialMap(
        n_features=args.hash_buckets, seed=SEED)}  # fmt: skip
    entries, ooc = [], []
    for label, fmap in maps.items():
        start = time.perf_counter()
        Z, mat_seconds = materialise(fmap, X, args.chunk_rows)
        if y is None:  # the synthetic labels need the explicit phi(X)
            y = degree_two_labels(Z, SEED)
        spec = fmap.spec(X.shape[1])
        n_out = int(spec[0]["n_out"])
        rows_by_layout = layouts(X, Z, spec)
        entry = {
            "data": name,
            "map": label,
            "n_rows": X.shape[0],
            "n_features": X.shape[1],
            "n_features_out": n_out,
            "materialise_seconds": mat_seconds,
            "row_memory": row_memory(X, Z, y, spec, args),
            "dot_add": dot_and_add(rows_by_layout, y, n_out, args.repeats),
            "dcd": dcd_per_pass(rows_by_layout, y, n_out, n_passes, args),
            "fit": in_memory_fits(X, Z, y, fmap, args),
        }
        del rows_by_layout
        entry["seconds"] = time.perf_counter() - start
        entries.append(entry)
        rm, da_, dcd, fit = entry["row_memory"], entry["dot_add"], entry["dcd"], entry["fit"]
        print(
            f"{name:10s} {label:24s} bytes/row {rm['on_the_fly']['bytes_per_row']:.0f} vs "
            f"{rm['materialised']['bytes_per_row']:.0f} (rows x{rm['rows_ratio']:.1f}); DCD pass "
            f"{dcd['on_the_fly']['seconds_per_pass'] * 1e3:.1f} vs "
            f"{dcd['materialised']['seconds_per_pass'] * 1e3:.1f}"
            f" ms (x{dcd['ratio']:.2f}); r_dot {da_['r_dot']:.2f}, r_add {da_['r_add']:.2f}; fit "
            f"{fit['on_the_fly']['seconds']:.1f}s vs {fit['materialised']['seconds']:.1f}s, objective diff "
            f"{fit['objective_relative_difference']:.1e} [{entry['seconds']:.0f}s]",
            flush=True,
        )
        if label == "explicit" and ooc_rows:
            r = min(ooc_rows, X.shape[0])
            ooc = out_of_core(
                name if r == X.shape[0] else f"{name} ({r:,} rows)", X[:r], Z[:r], y[:r], fmap, args
            )
        del Z
    return entries, ooc


def _fmt(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def _sentence(text):
    return text[:1].upper() + text[1:]


def _spread(ratios):
    """``(lowest-highest)`` of the round-by-round ratios, or nothing for a single round."""
    return f"({min(ratios):.1f}-{max(ratios):.1f})" if len(ratios) > 1 else ""


def write_report(payload):
    m = payload["machine"]
    s = payload["settings"]
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Machine: {m['platform']}, {m['cores']} cores, Python {m['python']}, numpy {m['numpy']}, "
        f"scipy {m['scipy']}, dask {m['dask']}, numba {m['numba']}; load average "
        f"{payload['load_average'][0]:.1f} before, {payload['load_average_after'][0]:.1f} after.  ",
        f"Date: {payload['date']}; commit {str(payload['source']['commit'])[:7]}"
        f"{' with local changes to the package' if payload['source']['package_modified'] else ''}; "
        f"seed {payload['seed']}; the whole run took {payload['seconds'] / 60:.1f} min.",
        "",
        "Degree-2 polynomial features `phi(x) = [x, x_i x_j for i <= j]` (`PolynomialMap()`; and hashed, "
        f"`PolynomialMap(n_features={s['hash_buckets']})`) *on the fly*: the row memory holds the raw rows "
        "and the kernels compute phi inside DOT and ADD; or *materialised*: "
        "`PolynomialMap().fit_transform(X)` once, then a plain linear SVM on phi(X). L1-loss SVM, C = "
        f"{s['C']:g}, no intercept, float64. Data: a9a (32,561 rows, 123 binary features) and a synthetic "
        f"sparse set of {s['rows']:,} rows x {s['features']:,} features, {s['nnz']} random nonzeros a row "
        "(duplicates summed), labels from a random sparse weight vector on phi(x), 5% flipped.",
        "",
        f"Row memory, in a budget of {s['budget_mb']:g} MB. *bytes/row*: mean bytes of a row in the row "
        f"cache: values and 4-byte indices plus {ROW_STATE_BYTES} bytes of per-row solver state "
        "(32 + 40k + 16 for k = 1 problem), of the raw row (on the fly) and of phi(x) (materialised). "
        "*rows in budget*: the slots a `RowCache` of the budget allocates for rows of the mean size; "
        "*held*: the rows it holds after the data's rows were inserted in a random order (at most the "
        "data's rows; once full, the cache evicts at random rather than compact its value arena until an "
        "eighth of it is garbage, so it then holds 7/8 to all of its slots). "
        "*ratio*: on the fly over materialised. A row of m nonzeros has m (m + 3) / 2 "
        "nonzero degree-2 features, so the values alone grow (m + 3) / 2 times (*values ratio*); the fixed "
        "per-row state lowers the bytes ratio further. *m for 20x*: the nonzeros a raw row needs for "
        "phi(x) to take 20 times its bytes.",
        "",
        "| data | map | nnz/row raw -> phi | bytes/row on the fly | bytes/row materialised | values ratio | "
        "rows in budget on the fly (held) | rows in budget materialised (held) | rows ratio | m for 20x |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in payload["results"]:
        rm = e["row_memory"]
        fly, mat = rm["on_the_fly"], rm["materialised"]
        lines.append(
            f"| {e['data']} | {e['map']} | {fly['nnz_per_row']:.1f} -> {mat['nnz_per_row']:.1f} | "
            f"{fly['bytes_per_row']:.0f} | {mat['bytes_per_row']:.0f} | {rm['values_ratio']:.1f} | "
            f"{fly['slots']:,} ({fly['rows_held']:,}) | {mat['slots']:,} ({mat['rows_held']:,}) | "
            f"{rm['rows_ratio']:.1f} | {rm['raw_nnz_for_goal']} |"
        )
    lines += [
        "",
        "Speed. *materialise s*: `fit_transform` of every row. *DCD ms/pass*: the DCD kernel on a "
        "`BinaryProblem` of each layout from alpha = 0 with shrinking, (t(N) - t(1)) / (N - 1), N = "
        f"{s['passes']} passes on a9a and {s['synthetic_passes']} on the synthetic set, best of "
        f"{s['repeats']}; *ratio*: on the fly / materialised (goal: under {GOAL_PASS_RATIO:g}). *DOT ms*, "
        "*ADD ms*: `decision_values` (w . phi(x) for every row) and `add_weighted_rows` (w += a phi(x) "
        f"for every row), best of {s['repeats']} after a warm-up call; *r_dot*, *r_add*: on the fly / "
        "materialised, the paper's slowdown factors (COFFIN reports r_add = 1.28, r_dot = 1.85 for its "
        "virtual examples), from the best times; in brackets the range of the ratios round by round (the "
        "best times may come from different rounds, so the first can fall outside it). The layouts are "
        "timed in turn, round by round, so that both see the same load; the on-the-fly kernels are "
        "compute-bound and their times move with the host's load (up to 4x between calls on this shared "
        "2-core machine) much more than the memory-bound materialised ones. "
        "*agreement*: the largest difference between the layouts, relative to the "
        "largest value, of the DOT results, the ADD results and w after the N passes (rounding only: "
        "the sums run in another order).",
        "",
        "| data | map | phi features | materialise s | DCD ms/pass on the fly | materialised | ratio | "
        "DOT ms on the fly / mat. | r_dot | ADD ms on the fly / mat. | r_add | agreement DOT, ADD, w |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in payload["results"]:
        d, a = e["dcd"], e["dot_add"]
        lines.append(
            f"| {e['data']} | {e['map']} | {e['n_features_out']:,} | {e['materialise_seconds']:.2f} | "
            f"{d['on_the_fly']['seconds_per_pass'] * 1e3:.1f} | "
            f"{d['materialised']['seconds_per_pass'] * 1e3:.1f} | "
            f"{d['ratio']:.2f} | {a['on_the_fly']['dot_seconds'] * 1e3:.1f} / "
            f"{a['materialised']['dot_seconds'] * 1e3:.1f} | {a['r_dot']:.2f} {_spread(a['r_dot_rounds'])} | "
            f"{a['on_the_fly']['add_seconds'] * 1e3:.1f} / {a['materialised']['add_seconds'] * 1e3:.1f} | "
            f"{a['r_add']:.2f} {_spread(a['r_add_rounds'])} | {a['dot_max_relative_difference']:.0e}, "
            f"{a['add_max_relative_difference']:.0e}, {d['w_max_relative_difference']:.0e} |"
        )
    lines += [
        "",
        f"In memory: `LinearSVC(solver='memory', tol={TARGET_GAP:g})` on the raw rows with the map and "
        "on phi(X) (materialisation not included), same seed: the same problem, so the same passes and "
        "objective up to rounding. *s*: fit seconds; *passes, gap*: DCD passes and the final certified "
        "relative duality gap.",
        "",
        "| data | map | on the fly: s, passes, gap | materialised: s, passes, gap | s ratio | "
        "objective rel. difference |",
        "|---|---|---|---|---|---|",
    ]
    for e in payload["results"]:
        f = e["fit"]
        fly, mat = f["on_the_fly"], f["materialised"]
        lines.append(
            f"| {e['data']} | {e['map']} | {fly['seconds']:.2f}, {fly['passes']}, {fly['gap']:.1e} | "
            f"{mat['seconds']:.2f}, {mat['passes']}, {mat['gap']:.1e} | {f['seconds_ratio']:.2f} | "
            f"{f['objective_relative_difference']:.1e} |"
        )
    lines += [
        "",
        "Out of core (explicit map): the rows as a Dask array of "
        f"{s['partitions']} blocks; `LinearSVC(solver=..., cache_bytes=B, tol={TARGET_GAP:g})` with B a "
        "fraction of the raw rows' row memory, the same B for both layouts (SBM: cache = block = B). "
        "*cache rows*: the most rows the cache held; *reads to 1e-3*: passes over the data until the "
        "certified relative duality gap first reaches 1e-3 (counting the read that certifies it), with "
        "the seconds since the start of the fit; *last*: reads and gap at the end (max_iter "
        f"{s['ooc_max_iter']}); phi(X) is materialised beforehand, not counted; *data MB*: the row "
        "memory of all rows, raw / phi.",
        "",
        "| data | solver | B (of raw) | data MB raw / phi | cache rows on the fly / mat. | reads to 1e-3 "
        "on the fly (s) | reads to 1e-3 materialised (s) | last on the fly: reads, gap | last "
        "materialised: reads, gap | objective rel. difference |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in payload["out_of_core"]:
        fly, mat = r["on_the_fly"], r["materialised"]

        def reached(side):
            if side["reads_to_target"] is None:
                return "not reached"
            return f"{side['reads_to_target']:.0f} ({side['seconds_to_target']:.1f}s)"

        lines.append(
            f"| {r['data']} | {r['solver']} | {r['cache_bytes'] / 1e6:.2f} MB ({r['memory_fraction']:.0%}) | "
            f"{r['raw_bytes'] / 1e6:.1f} / {r['phi_bytes'] / 1e6:.1f} | {fly['cache_rows']:,} / "
            f"{mat['cache_rows']:,} | {reached(fly)} | {reached(mat)} | {fly['reads']:.0f}, "
            f"{fly['last_gap']:.1e} | {mat['reads']:.0f}, {mat['last_gap']:.1e} | "
            f"{r['objective_relative_difference']:.1e} |"
        )
    if not payload["out_of_core"]:
        lines.append("| - | skipped | | | | | | | | |")
    from benchmarks._weighted_degree import report as weighted_degree_report

    lines += weighted_degree_report(payload["weighted_degree"]["records"])
    lines += ["", "Raw results: `benchmarks/results/bench_feature_maps.json`.", ""]
    write_section(MARKER, lines)


MEMORY_MAPS = {
    "PolynomialMap()": lambda PolynomialMap: PolynomialMap(),
    "PolynomialMap(gamma=1.0, coef0=1.0)": lambda PolynomialMap: PolynomialMap(gamma=1.0, coef0=1.0),
    "PolynomialMap(n_features=2**22)": lambda PolynomialMap: PolynomialMap(n_features=2**22),
}
MEMORY_FITS = [(name, "memory") for name in MEMORY_MAPS] + [
    ("PolynomialMap()", "sbm"),
    ("PolynomialMap()", "streamsvm"),
]


def memory_of_one_fit(map_name, solver, rows):
    """``--memory``'s measurement of one fit, in this process (a fresh one): a dict."""
    import resource
    import tracemalloc

    from benchmarks.bench_budgeted import text_like
    from dask_streamsvm import LinearSVC, PolynomialMap
    from dask_streamsvm.io import csr_to_dask

    X, y = text_like(rows)
    data = (X, y) if solver == "memory" else csr_to_dask(X, y, 8)
    fmap = MEMORY_MAPS[map_name](PolynomialMap)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm = (X[:50], y[:50]) if solver == "memory" else data
        LinearSVC(feature_map=fmap, solver=solver, max_iter=2).fit(*warm)
        before = _resident_bytes()
        tracemalloc.start()
        start = time.perf_counter()
        clf = LinearSVC(feature_map=fmap, solver=solver).fit(*data)
        seconds = time.perf_counter() - start
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    w = clf.coef_.nbytes
    return {
        "map": map_name, "solver": solver, "rows": rows, "features": X.shape[1],
        "nonzeros_per_row": X.nnz / X.shape[0], "coef_features": clf.coef_.shape[1], "w_bytes": w,
        "traced_peak_bytes": traced_peak, "traced_peak_over_w": traced_peak / w,
        "rss_growth_bytes": peak_rss - before, "rss_growth_over_w": (peak_rss - before) / w,
        "fit_seconds": seconds, "passes": int(clf.n_iter_),
    }  # fmt: skip


def _resident_bytes():
    """This process's resident set now (Linux ``/proc``), in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_benchmark(argv, rows):
    """``--memory``: each of :data:`MEMORY_FITS` in a process of its own; results to a JSON file."""
    import json
    import subprocess
    import sys

    from benchmarks._common import machine

    start, load = time.perf_counter(), os.getloadavg()
    fits = []
    for map_name, solver in MEMORY_FITS:
        code = (
            "import json; from benchmarks.bench_feature_maps import memory_of_one_fit; "
            f"print(json.dumps(memory_of_one_fit({map_name!r}, {solver!r}, {rows})))"
        )
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"the fit of {map_name} with solver={solver!r} failed:\n{out.stderr}")
        fit = json.loads(out.stdout.strip().splitlines()[-1])
        fits.append(fit)
        print(
            f"{map_name}, {solver}: w {fit['w_bytes'] / 2**20:.1f} MiB ({fit['coef_features']:,} features); "
            f"traced peak {fit['traced_peak_over_w']:.2f} w, "
            f"peak RSS growth {fit['rss_growth_over_w']:.2f} w; {fit['fit_seconds']:.1f} s",
            flush=True,
        )
    payload = {
        **payload_header("bench_feature_maps", argv),
        "machine": machine(),
        "load_average": list(load),
        "load_average_after": list(os.getloadavg()),
        "seconds": time.perf_counter() - start,
        "fits": fits,
    }
    save_json(RESULTS.with_name("bench_feature_maps_memory.json"), payload)


def main(argv=None):
    from benchmarks._common import machine
    from benchmarks.bench_schedules import source_state

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="synthetic rows (0: none)")
    parser.add_argument("--features", type=int, default=1000, help="synthetic raw features")
    parser.add_argument("--nnz", type=int, default=10, help="synthetic nonzeros a row")
    parser.add_argument("--hash-buckets", type=int, default=2**18)
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--budget-mb", type=float, default=10.0, help="row memory budget of part 1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--passes", type=int, default=20, help="DCD passes timed on a9a")
    parser.add_argument(
        "--synthetic-passes", type=int, default=5, help="DCD passes timed on the synthetic set"
    )
    parser.add_argument("--max-iter", type=int, default=500, help="in-memory fits")
    parser.add_argument("--ooc-rows", type=int, default=100_000, help="synthetic rows out of core (0: none)")
    parser.add_argument("--ooc-memory", type=float, nargs="*", default=[0.1, 0.3], help="of the raw rows")
    parser.add_argument("--ooc-max-iter", type=int, default=30)
    parser.add_argument("--partitions", type=int, default=128)
    parser.add_argument("--chunk-rows", type=int, default=100_000, help="rows materialised at a time")
    parser.add_argument(
        "--wd-sizes", type=int, nargs="*", default=[5000, 20_000, 80_000], help="training sequences"
    )
    parser.add_argument("--quick", action="store_true", help="a small check that everything runs")
    parser.add_argument("--memory", action="store_true", help="only the memory of degree-2 fits against w")
    parser.add_argument("--memory-rows", type=int, default=7770, help="with --memory: rows (7770)")
    args = parser.parse_args(argv)
    if args.memory:
        memory_benchmark(argv, args.memory_rows)
        return
    if args.quick:
        args.rows = min(args.rows, 50_000)
        args.repeats = 1
        args.passes = min(args.passes, 5)
        args.synthetic_passes = min(args.synthetic_passes, 3)
        args.ooc_rows = min(args.ooc_rows, 10_000)
        args.ooc_memory = args.ooc_memory[:1]
        args.ooc_max_iter = min(args.ooc_max_iter, 10)
        args.wd_sizes = [2000]

    start = time.perf_counter()
    load = os.getloadavg()
    source = source_state()  # before the run: the code it imports
    warm_up(args)
    results, ooc = [], []
    X, y = load_a9a()
    part, rows_ooc = measure_dataset("a9a", X, y, args, args.passes, ooc_rows=X.shape[0])
    results += part
    ooc += rows_ooc
    if args.rows > 0:
        t = time.perf_counter()
        X = synthetic_rows(args.rows, args.features, args.nnz, SEED)
        print(f"generated {X.shape[0]:,} synthetic rows in {time.perf_counter() - t:.1f}s", flush=True)
        part, rows_ooc = measure_dataset("synthetic", X, None, args, args.synthetic_passes, args.ooc_rows)
        results += part
        ooc += rows_ooc
    weighted_degree = weighted_degree_strings(args)
    settings = {
        key: getattr(args, key)
        for key in ("rows", "features", "nnz", "hash_buckets", "C", "budget_mb", "repeats", "passes",
                    "synthetic_passes", "max_iter", "ooc_rows", "ooc_memory", "ooc_max_iter", "partitions",
                    "wd_sizes", "quick")
    }  # fmt: skip
    payload = {
        **payload_header("bench_feature_maps", argv),
        "machine": machine(),
        "source": source,
        "seed": SEED,
        "loss": "hinge",
        "target_gap": TARGET_GAP,
        "row_state_bytes": ROW_STATE_BYTES,
        "settings": settings,
        "load_average": list(load),
        "load_average_after": list(os.getloadavg()),
        "seconds": time.perf_counter() - start,
        "results": results,
        "out_of_core": ooc,
        "weighted_degree": weighted_degree,
    }
    save_json(RESULTS, payload)
    write_report(payload)
    print(f"done in {payload['seconds'] / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()

"""Logistic regression: ours against scikit-learn in memory, out of core, and dask-ml on a cluster.

``dask_streamsvm.LogisticRegression`` minimises LIBLINEAR's problem (scikit-learn's
``LogisticRegression(solver="liblinear")``)::

    P(w, b) = 1/2 (||w||^2 + b^2) + C sum_i log(1 + exp(-y_i (w . x_i + b)))

the intercept ``b`` being the weight of a constant feature of value 1 (``intercept_scaling=1``), so
regularised.  Every objective below is :func:`objective` of a model's ``(coef, intercept)`` on its
training rows: one NumPy function for every solver.  Three parts, each in one run:

1. **In memory, time to a 1e-6 relative objective gap** on a9a, w8a and ijcnn1 (the LIBSVM files of
   ``../shared/data`` as :mod:`benchmarks.bench_peers` finds them, whole, labels +-1; as CSR and as
   the same rows dense) and a tall dense synthetic set (:func:`benchmarks.bench_primal.synthetic`:
   500,000 x 40 standard normal rows, labels of a hyperplane with noise and 5% flipped, as float64),
   at C = 1 and 0.1.  P* is the lowest objective of the solvers at their tightest settings: ours at
   tol 1e-10, scikit-learn's liblinear at tol 1e-12, lbfgs and newton-cholesky at tol 1e-10 (each
   one's distance to P* is reported: they agree when the four problems are one).  Each solver then
   fits at tol = 1e-2, 1e-3, ..., 1e-10 in turn until a fit's objective is within 1e-6 (relative)
   of P*; that tol's fit is then timed again, best of ``--repeats`` (3): the first fit at a setting
   is its warm-up (numba compiles our kernels on first use; they are also compiled on a slice of
   each set before its first fit).  Solvers: ours with ``dual="auto"`` (the goal's), ``dual=True``
   and ``dual=False``; scikit-learn's ``LogisticRegression`` with ``solver="liblinear"`` (the same
   problem), ``"lbfgs"`` and ``"newton-cholesky"``, which do not regularise the intercept: they get
   the rows with a column of ones appended (before the clock) and ``fit_intercept=False``, which is
   the same problem again.  Goal: ours (``dual="auto"``) / the fastest scikit-learn solver <= 1 on
   every set.
2. **Out of core to a 1e-3 gap**, each measure in a fresh process (``_common.run_child``): a tall
   dense Parquet set (``bench_primal.synthetic``, 2M x 60 float32 in 20 files, written by
   ``bench_primal.write_parquet``) and a wide sparse LIBSVM text set (``bench_text.write_wide``:
   300,000 rows x 100,000 features, 50 nonzeros a row, unit norm, files of 50,000 rows), fitted from
   the Dask collection (``bench_peers.load_lazy``) by ``LogisticRegression(tol=1e-3)`` with its
   defaults and no client (so in the fitting process), after a warm-up fit on its first partition
   (``bench_peers._warm_up``): reads (from ``history_``), bytes read, seconds; against the in-memory
   fit of the same rows (loaded first by ``bench_peers.load_memory``, the load timed apart, then a
   warm-up fit on a twentieth of the rows) and one plain Dask read of the files
   (``bench_primal.child_read``, best of 2; ``bench_text.child_read`` for text).  On the wide set
   also ``dual=True`` with ``solver="streamsvm"`` and ``"sbm"`` and ``cache_bytes="10%"``.
3. **Cluster**: a ``distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``,
   the tall dense rows (2M x 60 float32, ``synthetic``) scattered to the workers in 20 blocks as a
   Dask array (not timed).  Ours: ``LogisticRegression(C=1, tol=tol)`` (``cluster="auto"``: Newton
   steps summed in a tree on the workers) at tol 1e-3 and 1e-6, each the best of 2 after a warm-up
   fit at tol 0.1: its certificate puts it within tol of P*.  dask-ml's
   ``dask_ml.linear_model.LogisticRegression`` on the same rows with the ones column appended,
   also persisted, with each of its solvers (lbfgs, newton, admm, gradient_descent), one run each:
   the benchmark records every iterate the solver holds (lbfgs: scipy's callback after each
   iteration; newton: each ``dot(X, beta)``; gradient_descent: each line search's start; admm: each
   consensus ``z``) with the seconds since ``fit`` was called, and scores it with
   :func:`objective` on the rows in this process while the solver's clock is stopped (the solver
   waits for it, so its workers are idle: a small benefit to dask-ml where gradient_descent leaves
   persisted work running).  Its time to a gap is the first iterate within that gap of P* (ours
   at tol 1e-10 in memory, or lower if any iterate is): the time at which it held that model,
   without having to know it.  Its run stops there (at 1e-6), when the solver stops, or at
   ``--daskml-cap`` seconds (300), reported as "not reached in N s".  Goal: ours at least 3 times
   sooner to the same gap (dask-ml time / ours >= 3).

How dask-ml's ``LogisticRegression`` (dask-ml 2025.1, dask-glm 0.4) is set to minimise P, from its
source in ``.venv/lib/python3.11/site-packages``:

- ``dask_ml/linear_model/glm.py`` ``_GLM._get_solver_kwargs`` (lines 139-171) passes the solver
  ``regularizer=self.penalty`` and ``lamduh=1 / self.C`` (144-145), drops both for
  ``gradient_descent`` and ``newton`` (148-150) and ``tol`` for ``admm`` (152-153), then applies
  ``solver_kwargs`` over them (155-156).  ``fit_intercept=True`` appends a column of ones
  (``_check_array``, 198-202; ``dask_glm/utils.py`` ``add_intercept``, 149-162), an ordinary
  coefficient for the solver.
- ``dask_glm/families.py`` ``Logistic.loglike`` (14-25) is ``sum(Xb + log1p(exp(-Xb))) - y . Xb``
  with labels ``y`` in {0, 1}, that is ``sum_i log(1 + exp(-s_i x_i . beta))`` with ``s = 2y - 1``:
  the sum of the losses, not their mean.
- ``dask_glm/regularizers.py`` ``L2.f`` (158-159) is ``||beta||^2 / 2`` over all of ``beta``, the
  ones column's weight included, added as ``loss + lamduh * f`` (``add_reg_f``, 68-87).
- ``dask_glm/algorithms.py``: ``lbfgs`` (349-416) minimises ``loglike + (1/C) ||beta||^2 / 2``
  (385-388), which is P / C, with ``tol`` as scipy's ``pgtol`` and ``max_iter`` its ``maxiter``
  (406-414); ``admm`` (222-333) splits the same objective over the row blocks (consensus ADMM, the
  ``z`` update the L2 proximal step with ``lamduh / (rho * nchunks)``, 316; ``abstol``/``reltol``
  its stopping rule); ``newton`` (168-218) and ``gradient_descent`` (87-164) get no regulariser
  and minimise the unregularised log-loss: their iterates are scored on P like the others', but
  their problem is not ours (on tall data its minimiser's P is close to P*, as the ridge is small
  against the loss's curvature).
- every solver is wrapped in ``@normalize`` (``dask_glm/utils.py`` 14-39), which by default
  standardises the columns and solves there, where the L2 term weighs ``beta_j * std_j``: another
  problem; ``solver_kwargs={"normalize": False}`` turns it off.

So dask-ml gets the rows with a column of ones appended, ``fit_intercept=False`` (its own
``fit_intercept=True`` with ``normalize=False`` would be the same problem, the column appended
again on every pass), labels 0/1, ``C`` = our ``C`` and ``solver_kwargs={"normalize": False}``
(plus ``abstol = reltol = 1e-12`` for admm, so that only the target or the cap stops it), tol 1e-10
(lbfgs, newton) or 1e-14 (gradient_descent) and large ``max_iter``: for lbfgs and admm the problem
is P exactly.  Checked on 20,000 x 10 rows (``synthetic``, threaded scheduler): lbfgs so set ends
within 1e-11 of P* at C = 0.01 and 1; with dask-ml's default ``normalize=True``, 1.7e-7 above it
at C = 0.01.

Writes ``benchmarks/results/bench_logistic.json`` (each part with the command that made it; a part
skipped keeps the file's earlier record) and the section "Logistic regression" of
docs/benchmarks.md.  ``--quick`` (small sizes, a smoke run of a few minutes) writes
``$TMPDIR/bench_logistic_quick.json`` instead and no docs; so does any ``--out`` other than the
default.

    python -m benchmarks.bench_logistic                          # the full run (estimated 30 min, 2 cores)
    python -m benchmarks.bench_logistic --quick                  # smoke run, results in $TMPDIR
    python -m benchmarks.bench_logistic --skip-cluster --rows 500000 --sparse-rows 100000
    python -m benchmarks.bench_logistic --render                 # the docs from the results file

BLAS: scikit-learn's newton-cholesky and our Newton solvers form Gram matrices with OpenBLAS, which
uses every core by default; on a 2-core machine where other processes run, its threads wait for
each other and those fits took 5-15 times longer in the smoke runs.  Run on a quiet machine, or
give ``--blas-threads 1`` (recorded with the results) to measure without that.
"""

import argparse
import contextlib
import json
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks import _common
from benchmarks._common import N_FEATURES, ROOT, machine, payload_header, save_json, write_section
from benchmarks.bench_cluster_wide import load_now
from benchmarks.bench_primal import _mark, _timed, count_reads

RESULTS = ROOT / "benchmarks" / "results" / "bench_logistic.json"
QUICK_RESULTS = Path(tempfile.gettempdir()) / "bench_logistic_quick.json"
MARKER = "## Logistic regression"
PARTS = ("memory", "out_of_core", "cluster")
REAL = ("a9a", "w8a", "ijcnn1")
TOLS = tuple(10.0**-k for k in range(2, 11))  # 1e-2 ... 1e-10
GAP = 1e-6  # part 1: "time to a 1e-6 relative objective gap"
CLUSTER_GAPS = (1e-3, 1e-6)
# The goals: ours (dual="auto") / the fastest scikit-learn solver in memory (at most), dask-ml's
# time to a gap / ours on the cluster (at least).
GOALS = {"memory_ratio": 1.0, "cluster_speedup": 3.0}
OURS = {"ours": "auto", "ours-dual": True, "ours-primal": False}
SKLEARN = ("liblinear", "lbfgs", "newton-cholesky")
SOLVERS = (*OURS, *SKLEARN)
# Each solver's tightest setting: the fits that define P*.
TIGHTEST = {"ours": 1e-10, "liblinear": 1e-12, "lbfgs": 1e-10, "newton-cholesky": 1e-10}
DASKML = ("lbfgs", "newton", "admm", "gradient_descent")
LABELS = {
    "ours": 'ours, dual="auto"',
    "ours-dual": "ours, dual=True",
    "ours-primal": "ours, dual=False",
    "liblinear": "sklearn liblinear",
    "lbfgs": "sklearn lbfgs",
    "newton-cholesky": "sklearn newton-cholesky",
}


# -- the objective: one function for every solver ----------------------------------------------------


def objective(X, y, coef, intercept, C, block_rows=1 << 18):
    """``1/2 (||coef||^2 + intercept^2) + C sum_i log(1 + exp(-y_i (x_i . coef + intercept)))``.

    ``y`` holds +-1 (or 0/1: nonpositive labels count as -1); ``X`` dense or CSR, float32 or
    float64, read in blocks of ``block_rows`` rows cast to float64, so float32 rows are scored
    exactly as float64 ones and a tall set needs no float64 copy.  The log-loss is
    ``np.logaddexp(0, -margin)``, exact for any margin.
    """
    coef = np.asarray(coef, dtype=np.float64).ravel()
    intercept = float(intercept)
    loss = 0.0
    for start in range(0, X.shape[0], block_rows):
        block = X[start : start + block_rows]
        margin = np.asarray(block.astype(np.float64) @ coef).ravel() + intercept
        sign = np.where(np.asarray(y[start : start + block_rows]) > 0, 1.0, -1.0)
        loss += float(np.logaddexp(0.0, -sign * margin).sum())
    return 0.5 * (float(coef @ coef) + intercept * intercept) + C * loss


def _relative(value, p_star):
    return (value - p_star) / abs(p_star)


def with_ones(X):
    """``X`` with a column of ones appended (the intercept's feature, B = 1), dense or CSR."""
    ones = np.ones((X.shape[0], 1), dtype=X.dtype)
    return sp.hstack([X, ones], format="csr") if sp.issparse(X) else np.hstack([X, ones])


# -- part 1: in memory -------------------------------------------------------------------------------


def memory_sets(args):
    """``(name, layout, X, y)`` of the in-memory part: the real sets as CSR and dense, the dense set."""
    from sklearn.datasets import load_svmlight_file

    from benchmarks.bench_peers import real_file
    from benchmarks.bench_primal import synthetic
    from dask_streamsvm.datasets import compact_csr

    for name in args.sets:
        if name == "dense":
            X, y = synthetic(args.dense_rows, args.dense_features)
            label = f"dense {args.dense_rows // 1000}k x {args.dense_features}"
            yield label, "dense", X.astype(np.float64), y.astype(np.float64)
            continue
        path = real_file(name)
        if path is None:
            print(f"{name}: skipped, no {name}.bz2 in {_common.data_dir()}", flush=True)
            continue
        X, y = load_svmlight_file(str(path), n_features=N_FEATURES[name])
        X = compact_csr(sp.csr_matrix(X, dtype=np.float64))  # int32 indices, as liblinear requires
        for layout in args.layouts:
            yield name, layout, (X if layout == "csr" else X.toarray()), y


def _fit_once(solver, X, X1, y, C, tol):
    """One fit of ``solver`` at ``tol``: its objective (:func:`objective`), seconds, iterations and
    the warnings it raised."""
    from sklearn.linear_model import LogisticRegression as SklearnLR

    from dask_streamsvm import LogisticRegression

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if solver in OURS:
            model = LogisticRegression(C=C, tol=tol, dual=OURS[solver], random_state=0)
            clf, seconds = _timed(lambda: model.fit(X, y))
            coef, intercept = clf.coef_[0], clf.intercept_[0]
            extra = {"gap": float(clf.duality_gap_), "objective_reported": float(clf.objective_),
                     "method": clf.history_[-1].get("solver", "dual")}  # fmt: skip
        elif solver == "liblinear":
            model = SklearnLR(C=C, solver="liblinear", tol=tol, intercept_scaling=1.0, max_iter=1000)
            clf, seconds = _timed(lambda: model.fit(X, y))
            coef, intercept, extra = clf.coef_[0], clf.intercept_[0], {}
        else:  # the ones column carries the intercept, regularised like ours
            model = SklearnLR(C=C, solver=solver, tol=tol, fit_intercept=False, max_iter=10_000)
            clf, seconds = _timed(lambda: model.fit(X1, y))
            coef, intercept, extra = clf.coef_[0][:-1], clf.coef_[0][-1], {}
    return {
        "tol": tol, "seconds": seconds, "objective": objective(X, y, coef, intercept, C),
        "n_iter": int(np.max(clf.n_iter_)),
        "warnings": sorted({type(w.message).__name__ for w in caught}), **extra,
    }  # fmt: skip


def _warm_up_ours(X, y):
    """Compile (or load from numba's cache) our in-memory kernels for these rows' layout and dtype."""
    from dask_streamsvm import LogisticRegression

    rows = min(X.shape[0], 5000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dual in (True, False):
            LogisticRegression(tol=1e-2, dual=dual).fit(X[:rows], y[:rows])


def memory_row(name, layout, X, y, C, repeats):
    """P* and every solver's time to a ``GAP`` relative objective gap on one set at one C."""
    X1 = with_ones(X)
    _warm_up_ours(X, y)
    fits = {}

    def fit(solver, tol):
        if (solver, tol) not in fits:
            fits[solver, tol] = _fit_once(solver, X, X1, y, C, tol)
        return fits[solver, tol]

    load = load_now()
    tightest = {solver: fit(solver, tol) for solver, tol in TIGHTEST.items()}
    p_star = min(r["objective"] for r in tightest.values())
    source = min(tightest, key=lambda s: tightest[s]["objective"])
    row = {
        "data": name, "layout": layout, "rows": int(X.shape[0]), "features": int(X.shape[1]),
        "nnz": int(X.nnz if sp.issparse(X) else np.count_nonzero(X)), "C": C, "load_before": load,
        "p_star": p_star, "p_star_source": f"{source} at tol {TIGHTEST[source]:g}",
        "tightest": {s: {"tol": r["tol"], "objective": r["objective"],
                         "relative_to_p_star": _relative(r["objective"], p_star)}
                     for s, r in tightest.items()},
        "solvers": {},
    }  # fmt: skip
    for solver in SOLVERS:
        ladder = []
        for tol in TOLS:
            r = fit(solver, tol)
            ladder.append({k: r[k] for k in ("tol", "objective", "seconds", "n_iter", "gap") if k in r})
            if _relative(r["objective"], p_star) <= GAP:
                # the fit above was this setting's warm-up (timed alone where no repeats are asked)
                times = [_fit_once(solver, X, X1, y, C, tol)["seconds"] for _ in range(repeats)] or [
                    r["seconds"]
                ]
                out = {**r, "reached": True, "seconds": min(times), "times": times}
                break
        else:
            out = {**r, "reached": False, "seconds": None, "times": []}
        out.update(relative_to_p_star=_relative(out["objective"], p_star), ladder=ladder)
        row["solvers"][solver] = out
    row["lowest_seen"] = min(r["objective"] for r in fits.values())
    # Our certificate: every fit of ours within its reported gap of P*, and its reported objective
    # that of the benchmark's function (to rounding).
    ours = [r for (solver, _), r in fits.items() if solver in OURS]
    row["certificate_held"] = all(_relative(r["objective"], p_star) <= r["gap"] + 1e-12 for r in ours)
    row["objective_reported_agrees"] = max(
        abs(_relative(r["objective_reported"], r["objective"])) for r in ours
    )
    sklearn = [row["solvers"][s]["seconds"] for s in SKLEARN if row["solvers"][s]["reached"]]
    row["fastest_sklearn"] = min(
        (s for s in SKLEARN if row["solvers"][s]["reached"]),
        key=lambda s: row["solvers"][s]["seconds"],
        default=None,
    )
    for solver in OURS:
        mine = row["solvers"][solver]["seconds"]
        row[f"{solver}_over_sklearn"] = None if mine is None or not sklearn else mine / min(sklearn)
    return row


def _cell(r):
    if not r["reached"]:
        return f"not reached ({r['relative_to_p_star']:.0e} at 1e-10)"
    return f"{r['seconds']:.3f} s ({r['tol']:.0e})"


def print_memory_row(row):
    ratio = row["ours_over_sklearn"]
    print(
        f"{row['data']} [{row['layout']}] C={row['C']:g}: P* {row['p_star']:.10g} ({row['p_star_source']}); "
        f"ours / fastest sklearn {'-' if ratio is None else f'{ratio:.2f}'} "
        f"(goal <= {GOALS['memory_ratio']:g}); our certificates held: {row['certificate_held']}, "
        f"objective_ against the benchmark's: {row['objective_reported_agrees']:.0e}",
        flush=True,
    )
    for solver in SOLVERS:
        r = row["solvers"][solver]
        print(f"    {solver:16s} {_cell(r):32s} iterations {r['n_iter']}", flush=True)


def run_memory(args):
    rows = []
    for name, layout, X, y in memory_sets(args):
        for C in args.Cs:
            rows.append(memory_row(name, layout, X, y, C, args.repeats))
            print_memory_row(rows[-1])
    return rows


# -- part 2: out of core (each measure in a fresh process) --------------------------------------------


def child_fit(spec):
    """``LogisticRegression(tol=spec["tol"], **spec["params"])`` on the Dask collection of
    ``spec`` (no client: in this process), after a warm-up fit on its first partition."""
    from benchmarks.bench_peers import _warm_up, load_lazy
    from dask_streamsvm import LogisticRegression

    X, y = load_lazy(spec)
    model = LogisticRegression(tol=spec["tol"], **spec["params"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warm-up's single pass does not converge
        _warm_up(model, X, y)
    clf, seconds = _timed(lambda: model.fit(X, y))
    history = [{k: v for k, v in r.items() if isinstance(v, (int, float, str, bool))} for r in clf.history_]
    last = history[-1]
    return {
        "fit_s": seconds, "n_iter": int(clf.n_iter_), "gap": float(clf.duality_gap_),
        "objective": float(clf.objective_), "bytes_read": int(last.get("bytes_read", 0)),
        "rows_read": int(last.get("rows_read", 0)), "records": len(history),
        "method": last.get("method") or last.get("solver") or "dual", "history": history,
    }  # fmt: skip


def child_memory(spec):
    """The rows loaded into memory (``bench_peers.load_memory``, timed), a warm-up fit on a
    twentieth of them, then ``LogisticRegression(tol=spec["tol"])`` on all of them."""
    from sklearn.base import clone

    from benchmarks.bench_peers import load_memory
    from dask_streamsvm import LogisticRegression

    (X, y), load_s = _timed(lambda: load_memory(spec))
    model = LogisticRegression(tol=spec["tol"])
    rows = max(1000, X.shape[0] // 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clone(model).set_params(tol=1e-1).fit(X[:rows], y[:rows])
    clf, fit_s = _timed(lambda: model.fit(X, y))
    return {
        "load_s": load_s, "fit_s": fit_s, "n_iter": int(clf.n_iter_), "gap": float(clf.duality_gap_),
        "objective": float(clf.objective_), "n_rows": int(X.shape[0]),
        "method": clf.history_[-1].get("solver", "dual"),
    }  # fmt: skip


def run_child(task, spec):
    return _common.run_child("bench_logistic", task, spec)


def plain_read(spec):
    """One plain Dask read of the files in a fresh process: ``bench_primal``'s for Parquet (best of
    2), ``bench_text``'s for LIBSVM text."""
    if spec["kind"] == "parquet":
        out = _common.run_child("bench_primal", "read", {"path": spec["train"]})
        return {"plain_read_s": out["plain_read_s"], "plain_read_times": out["plain_read_times"]}
    out = _common.run_child("bench_text", "read", spec)
    return {"plain_read_s": out["plain_read_s"], "plain_read_times": [out["plain_read_s"]]}


def out_of_core_rows(spec, fits, tol):
    """The plain read, the in-memory fit and each of ``fits`` (label, params) on one set."""
    load = load_now()
    read = plain_read(spec)
    memory = run_child("memory", {**spec, "tol": tol})
    print(
        f"{spec['name']}: plain read {read['plain_read_s']:.2f} s; in memory: load "
        f"{memory['load_s']:.2f} s, fit {memory['fit_s']:.2f} s ({memory['method']}, "
        f"gap {memory['gap']:.1e})",
        flush=True,
    )
    rows = []
    for label, params in fits:
        before = load_now()
        fit = run_child("fit", {**spec, "tol": tol, "params": params})
        history = fit.pop("history")
        reads = count_reads(history, spec["n_rows"], fit["n_iter"])
        row = {
            "data": spec["name"], "kind": spec["kind"], "rows": spec["n_rows"],
            "features": spec["n_features"], "files": spec["files"], "data_bytes": spec["data_bytes"],
            "fit": label, "params": params, "tol": tol, "reads": reads, "load_before": before,
            "read_load_before": load, **read,
            "memory_load_s": memory["load_s"], "memory_fit_s": memory["fit_s"],
            "memory_gap": memory["gap"], "memory_method": memory["method"],
            "memory_n_iter": memory["n_iter"], "memory_peak_rss_bytes": memory["peak_rss_bytes"],
            "fit_over_memory": fit["fit_s"] / memory["fit_s"],
            "fit_over_load_and_memory": fit["fit_s"] / (memory["load_s"] + memory["fit_s"]),
            "fit_over_read": fit["fit_s"] / read["plain_read_s"],
            "gaps": [float(r["gap"]) for r in history if "gap" in r], **fit, "history": history,
        }  # fmt: skip
        print(
            f"  {label}: {row['fit_s']:.2f} s, {reads} reads ({row['bytes_read'] / 1e6:.0f} MB), "
            f"gap {row['gap']:.1e} ({row['method']}); x{row['fit_over_memory']:.2f} the in-memory fit, "
            f"x{row['fit_over_load_and_memory']:.2f} load + fit, x{row['fit_over_read']:.2f} a plain read",
            flush=True,
        )
        rows.append(row)
    return rows


def write_dense(work, n, d, files):
    from benchmarks.bench_primal import synthetic, write_parquet

    X, y = synthetic(n, d)
    path = work / "dense"
    write_parquet(path, X, y, rows_per_file=-(-n // files))
    return {
        "name": f"dense {n / 1e6:g}M x {d} Parquet", "kind": "parquet", "train": str(path),
        "n_features": d, "n_rows": n, "files": len(list(path.glob("*.parquet"))),
        "data_bytes": int(X.nbytes), "blocksize": None,
    }  # fmt: skip


def write_sparse(work, n, rows_per_file):
    from benchmarks.bench_text import write_wide

    spec = write_wide(work, n, rows_per_file=rows_per_file)
    files = sorted(Path(spec["train"]).parent.glob("*.svm"))
    return {
        "name": f"sparse {n // 1000}k x {spec['n_features'] // 1000}k LIBSVM", "kind": "libsvm",
        "train": spec["train"], "n_features": spec["n_features"], "n_rows": n, "files": len(files),
        "data_bytes": int(sum(f.stat().st_size for f in files)), "blocksize": spec["blocksize"],
    }  # fmt: skip


def run_out_of_core(args, work):
    tol = 1e-3
    rows = []
    spec = write_dense(work, args.rows, args.features, args.files)
    print(f"{spec['name']}: {spec['files']} files written", flush=True)
    rows += out_of_core_rows(spec, [("default", {})], tol)
    shutil.rmtree(spec["train"], ignore_errors=True)
    spec = write_sparse(work, args.sparse_rows, args.sparse_rows_per_file)
    print(f"{spec['name']}: {spec['files']} files written", flush=True)
    dual = [(f'dual=True, solver="{s}", cache_bytes="10%"',
             {"dual": True, "solver": s, "cache_bytes": "10%", "random_state": 0})
            for s in ("streamsvm", "sbm")]  # fmt: skip
    rows += out_of_core_rows(spec, [("default", {}), *dual], tol)
    return rows


# -- part 3: a LocalCluster against dask-ml ----------------------------------------------------------


class _Stop(Exception):
    """Raised from a dask-ml solver's hook to end its run (target reached or time cap)."""


class IterateClock:
    """Scores each iterate a dask-ml solver holds, on the rows in this process, with the fit's clock
    stopped meanwhile; stops the run at ``target`` (relative to ``p_star``) or after ``cap`` s."""

    def __init__(self, X, y, C, p_star, target, cap):
        self.X, self.y, self.C, self.p_star, self.target, self.cap = X, y, C, p_star, target, cap
        self.trace, self.paused, self.start, self.reason = [], 0.0, None, None

    def begin(self):
        self.trace, self.paused, self.start, self.reason = [], 0.0, time.perf_counter(), None

    def now(self):
        return time.perf_counter() - self.start - self.paused

    def record(self, beta, final=False):
        entered = time.perf_counter()
        seconds = entered - self.start - self.paused
        beta = np.asarray(beta, dtype=np.float64).ravel()
        value = objective(self.X, self.y, beta[:-1], beta[-1], self.C)
        self.trace.append({"seconds": seconds, "objective": value, "final": final})
        self.paused += time.perf_counter() - entered
        if final:
            return
        if _relative(value, self.p_star) <= self.target:
            self.reason = f"reached {self.target:g}"
            raise _Stop
        if seconds > self.cap:
            self.reason = f"cap of {self.cap:g} s"
            raise _Stop

    __call__ = record


# The module global of dask_glm.algorithms through which each solver's iterates pass (admm: none).
HOOKS = {"lbfgs": "fmin_l_bfgs_b", "newton": "dot", "gradient_descent": "compute_stepsize_dask"}


@contextlib.contextmanager
def hooked(solver, clock):
    """dask-glm's ``solver`` with ``clock`` called on each iterate it holds (see the module's
    docstring); lbfgs, newton and gradient_descent through a module global of
    ``dask_glm.algorithms`` swapped for the fit, admm through its regulariser (``solver_kwargs``)."""
    from dask_glm import algorithms

    name = HOOKS.get(solver)
    original = getattr(algorithms, name) if name else None
    if solver == "lbfgs":

        def patched(*args, **kwargs):
            return original(*args, callback=clock, **kwargs)

    elif solver == "newton":  # Xbeta = dot(X, beta) with each new beta

        def patched(a, b):
            if isinstance(b, np.ndarray) and b.ndim == 1:
                clock(b)
            return original(a, b)

    elif solver == "gradient_descent":  # each iteration's line search starts from its beta

        def patched(beta, *args, **kwargs):
            clock(beta)
            return original(beta, *args, **kwargs)

    if name:
        setattr(algorithms, name, patched)
    try:
        yield
    finally:
        if name:
            setattr(algorithms, name, original)


def _recording_l2(clock):
    """dask-glm's L2 regulariser, unchanged, with ``clock`` called on each proximal step's output
    (admm's consensus ``z``)."""
    from dask_glm.regularizers import L2

    class RecordingL2(L2):
        def proximal_operator(self, beta, t):
            z = super().proximal_operator(beta, t)
            clock(z)
            return z

    return RecordingL2()


def daskml_model(solver, C, clock):
    from dask_ml.linear_model import LogisticRegression as DaskmlLR

    kwargs = {"normalize": False}
    tol, max_iter = 1e-10, 10_000
    if solver == "admm":
        kwargs.update(regularizer=_recording_l2(clock), abstol=1e-12, reltol=1e-12)
    elif solver == "newton":
        max_iter = 100
    elif solver == "gradient_descent":
        tol, max_iter = 1e-14, 1_000_000
    return DaskmlLR(C=C, solver=solver, fit_intercept=False, tol=tol, max_iter=max_iter, solver_kwargs=kwargs)


def run_daskml(solver, X1d, y01d, clock):
    """One run of dask-ml's ``solver``: its trace, why it stopped, and its seconds to each gap."""
    model = daskml_model(solver, clock.C, clock)
    load = load_now()
    error = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dask-glm's deprecated dask config key, overflow in exp
        clock.begin()
        try:
            with hooked(solver, clock):
                model.fit(X1d, y01d)
            clock.reason = "the solver stopped"
            clock.record(np.ravel(model.coef_), final=True)
        except _Stop:
            pass
        except Exception as exc:  # noqa: BLE001 - the peer's failure is the result
            error = f"{type(exc).__name__}: {exc}"[:400]
            clock.reason = "error"
    wall = clock.now()
    return {"solver": solver, "load_before": load, "seconds": wall, "stopped": clock.reason,
            "error": error, "trace": clock.trace}  # fmt: skip


def _scatter(client, X, step):
    """``X`` as a Dask array of row blocks of ``step`` rows held on the workers (scattered)."""
    import dask.array as da

    starts = range(0, X.shape[0], step)
    futures = client.scatter([X[s : s + step] for s in starts])
    blocks = [da.from_delayed(f, shape=(min(step, X.shape[0] - s), *X.shape[1:]), dtype=X.dtype)
              for f, s in zip(futures, starts, strict=True)]  # fmt: skip
    return da.concatenate(blocks)


def _ignore_overflow():
    """On a worker: no RuntimeWarning lines from dask-glm's ``exp(-Xbeta)``, which overflows to inf
    on large margins (its loss is then inf, as meant) in the line searches."""
    warnings.simplefilter("ignore", RuntimeWarning)


def _first(trace, p_star, gap):
    return next((p["seconds"] for p in trace if _relative(p["objective"], p_star) <= gap), None)


def run_cluster(args):
    from distributed import Client, LocalCluster

    from benchmarks.bench_primal import synthetic
    from dask_streamsvm import LogisticRegression

    C, n, d = 1.0, args.cluster_rows, args.features
    X, y = synthetic(n, d)
    reference, ref_s = _timed(lambda: LogisticRegression(C=C, tol=1e-10, cluster=None).fit(X, y))
    p_star = objective(X, y, reference.coef_[0], reference.intercept_[0], C)
    out = {"data": f"dense {n / 1e6:g}M x {d} float32", "rows": n, "features": d, "C": C,
           "workers": 2, "blocks": args.files, "p_star_ours_1e-10": p_star, "reference_s": ref_s,
           "reference_gap": float(reference.duality_gap_), "ours": [], "daskml": []}  # fmt: skip
    step = -(-n // args.files)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=40) as cluster, Client(cluster) as client:  # fmt: skip
        Xd, yd = _scatter(client, X, step), _scatter(client, y, step)
        X1d = _scatter(client, with_ones(X), step)
        y01d = _scatter(client, (y > 0).astype(np.float64), step)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            LogisticRegression(C=C, tol=1e-1).fit(Xd, yd)  # warm-up: the workers load our kernels
        for tol in CLUSTER_GAPS:
            load, times = load_now(), []
            for _ in range(args.cluster_repeats):
                clf, seconds = _timed(lambda tol=tol: LogisticRegression(C=C, tol=tol).fit(Xd, yd))
                times.append(seconds)
            last = clf.history_[-1]
            out["ours"].append({
                "tol": tol, "seconds": min(times), "times": times, "load_before": load,
                "gap": float(clf.duality_gap_),
                "objective": objective(X, y, clf.coef_[0], clf.intercept_[0], C),
                "reads": count_reads(clf.history_, n, clf.n_iter_), "method": last.get("method"),
                "bytes_sent": int(last.get("bytes_sent", 0)),
                "bytes_received": int(last.get("bytes_received", 0)),
            })  # fmt: skip
            print(f"ours tol={tol:g}: {min(times):.2f} s (of {[round(t, 2) for t in times]}), "
                  f"{out['ours'][-1]['reads']} reads, {last.get('method')}", flush=True)  # fmt: skip
        client.run(_ignore_overflow)
        for solver in args.daskml_solvers:
            clock = IterateClock(X, y, C, p_star, min(CLUSTER_GAPS), args.daskml_cap)
            run = run_daskml(solver, X1d, y01d, clock)
            out["daskml"].append(run)
            best = min((p["objective"] for p in run["trace"]), default=None)
            print(f"dask-ml {solver}: {run['seconds']:.1f} s, {len(run['trace'])} iterates, stopped: "
                  f"{run['stopped']}{'' if best is None else f', best {_relative(best, p_star):.1e}'}"
                  f"{'' if run['error'] is None else ' ' + run['error']}", flush=True)  # fmt: skip
    summarise_cluster(out)
    for run in out["daskml"]:
        cells = []
        for gap, hit in run["to_gap"].items():
            if hit["seconds"] is None:
                bound = hit["at_least_over_ours"]
                cells.append(f"to {gap} not reached" + ("" if bound is None else f" (> {bound:.1f}x ours)"))
            else:
                cells.append(f"to {gap} {hit['seconds']:.2f} s ({hit['over_ours']:.1f}x ours)")
        print(
            f"dask-ml {run['solver']}: {', '.join(cells)} (goal >= {GOALS['cluster_speedup']:g}x)", flush=True
        )
    return out


def summarise_cluster(out):
    """P* (the lowest objective seen) and each dask-ml solver's time to each gap against ours."""
    seen = [p["objective"] for r in out["daskml"] for p in r["trace"]] + [r["objective"] for r in out["ours"]]
    p_star = min([out["p_star_ours_1e-10"], *seen])
    out["p_star"] = p_star
    ours = {r["tol"]: r for r in out["ours"]}
    for r in out["ours"]:
        r["relative_to_p_star"] = _relative(r["objective"], p_star)
    for run in out["daskml"]:
        objectives = [p["objective"] for p in run["trace"]]
        run["best_relative"] = _relative(min(objectives), p_star) if objectives else None
        run["iterates"] = len(run["trace"])
        run["to_gap"] = {}
        for gap in CLUSTER_GAPS:
            seconds = _first(run["trace"], p_star, gap)
            mine = ours[gap]["seconds"] if gap in ours else None
            run["to_gap"][f"{gap:g}"] = {
                "seconds": seconds,
                "over_ours": None if seconds is None or not mine else seconds / mine,
                "at_least_over_ours": None if seconds is not None or not mine else run["seconds"] / mine,
            }


# -- the report --------------------------------------------------------------------------------------


def _s(value, fmt="{:.2f} s"):
    return "–" if value is None else fmt.format(value)


def _part_header(part):
    return (f"`{part['command']}`, {part['date']}; load average (1, 5, 15 min) {part['load_start']} at "
            f"the start, {part['load_end']} at the end.")  # fmt: skip


def report_memory(part):
    goal = GOALS["memory_ratio"]
    lines = [
        "",
        "### In memory: time to a 1e-6 relative objective gap",
        "",
        _part_header(part),
        "",
        "P\\* is the lowest objective of ours at tol 1e-10, scikit-learn's liblinear at 1e-12 and "
        "its lbfgs and newton-cholesky at 1e-10 (on the rows with a column of ones, `fit_intercept=False`: "
        "the same problem); every objective is the benchmark's one NumPy function of (coef, intercept). "
        "Each cell: the best of "
        f"{part['settings']['repeats']} fits at the loosest tol in 1e-2, 1e-3, ..., 1e-10 whose "
        "objective is within 1e-6 of P\\* (that tol in parentheses), after a first fit at it (the "
        'warm-up; numba compiles our kernels on first use). Ratio: ours (`dual="auto"`) over the '
        f"fastest scikit-learn solver, goal ≤ {goal:g}. Agreement: the largest (P - P\\*) / P\\* of the "
        "four fits at their tightest settings. Certificates: whether every fit of ours ended within its "
        "reported `duality_gap_` of P\\*.",
        "",
        "| data | layout | C | "
        + " | ".join(LABELS[s] for s in SOLVERS)
        + f" | ours / fastest sklearn (goal ≤ {goal:g}) | dual=True, dual=False / fastest | agreement | "
        "certificates | load before |",
        "|---|---|---|" + "---|" * len(SOLVERS) + "---|---|---|---|---|",
    ]
    for r in part["rows"]:
        cells = []
        for solver in SOLVERS:
            s = r["solvers"][solver]
            cells.append(f"{s['seconds']:.3f} s ({s['tol']:.0e})" if s["reached"] else "not reached")
        ratio = r["ours_over_sklearn"]
        mark = "–" if ratio is None else f"{ratio:.2f} {_mark(ratio <= goal)}"
        others = ", ".join(_s(r[f"{s}_over_sklearn"], "{:.2f}") for s in ("ours-dual", "ours-primal"))
        agreement = max(t["relative_to_p_star"] for t in r["tightest"].values())
        lines.append(
            f"| {r['data']} | {r['layout']} | {r['C']:g} | " + " | ".join(cells)
            + f" | {mark} | {others} | {agreement:.1e} | {_mark(r.get('certificate_held', False))} | "
            f"{r['load_before']} |"
        )  # fmt: skip
    met = [r["ours_over_sklearn"] is not None and r["ours_over_sklearn"] <= goal for r in part["rows"]]
    lines += ["", f"Goal met on {sum(met)} of {len(met)} sets and C values."]
    return lines


def report_out_of_core(part):
    lines = [
        "",
        "### Out of core: to a 1e-3 gap from a Dask collection",
        "",
        _part_header(part),
        "",
        "`LogisticRegression(tol=1e-3)` with its defaults (and the `dual=True` variants named) on the "
        "Dask collection of the files, no client, in a fresh process after a warm-up fit on the first "
        "partition; reads from `history_` (the rows it read over the set's rows), bytes read; against "
        "one plain Dask read of the files (Parquet: each partition to a float32 array, best of 2; text: "
        "`read_libsvm` computed) and the in-memory fit of the same rows (`LogisticRegression(tol=1e-3)`, "
        "after loading them, the load timed apart, and a warm-up fit).",
        "",
        "| data | fit | method | reads | MB read | gap | fit | plain read | load | in-memory fit "
        "| fit / in-memory fit | fit / (load + in-memory fit) | fit / plain read | load before |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in part["rows"]:
        lines.append(
            f"| {r['data']} | {r['fit']} | {r['method']} | {r['reads']} | {r['bytes_read'] / 1e6:.0f} | "
            f"{r['gap']:.1e} | {r['fit_s']:.2f} s | {r['plain_read_s']:.2f} s | {r['memory_load_s']:.2f} s | "
            f"{r['memory_fit_s']:.2f} s ({r['memory_method']}) | {r['fit_over_memory']:.2f} | "
            f"{r['fit_over_load_and_memory']:.2f} | {r['fit_over_read']:.2f} | {r['load_before']} |"
        )
    return lines


def report_cluster(part):
    out, goal = part["result"], GOALS["cluster_speedup"]
    lines = [
        "",
        "### Cluster: ours against dask-ml, time to the same objective",
        "",
        _part_header(part),
        "",
        f"{out['data']} ({out['rows']:,} rows, {out['blocks']} blocks scattered to a LocalCluster of 2 "
        "single-thread worker processes; not timed), C = 1. Ours: `LogisticRegression(C=1, tol=tol)` "
        f'(`cluster="auto"`), the best of {part["settings"]["cluster_repeats"]} fits after a warm-up fit. '
        "dask-ml: `dask_ml.linear_model.LogisticRegression(C=1, fit_intercept=False, "
        'solver_kwargs={"normalize": False})` on the rows with a column of ones (persisted too) and '
        "labels 0/1, the same problem for lbfgs and admm (newton and gradient_descent drop the "
        "regulariser: they minimise the unregularised log-loss); its time to a gap is the time its "
        "first iterate within that gap of P\\* was held (iterates scored by the benchmark with the "
        f"clock stopped), its run stopped at 1e-6 or after {part['settings']['daskml_cap']:g} s. "
        f"P\\* = {out['p_star']:.10g} (ours at tol 1e-10 in memory: {out['p_star_ours_1e-10']:.10g}). "
        f"Goal: dask-ml's time / ours ≥ {goal:g}.",
        "",
        "| solver | to 1e-3 | to 1e-6 | best (P - P\\*) / P\\* | iterates | stopped | "
        f"dask-ml / ours to 1e-3 (goal ≥ {goal:g}) | to 1e-6 | load before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    ours = {f"{r['tol']:g}": r for r in out["ours"]}
    lines.append(
        "| ours (Newton, tree sums) | " + " | ".join(
            _s(ours[f"{g:g}"]["seconds"]) + f" ({ours[f'{g:g}']['reads']} reads)" if f"{g:g}" in ours else "–"
            for g in CLUSTER_GAPS
        ) + f" | {min(r['relative_to_p_star'] for r in out['ours']):.1e} | – | certified | – | – | "
        f"{out['ours'][0]['load_before']} |"
    )  # fmt: skip
    for run in out["daskml"]:
        times, ratios = [], []
        for g in CLUSTER_GAPS:
            hit = run["to_gap"][f"{g:g}"]
            if hit["seconds"] is not None:
                times.append(f"{hit['seconds']:.2f} s")
                ratios.append(f"{hit['over_ours']:.1f} {_mark(hit['over_ours'] >= goal)}")
            else:
                times.append(f"not reached in {run['seconds']:.0f} s")
                bound = hit["at_least_over_ours"]
                ratios.append("–" if bound is None else f"> {bound:.1f} {_mark(bound >= goal)}")
        stopped = run["stopped"] + (f": {run['error']}" if run.get("error") else "")
        lines.append(
            f"| dask-ml {run['solver']} | {' | '.join(times)} | {_s(run['best_relative'], '{:.1e}')} | "
            f"{run['iterates']} | {stopped} | {' | '.join(ratios)} | {run['load_before']} |"
        )
    met = [
        (hit["over_ours"] or hit["at_least_over_ours"] or 0.0) >= goal
        for run in out["daskml"]
        for hit in run["to_gap"].values()
    ]
    lines += ["", f"Goal met for {sum(met)} of {len(met)} (solver, gap) pairs."]
    return lines


def _blas_limit(payload):
    return max((payload[p]["settings"].get("blas_threads") or 0 for p in PARTS if p in payload), default=0)


def write_report(payload):
    m = payload["machine"]
    lines = [
        "",
        f"`dask_streamsvm.LogisticRegression` (LIBLINEAR's L2 logistic regression, the intercept a "
        f"regularised weight of a constant feature 1) against scikit-learn in memory and dask-ml on a "
        f"cluster, and out of core. Machine: {m['cores']} cores ({m['cpu']}, {m['platform']}), "
        f"scikit-learn {m['scikit-learn']}, dask {m['dask']}, dask-ml {m.get('dask-ml')}, "
        f"dask-glm {m.get('dask-glm')}; BLAS threads {', '.join(m.get('blas_threads', []))}"
        + (f", limited to {s} (`--blas-threads`)" if (s := _blas_limit(payload)) else "")
        + ". How each solver is set up (and how dask-ml's objective maps to "
        "ours) is in `benchmarks/bench_logistic.py`'s docstring; raw results in "
        "`benchmarks/results/bench_logistic.json`.",
    ]
    if payload.get("memory"):
        lines += report_memory(payload["memory"])
    if payload.get("out_of_core"):
        lines += report_out_of_core(payload["out_of_core"])
    if payload.get("cluster"):
        lines += report_cluster(payload["cluster"])
    write_section(MARKER, lines + [""])


# -- main --------------------------------------------------------------------------------------------


# The sizes of a smoke run (--quick) and of the full run; an option given overrides either.
QUICK = {
    "sets": ["a9a", "dense"], "layouts": ["csr"], "Cs": [1.0], "repeats": 1, "dense_rows": 20_000,
    "dense_features": 20, "rows": 200_000, "features": 20, "sparse_rows": 20_000,
    "sparse_rows_per_file": 5_000, "cluster_rows": 200_000, "daskml_cap": 15.0, "cluster_repeats": 1,
}  # fmt: skip
FULL = {
    "sets": [*REAL, "dense"], "layouts": ["csr", "dense"], "Cs": [1.0, 0.1], "repeats": 3,
    "dense_rows": 500_000, "dense_features": 40, "rows": 2_000_000, "features": 60, "sparse_rows": 300_000,
    "sparse_rows_per_file": 50_000, "cluster_rows": 2_000_000, "daskml_cap": 300.0, "cluster_repeats": 2,
}  # fmt: skip


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_logistic", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run (results to $TMPDIR)")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-out-of-core", action="store_true")
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--sets", nargs="+", choices=[*REAL, "dense"], help="in-memory sets")
    parser.add_argument("--layouts", nargs="+", choices=["csr", "dense"],
                        help="layouts of the real sets in memory (csr dense)")  # fmt: skip
    parser.add_argument("--C", type=float, nargs="+", dest="Cs", help="C of the in-memory part (1 0.1)")
    parser.add_argument("--repeats", type=int, help="timed fits after the warm-up, in memory (3)")
    parser.add_argument("--dense-rows", type=int, help="rows of the in-memory dense set (500,000)")
    parser.add_argument("--dense-features", type=int, help="its features (40)")
    parser.add_argument("--rows", type=int, help="rows of the out-of-core Parquet set (2M)")
    parser.add_argument("--features", type=int, help="features of the Parquet and cluster rows (60)")
    parser.add_argument("--files", type=int, default=20, help="Parquet files, and the cluster's blocks (20)")
    parser.add_argument("--sparse-rows", type=int, help="rows of the wide LIBSVM set (300,000)")
    parser.add_argument("--sparse-rows-per-file", type=int, help="its rows per file (50,000)")
    parser.add_argument("--cluster-rows", type=int, help="rows on the LocalCluster (2M)")
    parser.add_argument("--cluster-repeats", type=int, help="our timed fits per tol on the cluster (2)")
    parser.add_argument("--daskml-solvers", nargs="+", choices=DASKML, default=list(DASKML))
    parser.add_argument("--daskml-cap", type=float, help="seconds each dask-ml solver may run (300)")
    parser.add_argument(
        "--blas-threads", type=int, default=None,
        help="at most this many BLAS threads per process (default: the libraries' own)",
    )  # fmt: skip
    parser.add_argument("--workdir", default=None, help="where the files go (default: a temp dir)")
    parser.add_argument("--out", default=None, help="the results file (default: the repository's; a "
                        "smoke run's or any other file writes no docs)")  # fmt: skip
    parser.add_argument("--render", action="store_true", help="only rewrite the docs from the results file")
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.out = Path(args.out) if args.out else (QUICK_RESULTS if args.quick else RESULTS)
    return args


def _versions():
    from importlib.metadata import PackageNotFoundError, version

    from threadpoolctl import threadpool_info

    out = {}
    for package in ("dask-ml", "dask-glm", "distributed"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    out["blas_threads"] = sorted({f"{p['internal_api']} {p['num_threads']}" for p in threadpool_info()})
    return out


def limit_blas(threads):
    """At most ``threads`` BLAS/OpenMP threads here (threadpoolctl) and in every process started
    from now on (the children and the LocalCluster's workers inherit the environment)."""
    import os

    from threadpoolctl import threadpool_limits

    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    threadpool_limits(limits=threads)


def main(argv=None):
    args = parse(argv)
    payload = json.loads(args.out.read_text()) if args.out.exists() else {}
    if args.render:
        if args.out != RESULTS or not payload:
            raise SystemExit(f"--render writes the docs from {RESULTS} only, and it must exist")
        write_report(payload)
        return
    if args.blas_threads:
        limit_blas(args.blas_threads)
    header = payload_header("bench_logistic", argv)
    payload.update(header, machine=machine() | _versions(), goals=GOALS)
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "render", "workdir")}

    def part(run):
        start = load_now()
        result = run()
        return {**header, "settings": settings, "load_start": start, "load_end": load_now(), **result}

    if not args.skip_memory:
        payload["memory"] = part(lambda: {"rows": run_memory(args)})
        save_json(args.out, payload)
    if not args.skip_out_of_core:
        with tempfile.TemporaryDirectory(dir=args.workdir, prefix="bench-logistic-") as tmp:
            payload["out_of_core"] = part(lambda: {"rows": run_out_of_core(args, Path(tmp))})
        save_json(args.out, payload)
    if not args.skip_cluster:
        payload["cluster"] = part(lambda: {"result": run_cluster(args)})
        save_json(args.out, payload)
    save_json(args.out, payload)
    if args.out == RESULTS:
        write_report(payload)
        print(f"wrote {RESULTS.relative_to(ROOT)} and the {MARKER[3:]!r} section of docs/benchmarks.md")
    else:
        print(f"wrote {args.out} (no docs: not the repository's results file)")


if __name__ == "__main__":
    main()

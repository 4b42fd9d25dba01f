"""The demo behind ``dask-streamsvm demo`` and ``make demo``: a9a out of core next to LIBLINEAR.

UCI Adult (LIBSVM's ``a9a``, shipped with the package) is trained three
ways to the same problem (the default loss of both ``LinearSVC``, as
LIBLINEAR's ``-s 1``; C=1, regularised intercept):

- streamed: a Dask Array of 16 CSR partitions, in a row memory of a tenth
  of the data's bytes (``solver="auto"`` with ``dual=True``: SBM, its cache
  and blocks sharing it), with the test set as ``validation_data`` so that
  every pass records its test accuracy;
- in memory, by our dual coordinate descent (``solver="memory"``);
- by LIBLINEAR, through ``sklearn.svm.LinearSVC(dual=True)``.

The table gives test accuracy, primal objective, relative duality gap,
passes and seconds of each; the plot, the streamed fit's certified gap and
test accuracy against time.
"""

import sys
import time
import warnings

import numpy as np

N_PARTITIONS = 16
TOL = 1e-4
QUICK_TOL = 1e-2


def primal_objective(coef, intercept, X, y, C):
    """Primal objective of a binary model of the demo's problem, LIBLINEAR's ``-s 1`` with the
    intercept regularised (``-B 1``): ``1/2 ||[w, b]||^2 + C sum_i max(0, 1 - y_i (w . x_i + b))^2``."""
    w = np.r_[np.ravel(coef), np.ravel(intercept)]
    margins = np.where(y > 0, 1.0, -1.0) * (X @ np.ravel(coef) + float(np.ravel(intercept)[0]))
    slacks = np.maximum(0.0, 1.0 - margins)
    return 0.5 * w @ w + C * (slacks**2).sum()


def _warm_up(X, y, X_test, y_test):
    """Compile numba's kernels on a few rows, so that the timings below are of solving."""
    from sklearn.exceptions import ConvergenceWarning

    from .io import csr_to_dask
    from .linear import LinearSVC

    rows = slice(0, 2000)
    Xd, yd = csr_to_dask(X[rows], y[rows], 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        LinearSVC(tol=1e-3, max_iter=50, dual=True, random_state=0).fit(X[rows], y[rows])
        LinearSVC(tol=1e-3, max_iter=5, cache_bytes=X.data.nbytes // 100, dual=True, random_state=0,
                  validation_data=(X_test[:50], y_test[:50])).fit(Xd, yd)  # fmt: skip


def run_demo(plot=None, cache_fraction=0.1, quick=False, out=None):
    """Run the comparison, print its table to ``out`` (stdout), optionally plot; returns the results.

    Parameters
    ----------
    plot : str or path, optional
        PNG file for the convergence plot (needs matplotlib; skipped with a
        note without it).
    cache_fraction : float, default=0.1
        Row cache of the streamed fit, as a fraction of the training data's
        bytes (CSR values, indices and row pointers).
    quick : bool, default=False
        Solve to a relative gap of 1e-2 rather than 1e-4 (a few seconds).

    Returns
    -------
    dict
        For each of ``"streamed"``, ``"memory"`` and ``"liblinear"``: the
        fitted ``model``, ``accuracy``, ``objective``, ``gap`` (None for
        LIBLINEAR, which reports none), ``passes`` and ``seconds``.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC as LiblinearSVC

    from .datasets import load_a9a, load_a9a_dask
    from .linear import LinearSVC

    out = sys.stdout if out is None else out
    tol = QUICK_TOL if quick else TOL

    def say(text=""):
        print(text, file=out, flush=True)

    X, y = load_a9a("train")
    X_test, y_test = load_a9a("test")
    data_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    cache_bytes = max(int(cache_fraction * data_bytes), 1)
    say(
        f"a9a (UCI Adult): {X.shape[0]:,} training rows, {X.shape[1]} features, "
        f"{X.nnz:,} nonzeros ({data_bytes / 1e6:.1f} MB as CSR); {X_test.shape[0]:,} test rows."
    )
    # The dual solvers, the row cache and LIBLINEAR's dual method: dual=True (the default, "auto",
    # would pick the primal Newton solver for a set this tall).
    streamed = LinearSVC(
        C=1.0, tol=tol, cache_bytes=cache_bytes, dual=True, random_state=0, validation_data=(X_test, y_test)
    )
    say(
        f"loss={streamed.loss}, C=1, tol={tol:g}. Streamed: {N_PARTITIONS} Dask partitions in a row "
        f"memory of {cache_bytes / 1e6:.2f} MB ({cache_fraction:.0%} of the data).\n"
    )
    _warm_up(X, y, X_test, y_test)
    results = {}

    X_dask, y_dask = load_a9a_dask("train", n_partitions=N_PARTITIONS)
    start = time.perf_counter()
    streamed.fit(X_dask, y_dask)
    results["streamed"] = _ours(streamed, time.perf_counter() - start, X_test, y_test)

    memory = LinearSVC(C=1.0, tol=tol, dual=True, random_state=0)
    start = time.perf_counter()
    memory.fit(X, y)
    results["memory"] = _ours(memory, time.perf_counter() - start, X_test, y_test)

    liblinear = LiblinearSVC(C=1.0, dual=True, tol=tol, max_iter=1000, random_state=0)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        liblinear.fit(X, y)
    results["liblinear"] = {
        "model": liblinear,
        "seconds": time.perf_counter() - start,
        "accuracy": float(liblinear.score(X_test, y_test)),
        "objective": float(primal_objective(liblinear.coef_, liblinear.intercept_, X, y, 1.0)),
        "gap": None,
        "passes": int(liblinear.n_iter_),
    }

    _print_table(results, cache_fraction, say)
    best = min(r["objective"] for r in results.values())
    say(
        f"\nThe duality gaps certify that the streamed and in-memory objectives are within "
        f"{results['streamed']['gap']:.1e} and {results['memory']['gap']:.1e} (relative) of the optimum; "
        f"the best objective above is {best:.4f}. LIBLINEAR stops on its projected gradient and "
        "reports no gap. Streamed passes count reads of the data; each read certifies the model it "
        "started from."
    )
    if plot is not None:
        if _plot(results, plot, cache_fraction, tol):
            say(f"\nConvergence plot written to {plot}.")
        else:
            say("\nmatplotlib is not installed: no plot (pip install 'dask-streamsvm[plot]').")
    return results


def _ours(model, seconds, X_test, y_test):
    return {
        "model": model,
        "seconds": seconds,
        "accuracy": float(model.score(X_test, y_test)),
        "objective": float(model.objective_),
        "gap": float(model.duality_gap_),
        "passes": int(model.n_iter_),
    }


def _print_table(results, cache_fraction, say):
    names = {
        "streamed": f"{cache_fraction:.0%} cache",
        "memory": "in memory",
        "liblinear": "LIBLINEAR",
    }
    say(f"{'':24}" + "".join(f"{names[k]:>16}" for k in names))
    say(f"{'test accuracy':24}" + "".join(f"{results[k]['accuracy']:16.4%}" for k in names))
    say(f"{'primal objective':24}" + "".join(f"{results[k]['objective']:16.4f}" for k in names))
    gaps = ("not reported" if results[k]["gap"] is None else f"{results[k]['gap']:.2e}" for k in names)
    say(f"{'relative duality gap':24}" + "".join(f"{g:>16}" for g in gaps))
    say(f"{'passes':24}" + "".join(f"{results[k]['passes']:16d}" for k in names))
    say(f"{'seconds':24}" + "".join(f"{results[k]['seconds']:16.3f}" for k in names))


def _plot(results, path, cache_fraction, tol):
    """Two panels against seconds: certified relative gap (log scale) and test accuracy.

    Returns False, writing nothing, when matplotlib is not installed.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False

    history = results["streamed"]["model"].history_
    seconds = np.array([r["seconds"] for r in history])
    gaps = np.array([max(r["gap"], 1e-16) for r in history])
    scores = [r.get("validation_score") for r in history]
    memory = results["memory"]["model"].history_
    liblinear = results["liblinear"]

    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_gap, ax_acc = fig.subplots(1, 2)
    label = f"streamed, {cache_fraction:.0%} cache"
    ax_gap.semilogy(seconds, gaps, "o-", label=label)
    if memory:
        ax_gap.semilogy(
            [r["seconds"] for r in memory], [max(r["gap"], 1e-16) for r in memory], ".-", label="in memory"
        )
    ax_gap.axhline(tol, color="grey", linestyle=":", label=f"tol = {tol:g}")
    ax_gap.set_xlabel("seconds")
    ax_gap.set_ylabel("relative duality gap (P - D) / P")
    ax_gap.set_title("Certified gap after each pass")
    ax_gap.legend()

    shown = [(t, s) for t, s in zip(seconds, scores, strict=True) if s is not None]
    if shown:
        ax_acc.plot([t for t, _ in shown], [s for _, s in shown], "o-", label=label)
    ax_acc.axhline(liblinear["accuracy"], color="black", linestyle="--", label="LIBLINEAR (final)")
    ax_acc.plot(
        [results["memory"]["seconds"]], [results["memory"]["accuracy"]], "s", label="in memory (final)"
    )
    ax_acc.set_xlabel("seconds")
    ax_acc.set_ylabel("test accuracy")
    ax_acc.set_title("Test accuracy of each certified model")
    ax_acc.legend(loc="lower right")
    fig.suptitle("a9a: dask_streamsvm out of core, in memory, and LIBLINEAR")
    fig.savefig(path, dpi=100)
    return True

"""Hessian products of dense rows: over every row or a chunk at a time, on one BLAS thread or two.

The figures behind :data:`dask_streamsvm.engine.primal.sums.PRODUCT_CHUNK_BYTES` and the threads
guide (``docs/guide/threads.md``):

- ``--part chunks``: one product ``X^T (w * (X V))`` of float64 rows, the rows' weights those of the
  softmax model (``C (diag(p) - p p^T) z``), as :func:`~dask_streamsvm.engine.primal.sums.
  weighted_product` takes it, against its two matrix products over every row; chunks of 256 KB to
  16 MB; BLAS limited to 1 and 2 threads; the median of 5 after a first call.
- ``--part threads``: the whole in-memory softmax fit (200,000 x 500 dense rows, 10 classes, C = 1,
  tol 1e-3, ``bench_softmax_cluster``'s ``classes`` set) in fresh processes, with the library's
  own thread setting (the rows split between a row thread a core, one BLAS thread each), on one
  thread (``OMP_NUM_THREADS=1`` in the child's environment, a choice the library leaves alone: no
  row threads) and on two BLAS threads (``OMP_NUM_THREADS=2``), and scikit-learn's
  ``LogisticRegression(C=1)`` (``lbfgs``, BLAS on every core, its default) on the same rows,
  quiet and beside ``--busy`` busy processes (``python -c "while True: pass"``), interleaved.
- ``--part primal``: the same for the in-memory primal solver of the binary models on dense rows
  (``LinearSVC(dual=False)`` and ``LogisticRegression()``, C = 1, tol 1e-3, on 1,000,000 x 60
  Gaussian rows, its Gram matrices narrower than ``WIDE_GRAM``) and for the softmax model's Newton
  reads on tall rows in memory (``LogisticRegression()`` on the same rows of three classes), against
  scikit-learn's ``LinearSVC(dual=False)`` (``liblinear``) and ``LogisticRegression()`` (``lbfgs``).

    python -m benchmarks.bench_products
    python -m benchmarks.bench_products --part chunks
    python -m benchmarks.bench_products --part threads --repeats 2
    python -m benchmarks.bench_products --part primal --repeats 2
    python -m benchmarks.bench_products --part primal --models softmax --repeats 3

It prints its tables; their figures are quoted in ``docs/guide/threads.md`` with the date and load.
"""

import argparse
import os
import statistics
import time

import numpy as np

from benchmarks._common import ENV_AT_START, beside_busy, run_child

SHAPES = [(200_000, 500, 10), (2_000_000, 60, 3), (1_000_000, 30, 10), (100_000, 2_000, 5)]
CHUNKS = [256 << 10, 1 << 20, 4 << 20, 16 << 20]


def _weights(P, cost, Z):
    PdZ = P * Z
    return cost[:, None] * (PdZ - P * PdZ.sum(axis=1, keepdims=True))


def every_row(X, P, cost, V):
    """The product's two matrix products, each over every row."""
    return X.T @ _weights(P, cost, X @ V)


def chunked(X, P, cost, V):
    from dask_streamsvm.engine.primal.sums import weighted_product

    return weighted_product(X, V, 0.0, lambda rows, Z: _weights(P[rows], cost[rows], Z))[0]


def _median_ms(fn, *args, repeats=5):
    fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def chunks_table():
    from threadpoolctl import threadpool_limits

    from dask_streamsvm.engine.primal import sums

    rng = np.random.default_rng(0)
    print(
        "| rows x columns, classes | threads | every row | "
        + " | ".join(f"{c >> 10} KB" for c in CHUNKS)
        + " |"
    )
    for n, d, K in SHAPES:
        X = rng.standard_normal((n, d))
        P = rng.dirichlet(np.ones(K), size=n)
        cost, V = np.ones(n), 0.01 * rng.standard_normal((d, K))
        expected = every_row(X, P, cost, V)
        for threads in (1, 2):
            with threadpool_limits(threads, user_api="blas"):
                cells = [_median_ms(every_row, X, P, cost, V)]
                for chunk in CHUNKS:
                    sums.PRODUCT_CHUNK_BYTES = chunk
                    np.testing.assert_allclose(chunked(X, P, cost, V), expected, rtol=1e-9, atol=1e-9)
                    cells.append(_median_ms(chunked, X, P, cost, V))
            row = " | ".join(f"{c:.0f} ms" for c in cells)
            print(f"| {n:,} x {d:,}, {K} | {threads} | {row} |", flush=True)
    sums.PRODUCT_CHUNK_BYTES = 4 << 20


def child_softmax(spec):
    """The in-memory softmax fit of ``classes`` after a warm-up fit, in a child whose environment
    sets the BLAS threads or not (``threads_table``)."""
    from benchmarks.bench_softmax_cluster import rows_of
    from dask_streamsvm import LogisticRegression

    X, y = rows_of("classes")
    if spec.get("sklearn"):
        from sklearn.linear_model import LogisticRegression
    LogisticRegression(tol=1e-3).fit(X[:2000], y[:2000])
    start = time.perf_counter()
    if spec.get("sklearn"):
        LogisticRegression(C=1.0, max_iter=1000).fit(X, y)
    else:
        LogisticRegression(C=1.0, tol=1e-3).fit(X, y)
    return {"fit_s": time.perf_counter() - start}


def child_primal(spec):
    """The in-memory primal fit of ``spec["model"]`` (``"svc"`` or ``"logistic"``; ``"softmax"``: the
    logistic model of three classes) on 1,000,000 x 60 Gaussian rows after a warm-up fit, ours or
    scikit-learn's (``spec["sklearn"]``)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1_000_000, 60))
    if spec["model"] == "softmax":  # labels drawn from the softmax of a random model
        scores = X @ (rng.standard_normal((60, 3)) / np.sqrt(60)) + rng.gumbel(size=(1_000_000, 3))
        y = np.argmax(scores, axis=1)
    else:
        y = np.where(X @ rng.standard_normal(60) + rng.standard_normal(1_000_000) > 0, 1, -1)
    if spec["sklearn"]:
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        make = {"svc": lambda: LinearSVC(dual=False), "logistic": lambda: LogisticRegression(max_iter=1000)}
        make["softmax"] = make["logistic"]
    else:
        from dask_streamsvm import LinearSVC, LogisticRegression

        make = {"svc": lambda: LinearSVC(dual=False), "logistic": LogisticRegression}
        make["softmax"] = make["logistic"]
    make[spec["model"]]().fit(X[:2000], y[:2000])
    start = time.perf_counter()
    make[spec["model"]]().fit(X, y)
    return {"fit_s": time.perf_counter() - start}


def _environment(threads):
    """A child's environment: without any BLAS thread variable (None: the library's own setting), or
    with ``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS`` set, a choice the library leaves alone."""
    from dask_streamsvm.engine.plan.threads import BLAS_ENVIRONMENT

    env = {k: v for k, v in ENV_AT_START.items() if k not in BLAS_ENVIRONMENT}
    if threads is not None:
        env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    return env


# The fits of threads_table: (the child's BLAS threads, None: the library's own setting; scikit-learn's).
THREAD_FITS = {"library": (None, False), "one": (1, False), "blas2": (2, False), "sklearn": (None, True)}


def threads_table(busy, repeats, task="softmax", models=(None,)):
    print(
        "| condition | load at the start | the library's (a row thread a core) | one thread "
        "(`OMP_NUM_THREADS=1`) | two BLAS threads (`OMP_NUM_THREADS=2`) | scikit-learn (`lbfgs`; "
        "`LinearSVC`: `liblinear`) |"
    )
    for n_busy in sorted({0, busy}):
        load = os.getloadavg()[0]
        for model in models:
            seconds = {name: [] for name in THREAD_FITS}
            with beside_busy(n_busy):
                for _ in range(repeats):
                    for name, (threads, sklearn) in THREAD_FITS.items():
                        spec = {"sklearn": sklearn, "model": model}
                        seconds[name].append(
                            run_child("bench_products", task, spec, env=_environment(threads))["fit_s"]
                        )
            cells = " | ".join(f"{min(s):.2f}-{max(s):.2f} s" for s in seconds.values())
            condition = "quiet" if n_busy == 0 else f"beside {n_busy} busy"
            condition += f", {model}" if model else ""
            print(f"| {condition} | {load:.2f} | {cells} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["chunks", "threads", "primal", "both"], default="both")
    parser.add_argument("--busy", type=int, default=1, help="busy processes beside the second fits")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--models", default="svc,logistic,softmax", help="--part primal's models")
    args = parser.parse_args(argv)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}", flush=True)
    if args.part in ("chunks", "both"):
        chunks_table()
    if args.part in ("threads", "both"):
        threads_table(args.busy, args.repeats)
    if args.part == "primal":
        threads_table(args.busy, args.repeats, "primal", tuple(args.models.split(",")))


if __name__ == "__main__":
    main()

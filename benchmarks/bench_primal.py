"""The primal Newton solver (``dual=False``) against LIBLINEAR's primal solver and our dual solvers.

In memory, on the real sets, a wide sparse synthetic set (100,000 features: Hessian products) and
dense tall synthetic sets: seconds to a relative duality gap of
``--tol`` (ours), and scikit-learn's ``LinearSVC(dual=False)`` at its default tolerance with the
relative suboptimality it reached.  Out of core, on the dense synthetic set written as Parquet:
reads to ``--tol``, seconds, one plain read through Dask, and the ratio of the fit to the in-memory
primal fit plus its reads.  On raw-scale data (the same rows mapped to 0..255): reads against the
scaled data.  Writes ``benchmarks/results/primal.json`` and the "primal" section of
``docs/benchmarks.md``.

    python -m benchmarks.bench_primal            # 1M-row synthetic set
    python -m benchmarks.bench_primal --full     # 10M rows (2 GB of float32 features)
"""

import argparse
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

REAL = ("a9a", "w8a", "ijcnn1")
# The dual solver's cap (--dual-passes): at C = 1 on dense data it needs more (its gap is reported).
DUAL_PASSES = 300
MARKER = "## Primal Newton solver (dual=False)"


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _objective(X, y, coef, intercept, C):
    sign = np.where(y == np.unique(y)[1], 1.0, -1.0)
    margin = sign * (np.asarray(X @ coef).ravel() + intercept)
    return 0.5 * (coef @ coef + intercept * intercept) + C * float(np.square(np.maximum(0, 1 - margin)).sum())


def in_memory_row(name, X, y, C, tol, dual_passes=DUAL_PASSES):
    """Ours (primal and dual) to ``tol`` against scikit-learn's primal solver, on in-memory rows."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC as Liblinear

    from dask_streamsvm import LinearSVC

    primal, t_primal = _timed(lambda: LinearSVC(C=C, dual=False, tol=tol).fit(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dual_model = LinearSVC(C=C, dual=True, solver="memory", tol=tol, max_iter=dual_passes, random_state=0)
        dual, t_dual = _timed(lambda: dual_model.fit(X, y))
        ref, t_ref = _timed(lambda: Liblinear(C=C, dual=False).fit(X, y))
    p_ref = _objective(X, y, ref.coef_[0], ref.intercept_[0], C)
    optimum = LinearSVC(C=C, dual=False, tol=1e-10).fit(X, y).objective_  # within 1e-10 of P*
    return {
        "data": name, "rows": int(X.shape[0]), "features": int(X.shape[1]), "C": C,
        "primal_s": t_primal, "primal_reads": int(primal.n_iter_), "primal_gap": float(primal.duality_gap_),
        "dual_s": t_dual, "dual_passes": int(dual.n_iter_), "dual_gap": float(dual.duality_gap_),
        "liblinear_primal_s": t_ref, "liblinear_subopt": float((p_ref - optimum) / optimum),
    }  # fmt: skip


def load_higgs():
    """The dense HIGGS subset (7,000 rows x 28): labels in the first column of a TSV."""
    import bz2

    from benchmarks._common import data_dir

    with bz2.open(data_dir() / "higgs_lightgbm_subset" / "binary.train.bz2", "rt") as f:
        table = np.loadtxt(f, delimiter="\t")
    return table[:, 1:], table[:, 0].astype(int)


def cluster_row(name, path, C, tol, in_memory_s):
    """``dual=False`` on a LocalCluster of 2 single-thread worker processes, reading the Parquet
    files at ``path`` on the workers, against the in-memory fit."""
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    from dask_streamsvm import LinearSVC

    frame = dd.read_parquet(path)
    X, y = frame[[c for c in frame.columns if c != "label"]], frame["label"]
    model = LinearSVC(C=C, dual=False, cluster="cocoa", tol=tol)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:  # fmt: skip
        clf, t_fit = _timed(lambda: model.fit(X, y, client=client))
    last = clf.history_[-1]
    return {
        "data": name, "C": C, "reads": int(clf.n_iter_) + 1, "gap": float(clf.duality_gap_), "fit_s": t_fit,
        "in_memory_s": in_memory_s, "bytes_received": int(last["bytes_received"]),
        "bytes_sent": int(last["bytes_sent"]),
        "data_bytes": int(last["bytes_read"]) // (int(clf.n_iter_) + 1),
    }  # fmt: skip


def synthetic(n, d, seed=0, raw=False):
    """Dense float32 Gaussian rows and noisy labels of a hyperplane; ``raw``: the same rows mapped
    to integers 0..255 (as raw colour or pixel values), whose hyperplane misses the origin."""
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(d)
    X = rng.standard_normal((n, d), dtype=np.float32)
    y = np.where(X @ w_true + 0.5 * rng.standard_normal(n) > 0, 1, -1).astype(np.int8)
    flip = rng.random(n) < 0.05
    y[flip] = -y[flip]
    if raw:
        X = np.clip(np.round(X * 40 + 128), 0, 255).astype(np.float32)
    return X, y


def wide_sparse(n, d=100_000, nnz=40, seed=0):
    """Binary rows of about ``nnz`` of ``d`` features at unit norm (as tf-idf text), labels of a
    hyperplane with noise: the sparse synthetic set of :mod:`benchmarks.bench_peers`."""
    from benchmarks.bench_peers import _synthetic_rows

    rng = np.random.default_rng(seed)
    return _synthetic_rows("sparse", rng, rng.standard_normal(d), n, d, nnz)


def write_parquet(path, X, y, rows_per_file=250_000):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    for k, start in enumerate(range(0, X.shape[0], rows_per_file)):
        part = X[start : start + rows_per_file]
        columns = {f"f{j}": part[:, j] for j in range(X.shape[1])}
        columns["label"] = y[start : start + rows_per_file]
        pq.write_table(pa.table(columns), path / f"part-{k:05d}.parquet", compression="none")


def out_of_core_row(name, path, C, tol, in_memory_s):
    """Reads and seconds of ``dual=False`` on a Parquet directory, against one plain Dask read."""
    import dask.dataframe as dd

    from dask_streamsvm import LinearSVC

    frame = dd.read_parquet(path)
    features = [c for c in frame.columns if c != "label"]
    _, t_read = _timed(lambda: frame[features].to_dask_array(lengths=True).compute())
    clf, t_fit = _timed(lambda: LinearSVC(C=C, dual=False, tol=tol).fit(frame[features], frame["label"]))
    reads = int(clf.n_iter_) + 1
    return {
        "data": name, "C": C, "reads": reads, "gap": float(clf.duality_gap_), "fit_s": t_fit,
        "plain_read_s": t_read, "in_memory_s": in_memory_s,
        "fit_over_memory_plus_reads": t_fit / (in_memory_s + reads * t_read),
        "gaps": [float(r["gap"]) for r in clf.history_],
    }  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="10M synthetic rows instead of 1M")
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--workdir", default=None, help="where the Parquet files go (default: a temp dir)")
    parser.add_argument("--dual-passes", type=int, default=DUAL_PASSES, help="our dual solver's most passes")
    parser.add_argument("--sparse-rows", type=int, default=None, help="rows of the wide sparse set")
    parser.add_argument("--rows", type=int, default=None, help="rows of the dense sets (1M; 10M with --full)")
    args = parser.parse_args(argv)
    from tests._helpers import load_libsvm_dataset

    n = args.rows or (10_000_000 if args.full else 1_000_000)
    payload = {**payload_header("bench_primal", argv), "machine": machine(), "memory": [], "out_of_core": []}
    for name in REAL:
        X, y = load_libsvm_dataset(name)
        payload["memory"].append(in_memory_row(name, X, y, 1.0, args.tol))
        print(payload["memory"][-1], flush=True)
    X, y = load_higgs()
    payload["memory"].append(in_memory_row("HIGGS subset (dense)", X, y, 1.0, args.tol))
    print(payload["memory"][-1], flush=True)
    # Wide sparse rows (Hessian products, in memory): the sparse synthetic set of python -m benchmarks.
    n_sparse = args.sparse_rows or (1_000_000 if args.full else 200_000)
    X, y = wide_sparse(n_sparse)
    name = f"sparse {n_sparse // 1000}k x 100k"
    payload["memory"].append(in_memory_row(name, X, y, 1.0, args.tol, args.dual_passes))
    print(payload["memory"][-1], flush=True)
    del X, y
    payload["cluster"] = []
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_primal_"))
    try:
        for raw in (False, True):
            X, y = synthetic(n, args.features, raw=raw)
            name = f"{'raw 0..255' if raw else 'dense'} {n / 1e6:g}M x {args.features}"
            for C in (0.01, 1.0):
                payload["memory"].append(in_memory_row(name, X, y, C, args.tol, args.dual_passes))
                print(payload["memory"][-1], flush=True)
            path = work / ("raw" if raw else "dense")
            write_parquet(path, X, y)
            in_memory_s = payload["memory"][-1]["primal_s"]
            del X, y
            payload["out_of_core"].append(out_of_core_row(name, path, 1.0, args.tol, in_memory_s))
            print(payload["out_of_core"][-1], flush=True)
            if not raw:
                payload["cluster"].append(cluster_row(name, path, 1.0, args.tol, in_memory_s))
                print(payload["cluster"][-1], flush=True)
            shutil.rmtree(path)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    save_json(ROOT / "benchmarks" / "results" / f"primal{'_full' if n >= 10_000_000 else ''}.json", payload)
    write_report(payload, MARKER + (" at 10M rows" if n >= 10_000_000 else ""))


def write_report(payload, marker=MARKER):
    lines = [
        "",
        f"`{payload['command']}` on {payload['machine']['cores']} cores, {payload['date']}.",
        "",
        "In memory: seconds to the relative duality gap `tol` (ours: the Hessian on dense rows, Hessian",
        "products by conjugate gradient on sparse ones) and scikit-learn's",
        "`LinearSVC(dual=False)` (LIBLINEAR's primal solver) at its default tolerance, with the",
        "relative suboptimality it reached (against our fit to a gap of 1e-10).",
        "",
        "| data | rows x features | C | primal (ours) | reads | dual (ours, memory) | passes (gap) "
        "| LIBLINEAR primal | its suboptimality |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in payload["memory"]:
        lines.append(
            f"| {r['data']} | {r['rows']:,} x {r['features']} | {r['C']:g} | {r['primal_s']:.2f} s | "
            f"{r['primal_reads']} | {r['dual_s']:.2f} s | {r['dual_passes']} ({r['dual_gap']:.0e}) | "
            f"{r['liblinear_primal_s']:.2f} s | {r['liblinear_subopt']:.1e} |"
        )
    lines += [
        "",
        "Out of core (`dd.read_parquet`, 250,000-row files, C = 1): reads to `tol`, seconds, one plain",
        "Dask read into NumPy, and the fit against the in-memory primal fit plus that many plain reads.",
        "",
        "| data | reads | fit | plain read | in-memory primal | fit / (in-memory + reads x plain read) |",
        "|---|---|---|---|---|---|",
    ]
    for r in payload["out_of_core"]:
        lines.append(
            f"| {r['data']} | {r['reads']} | {r['fit_s']:.1f} s | {r['plain_read_s']:.2f} s | "
            f"{r['in_memory_s']:.2f} s | {r['fit_over_memory_plus_reads']:.2f} |"
        )
    lines += [
        "",
        "On a LocalCluster of 2 single-thread worker processes (`dual=False` with `cluster=\"cocoa\"`:",
        "Newton steps, each one read of every worker's part of the Parquet files, the sums added on",
        "the workers), against the in-memory primal fit; bytes moved over the whole fit.",
        "",
        "| data | reads | gap | fit | in-memory primal | bytes to the client | from the client | data |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in payload.get("cluster", []):
        lines.append(
            f"| {r['data']} | {r['reads']} | {r['gap']:.1e} | {r['fit_s']:.1f} s | "
            f"{r['in_memory_s']:.2f} s | {r['bytes_received'] / 1e6:.2f} MB | "
            f"{r['bytes_sent'] / 1e6:.2f} MB | {r['data_bytes'] / 1e6:.0f} MB |"
        )
    write_section(marker, lines + [""])


if __name__ == "__main__":
    main()

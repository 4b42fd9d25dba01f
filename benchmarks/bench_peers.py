"""Benchmarks against the systems users would pick instead, side by side in one run.

Every method trains the same problem on the same data, read from the same
files, in its own process (so that its peak RSS is its own):

- ``liblinear``: scikit-learn's ``LinearSVC`` (LIBLINEAR's dual coordinate
  descent) on the data loaded into memory: the optimum and speed reference;
- ``snapml``: IBM Snap ML's ``SupportVectorMachine`` in memory
  (``regularizer = 1 / C``), where it installs;
- ``sgd``: dask-ml's ``Incremental(SGDClassifier(loss="hinge"))`` over the
  same Dask collection as ours, one ``partial_fit`` epoch after another
  (``alpha = 1 / (n C)``, the same objective divided by ``n C``);
- ``vw``: Vowpal Wabbit from its own text format with its cache file
  (``--loss_function hinge --l2 1/(n C) --noconstant``), where it installs;
- ours: ``LinearSVC`` in memory, and out of core on the Dask collection
  with ``cache_bytes`` = 10% of the data (BM, SBM, StreamSVM), and the
  cluster modes (``"average"``, ``"cocoa"``) on a LocalCluster of two
  single-thread workers.

The problem: L1-loss (hinge) SVM, no intercept, C = 1 on the real data
(a9a, w8a, ijcnn1) and ``--synthetic-C`` on the synthetic sets.  Methods
that cannot report a model after every pass are run again with 1, 2, 4, ...
passes from scratch (LIBLINEAR, Snap ML, Vowpal Wabbit); each point's time is
that whole run's.  Every model on the way is scored afterwards, outside the
timed runs: exact primal objective on the training data and test accuracy.
In-memory methods' clocks include loading the data (from the same text or
Parquet files); Vowpal Wabbit's include parsing its text, not writing it.

Writes ``benchmarks/results/bench_peers.json``, ``docs/peers.md`` and the
plots ``docs/img/peers_<data>.png``.  Run ``python -m benchmarks`` (the
default run, under 30 minutes on 2 cores) or ``python -m benchmarks --full``.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks._common import N_FEATURES, ROOT, data_dir, machine, payload_header, peak_rss, save_json

RESULTS = ROOT / "benchmarks" / "results" / "bench_peers.json"
REPORT = ROOT / "docs" / "peers.md"
IMG = ROOT / "docs" / "img"
ANALYSIS = "## What the numbers say"  # the report's hand-written part, kept when it is regenerated
SEED = 0
ACCURACY_SLACK = 0.001  # "the optimum's test accuracy": within 0.1 percentage point
OURS = ("ours-memory", "ours-bm", "ours-sbm", "ours-streamsvm", "ours-average", "ours-cocoa")
PEERS = ("liblinear", "snapml", "sgd", "vw")
METHODS = PEERS[:1] + OURS + PEERS[1:]
OUT_OF_CORE = ("ours-bm", "ours-sbm", "ours-streamsvm")
LABELS = {
    "liblinear": "LIBLINEAR (sklearn LinearSVC), in memory",
    "snapml": "Snap ML SupportVectorMachine, in memory",
    "sgd": "dask-ml Incremental(SGDClassifier hinge)",
    "vw": "Vowpal Wabbit (hinge, cache file)",
    "ours-memory": "ours, in memory",
    "ours-bm": "ours, BM out of core",
    "ours-sbm": "ours, SBM out of core",
    "ours-streamsvm": "ours, StreamSVM out of core",
    "ours-average": "ours, cluster average (2 workers)",
    "ours-cocoa": "ours, cluster CoCoA+ (2 workers)",
}


# -- data -----------------------------------------------------------------------------------


def _write_text(path, X, y, style, mode="wb"):
    from benchmarks._textfmt import write_rows

    with open(path, mode) as f:
        write_rows(f, X, y, style)


def _save_test(path, X, y):
    """Saves the test set; returns its bytes in memory."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=X.shape, y=y)
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    X = np.asarray(X)
    np.savez(path, X=X, y=y)
    return X.nbytes


def load_test(path):
    z = np.load(path)
    y = z["y"].astype(np.float64)
    if "X" in z:
        return z["X"], y
    return sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])), y


def _csr_bytes(n_rows, nnz):
    """Bytes of float64 CSR rows (values, int32 indices, int64 row pointers)."""
    return nnz * 12 + (n_rows + 1) * 8


def real_file(name):
    """``name.bz2`` in the shared data (or for a9a the copy shipped in the package), or None."""
    path = data_dir() / f"{name}.bz2"
    if path.exists():
        return path
    shipped = ROOT / "dask_streamsvm" / "data" / f"{name}.bz2"
    return shipped if shipped.exists() else None


def prepare_real(name, work, partitions):
    """a9a, w8a, ijcnn1 as uncompressed LIBSVM and VW text; w8a, which has no test file, is split 80/20."""
    from sklearn.datasets import load_svmlight_file

    d = N_FEATURES[name]
    X, y = load_svmlight_file(str(real_file(name)), n_features=d)
    if name == "w8a":
        test = np.random.default_rng(SEED).random(X.shape[0]) < 0.2
        X, y, Xt, yt = X[~test], y[~test], X[test], y[test]
    else:
        Xt, yt = load_svmlight_file(str(real_file(f"{name}.t")), n_features=d)
    train, vw = work / f"{name}.svm", work / f"{name}.vw"
    _write_text(train, X, y, "libsvm")
    _write_text(vw, X, y, "vw")
    test_bytes = _save_test(work / f"{name}.test.npz", Xt, yt)
    return {
        "name": name, "kind": "libsvm", "train": str(train), "vw": str(vw),
        "test": str(work / f"{name}.test.npz"), "n_features": d, "n_rows": X.shape[0],
        "n_test": Xt.shape[0], "test_bytes": test_bytes, "nnz": int(X.nnz), "C": 1.0,
        "data_bytes": _csr_bytes(X.shape[0], X.nnz),
        "blocksize": max(1 << 16, os.path.getsize(train) // partitions + 1),
        "note": "80/20 seeded split of w8a (no test file)" if name == "w8a" else "",
    }  # fmt: skip


def _synthetic_rows(kind, rng, w_true, m, n_features, nnz):
    if kind == "dense":
        X = rng.standard_normal((m, n_features), dtype=np.float32)
        margin = X @ w_true
    else:  # binary rows of about nnz features, scaled to unit norm, as tf-idf text
        cols = np.sort(rng.integers(0, n_features, size=(m, nnz)), axis=1)
        X = sp.csr_matrix(
            (np.full(m * nnz, 1.0 / math.sqrt(nnz)), cols.ravel(), np.arange(0, m * nnz + 1, nnz)),
            shape=(m, n_features),
        )
        X.sum_duplicates()
        margin = X @ w_true
    margin = margin + 0.5 * np.std(margin) * rng.standard_normal(m)
    y = np.where(margin > 0, 1, -1).astype(np.int8)
    flip = rng.random(m) < 0.05
    y[flip] = -y[flip]
    return X, y


def prepare_synthetic(kind, work, n_rows, n_features, nnz, C, rows_per_part, n_test=100_000):
    """The large synthetic set: Parquet (dense) or LIBSVM text files (sparse), VW text, a test set."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(SEED)
    w_true = rng.standard_normal(n_features)
    name = f"synthetic-{kind}"
    train = work / name
    train.mkdir()
    vw = work / f"{name}.vw"
    total_nnz = 0
    for k, start in enumerate(range(0, n_rows, rows_per_part)):
        m = min(rows_per_part, n_rows - start)
        X, y = _synthetic_rows(kind, rng, w_true, m, n_features, nnz)
        if kind == "dense":
            columns = {f"f{j}": X[:, j] for j in range(n_features)}
            columns["label"] = y
            pq.write_table(pa.table(columns), train / f"part-{k:05d}.parquet", compression="none")
            total_nnz += X.size
        else:
            _write_text(train / f"part-{k:05d}.svm", X, y, "libsvm")
            total_nnz += X.nnz
        _write_text(vw, X, y, "vw", mode="ab")
    Xt, yt = _synthetic_rows(kind, rng, w_true, n_test, n_features, nnz)
    test_bytes = _save_test(work / f"{name}.test.npz", Xt.astype(np.float64) if kind == "dense" else Xt, yt)
    data_bytes = n_rows * n_features * 4 if kind == "dense" else _csr_bytes(n_rows, total_nnz)
    return {
        "name": name, "kind": "parquet" if kind == "dense" else "libsvm",
        "train": str(train) if kind == "dense" else str(train / "*.svm"), "vw": str(vw),
        "test": str(work / f"{name}.test.npz"), "n_features": n_features, "n_rows": n_rows,
        "n_test": n_test, "test_bytes": test_bytes, "nnz": int(total_nnz), "C": C,
        "data_bytes": int(data_bytes),
        "blocksize": "64MB",
        "note": (f"{n_features} standard normal float32 features" if kind == "dense" else
                 f"{nnz} binary features per row out of {n_features:,}, unit norm")
        + ", labels from a noisy linear rule with 5% flipped",
    }  # fmt: skip


# -- the child processes --------------------------------------------------------------------


def _rss_now():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1]) * 1024


def _rchar():
    """Bytes this process has read through system calls (page cache included)."""
    try:
        with open("/proc/self/io") as f:
            return int(next(line for line in f if line.startswith("rchar")).split()[1])
    except (OSError, StopIteration):
        return 0


def load_memory(spec):
    """The training data in memory, as a user would load it: CSR float64 or a dense float32 array."""
    if spec["kind"] == "libsvm":
        from glob import glob

        from dask_streamsvm.io import _parse_block

        # Our compiled reader: the rows of scikit-learn's load_svmlight_file, bit for bit, 10x sooner.
        parts = [
            _parse_block(Path(path).read_bytes(), spec["n_features"], np.float64, False, path)
            for path in sorted(glob(spec["train"]))
        ]
        return sp.vstack([p[0] for p in parts], format="csr"), np.concatenate([p[1] for p in parts])
    import pyarrow.parquet as pq

    table = pq.read_table(spec["train"])
    X = np.column_stack([table.column(f"f{j}").to_numpy() for j in range(spec["n_features"])])
    return X, table.column("label").to_numpy().astype(np.float64)


def load_lazy(spec):
    """The training data as Dask collections (X, y), partitions read when computed."""
    from dask_streamsvm.io import read_libsvm

    if spec["kind"] == "libsvm":
        return read_libsvm(spec["train"], n_features=spec["n_features"], blocksize=spec["blocksize"])
    import dask.dataframe as dd

    # The frame and its label column's name: Dask merges the Parquet partitions of a frame with few
    # columns, so frame["label"] would not be partitioned as frame.drop(columns="label").
    return dd.read_parquet(spec["train"]), "label"


class _Clock:
    def __init__(self, budget):
        self.start = time.perf_counter()
        self.budget = budget

    def __call__(self):
        return time.perf_counter() - self.start

    def over(self):
        return self() > self.budget


def _ladder(clock, fit_once, max_rungs=16):
    """Runs ``fit_once(k)`` for k = 1, 2, 4, ... from scratch; stops when one converged or time is up."""
    points = []
    for rung in range(max_rungs):
        k = 2**rung
        t = time.perf_counter()
        w, passes, converged = fit_once(k)
        points.append({"run_seconds": time.perf_counter() - t, "passes": passes, "w": w})
        if converged or clock.over():
            break
    return points


def child_liblinear(spec, clock):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    X, y = load_memory(spec)
    load_s = clock()

    def fit_once(k):
        clf = LinearSVC(C=spec["C"], loss="hinge", dual=True, fit_intercept=False, tol=spec["ref_tol"],
                        max_iter=k, random_state=SEED)  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(X, y)
        n_iter = int(clf.n_iter_)
        return clf.coef_.ravel().copy(), n_iter, n_iter < k

    return {"load_seconds": load_s, "ladder": _ladder(clock, fit_once, max_rungs=15)}


def child_snapml(spec, clock):
    import snapml

    X, y = load_memory(spec)
    if not sp.issparse(X):
        X = np.ascontiguousarray(X, dtype=np.float32)
    load_s = clock()

    def fit_once(k):
        clf = snapml.SupportVectorMachine(
            loss="hinge", regularizer=1.0 / spec["C"], fit_intercept=False, max_iter=k, tol=1e-6,
            n_jobs=1, random_state=SEED,
        )  # fmt: skip
        clf.fit(X, y)
        n_iter = int(getattr(clf, "n_iter_", k))
        return np.asarray(clf.coef_, dtype=np.float64).ravel().copy(), n_iter, n_iter < k

    return {"load_seconds": load_s, "ladder": _ladder(clock, fit_once, max_rungs=12)}


def child_vw(spec, clock):
    from vowpalwabbit import Workspace

    work = Path(spec["scratch"])
    cache, model = work / "vw.cache", work / "vw.model"
    l2 = 1.0 / (spec["n_rows"] * spec["C"])

    def fit_once(k):
        for f in (cache, model):
            f.unlink(missing_ok=True)
        ws = Workspace(
            f"-d {spec['vw']} --loss_function hinge --l2 {l2:.12g} --noconstant -b 24 --quiet "
            f"--holdout_off --passes {k} -c --cache_file {cache} -f {model}"
        )
        ws.finish()
        return k

    def weights():
        ws = Workspace(f"-i {model} -t --quiet")
        space = ws.hash_space(" ")
        w = np.array([ws.get_weight(ws.hash_feature(str(j), space)) for j in range(spec["n_features"])])
        ws.finish()
        return w

    points = []
    for rung in range(6 if spec["full"] else 4):
        k = 2**rung
        t = time.perf_counter()
        fit_once(k)
        seconds = time.perf_counter() - t
        points.append({"run_seconds": seconds, "passes": k, "w": weights()})
        if clock.over():
            break
    for f in (cache, model):
        f.unlink(missing_ok=True)
    return {"load_seconds": 0.0, "ladder": points}


def child_sgd(spec, clock):
    from dask_ml.wrappers import Incremental
    from sklearn.linear_model import SGDClassifier

    X, y = load_lazy(spec)
    if isinstance(y, str):  # one array of the frame, then its columns: row blocks alike
        A = X[[f"f{j}" for j in range(spec["n_features"])] + [y]].to_dask_array()
        X, y = A[:, :-1], A[:, -1]
    sgd = SGDClassifier(
        loss="hinge", penalty="l2", alpha=1.0 / (spec["n_rows"] * spec["C"]), fit_intercept=False,
        random_state=SEED,
    )  # fmt: skip
    inc = Incremental(sgd, shuffle_blocks=True, random_state=SEED)
    clock.start = time.perf_counter()
    trace = []
    for epoch in range(1, spec["max_passes"] + 1):
        inc.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
        trace.append({"seconds": clock(), "passes": epoch, "w": inc.estimator_.coef_.ravel().copy()})
        if clock.over():
            break
    return {"load_seconds": 0.0, "trace": trace}


def _ours(spec, solver, **extra):
    from dask_streamsvm import LinearSVC

    return LinearSVC(
        C=spec["C"], loss="hinge", fit_intercept=False, tol=spec["tol"], max_iter=spec["max_passes"],
        solver=solver, random_state=SEED, **extra,
    )  # fmt: skip


def _records(history, offset=0.0):
    """Our history records as trace points: the certified model of each pass, with its exact primal."""
    trace, held = [], 0.0
    for r in history:
        trace.append({
            "seconds": offset + r["seconds"], "held_seconds": offset + held, "passes": r["pass"] + 1,
            "primal": r["primal"], "dual": r["dual"], "gap": r["gap"],
            "test_accuracy": r.get("validation_score"),
        })  # fmt: skip
        held = r["seconds"]
    return trace


def _stop_at(clock):
    return [lambda record: clock.over()]


def _warm_up(clf, X, y):
    """Compile (or load from numba's disk cache) the kernels this fit calls, before its clock starts.

    The same estimator fits the first 1,000 rows (of the first partition of a Dask collection)
    for one pass: the same types, so the same compiled functions.
    """
    from sklearn.base import clone

    if hasattr(X, "partitions"):
        X, y = X.partitions[0], (y if isinstance(y, str) else y.partitions[0])
    elif hasattr(X, "blocks"):
        X, y = X.blocks[0], y.blocks[0]
    else:
        X, y = X[:1000], y[:1000]
    clone(clf).set_params(max_iter=1, callbacks=None, tol=1e-1).fit(X, y)


def child_ours_memory(spec, clock):
    from dask_streamsvm import LinearSVC

    X, y = load_memory(spec)
    load_s = clock()
    Xt, yt = load_test(spec["test"])
    _warm_up(LinearSVC(loss="hinge", fit_intercept=False, validation_data=(Xt, yt)), X, y)
    clock.start = time.perf_counter() - load_s  # the clock runs on from the end of loading
    clf = _ours(spec, "memory", validation_data=(Xt, yt), callbacks=_stop_at(clock))
    clf.set_params(max_iter=spec["max_memory_passes"])
    clf.fit(X, y)
    return {"load_seconds": load_s, "trace": _records(clf.history_, offset=load_s), "reads": 1}


def child_ours_stream(spec, clock, solver):
    X, y = load_lazy(spec)
    Xt, yt = load_test(spec["test"])
    if spec["kind"] == "parquet":
        import pandas as pd

        Xt = pd.DataFrame(Xt, columns=[f"f{j}" for j in range(spec["n_features"])])
    clf = _ours(spec, solver, cache_bytes=spec["cache_bytes"], validation_data=(Xt, yt),
                callbacks=_stop_at(clock))  # fmt: skip
    _warm_up(clf, X, y)
    start_rss = _rss_now()  # imports, compiled kernels and the test set
    clock.start = time.perf_counter()
    clf.fit(X, y)
    return {"load_seconds": 0.0, "trace": _records(clf.history_), "start_rss_bytes": start_rss}


def child_ours_cluster(spec, clock, mode):
    from dask.distributed import Client, LocalCluster

    X, y = load_lazy(spec)
    Xt, yt = load_test(spec["test"])
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:  # fmt: skip
        rchar0 = sum(client.run(_rchar).values())
        clf = _ours(spec, "auto", cluster=mode, cache_bytes=spec["cache_bytes"] // 2)
        clf.set_params(max_iter=spec["max_rounds"] if mode == "cocoa" else spec["max_average_passes"])
        if mode == "cocoa":
            clf.set_params(callbacks=_stop_at(clock))
        clock.start = time.perf_counter()
        clf.fit(X, y, client=client)
        wall = clock()
        if spec["kind"] == "parquet":
            import pandas as pd

            Xt = pd.DataFrame(Xt, columns=[f"f{j}" for j in range(spec["n_features"])])
        accuracy = float(clf.score(Xt, yt))
        workers_rss = client.run(peak_rss)
        workers_rchar = sum(client.run(_rchar).values()) - rchar0
    if mode == "cocoa":
        trace = [{
            "seconds": r["seconds"], "passes": r["round"] + 1 if "round" in r else k + 1,
            "primal": r["primal"], "dual": r["dual"], "gap": r["gap"], "test_accuracy": None,
        } for k, r in enumerate(clf.history_)]  # fmt: skip
        trace[-1]["test_accuracy"] = accuracy
    else:
        trace = [{"seconds": wall, "passes": None, "primal": float(clf.objective_), "dual": None,
                  "gap": float(clf.duality_gap_), "test_accuracy": accuracy}]  # fmt: skip
    return {"load_seconds": 0.0, "trace": trace, "workers_peak_rss_bytes": sum(workers_rss.values()),
            "workers_bytes_read": workers_rchar}  # fmt: skip


CHILDREN = {
    "liblinear": child_liblinear,
    "snapml": child_snapml,
    "vw": child_vw,
    "sgd": child_sgd,
    "ours-memory": child_ours_memory,
    "ours-bm": lambda spec, clock: child_ours_stream(spec, clock, "bm"),
    "ours-sbm": lambda spec, clock: child_ours_stream(spec, clock, "sbm"),
    "ours-streamsvm": lambda spec, clock: child_ours_stream(spec, clock, "streamsvm"),
    "ours-average": lambda spec, clock: child_ours_cluster(spec, clock, "average"),
    "ours-cocoa": lambda spec, clock: child_ours_cluster(spec, clock, "cocoa"),
}


# What each child imports before its clock starts: the modules its method needs, no more.
_IMPORTS = {
    "liblinear": ("sklearn.svm", "dask_streamsvm.io", "pyarrow.parquet"),
    "snapml": ("snapml", "dask_streamsvm.io", "pyarrow.parquet"),
    "vw": ("vowpalwabbit",),
    "sgd": ("dask_ml.wrappers", "sklearn.linear_model", "dask_streamsvm.io", "dask.dataframe"),
}
_OURS_IMPORTS = ("dask_streamsvm.io", "dask.dataframe", "pyarrow.parquet")


def child_main(method, spec_path, out_path):
    """Entry point of a child: runs one method, writes its trace (models as .npy) and its resources."""
    import importlib

    for module in _IMPORTS.get(method, _OURS_IMPORTS):
        importlib.import_module(module)
    if method in ("ours-average", "ours-cocoa"):
        importlib.import_module("dask.distributed")
    spec = json.loads(Path(spec_path).read_text())
    import_rss = peak_rss()
    rchar0 = _rchar()
    clock = _Clock(spec["budget_seconds"])
    result = CHILDREN[method](spec, clock)
    result["bytes_read"] = _rchar() - rchar0
    result["peak_rss_bytes"] = peak_rss()
    result["import_rss_bytes"] = import_rss
    models = []
    if "ladder" in result:  # each run's time, from the data on disk: loading (once) plus the run
        result["trace"] = [
            {"seconds": result["load_seconds"] + p["run_seconds"], "passes": p["passes"], "w": p["w"]}
            for p in result.pop("ladder")
        ]
    for point in result["trace"]:
        if "w" in point:
            models.append(point.pop("w"))
    if models:
        np.save(out_path + ".npy", np.vstack(models))
    Path(out_path).write_text(json.dumps(result))


def run_child(method, spec, work, timeout):
    """One method in a fresh interpreter; returns its result, or a note on why there is none."""
    spec_path = work / f"spec-{method}.json"
    out = work / f"out-{method}.json"
    spec_path.write_text(json.dumps(spec))
    out.unlink(missing_ok=True)
    code = (
        "from benchmarks.bench_peers import child_main; "
        f"child_main({method!r}, {str(spec_path)!r}, {str(out)!r})"
    )
    t = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"killed after {timeout} s"}
    if proc.returncode != 0 or not out.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " / ".join(tail) or f"exit status {proc.returncode}"}
    result = json.loads(out.read_text())
    models = Path(str(out) + ".npy")
    result["models"] = np.load(models) if models.exists() else None
    result["process_seconds"] = time.perf_counter() - t
    return result


# -- scoring --------------------------------------------------------------------------------


def score_models(spec, W):
    """Exact primal on the training data and test accuracy of each row of ``W``."""
    X, y = load_memory(spec)
    Xt, yt = load_test(spec["test"])
    primal, accuracy = [], []
    for start in range(0, W.shape[0], 64):
        V = W[start : start + 64]
        M = np.asarray(X @ V.T)
        primal.extend(
            0.5 * np.einsum("ij,ij->i", V, V) + spec["C"] * np.maximum(0, 1 - y[:, None] * M).sum(0)
        )
        accuracy.extend(np.mean(np.where(np.asarray(Xt @ V.T) > 0, 1.0, -1.0) == yt[:, None], axis=0))
    return np.array(primal), np.array(accuracy)


def installed(method):
    module = {"snapml": "snapml", "vw": "vowpalwabbit", "sgd": "dask_ml"}.get(method)
    if module is None:
        return True
    import importlib.util

    return importlib.util.find_spec(module) is not None


def run_dataset(spec, methods, work, args):
    """Every method on one dataset; scores every model; the reference optimum; the summary numbers."""
    results = {}
    for method in methods:
        if not installed(method):
            results[method] = {"skipped": "not installed (pip install .[bench])"}
            print(f"  {method:15s} skipped: not installed", flush=True)
            continue
        mspec = dict(spec, scratch=str(work), budget_seconds=args.budget)
        if method == "liblinear":  # the reference optimum: run to convergence whatever the budget
            mspec["budget_seconds"] = math.inf
        r = run_child(method, mspec, work, timeout=3600 if method == "liblinear" else args.budget * 3 + 120)
        if "error" in r:
            print(f"  {method:15s} FAILED: {r['error']}", flush=True)
        else:
            last = r["trace"][-1]
            print(f"  {method:15s} {last['seconds']:8.1f}s  passes {last['passes']}  "
                  f"peak RSS {r['peak_rss_bytes'] / 1e6:.0f} MB", flush=True)  # fmt: skip
        results[method] = r
    # Score every model that was not certified by its method (one pass over the data for all).
    stacked = [(m, r["models"]) for m, r in results.items() if r.get("models") is not None]
    if stacked:
        primal, accuracy = score_models(spec, np.vstack([W for _, W in stacked]))
        k = 0
        for m, W in stacked:
            points = [p for p in results[m]["trace"]]
            for p, f, a in zip(points, primal[k : k + len(W)], accuracy[k : k + len(W)], strict=True):
                p["primal"], p["test_accuracy"] = float(f), float(a)
            k += len(W)
            del results[m]["models"]
    for r in results.values():
        r.pop("models", None)
    return summarise(spec, results)


def summarise(spec, results):
    """Reference optimum and its test accuracy; per method: time to 1e-2, 1e-3, to the accuracy."""
    ok = {m: r for m, r in results.items() if "trace" in r}
    scored = [p for r in ok.values() for p in r["trace"] if p.get("primal") is not None]
    best = min(scored, key=lambda p: p["primal"])
    duals = [p["dual"] for p in scored if p.get("dual") is not None]
    lib = ok.get("liblinear")
    star = lib["trace"][-1] if lib else best
    p_star, acc_star = star["primal"], star.get("test_accuracy")
    reference = {
        "primal": p_star, "test_accuracy": acc_star, "best_primal_seen": best["primal"],
        "best_dual_seen": max(duals) if duals else None,
        "source": "LIBLINEAR, last run" if lib else "the lowest primal seen (LIBLINEAR not run)",
    }  # fmt: skip
    for r in ok.values():
        for p in r["trace"]:
            if p.get("primal") is not None:
                p["subopt"] = (p["primal"] - p_star) / p_star
        r["summary"] = {
            "to_1e-2": _first(r["trace"], lambda p: p.get("subopt", math.inf) <= 1e-2),
            "to_1e-3": _first(r["trace"], lambda p: p.get("subopt", math.inf) <= 1e-3),
            "to_accuracy": None if acc_star is None else _first(
                r["trace"], lambda p: (p.get("test_accuracy") or 0.0) >= acc_star - ACCURACY_SLACK
            ),
            "final": r["trace"][-1],
        }  # fmt: skip
        if r in [ok.get(m) for m in OUT_OF_CORE]:
            r["summary"]["rss_budget_bytes"] = memory_budget(spec, r["start_rss_bytes"])
    return {"spec": spec, "reference": reference, "methods": results}


def _first(trace, test):
    for p in trace:
        if test(p):
            return {"seconds": p["seconds"], "held_seconds": p.get("held_seconds"), "passes": p["passes"]}
    return None


# -- the report -----------------------------------------------------------------------------


def _fmt_time(hit):
    if hit is None:
        return "not reached"
    passes = f", {hit['passes']} p" if hit.get("passes") is not None else ""
    return f"{hit['seconds']:.1f} s{passes}"


def plot(dataset):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    name = dataset["spec"]["name"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    acc_star = dataset["reference"]["test_accuracy"]
    for method in METHODS:
        r = dataset["methods"].get(method, {})
        if "trace" not in r:
            continue
        t = [p["seconds"] for p in r["trace"] if p.get("subopt") is not None]
        s = [max(p["subopt"], 1e-7) for p in r["trace"] if p.get("subopt") is not None]
        style = "-" if method.startswith("ours") else "--"
        ax1.plot(t, s, style, marker="o", markersize=3, label=method)
        ta = [(p["seconds"], p["test_accuracy"]) for p in r["trace"] if p.get("test_accuracy") is not None]
        if ta:
            ax2.plot(*zip(*ta, strict=True), style, marker="o", markersize=3, label=method)
    ax1.set(xscale="log", yscale="log", xlabel="seconds (log)", ylabel="(P - P*) / P*",
            title=f"{name}: relative primal suboptimality (markers: passes)")  # fmt: skip
    ax1.axhline(1e-3, color="grey", lw=0.5)
    ax2.set(xscale="log", xlabel="seconds (log)", ylabel="test accuracy", title=f"{name}: test accuracy")
    if acc_star is not None:
        ax2.axhline(acc_star - ACCURACY_SLACK, color="grey", lw=0.5)
        ax2.set_ylim(acc_star - 0.05, acc_star + 0.01)
    ax1.legend(fontsize=7)
    fig.tight_layout()
    IMG.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG / f"peers_{name}.png", dpi=90)
    plt.close(fig)


def _best_ours(dataset, candidates=OURS):
    hits = [
        (r["summary"]["to_accuracy"]["seconds"], m)
        for m, r in dataset["methods"].items()
        if m in candidates and "summary" in r and r["summary"]["to_accuracy"] is not None
    ]
    return min(hits)[1] if hits else None


def _rss(r):
    return r.get("peak_rss_bytes", 0) + r.get("workers_peak_rss_bytes", 0)


def write_report(payload):
    lines = [
        "# Against the peers",
        "",
        "Every method trains the same L1-loss (hinge) SVM without intercept on the same files, in "
        "its own process, in one run. How each method is run, and why, is in "
        "`benchmarks/bench_peers.py`'s docstring; the raw results are in "
        "`benchmarks/results/bench_peers.json`.",
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; commit {payload['commit']}; seed {SEED}; the whole run took "
        f"{payload['run_minutes']:.1f} min.  ",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in payload["machine"].items()) + ".",
        *(
            ["", f"Skipped, their files not found: {', '.join(payload['skipped_datasets'])}."]
            if payload.get("skipped_datasets")
            else []
        ),
        "",
        "## Summary",
        "",
        "Time to the optimum's test accuracy (within 0.1 percentage point of the accuracy of "
        "LIBLINEAR's converged model) and peak memory (RSS of the process, plus its workers' in cluster "
        "mode), of our fastest solver there against each peer: *peer / ours*, so above 1 means ours is "
        "faster or leaner. Ours counts the time at which `fit` would return the model: the model "
        "trained by read k comes with its certificate at the end of read k + 1. In parentheses: "
        "the time at which the solver held that model (the end of read k), and the ratios to it.",
        "",
        "| data | our fastest | its time | its peak RSS | " + " | ".join(PEERS) + " |",
        "|---|---|---|---|" + "---|" * len(PEERS),
    ]
    for dataset in payload["datasets"]:
        for label, candidates in (("any", OURS), ("out of core", OUT_OF_CORE)):
            best = _best_ours(dataset, candidates)
            name = dataset["spec"]["name"]
            if best is None:
                lines.append(
                    f"| {name} ({label}) | none reached it | | | " + " | ".join("" for _ in PEERS) + " |"
                )
                continue
            ours = dataset["methods"][best]
            hit_ours = ours["summary"]["to_accuracy"]
            t_ours = hit_ours["seconds"]
            held = hit_ours.get("held_seconds")
            cells = []
            for peer in PEERS:
                r = dataset["methods"].get(peer)
                if r is None or "summary" not in r:
                    cells.append("not run" if r is None else "skipped" if "skipped" in r else "failed")
                    continue
                hit = r["summary"]["to_accuracy"]
                if hit:
                    time_ratio = f"{hit['seconds'] / t_ours:.2f}x"
                    if held:
                        time_ratio += f" ({hit['seconds'] / held:.2f}x)"
                else:  # not reached: its whole run is a lower bound
                    time_ratio = f"> {r['summary']['final']['seconds'] / t_ours:.2f}x (not reached)"
                cells.append(f"time {time_ratio}, RSS {_rss(r) / _rss(ours):.2f}x")
            when = f"{t_ours:.1f} s" + (f" ({held:.1f} s)" if held else "")
            lines.append(
                f"| {name} ({label}) | {best} | {when} | {_rss(ours) / 1e6:.0f} MB | "
                + " | ".join(cells) + " |"
            )  # fmt: skip
    lines += ["", "## Every method on every dataset", ""]
    for dataset in payload["datasets"]:
        spec, ref = dataset["spec"], dataset["reference"]
        lines += [
            f"### {spec['name']}",
            "",
            f"{spec['n_rows']:,} training rows, {spec['n_features']:,} features, {spec['nnz']:,} nonzeros "
            f"({spec['data_bytes'] / 1e6:.0f} MB as float rows), {spec['n_test']:,} test rows; "
            f"C = {spec['C']:g}. "
            + (spec["note"] + ". " if spec["note"] else "")
            + f"Out-of-core solvers: cache_bytes = {spec['cache_bytes'] / 1e6:.1f} MB (10% of the data). "
            f"P\\* = {ref['primal']:.6f} ({ref['source']}; the lowest primal any method reached: "
            f"{ref['best_primal_seen']:.6f}"
            + (f"; the best certified dual: {ref['best_dual_seen']:.6f}" if ref["best_dual_seen"] else "")
            + f"); its test accuracy {ref['test_accuracy']:.4f}.",
            "",
            f"![{spec['name']}](img/peers_{spec['name']}.png)",
            "",
            "| method | to 1e-2 | to 1e-3 | to test acc | last: passes, (P-P\\*)/P\\* | test acc | "
            "peak RSS MB | bytes read MB |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for method in METHODS:
            r = dataset["methods"].get(method)
            if r is None:
                continue
            if "summary" not in r:
                lines.append(
                    f"| {method} | {r.get('skipped') or 'failed: ' + r.get('error', '')} | | | | | | |"
                )
                continue
            s, last = r["summary"], r["summary"]["final"]
            acc = last.get("test_accuracy")
            read = r.get("bytes_read", 0) + r.get("workers_bytes_read", 0)
            only = " (scored at the end only)" if method in ("ours-average", "ours-cocoa") else ""
            budget = s.get("rss_budget_bytes")
            budget = "" if budget is None else f" (budget {budget / 1e6:.0f})"
            lines.append(
                f"| {LABELS[method]} | {_fmt_time(s['to_1e-2'])} | {_fmt_time(s['to_1e-3'])} | "
                f"{_fmt_time(s['to_accuracy'])}{only} | "
                f"{last['passes'] or '-'}, {last.get('subopt', math.nan):.1e} | "
                f"{'' if acc is None else f'{acc:.4f}'} | {_rss(r) / 1e6:.0f}{budget} | {read / 1e6:.0f} |"
            )  # fmt: skip
        lines.append("")
    analysis = ""
    if REPORT.exists() and ANALYSIS in REPORT.read_text():  # hand-written: kept across runs
        analysis = ANALYSIS + REPORT.read_text().split(ANALYSIS, 1)[1]
    REPORT.write_text("\n".join(lines) + "\n" + analysis)


# -- main -----------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="larger synthetic sets and longer budgets")
    parser.add_argument("--datasets", nargs="*", default=["a9a", "w8a", "ijcnn1", "dense", "sparse"])
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--dense-rows", type=int, default=None, help="rows of the dense synthetic set")
    parser.add_argument("--sparse-rows", type=int, default=None, help="rows of the sparse synthetic set")
    parser.add_argument("--dense-C", type=float, default=0.01)
    parser.add_argument("--sparse-C", type=float, default=1.0)
    parser.add_argument("--budget", type=float, default=None, help="seconds per method and dataset")
    parser.add_argument("--workdir", default=None, help="where the data files are written")
    args = parser.parse_args(argv)
    dense_rows = args.dense_rows or (10_000_000 if args.full else 2_000_000)
    sparse_rows = args.sparse_rows or (5_000_000 if args.full else 1_000_000)
    args.budget = args.budget or (900.0 if args.full else 90.0)

    t_run = time.perf_counter()
    datasets, skipped = [], []
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="streamsvm-peers-") as tmp:
        work = Path(tmp)
        for name in args.datasets:
            t = time.perf_counter()
            if name in N_FEATURES:
                if real_file(name) is None or (name != "w8a" and real_file(f"{name}.t") is None):
                    print(f"{name}: skipped, no {name}.bz2 in {data_dir()} (set DASK_STREAMSVM_DATA)")
                    skipped.append(name)
                    continue
                spec = prepare_real(name, work, partitions=16)
                spec.update(
                    tol=1e-4, ref_tol=1e-6, max_passes=50, max_memory_passes=1000, max_rounds=300,
                    max_average_passes=50,
                )  # fmt: skip
            elif name in ("dense", "sparse"):
                dense = name == "dense"
                spec = prepare_synthetic(
                    name, work, dense_rows if dense else sparse_rows, 50 if dense else 100_000, 40,
                    args.dense_C if dense else args.sparse_C, 200_000 if dense else 100_000,
                )  # fmt: skip
                spec.update(
                    tol=1e-3, ref_tol=1e-5, max_passes=30, max_memory_passes=300, max_rounds=100,
                    max_average_passes=10,
                )  # fmt: skip
            else:
                raise SystemExit(f"unknown dataset {name!r}: a9a, w8a, ijcnn1, dense or sparse")
            spec.update(cache_bytes=int(0.1 * spec["data_bytes"]), full=args.full, prefetch=2)
            spec["partitions"] = _partitions(spec)
            print(
                f"{spec['name']}: {spec['n_rows']:,} rows written in {time.perf_counter() - t:.0f} s",
                flush=True,
            )
            dataset = run_dataset(spec, args.methods, work, args)
            plot(dataset)
            datasets.append(dataset)
    payload = {
        **payload_header("bench_peers", argv),
        "commit": _commit(),
        "machine": machine() | _peer_versions(),
        "seed": SEED,
        "run_minutes": (time.perf_counter() - t_run) / 60,
        "datasets": datasets,
        "skipped_datasets": skipped,
    }
    payload["command"] = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    save_json(RESULTS, payload)
    write_report(payload)
    print(f"wrote {REPORT.relative_to(ROOT)} and {RESULTS.relative_to(ROOT)}")


def _partitions(spec):
    X, _ = load_lazy(spec)
    return int(X.npartitions if hasattr(X, "npartitions") else X.numblocks[0])


def memory_budget(spec, start_rss):
    """What an out-of-core fit may hold, by docs/guide/memory.md's accounting.

    The process as the fit starts (measured: imports, compiled kernels, the in-memory test set
    given as ``validation_data``), the row cache, ``prefetch + 2`` partitions in their converted
    form, the dual state (12 bytes a row) and two copies of the weights.
    """
    partition = spec["data_bytes"] / spec["partitions"]
    return int(
        start_rss + spec["cache_bytes"] + (spec["prefetch"] + 2) * partition + 12 * spec["n_rows"]
        + 16 * (spec["n_features"] + 1)
    )  # fmt: skip


def _commit():
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def _peer_versions():
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for package in ("dask-ml", "vowpalwabbit", "snapml"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    return out


if __name__ == "__main__":
    main()

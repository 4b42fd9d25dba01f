"""Schedules at equal memory (BM, SBM-1/2, SBM-1/3, SBM-rand, StreamSVM), and one-pass accuracy.

Part 1, convergence at equal memory.  Each schedule gets the same row
memory ``M``, a fraction (``--memory``, default 10%) of the data's bytes as
the row memory counts them (values, column indices and per-row solver
state: :class:`dask_streamsvm.engine.dual.cache.RowCache`, which is what
``cache_bytes`` and ``block_bytes`` measure).  The split follows the SBM
paper (Chang & Roth, KDD 2011, section 7.1; the BM block is the reference):

* BM: ``solver="bm", block_bytes=M``: a block of M, no cache;
* SBM-1/2: ``solver="sbm"``, cache = block = M/2, informative rows cached;
* SBM-1/3: cache M/3, block 2M/3;
* SBM-rand: SBM-1/2's split, cache drawn at random (``cache_policy="random"``);
* StreamSVM: ``solver="streamsvm", cache_bytes=M``.

Every fit solves LIBLINEAR's L1-loss problem (``loss="hinge", C=1,
fit_intercept=False``, the BM and SBM papers' setting) from alpha = 0 with
one seed, and records the exact relative duality gap of every reader pass
(pass k certifies the state that k reads of training produced, and is known
once its own read ends).  Reported: the reads, block loads and seconds
until the gap first reaches 1e-2 and 1e-3, the relative primal
suboptimality (P - P*)/P* against LIBLINEAR's optimum where it is known,
and test accuracy.

How block loads are counted.  Every schedule reads every partition on every
pass (SBM trains on block plus cache, but the reader still brings every
block in; StreamSVM reads partitions into its cache), so the loads are the
data read, in units of BM's block of M bytes: ``reads * data_bytes / M``
(10 per read with M = 10%).  SBM-1/2 trains twice as many blocks of half
the size per read, StreamSVM none at all; counting data read compares them
fairly.  The reads counted include the one that certifies the gap (what a
fit stopping at that tolerance pays); the ratio without it (the training
reads alone) is in the JSON.

Partitions.  Each dataset is split into ``--partitions`` (default 64)
partitions, a bit under M/6 each, so that blocks are several partitions
(about 6 for BM, 3 for SBM-1/2, 4 for SBM-1/3) and the block boundaries fall where the
memory split says: with partitions of M/2 every SBM-1/2 block would be one
partition, and one slightly larger than M/2 would grow the row memory past
M.

Data: a9a and ijcnn1 (LIBSVM ``.bz2`` files, parsed once and handed out in
row blocks through :func:`dask_streamsvm.io.csr_to_dask`; test files
``a9a.t``, ``ijcnn1.t``), and the synthetic Parquet set of
``bench_out_of_core`` (dense float32, ``--size-gb`` of features, written
here in ``--partitions`` files), with a looser tolerance and fewer passes.

Part 2, one pass (the SBM paper's Table 2 design).  The training rows, in a
seeded random order, are cut into blocks of M/2 bytes; one pass of
``partial_fit`` over them for our ``LinearSVC(solver="sbm")`` (cache M/2),
scikit-learn's ``Perceptron`` and ``SGDClassifier(loss="hinge")`` (alpha =
1 / (C n), the same objective), against the converged models (ours in
memory, scikit-learn's LIBLINEAR), all with an intercept, scored on the test
set.  Skipped, with a note, while ``LinearSVC`` has no ``partial_fit``.

Run ``python -m benchmarks.bench_schedules [--size-gb 0.2] [--quick]``;
results go to ``benchmarks/results/bench_schedules.json`` and
``docs/benchmarks.md``.  With ``--policies``, instead: StreamSVM's cache
rules (``cache_policy`` "informative", "paper", "random"; the first two with
beta = 1 too) and SBM-1/2 in reads to 1e-3 at every ``--memory`` given,
deterministic, printed as the table of docs/papers/streamsvm.md (results in
``bench_schedules_policies.json``).
"""

import argparse
import math
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import N_FEATURES, ROOT, data_dir, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_schedules.json"
MARKER = "## Schedules: BM, SBM and StreamSVM at equal memory"
# LIBLINEAR's optimum of the L1-loss problem, C=1, no intercept (docs/design.md, reference numbers).
P_STAR = {"a9a": 11433.8077, "ijcnn1": 8596.0042}
TARGETS = (1e-2, 1e-3, 1e-4)
C = 1.0
SEED = 0


def row_memory_bytes(n_rows, nnz, n_features, itemsize, sparse):
    """Bytes that ``n_rows`` rows take in the row memory of a binary problem.

    As :class:`~dask_streamsvm.engine.dual.cache.RowCache` counts them: per row, a
    global id, three slot indices and five float64 values per problem (y, U,
    D, Qbar, alpha), plus start and end offsets when sparse; then the values
    themselves, with a 4-byte column index each when sparse.
    """
    per_row = 4 * 8 + 5 * 8 + (2 * 8 if sparse else 0)
    values = nnz * (4 + itemsize) if sparse else n_rows * n_features * itemsize
    return n_rows * per_row + values


def schedule_params(memory):
    """``LinearSVC`` parameters of each schedule, all within ``memory`` bytes of rows."""
    half, third = memory // 2, memory // 3
    return {
        "BM": {"solver": "bm", "cache_bytes": memory, "block_bytes": memory},
        "SBM-1/2": {"solver": "sbm", "cache_bytes": half, "block_bytes": half},
        "SBM-1/3": {"solver": "sbm", "cache_bytes": third, "block_bytes": memory - third},
        "SBM-rand": {"solver": "sbm", "cache_bytes": half, "block_bytes": half, "cache_policy": "random"},
        "StreamSVM": {"solver": "streamsvm", "cache_bytes": memory},
    }


# -- data ---------------------------------------------------------------------------


def load_libsvm(name):
    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm.datasets import compact_csr

    n_features = N_FEATURES[name.removesuffix(".t")]
    X, y = load_svmlight_file(str(data_dir() / f"{name}.bz2"), n_features=n_features)
    return compact_csr(X), y.astype(np.float64)


def real_dataset(name, args):
    from dask_streamsvm.io import csr_to_dask

    X, y = load_libsvm(name)
    X_dask, y_dask = csr_to_dask(X, y, args.partitions)
    return {
        "name": name,
        "X": X_dask,
        "y": y_dask,
        "n_rows": X.shape[0],
        "data_bytes": row_memory_bytes(X.shape[0], X.nnz, X.shape[1], X.dtype.itemsize, sparse=True),
        "p_star": P_STAR.get(name),
        "test": load_libsvm(f"{name}.t") if (data_dir() / f"{name}.t.bz2").exists() else None,
        "tol": args.tol,
        "max_iter": args.max_iter,
    }


def synthetic_dataset(work, args):
    from benchmarks.bench_out_of_core import write_synthetic
    from dask_streamsvm.io import open_path

    n_rows = int(args.size_gb * 1e9 / (4 * args.features))
    path = Path(work) / "synthetic.parquet"
    start = time.perf_counter()
    write_synthetic(path, args.size_gb, args.features, rows_per_file=-(-n_rows // args.partitions), seed=SEED)
    print(f"wrote {n_rows:,} synthetic rows in {time.perf_counter() - start:.0f}s", flush=True)
    X, y = open_path(str(path), "label")
    return {
        "name": f"synthetic {args.size_gb:g} GB",
        "X": X,
        "y": y,
        "n_rows": n_rows,
        "data_bytes": row_memory_bytes(n_rows, 0, args.features, 4, sparse=False),
        "p_star": None,
        "test": None,
        "tol": args.synthetic_tol,
        "max_iter": args.synthetic_max_iter,
    }


# -- part 1: convergence at equal memory --------------------------------------------


def warm_up(args):
    """Compile every schedule's kernels (sparse float64 and dense float32) before anything is timed.

    On 4,000 rows of each layout, cut and budgeted as the measured runs are.
    """
    import dask.array as da

    from dask_streamsvm import LinearSVC
    from dask_streamsvm.io import csr_to_dask

    n = 4000
    X, y = load_libsvm("a9a")
    X, y = X[:n], y[:n]
    dense = np.random.default_rng(SEED).standard_normal((n, 10), dtype=np.float32)
    chunk = -(-n // args.partitions)
    sets = [
        (*csr_to_dask(X, y, args.partitions), row_memory_bytes(n, X.nnz, X.shape[1], 8, sparse=True)),
        (
            da.from_array(dense, chunks=(chunk, 10)),
            da.from_array(np.where(dense[:, 0] > 0, 1.0, -1.0), chunks=chunk),
            row_memory_bytes(n, 0, 10, 4, sparse=False),
        ),
    ]
    for X_dask, y_dask, data_bytes in sets:
        for params in schedule_params(int(args.memory * data_bytes)).values():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = LinearSVC(
                    C=C, loss="hinge", fit_intercept=False, max_iter=2, random_state=SEED, **params
                )
                clf.fit(X_dask, y_dask)


def suboptimality(primal, p_star):
    """(P - P*) / P*, or None where P* is unknown."""
    return None if p_star is None else (primal - p_star) / p_star


def milestone(history, target, data, memory):
    """The first pass whose certified gap is at most ``target``, with what it took; None if none."""
    for record in history:
        if record["gap"] <= target:
            reads = record["rows_read"] / data["n_rows"]
            return {
                "pass": record["pass"],
                "reads": reads,
                "block_loads": reads * data["data_bytes"] / memory,
                "training_block_loads": (reads - 1) * data["data_bytes"] / memory,
                "seconds": record["seconds"],
                "gap": record["gap"],
                "primal": record["primal"],
                "blocks_trained": record.get("blocks"),
                "suboptimality": suboptimality(record["primal"], data["p_star"]),
            }
    return None


def run_schedule(data, name, params, memory):
    from dask_streamsvm import LinearSVC

    clf = LinearSVC(
        C=C, loss="hinge", fit_intercept=False, tol=data["tol"], max_iter=data["max_iter"],
        random_state=SEED, **params,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a schedule that does not converge shows in its gap
        start = time.perf_counter()
        clf.fit(data["X"], data["y"])
        seconds = time.perf_counter() - start
    history = [
        {key: r.get(key) for key in ("pass", "seconds", "rows_read", "gap", "primal", "dual", "blocks",
                                     "cache_rows", "cache_bytes", "memory_bytes")}
        for r in clf.history_
    ]  # fmt: skip
    last = history[-1]
    # SBM/BM report the row memory they allocated; StreamSVM's cache grows with its rows, within cache_bytes.
    allocated = max(r["memory_bytes"] for r in history) if last["memory_bytes"] is not None else None
    row = {
        "data": data["name"],
        "schedule": name,
        "params": {k: v for k, v in params.items() if k != "solver"},
        "solver": params["solver"],
        "fit_seconds": seconds,
        "converged": bool(clf.duality_gap_ <= data["tol"]),
        "memory_allocated_bytes": allocated,
        # Pass 0 trains every block it reads (as every pass short of max_iter does).
        "blocks_per_read": history[0]["blocks"],
        "final": {
            "pass": last["pass"],
            "reads": last["rows_read"] / data["n_rows"],
            "gap": last["gap"],
            "primal": last["primal"],
            "suboptimality": suboptimality(last["primal"], data["p_star"]),
        },
        "milestones": {f"{t:g}": milestone(history, t, data, memory) for t in TARGETS},
        "history": history,
    }
    if data["test"] is not None:
        row["test_accuracy"] = float(clf.score(*data["test"]))
    at = row["milestones"]["0.001"]
    print(
        f"{data['name']:18s} {name:9s} {seconds:6.1f}s  {row['final']['reads']:.0f} reads, final gap "
        f"{last['gap']:.1e}; to 1e-3: "
        + (f"{at['reads']:.0f} reads, {at['seconds']:.1f}s" if at else "not reached"),
        flush=True,
    )
    return row


def measure(data, args):
    memory = int(args.memory * data["data_bytes"])
    rows = [run_schedule(data, name, params, memory) for name, params in schedule_params(memory).items()]
    bm = rows[0]["milestones"]["0.001"]
    bm_final = rows[0]["final"]["reads"] * data["data_bytes"] / memory
    for row in rows:
        at = row["milestones"]["0.001"]
        row["bm_over_this"] = None
        row["bm_over_this_training"] = None
        row["bm_over_this_is_lower_bound"] = bm is None
        if at is not None:
            # BM short of 1e-3 after all its reads: the ratio is at least what it had read.
            row["bm_over_this"] = (bm["block_loads"] if bm else bm_final) / at["block_loads"]
            if at["training_block_loads"] > 0:
                bm_training = bm["training_block_loads"] if bm else bm_final - data["data_bytes"] / memory
                row["bm_over_this_training"] = bm_training / at["training_block_loads"]
    return {
        "data": data["name"],
        "n_rows": data["n_rows"],
        "data_bytes": data["data_bytes"],
        "memory_bytes": memory,
        "partitions": args.partitions,
        "tol": data["tol"],
        "max_iter": data["max_iter"],
        "p_star": data["p_star"],
        "schedules": rows,
    }


# -- part 2: one pass ----------------------------------------------------------------


def one_pass(estimator, blocks, X, y, classes):
    start = time.perf_counter()
    for k, rows in enumerate(blocks):
        if k == 0:
            estimator.partial_fit(X[rows], y[rows], classes=classes)
        else:
            estimator.partial_fit(X[rows], y[rows])
    return estimator, time.perf_counter() - start


def single_pass(name, args):
    """One pass of partial_fit over blocks of M/2 bytes against the converged models, on the test set."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Perceptron, SGDClassifier
    from sklearn.svm import LinearSVC as LiblinearSVC

    from dask_streamsvm import LinearSVC

    X, y = load_libsvm(name)
    X_test, y_test = load_libsvm(f"{name}.t")
    n = X.shape[0]
    data_bytes = row_memory_bytes(n, X.nnz, X.shape[1], X.dtype.itemsize, sparse=True)
    cache = int(args.memory * data_bytes) // 2
    n_blocks = math.ceil(2 / args.memory)  # blocks of about M/2 bytes
    blocks = np.array_split(np.random.default_rng(SEED).permutation(n), n_blocks)
    classes = np.unique(y)
    sbm = {"C": C, "loss": "hinge", "solver": "sbm", "cache_bytes": cache, "random_state": SEED}
    LinearSVC(**sbm).partial_fit(X[:500], y[:500], classes=classes)  # compile before timing
    learners = {
        "ours, SBM-1/2 partial_fit": lambda: one_pass(LinearSVC(**sbm), blocks, X, y, classes),
        "Perceptron partial_fit": lambda: one_pass(Perceptron(random_state=SEED), blocks, X, y, classes),
        "SGDClassifier(hinge) partial_fit": lambda: one_pass(
            SGDClassifier(loss="hinge", alpha=1.0 / (C * n), random_state=SEED), blocks, X, y, classes
        ),
    }
    converged = {
        "ours, in memory (tol 1e-4)": LinearSVC(
            C=C, loss="hinge", tol=1e-4, max_iter=1000, random_state=SEED
        ),
        "scikit-learn LinearSVC (LIBLINEAR)": LiblinearSVC(
            C=C, loss="hinge", dual=True, tol=1e-5, max_iter=100_000, random_state=SEED
        ),
    }
    rows = []
    for method, run in learners.items():
        model, seconds = run()
        rows.append({"method": method, "passes": 1, "seconds": seconds, "model": model})
    for method, model in converged.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            model.fit(X, y)
            seconds = time.perf_counter() - start
        rows.append({"method": method, "passes": None, "seconds": seconds, "model": model})
    reference = rows[-1]["model"].score(X_test, y_test)
    for row in rows:
        model = row.pop("model")
        row["test_accuracy"] = float(model.score(X_test, y_test))
        row["below_converged"] = float(reference - row["test_accuracy"])
        print(
            f"{name:7s} {row['method']:36s} acc {row['test_accuracy']:.4f} {row['seconds']:.2f}s", flush=True
        )
    return {
        "data": name,
        "n_blocks": n_blocks,
        "block_rows": int(len(blocks[0])),
        "cache_bytes": cache,
        "results": rows,
    }


# -- report --------------------------------------------------------------------------


def policies(args):
    """StreamSVM's cache rules (``--policies``, module docstring): a markdown table, and its rows."""
    from dask_streamsvm.engine.dual import streamsvm

    variants = [("informative", 0.9), ("paper", 0.9), ("random", 0.9), ("informative", 1.0), ("paper", 1.0)]
    rows = []
    print(
        "| data | M | schedule | reads to 1e-3 | seconds | last gap | row memory / M |\n" + "|---" * 7 + "|"
    )
    for name in args.real:
        data = dict(real_dataset(name, args), tol=1e-3, max_iter=args.max_iter)
        for fraction in args.memory:
            memory = int(fraction * data["data_bytes"])
            runs = [(f"StreamSVM {p}" + (", beta=1" if b == 1 else ""), p, b) for p, b in variants]
            for label, policy, beta in [*runs, ("SBM-1/2", None, streamsvm.BETA)]:
                params = dict(schedule_params(memory)["SBM-1/2"]) if policy is None else (
                    {"solver": "streamsvm", "cache_bytes": memory, "cache_policy": policy})  # fmt: skip
                kept, streamsvm.BETA = streamsvm.BETA, beta
                try:
                    row = run_schedule(data, label, {**params, "deterministic": True}, memory)
                finally:
                    streamsvm.BETA = kept
                at, last = row["milestones"]["0.001"], row["final"]
                memory_note = _memory_note(
                    dict(row, schedule="BM" if policy is None else "StreamSVM"), memory
                )
                print(f"| {name} | {fraction:.0%} | {label} | {_reached(at)} | {row['fit_seconds']:.1f} | "
                      f"{last['gap']:.1e} | {memory_note[1]} |", flush=True)  # fmt: skip
                rows.append(dict(row, memory_fraction=fraction, beta=beta, history=None))
    payload = {**payload_header("bench_schedules", None), "partitions": args.partitions, "results": rows}
    save_json(RESULTS.with_name("bench_schedules_policies.json"), payload)


def source_state():
    """The commit measured, and whether the package's files differed from it."""
    import subprocess

    def git(*args):
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return out.stdout.strip() if out.returncode == 0 else None

    status = git("status", "--porcelain", "--", "dask_streamsvm")
    return {"commit": git("rev-parse", "HEAD"), "package_modified": None if status is None else bool(status)}


def _fmt(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def _reached(milestone_, with_loads=False):
    if milestone_ is None:
        return "not reached | -" if with_loads else "not reached"
    text = f"{milestone_['reads']:.0f} ({milestone_['seconds']:.1f}s)"
    return text + f" | {milestone_['block_loads']:.0f}" if with_loads else text


def _ratio(row):
    if row["bm_over_this"] is None:
        return "-"
    return ("≥ " if row["bm_over_this_is_lower_bound"] else "") + f"{row['bm_over_this']:.1f}"


def _memory_note(row, memory):
    params = row["params"]
    if row["schedule"] == "StreamSVM":
        split = "cache M"
    else:
        block = f"block {params['block_bytes'] / memory:.2f} M ({row['blocks_per_read']} blocks/read)"
        split = (
            block if row["schedule"] == "BM" else f"cache {params['cache_bytes'] / memory:.2f} M + {block}"
        )
    allocated = row["memory_allocated_bytes"]
    return split, ("≤ 1.00" if allocated is None else f"{allocated / memory:.2f}")


def write_report(payload):
    m = payload["machine"]
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Machine: {m['platform']}, {m['cores']} cores, Python {m['python']}, scikit-learn "
        f"{m['scikit-learn']}, dask {m['dask']}, numba {m['numba']}.  ",
        f"Date: {payload['date']}; commit {str(payload['source']['commit'])[:7]}"
        f"{' with local changes to the package' if payload['source']['package_modified'] else ''}; "
        f"seed {payload['seed']}; the whole run took {payload['seconds'] / 60:.1f} min.",
        "",
        f"Every schedule holds at most M = {payload['memory_fraction']:.0%} of the data's bytes in rows "
        "(as the row memory counts them: values, column indices and per-row solver state), split as in "
        "the SBM paper (section 7.1): BM a block of M and no cache; SBM-1/2 and SBM-rand a cache of M/2 and "
        "blocks of M/2 (SBM-rand's cache drawn at random); SBM-1/3 a cache of M/3 and blocks of 2M/3; "
        "StreamSVM a cache of M. L1-loss SVM, C=1, no intercept, from alpha = 0; data in "
        f"{payload['partitions']} partitions, so that a block is several of them (*memory split* gives the "
        "blocks trained per read). SBM and BM train each block (plus cache) for 10 DCD passes.",
        "",
        "Columns. *row memory / M*: the most the row memory allocated (SBM, BM; StreamSVM's cache grows "
        "to fit, within M). *reads to 1e-2*, *reads to 1e-3*: passes over the data until the certified "
        "relative duality gap (P - D) / P first reaches that value, counting the read that certifies it "
        "(pass k certifies the state k reads of training left), with the seconds since the start of the fit. "
        "*block loads*: data read until then in units of M, i.e. of BM's block (reads x data / M): every "
        "schedule reads every partition on every pass, and SBM-1/2's blocks are half BM's, so counting "
        "data read, not blocks trained, is what compares them fairly. *BM / this*: BM's block loads to "
        "1e-3 over this schedule's (≥: BM had not reached 1e-3 after its last read). (P - P\\*) / P\\*: "
        "relative primal suboptimality against LIBLINEAR's optimum, at 1e-3 and at the last pass; the "
        "gap bounds it where P\\* is unknown. *test acc*: the final model on a9a.t / ijcnn1.t.",
        "",
        "| data | schedule | memory split | row memory / M | reads to 1e-2 | reads to 1e-3 | block loads to "
        "1e-3 | BM / this | (P - P\\*)/P\\* at 1e-3 | last: reads, gap | last (P - P\\*)/P\\* | test acc |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for block in payload["results"]:
        for row in block["schedules"]:
            split, allocated = _memory_note(row, block["memory_bytes"])
            ms = row["milestones"]
            at = ms["0.001"]
            lines.append(
                f"| {block['data']} | {row['schedule']} | {split} | {allocated} | {_reached(ms['0.01'])} | "
                f"{_reached(at, with_loads=True)} | {_ratio(row)} | "
                f"{_fmt(at and at.get('suboptimality'), '.1e')} | "
                f"{row['final']['reads']:.0f}, {row['final']['gap']:.1e} | "
                f"{_fmt(row['final']['suboptimality'], '.1e')} | {_fmt(row.get('test_accuracy'), '.4f')} |"
            )
    settings = "; ".join(
        f"{b['data']}: {b['n_rows']:,} rows, {b['data_bytes'] / 1e6:.1f} MB in row memory, tol {b['tol']:g}, "
        f"max_iter {b['max_iter']}"
        for b in payload["results"]
    )
    lines += ["", f"Settings: {settings}.", ""]
    lines += ["One pass (the SBM paper's Table 2 design):", ""]
    if payload["single_pass"] is None:
        lines += [f"Skipped: {payload['single_pass_note']}", ""]
    else:
        lines += [
            "Training rows in a seeded random order, cut into blocks of about M/2 bytes; one pass of "
            "`partial_fit` over them: ours is `LinearSVC(solver='sbm', loss='hinge', C=1, cache_bytes=M/2)`, "
            "SGD minimises the same objective (alpha = 1 / (C n)). The converged models solve the full "
            "problem in memory. All with an intercept; learning seconds only (the blocks are in memory); "
            "*below converged* = LIBLINEAR's test accuracy minus this one.",
            "",
            "| data | method | blocks | learn s | test acc | below converged |",
            "|---|---|---|---|---|---|",
        ]
        for block in payload["single_pass"]:
            for row in block["results"]:
                blocks = block["n_blocks"] if row["passes"] else "all (converged)"
                lines.append(
                    f"| {block['data']} | {row['method']} | {blocks} | {row['seconds']:.2f} | "
                    f"{row['test_accuracy']:.4f} | {row['below_converged']:+.4f} |"
                )
        lines.append("")
    lines += ["Raw results and every pass's history: `benchmarks/results/bench_schedules.json`.", ""]
    write_section(MARKER, lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-gb", type=float, default=0.2, help="synthetic features, GB (0: none)")
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--real", nargs="*", default=["a9a", "ijcnn1"])
    parser.add_argument("--memory", type=float, nargs="+", default=[0.1], help="M, fractions of the data")
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--tol", type=float, default=1e-4, help="real data")
    parser.add_argument("--max-iter", type=int, default=40, help="real data")
    parser.add_argument("--synthetic-tol", type=float, default=1e-3)
    parser.add_argument("--synthetic-max-iter", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="a small check that everything runs")
    parser.add_argument("--workdir", default=None, help="where to write the synthetic Parquet files")
    parser.add_argument("--policies", action="store_true", help="StreamSVM's cache rules (docstring)")
    args = parser.parse_args(argv)
    if args.policies:
        return policies(args)
    args.memory = args.memory[0]
    if args.quick:
        args.size_gb = min(args.size_gb, 0.01)
        args.max_iter = min(args.max_iter, 8)
        args.synthetic_max_iter = min(args.synthetic_max_iter, 8)

    from dask_streamsvm import LinearSVC

    start = time.perf_counter()
    source = source_state()  # before the run: the code it imports
    warm_up(args)
    results = []
    for name in args.real:
        results.append(measure(real_dataset(name, args), args))
    if args.size_gb > 0:
        with tempfile.TemporaryDirectory(dir=args.workdir, prefix="streamsvm-schedules-") as work:
            results.append(measure(synthetic_dataset(work, args), args))
    single, note = None, None
    if hasattr(LinearSVC, "partial_fit"):
        single = [single_pass(name, args) for name in args.real]
    else:
        note = "`dask_streamsvm.LinearSVC` has no `partial_fit` yet; this part runs once it has."
        print(f"one pass: {note}", flush=True)
    payload = {
        **payload_header("bench_schedules", argv),
        "machine": machine(),
        "source": source,
        "seed": SEED,
        "memory_fraction": args.memory,
        "partitions": args.partitions,
        "C": C,
        "loss": "hinge",
        "seconds": time.perf_counter() - start,
        "results": results,
        "single_pass": single,
        "single_pass_note": note,
    }
    save_json(RESULTS, payload)
    write_report(payload)
    print(f"done in {payload['seconds'] / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()

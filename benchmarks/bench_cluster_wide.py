"""Cluster mode on wide sparse text: the default ``cluster="auto"`` on 1M rows x 100k columns.

The set: /tmp/w38/wide1m/*.svm, LIBSVM text (20 files of 50,000 rows, 100,000 columns, 50 nonzeros a
row), its test set /tmp/w38/wide1m.test.npz; where they are missing, the same rows are written once by
``benchmarks.bench_text.write_wide`` (its generator and seed) to the temporary directory.  Stages,
each timed on its own (the machine's load recorded before it) and run one at a time under the
gate file ``/tmp/gate39/busy-bench``:

``newton``
    ``LinearSVC(tol=1e-3)`` (squared hinge, ``cluster="auto"``: truncated Newton on this width) on a
    LocalCluster of ``--workers`` single-thread worker processes, the rows read from the text by
    the workers: wall time, Newton reads, Hessian products, bytes between workers per product
    against ``2 K (d + 1) x 8`` and through the client per product, test accuracy.
``cocoa``
    ``LinearSVC(loss="hinge", tol=1e-3, max_iter=--cocoa-rounds)`` (``cluster="auto"``: CoCoA+):
    rounds, the gap reached, bytes per round, test accuracy.
``memory``
    One machine: the text read by scikit-learn's ``load_svmlight_file`` (timed apart), then
    ``LinearSVC(dual=False, cluster=None)`` and ``LinearSVC(loss="hinge", cluster=None)`` on the
    CSR matrix.
``daskml``
    dask-ml's ``LogisticRegression`` on the same rows read by ``dask_streamsvm.read_libsvm`` and
    persisted on the cluster (persist not counted); where it refuses scipy sparse chunks, the
    error is recorded and the rows are tried as ``sparse.COO`` chunks.

Each stage's record replaces the one of the same stage and worker count in
``benchmarks/results/bench_cluster_wide.json``; the "Cluster mode on wide sparse text" section of
docs/benchmarks.md is written from all of them.
"""

import argparse
import contextlib
import glob
import json
import os
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_cluster_wide.json"
MARKER = '## Cluster mode on wide sparse text: truncated Newton and CoCoA+ (cluster="auto")'
DATA = "/tmp/w38/wide1m/*.svm"
TEST = "/tmp/w38/wide1m.test.npz"
N_FEATURES = 100_000
GATE_DIR = Path("/tmp/gate39")
GATE = GATE_DIR / "busy-bench"
MACHINE_MEMORY = 20e9  # of the machine's 24 GB, what the workers may hold together


def load_now():
    """The 1, 5 and 15 minute load averages now (uptime's)."""
    return [round(x, 2) for x in os.getloadavg()]


@contextlib.contextmanager
def gated(poll=20, wait_at_most=480):
    """Wait (at most ``wait_at_most`` s) until no other ``busy-*`` gate file exists, then hold ours;
    yields a dict with the seconds waited and whether others were still busy."""
    GATE_DIR.mkdir(exist_ok=True)
    start = time.time()
    others = []
    while time.time() - start < wait_at_most:
        others = [p.name for p in GATE_DIR.glob("busy-*") if p != GATE]
        if not others:
            break
        time.sleep(poll)
    GATE.write_text(f"{os.getpid()} {time.ctime()}\n")
    try:
        yield {"waited_s": round(time.time() - start, 1), "others_busy": others}
    finally:
        GATE.unlink(missing_ok=True)


def test_set():
    from benchmarks.bench_peers import load_test

    return load_test(TEST)


def accuracy(clf, test):
    X, y = test
    return float(np.mean(clf.predict(X) == y))


N_FILES = [None]  # --files: the first so many files (a quick check), None for all


def files():
    return sorted(glob.glob(DATA))[: N_FILES[0]]


def local_cluster(workers):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        memory_limit=int(MACHINE_MEMORY / workers), silence_logs=40,
    )  # fmt: skip
    return cluster, Client(cluster)


def stage_newton(workers, args, test):
    from dask_streamsvm import LinearSVC, read_libsvm

    cluster, client = local_cluster(workers)
    with cluster, client:
        X, y = read_libsvm(files(), n_features=N_FEATURES)
        load = load_now()
        t = time.perf_counter()
        clf = LinearSVC(tol=args.tol, max_iter=args.newton_reads).fit(X, y)
        seconds = time.perf_counter() - t
    last = clf.history_[-1]
    products = int(last["products"])
    d = N_FEATURES
    K = int(last.get("parts", len(clf.cluster_parts_)))
    reads = [r for r in clf.history_ if "pass" in r]
    client_bytes = int(last["bytes_sent"] + last["bytes_received"])
    # a direction from every accepted read but the certified last one
    steps = sum(1 for r in reads if r.get("accepted")) - int(clf.duality_gap_ <= args.tol)
    return {
        "stage": "newton", "workers": workers, "load_before": load, "seconds": seconds,
        "method": last.get("method"), "parts": K, "rows": [p.get("rows") for p in clf.cluster_parts_],
        "reads": len(reads), "newton_steps": steps,
        "products": products, "gap": float(clf.duality_gap_), "objective": float(clf.objective_),
        "bytes_sent": int(last["bytes_sent"]), "bytes_received": int(last["bytes_received"]),
        "bytes_between_workers": int(last["bytes_between_workers"]),
        "product_bytes_between_workers": int(last["product_bytes_between_workers"]),
        "between_workers_per_product": last["product_bytes_between_workers"] / max(products, 1),
        "goal_per_product": 2 * K * (d + 1) * 8,
        "client_bytes_per_product": client_bytes / max(products, 1),
        "test_accuracy": accuracy(clf, test),
        "history": [{k: v for k, v in r.items() if not isinstance(v, np.ndarray)} for r in reads],
    }  # fmt: skip


def stage_cocoa(workers, args, test):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from dask_streamsvm import LinearSVC, read_libsvm

    cluster, client = local_cluster(workers)
    with cluster, client, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the rounds are capped
        X, y = read_libsvm(files(), n_features=N_FEATURES)
        load = load_now()
        t = time.perf_counter()
        clf = LinearSVC(loss="hinge", tol=args.tol, max_iter=args.cocoa_rounds).fit(X, y)
        seconds = time.perf_counter() - t
    rounds = [r for r in clf.history_ if "round" in r and "gap" in r]
    last = rounds[-1]
    return {
        "stage": "cocoa", "workers": workers, "load_before": load, "seconds": seconds,
        "method": last.get("method"), "parts": len(clf.cluster_parts_),
        "rows": [p.get("rows") for p in clf.cluster_parts_], "rounds": len(rounds),
        "max_rounds": args.cocoa_rounds,
        "rounds_to_tol": next((r["round"] for r in rounds if r["gap"] <= args.tol), None),
        "gap": float(np.max(clf.duality_gap_)), "objective": float(clf.objective_),
        "client_bytes_per_round": float(np.mean([r["bytes_sent"] + r["bytes_received"] for r in rounds])),
        "between_workers_per_round": float(np.mean([r["bytes_between_workers"] for r in rounds])),
        "mean_round_seconds": float(np.mean([r["round_seconds"] for r in rounds])),
        "test_accuracy": accuracy(clf, test),
        "gaps": [float(r["gap"]) for r in rounds],
    }  # fmt: skip


def stage_memory(args, test):
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm import LinearSVC

    load = load_now()
    t = time.perf_counter()
    pieces = [load_svmlight_file(path, n_features=N_FEATURES) for path in files()]
    X = sp.vstack([X for X, _ in pieces], format="csr")
    y = np.concatenate([y for _, y in pieces])
    read_seconds = time.perf_counter() - t
    del pieces
    out = {"stage": "memory", "workers": 0, "load_before": load, "read_seconds": read_seconds,
           "n_rows": int(X.shape[0]), "nnz": int(X.nnz)}  # fmt: skip
    fits = {"newton": {"dual": False}, "hinge": {"loss": "hinge"}}
    for name, params in ((name, fits[name]) for name in args.memory_fits):
        out[f"{name}_load_before"] = load_now()
        t = time.perf_counter()
        clf = LinearSVC(cluster=None, tol=args.tol, **params).fit(X, y)
        out[name] = {
            "seconds": time.perf_counter() - t, "objective": float(clf.objective_),
            "gap": float(clf.duality_gap_), "passes": int(np.max(clf.n_iter_)),
            "test_accuracy": accuracy(clf, test),
        }  # fmt: skip
        print(f"memory {name}: {out[name]}", flush=True)
    return out


def stage_daskml(workers, args, test):
    from dask_ml.linear_model import LogisticRegression
    from distributed import wait

    from dask_streamsvm import read_libsvm

    out = {"stage": "daskml", "workers": workers, "attempts": []}
    cluster, client = local_cluster(workers)
    with cluster, client:
        X, y = read_libsvm(files(), n_features=N_FEATURES)
        X, y = client.persist([X, (y > 0).astype(np.float64)])  # dask-glm's logistic labels: 0 and 1
        X.compute_chunk_sizes()
        y.compute_chunk_sizes()

        def as_coo(X):
            import sparse

            return X.map_blocks(sparse.COO.from_scipy_sparse, dtype=X.dtype)

        def with_ones(X):  # the intercept's column added to the rows, as dask-ml's own adds it
            import scipy.sparse as sp

            def block(x):
                return sp.hstack([x, np.ones((x.shape[0], 1))], format="csr")

            return X.map_blocks(block, dtype=X.dtype, chunks=(X.chunks[0], (X.shape[1] + 1,)))

        ones = "with a column of ones, fit_intercept=False"
        raw = 'solver_kwargs={"normalize": False}'
        tries = (  # (rows, their maker, fit_intercept, solver_kwargs)
            ("scipy.sparse CSR chunks", lambda: X, True, None),
            ("sparse.COO chunks", lambda: as_coo(X), True, None),
            (f"scipy.sparse CSR chunks {ones}", lambda: with_ones(X), False, None),
            (f"sparse.COO chunks {ones}", lambda: as_coo(with_ones(X)), False, None),
            (f"scipy.sparse CSR chunks {ones}, {raw}", lambda: with_ones(X), False, {"normalize": False}),
            (f"sparse.COO chunks {ones}, {raw}", lambda: as_coo(with_ones(X)), False, {"normalize": False}),
        )
        for what, rows, intercept, solver_kwargs in tries:
            attempt, t = {"chunks": what, "load_before": load_now()}, None
            try:
                data = client.persist(rows())
                wait(data)  # the persist is not counted
                t = time.perf_counter()
                clf = LogisticRegression(
                    solver="lbfgs",
                    C=1.0,
                    max_iter=args.daskml_iter,
                    fit_intercept=intercept,
                    solver_kwargs=solver_kwargs,
                ).fit(data, y)
                attempt["seconds"] = time.perf_counter() - t
                coef = np.ravel(clf.coef_)
                bias = clf.intercept_ if intercept else coef[-1]
                scores = test[0] @ coef[: test[0].shape[1]] + bias
                attempt["test_accuracy"] = float(np.mean(np.where(scores > 0, 1, -1) == test[1]))
                attempt["iterations"] = args.daskml_iter
                out["attempts"].append(attempt)
                break
            except Exception as exc:  # noqa: BLE001 - the peer's own refusal is the result
                attempt["seconds"] = None if t is None else time.perf_counter() - t
                attempt["error"] = f"{type(exc).__name__}: {exc}"[:600]
                frames = traceback.extract_tb(exc.__traceback__)
                peers = [f for f in frames if "dask_ml" in f.filename or "dask_glm" in f.filename]
                attempt["where"] = [
                    f"{f.filename.split('site-packages/')[-1]}:{f.lineno} {f.name}"
                    for f in (peers[-2:] + frames[-1:])
                ]
                out["attempts"].append(attempt)
                print(f"dask-ml on {what}: {attempt['error']}", flush=True)
    return out


def record_key(record):
    return record["stage"], record["workers"], record.get("tol", 1e-3)


def marginal(record):
    """The client's bytes per Hessian product beyond the reads' and directions' vectors (the
    accounting of ``engine/cluster/products.py``)."""
    from dask_streamsvm.engine.primal.sums import STEPS

    D = N_FEATURES + 1
    per_reads = record["reads"] * (4 * D * 8 + STEPS.shape[0] * 8) + record["newton_steps"] * 3 * D * 8
    return (record["bytes_sent"] + record["bytes_received"] - per_reads) / max(record["products"], 1)


def comparison(records):
    """Lines comparing the cluster's fits with one machine's (read plus fit), from the records."""
    memory = {r.get("tol", 1e-3): r for r in records if r["stage"] == "memory"}
    if not memory:
        return []
    lines = ["", "Against one machine (its read of the text plus its fit; the cluster's time includes "
             "its workers' read of the text):", ""]  # fmt: skip
    for r in sorted(records, key=lambda r: (r["stage"], r["workers"], -r.get("tol", 1e-3))):
        fit = "newton" if r["stage"] == "newton" else "hinge"
        one = memory.get(r.get("tol", 1e-3), {})
        if r["stage"] not in ("newton", "cocoa") or fit not in one:
            continue
        alone = one[fit]
        total = one["read_seconds"] + alone["seconds"]
        lines.append(
            f"- {'truncated Newton' if r['stage'] == 'newton' else 'CoCoA+'}, K = {r['workers']}, "
            f"tol {r.get('tol', 1e-3):g}: {r['seconds']:.1f} s against {total:.1f} s "
            f"({one['read_seconds']:.1f} + {alone['seconds']:.1f}), {r['seconds'] / total:.2f}x; "
            f"objective {(r['objective'] - alone['objective']) / alone['objective']:+.1e} relative to "
            f"one machine's at its tol; test accuracy {100 * r['test_accuracy']:.2f}% against "
            f"{100 * alone['test_accuracy']:.2f}%."
        )
    return lines


def report(payload):
    records = payload["records"]
    lines = [
        "",
        f"Data: {DATA} (1,000,000 rows x 100,000 columns, 50 nonzeros a row, LIBSVM text, 713 MB), test "
        f"set {TEST} (50,000 rows). Machine: {payload['machine']['cores']} cores, 24 GB, shared; "
        f"dask {payload['machine']['dask']}. LocalCluster of K single-thread worker processes on those "
        "cores, memory_limit 20 GB / K each; the workers read the text "
        "(`read_libsvm(files, n_features=100000)`, one partition a file). C = 1, intercept, "
        'tol (relative duality gap) 1e-3 unless the table says otherwise, `cluster="auto"` (the default). '
        "Load: the 1, 5, 15 minute load averages before each timing; each stage ran alone under the "
        "gate /tmp/gate39/busy-bench.",
        "",
        "Squared hinge (`LinearSVC(tol=tol)`: truncated Newton):",
        "",
        "| K | tol | command | load before | seconds | method | Newton reads | directions | "
        "Hessian products | "
        "gap | objective | between workers per product | 2 K (d + 1) x 8 | through the client: all, per "
        "product | of which per product | test acc. |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    newton = [r for r in records if r["stage"] == "newton"]
    for r in sorted(newton, key=lambda r: (-r.get("tol", 1e-3), r["workers"])):
        lines.append(
            f"| {r['workers']} | {r.get('tol', 1e-3):g} | `{r['command']}` | {r['load_before']} | "
            f"{r['seconds']:.1f} | "
            f"{r['method']} | "
            f"{r['reads']} | {r['newton_steps']} | {r['products']} | {r['gap']:.1e} | {r['objective']:.8g} | "
            f"{r['between_workers_per_product']:,.0f} | {r['goal_per_product']:,} | "
            f"{r['bytes_sent'] + r['bytes_received']:,}, {r['client_bytes_per_product']:,.0f} | "
            f"{marginal(r):,.0f} | {100 * r['test_accuracy']:.2f}% |"
        )
    lines += [
        "",
        "Through the client, a Newton read sends `w` and `s` and receives `v`, the diagonal and the "
        "trial losses (4 (d + 1) x 8 bytes and the step lengths' losses), a direction sends the gradient "
        "and the diagonal and receives the step (3 (d + 1) x 8), and a Hessian product only the "
        "conjugate gradient's status: 'of which per product' is what is left of the client's bytes "
        "after the reads' and directions' vectors, divided by the products. With few products a fit "
        "(the problem is easy at this size: 4 reads), the client's bytes per product are dominated by "
        "the reads' vectors; they do not grow with the products. Between workers, each product moves "
        "the direction from the root to the other K - 1 parts' workers and K - 1 partial products up "
        "the tree, 2 (K - 1) (d + 1) x 8 bytes: under the goal of 2 K (d + 1) x 8.",
    ]
    lines += [
        "",
        'Hinge (`LinearSVC(loss="hinge", tol=1e-3, max_iter=R)`: CoCoA+, rounds capped):',
        "",
        "| K | command | load before | seconds | method | rounds (cap) | rounds to 1e-3 | last gap | "
        "s per round | between workers per round | client per round | test acc. |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted((r for r in records if r["stage"] == "cocoa"), key=lambda r: r["workers"]):
        to = r["rounds_to_tol"]
        lines.append(
            f"| {r['workers']} | `{r['command']}` | {r['load_before']} | {r['seconds']:.1f} | "
            f"{r['method']} | "
            f"{r['rounds']} ({r['max_rounds']}) | {'not reached' if to is None else to} | {r['gap']:.1e} | "
            f"{r['mean_round_seconds']:.2f} | {r['between_workers_per_round']:,.0f} | "
            f"{r['client_bytes_per_round']:,.0f} | {100 * r['test_accuracy']:.2f}% |"
        )
    calls = {
        "newton": "`LinearSVC(dual=False, cluster=None)`",
        "hinge": '`LinearSVC(loss="hinge", cluster=None)`',
    }
    for r in (r for r in records if r["stage"] == "memory"):
        fits = [
            f"{call} {f['seconds']:.1f} s ({f['passes']} {'reads' if name == 'newton' else 'passes'}, gap "
            f"{f['gap']:.1e}, objective {f['objective']:.8g}, test {100 * f['test_accuracy']:.2f}%)"
            for name, call in calls.items()
            if (f := r.get(name)) is not None
        ]
        lines += [
            "",
            f"One machine, tol {r.get('tol', 1e-3):g} (`{r['command']}`, load before {r['load_before']}): "
            f"`load_svmlight_file` of the {r.get('files', 20)} files {r['read_seconds']:.1f} s; on the CSR "
            f"matrix, " + "; ".join(fits) + ".",
        ]
    for r in (r for r in records if r["stage"] == "daskml"):
        for a in r["attempts"]:
            head = f'dask-ml `LogisticRegression(solver="lbfgs")` on K = {r["workers"]}, rows persisted as '
            if "error" in a:
                where = f" (in {', '.join(a['where'])})" if a.get("where") else ""
                lines += ["", f"{head}{a['chunks']} (`{r['command']}`): refused, `{a['error']}`{where}."]
            else:
                lines += [
                    "",
                    f"{head}{a['chunks']} (`{r['command']}`, load before {a['load_before']}): "
                    f"{a['seconds']:.1f} s for {a['iterations']} L-BFGS iterations (`max_iter`, the cap: "
                    f"{a['seconds'] / a['iterations']:.0f} s an iteration at most), "
                    f"test {100 * a['test_accuracy']:.2f}% (its own loss, the "
                    "logistic, so no objective to compare).",
                ]
        if all("error" in a for a in r["attempts"]):
            lines += [
                "",
                "dask-ml could not train on these rows: its logistic regression adds the intercept with "
                "`np.concatenate`, which scipy.sparse and sparse.COO blocks refuse, and without it "
                "dask-glm's solver fails on sparse blocks; dense, the rows are 1,000,000 x 100,000 "
                "float64, 800 GB, 33 times the machine's memory.",
            ]
    lines += comparison(records)
    lines += [
        "",
        "Reading the numbers:",
        "",
        "- Truncated Newton takes the same reads and Hessian products at K = 2 and 4 at tol 1e-3 (the "
        "sums are the data's), and the same objective as one machine's to the digits shown. At tol "
        "1e-6 the runs part at the fourth direction: its preconditioned conjugate gradient is "
        "ill-conditioned here (the residual rises 100-fold within the solve), and rounding in the sums, "
        "added in another order, grows from step to step: the residual's ratio to the stopping "
        "threshold agreed with one machine's to 6 digits for 6 steps, then read 3.264133 against "
        "3.264127 at step 7 and 0.86 against 1.19 at step 11 (K = 2), so the cluster stopped one product "
        "earlier, and K = 2 took one more read. The in-process simulation of bench_cluster, whose sums "
        "are added in the same tree order, took 12 products there at K = 1, 2 and 4.",
        "- Between workers, every product moves 2 (K - 1) (d + 1) x 8 bytes, under the goal of "
        "2 K (d + 1) x 8. Through the client, a product costs 16 bytes (the conjugate gradient's "
        "status); the client's total is the reads' and the directions' d-vectors.",
        "- CoCoA+ (hinge) needs more rounds at K = 4 than at K = 2, and each round is a round trip "
        "through the tree; on these 2 cores the K worker processes share the cores with the client, so "
        "K = 4 is no faster than K = 2: the cluster figures here show traffic and counts, not speed-up.",
        "- The machine was shared: the load averages before each timing are in the tables, and other "
        "sessions' CPU-bound tests ran during some stages (loads above 2 on 2 cores).",
    ]
    lines += ["", "Raw results: `benchmarks/results/bench_cluster_wide.json`.", ""]
    write_section(MARKER, lines)


def _ensure_data():
    """The set at DATA, or, where it is missing (a fresh machine), the same set made by
    ``bench_text.write_wide`` (its generator and seed: the rows of /tmp/w38/wide1m) in the
    temporary directory, once."""
    global DATA, TEST
    if glob.glob(DATA):
        return
    from benchmarks.bench_text import write_wide

    work = Path(tempfile.gettempdir()) / "dask-streamsvm-bench"
    made = work / "wide-1000k"
    if not made.exists():
        work.mkdir(parents=True, exist_ok=True)
        print(f"writing the 1M x 100k set to {made} (once)", flush=True)
        write_wide(work, 1_000_000, rows_per_file=50_000)
    DATA, TEST = str(made / "*.svm"), str(work / "wide-1000k.test.npz")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stages", nargs="+", choices=["newton", "cocoa", "memory", "daskml"],
                        default=["newton", "cocoa", "memory", "daskml"])  # fmt: skip
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--newton-reads", type=int, default=50)
    parser.add_argument("--cocoa-rounds", type=int, default=60)
    parser.add_argument("--daskml-iter", type=int, default=100)
    parser.add_argument(
        "--memory-fits", nargs="+", choices=["newton", "hinge"], default=["newton", "hinge"],
        help="the one-machine fits of the memory stage",
    )  # fmt: skip
    parser.add_argument("--files", type=int, default=None, help="the first so many files only (a check)")
    parser.add_argument("--results", default=str(RESULTS), help="the results file (another for a check)")
    parser.add_argument("--render", action="store_true", help="only rewrite the docs from the results")
    args = parser.parse_args(argv)
    N_FILES[0] = args.files
    _ensure_data()
    results = Path(args.results)
    payload = json.loads(results.read_text()) if results.exists() else {"records": []}
    if not args.render:
        header = payload_header("bench_cluster_wide", argv)
        payload.update(machine=machine(), settings={"tol": args.tol})
        test = test_set()
        for stage in args.stages:
            for workers in [0] if stage == "memory" else args.workers:
                with gated() as gate:
                    print(f"{stage} K={workers}: gate {gate}, load {load_now()}", flush=True)
                    if stage == "memory":
                        record = stage_memory(args, test)
                    else:
                        record = globals()[f"stage_{stage}"](workers, args, test)
                record.update(header, gate=gate, files=len(files()), tol=args.tol)
                print({k: v for k, v in record.items() if k not in ("history", "gaps")}, flush=True)
                key = (stage, record["workers"], args.tol)
                payload["records"] = [r for r in payload["records"] if record_key(r) != key] + [record]
                save_json(results, payload)
    if results == RESULTS:
        report(payload)


if __name__ == "__main__":
    main()

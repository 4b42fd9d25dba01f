"""Cluster mode: one-shot averaging and CoCoA+ on a LocalCluster of two single-thread workers.

One run, on each dataset (a9a, w8a, ijcnn1 with their test sets, and the
large synthetic Parquet set of the out-of-core benchmark), hinge loss,
C = 1 on the real sets (the problems of the reference optima in docs/design.md)
and ``--synthetic-C`` (0.01) on the synthetic set, no intercept:

1. the single-process engine (``solver="memory"`` on the computed
   collection, and SBM streaming it with a cache of 10% of the data) to a
   relative duality gap of ``--tol``;
2. ``cluster="cocoa"`` to the same gap: wall time, rounds, bytes moved per
   round, and rounds to a gap of 1e-3;
3. ``cluster="average"``: wall time, relative suboptimality against the
   optimum, its certified gap, and test accuracy against the optimum's;
4. a simulation of K = 2, 10 and 100 parts in this process (the same task
   functions, without Dask): CoCoA+ rounds to 1e-3 and the one-shot
   average's suboptimality as K grows, for the note on larger clusters.

Writes ``benchmarks/results/bench_cluster.json`` and the "Cluster mode"
section of docs/benchmarks.md.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_cluster.json"
MARKER = "## Cluster mode: one-shot average and CoCoA+"
P_STAR = {"a9a": 11433.8077, "w8a": 6604.8866, "ijcnn1": 8596.0042}  # hinge, C = 1, no intercept
SEED = 0
PARAMS = {"C": 1.0, "loss": "hinge", "fit_intercept": False}


def primal(X, y, w):
    margin = np.maximum(0.0, 1.0 - y * (X @ w))
    return 0.5 * float(w @ w) + float(margin.sum())


def accuracy(X, y, w):
    return float(np.mean(np.where(X @ w > 0, 1.0, -1.0) == y))


def datasets(args, work):
    from benchmarks.bench_out_of_core import write_synthetic
    from benchmarks.bench_schedules import load_libsvm
    from dask_streamsvm.io import csr_to_dask, open_path

    for name in args.datasets:
        X, y = load_libsvm(name)
        Xd, yd = csr_to_dask(X, y, args.partitions)
        yield name, X, y, Xd, yd, load_libsvm(f"{name}.t") if name != "w8a" else None
    if args.size_gb > 0:
        path = Path(work) / "synthetic.parquet"
        n_rows = int(args.size_gb * 1e9 / (4 * args.features))
        write_synthetic(
            path, args.size_gb, args.features, rows_per_file=-(-n_rows // args.partitions), seed=SEED
        )
        frames, label = open_path(str(path), "label")
        keep = frames.npartitions - max(
            1, frames.npartitions // 5
        )  # the last fifth of the files: the test set

        def arrays(part):
            frame = part.compute()
            return frame.drop(columns=label).to_numpy(dtype=np.float64), frame[label].to_numpy(
                dtype=np.float64
            )

        X, y = arrays(frames.partitions[:keep])
        yield (
            f"synthetic {args.size_gb:g} GB",
            X,
            y,
            frames.partitions[:keep],
            label,
            arrays(frames.partitions[keep:]),
        )


def measure(client, name, X, y, Xd, yd, test, args):
    from dask_streamsvm import LinearSVC

    C = 1.0 if name in P_STAR else args.synthetic_C
    params = {**PARAMS, "C": C}
    record = {"data": name, "C": C, "n_rows": int(X.shape[0]), "n_features": int(X.shape[1])}
    # The optimum: a reference value, or an in-memory solve to a gap of 1e-6.
    t = time.perf_counter()
    exact = LinearSVC(tol=1e-6, max_iter=5000, random_state=SEED, **params).fit(X, y)
    p_star = P_STAR.get(name, exact.objective_)
    record["p_star"] = p_star
    w_star = exact.coef_.ravel()
    record["optimum_test_accuracy"] = accuracy(*test, w_star) if test else None

    t = time.perf_counter()  # the data already in memory: the solver alone
    memory = LinearSVC(solver="memory", tol=args.tol, max_iter=5000, random_state=SEED, **params).fit(X, y)
    record["memory"] = {"seconds": time.perf_counter() - t, "objective": memory.objective_}
    data_bytes = (
        X.data.nbytes + X.indices.nbytes if hasattr(X, "indices") else X.nbytes // 2
    )  # float32 on disk
    cache = f"{max(int(0.1 * data_bytes), 200_000)}B"
    t = time.perf_counter()
    sbm = LinearSVC(solver="sbm", cache_bytes=cache, tol=args.tol, max_iter=300, random_state=SEED, **params)
    sbm.fit(Xd, yd)
    record["sbm"] = {"seconds": time.perf_counter() - t, "objective": sbm.objective_, "passes": sbm.n_iter_}

    t = time.perf_counter()
    cocoa = LinearSVC(cluster="cocoa", tol=args.tol, max_iter=args.max_rounds, random_state=SEED, **params)
    cocoa.fit(Xd, yd, client=client)
    seconds = time.perf_counter() - t
    rounds = [r for r in cocoa.history_ if "round" in r and "gap" in r]
    to_1e3 = next((r["round"] for r in rounds if r["gap"] <= 1e-3), None)
    record["cocoa"] = {
        "seconds": seconds,
        "rounds": len(rounds),
        "rounds_to_1e-3": to_1e3,
        "gap": cocoa.duality_gap_,
        "relative_suboptimality": (cocoa.objective_ - p_star) / p_star,
        "bytes_per_round": float(np.mean([r["bytes_sent"] + r["bytes_received"] for r in rounds])),
        "bytes_between_workers_per_round": float(np.mean([r["bytes_between_workers"] for r in rounds])),
        "parts": len(cocoa.cluster_parts_),
        "mean_round_seconds": float(np.mean([r["round_seconds"] for r in rounds])),
        "test_accuracy": accuracy(*test, cocoa.coef_.ravel()) if test else None,
    }

    t = time.perf_counter()
    average = LinearSVC(
        cluster="average", cache_bytes=cache, tol=args.tol, max_iter=300, random_state=SEED, **params
    )
    average.fit(Xd, yd, client=client)
    last = average.history_[-1]
    record["average"] = {
        "seconds": time.perf_counter() - t,
        "relative_suboptimality": (average.objective_ - p_star) / p_star,
        "certified_gap": average.duality_gap_,
        "bytes": last["bytes_sent"] + last["bytes_received"],
        "test_accuracy": accuracy(*test, average.coef_.ravel()) if test else None,
    }
    print(
        f"{name:22s} memory {record['memory']['seconds']:.1f}s, sbm {record['sbm']['seconds']:.1f}s, "
        f"cocoa {seconds:.1f}s ({len(rounds)} rounds, {to_1e3} to 1e-3), average "
        f"{record['average']['seconds']:.1f}s (subopt {record['average']['relative_suboptimality']:.2e})",
        flush=True,
    )
    return record


def simulate(X, y, K, tol, inner_iter, max_rounds, seed):
    """CoCoA+ with ``K`` parts run one after another here: rounds to ``tol``, and the average's primal."""
    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine.cluster import Part, cocoa_round
    from dask_streamsvm.engine.layout import as_kernel_rows

    order = np.random.default_rng(seed).permutation(X.shape[0])
    chunks = np.array_split(order, K)
    parts = []
    for idx in chunks:
        n = idx.shape[0]
        parts.append(
            Part(as_kernel_rows(X[idx]), y[idx][None, :], np.ones((1, n)), False, 0.0, float(K), X.shape[1])
        )
    W = np.zeros((1, X.shape[1] + 1))
    rounds = None
    for r in range(max_rounds):
        new = [cocoa_round(p, W, inner_iter, seed + 7919 * j + 1_000_003 * r) for j, p in enumerate(parts)]
        sums = np.sum([p.update[1] for p in new], axis=0)
        half = 0.5 * float(W[0] @ W[0])
        gap = (half + sums[0, 0] - (sums[0, 1] - half)) / (half + sums[0, 0])
        if gap <= tol:
            rounds = r + 1
            break
        W = W + np.sum([p.update[0] for p in new], axis=0)
        parts = new
    w_avg = np.zeros(X.shape[1])
    for idx in chunks:
        model = LinearSVC(tol=1e-4, max_iter=2000, random_state=seed, **PARAMS).fit(X[idx], y[idx])
        w_avg += idx.shape[0] / X.shape[0] * model.coef_.ravel()
    return rounds, primal(X, y, w_avg)


def report(payload):
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; machine: {payload['machine']['cores']} cores, "
        f"dask {payload['machine']['dask']}; "
        "a LocalCluster of 2 single-thread worker processes on the same 2 cores. Hinge loss, C = 1 "
        f"(synthetic: C = {payload['settings']['synthetic_C']:g}), no intercept; tolerance (relative "
        f"duality gap) {payload['settings']['tol']:g}.",
        "",
        "| data | rows | single process, memory (s) | single process, SBM (s) | CoCoA+ (s) | "
        "CoCoA+ / memory | rounds | rounds to 1e-3 | bytes per round: client | between workers | "
        "2 K (d + 1) x 8 | average (s) | average suboptimality | average certified gap | "
        "test acc. optimum | test acc. average |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cap = payload["settings"]["max_rounds"]

    def rounds(v):
        return f"> {cap}" if v is None else str(v)

    for r in payload["results"]:
        c, a = r["cocoa"], r["average"]
        acc = lambda v: "-" if v is None else f"{100 * v:.2f}%"  # noqa: E731
        lines.append(
            f"| {r['data']} | {r['n_rows']:,} | {r['memory']['seconds']:.1f} | {r['sbm']['seconds']:.1f} | "
            f"{c['seconds']:.1f} | {c['seconds'] / r['memory']['seconds']:.1f} | {c['rounds']} | "
            f"{rounds(c['rounds_to_1e-3'])} | {c['bytes_per_round']:,.0f} | "
            f"{c['bytes_between_workers_per_round']:,.0f} | "
            f"{2 * c['parts'] * (r['n_features'] + 1) * 8:,} | {a['seconds']:.1f} | "
            f"{a['relative_suboptimality']:.2e} | {a['certified_gap']:.2e} | "
            f"{acc(r['optimum_test_accuracy'])} | "
            f"{acc(a['test_accuracy'])} |"
        )
    lines += [
        "",
        "Simulated in one process (the same task functions, parts run one after another): CoCoA+ rounds to a "
        "gap of 1e-3 and the one-shot average's relative suboptimality for K parts.",
        "",
        "| data | K | CoCoA+ rounds to 1e-3 | average suboptimality |",
        "|---|---|---|---|",
    ]
    for s in payload["simulation"]:
        lines.append(f"| {s['data']} | {s['K']} | {rounds(s['rounds'])} | {s['average_suboptimality']:.2e} |")
    overhead = np.mean([r["cocoa"]["mean_round_seconds"] for r in payload["results"]])
    lines += [
        "",
        "Reading the numbers:",
        "",
        "- Here cluster mode cannot win on time: the client and both workers share 2 cores, and the single "
        "process solves these sets in seconds. A CoCoA+ round costs "
        f"{overhead * 1000:.0f} ms on average (task round trips plus 10 local DCD passes), and CoCoA+ with "
        "sigma' = K needs hundreds of rounds for a gap of 1e-3 where single-process DCD needs tens of "
        "passes. Its dual moves by steps damped by sigma' (proximal-point-like), so the certified gap closes "
        "far more slowly than the primal converges: the primal of CoCoA+ is typically within 1e-4 long "
        "before "
        "the gap reaches 1e-3 (tests/test_cluster.py).",
        "- Parts are contiguous partitions in file order, assigned round robin, so they inherit the file's "
        "order. w8a's file holds all its positives in its first rows: one part gets every positive, "
        "the other none, and the average is 35% off the optimum (7% with the random split of the "
        "simulation at K = 8); both modes now warn of such parts. ijcnn1's parts differ less visibly, yet "
        "CoCoA+ needs 286 rounds against 56 on a random split. Shuffle such data once (or write it "
        "shuffled) before a cluster fit; files read on every read are dealt into alike parts where their "
        "partitions allow it.",
        "- The one-shot average is cheap (one read per worker, plus one read to certify its objective) and "
        "its test accuracy is within 0.2 point of the optimum's on a9a, ijcnn1 and the synthetic set, but "
        "its suboptimality grows with K (simulation). Its certified gap is the best scaled union of the "
        "parts' dual variables: 6.7e-3 on a9a for a suboptimality of 9.3e-4 (the shares' scaling gave "
        "0.50 whatever the model), and above tol it warns and names cluster='cocoa'.",
        "- Bytes per round: through the client, the certificate's sums only (tens of bytes, whatever K "
        "and d); between the workers, the tree's edges and the fetches of the new w, 2 (K - 1) (d + 1) x 8, "
        "half of 2 K (d + 1) x 8 at K = 2. Before, the client sent and received 2 K (d + 1) x 8 itself "
        "(4,016 bytes a round on a9a). The scheduler adds about 3 K task round trips per round; local "
        "work per round falls as n / K. The simulation shows CoCoA+ with sigma' = K needs more than the "
        "allowed rounds at K = 8, 32 and 100 on all three sets, so on many workers CoCoA+ is for data "
        "that no single machine can hold, and the average for a fast, looser, certified answer.",
        "",
        "Raw results: `benchmarks/results/bench_cluster.json`.",
        "",
    ]
    write_section(MARKER, lines)


def main(argv=None):
    from distributed import Client, LocalCluster

    from benchmarks._common import machine
    from benchmarks.bench_schedules import load_libsvm

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="*", default=["a9a", "w8a", "ijcnn1"])
    parser.add_argument("--size-gb", type=float, default=0.2, help="synthetic Parquet set (0: none)")
    parser.add_argument("--features", type=int, default=500)
    parser.add_argument("--synthetic-C", type=float, default=0.01)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-rounds", type=int, default=500)
    parser.add_argument("--simulate", type=int, nargs="*", default=[8, 32, 100])
    args = parser.parse_args(argv)
    payload = {**payload_header("bench_cluster", argv), "machine": machine(), "settings": vars(args)}
    results = []
    with (
        tempfile.TemporaryDirectory() as work,
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
        ) as cluster,
        Client(cluster) as client,
    ):
        for name, X, y, Xd, yd, test in datasets(args, work):
            results.append(measure(client, name, X, y, Xd, yd, test, args))
    payload["results"] = results
    simulation = []
    for name in args.datasets:
        X, y = load_libsvm(name)
        p_star = P_STAR[name]
        for K in args.simulate:
            rounds, p_avg = simulate(X, y, K, 1e-3, 10, args.max_rounds, SEED)
            simulation.append(
                {"data": name, "K": K, "rounds": rounds, "average_suboptimality": (p_avg - p_star) / p_star}
            )
            print(
                f"simulated {name} K={K}: {rounds} rounds, average subopt {(p_avg - p_star) / p_star:.2e}",
                flush=True,
            )
    payload["simulation"] = simulation
    save_json(RESULTS, payload)
    report(payload)


def render():
    """Rewrite the docs section from the saved results (after a change to :func:`report` only)."""
    import json

    report(json.loads(RESULTS.read_text()))


if __name__ == "__main__":
    main()

"""Cache size: reads and seconds to a 1e-3 gap for StreamSVM, SBM and BM at 1%, 10% and 50% of the data.

The first paper's cache-size study (Matsushima et al. 2012), with the
certificate as the finish line.  For each data set and each fraction f of
its bytes: ``LinearSVC(solver=..., cache_bytes=f * data bytes, tol=1e-3)``
(squared hinge, C=1, no intercept, one seed) for

* ``streamsvm``: asynchronous (the default) and ``deterministic=True``;
* ``sbm``: cache f, block f (SBM-1/2), at most ``inner_iter=100`` passes per
  block (the default, ended by the block's gap), and the paper's fixed 10;
* ``bm``: no cache, a block of 2f (the same memory as SBM).

Reported per fit: the reads until the certified relative gap reached 1e-3
(counting the read that certifies it), the seconds of the whole fit, the
row visits against the in-memory solver's, and the seconds in units of one
plain read of the same collection (``DaskSource.load`` of every partition,
measured once warm).  The in-memory solver's time is on the same rows.

Data: a9a, w8a and ijcnn1 from their LIBSVM ``.bz2`` files, and a dense
synthetic set of ``--dense-rows`` x 50 float32 rows (labels from a random
hyperplane, 5% flipped: most rows are support vectors), each in
``--partitions`` partitions (default 100: a partition is 1% of the data, so
SBM's and BM's blocks stay within their budgets at every fraction).  With
``--partitions 1`` the real sets are read from their files as they are (one
partition each); otherwise they are parsed once and split in memory
(:func:`~dask_streamsvm.io.csr_to_dask`), so a plain read is a copy of
their rows, not a parse.

Run ``python -m benchmarks.bench_cache_size``; results go to
``benchmarks/results/bench_cache_size.json`` and ``docs/benchmarks.md``.
"""

import argparse
import time
import warnings

import numpy as np

from benchmarks._common import N_FEATURES, ROOT, data_dir, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_cache_size.json"
MARKER = "## Cache size: StreamSVM, SBM and BM at 1%, 10% and 50% of the data"
CONFIGS = {
    "StreamSVM": {"solver": "streamsvm"},
    "StreamSVM, deterministic": {"solver": "streamsvm", "deterministic": True},
    "SBM": {"solver": "sbm"},
    "SBM, 10 passes a block": {"solver": "sbm", "inner_iter": 10},
    "BM": {"solver": "bm"},
}


def _datasets(args):
    import dask.array as da

    from dask_streamsvm.io import read_libsvm

    for name in args.real:
        path = data_dir() / f"{name}.bz2"
        if args.partitions == 1:
            X, y = read_libsvm(str(path), n_features=N_FEATURES[name])
        else:
            from sklearn.datasets import load_svmlight_file

            from dask_streamsvm.io import csr_to_dask

            X, y = csr_to_dask(*load_svmlight_file(str(path), n_features=N_FEATURES[name]), args.partitions)
        yield name, X, y
    if args.dense_rows:
        n, d = args.dense_rows, 50
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n, d), dtype=np.float32)
        y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1, -1)
        flip = rng.random(n) < 0.05
        y[flip] = -y[flip]
        name = f"dense {n // 1000}k x {d}"
        rows = -(-n // args.partitions)
        yield name, da.from_array(X, chunks=(rows, d)), da.from_array(y, chunks=rows)


def _in_memory(X, y, tol):
    import scipy.sparse as sp

    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine.data.source import DaskSource

    source = DaskSource(X, y)
    source.load(0)  # warm: the plain read is timed on a warm process
    start = time.perf_counter()
    blocks = [source.load(p) for p in range(source.n_partitions)]
    read_s = time.perf_counter() - start
    if any(sp.issparse(b.X) for b in blocks):
        Xm = sp.vstack([sp.csr_matrix(b.X) for b in blocks], format="csr")
        data_bytes = Xm.data.nbytes + Xm.indices.nbytes + Xm.indptr.nbytes
    else:
        Xm = np.vstack([b.X for b in blocks])
        data_bytes = Xm.nbytes
    ym = np.concatenate([b.y for b in blocks])
    clf = LinearSVC(C=1.0, fit_intercept=False, tol=tol, solver="memory", random_state=0)
    start = time.perf_counter()
    clf.fit(Xm, ym)
    seconds = time.perf_counter() - start
    visits = sum(r.get("active", 0) for r in clf.history_) or None  # each pass visits its active set
    return {"read_s": read_s, "data_bytes": int(data_bytes), "rows": int(Xm.shape[0]), "memory_s": seconds,
            "memory_passes": int(clf.n_iter_), "memory_visits": visits}  # fmt: skip


def _fit(X, y, config, cache_bytes, args):
    from dask_streamsvm import LinearSVC

    params = dict(config)
    if params["solver"] == "bm":
        params["block_bytes"] = 2 * cache_bytes
    clf = LinearSVC(
        C=1.0, fit_intercept=False, tol=args.tol, max_iter=args.max_iter, cache_bytes=cache_bytes,
        random_state=0, **params,
    )  # fmt: skip
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    seconds = time.perf_counter() - start
    history = clf.history_
    reached = next((r for r in history if r["primal"] - r["dual"] <= args.tol * abs(r["primal"])), None)
    last = history[-1]
    return {
        "seconds": seconds,
        "reads": last["pass"] + 1,
        "reads_to_tol": None if reached is None else reached["pass"] + 1,
        "seconds_to_tol": None if reached is None else reached["seconds"],
        "gap": float((last["primal"] - last["dual"]) / abs(last["primal"])),
        "row_visits": last.get("row_visits"),
        "reader_busy_s": last.get("reader_busy_s"),
        "trainer_wait_s": last.get("trainer_wait_s"),
    }


def write_report(payload):
    m = payload["machine"]
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Machine: {m['platform']}, {m['cores']} cores, Python {m['python']}, numba {m['numba']}.  ",
        f"Date: {payload['date']}; the whole run took {payload['seconds'] / 60:.1f} min.",
        "",
        "Squared hinge, C=1, no intercept, tol 1e-3, one seed. *cache*: `cache_bytes` as a share of the "
        "data's bytes (BM: a block of twice that, no cache; SBM: cache and block of that). *reads*: reads "
        "until the certified relative gap first reached 1e-3, counting the read that certifies it "
        f"(-: not within {payload['max_iter']} reads; then the final gap). *s*: seconds to that read. "
        "*plain reads*: those seconds over one warm plain read of the same collection. *x in-memory*: "
        "over the in-memory solver's time on the same rows. *visits*: row visits over the in-memory "
        "solver's. A partition larger than the block is a block of its own: where a partition is larger "
        "than the cache, SBM and BM hold the partition while they train it, not the budget (StreamSVM "
        "holds its cache), so their rows there are not at equal memory.",
        "",
        "| data | cache | solver | reads | s | plain reads | x in-memory | visits / in-memory |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for block in payload["results"]:
        base = block["baseline"]
        for fit in block["fits"]:
            r = fit["result"]
            if r["reads_to_tol"] is None:
                reads, secs, plain, ratio = f"- ({r['gap']:.1e})", "-", "-", "-"
            else:
                s = r["seconds_to_tol"]
                reads, secs = str(r["reads_to_tol"]), f"{s:.2f}"
                plain, ratio = f"{s / base['read_s']:.1f}", f"{s / base['memory_s']:.2f}"
            visits = "-"
            if r["row_visits"] and base["memory_visits"]:
                visits = f"{r['row_visits'] / base['memory_visits']:.2f}"
            lines.append(
                f"| {block['data']} | {fit['fraction']:.0%} | {fit['config']} | {reads} | {secs} | {plain} | "
                f"{ratio} | {visits} |"
            )
    lines += ["", "Baselines (warm plain read; in-memory solver to the same tol):", ""]
    for block in payload["results"]:
        b = block["baseline"]
        lines.append(
            f"- {block['data']}: {b['rows']:,} rows, {b['data_bytes'] / 1e6:.1f} MB, {block['partitions']} "
            f"partition(s); plain read {b['read_s']:.2f} s; in memory {b['memory_s']:.2f} s, "
            f"{b['memory_passes']} passes."
        )
    lines += ["", "Raw results: `benchmarks/results/bench_cache_size.json`.", ""]
    write_section(MARKER, lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--real", nargs="*", default=["a9a", "w8a", "ijcnn1"])
    parser.add_argument("--dense-rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=100, help="1: the real sets' files as they are")
    parser.add_argument("--fractions", nargs="*", type=float, default=[0.01, 0.1, 0.5])
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-iter", type=int, default=40)
    args = parser.parse_args(argv)
    from dask_streamsvm.engine.data.source import DaskSource

    start = time.perf_counter()
    payload = {**payload_header("bench_cache_size", argv), "machine": machine(), "max_iter": args.max_iter}
    results = []
    for name, X, y in _datasets(args):
        baseline = _in_memory(X, y, args.tol)
        block = {"data": name, "baseline": baseline, "partitions": DaskSource(X, y).n_partitions, "fits": []}
        for fraction in args.fractions:
            for config in args.configs:
                result = _fit(X, y, CONFIGS[config], int(fraction * baseline["data_bytes"]), args)
                block["fits"].append({"config": config, "fraction": fraction, "result": result})
                print(name, f"{fraction:.0%}", config, result, flush=True)
        results.append(block)
    payload["results"] = results
    payload["seconds"] = time.perf_counter() - start
    save_json(RESULTS, payload)
    write_report(payload)


if __name__ == "__main__":
    main()

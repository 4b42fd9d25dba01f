"""The reader alone: read speed with one and with two partitions computed at once.

With ``prefetch`` > 1 the reader starts the next partitions' reads while the
current one is computed (up to ``prefetch`` at once, by Dask's scheduler).
This measures a streaming fit's reader with nothing training behind it (the
blocks are taken as soon as they are ready): seconds for one read of the
whole collection with ``prefetch=1`` (one partition at a time) and
``prefetch=2`` (two at once), each the best of three reads, on

- a synthetic Parquet directory of dense float32 rows (read by the Parquet
  fast path), and
- a synthetic sparse LIBSVM text directory, parsed on every read (the
  spill is not used here: it would make every read after the first cheap).

Run ``python -m benchmarks.bench_reader [--size-gb 0.5] [--sparse-rows 500000]``;
results go to ``benchmarks/results/bench_reader.json`` and ``docs/benchmarks.md``.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_reader.json"
MARKER = "## Reader: one and two partitions read at once"


def read_seconds(source, prefetch, repeats=3):
    """Best of ``repeats`` reads of every partition of ``source`` by a reader with ``prefetch``."""
    from dask_streamsvm.engine.data.reader import Reader

    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        with Reader(source, prefetch=prefetch, max_passes=1, shuffle=False, seed=0) as reader:
            while reader.get(timeout=600)[0] != "done":
                pass
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    import dask.dataframe as dd

    from benchmarks.bench_out_of_core import write_sparse, write_synthetic
    from dask_streamsvm.engine.data.source import DaskSource
    from dask_streamsvm.io import read_libsvm

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-gb", type=float, default=0.5, help="dense float32 features, GB")
    parser.add_argument("--sparse-rows", type=int, default=500_000)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="streamsvm-reader-") as work:
        dense = Path(work) / "dense"
        write_synthetic(dense, args.size_gb, 50)
        sparse = Path(work) / "sparse"
        write_sparse(sparse, args.sparse_rows)
        sources = {
            f"dense {args.size_gb:g} GB Parquet": DaskSource(dd.read_parquet(str(dense)), "label"),
            f"sparse {args.sparse_rows:,} rows LIBSVM": DaskSource(
                *read_libsvm(str(sparse / "*.svm"), n_features=100_000)
            ),
        }
        for name, source in sources.items():
            read_seconds(source, 1, repeats=1)  # compile, and the files into the page cache
            one, two = read_seconds(source, 1), read_seconds(source, 2)
            row = {"data": name, "partitions": source.n_partitions, "prefetch_1_s": one, "prefetch_2_s": two}
            print(f"{name}: {source.n_partitions} partitions, prefetch=1 {one:.2f}s, prefetch=2 {two:.2f}s")
            rows.append(row)
    payload = {**payload_header("bench_reader", argv), "cores": os.cpu_count(), "results": rows}
    save_json(RESULTS, payload)
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; {payload['cores']} cores.",
        "",
        "Seconds for one read of every partition by the streaming fit's reader, nothing training (blocks "
        "taken as they come), best of 3: `prefetch=1` computes one partition at a time, `prefetch=2` "
        "two at once. Dense: Parquet, read by the fast path (pyarrow into arrays). Sparse: LIBSVM text "
        "parsed on every read (no spill).",
        "",
        "| data | partitions | prefetch=1 s | prefetch=2 s | speed-up |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['data']} | {r['partitions']} | {r['prefetch_1_s']:.2f} | {r['prefetch_2_s']:.2f} | "
            f"{r['prefetch_1_s'] / r['prefetch_2_s']:.2f}x |"
        )
    write_section(MARKER, [*lines, ""])


if __name__ == "__main__":
    main()

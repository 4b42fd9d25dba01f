"""Out-of-core training against the time to read the data once, and memory.

For each dataset, in separate processes so that peak RSS is the fit's own:

(a) floor: seconds for one plain pass that computes every partition
    through Dask and converts it to NumPy/SciPy (what any out-of-core
    learner pays per pass), and the process's peak RSS;
(b) our ``LinearSVC(cache_bytes=10% of the data, tol=1e-3)`` fit: seconds
    (class counting included), reader passes, certified relative gap, and
    the ratio (b) / (a);
(c) peak RSS of the fit next to its budget: cache_bytes + prefetch
    partitions + model and dual state + 300 MB;
(d) overlap: the fraction of the fit during which reader and trainer both
    worked, at least ``busy_reader + busy_trainer - wall`` over ``wall``;
(e) the in-memory solver (``solver="memory"``, LIBLINEAR's DCD with the
    same certificate) on the same rows, read into RAM first: its fit
    seconds (the read not included) and the ratio (b) / (e).

(f) the read path alone, without a trainer: one plain read through Dask
    (each partition computed and converted to NumPy/SciPy, no checks), one
    raw read (pyarrow decoding the files, or the LIBSVM blocks parsed in
    this thread), and the fit's own reads as the reader makes them (the
    class count, read 1, read 2: with the Parquet fast path and the spill
    of text sources);
(g) peak RSS against the formula of docs/guide/memory.md: RSS as ``fit``
    starts + cache_bytes + (prefetch + 1) x the largest partition + the
    dual state (12 bytes a row) + 50 MB.

Datasets: a synthetic Parquet directory (dense float32 features, labels
from a noisy linear rule, written here, size set by ``--size-gb``), a
synthetic sparse LIBSVM text directory (``--sparse-rows`` rows of 40
binary features out of 100,000, unit norm), and a9a, w8a, ijcnn1 read
from their LIBSVM ``.bz2`` files.

Run ``python -m benchmarks.bench_out_of_core [--size-gb 2]``; results go to
``benchmarks/results/bench_out_of_core.json`` and ``docs/benchmarks.md``.

The paper's setting, ``--read-mb-s N`` (instead of the above): reading
dominates.  Every partition's read of the fit, from the source or from the
spill, takes at least its bytes / N seconds (the reader thread sleeps the
rest while the trainer works: :data:`dask_streamsvm.engine.data.reader._read_bytes_per_s`).
For each set and each ``--cache`` share, with reads held to N MB/s and
unthrottled in the same run: one plain read through the reader (after the
class count, which parses and spills text and is not held), and StreamSVM,
SBM and BM to ``--tol``, in seconds, with the sweeps and visits StreamSVM
made while its reader had nothing ready.  At equal memory M, the share of
the rows' bytes as the row cache counts them (:func:`memory_split`):
StreamSVM a cache of M, SBM a cache of M/2 and blocks of M/2, BM blocks of
M; each set is first cut, in row order, into files no larger than a block
of M/2 (:func:`child_layout`), and each fit records the row memory it held
(``history_``).  ``--data GLOB`` adds a LIBSVM set of one's own
(``--data-features``).  Results:
``benchmarks/results/bench_out_of_core_throttled.json`` and a section of
``docs/benchmarks.md`` (``--out`` and ``--docs`` write them elsewhere).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import _common
from benchmarks._common import N_FEATURES, REPORT, ROOT, data_dir, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_out_of_core.json"
MARKER = "## Out of core: StreamSVM against one plain read"
THROTTLED = ROOT / "benchmarks" / "results" / "bench_out_of_core_throttled.json"
THROTTLED_MARKER = "## Out of core at a disk's speed: StreamSVM, SBM and BM with reads held to N MB/s"


def write_synthetic(path, size_gb, n_features, rows_per_file=250_000, seed=0):
    """Parquet files of float32 features ``f0..`` and an int8 ``label``; returns feature bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_rows = int(size_gb * 1e9 / (4 * n_features))
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(n_features)
    for k, start in enumerate(range(0, n_rows, rows_per_file)):
        m = min(rows_per_file, n_rows - start)
        X = rng.standard_normal((m, n_features), dtype=np.float32)
        margin = X @ w_true + 0.5 * rng.standard_normal(m)
        y = np.where(margin > 0, 1, -1).astype(np.int8)
        flip = rng.random(m) < 0.05
        y[flip] = -y[flip]
        columns = {f"f{j}": X[:, j] for j in range(n_features)}
        columns["label"] = y
        pq.write_table(pa.table(columns), path / f"part-{k:05d}.parquet", compression="none")
    return n_rows * n_features * 4, n_rows


def write_sparse(path, n_rows, n_features=100_000, nnz=40, rows_per_file=100_000, seed=0):
    """LIBSVM text files of ``n_rows`` unit-norm binary rows; returns their CSR bytes and rows."""
    from benchmarks.bench_peers import _csr_bytes, _synthetic_rows, _write_text

    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(n_features)
    total = 0
    for k, start in enumerate(range(0, n_rows, rows_per_file)):
        X, y = _synthetic_rows("sparse", rng, w_true, min(rows_per_file, n_rows - start), n_features, nnz)
        _write_text(path / f"part-{k:05d}.svm", X, y, "libsvm")
        total += X.nnz
    return _csr_bytes(n_rows, total), n_rows


# -- the child processes ------------------------------------------------------------


def _open(spec):
    from dask_streamsvm.io import open_path, read_libsvm

    if spec["kind"] == "parquet":
        return open_path(spec["path"], "label")
    return read_libsvm(spec["path"], n_features=spec["n_features"])


def _rss_now():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1]) * 1024


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def child_reads(spec):
    """The read path alone: plain Dask, raw, and the fit's own reads (seconds), and partition sizes."""
    import dask

    from dask_streamsvm.engine.data.source import DaskSource

    X, y = _open(spec)
    if spec["kind"] == "parquet":
        import pyarrow.parquet as pq

        def plain():
            return [np.asarray(part.compute().to_numpy(dtype=np.float32)) for part in X.to_delayed()]

        files = sorted(Path(spec["path"]).glob("*.parquet"))

        def raw():
            return [pq.read_table(f).num_rows for f in files]
    else:
        from dask.utils import parse_bytes

        from dask_streamsvm import io

        def plain():
            parts = zip(X.to_delayed().ravel(), y.to_delayed().ravel(), strict=True)
            return [dask.compute(x, labels) for x, labels in parts]

        data = []  # the text in memory, cut as read_libsvm cuts it: the raw read is the parse alone
        for path in io._expand(spec["path"]):
            for off, n, comp in io._file_blocks(path, parse_bytes("64MB")):
                data.append(io._read_block(path, off, n, comp))

        def raw():
            where = io._FileBlock("bench", 0, 0, None)
            return [io._parse_block(b, spec["n_features"], np.float64, False, where) for b in data]

    plain_s, _ = _timed(plain)
    raw_s, _ = _timed(raw)
    source = DaskSource(X, y)
    with source.spilling("auto"):
        count_s, _ = _timed(source.label_counts)
        read1_s, blocks = _timed(lambda: [source.load(p) for p in range(source.n_partitions)])
        sizes = [b.nbytes for b in blocks]
        rows = sum(b.n_rows for b in blocks)
        del blocks
        read2_s, _ = _timed(lambda: [source.load(p).n_rows for p in range(source.n_partitions)])
        spilled = source.spill_bytes
    return {
        "plain_s": plain_s, "raw_s": raw_s, "count_s": count_s, "read1_s": read1_s, "read2_s": read2_s,
        "fast_path": source.parquet_plan is not None, "spill_bytes": spilled,
        "partitions": source.n_partitions, "max_partition_bytes": max(sizes), "rows": rows,
    }  # fmt: skip


def child_floor(spec):
    from dask_streamsvm.engine.data.source import DaskSource

    t = time.perf_counter()
    X, y = _open(spec)
    source = DaskSource(X, y)
    rows = sum(source.load(p).n_rows for p in range(source.n_partitions))
    return {"seconds": time.perf_counter() - t, "rows": rows, "partitions": source.n_partitions}


def child_fit(spec):
    from dask_streamsvm import LinearSVC

    X, y = _open(spec)
    clf = LinearSVC(
        C=spec["C"], fit_intercept=False, tol=spec["tol"], max_iter=spec["max_iter"], solver=spec["solver"],
        cache_bytes=spec["cache_bytes"], prefetch=spec["prefetch"], random_state=0,
    )  # fmt: skip
    start_rss = _rss_now()
    t = time.perf_counter()
    clf.fit(X, y)
    wall = time.perf_counter() - t
    last = clf.history_[-1]
    ends = [r["seconds"] for r in clf.history_]  # since fit started: the class count, then each read
    return {
        "seconds": wall,
        "start_rss_bytes": start_rss,
        "seconds_per_read": [b - a for a, b in zip([0.0, *ends[:-1]], ends, strict=True)],
        "spill_bytes": last["spill_bytes"],
        "passes": clf.n_iter_,
        "reads": last["pass"] + 1,
        "gap": float(np.max(clf.duality_gap_)),
        "objective": float(np.max(clf.objective_)),
        "max_cache_bytes": max(r["cache_bytes"] for r in clf.history_),
        "trainer_wait_s": last["trainer_wait_s"],
        "reader_wait_s": last["reader_wait_s"],
        "reader_busy_s": last.get("reader_busy_s"),
        "rows_read": last["rows_read"],
        "row_visits": last["row_visits"],
        "evictions": last["evictions"],
    }


def child_memory(spec):
    import scipy.sparse as sp

    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine.data.source import DaskSource

    X, y = _open(spec)
    source = DaskSource(X, y)
    blocks = [source.load(p) for p in range(source.n_partitions)]
    if any(sp.issparse(b.X) for b in blocks):
        X = sp.vstack([sp.csr_matrix(b.X) for b in blocks], format="csr")
    else:
        X = np.vstack([b.X for b in blocks])
    y = np.concatenate([b.y for b in blocks])
    del blocks
    clf = LinearSVC(C=spec["C"], fit_intercept=False, tol=spec["tol"], solver="memory", random_state=0)
    t = time.perf_counter()
    clf.fit(X, y)
    return {
        "seconds": time.perf_counter() - t,
        "passes": clf.n_iter_,
        "row_visits": int(sum(r["active"] for r in clf.history_)),
        "gap": float(np.max(clf.duality_gap_)),
        "objective": float(np.max(clf.objective_)),
    }


def _hold_reads(spec):
    """Hold every read of the reader to ``spec["read_mb_s"]`` MB/s (None: as fast as they come)."""
    from dask_streamsvm.engine.data import reader

    reader._read_bytes_per_s = None if spec.get("read_mb_s") is None else spec["read_mb_s"] * 1e6


# -- equal memory: the split of M, and partitions no larger than a block ---------------------


def memory_split(solver, memory_bytes):
    """``(cache_bytes, block_bytes)`` of ``solver`` at row memory ``memory_bytes`` (M): StreamSVM a
    cache of M; SBM a cache of M/2 and blocks of M/2; BM no cache (its FitPlan keeps none) and
    blocks of M."""
    if solver == "streamsvm":
        return memory_bytes, None
    if solver == "sbm":
        return memory_bytes // 2, memory_bytes // 2
    return 0, memory_bytes


def _row_memory(X, k):
    """Bytes each row of ``X`` occupies in the library's row memory (a ``RowCache`` of ``k``
    problems, :func:`~dask_streamsvm.engine.plan.sizes.stored_bytes` row by row)."""
    import scipy.sparse as sp

    from dask_streamsvm.engine.plan.sizes import slot_overhead, value_bytes

    sparse = sp.issparse(X)
    per_value = value_bytes(X.dtype, sparse)
    if sparse:
        return slot_overhead(k, True) + np.diff(sp.csr_matrix(X).indptr).astype(np.int64) * per_value
    return np.full(X.shape[0], slot_overhead(k, False) + X.shape[1] * per_value, dtype=np.int64)


class _Pieces:
    """Rows in their order, cut into files of at most ``cap`` bytes of row memory each (a row
    larger than ``cap`` is a file of its own); ``write(parts, k)`` writes file ``k``."""

    def __init__(self, cap, write):
        self.cap, self.write = cap, write
        self.parts, self.used, self.files = [], 0, 0

    def add(self, sizes, take):
        """Rows with byte ``sizes``; ``take(i, j)`` gives rows ``i:j`` as a part of a file."""
        ends = np.cumsum(sizes)
        i = 0
        while i < len(sizes):
            before = ends[i - 1] if i else 0
            n = int(np.searchsorted(ends, before + self.cap - self.used, side="right")) - i
            if n <= 0 and self.used == 0:
                n = 1
            if n <= 0:
                self.close()
                continue
            self.parts.append(take(i, i + n))
            self.used += int(ends[i + n - 1] - before)
            i += n
            if i < len(sizes):
                self.close()

    def close(self):
        if self.parts:
            self.write(self.parts, self.files)
            self.files += 1
        self.parts, self.used = [], 0


def _write_libsvm(path, parts):
    """CSR parts ``(X, y)`` as one LIBSVM file: six decimals when that is exact (the text the
    benchmarks write, and the real sets'), else scikit-learn's writer."""
    import scipy.sparse as sp

    from benchmarks._textfmt import write_rows

    X = sp.vstack([sp.csr_matrix(x) for x, _ in parts], format="csr")
    y = np.concatenate([labels for _, labels in parts])
    if not np.array_equal(np.round(y), y):
        raise ValueError(f"{path}: labels that are not integers cannot be written as text here")
    if np.array_equal(np.round(X.data * 1e6) / 1e6, X.data):
        with open(path, "wb") as f:
            write_rows(f, X, y, "libsvm")
    else:
        from sklearn.datasets import dump_svmlight_file

        dump_svmlight_file(X, y.astype(np.int64), str(path))


def child_layout(spec):
    """The set cut anew for each of ``spec["layouts"]`` (``cache``: a ``--cache`` share or size;
    ``path``: a new folder): M = the share of the rows' bytes in row memory, and files of at most
    M/2 less the row memory's header (SBM's block), in row order; then the partitions the library
    sees there, counted.  Returns ``{"layouts": [...]}``: per layout, M, the new spec, and the
    partitions."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import scipy.sparse as sp

    from dask_streamsvm.engine.data.source import DaskSource
    from dask_streamsvm.engine.dual.cache import RowCache
    from dask_streamsvm.engine.plan.sizes import CacheShare, parse_bytes, stored_bytes

    X, y = _open(spec)
    source = DaskSource(X, y)
    rows = values = 0
    classes = set()
    for p in range(source.n_partitions):
        block = source.load(p)
        rows += block.n_rows
        values += block.X.nnz if sp.issparse(block.X) else block.X.size
        classes.update(np.unique(block.y).tolist())
        dtype, sparse = block.X.dtype, sp.issparse(block.X)
    k = 1 if len(classes) <= 2 else len(classes)  # binary: one problem; else one per class
    total = stored_bytes(rows, values, k, dtype, sparse)
    out = []
    for layout in spec["layouts"]:
        cache = parse_bytes(layout["cache"], share=True)
        memory = int(np.ceil(float(cache) * total)) if isinstance(cache, CacheShare) else cache
        cap = memory // 2 - RowCache.HEADER  # what SBM's block of M/2 takes (BlockTrainer._add_to_block)
        folder = Path(layout["path"])
        folder.mkdir(parents=True, exist_ok=True)
        if spec["kind"] == "parquet":
            per_row = stored_bytes(1, source.n_features, k, dtype, False)

            def write(parts, n, folder=folder):
                pq.write_table(pa.concat_tables(parts), folder / f"part-{n:05d}.parquet", compression="none")

            pieces = _Pieces(cap, write)
            for f in sorted(Path(spec["path"]).glob("*.parquet")):
                table = pq.read_table(f)
                pieces.add(np.full(table.num_rows, per_row), lambda i, j, t=table: t.slice(i, j - i))
            new = {"kind": "parquet", "path": str(folder)}
        else:
            pieces = _Pieces(
                cap, lambda parts, n, folder=folder: _write_libsvm(folder / f"part-{n:05d}.svm", parts)
            )
            for p in range(source.n_partitions):
                block = source.load(p)
                Xp, yp = sp.csr_matrix(block.X), np.asarray(block.y)
                pieces.add(_row_memory(Xp, k), lambda i, j, Xp=Xp, yp=yp: (Xp[i:j], yp[i:j]))
            new = {"kind": "libsvm", "path": str(folder / "*.svm"), "n_features": spec["n_features"]}
        pieces.close()
        X2, y2 = _open(new)
        cut = DaskSource(X2, y2)
        sizes, n_rows = [], 0
        for p in range(cut.n_partitions):
            block = cut.load(p)
            sizes.append(int(_row_memory(block.X, k).sum()))
            n_rows += block.n_rows
        out.append({
            "cache": layout["cache"], "spec": new, "memory_bytes": int(memory),
            "row_memory_bytes": int(total), "problems": k, "files": pieces.files,
            "partitions": cut.n_partitions, "max_partition_bytes": max(sizes), "block_limit_bytes": int(cap),
            "rows": n_rows, "rows_before": rows,
        })  # fmt: skip
    return {"layouts": out}


def child_held_read(spec):
    """One plain read of every partition through the reader, after the class count (not timed)."""
    from dask_streamsvm.engine.data.reader import read_blocks
    from dask_streamsvm.engine.data.source import DaskSource

    _hold_reads(spec)
    X, y = _open(spec)
    source = DaskSource(X, y)
    with source.spilling("auto"):
        source.label_counts()
        t = time.perf_counter()
        nbytes = sum(block.nbytes for _, block in read_blocks(source, prefetch=spec["prefetch"]))
    return {"seconds": time.perf_counter() - t, "bytes": nbytes, "partitions": source.n_partitions}


def _most(history, key):
    """The largest ``key`` of the fit's history records (None where they have none)."""
    values = [r[key] for r in history if r.get(key) is not None]
    return max(values) if values else None


def child_held_fit(spec):
    """A fit to ``spec["tol"]`` with reads held to the disk speed: seconds, reads, the trainer's waits,
    and the row memory it held (``history_``: StreamSVM's cache, SBM's and BM's cache plus block)."""
    from dask_streamsvm import LinearSVC

    _hold_reads(spec)
    X, y = _open(spec)
    clf = LinearSVC(
        C=spec["C"], loss=spec["loss"], fit_intercept=False, tol=spec["tol"], max_iter=spec["max_iter"],
        solver=spec["solver"], prefetch=spec["prefetch"], random_state=0,
        # BM keeps no cache (its FitPlan sets 0), but LinearSVC takes a positive size.
        cache_bytes=max(spec["cache_bytes"], 1), block_bytes=spec["block_bytes"],
    )  # fmt: skip
    t = time.perf_counter()
    clf.fit(X, y)
    wall = time.perf_counter() - t
    last = clf.history_[-1]
    reached = next((r for r in clf.history_ if r["gap"] <= spec["tol"]), None)
    held = {key: _most(clf.history_, key) for key in ("cache_bytes", "memory_bytes", "peak_used_bytes")}
    return {
        "seconds": wall,
        "seconds_to_tol": None if reached is None else reached["seconds"],
        "reads": last["pass"] + 1,
        "gap": float(np.max(clf.duality_gap_)),
        **{key: last.get(key) for key in ("row_visits", "sweeps", "sweeps_waiting", "visits_waiting")},
        **{key: last.get(key) for key in ("trainer_wait_s", "reader_wait_s", "reader_busy_s")},
        # The most the rows held took in row memory (the row cache's accounting): SBM's and BM's
        # cache plus block at their fullest (peak_used_bytes); StreamSVM's cache at a pass's end.
        "max_cache_bytes": held["cache_bytes"],
        "max_memory_bytes": held["memory_bytes"],
        "max_peak_used_bytes": held["peak_used_bytes"],
        "held_bytes": held["peak_used_bytes"] if held["peak_used_bytes"] is not None else held["cache_bytes"],
    }


def measure_held(name, spec, args, work):
    """Per ``--cache`` share M, reads held to ``--read-mb-s`` and not: a plain read and each solver's
    fit at equal memory (:func:`memory_split`), on the set cut into partitions of at most M/2
    (:func:`child_layout`, in the folder ``work``)."""
    slug = "".join(c if c.isalnum() else "-" for c in name)
    layouts = [
        {"cache": cache, "path": str(Path(work) / f"{slug}-cut{k}")} for k, cache in enumerate(args.cache)
    ]
    cuts = run_child("layout", dict(spec, layouts=layouts))["layouts"]
    rows = []
    for cut in cuts:
        cache, memory = cut["cache"], cut["memory_bytes"]
        layout = {key: cut[key] for key in ("memory_bytes", "partitions", "max_partition_bytes")}
        print(
            f"{name:10s} cache {cache}: M = {_mb(memory)} MB of {_mb(cut['row_memory_bytes'])} MB of rows "
            f"in row memory; {cut['partitions']} partitions, the largest "
            f"{_mb(cut['max_partition_bytes'])} MB (a block: {_mb(cut['block_limit_bytes'])} MB)",
            flush=True,
        )
        if cut["max_partition_bytes"] > cut["block_limit_bytes"]:
            print(f"{'':10s} warning: a partition is larger than a block of M/2", flush=True)
        for rate in (args.read_mb_s, None):
            run = dict(spec, **cut["spec"], read_mb_s=rate, cache=cache, tol=args.tol, max_iter=args.max_iter)
            run["prefetch"] = args.prefetch
            read = run_child("held_read", run)
            for solver in args.solvers:
                cache_bytes, block_bytes = memory_split(solver, memory)
                fit = run_child(
                    "held_fit", dict(run, solver=solver, cache_bytes=cache_bytes, block_bytes=block_bytes)
                )
                rows.append({"data": name, "cache": cache, "read_mb_s": rate, "solver": solver} | layout | {
                    "cache_bytes": cache_bytes, "block_bytes": block_bytes,
                    "row_memory_bytes": cut["row_memory_bytes"], "read": read, "fit": fit})  # fmt: skip
                waiting = (
                    f"; sweeps waiting {fit['sweeps_waiting']} of {fit['sweeps']}" if fit["sweeps"] else ""
                )
                print(
                    f"{name:10s} cache {cache} reads {rate or 'free'} MB/s {solver:9s} plain read "
                    f"{read['seconds']:.2f}s, fit {fit['seconds']:.2f}s ({fit['reads']} reads, gap "
                    f"{fit['gap']:.1e}), trainer waited {fit['trainer_wait_s']:.2f}s{waiting}; rows held "
                    f"{fit['held_bytes'] / 1e6:.2f} MB of M = {memory / 1e6:.2f} MB",
                    flush=True,
                )
    return rows


def _mb(value):
    return "-" if value is None else f"{value / 1e6:.2f}"


def write_held_report(payload, out=None, report=None):
    old = any("memory_bytes" not in r for r in payload["results"])
    lines = [
        "",
        f"Commands: {', '.join(f'`{c}`' for c in payload['commands'])}  ",
        f"Date: {payload['date']}; {payload['cores']} cores. Every read of a fit's reader (source or "
        f"spill) took at least its bytes / {payload['read_mb_s']:g} MB/s, the reader thread sleeping the "
        "rest while the trainer worked, or came as fast as it could (*free*); the class count before the "
        "first read (text: parsed and spilled) is not held. Equal memory: M = the `--cache` share of the "
        "rows' bytes in the library's row memory (values, column indices and per-row solver state, as "
        "the row cache counts them); StreamSVM a cache of M, SBM a cache of M/2 and blocks of M/2, BM "
        "blocks of M, partitions no larger than M/2 (each set is cut anew, in row order, into files of "
        "at most M/2 for each share). Plain read: every partition once through the reader. Fit: "
        "`LinearSVC(solver=..., cache_bytes=..., block_bytes=..., "
        f"tol={payload['tol']:g}, loss={payload['loss']!r}, fit_intercept=False)` to a certified gap "
        "(*gap*: the last read's, above tol where the fit ran out of reads). "
        "*Rows held*: the most row memory the fit's rows took (SBM, BM: cache plus block at their "
        "fullest, `peak_used_bytes` of `history_`; StreamSVM: its cache at the end of a pass). "
        "*Waiting*: StreamSVM's sweeps and row visits while its reader had no block ready; *trainer "
        "idle*: seconds it waited for a block."
        + (
            " Rows without M were measured before the equal-memory split (every solver given "
            "`cache_bytes=<share>`, the sets as their files come)."
            if old
            else ""
        ),
        "",
        "| data | cache | M MB | partitions | largest partition MB | MB/s | plain read s | solver "
        "| rows held MB | fit s | reads | gap | fit / read | trainer idle s | sweeps waiting "
        "| visits waiting |",
        "|---" * 16 + "|",
    ]
    for r in payload["results"]:
        f, read = r["fit"], r["read"]
        sweeps = f"{f['sweeps_waiting']} / {f['sweeps']}" if f["sweeps"] else "-"
        visits = f"{f['visits_waiting'] / max(f['row_visits'], 1):.0%}" if f["sweeps"] else "-"
        lines.append(
            f"| {r['data']} | {r['cache']} | {_mb(r.get('memory_bytes'))} | "
            f"{r.get('partitions', read['partitions'])} | {_mb(r.get('max_partition_bytes'))} | "
            f"{r['read_mb_s'] or 'free'} | {read['seconds']:.2f} | {r['solver']} | "
            f"{_mb(f.get('held_bytes'))} | {f['seconds']:.2f} | {f['reads']} | {f['gap']:.1e} | "
            f"{f['seconds'] / read['seconds']:.1f} | {f['trainer_wait_s']:.2f} | {sweeps} | {visits} |"
        )
    lines += ["", f"Raw results: `{_shown(out or THROTTLED)}`.", ""]
    write_section(THROTTLED_MARKER, lines, report or REPORT)


def _shown(path):
    """``path`` relative to the checkout when inside it."""
    path = Path(path).resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def run_child(task, spec):
    """``child_<task>(spec)`` in a fresh interpreter, with its peak RSS (``_common.run_child``)."""
    return _common.run_child("bench_out_of_core", task, spec)


def baseline_rss():
    code = (  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent that holds the data
        "import dask_streamsvm, dask.dataframe, dask.array, sklearn.svm\n"
        "from benchmarks._common import peak_rss\n"
        "print(peak_rss())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def measure(name, spec, data_bytes, partition_bytes, args):
    """The floor, the in-memory fit and one out-of-core fit per solver of ``args.solvers``: their rows."""
    spec = dict(spec, tol=args.tol, max_iter=args.max_iter, prefetch=args.prefetch)
    spec["cache_bytes"] = int(0.1 * data_bytes)
    floor = run_child("floor", spec)
    reads = run_child("reads", spec)
    memory = run_child("memory", spec)
    budget = spec["cache_bytes"] + args.prefetch * partition_bytes + 300e6
    rows = []
    for solver in args.solvers:
        fit = run_child("fit", dict(spec, solver=solver))
        formula = (
            fit["start_rss_bytes"] + spec["cache_bytes"] + (args.prefetch + 1) * reads["max_partition_bytes"]
            + 12 * reads["rows"] + 50e6
        )  # fmt: skip
        busy_trainer = fit["seconds"] - fit["trainer_wait_s"]
        busy_reader = fit["reader_busy_s"]
        if busy_reader is None:
            busy_reader = fit["seconds"] - fit["reader_wait_s"]
        overlap = max(0.0, busy_reader + busy_trainer - fit["seconds"]) / fit["seconds"]
        row = {
            "data": name,
            "solver": solver,
            "C": spec["C"],
            "data_bytes": data_bytes,
            "partition_bytes": partition_bytes,
            "cache_bytes": spec["cache_bytes"],
            "floor": floor,
            "fit": fit,
            "ratio": fit["seconds"] / floor["seconds"],
            "memory": memory,
            "ratio_memory": fit["seconds"] / memory["seconds"],
            "visits_memory": fit["row_visits"] / max(memory["row_visits"], 1),
            "rss_budget_bytes": budget,
            "rss_formula_bytes": formula,
            "reads_alone": reads,
            "overlap_fraction": overlap,
        }
        print(
            f"{name:10s} {solver:9s} read {floor['seconds']:.2f}s, fit {fit['seconds']:.2f}s "
            f"({fit['reads']} reads, gap {fit['gap']:.1e}), ratio {row['ratio']:.1f}; in memory "
            f"{memory['seconds']:.2f}s (fit / in-memory {row['ratio_memory']:.1f}, visits "
            f"{row['visits_memory']:.1f}x); peak RSS {fit['peak_rss_bytes'] / 1e6:.0f} MB "
            f"vs formula {formula / 1e6:.0f} MB; overlap {overlap:.0%}",
            flush=True,
        )
        print(
            f"{'':10s} reads alone: plain Dask {reads['plain_s']:.2f}s, raw {reads['raw_s']:.2f}s, "
            f"class count {reads['count_s']:.2f}s, read 1 {reads['read1_s']:.2f}s, read 2 "
            f"{reads['read2_s']:.2f}s (fast path {reads['fast_path']}, spilled "
            f"{reads['spill_bytes'] / 1e6:.0f} MB)",
            flush=True,
        )
        rows.append(row)
    return rows


def write_report(payload, out=None, report=None):
    lines = [
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}; {payload['cores']} cores; an interpreter with the imports alone peaks at "
        f"{payload['baseline_rss_bytes'] / 1e6:.0f} MB RSS.",
        "",
        "Floor = one pass of the fit's own read path over every partition, checks included (Parquet: "
        "the fast path, pyarrow into arrays; text: parsed, no spill); the plain Dask read is in the "
        "second table. Fit = "
        f"`LinearSVC(solver=..., tol={payload['tol']:g}, cache_bytes=10% of the data)` until the certified "
        "relative duality gap is below tol (one read certifies the state the previous read left, so two "
        "reads is the least a certified fit can take). C is the one `python -m benchmarks` uses for such "
        "data (0.01 for the dense synthetic set, where LIBLINEAR's test accuracy is best; 1 for the real "
        "sets). RSS budget = cache_bytes + prefetch partitions + 300 MB; the dual state (12 bytes per "
        "row) and the model come on top. Overlap = the share of the fit during which reader and trainer "
        "both worked (a lower bound). In memory = `solver='memory'` on the same rows already in RAM, to "
        "the same tol (its fit alone); visits / in memory = the fit's row visits over the in-memory "
        "solver's (its active rows, summed over passes).",
        "",
        "| data | C | solver | data in memory | partitions | floor s | fit s | reads | gap | fit / floor | "
        "in memory s | fit / in memory | visits / in memory | peak RSS MB | RSS budget MB | overlap |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in payload["results"]:
        f = r["fit"]
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['solver']} | {r['data_bytes'] / 1e6:.0f} MB | "
            f"{r['floor']['partitions']} | {r['floor']['seconds']:.2f} | {f['seconds']:.2f} | {f['reads']} | "
            f"{f['gap']:.1e} | {r['ratio']:.1f} | {r['memory']['seconds']:.2f} | {r['ratio_memory']:.1f} | "
            f"{r['visits_memory']:.1f} | {f['peak_rss_bytes'] / 1e6:.0f} | "
            f"{r['rss_budget_bytes'] / 1e6:.0f} | {r['overlap_fraction']:.0%} |"
        )
    lines += [
        "",
        "The read path alone (no trainer), in the same run: plain = every partition computed through "
        "Dask and converted to NumPy/SciPy, no checks; raw = pyarrow decoding the Parquet files, or the "
        "LIBSVM text (already in memory) parsed in one thread; then the fit's own reads as its reader "
        "makes them: the class count before training (Parquet: the label column alone; text: every "
        "partition parsed, checked and spilled), read 1 and read 2 of the rows (Parquet: pyarrow "
        "straight into arrays; text: from the spill). *first read / plain*: the first read of the rows "
        "(text: the class count, which parses) over the plain read; *later / raw*: read 2 over the raw "
        "read. The fit's seconds per read: from `history_` (wall time between certified passes, "
        "training included; the first includes the class count). Peak RSS of the fit against the "
        "formula of the memory guide: RSS as `fit` starts + cache_bytes + (prefetch + 1) x the largest "
        "partition + 12 bytes a row + 50 MB.",
        "",
        "| data | partitions | plain s | raw s | count s | read 1 s | read 2 s | first read / plain | "
        "later / raw | spilled MB | fit s per read: first, later | peak RSS MB | formula MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in payload["results"]:
        a, f = r["reads_alone"], r["fit"]
        per_read = f["seconds_per_read"]
        later = per_read[1:] or per_read
        first = a["count_s"] if a["spill_bytes"] else a["read1_s"]
        lines.append(
            f"| {r['data']} ({r['solver']}) | {a['partitions']} | {a['plain_s']:.2f} | {a['raw_s']:.2f} | "
            f"{a['count_s']:.2f} | {a['read1_s']:.2f} | {a['read2_s']:.2f} | "
            f"{first / a['plain_s']:.2f} | {a['read2_s'] / a['raw_s']:.2f} | "
            f"{a['spill_bytes'] / 1e6:.0f} | {per_read[0]:.2f}, {np.mean(later):.2f} | "
            f"{f['peak_rss_bytes'] / 1e6:.0f} | {r['rss_formula_bytes'] / 1e6:.0f} |"
        )
    lines += ["", f"Raw results: `{_shown(out or RESULTS)}`.", ""]
    write_section(MARKER, lines, report or REPORT)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-gb", type=float, default=2.0, help="synthetic features in memory, GB")
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--real", nargs="*", default=["a9a", "w8a", "ijcnn1"])
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-iter", type=int, default=50)
    parser.add_argument("--prefetch", type=int, default=2)
    parser.add_argument("--workdir", default=None, help="where to write the synthetic Parquet files")
    parser.add_argument(
        "--solvers", nargs="+", default=["streamsvm", "sbm"], choices=["streamsvm", "sbm", "bm"]
    )
    parser.add_argument("--C", type=float, default=0.01, help="C of the synthetic set (the real sets: 1)")
    parser.add_argument("--sparse-rows", type=int, default=1_000_000, help="rows of the sparse text set")
    parser.add_argument(
        "--read-mb-s", type=float, default=None, help="reads held to a disk's speed (docstring)"
    )
    parser.add_argument("--cache", nargs="+", default=["10%"], help="--read-mb-s: cache_bytes of each fit")
    parser.add_argument("--data", help="a LIBSVM glob to measure too (--data-features)")
    parser.add_argument("--data-features", type=int)
    parser.add_argument("--loss", default="squared_hinge", help="--read-mb-s: the fits' loss")
    parser.add_argument(
        "--out", type=Path, default=None,
        help=f"results JSON (default {_shown(RESULTS)}; with --read-mb-s {_shown(THROTTLED)})",
    )  # fmt: skip
    parser.add_argument(
        "--docs", type=Path, default=REPORT, help=f"the report page (default {_shown(REPORT)})"
    )
    args = parser.parse_args(argv)
    if args.read_mb_s is not None:
        return main_held(args, argv)

    results = []
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="streamsvm-bench-") as work:
        if args.size_gb > 0:
            path = Path(work) / "synthetic.parquet"
            t = time.perf_counter()
            data_bytes, n_rows = write_synthetic(path, args.size_gb, args.features)
            print(
                f"wrote {n_rows:,} rows ({data_bytes / 1e9:.1f} GB of features) "
                f"in {time.perf_counter() - t:.0f}s"
            )
            spec = {"kind": "parquet", "path": str(path), "C": args.C}
            results.extend(
                measure(f"synthetic {args.size_gb:g} GB", spec, data_bytes, 250_000 * args.features * 4, args)
            )
        if args.sparse_rows > 0:
            path = Path(work) / "synthetic-sparse"
            t = time.perf_counter()
            data_bytes, n_rows = write_sparse(path, args.sparse_rows)
            print(f"wrote {n_rows:,} sparse rows as LIBSVM text in {time.perf_counter() - t:.0f}s")
            spec = {"kind": "libsvm", "path": str(path / "*.svm"), "n_features": 100_000, "C": 1.0}
            results.extend(measure(f"sparse {n_rows:,} rows", spec, data_bytes, data_bytes // 10, args))
        for name in args.real:
            from sklearn.datasets import load_svmlight_file

            X, _ = load_svmlight_file(str(data_dir() / f"{name}.bz2"), n_features=N_FEATURES[name])
            data_bytes = X.data.nbytes + X.nnz * 4 + (X.shape[0] + 1) * 8
            path = str(data_dir() / f"{name}.bz2")
            spec = {"kind": "libsvm", "path": path, "n_features": N_FEATURES[name], "C": 1.0}
            results.extend(measure(name, spec, data_bytes, data_bytes, args))
    payload = {
        **payload_header("bench_out_of_core", argv),
        "cores": os.cpu_count(),
        "tol": args.tol,
        "baseline_rss_bytes": baseline_rss(),
        "results": results,
    }
    out = args.out or RESULTS
    save_json(out, payload)
    write_report(payload, out, args.docs)


def main_held(args, argv):
    """``--read-mb-s``: the sets of the module docstring, reads held and not (:func:`measure_held`)."""
    sets = []
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="streamsvm-bench-") as work:
        if args.size_gb > 0:
            path = Path(work) / "synthetic.parquet"
            write_synthetic(path, args.size_gb, args.features)
            sets.append(
                (f"synthetic {args.size_gb:g} GB", {"kind": "parquet", "path": str(path), "C": args.C})
            )
        if args.sparse_rows > 0:
            path = Path(work) / "synthetic-sparse"
            write_sparse(path, args.sparse_rows)
            spec = {"kind": "libsvm", "path": str(path / "*.svm"), "n_features": 100_000, "C": 1.0}
            sets.append((f"sparse {args.sparse_rows:,} rows", spec))
        if args.data is not None:
            spec = {"kind": "libsvm", "path": args.data, "n_features": args.data_features, "C": 1.0}
            sets.append((Path(args.data).parent.name or args.data, spec))
        for name in args.real:
            path = str(data_dir() / f"{name}.bz2")
            sets.append((name, {"kind": "libsvm", "path": path, "n_features": N_FEATURES[name], "C": 1.0}))
        results = []
        for name, spec in sets:
            results.extend(measure_held(name, dict(spec, loss=args.loss), args, work))
    # The rows of sets measured before (by an earlier run, with its own command) are kept.
    out = args.out or THROTTLED
    before = json.loads(out.read_text()) if out.exists() else {"results": [], "commands": []}
    measured = {r["data"] for r in results}
    payload = {
        **payload_header("bench_out_of_core", argv),
        "cores": os.cpu_count(),
        "tol": args.tol,
        "read_mb_s": args.read_mb_s,
        "loss": args.loss,
        "results": [r for r in before["results"] if r["data"] not in measured] + results,
    }
    commands = [c for c in before.get("commands", []) if c != payload["command"]]
    payload["commands"] = [*commands, payload["command"]]
    save_json(out, payload)
    write_held_report(payload, out, args.docs)


if __name__ == "__main__":
    main()

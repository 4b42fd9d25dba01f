"""Text read once, at the disk's speed: the first read and the whole fit on LIBSVM files.

For each LIBSVM set (two wide synthetic ones and a9a, w8a, ijcnn1), each
measure in a fresh process, the files hot in the page cache:

- ``vw``: one Vowpal Wabbit pass over the same rows in its own text format
  (hinge, ``-b 24``), without and with its cache file (``-c``, what VW
  writes to make later passes cheap, as our spill does);
- ``sklearn``: ``sklearn.datasets.load_svmlight_file`` of every file, then
  our in-memory dual fit of the rows it loaded (hinge, the same ``C``, to
  a 1e-3 relative gap): "load, then train";
- ``read``: our parser alone on one partition, on one thread (MB/s of text
  per core), and one plain Dask read of every partition
  (:func:`dask_streamsvm.read_libsvm` computed, the threads scheduler);
- ``stream``: our streamed fit of the files (``dual=True``, SBM and
  StreamSVM, ``cache_bytes="10%"``, hinge, ``tol=1e-3``), after a small
  fit of the same files' first lines that loads the compiled kernels: its
  first history record (the first read: parse, spill, train, class count),
  its time to the 1e-3 gap, reads, test accuracy, and the blocks parsed.

The ratios the issue asks for: the first read against one VW pass and
against ``load_svmlight_file``; the fit to 1e-3 against (load + in-memory
fit) on the wide sets and against (in-memory fit + one plain read) on the
real ones.  Writes ``benchmarks/results/bench_text.json`` and the section
"Text: one parse" of docs/benchmarks.md.

Run: ``python -m benchmarks.bench_text [--rows 400000 1000000] [--skip-real]``
"""

import argparse
import glob
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, machine, payload_header, run_child, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_text.json"
SECTION = "## Text: one parse, against Vowpal Wabbit and scikit-learn's reader"
WIDE_FEATURES, WIDE_NNZ = 100_000, 50
SOLVERS = ("sbm", "streamsvm")


# -- data -----------------------------------------------------------------------------------


def write_wide(work, n_rows, n_features=WIDE_FEATURES, nnz=WIDE_NNZ, rows_per_file=50_000):
    """``n_rows`` binary rows of ``nnz`` features in ``n_features``, unit norm, labels from a noisy
    linear rule (bench_peers' sparse rows), as LIBSVM files, one VW file and a test set."""
    from benchmarks.bench_peers import _save_test, _synthetic_rows, _write_text

    name = f"wide-{n_rows // 1000}k"
    folder = work / name
    folder.mkdir()
    vw = work / f"{name}.vw"
    rng = np.random.default_rng(0)
    w_true = rng.standard_normal(n_features)
    for k, start in enumerate(range(0, n_rows, rows_per_file)):
        X, y = _synthetic_rows("sparse", rng, w_true, min(rows_per_file, n_rows - start), n_features, nnz)
        _write_text(folder / f"part-{k:05d}.svm", X, y, "libsvm")
        _write_text(vw, X, y, "vw", mode="ab")
    Xt, yt = _synthetic_rows("sparse", rng, w_true, 50_000, n_features, nnz)
    _save_test(work / f"{name}.test.npz", Xt, yt)
    return {
        "name": name, "train": str(folder / "*.svm"), "vw": str(vw), "test": str(work / f"{name}.test.npz"),
        "n_features": n_features, "n_rows": n_rows, "C": 1.0, "blocksize": "64MB", "wide": True,
    }  # fmt: skip


def real_set(name, work):
    from benchmarks.bench_peers import prepare_real

    spec = prepare_real(name, work, partitions=8)
    keep = ("name", "train", "vw", "test", "n_features", "n_rows", "C", "blocksize")
    return {**{k: spec[k] for k in keep}, "wide": False}


def _text_bytes(spec):
    return sum(os.path.getsize(f) for f in sorted(glob.glob(spec["train"])))


# -- the child processes --------------------------------------------------------------------


def child_vw(spec):
    from vowpalwabbit import Workspace

    out = {}
    cache = Path(spec["scratch"]) / "vw.cache"
    for key, extra in (("vw_pass_s", ""), ("vw_pass_cache_s", f" -c -k --cache_file {cache}")):
        best = np.inf
        for _ in range(2):
            t = time.perf_counter()
            ws = Workspace(
                f"-d {spec['vw']} --loss_function hinge --noconstant -b 24 --quiet --holdout_off "
                f"--passes 1{extra}"
            )
            ws.finish()
            best = min(best, time.perf_counter() - t)
            cache.unlink(missing_ok=True)
        out[key] = best
    return out


def child_sklearn(spec):
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm import LinearSVC

    files = sorted(glob.glob(spec["train"]))
    t = time.perf_counter()
    parts = [load_svmlight_file(f, n_features=spec["n_features"]) for f in files]
    load = time.perf_counter() - t
    X = sp.vstack([p[0] for p in parts]).tocsr()
    y = np.concatenate([p[1] for p in parts])
    del parts
    _model(spec, None).fit(X[:2000], y[:2000])  # loads the compiled kernels
    t = time.perf_counter()
    clf = LinearSVC(C=spec["C"], loss="hinge", dual=True, fit_intercept=False, tol=1e-3, max_iter=1000)
    clf.fit(X, y)
    fit = time.perf_counter() - t
    return {"sklearn_load_s": load, "memory_fit_s": fit, "memory_gap": float(clf.duality_gap_),
            "memory_accuracy": _accuracy(spec, clf)}  # fmt: skip


def child_read(spec):
    import dask

    from dask_streamsvm import io, read_libsvm

    first = sorted(glob.glob(spec["train"]))[0]
    with open(first, "rb") as f:
        data = f.read(64 * 10**6)
    data = data[: data.rfind(b"\n") + 1]
    io._parse_block(data[:4096][: data[:4096].rfind(b"\n") + 1], spec["n_features"], np.float64, False, "x")
    best = np.inf
    for _ in range(3):
        t = time.perf_counter()
        io._parse_block(data, spec["n_features"], np.float64, False, "x")
        best = min(best, time.perf_counter() - t)
    X, y = read_libsvm(spec["train"], n_features=spec["n_features"], blocksize=spec["blocksize"])
    t = time.perf_counter()
    dask.compute(X.map_blocks(lambda b: np.zeros(1), dtype=float, chunks=(1,), drop_axis=1), y)
    plain = time.perf_counter() - t
    return {"parse_mb_s_per_core": len(data) / 1e6 / best, "plain_read_s": plain,
            "partitions": int(X.numblocks[0])}  # fmt: skip


def child_csv(spec):
    """MB/s of CSV text per core through the path a fit of a CSV file takes (``dd.read_csv``, each
    partition parsed by pandas' C reader), on one thread: 300,000 rows of 20 float columns and a
    label."""
    import dask.dataframe as dd
    import pandas as pd

    path = Path(spec["scratch"]) / "rows.csv"
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((300_000, 20)), columns=[f"f{j}" for j in range(20)])
    frame["label"] = rng.integers(0, 2, 300_000)
    frame.to_csv(path, index=False, float_format="%.7g")
    best = np.inf
    for _ in range(3):
        t = time.perf_counter()
        dd.read_csv(str(path), blocksize="16MB").compute(scheduler="sync")
        best = min(best, time.perf_counter() - t)
    return {"csv_mb": path.stat().st_size / 1e6, "csv_mb_s_per_core": path.stat().st_size / 1e6 / best}


def _model(spec, solver):
    from dask_streamsvm import LinearSVC

    kw = {} if solver is None else {"solver": solver, "cache_bytes": "10%"}
    return LinearSVC(C=spec["C"], loss="hinge", dual=True, fit_intercept=False, tol=1e-3, max_iter=50,
                     random_state=0, **kw)  # fmt: skip


def _accuracy(spec, clf):
    from benchmarks.bench_peers import load_test

    Xt, yt = load_test(spec["test"])
    return float(np.mean(clf.predict(Xt) == yt))


def fit_first_lines(spec, model):
    """``model`` fitted on the first 2 MB of lines of the set's first file: the compiled kernels
    loaded before the fit that is timed."""
    from dask_streamsvm import read_libsvm

    files = sorted(glob.glob(spec["train"]))
    small = Path(spec["scratch"]) / "first-lines.svm"
    with open(files[0], "rb") as f:
        head = f.read(2_000_000)
    small.write_bytes(head[: head.rfind(b"\n") + 1])
    model.fit(*read_libsvm(str(small), n_features=spec["n_features"]))


def child_stream(spec):
    import warnings

    from dask_streamsvm import io, read_libsvm

    fit_first_lines(spec, _model(spec, spec["solver"]))
    parsed = []
    parse = io._parse_block

    def counted(*args):
        parsed.append(1)
        return parse(*args)

    io._parse_block = counted
    X, y = read_libsvm(spec["train"], n_features=spec["n_features"], blocksize=spec["blocksize"])
    clf = _model(spec, spec["solver"])
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    total = time.perf_counter() - t
    first = clf.history_[0]
    return {
        "fit_s": total, "first_read_s": first["seconds"], "passes": len(clf.history_),
        "gap": float(clf.duality_gap_), "accuracy": _accuracy(spec, clf), "blocks_parsed": len(parsed),
        "partitions": int(X.numblocks[0]), "first_reader_busy_s": first.get("reader_busy_s"),
        "first_trainer_wait_s": first.get("trainer_wait_s"), "row_visits": clf.history_[-1]["row_visits"],
    }  # fmt: skip


# -- the run --------------------------------------------------------------------------------


def measure(spec, scratch):
    spec = {**spec, "scratch": str(scratch), "text_mb": _text_bytes(spec) / 1e6}
    row = dict(spec)
    for task in ("read", "sklearn", "vw"):
        if task == "vw":
            try:
                import vowpalwabbit  # noqa: F401
            except ImportError:
                row["vw_pass_s"] = row["vw_pass_cache_s"] = None
                continue
        row.update(run_child("bench_text", task, spec))
    for solver in SOLVERS:
        out = run_child("bench_text", "stream", {**spec, "solver": solver})
        row[solver] = out
        print(f"  {spec['name']} {solver}: {out}", flush=True)
    return row


def _f(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(a, b):
    return None if a is None or not b else a / b


def report(rows, csv, command, load):
    lines = [
        "",
        f"`{command}`, {time.strftime('%Y-%m-%d')}, 2 cores, load average {load} at the start; each "
        "measure in a fresh process, the files hot in the page cache. Hinge, C = 1, no intercept, "
        'tol = 1e-3, `dual=True`, `cache_bytes="10%"`. First read: the first history record\'s seconds '
        "(parse, spill, train and count the classes in one read). VW: one pass, without / with its "
        "cache file.",
        "",
        "| set | text MB | parser MB/s/core | VW pass s | VW pass + cache s | sklearn load s "
        "| plain read s | first read s (SBM) | first / VW+cache | first / sklearn | blocks parsed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sbm = r["sbm"]
        cells = [
            r["name"], _f(r["text_mb"], 0), _f(r["parse_mb_s_per_core"], 0), _f(r.get("vw_pass_s")),
            _f(r.get("vw_pass_cache_s")), _f(r["sklearn_load_s"]), _f(r["plain_read_s"]),
            _f(sbm["first_read_s"]), _f(_ratio(sbm["first_read_s"], r.get("vw_pass_cache_s"))),
            _f(_ratio(sbm["first_read_s"], r["sklearn_load_s"])),
            f"{sbm['blocks_parsed']} of {sbm['partitions']} partitions",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "| set | solver | fit to 1e-3 s | reads | accuracy | in-memory fit s "
        "| fit / (sklearn load + in-memory fit) | fit / (in-memory fit + plain read) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for solver in SOLVERS:
            s = r[solver]
            cells = [
                r["name"], solver, _f(s["fit_s"]), str(s["passes"]), _f(s["accuracy"], 4),
                _f(r["memory_fit_s"]), _f(_ratio(s["fit_s"], r["sklearn_load_s"] + r["memory_fit_s"])),
                _f(_ratio(s["fit_s"], r["memory_fit_s"] + r["plain_read_s"])),
            ]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"CSV: {csv['csv_mb']:.0f} MB of 20 float columns and a label through `dd.read_csv` (pandas' C "
        f"reader, the path of a CSV fit), one thread: {csv['csv_mb_s_per_core']:.0f} MB/s.",
    ]
    write_section(SECTION, lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_text", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rows", type=int, nargs="*", default=[400_000, 1_000_000], help="wide sets' rows")
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    load = f"{os.getloadavg()[0]:.2f}"
    rows = []
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="bench-text-") as tmp:
        work = Path(tmp)
        specs = [lambda n=n: write_wide(work, n) for n in args.rows]
        if not args.skip_real:
            specs += [lambda name=name: real_set(name, work) for name in ("a9a", "w8a", "ijcnn1")]
        for make in specs:
            spec = make()
            scratch = work / f"{spec['name']}-scratch"
            scratch.mkdir()
            print(f"{spec['name']}: measuring", flush=True)
            rows.append(measure(spec, scratch))
        scratch = work / "csv-scratch"
        scratch.mkdir()
        csv = run_child("bench_text", "csv", {"scratch": str(scratch)})
    payload = {**payload_header("bench_text", argv), "machine": machine(), "load_at_start": load}
    payload["sets"], payload["csv"] = rows, csv
    save_json(RESULTS, payload)
    report(rows, csv, payload["command"], load)
    print(f"wrote {RESULTS.relative_to(ROOT)} and docs/benchmarks.md")


if __name__ == "__main__":
    main(sys.argv[1:])

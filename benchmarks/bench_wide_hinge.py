"""The hinge on wide text against LIBLINEAR's load and fit (issue 52's wide goal).

One wide LIBLINEAR-format set (bench_text's generator: unit-norm rows of 50 nonzeros, labels from a
noisy linear rule; 200,000 rows x 200,000 columns by default), each measure in a fresh process, the
files hot in the page cache:

- ``liblinear``: ``sklearn.datasets.load_svmlight_file`` of every file, then scikit-learn's
  ``LinearSVC(loss="hinge")`` (LIBLINEAR's dual solver, its default tolerance) on the rows loaded:
  the load, the fit and the test accuracy;
- ``read``: one plain Dask read of every partition (:func:`dask_streamsvm.read_libsvm`, computed);
- ``stream``: our streamed fit of the files per solver (hinge, C = 1, no intercept,
  ``cache_bytes="10%"``, ``tol=1e-3``, ``max_iter`` 50), after a small fit that loads the compiled
  kernels, with the test set as ``validation_data`` so that every read's record has its model's
  test accuracy (its scoring is inside the fit's time).

Reported per solver: the time to the 1e-3 gap, the time of the first read whose model's test
accuracy is at least LIBLINEAR's, and of the first within 0.001 of it (a twentieth of the
accuracy's standard error on 50,000 test rows is about 0.0001: the two differ by the test set's
noise), each over LIBLINEAR's load + fit.  Writes ``benchmarks/results/wide_hinge.json`` and the
section "The hinge on wide text against LIBLINEAR" of docs/benchmarks.md.

``--tol`` sets the streamed fits' tolerance (1e-3 by default, the issue's; scikit-learn's
``LinearSVC`` stops LIBLINEAR at its default of 1e-4) and writes ``wide_hinge_tol<tol>.json`` and a
section of its own; ``--optimum`` adds the rows solved in memory to a certified 1e-9 (dual coordinate
descent): the test accuracy every exact solver tends to.

``--memory`` also fits ours in memory on the rows loaded as LIBLINEAR's (a fresh process, after a
warm-up fit), and says each streamed fit's time over it.

``--before DIR`` also runs each solver's streamed fit on the package in ``DIR`` (a ``git worktree``
of an earlier commit), right after the fit of this one, as ``<solver> (before)``.

``--repeats N`` fits each streamed solver N times (and with ``--before`` its earlier package,
interleaved: now, before, now, ...): the table gives each one's run of median seconds (of an odd N),
and a sentence the seconds of every fit and the medians' ratios.  One fit's seconds vary by 15-30%
on this machine from minute to minute (2026-12-06); medians of interleaved fits compare two packages.

``--beside-busy`` runs every measure beside one busy process (``python -c "while True: pass"``,
started here and stopped at the end) and writes ``wide_hinge_busy.json`` and a section of its own.

Run: ``python -m benchmarks.bench_wide_hinge [--rows 200000] [--features 200000]
[--solvers auto sbm streamsvm band] [--tol 1e-3] [--optimum] [--memory] [--before DIR] [--repeats N]
[--beside-busy]``
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, machine, payload_header, run_child, save_json, write_section
from benchmarks.bench_text import fit_first_lines, write_wide

RESULTS = ROOT / "benchmarks" / "results" / "wide_hinge.json"
SECTION = "## The hinge on wide text against LIBLINEAR's load and fit"
BUSY_RESULTS = ROOT / "benchmarks" / "results" / "wide_hinge_busy.json"
BUSY_SECTION = "## The hinge on wide text against LIBLINEAR's load and fit, beside one busy process"
SOLVERS = ("auto", "sbm", "streamsvm", "band")
NEAR = 0.001  # "within" LIBLINEAR's accuracy


def _test_set(spec):
    from benchmarks.bench_peers import load_test

    return load_test(spec["test"])


def _load_rows(spec):
    """Every training file read by scikit-learn's ``load_svmlight_file``, joined into one CSR matrix."""
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    parts = [load_svmlight_file(f, n_features=spec["n_features"]) for f in sorted(glob.glob(spec["train"]))]
    return sp.vstack([p[0] for p in parts]).tocsr(), np.concatenate([p[1] for p in parts])


def child_liblinear(spec):
    from sklearn.svm import LinearSVC

    t = time.perf_counter()
    X, y = _load_rows(spec)
    load = time.perf_counter() - t
    t = time.perf_counter()
    clf = LinearSVC(loss="hinge", C=spec["C"], fit_intercept=False, random_state=0).fit(X, y)
    fit = time.perf_counter() - t
    Xt, yt = _test_set(spec)
    return {"load_s": load, "fit_s": fit, "accuracy": float(np.mean(clf.predict(Xt) == yt)),
            "iterations": int(clf.n_iter_)}  # fmt: skip


def child_memory(spec):
    """Ours in memory on the rows loaded as LIBLINEAR's (after a warm-up fit on 2,000 of them, which
    loads the compiled kernels): the fit's seconds, passes, gap and test accuracy."""
    import warnings

    from dask_streamsvm import LinearSVC

    X, y = _load_rows(spec)

    def model():
        return LinearSVC(loss="hinge", C=spec["C"], fit_intercept=False, tol=spec.get("tol", 1e-3),
                         random_state=0)  # fmt: skip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warm-up's few rows may stop short of tol
        model().fit(X[:2000], y[:2000])
    clf = model()
    t = time.perf_counter()
    clf.fit(X, y)
    fit = time.perf_counter() - t
    Xt, yt = _test_set(spec)
    return {"fit_s": fit, "passes": int(clf.n_iter_), "gap": float(clf.duality_gap_),
            "accuracy": float(np.mean(clf.predict(Xt) == yt))}  # fmt: skip


def child_optimum(spec):
    """The rows loaded and solved in memory to a certified 1e-9: the objective and test accuracy."""
    from benchmarks.bench_wide_hinge_cluster import child_optimum as optimum

    return optimum(spec)


def child_read(spec):
    import dask

    from dask_streamsvm import read_libsvm

    X, y = read_libsvm(spec["train"], n_features=spec["n_features"], blocksize=spec["blocksize"])
    t = time.perf_counter()
    dask.compute(X.map_blocks(lambda b: np.zeros(1), dtype=float, chunks=(1,), drop_axis=1), y)
    return {"plain_read_s": time.perf_counter() - t, "partitions": int(X.numblocks[0])}


def _model(spec, validation=None):
    from dask_streamsvm import LinearSVC

    return LinearSVC(C=spec["C"], loss="hinge", fit_intercept=False, tol=spec.get("tol", 1e-3), max_iter=50,
                     random_state=0, solver=spec["solver"], cache_bytes="10%",
                     validation_data=validation)  # fmt: skip


def child_stream(spec):
    import warnings

    if spec.get("package"):  # an earlier checkout's package, imported in its place
        sys.path.insert(0, spec["package"])
    from dask_streamsvm import read_libsvm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_first_lines(spec, _model(spec))
    Xt, yt = _test_set(spec)
    X, y = read_libsvm(spec["train"], n_features=spec["n_features"], blocksize=spec["blocksize"])
    clf = _model(spec, (Xt, yt))
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    total = time.perf_counter() - t
    reads = [
        {"pass": r["pass"], "seconds": r["seconds"], "gap": r.get("gap"), "score": r.get("validation_score"),
         "solver": r.get("solver")}
        for r in clf.history_
    ]  # fmt: skip
    held = [r.get("peak_used_bytes", r.get("cache_bytes")) for r in clf.history_]  # None: the band's
    held = max((h for h in held if h is not None), default=None)
    schedules = sorted({r["solver"] for r in clf.history_ if "solver" in r})
    return {"fit_s": total, "reads": reads, "passes": int(clf.n_iter_), "gap": float(clf.duality_gap_),
            "accuracy": float(np.mean(clf.predict(Xt) == yt)), "held_bytes": held,
            "schedules": schedules}  # fmt: skip


def _first(reads, accuracy):
    """The seconds of the first read whose model's test accuracy is at least ``accuracy``, or None."""
    return next((r["seconds"] for r in reads if r["score"] is not None and r["score"] >= accuracy), None)


def _f(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def report(spec, row, command, load, section=SECTION):
    base = row["liblinear"]["load_s"] + row["liblinear"]["fit_s"]
    tol = spec.get("tol", 1e-3)
    best = row.get("optimum")
    optimum = (
        ""
        if best is None
        else f" The optimum (the rows solved in memory to a certified gap of {best['gap']:.1e}, objective "
        f"{best['objective']:.6f}) has test accuracy {best['accuracy']:.5f}; LIBLINEAR's is "
        f"{row['liblinear']['accuracy']:.5f}."
    )
    lines = [
        "",
        f"`{command}`, {time.strftime('%Y-%m-%d')}, 2 cores, load average {load} at the start; each measure "
        f"in a fresh process, the files hot in the page cache. {spec['n_rows']:,} rows x "
        f"{spec['n_features']:,} columns, 50 nonzeros a row ({row['text_mb']:.0f} MB of text, "
        f"{row['partitions']} partitions); hinge, C = 1, no intercept. LIBLINEAR: scikit-learn's "
        f'`load_svmlight_file` {row["liblinear"]["load_s"]:.2f} s, then its `LinearSVC(loss="hinge")` '
        f"{row['liblinear']['fit_s']:.2f} s ({row['liblinear']['iterations']} iterations), test accuracy "
        f"{row['liblinear']['accuracy']:.4f}. One plain read of our partitions: {row['plain_read_s']:.2f} s. "
        f'Ours: `cache_bytes="10%"`, `tol={tol:g}`, the test set as `validation_data` (scored after every '
        "read, inside the times). To LIBLINEAR's accuracy: the first read whose model scores at least "
        f"LIBLINEAR's test accuracy (within {NEAR}: at least it less {NEAR}).{optimum} *ran*: the schedules "
        "`history_` names; `auto` streams SBM with its cache and blocks sharing `cache_bytes` half and half, "
        "`sbm` named has a cache of `cache_bytes` and blocks as large. *rows held*: the most row memory the "
        "fit's rows took (SBM: cache plus block at their fullest, a partition larger than a block trained "
        "a block-sized piece at a time, since 2026-12-03; held whole before; StreamSVM: its cache)."
        + (
            f" *(before)*: the package in `{row['before']}` (commit {row.get('before_commit')}), each fit "
            "right after this one's."
            if row.get("before")
            else ""
        ),
        "",
        f"| solver | ran | rows held MB | fit to {tol:g} s | reads | gap | accuracy "
        "| to LIBLINEAR's accuracy s | within 0.001 s | fit / LIBLINEAR load + fit "
        "| to accuracy / LIBLINEAR load + fit | within 0.001 / LIBLINEAR load + fit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    accuracy = row["liblinear"]["accuracy"]
    for solver in row["solvers"]:
        s = row[solver]
        reached, near = _first(s["reads"], accuracy), _first(s["reads"], accuracy - NEAR)
        ran = ", ".join(s.get("schedules") or ["-"])
        held = _f(None if s.get("held_bytes") is None else s["held_bytes"] / 1e6, 1)
        cells = [
            solver, ran, held, _f(s["fit_s"]), str(s["passes"]), f"{s['gap']:.1e}", _f(s["accuracy"], 4),
            _f(reached), _f(near), _f(s["fit_s"] / base), _f(None if reached is None else reached / base),
            _f(None if near is None else near / base),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    if len(row[row["solvers"][0]].get("fits_s", [])) > 1:
        lines += ["", _repeats(row)]
    if row.get("memory") is not None:
        lines += ["", _in_memory(row)]
    if best is not None:
        lines += ["", _near_optimum(row, best, spec)]
    write_section(section, [*lines, ""])


def _repeats(row):
    """A sentence: every fit's seconds (``--repeats``, in the order they ran) and, with ``--before``,
    each solver's median over its earlier package's."""
    each = "; ".join(
        f"{solver} {', '.join(f'{t:.2f}' for t in row[solver]['fits_s'])}" for solver in row["solvers"]
    )
    ratios = [
        f"{solver} {np.median(row[solver]['fits_s']) / np.median(row[f'{solver} (before)']['fits_s']):.2f}"
        for solver in row["solvers"]
        if f"{solver} (before)" in row
    ]
    return (
        f"Each streamed fit ran {len(row[row['solvers'][0]]['fits_s'])} times (`--repeats`), interleaved "
        "with its earlier package's where one is given; the table gives the run of median seconds. "
        f"Seconds of every fit, in the order they ran: {each}."
        + (f" Medians now over before: {', '.join(ratios)}." if ratios else "")
    )


def _in_memory(row):
    """A sentence: ours in memory on the same rows (``--memory``), and each streamed fit over it."""
    mem = row["memory"]
    ratios = ", ".join(f"{solver} {row[solver]['fit_s'] / mem['fit_s']:.2f}" for solver in row["solvers"])
    return (
        f'Ours in memory (`--memory`: the rows loaded as LIBLINEAR\'s, `LinearSVC(loss="hinge")` at the '
        f"same C and tol, in a fresh process after a warm-up fit on 2,000 of them): {mem['fit_s']:.2f} s, "
        f"{mem['passes']} passes, gap {mem['gap']:.1e}, test accuracy {mem['accuracy']:.4f}. Each streamed "
        f"fit over it: {ratios}; one plain read over it: {row['plain_read_s'] / mem['fit_s']:.2f}."
    )


def _near_optimum(row, best, spec):
    """A sentence: how far, in test rows, each solver's reads at a gap of 1e-3 or less scored from the
    optimum's test accuracy (the test set's own noise beside LIBLINEAR's accuracy)."""
    n_test = spec.get("n_test", 50_000)
    spans = []
    for solver in row["solvers"]:
        scores = [r["score"] for r in row[solver]["reads"] if r["gap"] is not None and r["gap"] <= 1e-3]
        if scores:
            low, high = (round((v - best["accuracy"]) * n_test) for v in (min(scores), max(scores)))
            spans.append(f"{solver} {low:+d} to {high:+d}")
    return (
        "Each fit's reads at a gap of 1e-3 or less scored this many of the "
        f"{n_test:,} test rows from the optimum's accuracy: {', '.join(spans)}, up and down from read to "
        "read. Which read first scores LIBLINEAR's accuracy (the optimum's) to the last test row is the "
        "test set's noise at these gaps."
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_wide_hinge", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=200_000)
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--beside-busy", action="store_true", help="beside one busy process")
    parser.add_argument("--tol", type=float, default=1e-3, help="the streamed fits' tolerance")
    parser.add_argument("--optimum", action="store_true", help="the rows solved in memory to 1e-9 too")
    parser.add_argument("--memory", action="store_true", help="ours in memory on the same rows too")
    parser.add_argument("--before", default=None, help="a checkout of an earlier commit, its fits timed too")
    parser.add_argument("--repeats", type=int, default=1, help="each streamed fit N times, interleaved")
    args = parser.parse_args(argv)
    busy = None
    if args.beside_busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(5)  # its share of the load average has begun to show
    try:
        _run(args, argv, busy)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


def _run(args, argv, busy):
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    if busy is not None:
        load += " (beside one busy process)"
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="bench-wide-hinge-") as tmp:
        work = Path(tmp)
        spec = write_wide(work, args.rows, n_features=args.features)
        spec.update(scratch=str(work), tol=args.tol)
        row = {
            "text_mb": sum(os.path.getsize(f) for f in glob.glob(spec["train"])) / 1e6,
            "solvers": args.solvers,
        }
        row["liblinear"] = run_child("bench_wide_hinge", "liblinear", spec)
        print(f"liblinear: {row['liblinear']}", flush=True)
        row.update(run_child("bench_wide_hinge", "read", spec))
        if args.memory:
            row["memory"] = run_child("bench_wide_hinge", "memory", spec)
            print(f"memory: {row['memory']}", flush=True)
        if args.optimum:
            row["optimum"] = run_child("bench_wide_hinge", "optimum", spec)
            print(f"optimum: {row['optimum']}", flush=True)
        for solver in args.solvers:
            runs = [(solver, None)] + ([(f"{solver} (before)", args.before)] if args.before else [])
            fits = {label: [] for label, _ in runs}
            for _ in range(args.repeats):  # interleaved: the machine's drift falls on both alike
                for label, package in runs:
                    done = run_child(
                        "bench_wide_hinge", "stream", {**spec, "solver": solver, "package": package}
                    )
                    fits[label].append(done)
                    print(f"{label}: {done['fit_s']:.2f} s, {done['passes']} reads", flush=True)
            for label, done in fits.items():
                done = sorted(done, key=lambda fit: fit["fit_s"])
                row[label] = {**done[len(done) // 2], "fits_s": [fit["fit_s"] for fit in fits[label]]}
        if args.before:
            git = ["git", "-C", args.before, "rev-parse", "--short", "HEAD"]
            sha = subprocess.run(git, capture_output=True, text=True, check=False).stdout.strip()
            row["before"], row["before_commit"] = args.before, sha or "unknown"
            row["solvers"] = [label for s in args.solvers for label in (s, f"{s} (before)")]
    payload = {**payload_header("bench_wide_hinge", argv), "machine": machine(), "load_at_start": load,
               "spec": spec, **row}  # fmt: skip
    results, section = (RESULTS, SECTION) if busy is None else (BUSY_RESULTS, BUSY_SECTION)
    if args.tol != 1e-3:  # a tolerance other than the issue's: results and a section of their own
        results = results.with_name(f"{results.stem}_tol{args.tol:g}.json")
        section = f"{section}, tol {args.tol:g}"
    save_json(results, payload)
    report(spec, row, payload["command"], load, section)
    print(f"wrote {results.relative_to(ROOT)} and docs/benchmarks.md")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The multinomial (softmax) model out of core: reads and time to a 1e-3 gap against a plain read,
ours in memory and scikit-learn in memory, on tall Parquet sets of three classes.

The data (:func:`multiclass`, ``--write``): 2M x 60 float32 Gaussian rows, labels drawn from the
softmax of a random model of norm 2 per class (Gumbel-max), 20 Parquet files of 100,000 rows; the
raw set is the same rows mapped to integers 0..255 (``bench_primal.synthetic``'s mapping).  Each
measure runs in a fresh interpreter (``_common.run_child``), with the library's own thread settings:

- ours: ``LogisticRegression(C, tol=1e-3)`` (``multi_class="auto"``, the default: the softmax
  model for three classes) on ``dd.read_parquet``, after
  a warm-up fit on the head of the first partition (numba's cache loaded): seconds, reads (the
  first, which counts the classes and keeps the sample, and the Newton reads), the gap;
- a plain read of the files (``bench_process.child_read``: the first read, as a fresh process
  makes it);
- in memory on the same rows loaded (float32, the load not counted): ours at ``tol=1e-3`` and
  scikit-learn's ``LogisticRegression(C)`` with ``solver="newton-cholesky"`` at its default tol
  (1e-4; its ``lbfgs`` default stops at 100 iterations);
- ``--check``: the streamed fit's objective against scikit-learn's optimum of the same rows
  (``newton-cholesky`` at tol 1e-10, float64): the gap must be at least the true suboptimality.

    python -m benchmarks.bench_multinomial --write --data-dir /tmp/tallmc     # the sets, once
    python -m benchmarks.bench_multinomial --data-dir /tmp/tallmc --check
    python -m benchmarks.bench_multinomial --data-dir /tmp/tallmc --busy 1
    python -m benchmarks.bench_multinomial --render

Results: ``benchmarks/results/bench_multinomial.json`` and the section "The multinomial model out
of core" of ``docs/benchmarks.md``.
"""

import argparse
import warnings
from pathlib import Path

import numpy as np

from benchmarks import _common
from benchmarks._common import ROOT, machine, payload_header, save_json, write_section
from benchmarks.bench_l1 import _beside, _load, _parquet_rows
from benchmarks.bench_primal import _timed, count_reads, read_parquet_rows, write_parquet

RESULTS = ROOT / "benchmarks" / "results" / "bench_multinomial.json"
MARKER = "## The multinomial model out of core"
N_ROWS, N_FEATURES, N_CLASSES = 2_000_000, 60, 3


def multiclass(n, d, K, seed=0, raw=False):
    """Float32 Gaussian rows and labels drawn from the softmax of a random model (module docstring)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((K, d)) / np.sqrt(d) * 2.0
    X = rng.standard_normal((n, d), dtype=np.float32)
    Z = X @ W.T.astype(np.float32)
    y = np.argmax(Z + rng.gumbel(size=Z.shape).astype(np.float32), axis=1).astype(np.int8)
    if raw:
        X = np.clip(np.round(X * 40 + 128), 0, 255).astype(np.float32)
    return X, y


def objective(X, y, coef, intercept, C):
    """scikit-learn's multinomial objective (the intercept unpenalised), in float64."""
    from scipy.special import logsumexp

    Z = np.asarray(X, dtype=np.float64) @ coef.T + intercept
    index = np.searchsorted(np.unique(y), y)
    loss = logsumexp(Z, axis=1) - Z[np.arange(len(y)), index]
    return 0.5 * float(np.sum(coef**2)) + C * float(np.sum(loss))


def _ours(C, tol):
    from dask_streamsvm import LogisticRegression

    return LogisticRegression(C=C, tol=tol)  # multi_class="auto": the softmax model of three classes


def child_fit(spec):
    """Ours on the Parquet files, after a warm-up fit on the head of the first partition."""
    import dask.dataframe as dd

    frame = dd.read_parquet(spec["path"])
    features = [c for c in frame.columns if c != "label"]
    head = frame.partitions[0].compute().iloc[:2000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _ours(spec["C"], 1e-2).fit(head[features].to_numpy(), head["label"].to_numpy())
    clf, seconds = _timed(lambda: _ours(spec["C"], spec["tol"]).fit(frame[features], frame["label"]))
    assert clf.multi_class_ == "multinomial", clf.multi_class_
    return {
        "fit_s": seconds, "gap": float(clf.duality_gap_), "objective": float(clf.objective_),
        "reads": count_reads(clf.history_, spec["n_rows"], int(clf.n_iter_)),
        "gaps": [float(r["gap"]) for r in clf.history_],
        "sample_rows": int(clf.history_[0].get("sample_rows", 0)),
        "coef": clf.coef_.tolist(), "intercept": clf.intercept_.tolist(),
    }  # fmt: skip


def child_memory(spec):
    """Ours and scikit-learn's ``newton-cholesky`` on the same rows in memory (float32 as read)."""
    from sklearn.linear_model import LogisticRegression as SkLogistic

    X, y = read_parquet_rows(spec["path"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _ours(spec["C"], 1e-2).fit(X[:20_000], y[:20_000])
        ours, ours_s = _timed(lambda: _ours(spec["C"], spec["tol"]).fit(X, y))
        assert ours.multi_class_ == "multinomial", ours.multi_class_
        theirs, theirs_s = _timed(lambda: SkLogistic(C=spec["C"], solver="newton-cholesky").fit(X, y))
    return {
        "ours_s": ours_s, "ours_gap": float(ours.duality_gap_), "ours_objective": float(ours.objective_),
        "sklearn_s": theirs_s,
        "sklearn_objective": objective(X, y, theirs.coef_, theirs.intercept_, spec["C"]),
    }  # fmt: skip


def child_reference(spec):
    """scikit-learn's optimum of the same rows (``newton-cholesky`` at tol 1e-10, float64) and the
    objective of the streamed fit's model."""
    from sklearn.linear_model import LogisticRegression as SkLogistic

    X, y = read_parquet_rows(spec["path"])
    X = X.astype(np.float64)
    reference = SkLogistic(C=spec["C"], solver="newton-cholesky", tol=1e-10, max_iter=1000).fit(X, y)
    p_star = objective(X, y, reference.coef_, reference.intercept_, spec["C"])
    point = objective(X, y, np.array(spec["coef"]), np.array(spec["intercept"]), spec["C"])
    return {"reference": p_star, "point": point}


def run_rows(args):
    with _common.beside_busy(args.busy):
        return _rows(args)


def _rows(args):
    rows = []
    for kind in ("dense", "raw"):
        path = str(Path(args.data_dir) / kind)
        n_rows = int(sum(_parquet_rows(f) for f in sorted(Path(path).glob("*.parquet"))))
        read = _common.run_child("bench_process", "read", {"path": path})
        print(f"{kind}: a plain read {read['read_s']:.2f} s (best {read['best_read_s']:.2f} s), "
              f"load {_load():.2f}", flush=True)  # fmt: skip
        for C in args.Cs:
            spec = {"path": path, "C": C, "tol": 1e-3, "n_rows": n_rows}
            before = _load()
            fit = _common.run_child("bench_multinomial", "fit", spec)
            memory = _common.run_child("bench_multinomial", "memory", spec)
            row = {
                "data": kind, "C": C, "rows": n_rows, "load_before": before, "read_s": read["read_s"],
                "best_read_s": read["best_read_s"], "fit_over_read": fit["fit_s"] / read["read_s"],
                "fit_over_best_read": fit["fit_s"] / read["best_read_s"], **memory,
                "fit_over_memory": fit["fit_s"] / memory["ours_s"],
                "fit_over_sklearn": fit["fit_s"] / memory["sklearn_s"],
                **{k: v for k, v in fit.items() if k not in ("coef", "intercept")},
            }  # fmt: skip
            words = ""
            if args.check:
                check = _common.run_child(
                    "bench_multinomial", "reference",
                    {"path": path, "C": C, "coef": fit["coef"], "intercept": fit["intercept"]},
                )  # fmt: skip
                row["reference"] = check["reference"]
                row["suboptimality"] = (check["point"] - check["reference"]) / check["point"]
                row["certificate_holds"] = row["suboptimality"] <= fit["gap"] + 1e-12
                words = f", true suboptimality {row['suboptimality']:.1e} (holds: {row['certificate_holds']})"
            rows.append(row)
            print(
                f"  C={C:g}: {fit['fit_s']:.2f} s, {fit['reads']} reads, gap {fit['gap']:.1e}, "
                f"x{row['fit_over_read']:.2f} a plain read (x{row['fit_over_best_read']:.2f} the best), "
                f"x{row['fit_over_memory']:.2f} ours in memory "
                f"({memory['ours_s']:.2f} s), x{row['fit_over_sklearn']:.2f} scikit-learn in memory "
                f"({memory['sklearn_s']:.2f} s){words}",
                flush=True,
            )
    return rows


def _reads(r):
    """A row's plain reads, first and best (``-`` for results from before the best was kept)."""
    best = r.get("best_read_s")
    return f"{r['read_s']:.2f} s, " + ("-" if best is None else f"{best:.2f} s")


def report(part):
    lines = [
        "",
        f"To a 1e-3 gap{_beside(part)} (`{part['command']}`, {part['date']}, load {part['load_start']:.2f} "
        "at the start): 2M x 60 float32 rows of three classes in 20 Parquet files (dense Gaussian, and "
        "raw 0..255), each measure in a fresh process after a warm-up fit. Reads count the first (the "
        "classes counted, the sample kept) and the Newton reads; a plain read is the first read of the "
        "files in a fresh process (the files as the run before left them in the page cache), *best*: the "
        "faster of it and a second read in the same process (the files hot, as the fit's later reads "
        "find them). In memory: the same rows loaded (float32), the load not counted, "
        "ours at `tol=1e-3` and scikit-learn's `newton-cholesky` at its default tol (1e-4).",
        "",
        "| set | C | reads | gap per read | fit | plain read (first, best) | x a plain read (first, best) "
        "| ours in memory | x ours in memory | scikit-learn in memory (its distance to P*) | x scikit-learn "
        "| true suboptimality |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in part["rows"]:
        gaps = ", ".join(f"{g:.1e}" for g in r["gaps"])
        sub = f"{r['suboptimality']:.1e}" if "suboptimality" in r else "–"
        theirs = "–"
        if "reference" in r:
            theirs = f"{(r['sklearn_objective'] - r['reference']) / r['sklearn_objective']:.1e}"
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['reads']} | {gaps} | {r['fit_s']:.2f} s | "
            f"{_reads(r)} | {r['fit_over_read']:.2f}, {r.get('fit_over_best_read', float('nan')):.2f} | "
            f"{r['ours_s']:.2f} s | {r['fit_over_memory']:.2f} | "
            f"{r['sklearn_s']:.2f} s ({theirs}) | {r['fit_over_sklearn']:.2f} | {sub} |"
        )
    return lines


def write_report(payload):
    lines = [
        "",
        "`python -m benchmarks.bench_multinomial` (issue 54): "
        '`LogisticRegression()` (its default `multi_class="auto"`: the softmax model of three classes) '
        "streamed from Parquet against a plain read and against the in-memory solvers on the same rows. "
        + _common.machine_words(payload),
    ]
    for name in ("quiet", "busy"):
        if payload.get(name):
            lines += report(payload[name])
    write_section(MARKER, lines + [""])


def main(argv=None):
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="/tmp/tallmc", help="<dir>/dense and <dir>/raw")
    parser.add_argument("--write", action="store_true", help="write the two sets first")
    parser.add_argument("--C", type=float, nargs="+", default=[0.01, 1.0], dest="Cs")
    parser.add_argument("--check", action="store_true", help="certificates against scikit-learn's optimum")
    parser.add_argument("--busy", type=int, default=0, help="beside N busy processes")
    parser.add_argument("--render", action="store_true", help="only the docs, from the results file")
    args = parser.parse_args(argv)
    payload = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.write:
        for kind in ("dense", "raw"):
            X, y = multiclass(N_ROWS, N_FEATURES, N_CLASSES, raw=kind == "raw")
            write_parquet(Path(args.data_dir) / kind, X, y, 100_000)
    if not args.render:
        payload["machine"] = machine()
        header = {**payload_header("bench_multinomial", argv), "load_start": _load(), "busy": args.busy}
        payload["busy" if args.busy else "quiet"] = {**header, "rows": run_rows(args)}
        save_json(RESULTS, payload)
    write_report(payload)


if __name__ == "__main__":
    main()

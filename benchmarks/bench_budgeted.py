"""Budgeted kernel SVM: the design of Tables 2 and 3 of Glasmachers & Qaadan (2018).

"Speeding Up Budgeted Stochastic Gradient Descent SVM Training with
Precomputed Golden Section Search" compares four ways of choosing a merge
in BSGD: golden section search to high precision ("gss-precise"), to 0.01
("gss"), a lookup table of the merge coefficient ``h`` ("lookup-h") and
tables of ``h`` and of the weight degradation ("lookup-wd").  Table 2 of
the paper gives test accuracy, Table 3 the time saved against GSS and the
merge frequency.  Here ``BudgetedSVC`` is fitted with each method on the
paper's data where we have it, with the paper's Table 1 values of C and
gamma: a9a (ADULT), ijcnn1, phishing, w8a (WEB), and a 7,000-row HIGGS
subset standing in for SUSY (same kind of physics data, 28 features).

``BudgetedSVC`` fits the paper's unregularised offset ``b`` after the last
epoch (``fit_intercept=True``); the column "lookup-wd, no offset" is the
same fit with ``fit_intercept=False``, whose last iterate carries whatever
offset the merges left, to show what the offset is worth.

Every (dataset, budget, run) fits all four methods with the same
``random_state`` (the run index), the methods interleaved within a run so
that a change in the machine's load falls on all of them alike.  Timed
fits run without the shadow partner choice; one extra fit per dataset and
budget (lookup-wd with a GSS shadow, run 0: the engine driver
:class:`~dask_streamsvm.engine.models.budgeted.BSGD` that ``BudgetedSVC.fit``
builds, on the same row orders) counts how often GSS would have chosen the
same merge partner, since the shadow inflates merge time.  Numba
is compiled and the lookup tables built before any timing.  Training rows
above ``--max-rows`` are a seeded, stratified subsample; test rows above
``--max-test-rows`` likewise.  Exact ``sklearn.svm.SVC`` (LIBSVM) on the same
training rows is the reference when they are at most 20,000.

Run ``python -m benchmarks.bench_budgeted [--epochs 5 --runs 3]``; results go
to ``benchmarks/results/bench_budgeted.json`` and ``docs/benchmarks.md``.

``--text`` measures instead wide, sparse data, where a linear model is the
tool (issue 41): a text-like set of the size a user reported, 7,770
training and 7,770 test rows of 8,315 features (:func:`text_like`), fitted
by ``BudgetedSVC`` with its defaults (``--text-budgets``: other budgets
too), ``LinearSVC`` and ``LogisticRegression`` with theirs: fit seconds,
test F1 of the positive class and accuracy, and the warning
``BudgetedSVC`` gives at fit time.  Results go to
``benchmarks/results/bench_budgeted_text.json`` (and the terminal), not to
``docs/benchmarks.md``.
"""

import argparse
import bz2
import os
import time

import numpy as np

from benchmarks._common import ROOT, data_dir, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_budgeted.json"
MARKER = "## Budgeted kernel SVM: the design of Tables 2 and 3 of Glasmachers & Qaadan"
METHODS = ("gss-precise", "gss", "lookup-h", "lookup-wd")
SVC_MAX_ROWS = 20_000
PAPER_EPOCHS = 20
PAPER_RUNS = 5
# The paper's Table 2, lookup-WD column: (data, budget) -> test accuracy mean, std over 5 runs (all rows).
PAPER_TABLE2 = {
    ("a9a", 100): (84.200, 0.798), ("a9a", 500): (83.949, 1.001),
    ("ijcnn1", 100): (97.130, 0.363), ("ijcnn1", 500): (98.070, 0.372),
    ("w8a", 100): (98.793, 0.039), ("w8a", 500): (98.807, 0.016),
    ("phishing", 100): (96.389, 0.371), ("phishing", 500): (97.525, 0.201),
}  # fmt: skip
NO_OFFSET = "lookup-wd, no offset"
# name -> (label in the report, train file, test file or None, n_features, C, gamma): the paper's Table 1.
DATASETS = {
    "a9a": ("ADULT (a9a)", "a9a.bz2", "a9a.t.bz2", 123, 2.0**5, 2.0**-7),
    "ijcnn1": ("IJCNN (ijcnn1)", "ijcnn1.bz2", "ijcnn1.t.bz2", 22, 2.0**5, 2.0**1),
    "phishing": ("PHISHING", "phishing.bz2", None, 68, 2.0**3, 2.0**3),
    "w8a": ("WEB (w8a)", "w8a.bz2", None, 300, 2.0**3, 2.0**-5),
    "higgs": ("SUSY stand-in: HIGGS subset", "higgs_lightgbm_subset/binary.train.bz2",
              "higgs_lightgbm_subset/binary.test.bz2", 28, 2.0**5, 2.0**-7),
}  # fmt: skip


def _load(path, width):
    """Rows and labels of a LIBSVM file (CSR) or of the HIGGS TSV (dense, label first)."""
    if path.name.startswith("binary."):
        with bz2.open(path, "rt") as f:
            table = np.loadtxt(f, delimiter="\t")
        return np.ascontiguousarray(table[:, 1:]), table[:, 0]
    from sklearn.datasets import load_svmlight_file

    from dask_streamsvm.datasets import compact_csr

    X, y = load_svmlight_file(str(path), n_features=width)
    return compact_csr(X.tocsr()), y  # 32-bit indices: SVC's predict refuses 64-bit ones


def _subsample(X, y, n, seed):
    """At most ``n`` rows, a seeded stratified sample when there are more; and whether it sampled."""
    if X.shape[0] <= n:
        return X, y, False
    from sklearn.model_selection import train_test_split

    X, _, y, _ = train_test_split(X, y, train_size=n, random_state=seed, stratify=y)
    return X, y, True


def datasets(max_rows, max_test_rows, seed, names=None):
    """name -> dict of the rows, labels, C, gamma and notes (``names``: these only); missing files are
    skipped with a note."""
    from sklearn.model_selection import train_test_split

    out = {}
    for name, (label, train, test, width, C, gamma) in DATASETS.items():
        if names is not None and name not in names:
            continue
        path = data_dir() / train
        if not path.exists():
            print(f"skipped {name}: {path} not found")
            continue
        X, y = _load(path, width)
        if test is not None:
            if not (data_dir() / test).exists():
                print(f"skipped {name}: {data_dir() / test} not found")
                continue
            Xt, yt = _load(data_dir() / test, width)
            split = "its test file"
        else:
            X, Xt, y, yt = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
            split = "80/20 seeded split"
        full, full_test = X.shape[0], Xt.shape[0]
        X, y, cut = _subsample(X, y, max_rows, seed)
        Xt, yt, cut_test = _subsample(Xt, yt, max_test_rows, seed)
        out[name] = {
            "label": label, "X": X, "y": y, "Xt": Xt, "yt": yt, "C": C, "gamma": gamma, "split": split,
            "rows": X.shape[0], "rows_available": full, "subsampled": cut, "features": width,
            "test_rows": Xt.shape[0], "test_rows_available": full_test, "test_subsampled": cut_test,
        }  # fmt: skip
    return out


def text_like(n_rows, n_features=8315, *, words=40, positive=0.1, seed=0):
    """A bag-of-words set like a user's 7,770 x 8,315 text set: ``(X, y)``, CSR rows of unit norm.

    Documents of Poisson(``words``) words drawn from a Zipf(1.1) vocabulary
    of 50,000 words hashed into ``n_features`` columns (about 30 nonzeros
    a row); a share ``positive`` of them (label 1) add one word in eight
    from a 100-word topic, and 30% of the others one in sixteen; tf-idf
    weights (smooth idf) and rows scaled to unit norm.  Linear models reach
    a test F1 of about 0.75 on it, as on the user's set (0.76).
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    vocabulary = 50_000
    p = 1.0 / np.arange(1, vocabulary + 1) ** 1.1
    column = rng.integers(0, n_features, size=vocabulary)
    topic = rng.choice(np.arange(200, 5000), size=100, replace=False)
    y = (rng.random(n_rows) < positive).astype(int)
    rows, cols = [], []
    for i in range(n_rows):
        k = max(5, int(rng.poisson(words)))
        doc = rng.choice(vocabulary, size=k, p=p / p.sum())
        if y[i]:
            doc = np.concatenate([doc, rng.choice(topic, size=max(1, k // 8))])
        elif rng.random() < 0.3:
            doc = np.concatenate([doc, rng.choice(topic, size=max(1, k // 16))])
        rows.append(np.full(doc.size, i))
        cols.append(column[doc])
    r = np.concatenate(rows)
    X = sp.csr_matrix((np.ones(r.size), (r, np.concatenate(cols))), shape=(n_rows, n_features))
    X.sum_duplicates()
    idf = np.log((1 + n_rows) / (1 + np.bincount(X.indices, minlength=n_features))) + 1
    X = sp.csr_matrix(X.multiply(idf[None, :]))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    return sp.csr_matrix(sp.diags(1 / np.maximum(norms, 1e-12)) @ X), y


def text_fit(name, model, X, y, Xt, yt):
    """One timed fit on the text-like set: seconds, test F1 and accuracy, the warnings it gave."""
    import warnings

    from sklearn.metrics import f1_score

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    predicted = model.predict(Xt)
    out = {
        "model": name, "fit_seconds": seconds, "f1": float(f1_score(yt, predicted)),
        "accuracy": float(np.mean(predicted == yt)),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    }  # fmt: skip
    if hasattr(model, "merge_stats_"):
        out["merge_stats"] = model.merge_stats_
        out["gamma"] = float(model.gamma_)
    print(f"{name}: {seconds:.2f} s, F1 {out['f1']:.3f}, accuracy {out['accuracy']:.4f}", flush=True)
    return out


def text_benchmark(argv, budgets, Cs, rows, seed):
    """``--text``: BudgetedSVC (defaults, each budget of ``budgets``, each C of ``Cs``) against the linear
    models."""
    from dask_streamsvm import BudgetedSVC, LinearSVC, LogisticRegression

    start, load = time.perf_counter(), os.getloadavg()
    X, y = text_like(2 * rows, seed=seed)
    X, y, Xt, yt = X[:rows], y[:rows], X[rows:], y[rows:]
    warm = slice(0, 300)  # compile the kernels for this layout outside the timings
    for model in (BudgetedSVC(budget=20, max_iter=1), LinearSVC(), LogisticRegression()):
        text_fit("warm-up", model, X[warm], y[warm], Xt[warm], yt[warm])
    fits = [
        text_fit("LinearSVC()", LinearSVC(), X, y, Xt, yt),
        text_fit("LogisticRegression()", LogisticRegression(), X, y, Xt, yt),
        text_fit("BudgetedSVC(random_state=0)", BudgetedSVC(random_state=0), X, y, Xt, yt),
    ]
    for budget in budgets:
        name = f"BudgetedSVC(budget={budget}, random_state=0)"
        fits.append(text_fit(name, BudgetedSVC(budget=budget, random_state=0), X, y, Xt, yt))
    for C in Cs:
        name = f"BudgetedSVC(C={C:g}, random_state=0)"
        fits.append(text_fit(name, BudgetedSVC(C=C, random_state=0), X, y, Xt, yt))
    payload = {
        **payload_header("bench_budgeted", argv),
        "machine": machine(),
        "rows": rows, "test_rows": Xt.shape[0], "features": X.shape[1], "seed": seed,
        "nonzeros_per_row": X.nnz / X.shape[0], "positive_share": float(y.mean()),
        "load_average": list(load), "load_average_after": list(os.getloadavg()),
        "seconds": time.perf_counter() - start, "fits": fits,
    }  # fmt: skip
    save_json(RESULTS.with_name("bench_budgeted_text.json"), payload)


def warm_up(X, y):
    """Compile every merge method's kernels for this input layout on 50 rows, outside the timings."""
    from dask_streamsvm import BudgetedSVC

    X, y = X[:50], y[:50]
    if np.unique(y).shape[0] < 2:
        return
    for merge in METHODS:
        BudgetedSVC(gamma=1.0, budget=5, max_iter=1, merge=merge, random_state=0).fit(X, y).predict(X)
    shadow_stats(X, y, C=1.0, gamma=1.0, budget=5, epochs=1)


def fit_one(d, budget, merge, epochs, run, fit_intercept=True):
    """One timed fit: test accuracy, fit and merge seconds, merge frequency."""
    from dask_streamsvm import BudgetedSVC

    model = BudgetedSVC(C=d["C"], gamma=d["gamma"], budget=budget, max_iter=epochs, merge=merge,
                        fit_intercept=fit_intercept, shuffle=True, random_state=run)  # fmt: skip
    model.fit(d["X"], d["y"])
    stats = model.merge_stats_
    return {
        "accuracy": float(np.mean(model.predict(d["Xt"]) == d["yt"])),
        "fit_seconds": stats["fit_seconds"],
        "merge_seconds": stats["merge_seconds"],
        "merge_frequency": stats["merge_frequency"],
    }


def shadow_stats(X, y, *, C, gamma, budget, epochs, run=0):
    """``merge_stats`` of lookup-wd BSGD with GSS's partner choice alongside, as ``BudgetedSVC.fit`` runs it.

    The engine driver of ``BudgetedSVC(..., merge="lookup-wd", shuffle=True,
    random_state=run).fit(X, y)`` on binary labels, built with a shadow
    method, on the same epochs' row orders.
    """
    from sklearn.utils import check_random_state

    from dask_streamsvm.engine.models.budgeted import BSGD

    classes = np.unique(y)
    assert classes.shape[0] == 2, "the agreement is measured on binary problems"
    signs = np.where(y == classes[1], 1.0, -1.0)[None, :]
    n = X.shape[0]
    bsgd = BSGD(1, X.shape[1], budget=budget, gamma=gamma, C=C, n_samples=n, merge="lookup-wd", shadow="gss")
    bsgd.epochs(X, signs, epochs, check_random_state(run))
    return bsgd.merge_stats()


def agreement(d, budget, epochs):
    """Share of merge events where GSS would have chosen lookup-wd's partner (one shadow fit, run 0)."""
    stats = shadow_stats(d["X"], d["y"], C=d["C"], gamma=d["gamma"], budget=budget, epochs=epochs)
    shadow, equal = stats["shadow_decisions"], stats["equal_decisions"]
    return {"shadow_decisions": shadow, "equal_decisions": equal,
            "percent": 100.0 * equal / shadow if shadow else None}  # fmt: skip


def exact_svc(d):
    """Test accuracy and seconds of exact ``sklearn.svm.SVC`` with the same C and gamma."""
    from sklearn.svm import SVC

    start = time.perf_counter()
    model = SVC(C=d["C"], gamma=d["gamma"]).fit(d["X"], d["y"])
    seconds = time.perf_counter() - start
    return {"accuracy": float(np.mean(model.predict(d["Xt"]) == d["yt"])), "seconds": seconds}


def main(argv=None):
    from dask_streamsvm.engine.models.budgeted import merge_tables

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_budgeted", description=__doc__)
    parser.add_argument("--budgets", type=int, nargs="+", default=[100, 500], help="(default 100 500)")
    parser.add_argument("--epochs", type=int, default=5, help=f"(default 5; the paper: {PAPER_EPOCHS})")
    parser.add_argument("--runs", type=int, default=3, help=f"(default 3; the paper: {PAPER_RUNS})")
    parser.add_argument("--max-rows", type=int, default=20_000, help="training rows kept (default 20000)")
    parser.add_argument("--max-test-rows", type=int, default=20_000, help="test rows kept (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the subsamples (default 0)")
    parser.add_argument("--no-svc", action="store_true", help="skip the exact SVC reference")
    parser.add_argument("--datasets", nargs="+", choices=sorted(DATASETS), help="these only (default: all)")
    parser.add_argument(
        "--tag", help="a run of its own: results in bench_budgeted_TAG.json and a docs section of its own"
    )
    parser.add_argument("--text", action="store_true", help="the wide, sparse text-like set instead")
    parser.add_argument("--text-budgets", type=int, nargs="*", default=[], help="with --text: more budgets")
    parser.add_argument("--text-C", type=float, nargs="*", default=[], help="with --text: more values of C")
    parser.add_argument("--text-rows", type=int, default=7770, help="with --text: training rows (7770)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    merge_tables()
    if args.text:
        text_benchmark(argv, args.text_budgets, args.text_C, args.text_rows, args.seed)
        return
    data = datasets(args.max_rows, args.max_test_rows, args.seed, args.datasets)
    table = {}
    for name, d in data.items():
        warm_up(d["X"], d["y"])
        row = {k: v for k, v in d.items() if k not in ("X", "y", "Xt", "yt")}
        row["svc"] = exact_svc(d) if not args.no_svc and d["rows"] <= SVC_MAX_ROWS else None
        row["budgets"] = {}
        for budget in args.budgets:
            fits = {m: [] for m in (*METHODS, NO_OFFSET)}
            for run in range(args.runs):
                for merge in METHODS:
                    fits[merge].append(fit_one(d, budget, merge, args.epochs, run))
                fits[NO_OFFSET].append(fit_one(d, budget, "lookup-wd", args.epochs, run, fit_intercept=False))
            cell = {m: {k: [f[k] for f in fits[m]] for k in fits[m][0]} for m in fits}
            cell["agreement"] = agreement(d, budget, args.epochs)
            row["budgets"][str(budget)] = cell
            print(f"{name} B={budget}: done ({time.perf_counter() - start:.0f} s)", flush=True)
        table[name] = row
    payload = {
        **payload_header("bench_budgeted", argv),
        "machine": machine(),
        "epochs": args.epochs,
        "runs": args.runs,
        "budgets": args.budgets,
        "max_rows": args.max_rows,
        "max_test_rows": args.max_test_rows,
        "seed": args.seed,
        "svc": not args.no_svc,
        "seconds": time.perf_counter() - start,
        "table": table,
    }
    payload["tag"] = args.tag
    save_json(RESULTS if args.tag is None else RESULTS.with_name(f"bench_budgeted_{args.tag}.json"), payload)
    write_report(payload)


def _names(table):
    """The dataset key of each (dataset, budget) row, in the order of the report's rows."""
    return [name for name, row in table.items() for _ in row["budgets"]]


def _acc(scores):
    scores = 100 * np.asarray(scores)
    return f"{scores.mean():.2f}" if scores.size == 1 else f"{scores.mean():.2f} ± {scores.std():.2f}"


def _saving(cell, method, key):
    """``1 - mean(method) / mean(gss)`` of ``key`` in percent, or None when GSS spent no time."""
    base = np.mean(cell["gss"][key])
    return 100.0 * (1.0 - np.mean(cell[method][key]) / base) if base > 0 else None


def _pct(value):
    return "n/a" if value is None else f"{value:.1f}%"


def goal(cell):
    """The issue's goal on one row: (lookup-wd's merge-time saving >= 50%, accuracy within the spread)."""
    saving = _saving(cell, "lookup-wd", "merge_seconds")
    wd, gss = np.asarray(cell["lookup-wd"]["accuracy"]), np.asarray(cell["gss"]["accuracy"])
    within = abs(wd.mean() - gss.mean()) <= max(wd.std(), gss.std())
    return saving is not None and saving >= 50.0, bool(within)


def write_report(payload):
    """Render the section of ``docs/benchmarks.md`` from the results payload."""
    table = payload["table"]
    rows = [(row, budget, cell) for row in table.values() for budget, cell in row["budgets"].items()]
    sampled = [f"{row['label']} ({row['rows_available']:,} -> {row['rows']:,})"
               for row in table.values() if row["subsampled"]]  # fmt: skip
    none = "none was cut"
    sampled_test = [f"{row['label']} ({row['test_rows_available']:,} -> {row['test_rows']:,})"
                    for row in table.values() if row["test_subsampled"]]  # fmt: skip
    lines = [
        "",
        f"Command: `{payload['command']}` ({payload['date']}, {payload['machine']['cores']} cores, "
        f"{payload['seconds'] / 60:.1f} min). `BudgetedSVC` with each merge method, C and gamma from the "
        f"paper's Table 1; epochs: {payload['epochs']} (the paper: {PAPER_EPOCHS}); runs: {payload['runs']}, "
        f"`random_state` = run index (the paper: {PAPER_RUNS}); budgets: "
        f"{', '.join(str(b) for b in payload['budgets'])}. Training rows capped at {payload['max_rows']:,} "
        f"by a seeded stratified subsample ({'; '.join(sampled) or none}); test rows "
        f"capped at {payload['max_test_rows']:,} ({'; '.join(sampled_test) or none}).",
        "",
        "A. Test accuracy in percent, mean ± standard deviation over the runs (the design of Table 2); "
        f"exact SVC is `sklearn.svm.SVC` (LIBSVM) on the same training rows when they are at most "
        f"{SVC_MAX_ROWS:,}, with its fit seconds; the paper's Table 2 (lookup-WD, all rows, "
        f"{PAPER_EPOCHS} epochs, {PAPER_RUNS} runs) where it has the set.",
        "",
        "| data | rows x features (test rows) | C | gamma | B | "
        + " | ".join(METHODS)
        + f" | {NO_OFFSET} | exact SVC | paper, lookup-WD |",
        "|---|---|---|---|---|" + "---|" * (len(METHODS) + 3),
    ]
    for (row, budget, cell), name in zip(rows, _names(table), strict=True):
        svc = row["svc"]
        paper = PAPER_TABLE2.get((name, int(budget)))
        paper_cell = f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper else "n/a"
        no_offset = _acc(cell[NO_OFFSET]["accuracy"]) if NO_OFFSET in cell else "not run"
        svc_cell = "not run" if not payload["svc"] else "n/a (too many rows)"
        if svc is not None:
            svc_cell = f"{100 * svc['accuracy']:.2f} ({svc['seconds']:.3g} s)"
        lines.append(
            f"| {row['label']}, {row['split']} | {row['rows']:,} x {row['features']} ({row['test_rows']:,}) "
            f"| 2^{np.log2(row['C']):g} | 2^{np.log2(row['gamma']):g} | {budget} | "
            + " | ".join(_acc(cell[m]["accuracy"]) for m in METHODS)
            + f" | {no_offset} | {svc_cell} | {paper_cell} |"
        )
    lines += [
        "",
        "B. Savings against `gss` (the design of Table 3): `1 - mean(method) / mean(gss)` of the total fit "
        "time and of the time in budget maintenance; merge frequency (budget-maintenance events per SGD "
        "step, `gss`, mean over runs); the share of fit time spent in budget maintenance; agreement: the "
        "share of merge events in which GSS would have chosen lookup-WD's partner (one lookup-wd fit with "
        "the GSS shadow, run 0, not timed).",
        "",
        "| data | B | total saving lookup-h | total saving lookup-wd | merge saving lookup-h "
        "| merge saving lookup-wd | merge frequency | merge share gss | merge share lookup-wd | agreement |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row, budget, cell in rows:
        share = {m: _pct(100 * np.mean(cell[m]["merge_seconds"]) / np.mean(cell[m]["fit_seconds"]))
                 for m in ("gss", "lookup-wd")}  # fmt: skip
        agree = cell["agreement"]
        agree_cell = "n/a"
        if agree["percent"] is not None:
            agree_cell = (
                f"{agree['percent']:.1f}% ({agree['equal_decisions']:,} / {agree['shadow_decisions']:,})"
            )
        lines.append(
            f"| {row['label']} | {budget} | {_pct(_saving(cell, 'lookup-h', 'fit_seconds'))} "
            f"| {_pct(_saving(cell, 'lookup-wd', 'fit_seconds'))} "
            f"| {_pct(_saving(cell, 'lookup-h', 'merge_seconds'))} "
            f"| {_pct(_saving(cell, 'lookup-wd', 'merge_seconds'))} "
            f"| {np.mean(cell['gss']['merge_frequency']):.4f} | {share['gss']} | {share['lookup-wd']} "
            f"| {agree_cell} |"
        )
    checks = [goal(cell) for _, _, cell in rows]
    fast = sum(f for f, _ in checks)
    close = sum(c for _, c in checks)
    both = sum(f and c for f, c in checks)
    verdict = "met on every row" if rows and both == len(rows) else "not met on every row"
    lines += [
        "",
        "Goal: lookup-WD cuts merge time by at least 50% against GSS with accuracy within the run-to-run "
        f"spread: {verdict}. Both parts hold in {both} of {len(rows)} dataset x budget rows; "
        f"merge-time saving >= 50% in {fast} of {len(rows)}; mean accuracies of lookup-wd and gss no further "
        f"apart than the larger of their standard deviations in {close} of {len(rows)}.",
        "",
        "Seconds per fit, mean over the runs: total / in budget maintenance.",
        "",
        "| data | B | " + " | ".join(METHODS) + " |",
        "|---|---|" + "---|" * len(METHODS),
    ]
    for row, budget, cell in rows:
        lines.append(
            f"| {row['label']} | {budget} | "
            + " | ".join(
                f"{np.mean(cell[m]['fit_seconds']):.3g} / {np.mean(cell[m]['merge_seconds']):.3g}"
                for m in METHODS
            )
            + " |"
        )
    lines.append("")
    write_section(MARKER if payload.get("tag") is None else f"{MARKER} ({payload['tag']})", lines)


if __name__ == "__main__":
    main()

"""One-pass SVM: the design of Table 1 and Figure 3 of Rai, Daume III & Venkatasubramanian (2009).

Single-pass test accuracy of ``OnePassSVC`` with lookahead 1 (Algorithm 1)
and 10 (Algorithm 2), against one pass of the Perceptron (scikit-learn,
``partial_fit`` once in the stream's order), Pegasos (Shalev-Shwartz et al.
2007) with blocks of 1 and of 20 rows (implemented here: step ``1/(lambda t)``,
projection on the ball of radius ``1/sqrt(lambda)``, ``lambda = 1/(n C)``,
a constant feature for the bias), and our SBM ``partial_fit`` (10 blocks,
one pass), with batch ``LinearSVC`` (LIBLINEAR's optimum, all rows in memory)
as the reference.  Every one-pass method sees the training rows in the same
20 random orders; the table gives the mean and standard deviation of test
accuracy over them.  ``C = 1`` everywhere (the paper does not give its C).

Data: a9a and ijcnn1 with their test files; w8a and phishing split 80/20
(seeded); scikit-learn's digits, 8 against 9, split 70/30, as a small
stand-in for the paper's MNIST 8 vs 9 (dense rows, as scikit-learn gives
them); and a tall dense set of 3 features far from the origin (seeded
Gaussians, labels from a hyperplane that leaves 79% of the rows in one
class), the kind of data whose one-pass ball predicted one class for every
row before ``OnePassSVC`` standardized its rows (``standardize=True``, the
default; the column "L=10 unscaled" is ``standardize=False``).  a9a and
ijcnn1 come twice: as LIBSVM gives them (CSR, whose columns are scaled and
never centred) and as dense rows (centred, as a Dask array of dense chunks
is), the case where standardizing once put a9a 10 points below the majority
class (issue 41).  Beside every set: the majority class's share of its test
rows, the worst order of ``OnePassSVC`` L=10, how many orders fell below
the majority class, and how many fits warned (``MajorityClassWarning``,
which compares with the majority class on the training rows).  A third
part is the issue's own setting: a9a from a Dask array of 4,096-row dense
chunks, C = 1, lookahead 1 and 10, one fit per ``random_state`` (the fit's
own shuffling of partitions and rows).  The second part is the paper's
Figure 3: accuracy over stream orders for growing lookahead.

Run ``python -m benchmarks.bench_onepass [--orders 20]``; results go to
``benchmarks/results/bench_onepass.json``, ``docs/benchmarks.md`` and
``docs/img/onepass_lookahead.png``, with the load average (1, 5, 15 min)
at the start and the end.
"""

import argparse
import json
import os
import time
import warnings

import numba
import numpy as np

from benchmarks._common import ROOT, data_dir, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_onepass.json"
PLOT = ROOT / "docs" / "img" / "onepass_lookahead.png"
MARKER = "## One-pass SVM: the design of Table 1 and Figure 3 of Rai et al."
C = 1.0
METHODS = ("batch LinearSVC", "Perceptron", "Pegasos k=1", "Pegasos k=20", "SBM partial_fit",
           "OnePassSVC L=1", "OnePassSVC L=10", "OnePassSVC L=10 unscaled")  # fmt: skip
LOOKAHEADS = (1, 2, 5, 10, 20, 50)
DENSE_TWINS = ("a9a", "ijcnn1")  # sets also run as dense rows, which standardizing centres
DASK_CHUNK_ROWS = 4096  # the setting: a9a from a Dask array of 4,096-row dense chunks


def datasets():
    """name -> (X_train, y_train, X_test, y_test, note), float64 (CSR for the LIBSVM files); missing
    files are skipped."""
    from sklearn.datasets import load_digits, load_svmlight_file
    from sklearn.model_selection import train_test_split

    out = {}
    files = {"a9a": 123, "w8a": 300, "ijcnn1": 22, "phishing": 68}
    for name, width in files.items():
        path = data_dir() / f"{name}.bz2"
        if not path.exists():
            print(f"skipped {name}: {path} not found")
            continue
        X, y = load_svmlight_file(str(path), n_features=width)
        test = data_dir() / f"{name}.t.bz2"
        if test.exists():
            Xt, yt = load_svmlight_file(str(test), n_features=width)
            out[name] = (X.tocsr(), y, Xt.tocsr(), yt, "its test file")
        else:
            X, Xt, y, yt = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
            out[name] = (X.tocsr(), y, Xt.tocsr(), yt, "80/20 seeded split")
        if name in DENSE_TWINS:
            X, y, Xt, yt, note = out[name]
            out[f"{name}, dense rows"] = (X.toarray(), y, Xt.toarray(), yt, note)

    X, y = load_digits(return_X_y=True)
    keep = (y == 8) | (y == 9)
    X, Xt, y, yt = train_test_split(X[keep] / 16.0, y[keep], test_size=0.3, random_state=0, stratify=y[keep])
    out["digits 8 vs 9"] = (X, y, Xt, yt, "70/30 seeded split")
    out["3 features far from the origin"] = (*far_from_the_origin(50_000, 0), *far_from_the_origin(20_000, 1),
                                             "synthetic, its own test rows")  # fmt: skip
    return out


def far_from_the_origin(n, seed):
    """Dense Gaussian rows centred at (3, -1, 2); labels from a hyperplane with 21% positives (noisy)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 2.0, 0.5] + [3.0, -1.0, 2.0]
    score = X @ [1.0, -0.5, 2.0] + 0.7 * rng.normal(size=n)
    return X, (score > 9.0).astype(np.int64)


def _dense(X):
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


@numba.njit(cache=True)
def _pegasos(X, y, order, lam, k):
    """One pass of mini-batch Pegasos over dense rows ``X`` (bias column included) in ``order``."""
    n, d = X.shape
    w = np.zeros(d)
    grad = np.zeros(d)
    radius = 1.0 / np.sqrt(lam)
    t = 0
    for start in range(0, n, k):
        t += 1
        eta = 1.0 / (lam * t)
        grad[:] = 0.0
        stop = min(start + k, n)
        for j in range(start, stop):
            i = order[j]
            if y[i] * np.dot(w, X[i]) < 1.0:
                grad += y[i] * X[i]
        w *= 1.0 - eta * lam
        w += (eta / (stop - start)) * grad
        norm = np.sqrt(np.dot(w, w))
        if norm > radius:
            w *= radius / norm
    return w


def _accuracy(predicted, y):
    return float(np.mean(predicted == y))


def _one_pass_fits(X, y, Xt, order, dense, lam, onepass_only=False):
    """Every one-pass method on the stream ``order`` (``onepass_only``: OnePassSVC L=1 and L=10): method
    -> (test predictions, seconds, whether the fit warned)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Perceptron

    from dask_streamsvm import LinearSVC, OnePassSVC
    from dask_streamsvm.onepass import MajorityClassWarning

    classes = np.unique(y)
    Xo, yo = X[order], y[order]
    Xd, signs, Xtd = dense
    out = {}

    def timed(method, fit_predict):
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", MajorityClassWarning)  # counted per fit, not printed
            predicted = fit_predict()
        warned = any(issubclass(w.category, MajorityClassWarning) for w in caught)
        out[method] = (predicted, time.perf_counter() - start, warned)

    if onepass_only:
        for L in (1, 10):
            timed(
                f"OnePassSVC L={L}",
                lambda L=L: OnePassSVC(C=C, lookahead=L, shuffle=False).fit(Xo, yo).predict(Xt),
            )
        return out
    timed("Perceptron", lambda: Perceptron(shuffle=False).partial_fit(Xo, yo, classes=classes).predict(Xt))
    for k in (1, 20):
        timed(
            f"Pegasos k={k}", lambda k=k: classes[(Xtd @ _pegasos(Xd, signs, order, lam, k) > 0).astype(int)]
        )

    def sbm():
        model = LinearSVC(C=C, random_state=0)
        bounds = np.linspace(0, X.shape[0], 11).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                model.partial_fit(Xo[a:b], yo[a:b], classes=classes)
        return model.predict(Xt)

    timed("SBM partial_fit", sbm)
    for L in (1, 10):
        timed(
            f"OnePassSVC L={L}",
            lambda L=L: OnePassSVC(C=C, lookahead=L, shuffle=False).fit(Xo, yo).predict(Xt),
        )

    timed(
        "OnePassSVC L=10 unscaled",
        lambda: OnePassSVC(C=C, lookahead=10, standardize=False, shuffle=False).fit(Xo, yo).predict(Xt),
    )
    return out


def run_orders(X, y, Xt, yt, orders, seed, onepass_only=False):
    """Test accuracy, mean seconds and warned fits of every one-pass method (``onepass_only``: of
    OnePassSVC L=1 and L=10) over ``orders`` random stream orders."""
    classes = np.unique(y)
    dense = (
        np.hstack([_dense(X), np.ones((X.shape[0], 1))]),
        np.where(y == classes[1], 1.0, -1.0),
        np.hstack([_dense(Xt), np.ones((Xt.shape[0], 1))]),
    )
    lam = 1.0 / (X.shape[0] * C)
    methods = ("OnePassSVC L=1", "OnePassSVC L=10") if onepass_only else METHODS[1:]
    results = {m: [] for m in methods}
    seconds = {m: 0.0 for m in methods}
    warned = {m: 0 for m in methods}
    for r in range(orders):
        order = np.random.default_rng([seed, r]).permutation(X.shape[0])
        fits = _one_pass_fits(X, y, Xt, order, dense, lam, onepass_only)
        for method, (predicted, spent, said) in fits.items():
            results[method].append(_accuracy(predicted, yt))
            seconds[method] += spent
            warned[method] += said
    return results, {m: s / orders for m, s in seconds.items()}, warned


def run_dask(X, y, Xt, yt, orders):
    """OnePassSVC from a Dask array of DASK_CHUNK_ROWS-row dense chunks, lookahead 1 and 10, one fit
    per random_state in range(orders): test accuracies and how many fits warned."""
    import dask.array as da

    from dask_streamsvm import OnePassSVC
    from dask_streamsvm.onepass import MajorityClassWarning

    X, Xt = _dense(X), _dense(Xt)
    Xd, yd = da.from_array(X, chunks=(DASK_CHUNK_ROWS, X.shape[1])), da.from_array(y, chunks=DASK_CHUNK_ROWS)
    out = {}
    for L in (1, 10):
        scores, warned = [], 0
        for r in range(orders):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", MajorityClassWarning)
                model = OnePassSVC(C=C, lookahead=L, random_state=r).fit(Xd, yd)
            warned += any(issubclass(w.category, MajorityClassWarning) for w in caught)
            scores.append(_accuracy(model.predict(Xt), yt))
        out[str(L)] = {"accuracy": scores, "warned": warned}
    return out


def run_lookahead(X, y, Xt, yt, orders, seed):
    from dask_streamsvm import OnePassSVC
    from dask_streamsvm.onepass import MajorityClassWarning

    out = {}
    for L in LOOKAHEADS:
        scores = []
        for r in range(orders):
            order = np.random.default_rng([seed, r]).permutation(X.shape[0])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MajorityClassWarning)  # the table shows what it warns of
                model = OnePassSVC(C=C, lookahead=L, shuffle=False).fit(X[order], y[order])
            scores.append(_accuracy(model.predict(Xt), yt))
        out[L] = scores
    return out


def exact_ball_check(X, y, Xt, yt, n=300, seed=0):
    """On ``n`` sampled rows: the exact minimum enclosing ball against the one-pass ball and LIBLINEAR.

    The exact ball is the MEB dual, ``min a'Ka`` over the simplex (SLSQP), on the augmented
    points ``[y x~ ; C^(-1/2) e_i]`` with ``x~ = [x, 1] / ||[x, 1]||``.
    """
    from dask_streamsvm import LinearSVC, OnePassSVC
    from dask_streamsvm.onepass import MajorityClassWarning
    from tests._reference import exact_enclosing_ball, meb_points

    rows = np.random.default_rng(seed).choice(X.shape[0], n, replace=False)
    Xs, ys = X[rows].toarray(), y[rows]
    classes = np.unique(y)
    centre, exact_radius = exact_enclosing_ball(meb_points(Xs, np.where(ys == classes[1], 1.0, -1.0), C))
    test = np.hstack([Xt.toarray(), np.ones((Xt.shape[0], 1))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MajorityClassWarning)  # the check reports the accuracy itself
        # the same points, in order; partial_fit: the ball's own model (fit keeps the majority class's
        # where the ball scores no better, issue 53)
        one = OnePassSVC(C=C, lookahead=1, standardize=False).partial_fit(Xs, ys, classes=classes)
    return {
        "rows": n,
        "exact_ball_accuracy": _accuracy(classes[(test @ centre[: test.shape[1]] > 0).astype(int)], yt),
        "one_pass_accuracy": _accuracy(one.predict(Xt), yt),
        "radius_ratio": one.radius_ / exact_radius,
        "liblinear_accuracy": _accuracy(LinearSVC(C=C / 2, random_state=0).fit(Xs, ys).predict(Xt), yt),
    }


def main(argv=None):
    from dask_streamsvm import LinearSVC, OnePassSVC
    from dask_streamsvm.onepass import MajorityClassWarning

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_onepass", description=__doc__)
    parser.add_argument("--orders", type=int, default=20, help="random stream orders (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--row-norms",
        action="store_true",
        help="only compare the standardized rows' RMS norm (STANDARDIZED_ROW_NORM) on the dense sets, "
        "adding the comparison to the results file and the report of an earlier run",
    )
    args = parser.parse_args(argv)
    if args.row_norms:
        return main_row_norms(argv, args.orders, args.seed)
    start = time.perf_counter()
    load_start = [round(v, 2) for v in os.getloadavg()]
    data = datasets()
    # Compile the kernels outside the timings.
    X0, y0 = next(iter(data.values()))[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MajorityClassWarning)
        OnePassSVC(lookahead=3).fit(X0[:50], y0[:50])
    _pegasos(np.ones((2, 2)), np.array([1.0, -1.0]), np.arange(2), 1.0, 1)
    table = {}
    for name, (X, y, Xt, yt, note) in data.items():
        twin = name.endswith(", dense rows")  # the other methods are the CSR row's: OnePassSVC only
        t = time.perf_counter()
        batch = None if twin else LinearSVC(C=C, random_state=0).fit(X, y)
        batch_s = time.perf_counter() - t
        scores, seconds, warned = run_orders(X, y, Xt, yt, args.orders, args.seed, onepass_only=twin)
        table[name] = {
            "rows": X.shape[0], "features": X.shape[1], "test_rows": Xt.shape[0], "note": note,
            "majority": float(max(np.mean(yt == c) for c in np.unique(yt))),
            **({} if twin else {"batch LinearSVC": {"accuracy": [_accuracy(batch.predict(Xt), yt)],
                                                    "seconds": batch_s}}),
            **{m: {"accuracy": scores[m], "seconds": seconds[m], "warned": warned[m]} for m in scores},
        }  # fmt: skip
        print(f"{name}: done ({time.perf_counter() - start:.0f} s)", flush=True)
    lookahead = {}
    for name in ("digits 8 vs 9", "a9a"):
        if name in data:
            X, y, Xt, yt, _ = data[name]
            lookahead[name] = run_lookahead(X, y, Xt, yt, args.orders, args.seed)
    check = exact_ball_check(*data["a9a"][:4]) if "a9a" in data else None
    dask_a9a = run_dask(*data["a9a"][:4], args.orders) if "a9a" in data else None
    payload = {
        **payload_header("bench_onepass", argv),
        "load_average": {"start": load_start, "end": [round(v, 2) for v in os.getloadavg()]},
        "exact_ball_check": check,
        "dask_a9a": dask_a9a,
        "machine": machine(),
        "C": C,
        "orders": args.orders,
        "seed": args.seed,
        "seconds": time.perf_counter() - start,
        "table": table,
        "lookahead": {name: {str(L): s for L, s in v.items()} for name, v in lookahead.items()},
    }
    if RESULTS.exists():  # --row-norms' comparison, a run of its own (its command, date and load kept)
        earlier = json.loads(RESULTS.read_text()).get("row_norms")
        if earlier is not None:
            payload["row_norms"] = earlier
    save_json(RESULTS, payload)
    write_report(payload)


# The rule's candidates: None is unit variance alone (the scaling before issue 41), a number the
# standardized rows' root-mean-square norm against the constant feature's 1.
ROW_NORMS = (None, 1.0, 2.0**0.5, 2.0, 2.0**1.5)
# The dense sets (phishing as dense rows here), where standardizing centres the columns.
ROW_NORM_SETS = ("a9a, dense rows", "ijcnn1, dense rows", "phishing", "digits 8 vs 9",
                 "3 features far from the origin")  # fmt: skip


def run_row_norms(X, y, Xt, yt, orders, seed):
    """Test accuracy of OnePassSVC L=1 and L=10 over ``orders`` stream orders for every ROW_NORMS."""
    import dask_streamsvm.onepass as onepass
    from dask_streamsvm import OnePassSVC
    from dask_streamsvm.features import Standardize
    from dask_streamsvm.onepass import MajorityClassWarning

    rule, learn = onepass.STANDARDIZED_ROW_NORM, onepass._learn_scaling
    out = {}
    try:
        for norm in ROW_NORMS:
            if norm is None:
                onepass._learn_scaling = lambda X, *, centre: Standardize(
                    with_mean="auto" if centre else False
                ).learn([X], X.shape[1])
            else:
                onepass._learn_scaling, onepass.STANDARDIZED_ROW_NORM = learn, norm
            for L in (1, 10):
                scores = []
                for r in range(orders):
                    order = np.random.default_rng([seed, r]).permutation(X.shape[0])
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", MajorityClassWarning)
                        model = OnePassSVC(C=C, lookahead=L, shuffle=False).fit(X[order], y[order])
                    scores.append(_accuracy(model.predict(Xt), yt))
                out[f"{'unit variance' if norm is None else f'{norm:.2f}'}, L={L}"] = scores
    finally:
        onepass.STANDARDIZED_ROW_NORM, onepass._learn_scaling = rule, learn
    return out


def main_row_norms(argv, orders, seed):
    """``--row-norms``: the comparison behind STANDARDIZED_ROW_NORM, added to an earlier run's results."""
    start = time.perf_counter()
    load_start = [round(v, 2) for v in os.getloadavg()]
    data = datasets()
    if "phishing" in data:  # as dense rows, which standardizing centres
        X, y, Xt, yt, note = data["phishing"]
        data["phishing"] = (_dense(X), y, _dense(Xt), yt, note)
    results = {}
    for name in ROW_NORM_SETS:
        if name in data:
            X, y, Xt, yt, _ = data[name]
            results[name] = {
                "majority": float(max(np.mean(yt == c) for c in np.unique(yt))),
                "accuracy": run_row_norms(X, y, Xt, yt, orders, seed),
            }
            print(f"{name}: done ({time.perf_counter() - start:.0f} s)", flush=True)
    payload = json.loads(RESULTS.read_text())
    payload["row_norms"] = {
        **payload_header("bench_onepass", argv),
        "load_average": {"start": load_start, "end": [round(v, 2) for v in os.getloadavg()]},
        "orders": orders,
        "seconds": time.perf_counter() - start,
        "sets": results,
    }
    save_json(RESULTS, payload)
    write_report(payload)


def _cell(scores):
    scores = 100 * np.asarray(scores)
    return f"{scores.mean():.2f}" if scores.size == 1 else f"{scores.mean():.2f} ± {scores.std():.2f}"


def write_report(payload):
    table = payload["table"]
    load = payload.get("load_average")
    at_load = (
        f"; load average (1, 5, 15 min) {load['start']} at the start, {load['end']} at the end"
        if (load)
        else ""
    )
    ten = "OnePassSVC L=10"
    lines = [
        "",
        f"Command: `{payload['command']}` ({payload['date']}, {payload['machine']['cores']} cores, "
        f"{payload['seconds'] / 60:.1f} min{at_load}). Test accuracy in percent, mean ± standard deviation "
        f"over {payload['orders']} random orders of the training stream (the same orders for every one-pass "
        f"method); C = {payload['C']:g}; the design of Rai et al.'s Table 1, where LIBSVM in batch "
        "is the reference (here LIBLINEAR's optimum, our `LinearSVC`). \"majority\": the majority class's "
        'share of the test rows; "L=10 worst": the worst order; "L=10 below": orders below the majority '
        'class; "L=10 warned": fits that warned (`MajorityClassWarning`, on the training rows). '
        "OnePassSVC's columns are `fit`'s models: the majority class's constant model where the ball scored "
        "no better than it on the training rows (`majority_fallback_`, since issue 53; the fits that "
        'warned of that). "dense rows": the same set as a dense array, whose columns standardizing '
        "centres (OnePassSVC only; the other methods: see the CSR row).",
        "",
        "| data | rows x features | majority | "
        + " | ".join(METHODS)
        + " | L=10 worst | L=10 below | L=10 warned |",
        "|---|---|---|" + "---|" * (len(METHODS) + 3),
    ]
    for name, row in table.items():
        cells = [_cell(row[m]["accuracy"]) if m in row else "–" for m in METHODS]
        scores, n = 100 * np.asarray(row[ten]["accuracy"]), len(row[ten]["accuracy"])
        below = int(np.sum(scores < 100 * row["majority"]))
        lines.append(
            f"| {name} ({row['note']}) | {row['rows']:,} x {row['features']} | {100 * row['majority']:.2f} | "
            + " | ".join(cells)
            + f" | {scores.min():.2f} | {below} of {n} | {row[ten]['warned']} of {n} |"
        )
    lines += [
        "",
        "Seconds per fit (one pass; mean over the orders):",
        "",
        "| data | " + " | ".join(METHODS) + " |",
        "|---|" + "---|" * len(METHODS),
    ]
    for name, row in table.items():
        lines.append(
            f"| {name} | "
            + " | ".join(f"{row[m]['seconds']:.3f}" if m in row else "–" for m in METHODS)
            + " |"
        )
    dask_a9a = payload.get("dask_a9a")
    if dask_a9a:
        majority = 100 * table["a9a"]["majority"]
        lines += [
            "",
            f"a9a from a Dask array of {DASK_CHUNK_ROWS:,}-row dense chunks (issue 41's setting), C = 1, "
            f"one fit per `random_state` 0 to {payload['orders'] - 1} (the fit shuffles the partitions and "
            f"their rows), scored on a9a's test file (majority class {majority:.2f}%):",
            "",
            "| lookahead | mean ± sd | worst | best | below the majority | fits that warned |",
            "|---|---|---|---|---|---|",
        ]
        for L, row in dask_a9a.items():
            scores = 100 * np.asarray(row["accuracy"])
            lines.append(
                f"| {L} | {_cell(row['accuracy'])} | {scores.min():.2f} | {scores.max():.2f} | "
                f"{int(np.sum(scores < majority))} of {scores.size} | {row['warned']} of {scores.size} |"
            )
    lines += _row_norm_lines(payload.get("row_norms"))
    check = payload.get("exact_ball_check")
    if check:
        lines += [
            "",
            f"Is the ball the SVM? On {check['rows']} rows sampled from a9a, the exact minimum enclosing "
            f"ball's centre scores {100 * check['exact_ball_accuracy']:.2f}% on a9a's test file, batch "
            f"LIBLINEAR on the same rows (squared hinge, C/2) {100 * check['liblinear_accuracy']:.2f}%, and "
            f"the one-pass ball (radius {check['radius_ratio']:.3f} times the exact one) "
            f"{100 * check['one_pass_accuracy']:.2f}%: the equivalence holds, and the one-pass "
            "approximation loses the accuracy.",
        ]
    lines += ["", "Lookahead (the paper's Figure 3): test accuracy over the same orders.", ""]
    looks = payload["lookahead"]
    if looks:
        Ls = list(next(iter(looks.values())))
        lines += ["| data | " + " | ".join(f"L = {L}" for L in Ls) + " |", "|---|" + "---|" * len(Ls)]
        for name, by_L in looks.items():
            lines.append(f"| {name} | " + " | ".join(_cell(by_L[L]) for L in Ls) + " |")
        lines += ["", "![accuracy against lookahead](img/onepass_lookahead.png)", ""]
        _plot(looks)
    write_section(MARKER, lines)


def _row_norm_lines(run):
    """The report's table of ``--row-norms``: per candidate, the mean test accuracy on each set at L=1
    and L=10, and its largest loss against the best candidate of that column."""
    if not run:
        return []
    sets = run["sets"]
    columns = [(name, L) for name in sets for L in (1, 10)]
    means = {
        (name, L, norm): 100 * np.mean(scores)
        for name, row in sets.items()
        for key, scores in row["accuracy"].items()
        for norm, L in [(key.rsplit(", L=", 1)[0], int(key.rsplit(", L=", 1)[1]))]
    }
    norms = list(dict.fromkeys(key.rsplit(", L=", 1)[0] for key in next(iter(sets.values()))["accuracy"]))
    best = {(name, L): max(means[name, L, norm] for norm in norms) for name, L in columns}
    load = run["load_average"]
    lines = [
        "",
        f'The standardized rows\' root-mean-square norm (`STANDARDIZED_ROW_NORM`, 2; "unit variance": '
        f"the scaling before issue 41): `{run['command']}` ({run['date']}, {run['seconds'] / 60:.1f} min; "
        f"load average {load['start']} at the start, {load['end']} at the end). Mean test accuracy in "
        f"percent over {run['orders']} orders (the same as above), dense rows (centred); the last columns: "
        "the mean and the largest loss against the best norm of each column.",
        "",
        "| RMS norm | "
        + " | ".join(f"{name} L={L}" for name, L in columns)
        + " | mean loss | largest loss |",
        "|---|" + "---|" * (len(columns) + 2),
        "| majority | " + " | ".join(f"{100 * sets[name]['majority']:.2f}" for name, _ in columns) + " | | |",
    ]
    for norm in norms:
        cells = [means[name, L, norm] for name, L in columns]
        losses = [best[c] - v for c, v in zip(columns, cells, strict=True)]
        lines.append(
            f"| {norm} | "
            + " | ".join(f"{v:.2f}" for v in cells)
            + f" | {np.mean(losses):.2f} | {max(losses):.2f} |"
        )
    return lines


def _plot(looks):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, by_L in looks.items():
        Ls = [int(L) for L in by_L]
        means = [100 * np.mean(by_L[str(L)]) for L in Ls]
        stds = [100 * np.std(by_L[str(L)]) for L in Ls]
        ax.errorbar(Ls, means, yerr=stds, marker="o", capsize=3, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("lookahead L")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("OnePassSVC: one pass, random stream orders")
    ax.legend()
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()

"""Same seed, same model: every solver's fitted arrays, written once and compared after a change.

A refactor that is meant to change no arithmetic must give every solver the
same model bit for bit.  This script fits a fixed set of small problems
(every solver, binary, one-vs-rest and Crammer-Singer, a feature map,
class and sample weights, ``probability=True``, ``partial_fit``, both
cluster modes, ``OnePassSVC`` and ``BudgetedSVC``) and either writes their
arrays to a file or compares them with one written before::

    python -m benchmarks.same_model --write tests/data/same_model.npz
    python -m benchmarks.same_model --check tests/data/same_model.npz

``--check`` prints, per model, "same bits" or the largest difference, and
exits 1 if any array differs.  numba compiles for the host CPU, so files
written on another CPU may differ in the last bits (``fastmath`` leaves
may vectorise differently); the file records the CPU it was written on.
"""

import argparse
import sys

import numpy as np


def _data():
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=600, n_features=12, n_informative=6, n_classes=3, n_clusters_per_class=1, random_state=0
    )
    return X, y


def models(include_cluster=True):
    """``{name: {attribute: array}}`` for every fit of the set."""
    import dask.array as da
    import scipy.sparse as sp

    from dask_streamsvm import BudgetedSVC, LinearSVC, OnePassSVC
    from dask_streamsvm.features import PolynomialMap

    X, y3 = _data()
    y2 = (y3 > 0).astype(np.int64)
    weights = np.linspace(0.5, 2.0, X.shape[0])
    Xd = da.from_array(X, chunks=100)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    Xsd = da.from_array(Xs.toarray(), chunks=100).map_blocks(sp.csr_matrix)
    fits = {}

    def linear(name, X_, y_, **params):
        sample_weight = params.pop("sample_weight", None)
        base = {"tol": 1e-4, "max_iter": 60, "random_state": 0, "cache_bytes": "40KB", "deterministic": True}
        clf = LinearSVC(**{**base, **params})
        if sample_weight is not None:
            clf.fit(X_, y_, sample_weight=sample_weight)
        else:
            clf.fit(X_, y_)
        fits[name] = _arrays(clf)

    import warnings

    from sklearn.exceptions import ConvergenceWarning

    warnings.simplefilter("ignore", ConvergenceWarning)
    for solver in ("memory", "streamsvm", "sbm", "bm"):
        data = (X, y2) if solver == "memory" else (Xd, da.from_array(y2, chunks=100))
        data3 = (X, y3) if solver == "memory" else (Xd, da.from_array(y3, chunks=100))
        linear(f"{solver}-binary", *data, solver=solver)
        linear(f"{solver}-ovr-hinge", *data3, solver=solver, loss="hinge", C=0.5)
        linear(f"{solver}-cs", *data3, solver=solver, multi_class="crammer_singer")
        linear(
            f"{solver}-weighted", *data3, solver=solver, class_weight="balanced",
            sample_weight=weights if solver == "memory" else da.from_array(weights, chunks=100),
        )  # fmt: skip
        linear(f"{solver}-poly", *data, solver=solver, feature_map=PolynomialMap(degree=2), C=0.1)
        linear(f"{solver}-proba", *data3, solver=solver, probability=True)
    linear("streamsvm-sparse", Xsd, da.from_array(y2, chunks=100), solver="streamsvm")
    linear("sbm-sparse-random", Xsd, da.from_array(y3, chunks=100), solver="sbm", cache_policy="random")
    linear("memory-sparse", Xs, y3, solver="memory")

    clf = LinearSVC(random_state=0, cache_bytes="20KB")
    for start in range(0, X.shape[0], 150):
        clf.partial_fit(X[start : start + 150], y3[start : start + 150], classes=np.unique(y3))
    fits["partial-ovr"] = _arrays(clf)
    clf = LinearSVC(random_state=0, multi_class="crammer_singer", cache_bytes="20KB")
    clf.partial_fit(Xd, da.from_array(y3, chunks=100), classes=np.unique(y3))
    fits["partial-cs-dask"] = _arrays(clf)

    fits["onepass"] = _arrays(OnePassSVC(random_state=0, lookahead=3).fit(Xd, da.from_array(y3, chunks=100)))
    fits["onepass-memory"] = _arrays(OnePassSVC(random_state=0).fit(X, y2))
    fits["budgeted"] = _arrays(BudgetedSVC(random_state=0, budget=40, max_iter=3).fit(X, y2))
    fits["budgeted-gss"] = _arrays(
        BudgetedSVC(random_state=0, budget=30, max_iter=2, merge="gss").fit(Xd, da.from_array(y3, chunks=100))
    )

    if include_cluster:
        import distributed

        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
            ) as cluster,
            distributed.Client(cluster),
        ):
            Xc = da.from_array(X, chunks=75)
            yc = da.from_array(y2, chunks=75)
            linear("cluster-average", Xc, yc, cluster="average")
            linear("cluster-cocoa", Xc, yc, cluster="cocoa", tol=1e-3, max_iter=40)
    return fits


def _arrays(clf):
    out = {}
    for name in ("coef_", "intercept_", "objective_", "duality_gap_", "probA_", "probB_", "n_iter_",
                 "support_vectors_", "dual_coef_", "n_support_", "radius_", "n_core_vectors_"):  # fmt: skip
        if hasattr(clf, name):
            value = getattr(clf, name)
            if isinstance(value, list | tuple):  # one array per problem (BudgetedSVC)
                value = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in value])
            if isinstance(value, np.ndarray) or np.isscalar(value):
                out[name] = np.asarray(value)
    return out


def _cpu():
    import numba

    return str(numba.config.CPU_NAME or __import__("llvmlite.binding").binding.get_host_cpu_name())


def write(path, fits):
    flat = {f"{model}/{attr}": value for model, arrays in fits.items() for attr, value in arrays.items()}
    flat["__cpu__"] = np.array(_cpu())
    np.savez(path, **flat)


def compare(path, fits, include_cluster=True):
    """Lines saying, per model, whether its arrays are the same bits; and whether all are."""
    saved = np.load(path)
    lines, same = [], True
    expected = {}
    for key in saved.files:
        model, _, attr = key.partition("/")
        if key != "__cpu__" and (include_cluster or not model.startswith("cluster-")):
            expected.setdefault(model, {})[attr] = saved[key]
    for model in sorted(set(expected) | set(fits)):
        if model not in fits or model not in expected:
            lines.append(f"{model}: only in {'the file' if model in expected else 'this run'}")
            same = False
            continue
        worst = 0.0
        ok = set(expected[model]) == set(fits[model])
        for attr, value in expected[model].items():
            new = fits[model].get(attr)
            if new is None or new.shape != value.shape:
                ok = False
                continue
            if not np.array_equal(new, value, equal_nan=True):
                ok = False
                worst = max(worst, float(np.nanmax(np.abs(new.astype(float) - value.astype(float)))))
        lines.append(f"{model}: " + ("same bits" if ok else f"DIFFERS (largest difference {worst:.3g})"))
        same = same and ok
    return lines, same, str(saved["__cpu__"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="PATH")
    group.add_argument("--check", metavar="PATH")
    parser.add_argument("--no-cluster", action="store_true", help="skip the two cluster fits")
    args = parser.parse_args(argv)
    fits = models(include_cluster=not args.no_cluster)
    if args.write:
        write(args.write, fits)
        print(f"wrote {len(fits)} models to {args.write}")
        return 0
    lines, same, cpu = compare(args.check, fits, include_cluster=not args.no_cluster)
    print("\n".join(lines))
    print(f"{'all same bits' if same else 'SOME MODELS DIFFER'} (file written on {cpu}, this CPU {_cpu()})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

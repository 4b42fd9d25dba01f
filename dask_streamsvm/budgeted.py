"""``BudgetedSVC``: a Gaussian-kernel SVM on a budget of support vectors (BSGD with merging)."""

import os

import numpy as np
from sklearn.utils import check_random_state

from ._stream_classifier import StreamClassifier
from ._validation import check_choice, check_positive_float, check_positive_int
from .engine.layout import as_kernel_rows
from .engine.reader import Reader
from .engine.source import DaskSource, is_dask_collection
from .io import open_path
from .kernels import bsgd as kb

MERGES = {"gss": kb.GSS, "gss-precise": kb.GSS_PRECISE, "lookup-h": kb.LOOKUP_H, "lookup-wd": kb.LOOKUP_WD}
_TABLES = {}


def merge_tables():
    """``(h, WD)`` on the 401 x 401 grid of [0, 1]^2, by golden section search to 1e-10.

    Computed on first use (about a second) and kept for the process.
    """
    if "tables" not in _TABLES:
        _TABLES["tables"] = kb.build_tables(kb.GRID, 1e-10)
    return _TABLES["tables"]


class BudgetedSVC(StreamClassifier):
    """Kernel SVM (Gaussian kernel) trained by budgeted SGD, merging support vectors.

    Budgeted stochastic gradient descent (Wang, Crammer & Vucetic 2012) on
    ``lambda/2 ||w||^2 + mean hinge loss`` with ``lambda = 1 / (n C)``, the
    model ``w = sum_j alpha_j phi(sv_j)`` kept to at most ``budget`` support
    vectors: when a step adds one too many, the vector with the smallest
    ``|alpha|`` is merged with the same-label vector whose merge degrades
    ``w`` least (Glasmachers & Qaadan 2018, Algorithm 1).  The merge
    coefficient comes from golden section search, or from precomputed
    tables of the merge problem (``merge``).  One-vs-rest for more than two
    classes.  No intercept: the Gaussian kernel does without.

    Parameters
    ----------
    C : float, default=1.0
        ``lambda = 1 / (n_samples C)``.
    gamma : float or "scale", default="scale"
        Kernel ``exp(-gamma ||x - x'||^2)``; "scale" is scikit-learn's
        ``1 / (n_features * X.var())`` (one more read of a Dask collection).
    budget : int, default=500
        Most support vectors per one-vs-rest problem.
    max_iter : int, default=20
        Passes (epochs) over the data.
    merge : {"lookup-wd", "lookup-h", "gss", "gss-precise"}, default="lookup-wd"
        How a merge is chosen: tables of the weight degradation ``WD(m, kappa)``
        (partner) and ``h(m, kappa)`` (merged point), of ``h`` alone, or golden
        section search to 0.01 ("gss", the reference implementation's
        precision) or 1e-10.  The tables are 400 x 400 cells over
        ``[0, 1]^2``, computed once to 1e-10, read by bilinear interpolation.
    shuffle : bool, default=True
        A random row order every epoch (partitions and rows within them).
    prefetch : int, default=2
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_vectors_ : list of ndarray, one (n_support, n_features) per problem
    dual_coef_ : list of ndarray, one (n_support,) per problem
    n_support_ : ndarray of shape (n_problems,)
    gamma_ : float
    merge_stats_ : dict
        ``steps`` (SGD steps), ``margin_violations``, ``merges``,
        ``removals`` (no same-label partner), ``merge_frequency`` (budget
        maintenance events per step), ``merge_seconds`` and ``fit_seconds``.
    n_iter_ : int
        Epochs run (``partial_fit`` counts its calls).
    n_features_in_ : int
    """

    def __init__(
        self,
        C=1.0,
        *,
        gamma="scale",
        budget=500,
        max_iter=20,
        merge="lookup-wd",
        shuffle=True,
        prefetch=2,
        random_state=None,
    ):
        self.C = C
        self.gamma = gamma
        self.budget = budget
        self.max_iter = max_iter
        self.merge = merge
        self.shuffle = shuffle
        self.prefetch = prefetch
        self.random_state = random_state

    def _check_params(self):
        check_positive_float("C", self.C)
        check_positive_int("budget", self.budget, low=2)
        check_positive_int("max_iter", self.max_iter)
        check_choice("merge", self.merge, tuple(MERGES))
        check_positive_int("prefetch", self.prefetch)
        if not (isinstance(self.gamma, str) and self.gamma == "scale"):
            check_positive_float("gamma", self.gamma)

    # -- training -----------------------------------------------------------------------

    def fit(self, X, y, *, _shadow=None):
        """Train for ``max_iter`` epochs on ``X``, ``y`` (in memory, Dask, or a path)."""
        import time

        start = time.perf_counter()
        self._check_params()
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        rng = check_random_state(self.random_state)
        if is_dask_collection(X):
            source = DaskSource(X, y)
            classes, counts, _ = source.label_counts()
            self.n_features_in_ = source.n_input_features
            names = source.feature_names
            if names is not None and all(isinstance(c, str) for c in source.column_labels):
                self.feature_names_in_ = names
            else:
                self.__dict__.pop("feature_names_in_", None)
            gamma = self._gamma_of_source(source)
            self._start(classes, int(counts.sum()), gamma, _shadow)
            seed = int(rng.randint(np.iinfo(np.int32).max))
            with Reader(source, prefetch=self.prefetch, max_passes=self.max_iter, shuffle=bool(self.shuffle),
                        seed=seed) as reader:  # fmt: skip
                while (item := reader.get())[0] != "done":
                    if item[0] == "block" and item[2].n_rows > 0:
                        self._steps(item[2].X, item[2].y, item[2].order)
        else:
            X, y = self._validated(X, y, reset=True)
            gamma = self._gamma_of(X)
            self._start(np.unique(y), X.shape[0], gamma, _shadow)
            for _ in range(self.max_iter):
                order = rng.permutation(X.shape[0]) if self.shuffle else np.arange(X.shape[0])
                self._steps(X, y, order)
        self.n_iter_ = int(self.max_iter)
        self._set_model(time.perf_counter() - start)
        return self

    def partial_fit(self, X, y, classes=None):
        """One pass over a block of a stream, in its order (``classes`` on the first call).

        ``lambda = 1 / (n C)`` takes ``n`` from the first block (a Dask
        collection's row count, or from :meth:`fit`) and keeps it, since the
        coefficients are stored scaled by ``1 / (lambda t)``.
        """
        import time

        start = time.perf_counter()
        self._check_params()
        first = not hasattr(self, "_state")
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            classes = np.unique(np.asarray(classes))
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if is_dask_collection(X):
            source = DaskSource(X, y)
            if first:
                self.n_features_in_ = source.n_input_features
                n = int(source.label_counts()[1].sum())
                self._start(classes, n, self._gamma_of_source(source), None)
            elif source.n_input_features != self.n_features_in_:
                raise ValueError(
                    f"X has {source.n_input_features} features, but BudgetedSVC is expecting "
                    f"{self.n_features_in_} features as input."
                )
            with Reader(source, prefetch=self.prefetch, max_passes=1, shuffle=False, seed=0) as reader:
                while (item := reader.get())[0] != "done":
                    if item[0] == "block" and item[2].n_rows > 0:
                        self._steps(item[2].X, item[2].y, item[2].order)
        else:
            X, y = self._validated(X, y, reset=first)
            if first:
                self._start(classes, X.shape[0], self._gamma_of(X), None)
            self._steps(X, y, np.arange(X.shape[0]))
        self.n_iter_ = 1 if first else self.n_iter_ + 1
        before = 0.0 if first else self.merge_stats_["fit_seconds"]
        self._set_model(before + time.perf_counter() - start)
        return self

    def _gamma_of(self, X):
        if not isinstance(self.gamma, str):
            return float(self.gamma)
        if hasattr(X, "multiply"):
            mean = X.mean()
            var = X.multiply(X).mean() - mean * mean
        else:
            var = X.var()
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0

    def _gamma_of_source(self, source):
        """``gamma`` for a Dask source: "scale" reads the collection once for the variance."""
        if not isinstance(self.gamma, str):
            return float(self.gamma)
        total = square = count = 0.0
        with Reader(source, prefetch=self.prefetch, max_passes=1, shuffle=False, seed=0) as reader:
            while (item := reader.get())[0] != "done":
                if item[0] == "block":
                    X = item[2].X
                    values = X.data if hasattr(X, "data") and not isinstance(X, np.ndarray) else X
                    total += float(np.sum(values, dtype=np.float64))
                    square += float(np.sum(np.square(values, dtype=np.float64)))
                    count += X.shape[0] * X.shape[1]
        if count == 0:
            return 1.0
        var = square / count - (total / count) ** 2
        return 1.0 / (source.n_input_features * var) if var > 0 else 1.0

    def _start(self, classes, n_samples, gamma, shadow):
        k = self._check_classes(classes, "BudgetedSVC")
        B = int(self.budget)
        width = self.n_features_in_ + 1  # the kernels' row layout: a bias slot, left at 0
        self.gamma_ = float(gamma)
        self._lam = 1.0 / (max(n_samples, 1) * float(self.C))
        self._state = {
            "t": np.ones(1, dtype=np.int64),
            "SV": np.zeros((k, B + 1, width)),
            "SVSQ": np.zeros((k, B + 1)),
            "BETA": np.zeros((k, B + 1)),
            "n_sv": np.zeros(k, dtype=np.int64),
            "stats": np.zeros((k, 5), dtype=np.int64),
            "merge_seconds": np.zeros(k),
        }
        self._method = MERGES[self.merge]
        self._shadow = -1 if shadow is None else MERGES[shadow]
        lookup = self._method in (kb.LOOKUP_H, kb.LOOKUP_WD) or self._shadow in (kb.LOOKUP_H, kb.LOOKUP_WD)
        self._tables = merge_tables() if lookup else (np.zeros((2, 2)), np.zeros((2, 2)))

    def _steps(self, X, y, order):
        s = self._state
        H, W = self._tables
        kb.bsgd_block(
            as_kernel_rows(X), np.ascontiguousarray(self._signs(y)), np.asarray(order, dtype=np.int64),
            self.gamma_, self._lam, int(self.budget), self._method, self._shadow, s["t"], s["SV"], s["SVSQ"],
            s["BETA"], s["n_sv"], H, W, s["stats"], s["merge_seconds"],
        )  # fmt: skip

    def _set_model(self, seconds):
        s = self._state
        steps = int(s["t"][0]) - 1
        self._scale = 1.0 / (self._lam * max(steps, 1))
        self.n_support_ = s["n_sv"].copy()
        self.support_vectors_ = [s["SV"][c, :n, :-1].copy() for c, n in enumerate(self.n_support_)]
        self.dual_coef_ = [s["BETA"][c, :n] * self._scale for c, n in enumerate(self.n_support_)]
        stats = s["stats"].sum(axis=0)
        problems = s["stats"].shape[0]
        self.merge_stats_ = {
            "steps": steps,
            "margin_violations": int(stats[4]),
            "merges": int(stats[0]),
            "removals": int(stats[1]),
            "merge_frequency": float((stats[0] + stats[1]) / max(steps * problems, 1)),
            "shadow_decisions": int(stats[2]),
            "equal_decisions": int(stats[3]),
            "merge_seconds": float(s["merge_seconds"].sum()),
            "fit_seconds": float(seconds),
        }

    # -- prediction ---------------------------------------------------------------------

    def _scores(self, X):
        s = self._state
        out = np.zeros((X.shape[0], s["SV"].shape[0]))
        rows = as_kernel_rows(X)
        kb.predict_block(rows, s["SV"], s["SVSQ"], s["BETA"], s["n_sv"], self.gamma_, self._scale, out)
        return out[:, 0] if out.shape[1] == 1 else out

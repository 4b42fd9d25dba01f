"""``BudgetedSVC``: a Gaussian-kernel SVM on a budget of support vectors (BSGD with merging).

Wang, Crammer & Vucetic (JMLR 2012), budget maintenance by merging as
Glasmachers & Qaadan (2018) run it, with their lookup tables: the estimator
checks parameters and input; the steps are
:class:`~dask_streamsvm.engine.models.budgeted.BSGD` (the driver) and
:mod:`dask_streamsvm.kernels.bsgd` (the kernels, with the maths).
"""

import time
import warnings

import numpy as np
from sklearn.exceptions import EfficiencyWarning
from sklearn.utils import check_random_state

from ._fit_context import fitted_in_context
from ._persist import (
    ModelFile,
    check_shapes,
    count,
    declared_classes,
    declared_shape,
    distinct_classes,
    feature_names,
    integers,
    names_of,
    number,
    real,
)
from ._stream_classifier import StreamClassifier
from ._validation import boolean, checked_params, cost, integer, one_of, positive_float_or, verbosity
from ._validation import random_state as random_state_check
from .engine.data.labels import SORTED_LABEL_MIX, merge_label_counts, order_label_mix, partition_label_mix
from .engine.data.reader import read_blocks
from .engine.models.budgeted import (
    BSGD,
    MAX_C,
    MERGE_COUNTERS,
    MERGES,
    best_offsets,
    check_budget,
    linear_advice,
    mean_nonzeros,
    scale_gamma,
    scale_gamma_of_source,
)

# Seconds a BSGD step takes per support vector of the budget, for the estimate a fit warns with:
# measured (2026-11-30, 2 cores, load 1-1.5, 2 epochs of 20,000 rows, budget 100 and 500) 23-46 ns on
# dense rows of 3 and 20 features and on a9a's sparse rows (14 nonzeros), merges included.
STEP_SECONDS_PER_SV = 30e-9
# A fit estimated to take longer than this warns before it starts (FitCostWarning).
COST_WARNING_SECONDS = 60.0


class FitCostWarning(UserWarning):
    """A :class:`BudgetedSVC` fit estimated to take longer than :data:`COST_WARNING_SECONDS`, said
    before it starts, with what costs less; or its rows read in an order sorted by label, which its
    shuffling cannot mix and which costs accuracy."""


class BudgetedSVC(ModelFile, StreamClassifier):
    """Kernel SVM (Gaussian kernel) trained by budgeted SGD, merging support vectors.

    Budgeted stochastic gradient descent (Wang, Crammer & Vucetic 2012) on
    ``lambda/2 ||w||^2 + mean hinge loss`` with ``lambda = 1 / (n C)``, the
    model ``w = sum_j alpha_j phi(sv_j)`` kept to at most ``budget`` support
    vectors: when a step adds one too many, the vector with the smallest
    ``|alpha|`` is merged with the same-label vector whose merge degrades
    ``w`` least (Glasmachers & Qaadan 2018, Algorithm 1).  The merge
    coefficient comes from golden section search, or from precomputed
    tables of the merge problem (``merge``).  One-vs-rest for more than two
    classes.  The decision function is ``w . phi(x) + b`` with the bias of
    the paper's objective, not regularised (``fit_intercept``).

    Parameters
    ----------
    C : float, default=1.0
        ``lambda = 1 / (n_samples C)``; from 1e-150 to 1e150.
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
    fit_intercept : bool, default=True
        Learn the offset ``b`` of the paper's objective ``lambda/2 ||w||^2
        + mean hinge loss of w . phi(x) + b``, where it is not regularised:
        after the last epoch, ``b`` minimises the training rows' hinge loss
        for the final ``w`` exactly (every ``b`` between the
        ``n_positive``-th and the next smallest ``y_i - f(x_i)`` does; the
        midpoint is taken).  It costs one more pass of predictions over
        the training rows (in memory), or two more reads of a Dask
        collection (typically three above a million rows).  The budget's merges move the model's offset from
        epoch to epoch, and the last iterate's can be far off: on UCI Adult
        (B = 100, 20 epochs) test accuracy over 5 seeds went from
        81.3 +- 3.1% without it to 84.7 +- 0.1% with it.  ``partial_fit``
        fits ``b`` on the rows of its call (for each problem whose rows
        hold both labels; otherwise ``b`` stays as it was).
    shuffle : bool, default=True
        A random row order every epoch (partitions and rows within them).
    prefetch : int, default=2
    verbose : int, default=0
        With 1 or more, :meth:`fit` prints a line to standard output after
        every epoch: the epoch of ``max_iter``, the rows it read, the
        support vectors per problem, the merges so far and the seconds
        since the fit's first epoch began.
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_vectors_ : list of ndarray, one (n_support, n_features) per problem
    dual_coef_ : list of ndarray, one (n_support,) per problem
    intercept_ : ndarray of shape (n_problems,)
        The offset ``b`` of each problem (zeros without ``fit_intercept``).
    n_support_ : ndarray of shape (n_problems,)
    gamma_ : float
    merge_stats_ : dict
        ``steps`` (SGD steps), ``margin_violations``, ``merges``,
        ``removals`` (no same-label partner), ``merge_frequency`` (budget
        maintenance events per step), ``merge_seconds`` (budget maintenance,
        timed by the CPU's time-stamp counter; nan on a CPU without one) and
        ``fit_seconds``.
    n_iter_ : int
        Epochs run (``partial_fit`` counts its calls).
    n_features_in_ : int
    feature_names_in_ : ndarray of str, only when X has string column names

    Notes
    -----
    **Wide, sparse data** (text, hashed features): a linear model is the
    right tool there.  :class:`~dask_streamsvm.LinearSVC` (or
    :class:`~dask_streamsvm.LogisticRegression`, with ``C`` tuned) is as
    accurate and hundreds of times faster, and ``fit`` says so with an
    ``sklearn.exceptions.EfficiencyWarning`` when the rows have 1,000
    features or more and hold on average 5% of them or fewer (in memory:
    all rows; a Dask collection: its first block).  On a 7,770 x 8,315
    text-like set (``python -m benchmarks.bench_budgeted --text``, about 30
    nonzeros a row) ``LinearSVC()`` reached a test F1 of 0.73 in 0.02 s;
    ``BudgetedSVC()`` 0.003 in 7 s, and 0.735 with ``C=16``.  The defaults
    are scikit-learn's ``SVC`` defaults (``C=1``, ``gamma="scale"``), and
    on such rows they regularise far harder than the linear model's
    ``C=1``: two unit rows with no feature in common have ``k = exp(-2
    gamma)``, the kernel varies little around that, and its linear part
    carries a factor ``2 gamma exp(-2 gamma)`` (0.27 at ``gamma = 1``), so
    the kernel model needs ``C`` several times the linear one's.

    **Cost.** A step costs ``O(budget x nonzeros of the row)`` (the support
    vectors are stored by feature, so a row's dot with all of them reads
    one contiguous run per nonzero), a merge a pass over the features of
    the two vectors it merges plus ``O(budget x their nonzeros)``.  The
    model holds ``budget + 1`` dense vectors of ``n_features`` values per
    one-vs-rest problem.  ``fit`` estimates its time as rows x epochs x
    problems x budget x :data:`STEP_SECONDS_PER_SV` (30 ns, measured on 2
    cores with merges included) and warns before it starts
    (:class:`FitCostWarning`) past :data:`COST_WARNING_SECONDS` (a minute);
    it warns too where the rows come sorted by label (partitions of one
    class, or ``shuffle=False`` in memory), an order its shuffling cannot
    mix.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm import BudgetedSVC
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [3.0, 3.0], [3.1, 2.9]])
    >>> y = np.array([0, 0, 1, 1])
    >>> clf = BudgetedSVC(budget=2, max_iter=5, random_state=0).fit(X, y)
    >>> clf.predict([[2.9, 3.2], [0.2, -0.1]])
    array([1, 0])
    >>> clf.n_support_  # at most the budget per problem
    array([2])
    """

    # The engine driver a fit builds (a test substitutes one that also counts a shadow method's choices).
    _driver = BSGD

    def __init__(
        self,
        C=1.0,
        *,
        gamma="scale",
        budget=500,
        max_iter=20,
        merge="lookup-wd",
        fit_intercept=True,
        shuffle=True,
        prefetch=2,
        verbose=0,
        random_state=None,
    ):
        super().__init__(C, shuffle=shuffle, prefetch=prefetch, random_state=random_state)
        self.gamma = gamma
        self.budget = budget
        self.max_iter = max_iter
        self.merge = merge
        self.fit_intercept = fit_intercept
        self.verbose = verbose

    _parameter_constraints = {
        "C": cost(
            "the support vectors' weights are about n_samples * C / t in size, and outside the range "
            "they or lambda = 1 / (n_samples C) leave float64's normal numbers.",
            high=MAX_C,
        ),
        "budget": integer(low=2),
        "max_iter": integer(),
        "merge": one_of(*MERGES),
        "prefetch": integer(),
        "gamma": positive_float_or("scale"),
        "fit_intercept": boolean,
        "shuffle": boolean,
        "verbose": verbosity,
        "random_state": random_state_check,
    }

    # -- training -----------------------------------------------------------------------

    def fit(self, X, y):
        """Train for ``max_iter`` epochs on ``X``, ``y`` (in memory, Dask, or a path)."""
        return fitted_in_context(self, BudgetedSVC._fit, X, y, scored=(X, y))

    def _fit(self, params, X, y):
        start = time.perf_counter()
        source, X, y = self._input(X, y, reset=True)
        check_budget(params["budget"], 1, self.n_features_in_)  # before the labels' read: one problem or more
        rng = check_random_state(self.random_state)
        if source is not None:
            classes, n_rows = self._counted(source, params)
            self._start(classes, n_rows, params, source, X)
            seed = int(rng.randint(np.iinfo(np.int32).max))
            blocks = self._epoch_blocks(source, params["max_iter"], bool(self.shuffle), seed)
            self._bsgd.stream(blocks, params["max_iter"], on_epoch=self._on_epoch(params))
        else:
            self._advise(X)
            classes = self._checked_in_memory(y, params)
            self._start(classes, X.shape[0], params, source, X)
            on_epoch = self._on_epoch(params)
            self._bsgd.epochs(X, self._signs(y), params["max_iter"], rng if self.shuffle else None, on_epoch)
        self._fit_offsets(source, X, y)
        self.n_iter_ = params["max_iter"]
        self._set_model(time.perf_counter() - start)
        return self

    def partial_fit(self, X, y, classes=None):
        """One pass over a block of a stream, in its order (``classes`` on the first call).

        ``lambda = 1 / (n C)`` takes ``n`` from the first block (a Dask
        collection's row count, or from :meth:`fit`) and keeps it, since the
        coefficients are stored scaled by ``1 / (lambda t)``.
        """
        return fitted_in_context(self, BudgetedSVC._partial_fit, X, y, classes, state=("_bsgd", "_offsets"))

    def _partial_fit(self, params, X, y, classes):
        start = time.perf_counter()
        first = not hasattr(self, "_bsgd")
        classes = self._partial_fit_classes(classes, first=first)
        source, X, y = self._input(X, y, reset=first)
        if first:
            check_budget(params["budget"], 1, self.n_features_in_)
        if source is not None:
            if first:
                self._start(classes, int(source.label_counts()[1].sum()), params, source, X)
            for b, (rows, signs, order) in enumerate(self._signed_blocks(source)):
                if first and b == 0:
                    self._advise(rows)
                self._bsgd.steps(rows, signs, order)
        else:
            if first:
                self._advise(X)
                self._start(classes, X.shape[0], params, source, X)
            self._bsgd.steps(X, self._signs(y), np.arange(X.shape[0]))
        self._fit_offsets(source, X, y)
        self.n_iter_ = 1 if first else self.n_iter_ + 1
        before = 0.0 if first else self.merge_stats_["fit_seconds"]
        self._set_model(before + time.perf_counter() - start)
        return self

    def _epoch_blocks(self, source, passes, shuffle, seed):
        """``(epoch, rows, signs, order)`` of every block of ``passes`` reads of ``source`` that has
        rows; the first block's rows are checked for a linear model's case (:meth:`_advise`)."""
        first = True
        blocks = read_blocks(source, passes=passes, prefetch=self.prefetch, shuffle=shuffle, seed=seed)
        for epoch, block in blocks:
            if block.n_rows == 0:
                continue
            if first:
                self._advise(block.X)
                first = False
            yield epoch, block.X, self._signs(block.y), block.order

    def _on_epoch(self, params):
        """The engine's ``on_epoch`` hook: with ``verbose`` a line per epoch to standard output,
        flushed, and an ``epoch`` task for scikit-learn's callbacks (:mod:`.._fit_tasks`, with the
        model after the epoch); None for neither."""
        tasks = self.__dict__.get("_fit_tasks")
        if not params["verbose"] and tasks is None:
            return None

        def on_epoch(epoch, info):
            if params["verbose"]:
                vectors = info["support_vectors"]
                shown = vectors[0] if len(vectors) == 1 else vectors
                print(
                    f"BudgetedSVC epoch {epoch + 1} of {info['epochs']}: {info['rows']:,} rows, "
                    f"support vectors {shown}, {info['merges']:,} merges so far, {info['seconds']:.2f} s",
                    flush=True,
                )
            if tasks is not None:
                tasks.step("epoch", self._epoch_model)

        return on_epoch

    def _epoch_model(self):
        """The fitted attributes of the model after an epoch, for scikit-learn's callbacks: its
        offsets are those before the fit's last step fits them (``fit_intercept``)."""
        names = self._get_param_names()
        fitted = {k: v for k, v in vars(self).items() if k not in names and k != "_fit_tasks"}
        support_vectors, dual_coef = self._bsgd.support()
        return {
            **fitted,
            "n_support_": self._bsgd.state.n_sv.copy(),
            "support_vectors_": support_vectors,
            "dual_coef_": dual_coef,
            "intercept_": self._offsets.copy(),
        }

    def _counted(self, source, params):
        """``(classes, rows)`` of a Dask ``source`` from one read of its labels, with the warnings
        of a fit that will cost long (:meth:`_warn_cost`) or read its partitions sorted by label."""
        per_partition = source.label_counts(merged=False)
        ids = [source.partition_id(p) for p in range(len(per_partition))]
        classes, counts, *_ = merge_label_counts(per_partition, partitions=ids)
        self._warn_cost(int(counts.sum()), classes.shape[0], params)
        self._warn_sorted(partition_label_mix(per_partition), "of a partition", "the partitions")
        return classes, int(counts.sum())

    def _checked_in_memory(self, y, params):
        """The classes of the labels ``y`` in memory, with the warnings of :meth:`_counted` (the order
        only where ``shuffle=False`` keeps it)."""
        classes, index = np.unique(y, return_inverse=True)
        self._warn_cost(y.shape[0], classes.shape[0], params)
        if not self.shuffle:
            self._warn_sorted(order_label_mix(index), "next to each other", "the rows (shuffle=False)")
        return classes

    def _warn_cost(self, n_rows, n_classes, params):
        """Warn (:class:`FitCostWarning`) before a fit whose estimate, ``n_rows`` x epochs x problems x
        budget x :data:`STEP_SECONDS_PER_SV`, exceeds :data:`COST_WARNING_SECONDS`."""
        problems = 1 if n_classes <= 2 else n_classes
        seconds = n_rows * params["max_iter"] * problems * params["budget"] * STEP_SECONDS_PER_SV
        if seconds <= COST_WARNING_SECONDS:
            return
        warnings.warn(
            f"BudgetedSVC(budget={params['budget']}, max_iter={params['max_iter']}) on {n_rows:,} rows and "
            f"{problems} problem{'s' if problems > 1 else ''} is estimated to take about {seconds:,.0f} s "
            f"(rows x epochs x problems x budget x {STEP_SECONDS_PER_SV * 1e9:.0f} ns a support vector a "
            "step, measured on 2 cores; more on a busy machine). A smaller budget or max_iter, or a sample "
            "of the rows, costs proportionally less; a linear model (LinearSVC, or LinearSVC with "
            "feature_map=PolynomialMap() for a polynomial kernel) trains in seconds with a certificate.",
            FitCostWarning,
            stacklevel=5,
        )

    def _warn_sorted(self, mix, within, what):
        """Warn (:class:`FitCostWarning`) where two rows ``within`` differ in label less than
        :data:`~.engine.data.labels.SORTED_LABEL_MIX` as often as two rows drawn at random (``mix``):
        the SGD steps read long runs of one class, which the fit's shuffling of ``what`` cannot mix."""
        if mix is None or mix >= SORTED_LABEL_MIX:
            return
        warnings.warn(
            f"the rows come sorted by label: two rows {within} differ in label {mix:.0%} as often as two "
            f"rows drawn at random, and the fit's shuffling of {what} cannot mix them, so its SGD steps read "
            "long runs of one class, which costs accuracy. Shuffle the rows across partitions before the "
            "fit (write them in a random order; with Dask, add a column of random numbers and shuffle on "
            "it), or pass shuffle=True in memory.",
            FitCostWarning,
            stacklevel=5,
        )

    def _advise(self, X):
        """Warn (EfficiencyWarning), once a fit, when the rows ``X`` (those in memory, or a Dask
        collection's first block) are wide and sparse (:func:`.engine.models.budgeted.linear_advice`)."""
        message = linear_advice(self.n_features_in_, mean_nonzeros(X))
        if message is not None:
            warnings.warn(message, EfficiencyWarning, stacklevel=3)

    def _gamma_for(self, gamma, source, X):
        """The checked ``gamma``; "scale" from the rows ``X`` in memory, or from one more read of a Dask
        ``source``."""
        if not isinstance(gamma, str):
            return gamma
        return scale_gamma(X) if source is None else scale_gamma_of_source(source, self.prefetch)

    def _start(self, classes, n_samples, params, source, X):
        """A fresh model of the checked ``params`` for ``classes`` and ``n_samples`` rows (``lambda = 1 /
        (n C)``); ``gamma="scale"`` is learned from ``X`` or ``source`` (:meth:`_gamma_for`)."""
        gamma = self._gamma_for(params["gamma"], source, X)
        k = self._check_classes(classes, "BudgetedSVC")
        self._bsgd = self._driver(
            k,
            self.n_features_in_,
            budget=params["budget"],
            gamma=gamma,
            C=params["C"],
            n_samples=n_samples,
            merge=params["merge"],
        )
        self.gamma_ = self._bsgd.settings.gamma
        self._offsets = np.zeros(self._bsgd.state.SV.shape[0])

    def _fit_offsets(self, source, X, y):
        """With ``fit_intercept``: the offsets that minimise the training loss (the class docstring's
        ``b``) of the rows trained on, for the model as it is: in memory from ``X, y``, else from one
        more read of ``source`` per pass of the engine's search; a problem whose rows hold one label
        only keeps its offset."""
        if not self.fit_intercept:
            return
        if source is None:
            rows = [(self._signs(y), self._bsgd.scores(X).T)]  # the decision values, computed once

        def blocks():
            if source is None:
                yield from rows
                return
            for block, signs, _ in self._signed_blocks(source):
                yield signs, self._bsgd.scores(block).T

        offsets, mixed = best_offsets(blocks)
        self._offsets = np.where(mixed, offsets, self._offsets)

    def _set_model(self, seconds):
        self.n_support_ = self._bsgd.state.n_sv.copy()
        self.support_vectors_, self.dual_coef_ = self._bsgd.support()
        self.intercept_ = self._offsets.copy()
        self.merge_stats_ = {**self._bsgd.merge_stats(), "fit_seconds": float(seconds)}

    # -- prediction ---------------------------------------------------------------------

    def _scores(self, X):
        out = self._bsgd.scores(X) + self.intercept_
        return out[:, 0] if out.shape[1] == 1 else out

    # -- model files (dask_streamsvm._persist) ------------------------------------------

    def _file_state(self):
        arrays, records = self._bsgd.saved()
        arrays.update(classes_=self.classes_, intercept_=self.intercept_)
        attributes = {
            **names_of(self),
            "n_iter_": self.n_iter_,
            "fit_seconds": self.merge_stats_["fit_seconds"],
            **records,
        }
        return arrays, attributes

    def _check_file_table(self, attributes, table):
        k = declared_classes(table)
        problems = 1 if k == 2 else k
        n_features = count(attributes, "n_features_in_", low=1)
        check_budget(self.budget, problems, n_features)  # a model this machine can hold
        m = declared_shape(table, "support_vectors_", 2)[0]
        if m > problems * self.budget:
            raise ValueError(
                f"support_vectors_ holds {m} vectors, more than budget={self.budget} for each of "
                f"{problems} problem(s)"
            )
        shapes = {
            "classes_": (k,), "intercept_": (problems,), "n_support_": (problems,),
            "support_vectors_": (m, n_features), "beta": (m,), "sv_sqnorm": (m,),
            "gamma_": (1,), "lambda": (1,), "steps": (1,),
            "merge_counts": (problems, MERGE_COUNTERS), "merge_ticks": (problems,),
        }  # fmt: skip
        check_shapes(table, shapes, f"{k} classes, n_features_in_={n_features} and {m} support vectors")

    def _set_file_state(self, arrays, attributes):
        params = checked_params(self)
        classes = distinct_classes(arrays)
        n_features = count(attributes, "n_features_in_", low=1)
        names = feature_names(attributes, n_features)
        state = self._saved_support(arrays, params)
        intercept = real(arrays, "intercept_")
        if not params["fit_intercept"] and intercept.any():
            raise ValueError(
                f"intercept_ is {intercept.tolist()}, but fit_intercept is False (an offset of 0)"
            )
        state.update(
            merge_counts=integers(arrays, "merge_counts"), merge_ticks=integers(arrays, "merge_ticks")
        )
        records = {
            "kernel_seconds": number(attributes, "kernel_seconds"),
            "kernel_ticks": count(attributes, "kernel_ticks", low=0),
        }
        n_iter, seconds = count(attributes, "n_iter_", low=0), number(attributes, "fit_seconds")
        problems = state["n_support_"].shape[0]
        with np.errstate(over="ignore"):
            scale = 1.0 / (state["lambda"][0] * max(int(state["steps"][0]), 1))
            owner = np.repeat(np.arange(problems), state["n_support_"])
            reach = scale * np.bincount(owner, np.abs(state["beta"]), problems) + np.abs(intercept)
        if not np.isfinite(reach).all():
            raise ValueError(
                "dual_coef_ (beta / (lambda t)) and intercept_ are too large to score with: their absolute "
                "values sum beyond float64's largest number (1.8e308)"
            )
        driver = self._driver(
            problems, n_features, budget=params["budget"], gamma=state["gamma_"][0], C=params["C"],
            n_samples=1, merge=params["merge"], lam=state["lambda"][0],
        )  # fmt: skip
        driver.restore(state, records)
        self.classes_, self.n_features_in_, self.n_iter_ = classes, n_features, n_iter
        self.__dict__.update(names)
        self._bsgd, self.gamma_, self._offsets = driver, driver.settings.gamma, intercept
        self._set_model(seconds)

    @staticmethod
    def _saved_support(arrays, params):
        """The support vectors a model file holds, checked: their counts within the budget, the steps
        taken and the rows saved, their squared norms as the vectors give them, ``gamma_`` the
        parameter's (unless "scale") and ``lambda`` at most ``1 / C``."""
        n_support = integers(arrays, "n_support_", high=params["budget"])
        vectors, steps = real(arrays, "support_vectors_"), integers(arrays, "steps")
        if n_support.sum() != vectors.shape[0]:
            raise ValueError(
                f"n_support_ {n_support.tolist()} sums to {n_support.sum()}, but support_vectors_ holds "
                f"{vectors.shape[0]} vectors"
            )
        if (n_support > steps[0]).any():
            raise ValueError(
                f"n_support_ {n_support.tolist()} counts more vectors than the {steps[0]} steps taken"
            )
        sqnorm = real(arrays, "sv_sqnorm", low=0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            norms = np.einsum("ij,ij->i", vectors, vectors)
            off = ~(np.abs(sqnorm - norms) <= 1e-9 * norms)
        if off.any():
            j = int(np.flatnonzero(off)[0])
            raise ValueError(
                f"sv_sqnorm[{j}] = {float(sqnorm[j])!r} is not the squared norm of support vector {j} "
                f"({float(norms[j])!r})"
            )
        gamma, lam = real(arrays, "gamma_"), real(arrays, "lambda")
        if gamma[0] <= 0.0:
            raise ValueError(f"gamma_ must be > 0, got {float(gamma[0])!r}")
        if not isinstance(params["gamma"], str) and gamma[0] != params["gamma"]:
            raise ValueError(f"gamma_={float(gamma[0])!r} is not the parameter gamma={params['gamma']!r}")
        if not 0.0 < lam[0] <= (1.0 + 1e-12) / params["C"]:
            raise ValueError(
                f"lambda = 1 / (n_samples C) must be in (0, 1 / C], got {float(lam[0])!r} with "
                f"C={params['C']!r}"
            )
        return {
            "n_support_": n_support, "support_vectors_": vectors, "beta": real(arrays, "beta"),
            "sv_sqnorm": sqnorm, "gamma_": gamma, "lambda": lam, "steps": steps,
        }  # fmt: skip

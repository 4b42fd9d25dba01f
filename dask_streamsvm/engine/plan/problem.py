"""The fit plan, and what every schedule needs to turn labels into binary problems.

A :class:`FitPlan` is built once at the top of ``fit`` or ``partial_fit``
from the estimator's validated parameters, completed with the label tables
once the classes are known (:meth:`FitPlan.with_labels`), and handed down
unchanged: to the in-memory solvers, to :func:`~..dual.schedules.fit_stream` (every
streaming schedule, ``partial_fit`` and each cluster worker) and to the
cluster's combiners.  Nothing below the estimator parses a parameter again.

Labels.  A fit over ``k`` classes solves ``n_problems`` binary problems
(one for two classes, one per class for one-vs-rest) or one Crammer-Singer
problem stored as ``k`` rows.  A row of class ``j`` has, in problem ``c``,
the label ``signs[c, j]`` (+1/-1) and the cost
``C_i = costs[c, j] * sample_weight_i``; :func:`encode_block` applies the
tables to a block's raw labels.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.extmath import safe_sparse_dot

from ...kernels.features import spec_width
from ...kernels.layout import column_largest_bits
from ...kernels.objective import decision_values
from . import losses
from .calibration import held_out
from .layout import MAGNITUDE_BITS, kernel_rows, read_only

# The losses a plan accepts, by name: :data:`.losses.LOSSES`, where each loss's pieces are; those of
# the SVM (``LinearSVC(loss=...)``), and the one of logistic regression.
LOSSES = tuple(losses.LOSSES)
SVM_LOSSES = losses.SVM_LOSSES
LOGISTIC_LOSS = losses.LOGISTIC.name
# What a Crammer-Singer plan records as its loss, whatever the estimator's ``loss``: its own loss
# is a boxed one of the margins, and its dual box is this loss's (``alpha <= C``).
CRAMMER_SINGER_LOSS = losses.CRAMMER_SINGER.name
# The solver names, declared once: the streaming schedules (:data:`..dual.schedules.TRAINERS`), and
# what ``solver=`` accepts (``"auto"`` lets :func:`..fit.fit` choose, by :func:`..choice.streams`).
STREAMING_SOLVERS = ("streamsvm", "sbm", "bm")
# The share of cache_bytes that SBM's cache takes where solver="auto" chose it (FitPlan.scheduled),
# its blocks the rest: the SBM paper's SBM-1/2 (Chang & Roth 2011, section 7.1: a cache and blocks of
# equal size, which reached the gap first of its splits, as in docs/benchmarks.md, "Schedules").
AUTO_SBM_CACHE = 0.5
# The band chosen from a sample (:mod:`..primal.sample_band`): streamed, not a schedule.
BAND_SOLVER = "band"
# The L1 and elastic-net penalties' solver (engine/primal/l1.py: CDN), as history_ names it.
SPARSE_PENALTY_SOLVER = "cdn"
# The multinomial (softmax) logistic model's solver (engine/primal/multinomial.py: Newton's method),
# as history_ names it.
MULTINOMIAL_SOLVER = "softmax_newton"
SOLVERS = ("auto", "memory", *STREAMING_SOLVERS, BAND_SOLVER)
# A plan's schedule: the above, and ``partial_fit``'s one pass.
PLAN_SOLVERS = (*SOLVERS, "partial")
# Which rows a cache keeps (``cache_policy=``).  Every streaming solver: "informative" (the default)
# and "random".  "paper" is StreamSVM's as its paper has it (random eviction on insertion, and the eps
# rule), for comparison; SBM, BM and partial_fit have no eps rule to keep, and refuse it.
CACHE_POLICIES = ("informative", "random", "paper")
# What ``cluster=`` may say (None: this process): the method chosen for the data, or the one named.
# The dual methods named: averaging, CoCoA+, and SBM's trainer on one worker (cluster.root_sbm).
DUAL_CLUSTER_MODES = ("average", "cocoa", "sbm")
CLUSTER_MODES = ("auto", *DUAL_CLUSTER_MODES)
ALPHA_STORES = ("memory", "disk")
# The smallest C a plan takes.  The dual variables are about C in size and the default loss's dual
# sums their squares (``D_ii alpha_i^2``), which fall below float64's smallest normal number
# (2.2e-308) under C = 1.5e-154: measured on 400 Gaussian rows, the streaming solvers certify
# C = 1e-150 and stop at C = 1e-160 with a negative duality gap, blaming the data (and below
# 2.2e-308, C itself is subnormal: C = 1e-320 did so in every dual solver).
MIN_C = 1e-150


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {name}={value!r}.")


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {name}={value!r}.")


@dataclass(frozen=True, eq=False)
class FitPlan:
    """Everything a fit trains with, checked once.

    Parameters of the problem
        ``C``, ``loss`` (a name of :data:`LOSSES`; :data:`CRAMMER_SINGER_LOSS`
        for Crammer-Singer), ``penalty`` (its name, for messages) and
        ``l1_ratio`` (``r`` of ``r ||w||_1 + (1 - r)/2 ||w||^2``; 0: the L2
        penalty), ``crammer_singer``, ``multinomial`` (the softmax model
        of logistic regression over all classes at once, its intercept
        unpenalised: :mod:`..primal.multinomial`), ``multinomial_auto`` (the
        softmax model if the classes, once counted, call for it:
        ``multi_class="auto"``, settled by :meth:`settled`),
        ``class_weight`` (None, ``"balanced"`` or a dict), ``bias`` (the
        constant feature's value, 0 for none), ``feature_map`` (a map's spec
        record array, or None).
    Stopping
        ``tol`` (relative duality gap), ``max_iter`` (reader passes).
    Schedule
        ``solver`` (``"memory"``, ``"streamsvm"``, ``"sbm"``, ``"bm"`` or
        ``"partial"``; ``"auto"`` until :func:`~..fit.fit` chooses), ``dual``
        (``"auto"``, True or False: whether the primal Newton solver may or
        must run), ``cluster`` (None, ``"average"`` or ``"cocoa"``),
        ``cache_bytes`` (bytes, ``0`` for BM; None while ``cache_share``, a
        share of the rows' bytes such as 0.1, waits for the rows to be
        counted: :meth:`FitPlan.with_cache_bytes`), ``block_bytes`` (SBM and
        BM; None: the papers' split, ``cache_bytes`` for SBM and twice it
        for BM; with ``"auto"`` None until :meth:`FitPlan.scheduled`),
        ``inner_iter``, ``cache_policy``, ``deterministic`` (StreamSVM's
        count-based schedule), ``prefetch``, ``shuffle``,
        ``retries``, ``read_timeout`` (seconds a partition's read may
        take, or None), ``alpha_store``, ``spill`` and ``spill_dir`` (the
        parsed partitions' binary copy, :meth:`~..data.source.DaskSource.spilling`).
    Seeds
        ``random_state`` (the estimator's, which the seeds are drawn from),
        ``seed`` (row permutations, evictions, partition order) and
        ``calibration_seed`` (the held-out rows of Platt scaling, or None).
    Extras
        ``probability`` (fit Platt's sigmoids), ``scaler`` (an unfitted
        :class:`~dask_streamsvm.features.Standardize` whose scales one read
        learns, or None).
    Labels (set by :meth:`with_labels`)
        ``classes``, ``signs`` and ``costs`` of shape ``(n_problems,
        n_classes)``, ``labels`` (the class each problem's history records
        name), and the label counts they came from: ``counts`` (rows per
        class), ``weighted_classes`` (the classes with positive weight) and
        ``class_totals`` (the sample weight of each class's rows, which
        ``class_weight="balanced"`` weighs by), which a checkpoint keeps so
        that a resumed fit need not count again.
    """

    C: float = 1.0
    loss: str = losses.DEFAULT.name
    penalty: str = "l2"  # as the estimator names it, for messages: "l2", "l1" or "elasticnet"
    l1_ratio: float = 0.0  # r of r ||w||_1 + (1 - r)/2 ||w||^2: 0 the L2 penalty, 1 pure L1
    estimator: str = "LinearSVC"  # the model's name, in messages
    crammer_singer: bool = False
    multinomial: bool = False
    multinomial_auto: bool = False
    class_weight: object = None
    bias: float = 1.0
    feature_map: object = None
    tol: float = 1e-3
    max_iter: int = 1000
    solver: str = "streamsvm"
    dual: object = True
    cluster: str = None
    cache_bytes: int = 10**9
    block_bytes: int = None
    cache_share: float = None
    inner_iter: int | None = None
    cache_policy: str = "informative"
    deterministic: bool = False
    prefetch: int = 2
    shuffle: bool = True
    retries: int = 0
    read_timeout: float = None
    alpha_store: str = "memory"
    spill: object = "auto"
    spill_dir: object = None
    random_state: object = None
    seed: int = 0
    calibration_seed: int = None
    probability: bool = False
    scaler: object = None
    classes: np.ndarray = None
    signs: np.ndarray = None
    costs: np.ndarray = None
    labels: tuple = None
    counts: np.ndarray = None
    weighted_classes: np.ndarray = None
    class_totals: np.ndarray = None

    def __post_init__(self):
        number = isinstance(self.C, int | float | np.integer | np.floating) and not isinstance(self.C, bool)
        if not (number and MIN_C <= self.C < np.inf):
            raise ValueError(
                f"C must be a finite number >= {MIN_C:g}, got C={self.C!r}: below it the dual variables "
                "(about C in size) and their squares underflow float64, and no fit can be certified. "
                f"Pass C >= {MIN_C:g} (LinearSVC's default is 1.0)."
            )
        _check_choice("loss", self.loss, LOSSES)
        _check_choice("solver", self.solver, PLAN_SOLVERS)
        _check_choice("dual", self.dual, ("auto", True, False))
        if self.cache_share is not None:
            if not 0 < self.cache_share:
                raise ValueError(f"cache_share must be > 0, got cache_share={self.cache_share!r}.")
            return self._check_rest()  # the byte sizes wait for the rows to be counted
        _check_int("cache_bytes", self.cache_bytes, 0)
        if self.block_bytes is None and self.solver != "auto":  # "auto": set with the schedule
            # (scheduled); a solver named: the papers' split, SBM-1/2, and BM with SBM's memory
            block = self.cache_bytes if self.solver == "sbm" else 2 * self.cache_bytes
            object.__setattr__(self, "block_bytes", max(int(block), 1))
        if self.solver == "bm":
            object.__setattr__(self, "cache_bytes", 0)
        if self.block_bytes is not None and (
            isinstance(self.block_bytes, bool)
            or not isinstance(self.block_bytes, int | np.integer)
            or (self.block_bytes <= 0)
        ):
            raise ValueError(f"block_bytes must be an integer > 0, got block_bytes={self.block_bytes!r}.")
        self._check_rest()

    def _check_rest(self):
        if not (isinstance(self.l1_ratio, float | int) and 0.0 <= self.l1_ratio <= 1.0):
            raise ValueError(f"l1_ratio must be a number in [0, 1], got l1_ratio={self.l1_ratio!r}.")
        if self.inner_iter is not None:
            _check_int("inner_iter", self.inner_iter, 1)
        _check_choice("cache_policy", self.cache_policy, CACHE_POLICIES)
        if self.cache_policy == "paper" and self.solver in ("sbm", "bm", "partial"):
            schedule = "partial_fit" if self.solver == "partial" else f"solver={self.solver!r}"
            raise ValueError(
                "cache_policy='paper' is StreamSVM's own rule (solver='streamsvm', or 'auto' out of "
                f"core); {schedule} takes cache_policy 'informative' or 'random'."
            )
        _check_int("prefetch", self.prefetch, 1)
        _check_int("retries", self.retries, 0)
        if self.read_timeout is not None and not self.read_timeout > 0:
            raise ValueError(f"read_timeout must be > 0 or None, got read_timeout={self.read_timeout!r}.")
        _check_choice("alpha_store", self.alpha_store, ALPHA_STORES)
        if self.multinomial:
            self._check_multinomial()
        if self.multinomial_auto and (self.multinomial or self.sparse_penalty or self.loss != LOGISTIC_LOSS):
            # "auto" keeps the one-vs-rest problems where the softmax model is not trained (an L1 part)
            object.__setattr__(self, "multinomial_auto", False)
        if self.crammer_singer and self.loss != CRAMMER_SINGER_LOSS:  # its loss is its own
            object.__setattr__(self, "loss", CRAMMER_SINGER_LOSS)

    def _check_multinomial(self):
        """What the multinomial model does not combine with: a ValueError naming it."""
        if self.l1_ratio > 0.0:
            raise ValueError(
                f"multi_class='multinomial' with {self.penalty} is not supported yet (its solver is "
                "Newton's method on the L2-penalised softmax model); use l1_ratio=0, or "
                "multi_class='ovr' for the L1 and elastic-net penalties."
            )
        if self.crammer_singer or self.loss != LOGISTIC_LOSS:
            raise ValueError(
                f"multi_class='multinomial' is logistic regression's softmax model; got loss={self.loss!r}"
                f"{' with crammer_singer' if self.crammer_singer else ''}."
            )

    @property
    def loss_code(self):
        """The kernels' code of the plan's loss (:mod:`dask_streamsvm.kernels.losses`)."""
        return losses.loss_of(self.loss).code

    @property
    def sparse_penalty(self):
        """Whether the penalty has an L1 part (``l1_ratio > 0``): the L1 solver's problem."""
        return self.l1_ratio > 0.0

    @property
    def gap_ruled_passes(self):
        """The most DCD passes a block's gap rule may take (SBM, BM, partial_fit): ``inner_iter`` or 100."""
        return 100 if self.inner_iter is None else self.inner_iter

    @property
    def fixed_passes(self):
        """Passes run as a count, no gap rule (CoCoA+ rounds, Crammer-Singer blocks): ``inner_iter`` or 10."""
        return 10 if self.inner_iter is None else self.inner_iter

    @property
    def n_problems(self):
        """Rows of ``W``: one per problem, or per class for Crammer-Singer."""
        return self.signs.shape[0]

    def replace(self, **changes):
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def scheduled(self, solver):
        """The plan of the streaming schedule ``solver`` (``"streamsvm"``, ``"sbm"`` or ``"bm"``).

        Where ``"auto"`` chose SBM and no ``block_bytes`` was given, its cache and its blocks share
        ``cache_bytes``, :data:`AUTO_SBM_CACHE` of them the cache (the SBM paper's SBM-1/2 at the
        memory of StreamSVM's cache of ``cache_bytes``): the budget the user set holds its rows (a
        partition larger than a block is trained a block-sized piece at a time, :mod:`~..dual.sbm`;
        only a single row larger than a block is held whole).  A schedule named keeps the papers'
        split (``block_bytes`` None: ``cache_bytes`` for SBM).
        """
        if self.solver != "auto" or solver != "sbm" or self.block_bytes is not None:
            return self.replace(solver=solver)
        cache = int(self.cache_bytes * AUTO_SBM_CACHE)
        return self.replace(solver=solver, cache_bytes=cache, block_bytes=max(self.cache_bytes - cache, 1))

    def with_cache_bytes(self, n_bytes):
        """The plan with its share of memory (``cache_share``) resolved to ``n_bytes``; block bytes
        not given follow from them."""
        return self.replace(cache_share=None, cache_bytes=int(n_bytes))

    def with_labels(self, classes, counts, weighted_classes, totals=None):
        """The plan with its label tables, from every class, its row count, the classes of weight and
        the sample weight of each class's rows (``totals``; None: a row weighs 1).

        See :func:`problem_tables` for the errors it raises.
        """
        joint = self.crammer_singer or self.multinomial  # one problem over every class
        totals = np.asarray(counts if totals is None else totals, dtype=np.float64)
        signs, costs = problem_tables(
            classes, totals, weighted_classes, self.C, self.class_weight, joint, self.estimator
        )
        return self.replace(
            classes=classes, signs=signs, costs=costs, labels=problem_labels(classes, self),
            counts=np.asarray(counts, dtype=np.int64), weighted_classes=weighted_classes,
            class_totals=totals,
        )  # fmt: skip

    def settled(self, softmax):
        """The plan of ``multi_class="auto"`` decided: the softmax model (``softmax`` true; its
        intercept unpenalised, so the constant feature is 1) or the one-vs-rest problems, with its
        labels set again where they were (their tables differ)."""
        if not self.multinomial_auto:
            return self
        bias = (1.0 if self.bias != 0.0 else 0.0) if softmax else self.bias
        plan = self.replace(multinomial=bool(softmax), multinomial_auto=False, bias=bias)
        if self.classes is None:
            return plan
        return plan.with_labels(self.classes, self.counts, self.weighted_classes, self.class_totals)

    def model_width(self, n_features):
        """Length of ``w`` without the bias for ``n_features`` raw features."""
        return model_width(n_features, self.feature_map)


def model_width(n_features, feature_map):
    """Length of ``w`` without the bias: the map's output width, or the raw features."""
    return n_features if feature_map is None else spec_width(feature_map)


def problem_tables(classes, totals, weighted_classes, C, class_weight, crammer_singer, estimator="LinearSVC"):
    """Labels and costs of each binary problem, by class index: ``(signs, costs)``.

    ``signs`` and ``costs`` have shape (n_problems, n_classes): a row of
    class j in problem c has label ``signs[c, j]`` and ``C_i = costs[c, j] *
    sample_weight_i``.  Binary: one problem with ``classes[1]`` positive and
    ``C * class_weight[y]``.  One-vs-rest: LIBLINEAR weights only the
    positive class of each problem.  Crammer-Singer (``crammer_singer``: a
    joint problem, the multinomial model's too): one joint problem over
    k classes, stored as k rows that share ``C * class_weight[y]``.
    """
    if classes.shape[0] < 2:
        raise ValueError(
            f"{estimator} needs samples of at least 2 classes, but the data contains "
            f"only one class: {classes.tolist()[0]!r}. Pass y with two or more distinct labels."
        )
    if weighted_classes.shape[0] == 0:
        raise ValueError(
            "sample_weight is zero for every row, so there is nothing to train on. "
            "Give some rows a positive weight."
        )
    if weighted_classes.shape[0] < 2:
        raise ValueError(
            f"{estimator} needs samples of at least 2 classes with positive sample_weight, "
            f"but only class {weighted_classes.tolist()} has any. Give rows of another class "
            "a positive weight."
        )
    if isinstance(class_weight, str):  # "balanced", as scikit-learn 1.9: by the rows' sample weight
        weights = balanced_weights(totals)
    else:
        weights = compute_class_weight(class_weight, classes=classes, y=classes)
    k = classes.shape[0]
    if crammer_singer:
        signs = np.where(np.eye(k, dtype=bool), 1.0, -1.0)
        costs = np.repeat((C * weights)[None, :], k, axis=0)
    elif k == 2:
        signs, costs = np.array([[-1.0, 1.0]]), (C * weights)[None, :]
    else:
        same = np.eye(k, dtype=bool)
        signs, costs = np.where(same, 1.0, -1.0), np.where(same, C * weights[None, :], C)
    _check_costs(costs, classes, weighted_classes, class_weight)
    return signs, costs


def _check_costs(costs, classes, weighted_classes, class_weight):
    """ValueError if a problem's every row costs zero (the rows of positive weight are all of
    classes of cost zero): nothing to train on, as with a zero ``sample_weight`` everywhere."""
    weighted = np.isin(classes, weighted_classes)
    if (costs[:, weighted] > 0).any(axis=1).all():
        return
    zero = [label for label, top in zip(classes.tolist(), costs.max(axis=0), strict=True) if not top > 0]
    raise ValueError(
        f"class_weight={class_weight!r} gives every row zero cost (C * class_weight[y] * sample_weight; "
        f"classes {zero} weigh 0), so there is nothing to train on. Give a class with rows of "
        "positive sample_weight a positive weight."
    )


def balanced_weights(totals):
    """``class_weight="balanced"``'s weight of each class, from the sample weight of its rows
    (``totals``), as scikit-learn 1.9 computes it: ``sum(totals) / (k * totals[j])``; 0 for a class
    whose rows weigh nothing (no row of it is trained on)."""
    totals = np.asarray(totals, dtype=np.float64)
    weights = np.zeros(totals.shape[0])
    present = totals > 0
    weights[present] = totals.sum() / (totals.shape[0] * totals[present])
    return weights


def problem_labels(classes, plan):
    """The class each problem's history records name (None for a joint problem: Crammer-Singer's, the
    multinomial model's)."""
    if plan.crammer_singer or plan.multinomial:
        return (None,)
    labels = classes.tolist()
    return (labels[1],) if len(labels) == 2 else tuple(labels)


def class_index(classes, y, unknown):
    """Index of each label of ``y`` in ``classes`` (sorted, as :func:`numpy.unique` gives them), int64;
    ``unknown(label)`` is the ValueError's message for a label outside them.

    Two classes of numbers (or booleans) are told apart by two comparisons, where a search places
    each label among them: on 2,000,000 int8 labels 1.8 ms against 15.5 ms, on a partition of
    100,000 0.04 against 0.7 ms (2026-12-04); every read of the streamed and in-memory fits
    indexes its labels so (:func:`encode_block`)."""
    y = np.asarray(y).ravel()
    if classes.shape[0] == 2 and y.dtype.kind in "biuf" and classes.dtype.kind in "biuf":
        second = y == classes[1]
        outside = ~second & (y != classes[0])
        index = second.astype(np.int64)
    else:
        index = np.minimum(np.searchsorted(classes, y), classes.shape[0] - 1)
        outside = classes[index] != y
    if outside.any():
        raise ValueError(unknown(y[np.flatnonzero(outside)[0]].item()))
    return index


def signs_and_costs(plan, y_index, weights):
    """``(Y, cost)``, each ``(n_problems, n_rows)`` float64: each row's sign and ``C_i`` (its class's
    cost times its weight) in every problem, of rows whose labels are at ``y_index`` in
    ``plan.classes``.  Taken by ``np.take`` and the weights multiplied in place: on 2M rows 4 ms
    where fancy indexing and a product took 10 ms (2026-12-05)."""
    cost = np.take(plan.costs, y_index, axis=1)
    cost *= weights
    return np.take(plan.signs, y_index, axis=1), cost


def encode_block(plan, block):
    """``(y, cost)`` of a block's rows, each ``(n_problems, n_rows)`` float64.

    Rows held out for Platt scaling (``plan.calibration_seed``) get cost 0:
    they are read and scored, never trained on.
    """
    y_index = class_index(
        plan.classes, block.y,
        lambda label: (
            f"partition {block.partition} has label {label!r}, which is not among the classes "
            f"{plan.classes.tolist()} found in y; the collection changed between reads."
        ),
    )  # fmt: skip
    Y, cost = signs_and_costs(plan, y_index, block.sample_weight)
    if plan.calibration_seed is not None:
        cost = cost * ~held_out(block.row_ids, plan.calibration_seed)
    return Y, cost


def cs_model(W):
    """Crammer-Singer weights as the model's rows: ``w_1 - w_0`` for two classes, as scikit-learn."""
    return W[1:2] - W[0:1] if W.shape[0] == 2 else W


def model_weights(W, bias, crammer_singer):
    """``(coef_, intercept_)`` of the engine's ``W`` (a row per problem, bias weight last)."""
    W = cs_model(W) if crammer_singer else W
    return W[:, :-1].copy(), W[:, -1] * bias


def linear_scores(X, W, bias, feature_map=None):
    """``[phi(x), bias] . w_c`` for every row of ``X`` and row ``w_c`` of ``W``, shape (n, k)."""
    if feature_map is None:
        return safe_sparse_dot(X, W[:, :-1].T, dense_output=True) + W[:, -1] * bias
    rows = kernel_rows(X, feature_map)
    scores = np.empty((W.shape[0], X.shape[0]))
    for c in range(W.shape[0]):
        decision_values(rows, np.ascontiguousarray(W[c]), bias, scores[c])
    return scores.T


# Features whose values reach this far from unit scale make the dual solvers' coordinate steps
# tiny against the curvature C ||x_i||^2: a fit that does not converge says to scale them.
UNSCALED_MAX = 100.0
# ... as do columns whose scales differ this much.
UNSCALED_SPREAD = 1e3


# Values per slice that :func:`column_max_abs` takes its absolute values of: the copy it makes
# stays small against a partition (a streaming fit's memory budget counts partitions, not this).
_MAX_ABS_SLICE = 1 << 18


def column_max_abs(X):
    """Each column's largest absolute value (0 for an empty one): what :func:`scale_advice` reads.

    Dense C-ordered float32 and float64 rows in one compiled pass over their bits
    (:func:`~...kernels.layout.column_largest_bits`: NaN where a column holds one, as NumPy's
    ``max``); others a slice of at most ``_MAX_ABS_SLICE`` values at a time, so that a partition is
    never copied whole.
    """
    out = np.zeros(X.shape[1])
    if X.shape[0] == 0:
        return out
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        for start in range(0, X.nnz, _MAX_ABS_SLICE):
            stop = start + _MAX_ABS_SLICE
            np.maximum.at(out, X.indices[start:stop], np.abs(X.data[start:stop]))
        return out
    X = np.asarray(X)
    if X.ndim == 2 and X.flags.c_contiguous and X.dtype in MAGNITUDE_BITS:  # one compiled pass
        unsigned, mask, _ = MAGNITUDE_BITS[X.dtype]
        top = np.zeros(X.shape[1], dtype=unsigned)
        column_largest_bits(read_only(X.view(unsigned)), mask, top)
        return top.view(X.dtype).astype(np.float64)
    step = max(1, _MAX_ABS_SLICE // max(X.shape[1], 1))
    for start in range(0, X.shape[0], step):
        np.maximum(out, np.abs(X[start : start + step]).max(axis=0), out=out)
    return out


def joined_column_max(tops):
    """Each column's largest |x| over several parts' :func:`column_max_abs` (a part that measured none:
    None), or None."""
    tops = [top for top in tops if top is not None]
    return np.maximum.reduce(tops) if tops else None


def scale_advice(feature_max, slowed="the dual solvers", changes=""):
    """A sentence on badly scaled features (from :func:`column_max_abs`), or ``""``: they slow
    ``slowed``; ``changes``: what scaling does to the problem besides, or ``""``."""
    if feature_max is None:
        return ""
    scales = feature_max[feature_max > 0]
    if scales.size == 0:
        return ""
    top = int(np.argmax(feature_max))
    spread = scales.max() / np.median(scales)
    if scales.max() <= UNSCALED_MAX and spread <= UNSCALED_SPREAD:
        return ""
    return (
        f" The features are not scaled (column {top} reaches |x| = {feature_max[top]:.4g}; the largest "
        f"column scale is {spread:.3g} times the median), which slows {slowed}: pass "
        "feature_map=Standardize() (dask_streamsvm.features), or scale each column to about [-1, 1] first"
        f"{changes}."
    )


def unconverged_message(plan, certificates, converged, feature_max=None, solver=None):
    """The warning for a fit whose problems did not all reach ``plan.tol`` (``converged``: a bool
    or one per problem); with ``feature_max`` (:func:`column_max_abs` of the rows trained on),
    advice on scaling where the features are far from unit scale.  ``solver``: the name
    ``history_`` records for the solver that ran, where its advice is its own: ``"newton"``, the
    primal Newton solver, whose reads grow neither with C nor with the features' scales (the dual
    solvers' passes do); :data:`SPARSE_PENALTY_SOLVER`, coordinate descent for the L1 and
    elastic-net penalties, whose passes grow with the nonzero weights (a larger C, more of them).
    None: the dual solvers."""
    gap = np.array([c.relative_gap for c in certificates])
    flags = np.broadcast_to(np.asarray(converged), gap.shape)
    unconverged = [plan.labels[c] for c, ok in enumerate(flags) if not ok]
    which = "" if len(certificates) == 1 else f" for classes {unconverged}"
    if solver == SPARSE_PENALTY_SOLVER:
        advice = (
            "Increase max_iter, loosen tol, or use a smaller C (coordinate descent for "
            f"{plan.penalty} needs more passes the more weights are nonzero, and a larger C keeps more "
            "of them; history_ shows each pass's nonzeros)."
            + scale_advice(
                feature_max, "coordinate descent",
                " (a different problem: the L1 penalty then weighs every column on the same scale)",
            )
        )  # fmt: skip
    elif solver == MULTINOMIAL_SOLVER:
        advice = (
            "Increase max_iter or loosen tol; Newton's method for the multinomial model needs about as "
            "many steps whatever C is, and history_ shows each step's length (a step far below 1 "
            "says the features are badly scaled: pass feature_map=Standardize())."
        )
    elif solver == "newton" and plan.sparse_penalty:
        advice = (
            f"Increase max_iter or loosen tol; the Newton steps of {plan.penalty} need about as many "
            "reads whatever C is, and history_ shows its steps (a refused one has accepted=False); in "
            "memory, coordinate descent goes on from their point with the passes left."
        )
    elif solver == "newton":
        advice = (
            "Increase max_iter or loosen tol; the primal Newton solver (dual=False) needs about as "
            "many reads whatever C is, and history_ shows its steps (a refused one has accepted=False): "
            "dual=True runs the dual solvers instead."
        )
    else:
        advice = (
            "Increase max_iter, loosen tol, or use a smaller C (the dual solvers need more passes the "
            "larger C is)." + scale_advice(feature_max)
        )
    return (
        f"{plan.estimator} did not reach tol={plan.tol:g} (relative duality gap) within "
        f"max_iter={plan.max_iter} passes{which}; the final gap is {np.max(gap):.3g}. " + advice
    )

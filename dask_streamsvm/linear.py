"""``LinearSVC``: LIBLINEAR's L1/L2-loss linear SVM with an exact certificate.

The estimator validates its parameters once into a
:class:`~dask_streamsvm.engine.problem.FitPlan`, turns the input into rows
(in memory) or a :class:`~dask_streamsvm.engine.source.DaskSource`
(streaming, cluster), calls the engine, and sets the fitted attributes:
:func:`~dask_streamsvm.engine.memory.solve_problems` in memory,
:func:`~dask_streamsvm.engine.schedules.fit_stream` for every streaming
schedule and ``partial_fit``, :func:`~dask_streamsvm.engine.cluster.fit_cluster`
on a cluster.
"""

import os
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import _validation as v
from ._hooks import PassHooks, warn_interrupted
from ._persist import save_model
from ._stream_classifier import StreamClassifier
from .engine.cache import CacheShare, row_bytes, share_bytes
from .engine.calibration import N_FOLDS, folds
from .engine.checkpoint import Checkpoints, data_fingerprint
from .engine.cluster import CLUSTER_MODES, fit_cluster, fit_primal_cluster, resolve_client
from .engine.layout import kernel_rows
from .engine.memory import solve_problems
from .engine.partial import OnePassSBM
from .engine.primal import MAX_WIDTH, first_read, memory_read, solve_primal, stream_read
from .engine.problem import (
    LOSSES,
    FitPlan,
    column_max_abs,
    cs_model,
    linear_scores,
    model_width,
    unconverged_message,
)
from .engine.reader import read_blocks
from .engine.schedules import fit_stream, memory_blocks
from .engine.source import DaskSource, is_dask_collection
from .features import Standardize
from .io import as_dask, open_path

SOLVERS = ("auto", "memory", "streamsvm", "sbm", "bm")
# dual="auto" picks the primal Newton solver when the rows outnumber the model's width (features plus
# bias) this many times: measured in benchmarks/bench_primal.py (docs/benchmarks.md, "primal").
PRIMAL_RATIO = 100
# dual="auto" makes the read that counts the classes the primal solver's first read up to this width.
FIRST_READ_WIDTH = 256
_INT64_MAX = np.iinfo(np.int64).max


class LinearSVC(StreamClassifier):
    """Linear support vector classifier solved in the dual, as LIBLINEAR does.

    Minimises, for each binary problem (one-vs-rest for more classes)::

        1/2 ||w||^2 + sum_i C_i loss(y_i (w . x_i + b))

    or, with ``multi_class="crammer_singer"``, the joint multi-class
    problem of Crammer and Singer (LIBLINEAR ``-s 4``)::

        1/2 sum_m ||w_m||^2 + sum_i C_i max_m ([m != y_i] + w_m . x_i - w_{y_i} . x_i)

    with ``loss`` the hinge (L1 loss) or the squared hinge (L2 loss), the
    bias ``b`` learned as the weight of a constant feature of value
    ``intercept_scaling`` (and therefore regularised, as in LIBLINEAR), and
    ``C_i = C * class_weight[y_i] * sample_weight[i]``.  The solver is dual
    coordinate descent (Hsieh et al. 2008) with LIBLINEAR's shrinking, or
    for tall data (``dual``) primal Newton steps, one read of the rows each;
    every solver stops on the exact relative duality gap, a certificate
    that the primal objective is within ``tol`` of the optimum.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter: cost of a unit of loss. Must be > 0.
    penalty : {"l2"}, default="l2"
        The regulariser ``1/2 ||w||^2``, the only one (as in scikit-learn's
        ``LinearSVC``, whose other value, ``"l1"``, is not supported here).
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        Squared hinge (LIBLINEAR ``-s 1``) or hinge (``-s 3``).  Ignored
        by ``multi_class="crammer_singer"``, whose loss is its own.
    dual : {"auto", True, False}, default="auto"
        ``True``: the dual solvers (``solver``). ``False``: the primal
        Newton solver (LIBLINEAR ``-s 2``; squared hinge and one-vs-rest
        only), one read of the data per Newton step, in memory or streaming
        a Dask collection with no row cache; it suits tall data (many more
        rows than features), and badly scaled features or a large ``C``,
        where dual coordinate descent needs many passes. It forms the
        features' Hessian, so the model is at most 4095 features wide.
        ``"auto"``: the primal solver where it applies, ``solver`` is
        ``"auto"`` or ``"memory"``, and the rows outnumber the features
        (plus the bias) :data:`~dask_streamsvm.linear.PRIMAL_RATIO` times or
        more; the dual solvers otherwise.
    multi_class : {"ovr", "crammer_singer"}, default="ovr"
        ``"ovr"`` trains one binary problem per class (one for two classes);
        ``"crammer_singer"`` solves the joint problem above by the
        sequential dual method (Keerthi et al. 2008), with every solver.
        Its ``objective_`` and ``duality_gap_`` are single numbers; with two
        classes ``coef_`` is ``w_1 - w_0``, as in scikit-learn.
    feature_map : map of :mod:`dask_streamsvm.features` or None, default=None
        Train on ``phi(x)`` computed inside the solver from the stored raw
        rows (COFFIN, Sonnenburg & Franc 2010), e.g.
        :class:`~dask_streamsvm.features.PolynomialMap`: the cache, blocks
        and partitions hold the raw rows, and ``coef_`` has one weight per
        feature of the map.  Prediction applies the same map.
        :class:`~dask_streamsvm.features.Standardize` instead scales each
        feature to unit variance while training (one more read learns the
        scales) and folds the scaling into ``coef_`` and ``intercept_``,
        which then apply to the raw features; its scales are kept as
        ``standardize_``.
    fit_intercept : bool, default=True
        Learn an intercept, as the weight of a constant feature.
    intercept_scaling : float, default=1.0
        Value of that constant feature (LIBLINEAR's ``-B``). Larger values
        make the intercept less regularised.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the samples of each class. One-vs-rest problems
        weight their positive class only, as LIBLINEAR does.
    tol : float, default=1e-3
        Stop when the relative duality gap ``(P - D) / P`` is at most this.
    max_iter : int, default=1000
        Maximum number of passes over the data (per binary problem in
        memory; reads of the collection when streaming, plus one read to
        certify the final model if they did not converge).
    solver : {"auto", "memory", "streamsvm", "sbm", "bm"}, default="auto"
        ``"memory"`` holds all rows in RAM (Dask input is computed first).
        ``"streamsvm"`` streams partitions through a cache of at most
        ``cache_bytes`` (Matsushima et al. 2012). ``"sbm"`` (selective
        block minimization, Chang & Roth 2011) loads blocks of partitions
        of up to ``block_bytes``, solves the dual on block plus cache
        (``inner_iter``) and keeps the most informative rows in a
        cache of ``cache_bytes``; ``"bm"`` is the same without a cache
        (Yu et al. 2010). ``"auto"`` streams Dask collections and file
        paths with ``"streamsvm"`` and solves in-memory data in memory.
    cache_bytes : int or str, default="1GB"
        Memory budget of the row cache of the streaming solvers: an int, a
        string such as ``"512MB"`` or ``"2GiB"``, or a share of the training
        rows such as ``"10%"``: that share of the rows' bytes as the cache
        stores them (the rows counted before training times the bytes per
        row of the first partition, which costs one more read of that
        partition; on a cluster, a share of each worker's part).
    block_bytes : int, str or None, default=None
        ``solver="sbm"`` and ``"bm"``: bytes of rows loaded per block (None:
        ``cache_bytes`` for SBM, the paper's SBM-1/2, and ``2 * cache_bytes``
        for BM, which then uses the same memory as SBM).
    inner_iter : int or None, default=None
        ``solver="sbm"``, ``"bm"``, ``partial_fit``: the most DCD passes per
        block (None: 100; they end once its gap is a tenth of the gap to beat);
        Crammer-Singer blocks, ``cluster="cocoa"`` rounds: passes (None: 10).
    cache_policy : {"informative", "random"}, default="informative"
        Which rows the cache keeps. ``"sbm"``: the rows the paper's score
        ranks highest, or a random subset (SBM-rand). ``"streamsvm"``: the
        rows with the largest share of the duality gap, and the paper's
        eviction of uninformative rows; or random eviction.
    deterministic : bool, default=False
        ``"streamsvm"``: sweep the cache as often as the rows and the seed
        say (one seed, one model), not whenever the reader is behind.
    prefetch : int, default=2
        Partitions the reader thread computes ahead of the trainer.
    shuffle : bool, default=True
        Shuffle the partition order and the rows of each partition on every
        pass (from ``random_state``).
    alpha_store : {"memory", "disk"}, default="memory"
        Where streaming keeps the dual variable of every row (8 bytes per
        row and class, plus 4 for its cache slot): in RAM, or in
        memory-mapped files in a temporary directory, for row counts whose
        dual state does not fit.
    probability : bool, default=False
        Also fit Platt's sigmoid (one per one-vs-rest problem, normalised)
        for ``predict_proba``.  In memory, as libsvm does, on 5-fold
        cross-fitted decision values (six solves in all).  Streaming holds a
        tenth of the rows out of training and fits the sigmoid on their
        decision values from the read that certifies the model.
    callbacks : list of callables, default=None
        Called after every pass with its history record; a true return
        value stops the fit (see :mod:`dask_streamsvm.callbacks`).
    validation_data : tuple (X_val, y_val), default=None
        Held-out data (in memory, or a small Dask collection computed once)
        scored after every pass; the accuracy goes into the history record
        as ``validation_score``, for callbacks such as
        :class:`~dask_streamsvm.callbacks.EarlyStopping`.
    cluster : {None, "average", "cocoa"}, default=None
        Train on a ``dask.distributed`` cluster (the active client, or
        ``fit(..., client=...)``), a part of the partitions per worker, read
        on that worker (:mod:`dask_streamsvm.cluster`). ``"average"``: each
        worker trains the out-of-core engine on its part and the models are
        averaged, weighted by rows (one shot; ``duality_gap_`` bounds how far
        the average is from the optimum). ``"cocoa"``: CoCoA+ rounds, each
        worker updating its rows' dual variables, until the exact duality
        gap is at most ``tol``: the single-machine optimum. ``max_iter``
        counts rounds; ``history_`` has a record per round (seconds, bytes
        moved, gap). With ``dual=False`` either value runs the primal
        Newton solver on the workers: each step is one read of every part on
        its worker, the parts' gradient and Hessian sums added up in a tree
        on the workers, as exact as on one machine. None trains in this
        process.
    on_invalid : {"raise", "skip"}, default="raise"
        What a row with a NaN or infinite feature, a missing label, or a
        NaN, infinite or negative sample weight does: ``"raise"`` stops the
        fit with an error naming the partition (or file and line), row and
        column; ``"skip"`` drops the row and counts it in ``history_``
        (``rows_skipped``, cumulative over the reads).
    retries : int, default=2
        Streaming: times a partition whose read fails with an I/O error
        (except a missing file or a refused permission) is read again, after
        0.1, 0.2, 0.4 ... seconds (``history_``'s ``read_retries``).
    read_timeout : float or None, default=None
        Streaming: seconds a partition's read may take before the fit stops
        with a ``TimeoutError`` naming it (None: no limit).
    spill : {"auto", True, False}, default="auto"
        Streaming: write each partition, once parsed and checked, to a binary
        file that later reads load instead (``"auto"``: text sources only,
        LIBSVM and CSV, while the disk keeps 1 GB free); removed when ``fit``
        ends, however it ends (``history_``'s ``spill_bytes``).
    spill_dir : str, path or None, default=None
        Where the spill's temporary directory goes (None: the system's).
    checkpoint_dir : str, path or None, default=None
        Streaming solvers: write the whole state of the fit (weights, every
        row's dual variable, the cache, the random state, the history) to
        ``checkpoint_dir/checkpoint.zip`` at the end of every pass,
        atomically; ``fit(..., resume=True)`` continues from it.
    checkpoint_every : float or None, default=None
        Seconds: with ``checkpoint_dir``, write at the first pass end at
        least this long after the last checkpoint, not at every pass end.
    random_state : int, RandomState or None, default=None
        Seeds the row permutations; the same seed gives the same model
        (``"streamsvm"``: with ``deterministic=True``).
    verbose : int, default=0
        1: a progress bar per read when streaming (rows read, cache fill,
        gap), a line per pass in memory; 2: a line per pass and class.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, only when X has string column names
    n_iter_ : int
        Largest number of passes over the binary problems.
    objective_ : float or ndarray of shape (n_classes,)
        Primal objective of the returned model (one per one-vs-rest problem).
    duality_gap_ : float or ndarray of shape (n_classes,)
        Relative duality gap of the returned model.
    history_ : list of dict
        One record per pass: ``class``, ``pass``, ``seconds`` (since the start
        of ``fit``), ``primal``, ``dual``, ``gap`` (relative) and ``active``
        (rows left in the active set after shrinking), and
        ``validation_score`` with ``validation_data``.
    probA_, probB_ : ndarray of shape (n_problems,)
        Platt's sigmoid ``1 / (1 + exp(A f + B))`` per problem, when
        ``probability=True``.
    cluster_parts_ : list of dict, only after a fit with ``cluster``
        Per part of the cluster fit: the ``worker`` that trained it, its
        ``partitions`` (numbers in the collection) and its ``rows``.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm import LinearSVC
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [3.0, 0.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> clf = LinearSVC(tol=1e-6, random_state=0).fit(X, y)
    >>> clf.predict([[2.5, 0.0]])
    array([1])
    >>> bool(clf.duality_gap_ <= 1e-6)
    True
    """

    def __init__(
        self,
        C=1.0,
        *,
        penalty="l2",
        loss="squared_hinge",
        dual="auto",
        multi_class="ovr",
        feature_map=None,
        fit_intercept=True,
        intercept_scaling=1.0,
        class_weight=None,
        tol=1e-3,
        max_iter=1000,
        solver="auto",
        cache_bytes="1GB",
        block_bytes=None,
        inner_iter=None,
        cache_policy="informative",
        deterministic=False,
        prefetch=2,
        shuffle=True,
        alpha_store="memory",
        probability=False,
        callbacks=None,
        validation_data=None,
        cluster=None,
        on_invalid="raise",
        retries=2,
        read_timeout=None,
        spill="auto",
        spill_dir=None,
        checkpoint_dir=None,
        checkpoint_every=None,
        random_state=None,
        verbose=0,
    ):
        self.C = C
        self.penalty = penalty
        self.loss = loss
        self.dual = dual
        self.multi_class = multi_class
        self.feature_map = feature_map
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.cache_bytes = cache_bytes
        self.block_bytes = block_bytes
        self.inner_iter = inner_iter
        self.cache_policy = cache_policy
        self.deterministic = deterministic
        self.prefetch = prefetch
        self.shuffle = shuffle
        self.alpha_store = alpha_store
        self.probability = probability
        self.cluster = cluster
        self.callbacks = callbacks
        self.validation_data = validation_data
        self.on_invalid = on_invalid
        self.retries = retries
        self.read_timeout = read_timeout
        self.spill = spill
        self.spill_dir = spill_dir
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {
        "C": v.positive_float,
        "penalty": v.one_of("l2"),
        "loss": v.one_of(*LOSSES),
        "dual": v.auto_or_bool,
        "multi_class": v.one_of("ovr", "crammer_singer"),
        "fit_intercept": v.anything,
        "intercept_scaling": v.anything,  # checked with fit_intercept (see _params)
        "class_weight": v.class_weight,
        "feature_map": v.feature_map,
        "tol": v.positive_float,
        "max_iter": v.integer(),
        "solver": v.one_of(*SOLVERS),
        "cache_bytes": v.cache_size,
        "block_bytes": v.optional(v.byte_size),
        "inner_iter": v.optional(v.integer()),
        "cache_policy": v.one_of("informative", "random"),
        "deterministic": v.anything,
        "prefetch": v.integer(),
        "alpha_store": v.one_of("memory", "disk"),
        "callbacks": v.callables,
        "cluster": v.optional(v.one_of(*CLUSTER_MODES)),
        "on_invalid": v.one_of("raise", "skip"),
        "retries": v.integer(low=0),
        "read_timeout": v.optional(v.positive_float),
        "spill": v.auto_or_bool,
        "checkpoint_every": v.optional(v.non_negative_float),
    }

    def _params(self):
        """The parameters, checked once: ``{name: value}`` with ``bias`` (0 without an intercept)."""
        params = v.validate_params(self)
        params["bias"] = v.check_positive_float("intercept_scaling", self.intercept_scaling) if (
            self.fit_intercept
        ) else 0.0
        return params

    def _plan(self, params, n_features, solver, seed=0, calibration_seed=None):
        """The :class:`FitPlan` of these parameters for ``n_features`` raw features (no labels yet)."""
        cache_bytes = params["cache_bytes"]
        if isinstance(cache_bytes, CacheShare):  # a share of the rows: resolved once they are counted
            cache_bytes = 1
        block_bytes = params["block_bytes"] or (cache_bytes if solver == "sbm" else 2 * cache_bytes)
        return FitPlan(
            C=params["C"], loss="hinge" if self._crammer_singer else params["loss"],
            crammer_singer=self._crammer_singer, class_weight=self.class_weight, bias=params["bias"],
            feature_map=self._feature_spec(n_features), tol=params["tol"], max_iter=params["max_iter"],
            solver=solver, cache_bytes=0 if solver == "bm" else cache_bytes, block_bytes=block_bytes,
            inner_iter=params["inner_iter"], cache_policy=params["cache_policy"], prefetch=params["prefetch"],
            shuffle=bool(self.shuffle), retries=params["retries"], alpha_store=params["alpha_store"],
            read_timeout=params["read_timeout"], deterministic=bool(self.deterministic),
            seed=seed, calibration_seed=calibration_seed,
        )  # fmt: skip

    def fit(self, X, y, sample_weight=None, client=None, resume=False):
        """Fit the model to ``X`` and ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, Dask Array, Dask DataFrame}
            In-memory data (NumPy, SciPy sparse, pandas) is solved in memory.
            Dask collections are streamed through the row cache
            (``solver="streamsvm"``) unless ``solver="memory"`` asks to
            compute them into memory.
        y : array-like, Dask Array or Series, or str
            Labels; with a Dask DataFrame ``X``, the name of its label column.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multiplier of ``C``; rows of weight 0 are ignored. For
            Dask input, a Dask Array or Series partitioned like ``X``.
        client : distributed.Client or None, default=None
            ``cluster="average"`` or ``"cocoa"``: the cluster to train on
            (None: the active client).
        resume : bool, default=False
            Continue from the checkpoint in ``checkpoint_dir`` (streaming
            solvers), if there is one: the fit goes on from the pass after
            it and ends at the model of a fit never stopped. The data and
            the parameters that shape the solution must be those of the fit
            that wrote it (``max_iter``, ``tol``, ``callbacks``, ``verbose``
            and the checkpoint settings may change). Without a checkpoint
            the fit starts from the beginning.

        Returns
        -------
        self

        Notes
        -----
        A ``KeyboardInterrupt`` (Ctrl-C) stops a fit within about a second
        (a partition being read is finished first). Streaming, once a pass
        has been certified, ``fit`` then returns with the model that pass
        certified (``objective_`` and ``duality_gap_`` are exact) and a
        warning saying so; in memory, with the current model, certified. An
        interrupt before that propagates. The fitted attributes change together when the fit
        succeeds; a fit that fails or is interrupted before that leaves them as they were.
        """
        return self._published(LinearSVC._fit, X, y, sample_weight, client, resume)

    def _fit(self, X, y, sample_weight, client, resume):
        clock_start = time.perf_counter()
        params = self._params()
        self.__dict__.pop("_stream", None)  # a fit ends any partial_fit stream
        self.__dict__.pop("standardize_", None)  # set again by a fit with feature_map=Standardize()
        out_of_core = is_dask_collection(X) or isinstance(X, str | os.PathLike)
        streaming = self.solver in ("streamsvm", "sbm", "bm") or (self.solver == "auto" and out_of_core)
        if (self.checkpoint_dir is not None or resume) and (self.cluster is not None or not streaming):
            raise ValueError(
                "checkpoint_dir and resume=True apply to the streaming solvers (solver='streamsvm', 'sbm' "
                "or 'bm', or 'auto' on a Dask collection or path) without cluster; this fit is "
                f"solver={self.solver!r}, cluster={self.cluster!r} on {type(X).__name__}."
            )
        if resume and self.checkpoint_dir is None:
            raise ValueError("resume=True needs checkpoint_dir, the directory the checkpoint is in.")
        if params["dual"] is False:  # before any read: what the primal solver cannot do
            self._use_primal(params, 0, 0, streaming=streaming)
        if isinstance(self.feature_map, Standardize):
            self._check_standardize(params)
        if self.cluster is not None:
            return self._fit_cluster(X, y, sample_weight, client, params, clock_start)
        if streaming:
            self._fit_stream(X, y, sample_weight, params, clock_start, resume)
        else:
            self._fit_memory(X, y, sample_weight, params, clock_start)
        scaler = self.__dict__.get("standardize_")
        if scaler is not None:  # the standardized features' model, for the raw features
            self.coef_, self.intercept_ = scaler.fold(self.coef_, self.intercept_)
        return self

    def _check_standardize(self, params):
        """What ``feature_map=Standardize()`` cannot train with: a clear error, before any read."""
        if self.cluster is not None:
            raise ValueError(
                f"feature_map=Standardize() is not supported with cluster={self.cluster!r} yet; scale the "
                "features first (their mean and standard deviation are a Dask reduction: "
                "X.mean(axis=0), X.std(axis=0)), or use cluster=None."
            )
        if self.validation_data is not None:
            raise ValueError(
                "feature_map=Standardize() does not support validation_data yet (its rows would be scored "
                "before scaling); score a held-out set after the fit instead."
            )
        if self.feature_map.with_mean is True and params["bias"] == 0.0:
            raise ValueError(
                "Standardize(with_mean=True) with fit_intercept=False: centring the features adds an "
                "intercept to the raw features' model. Use with_mean='auto' (no centring without an "
                "intercept) or fit_intercept=True."
            )

    def _scaler(self, params, blocks, n_features):
        """A :class:`Standardize` like ``feature_map``, its scales learned from ``blocks``; kept as
        ``standardize_``.  Without an intercept the features are not centred."""
        scaler = clone(self.feature_map)
        if params["bias"] == 0.0 and scaler.with_mean == "auto":
            scaler.set_params(with_mean=False)
        self.standardize_ = scaler.learn(blocks, n_features)
        return scaler

    def _fit_memory(self, X, y, sample_weight, params, clock_start):
        if any(is_dask_collection(a) for a in (X, y, sample_weight)):
            import dask

            X, y, sample_weight = dask.compute(X, y, sample_weight)
        X, y, sample_weight, skipped = self._drop_invalid(X, y, sample_weight)
        X, y = self._validated(X, y, reset=True)
        check_classification_targets(y)
        sample_weight = v.check_sample_weight(sample_weight, X.shape[0])
        if hasattr(self.feature_map, "expand"):  # virtual examples: train on every row's variants
            X, y, sample_weight = self.feature_map.expand(X, y, sample_weight)
        if isinstance(self.feature_map, Standardize):
            X = self._scaler(params, [X[sample_weight > 0]], X.shape[1]).scale_rows(X)
        classes, counts = np.unique(y, return_counts=True)
        rng = check_random_state(self.random_state)
        seeds = rng.randint(_INT64_MAX, size=max(classes.shape[0], 1), dtype=np.int64)
        trained = sample_weight > 0
        weighted_classes = np.unique(y[trained]) if trained.any() else classes[:0]
        self.classes_ = classes
        plan = self._plan(params, X.shape[1], "memory").with_labels(classes, counts, weighted_classes)
        y_index = np.searchsorted(classes, y)
        primal = self._use_primal(params, X.shape[0], X.shape[1], streaming=False)
        if not primal:
            rows = kernel_rows(X, plan.feature_map)
            width = plan.model_width(X.shape[1])
            problem = {"plan": plan, "width": width, "seeds": seeds, "clock_start": clock_start}
        scores = None
        if self.probability:
            # libsvm's recipe: cross-fitted decision values for the sigmoid, then the model on all rows.
            fold = folds(X.shape[0], int(rng.randint(_INT64_MAX)))
            for f in range(N_FOLDS):
                weights = sample_weight * (fold != f)
                if primal:
                    read = memory_read(X, y_index, weights, plan)
                    W = solve_primal(read, plan, plan.model_width(X.shape[1])).W
                else:
                    W = solve_problems(rows, y_index, weights, **problem).W
                W = cs_model(W) if self._crammer_singer else W
                if scores is None:
                    scores = np.empty((X.shape[0], W.shape[0]))
                scores[fold == f] = linear_scores(X[fold == f], W, plan.bias, plan.feature_map)
        if primal:
            self._fit_primal(plan, X.shape[1], clock_start, memory=(X, y_index, sample_weight))
            if skipped:
                for record in self.history_:
                    record["rows_skipped"] = skipped
            if scores is not None:
                self._fit_platt(scores[trained], y[trained])
            return self
        hooks = PassHooks(self, plan.bias)
        result = solve_problems(rows, y_index, sample_weight, hooks=hooks, **problem)
        if not np.all(result.converged):
            self._feature_max = column_max_abs(X[trained])  # the advice of the warning
        self._set_model(plan, result, stopped=hooks.stopped or result.interrupted)
        if skipped:
            for record in self.history_:
                record["rows_skipped"] = skipped
        if result.interrupted:
            warn_interrupted(self, result.passes)
        if scores is not None:
            self._fit_platt(scores[trained], y[trained])
        return self

    def _drop_invalid(self, X, y, sample_weight):
        """In-memory input with the invalid rows dropped (``on_invalid="skip"``), and their count."""
        if self.on_invalid != "skip":
            return X, y, sample_weight, 0
        return v.drop_invalid(X, y, sample_weight, encoder=self.feature_map if self._encoding else None)

    def partial_fit(self, X, y=None, classes=None, sample_weight=None):
        """One pass of selective block minimization over a block of a stream.

        SBM for streaming data (Chang & Roth 2011, section 4): the new rows
        start with ``alpha = 0``; the dual is solved on them plus a cache of
        the most informative rows kept from earlier blocks
        (at most ``inner_iter`` passes); then the cache is chosen anew within
        ``cache_bytes`` (``cache_policy``).  Rows that leave memory are
        forgotten, dual variable included, so memory stays at the cache plus
        one block however long the stream.  ``solver`` and ``block_bytes``
        play no part: each call is one block (each partition of a Dask
        collection, read ahead by the reader thread, one pass).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, Dask Array, Dask DataFrame, path}
        y : array-like, Dask Array or Series, or str (a Dask DataFrame's label column)
        classes : array-like, default=None
            Every class of the stream: required on the first call (unless the
            model was fitted by :meth:`fit`, whose classes it keeps), and, if
            given later, the same.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self

        Notes
        -----
        ``objective_`` and ``duality_gap_`` are NaN after ``partial_fit``:
        rows that left memory keep no dual variable, so there is no
        certificate.  ``history_`` holds a record per block (``rows``,
        ``rows_seen``, ``memory_bytes``, the bytes of cache plus block held
        while training, ``cache_rows`` and ``cache_bytes``).  After
        :meth:`fit`, ``partial_fit`` continues from the fitted model with an
        empty cache.  ``class_weight="balanced"`` and ``probability=True``
        need the whole data and are refused.  A call that fails or is
        interrupted leaves the model as it was, and forgets the cache.
        """
        try:
            return self._published(LinearSVC._partial_fit, X, y, classes, sample_weight)
        except BaseException:
            self.__dict__.pop("_stream", None)  # the stream was trained in place, part-way
            raise

    def _partial_fit(self, X, y, classes, sample_weight):
        params = self._params()
        if isinstance(self.class_weight, str):
            raise ValueError(
                "class_weight='balanced' needs the class counts of the whole stream, which partial_fit "
                "does not see; pass a dict of weights or compute them first."
            )
        if self.probability:
            raise ValueError("probability=True is not supported by partial_fit; use fit.")
        if isinstance(self.feature_map, Standardize):
            raise ValueError(
                "feature_map=Standardize() learns the scales from the whole training data, which "
                "partial_fit does not see; scale the features first (or use fit)."
            )
        if self.checkpoint_dir is not None:
            raise ValueError(
                "partial_fit writes no checkpoints: the model after each call is its whole state. Save it "
                "with save() (or pickle) between calls, and leave checkpoint_dir=None."
            )
        stream = getattr(self, "_stream", None)
        fitted = hasattr(self, "coef_")
        first = stream is None and not fitted
        classes = self._partial_fit_classes(classes, first=first)
        clock_start = time.perf_counter()
        if is_dask_collection(X) or isinstance(X, str | os.PathLike):
            source = self._source(X, y, sample_weight, check_width=not first)
            n_features = source.n_features
        else:
            X, y, sample_weight, skipped = self._drop_invalid(X, y, sample_weight)
            X, y = self._validated(X, y, reset=first)
            check_classification_targets(y)
            sample_weight = v.check_sample_weight(sample_weight, X.shape[0])
            if hasattr(self.feature_map, "expand"):
                X, y, sample_weight = self.feature_map.expand(X, y, sample_weight)
            source, n_features = memory_blocks(X, y, sample_weight, skipped), X.shape[1]
        self.classes_ = classes
        seed = int(check_random_state(self.random_state).randint(_INT64_MAX, dtype=np.int64))
        plan = self._plan(params, n_features, "partial", seed).with_labels(
            classes, np.ones(classes.shape[0], dtype=np.int64), classes
        )
        if stream is None:
            stream = self._stream = OnePassSBM(plan, n_features)
            if fitted:  # go on from the model fit() trained
                stream.start_from(self.coef_, self.intercept_)
            self.history_ = []
        records = fit_stream(source, plan, clock_start=clock_start, state=stream).history
        self.history_ = [*self.history_, *records]
        W = cs_model(stream.W) if self._crammer_singer else stream.W
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1] * plan.bias
        self.n_iter_ = stream.blocks
        problems = 1 if self._crammer_singer else self.coef_.shape[0]
        self.objective_ = np.nan if problems == 1 else np.full(problems, np.nan)
        self.duality_gap_ = np.nan if problems == 1 else np.full(problems, np.nan)
        return self

    def _source(self, X, y, sample_weight, check_width=False):
        """A :class:`DaskSource` of the input (paths opened, in-memory data wrapped).

        Sets ``n_features_in_`` and ``feature_names_in_``, or with
        ``check_width`` checks the input's width against them.
        """
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            X, y, sample_weight = as_dask(v.checked_sparse(X), y, sample_weight)
        source = DaskSource(X, y, sample_weight, encoder=self._source_encoder(), on_invalid=self.on_invalid)
        return self._adopt_width(source, reset=not check_width)

    def _seeds(self):
        """The streaming fit's seed, and Platt's held-out seed with ``probability=True``."""
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(_INT64_MAX, dtype=np.int64))
        return seed, int(rng.randint(_INT64_MAX)) if self.probability else None

    def _fit_stream(self, X, y, sample_weight, params, clock_start, resume=False):
        source = self._source(X, y, sample_weight)
        checkpoints = saved = None
        if self.checkpoint_dir is not None:
            fingerprint = data_fingerprint(self.get_params(deep=False), source)
            checkpoints = Checkpoints(self.checkpoint_dir, params["checkpoint_every"], fingerprint)
            saved = checkpoints.load() if resume else None
        with source.spilling(params["spill"], self.spill_dir):
            if isinstance(self.feature_map, Standardize):  # one read for the scales, then scaled reads
                blocks = read_blocks(
                    source, prefetch=params["prefetch"], retries=params["retries"],
                    read_timeout=params["read_timeout"],
                )  # fmt: skip
                rows = (b.X[b.sample_weight > 0] for _, b in blocks)
                source.row_transform = self._scaler(params, rows, source.n_features).scale_rows
            first = hooks = None
            primal_plan = self._plan(params, source.n_features, "streamsvm")
            width = primal_plan.model_width(source.n_features)
            if saved is not None:  # the classes counted by the fit that wrote it: no read to count them
                labels = tuple(saved[1][k] for k in ("classes", "class_counts", "weighted_classes"))
            elif self._first_read_trains(params, width, source.known_rows, source.n_features):
                # The read that counts the classes is the primal solver's first Newton read.
                hooks = PassHooks(self, params["bias"], source.n_partitions)
                on_block = None  # with "auto" the read may count for the dual solvers: no bar yet
                if params["dual"] is False:
                    on_block = lambda k, block: hooks.on_block(k, block, None, None)  # noqa: E731
                labels, first = first_read(source, primal_plan, width, on_block=on_block)
            else:
                labels = source.label_counts(read_timeout=params["read_timeout"])
            self.classes_ = labels[0]
            if self._use_primal(params, int(np.sum(labels[1])), source.n_features):
                plan = primal_plan.with_labels(*labels)
                first = None if first is None else first(plan)
                return self._fit_primal(
                    plan, source.n_features, clock_start, source=source, first=first, hooks=hooks
                )
            solver = self.solver if self.solver in ("sbm", "bm") else "streamsvm"
            plan = self._plan(params, source.n_features, solver, *self._seeds()).with_labels(*labels)
            if isinstance(params["cache_bytes"], CacheShare):
                params = {**params, "cache_bytes": self._share_bytes(params["cache_bytes"], source, plan)}
                plan = self._plan(params, source.n_features, solver, *self._seeds()).with_labels(*labels)
            hooks = PassHooks(self, plan.bias, source.n_partitions, params["cache_bytes"])
            result = fit_stream(
                source, plan, hooks, clock_start=clock_start, checkpoints=checkpoints, resume=saved
            )
        self._set_model(plan, result, stopped=hooks.stopped or result.interrupted)
        if result.interrupted:
            warn_interrupted(self, result.passes)
        if self.probability:  # the last read certified the model: its held-out scores are the model's
            self._fit_platt(result.held_scores, result.held_y)
        return self

    @staticmethod
    def _share_bytes(share, source, plan, n_rows=None):
        """``cache_bytes="10%"`` in bytes: the share of ``n_rows`` (None: every row counted) times the
        bytes per row of the first partition with rows (:func:`~.engine.cache.row_bytes`)."""
        n_rows = int(np.sum(plan.counts)) if n_rows is None else n_rows
        return share_bytes(share, n_rows, row_bytes(source, plan.n_problems, plan.feature_map))

    def _primal_blocker(self, params, streaming=True):
        """What of this model the primal Newton solver cannot train (a phrase for an error), or None
        (``streaming``: on a Dask collection or path)."""
        blockers = {
            "loss='hinge' (the primal solver minimises the squared hinge, as LIBLINEAR's does)": (
                params["loss"] != "squared_hinge"
            ),
            "multi_class='crammer_singer'": self._crammer_singer,
            "probability=True on a Dask collection": bool(self.probability) and streaming,
            f"solver={self.solver!r}, a dual solver": self.solver not in ("auto", "memory"),
            "checkpoint_dir": self.checkpoint_dir is not None,
            # dual=False trains on a cluster too; "auto" keeps cluster= meaning its dual method
            f"cluster={self.cluster!r}": self.cluster is not None and params["dual"] == "auto",
        }
        return next((what for what, blocks in blockers.items() if blocks), None)

    def _use_primal(self, params, n_rows, n_features, streaming=True):
        """Whether this fit runs the primal Newton solver on ``n_rows`` rows of ``n_features``
        (``dual=False``, or ``"auto"`` on tall data); ValueError if ``dual=False`` cannot."""
        if params["dual"] is True:
            return False
        blocker = self._primal_blocker(params, streaming)
        if params["dual"] is False:
            if blocker is not None:
                raise ValueError(
                    f"dual=False (the primal Newton solver) does not support {blocker}; "
                    "use dual=True (the dual solvers) or dual='auto'."
                )
            return True
        width = model_width(n_features, self._feature_spec(n_features)) + 1
        return blocker is None and width <= MAX_WIDTH and n_rows >= PRIMAL_RATIO * width

    def _first_read_trains(self, params, width, known_rows, n_features):
        """Whether the read that counts the classes also sums their rows' moments, so that it is the
        primal solver's first Newton read: with ``dual=False``, and with ``"auto"`` where the primal
        solver applies, the moments are cheap (at most :data:`FIRST_READ_WIDTH` features) and the
        collection's rows, ``known_rows`` before any read, are enough for it.  Otherwise the classes
        are counted as for the dual solvers, from the labels alone where the source allows."""
        if params["dual"] is True:
            return False
        if params["dual"] is False:
            return True
        return (
            width + 1 <= FIRST_READ_WIDTH
            and known_rows is not None
            and self._use_primal(params, known_rows, n_features)
        )

    def _fit_primal(self, plan, n_features, clock_start, memory=None, source=None, first=None, hooks=None):
        """The primal Newton solver (:mod:`.engine.primal`) on in-memory rows ``memory`` (``(X,
        y_index, sample_weight)``) or on ``source``, and the model it certifies.

        The hooks see what the dual solvers give them: in memory each problem's record through its
        own hook; streaming one call per read and a progress bar per read.
        """
        if source is None:
            hooks = PassHooks(self, plan.bias)
            per_problem = [hooks.memory(c) for c in range(plan.n_problems)]

            def on_pass(records, W):
                return any([per_problem[c](record, W[c]) for c, record in enumerate(records)])

            read = memory_read(*memory, plan)
        else:
            hooks = hooks or PassHooks(self, plan.bias, source.n_partitions)
            on_pass = hooks.on_pass
            on_block = lambda k, block: hooks.on_block(k, block, None, None)  # noqa: E731
            read = stream_read(source, plan, on_block, start=0 if first is None else 1)
        width = plan.model_width(n_features)
        result = solve_primal(
            read, plan, width, clock_start=clock_start, on_pass=on_pass, source=source, initial=first
        )
        self._set_model(plan, result, stopped=hooks.stopped or result.interrupted)
        if result.interrupted:
            warn_interrupted(self, result.passes)
        return self

    def _fit_cluster(self, X, y, sample_weight, client, params, clock_start):
        """``cluster="average"`` or ``"cocoa"`` on a ``dask.distributed`` cluster (:mod:`.engine.cluster`)."""
        unsupported = {
            "multi_class='crammer_singer'": self._crammer_singer,
            "probability=True": bool(self.probability),
            "validation_data": self.validation_data is not None,
        }
        for what, used in unsupported.items():
            if used:
                raise ValueError(f"cluster={self.cluster!r} does not support {what} yet; use cluster=None.")
        client = resolve_client(client)
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            raise TypeError(
                f"cluster={self.cluster!r} trains on a Dask Array or DataFrame (or a path), got "
                f"{type(X).__name__}; wrap it with dask.array.from_array or dask.dataframe.from_pandas, "
                "or set cluster=None to train in this process."
            )
        source = self._source(X, y, sample_weight)
        solver = self.solver if self.solver in ("sbm", "bm") else "streamsvm"
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        plan = self._plan(params, source.n_features, solver, seed)
        if params["dual"] is False:  # Newton steps, each one read of every part on its worker
            hooks = PassHooks(self, plan.bias)
            plan, result = fit_primal_cluster(
                client, source, plan, clock_start=clock_start, on_pass=hooks.on_pass
            )
            self.classes_ = plan.classes
            self._set_model(plan, result, stopped=hooks.stopped)
            self.cluster_parts_ = result.parts
            return self
        callbacks = params["callbacks"]

        def on_round(record):
            return any([bool(cb(record)) for cb in callbacks])

        on_round = on_round if callbacks else None
        share = params["cache_bytes"] if isinstance(params["cache_bytes"], CacheShare) else None

        def replan(cache_bytes):  # cache_bytes="10%": the plan once a part's bytes are known
            return self._plan({**params, "cache_bytes": cache_bytes}, source.n_features, solver, seed)

        result = fit_cluster(
            client, source, plan, self.cluster, clock_start=clock_start, on_round=on_round,
            cache_share=None if share is None else (share, replan),
        )  # fmt: skip
        self.classes_ = result.plan.classes
        for message in result.messages:
            warnings.warn(message, ConvergenceWarning, stacklevel=5)
        self._set_model(result.plan, result, stopped=result.stopped)
        self.cluster_parts_ = result.parts
        return self

    def _set_model(self, plan, result, stopped=False):
        """Fitted attributes from an engine result (``W``, ``certificates``, ``passes``, ``history``,
        ``converged``: a bool or one per problem); warns if it did not converge."""
        W = cs_model(result.W) if self._crammer_singer else result.W
        self.__dict__.pop("cluster_parts_", None)  # a cluster fit sets it again after this
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1] * plan.bias
        self.n_iter_ = int(result.passes)
        objective = np.array([c.primal for c in result.certificates])
        gap = np.array([c.relative_gap for c in result.certificates])
        single = len(result.certificates) == 1
        self.objective_ = float(objective[0]) if single else objective
        self.duality_gap_ = float(gap[0]) if single else gap
        self.history_ = result.history
        for name in ("probA_", "probB_"):
            if hasattr(self, name):
                delattr(self, name)
        feature_max = self.__dict__.pop("_feature_max", None)
        feature_max = getattr(result, "feature_max", None) if feature_max is None else feature_max
        if not np.all(result.converged) and not stopped:
            message = unconverged_message(plan, result.certificates, result.converged, feature_max)
            warnings.warn(message, ConvergenceWarning, stacklevel=6)

    def _feature_spec(self, n_features):
        """The kernels' spec of ``feature_map`` for ``n_features`` raw features, or None."""
        if self.feature_map is None or isinstance(self.feature_map, Standardize):
            return None  # Standardize scales the rows as they are read, and is folded into coef_
        if not hasattr(self.feature_map, "spec"):
            raise TypeError(
                f"feature_map must be a map of dask_streamsvm.features (PolynomialMap, ...) or None, "
                f"got {self.feature_map!r}."
            )
        return self.feature_map.spec(n_features)

    @property
    def _crammer_singer(self):
        return self.multi_class == "crammer_singer"

    # -- prediction ----------------------------------------------------------------------

    def _scores(self, rows):
        W = np.hstack([self.coef_, self.intercept_[:, None]])
        scores = linear_scores(rows, W, 1.0, self._feature_spec(self._raw_width()))
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _check_in_memory(self, X):
        return self._validated(X, reset=False)[0]

    def _validated(self, X, y=None, *, reset):
        return v.validated_rows(self, X, y, reset=reset, encoder=self.feature_map if self._encoding else None)

    def _source_encoder(self):
        """The map the Dask source applies to each partition as it is read, or None."""
        if self._encoding or hasattr(self.feature_map, "expand"):
            return self.feature_map
        return None

    @property
    def _encoding(self):
        """Whether ``feature_map`` encodes the input (its columns may hold strings)."""
        return bool(getattr(self.feature_map, "reads_strings", False))

    def _raw_width(self):
        """Columns of the (encoded) raw rows the kernels read, for the fitted input width."""
        fmap = self.feature_map
        return self.n_features_in_ if fmap is None else fmap.raw_width(self.n_features_in_)

    # -- model files ---------------------------------------------------------------------

    def save(self, path):
        """Write the fitted model to ``path`` without pickle; read it with :func:`dask_streamsvm.load`.

        The file is a zip archive of ``.npy`` arrays and JSON metadata with a
        format version and checksums.  ``callbacks``, ``validation_data`` and
        ``checkpoint_dir`` are not saved, and a ``random_state`` that is not an
        int is saved as None.  The checksums detect damage, not tampering:
        load only files you trust.
        """
        check_is_fitted(self)
        save_model(self, path)

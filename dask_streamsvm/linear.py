"""``LinearSVC``: LIBLINEAR's L1/L2-loss linear SVM with an exact certificate.

The estimator validates its parameters, builds one
:class:`~dask_streamsvm.engine.problem.FitPlan`, turns its input into rows
(:mod:`dask_streamsvm._linear_input`), calls :func:`dask_streamsvm.engine.fit.fit`
(``partial_fit``: :func:`~dask_streamsvm.engine.fit.fit_partial`), which chooses the
solver, and sets the fitted attributes from the one
:class:`~dask_streamsvm.engine.result.FitResult` it returns.
"""

import os
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._hooks import PassHooks, warn_interrupted, warn_uncertified
from ._linear_input import LinearInput
from ._persist import save_model
from ._stream_classifier import checked_params, feature_spec
from ._validation import (
    anything,
    auto_or_bool,
    boolean,
    cache_size,
    callables,
    integer,
    non_negative_float,
    one_of,
    optional,
    pair,
    positive_float,
    verbosity,
)
from ._validation import byte_size as byte_size_check
from ._validation import class_weight as class_weight_check
from ._validation import feature_map as feature_map_check
from ._validation import random_state as random_state_check
from .engine import fit as engine
from .engine.problem import FitPlan, cs_model, unconverged_message
from .engine.source import is_dask_collection
from .features import Standardize

_INT64_MAX = np.iinfo(np.int64).max


class LinearSVC(LinearInput):
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
        Newton solver (LIBLINEAR ``-s 2``; squared hinge, one-vs-rest), one
        read of the data per step: for tall data, badly scaled features or
        a large ``C``. Streaming, it forms the Hessian (4095 features at
        most); in memory and on a cluster wide models take its products.
        ``"auto"``: the primal solver where it applies, ``solver`` is
        ``"auto"`` or ``"memory"``, and the rows outnumber the features
        (plus the bias) :data:`~dask_streamsvm.engine.choice.PRIMAL_RATIO`
        times or more (on a cluster, see ``cluster``); else the dual.
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
        partition; on a cluster, a share of each worker's part; for text,
        the first partition's rows times the partitions).
    block_bytes : int, str or None, default=None
        ``solver="sbm"`` and ``"bm"``: bytes of rows loaded per block (None:
        ``cache_bytes`` for SBM, the paper's SBM-1/2, and ``2 * cache_bytes``
        for BM, which then uses the same memory as SBM).
    inner_iter : int or None, default=None
        ``solver="sbm"``, ``"bm"``, ``partial_fit``: the most DCD passes per
        block (None: 100; they end once its gap is a tenth of the gap to beat);
        Crammer-Singer blocks, ``cluster="cocoa"`` rounds: passes (None: 10).
    cache_policy : {"informative", "random", "paper"}, default="informative"
        Which rows the cache keeps. SBM: the paper's top scores, or a random
        subset (SBM-rand). StreamSVM: the largest shares of the gap and the
        eps rule; ``"paper"``: the paper's own rule (random eviction and the
        eps rule; more reads); ``"random"``: random eviction alone.
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
    cluster : {"auto", "average", "cocoa", None}, default="auto"
        ``"auto"``: a Dask collection or path trains on the cluster of the
        active ``dask.distributed`` client (or ``fit(..., client=...)``) with
        ``solver="auto"``; anything else in this process. On a cluster each
        worker reads its part of the partitions, and ``"auto"`` picks a
        method whose steps do not grow with the workers: with the squared
        hinge, Newton steps summed in a tree on the workers (``"newton"``,
        or Hessian products beyond 1,023 features: ``"truncated_newton"``),
        as exact as on one machine; where only the dual applies (hinge,
        ``dual=True``), CoCoA+. ``history_`` names it (``"method"``).
        ``"cocoa"``: CoCoA+ rounds to the exact gap ``tol`` (``max_iter``
        counts rounds). ``"average"``: each worker trains on its part and
        the models are averaged by rows (one shot; ``duality_gap_`` bounds
        it). ``dual=False`` runs Newton whatever the value. None: in this
        process.
    on_invalid : {"raise", "skip"}, default="raise"
        What a row with a NaN or infinite feature, a missing label, or a
        NaN, infinite or negative sample weight does: ``"raise"`` stops the
        fit with an error naming the partition (or file and line), row and
        column; ``"skip"`` drops the row and counts it in ``history_``
        (``rows_skipped``: each row counted once, however many reads skip it).
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
        ends, however it ends, SIGTERM included (``history_``'s ``spill_bytes``).
        An I/O error of the spill (a full disk) drops it with a warning, and
        the fit reads the source instead, to the same model.
    spill_dir : str, path or None, default=None
        Where the spill's temporary directory goes (None: the system's);
        created if missing, checked before any read as ``checkpoint_dir`` is.
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
        cluster="auto",
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
        "C": positive_float,
        "penalty": one_of("l2"),
        "loss": one_of(*engine.LOSSES),
        "dual": auto_or_bool,
        "multi_class": one_of("ovr", "crammer_singer"),
        "fit_intercept": boolean,
        "intercept_scaling": anything,  # checked with fit_intercept (checked_params)
        "class_weight": class_weight_check,
        "feature_map": feature_map_check,
        "tol": positive_float,
        "max_iter": integer(),
        "solver": one_of(*engine.SOLVERS),
        "cache_bytes": cache_size,
        "block_bytes": optional(byte_size_check),
        "inner_iter": optional(integer()),
        "cache_policy": one_of(*engine.CACHE_POLICIES),
        "deterministic": boolean,
        "shuffle": boolean,
        "probability": boolean,
        "prefetch": integer(),
        "alpha_store": one_of("memory", "disk"),
        "callbacks": callables,
        "cluster": optional(one_of(*engine.CLUSTER_MODES)),
        "on_invalid": one_of("raise", "skip"),
        "retries": integer(low=0),
        "read_timeout": optional(positive_float),
        "spill": auto_or_bool,
        "checkpoint_every": optional(non_negative_float),
        "validation_data": pair,
        "random_state": random_state_check,
        "verbose": verbosity,
    }

    def _plan(self, params, solver):
        """The one :class:`FitPlan` of a fit: these parameters, no features or labels yet."""
        cache_bytes, share = params["cache_bytes"], None
        if isinstance(cache_bytes, engine.CacheShare):  # a share of the rows: the engine resolves it
            cache_bytes, share = None, float(cache_bytes)
        scaler = self.feature_map if isinstance(self.feature_map, Standardize) else None
        return FitPlan(
            C=params["C"], loss=params["loss"], crammer_singer=self.multi_class == "crammer_singer",
            class_weight=self.class_weight, bias=params["bias"], tol=params["tol"],
            max_iter=params["max_iter"], solver=solver, dual=params["dual"], cluster=self.cluster,
            cache_bytes=cache_bytes, block_bytes=params["block_bytes"], cache_share=share,
            inner_iter=params["inner_iter"], cache_policy=params["cache_policy"], prefetch=params["prefetch"],
            shuffle=bool(self.shuffle), retries=params["retries"], alpha_store=params["alpha_store"],
            read_timeout=params["read_timeout"], spill=params["spill"], spill_dir=self.spill_dir,
            deterministic=bool(self.deterministic), random_state=self.random_state,
            probability=bool(self.probability), scaler=scaler,
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
            The cluster to train on (None: the active client, if any).
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
        plan = self._plan(checked_params(self), self.solver)
        self.__dict__.pop("_stream", None)  # a fit ends any partial_fit stream
        out_of_core = is_dask_collection(X) or isinstance(X, str | os.PathLike)
        plan, client = engine.where_to_fit(
            plan, client, out_of_core=out_of_core, checkpointing=self.checkpoint_dir is not None,
            validating=self.validation_data is not None,
        )  # fmt: skip
        client = engine.check(
            plan, out_of_core=out_of_core, input_name=type(X).__name__, client=client, resume=resume,
            checkpointing=self.checkpoint_dir is not None, validating=self.validation_data is not None,
        )  # fmt: skip
        if plan.cluster is not None:
            data = self._cluster_source(X, y, sample_weight)
        elif engine.streams(plan, out_of_core):
            data = self._source(X, y, sample_weight)
        else:
            data = self._memory_data(X, y, sample_weight)
        n_features = data.X.shape[1] if isinstance(data, engine.MemoryData) else data.n_features
        plan = plan.replace(feature_map=feature_spec(self.feature_map, n_features))
        checkpoints = None
        if self.checkpoint_dir is not None:
            fingerprint = engine.data_fingerprint(self.get_params(deep=False), data)
            checkpoints = engine.Checkpoints(self.checkpoint_dir, self.checkpoint_every, fingerprint)
        hooks = PassHooks(self.callbacks, self.verbose, self._validation_set(), plan.feature_map)
        result = engine.fit(
            data, plan, hooks, client=client, checkpoints=checkpoints, resume=resume, clock_start=clock_start
        )
        self._set_model(result)
        return self

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
        plan = self._plan(checked_params(self), "partial")
        engine.check_partial(plan, checkpointing=self.checkpoint_dir is not None)
        stream = getattr(self, "_stream", None)
        fitted = hasattr(self, "coef_")
        first = stream is None and not fitted
        classes = self._partial_fit_classes(classes, first=first)
        clock_start = time.perf_counter()
        if is_dask_collection(X) or isinstance(X, str | os.PathLike):
            data = self._source(X, y, sample_weight, check_width=not first)
            n_features = data.n_features
        else:
            data = self._memory_data(X, y, sample_weight, reset=first)
            n_features = data.X.shape[1]
        self.classes_ = classes
        seed = int(check_random_state(self.random_state).randint(_INT64_MAX, dtype=np.int64))
        plan = plan.replace(feature_map=feature_spec(self.feature_map, n_features), seed=seed).with_labels(
            classes, np.ones(classes.shape[0], dtype=np.int64), classes
        )
        if plan.cache_share is not None:  # a share of a stream of unknown size: no rows are kept
            plan = plan.with_cache_bytes(1)
        start_from = (self.coef_, self.intercept_) if stream is None and fitted else None
        if stream is None:
            self.history_ = []
        result = engine.fit_partial(data, plan, stream, start_from, clock_start)
        self._stream = result.state
        self.history_ = [*self.history_, *result.history]
        self._set_weights(plan, result.W)
        self.n_iter_ = result.state.blocks
        problems = 1 if plan.crammer_singer else self.coef_.shape[0]
        self.objective_ = np.nan if problems == 1 else np.full(problems, np.nan)
        self.duality_gap_ = np.nan if problems == 1 else np.full(problems, np.nan)
        return self

    def _set_weights(self, plan, W):
        """``coef_`` and ``intercept_`` from the engine's ``W`` (a row per problem, bias weight last)."""
        W = cs_model(W) if plan.crammer_singer else W
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1] * plan.bias

    def _set_model(self, result):
        """Every fitted attribute from the engine's :class:`~dask_streamsvm.engine.result.FitResult`;
        warns if it did not converge, or was interrupted."""
        plan = result.plan
        for name in ("cluster_parts_", "standardize_", "probA_", "probB_"):  # set again where they apply
            self.__dict__.pop(name, None)
        self.classes_ = plan.classes
        self._set_weights(plan, result.W)
        if result.scaler is not None:  # the standardized features' model, for the raw features
            self.standardize_ = result.scaler
            self.coef_, self.intercept_ = result.scaler.fold(self.coef_, self.intercept_)
        self.n_iter_ = int(result.passes)
        objective = np.array([c.primal for c in result.certificates])
        gap = np.array([c.relative_gap for c in result.certificates])
        if not result.certified:  # the certificates bound w = 0, not the trained model returned
            objective, gap = np.full_like(objective, np.nan), np.full_like(gap, np.nan)
        one = len(result.certificates) == 1
        self.objective_, self.duality_gap_ = (float(objective[0]), float(gap[0])) if one else (objective, gap)
        self.history_ = result.history
        if result.platt is not None:
            self.probA_, self.probB_ = result.platt
        if result.parts is not None:
            self.cluster_parts_ = result.parts
        for message in result.messages:
            warnings.warn(message, ConvergenceWarning, stacklevel=5)
        if not result.certified:
            warn_uncertified(result.passes, result.interrupted)
        elif not np.all(result.converged) and not (result.stopped or result.interrupted):
            message = unconverged_message(plan, result.certificates, result.converged, result.feature_max)
            warnings.warn(message, ConvergenceWarning, stacklevel=5)
        if result.interrupted and result.certified:
            warn_interrupted(self, result.passes)

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

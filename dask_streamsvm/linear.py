"""``LinearSVC``: LIBLINEAR's L1/L2-loss linear SVM with an exact certificate.

The estimator's parameters and the problem it names; the fit, its plan and
the fitted attributes are every linear model's (:mod:`dask_streamsvm._linear_model`).
"""

from ._linear_model import PARAMETER_CONSTRAINTS, LinearModel
from ._validation import boolean, one_of
from .engine.plan.losses import SVM_LOSSES


class LinearSVC(LinearModel):
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
    penalty : {"l2", "l1"}, default="l2"
        ``"l2"``: the regulariser ``1/2 ||w||^2`` above.  ``"l1"``: ``||w||_1``
        in its place (sparse models; the bias weight is penalised like any
        other), with ``loss="squared_hinge"`` and ``dual=False`` or
        ``"auto"``, as LIBLINEAR's ``-s 5`` and scikit-learn allow: solved
        in memory by coordinate descent with a Newton direction per feature
        (CDN, Yuan et al. 2010; :mod:`dask_streamsvm.engine.primal.l1`), and
        tall rows (at least 100 times the features) and a Dask collection or
        path by the primal Newton reads, each step the
        minimiser of the read's quadratic model plus ``||w||_1`` (newGLMNET's
        step, :mod:`dask_streamsvm.engine.primal.penalties`), streamed or on
        a cluster, at most 4,096 features plus the bias; certified by a
        duality gap either way.  ``solver="memory"`` computes a collection
        into memory (coordinate descent on short rows).
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
        times or more (in memory on dense rows without a feature map,
        :data:`~dask_streamsvm.engine.choice.DENSE_PRIMAL_RATIO` times; on a
        cluster, see ``cluster``); else the dual.
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
        ``PolynomialMap()`` is scikit-learn's ``PolynomialFeatures(2)`` map (every
        monomial of weight 1), not the polynomial kernel's;
        ``PolynomialMap(gamma=..., coef0=...)`` is the kernel's exact map.
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
        weight their positive class only, as LIBLINEAR does.  ``"balanced"``
        weighs class ``j`` by ``n / (k n_j)``, ``n_j`` the sample weight of
        its rows and ``n`` theirs all (their counts without
        ``sample_weight``), as scikit-learn 1.9.
    tol : float, default=1e-3
        Stop when the relative duality gap ``(P - D) / P`` is at most this.
    max_iter : int, default=1000
        Maximum number of passes over the data (per binary problem in
        memory; reads of the collection when streaming, plus one read to
        certify the final model if they did not converge).
    solver : {"auto", "memory", "streamsvm", "sbm", "bm", "band"}, default="auto"
        ``"memory"`` holds all rows in RAM (Dask input is computed first).
        ``"streamsvm"`` streams partitions through a cache of at most
        ``cache_bytes`` (Matsushima et al. 2012). ``"sbm"`` (selective
        block minimization, Chang & Roth 2011) loads blocks of partitions
        of up to ``block_bytes``, solves the dual on block plus cache
        (``inner_iter``) and keeps the most informative rows in a
        cache of ``cache_bytes``; ``"bm"`` is the same without a cache
        (Yu et al. 2010). ``"band"`` (the hinge loss) solves a sample's
        problem, then reads the rows' margins there and solves the band of
        rows nearest the margin in memory, the others held as a sum, two or
        three reads in all. ``"auto"`` streams Dask collections and file
        paths (with ``"band"`` for the hinge loss, the primal solver on tall
        data, else ``"sbm"``, its cache and blocks sharing ``cache_bytes``
        half and half where ``block_bytes`` is None; ``"streamsvm"`` where
        the band gives way and for ``cache_policy="paper"``) and solves in-memory
        data in memory (with ``"band"`` for the hinge loss on tall dense
        rows).
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
        for BM, which then uses the same memory as SBM; where ``"auto"``
        chooses SBM, half of ``cache_bytes``, its cache the other half; a
        partition larger than a block trains a block-sized piece at a time).
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
    cluster : {"auto", "average", "cocoa", "sbm", None}, default="auto"
        ``"auto"``: a Dask collection or path trains on the cluster of the
        active ``dask.distributed`` client (or ``fit(..., client=...)``) with
        ``solver="auto"``; anything else in this process. On a cluster each
        worker reads its part of the partitions, and ``"auto"`` picks a
        method whose steps do not grow with the workers: with the squared
        hinge, Newton steps summed in a tree on the workers (``"newton"``,
        or Hessian products beyond 1,023 features: ``"truncated_newton"``),
        as exact as on one machine; with the hinge, the band from a sample
        (``"band"``), SBM on one worker (``"sbm"``) where it gives up; with ``dual=True`` and the
        squared hinge, CoCoA+. ``history_`` names it (``"method"``).
        ``"cocoa"``: CoCoA+ rounds to the exact gap ``tol`` (``max_iter``
        counts rounds). ``"sbm"``: one machine's SBM (``solver="sbm"``) on
        the first part's worker, each partition read on its part's worker
        and brought to it: the passes of one machine, whatever the workers,
        at the cost of carrying the rows to one worker every pass
        (``cache_bytes="10%"`` is a share of all the rows).
        ``"average"``: each worker trains on its part and the models are
        averaged by rows (one shot; ``duality_gap_`` bounds it).
        ``dual=False`` runs Newton whatever the value. None: in this
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
        (``"streamsvm"``: with ``deterministic=True``; ``cluster="average"``
        with ``solver="auto"`` streams StreamSVM on each part).
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
        **PARAMETER_CONSTRAINTS,
        "penalty": one_of("l2", "l1"),
        "loss": one_of(*SVM_LOSSES),
        "multi_class": one_of("ovr", "crammer_singer"),
        "probability": boolean,
    }

    def _model(self):
        return self.loss, self.multi_class == "crammer_singer", bool(self.probability)

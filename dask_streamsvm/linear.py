"""``LinearSVC``: LIBLINEAR's L1/L2-loss linear SVM with an exact certificate."""

import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._calibration import N_FOLDS, fit_sigmoid, folds, held_out, probabilities
from ._lazy import feature_frame, map_rows
from ._persist import _plain_array, save_model
from ._progress import PassProgress, pass_line
from ._validation import (
    check_choice,
    check_class_weight,
    check_positive_float,
    check_positive_int,
    check_sample_weight,
)
from .engine.cache import parse_bytes
from .engine.checkpoint import Checkpoints, plain
from .engine.crammer_singer import solve_crammer_singer
from .engine.layout import kernel_rows
from .engine.memory import LOSSES, BinaryProblem, solve_in_memory
from .engine.partial import OnePassSBM
from .engine.reader import Reader
from .engine.source import (
    DaskSource,
    _is_dask_dataframe,
    is_dask_collection,
    merge_label_counts,
    missing_labels,
)
from .engine.streamsvm import model_width, solve_streamsvm
from .io import as_dask, open_path
from .kernels.objective import decision_values

SOLVERS = ("auto", "memory", "streamsvm", "sbm", "bm")
CACHE_POLICIES = ("informative", "random")
MULTI_CLASS = ("ovr", "crammer_singer")
ON_INVALID = ("raise", "skip")


def _compute_if_dask(*arrays):
    """Bring small Dask collections into memory (for ``solver='memory'``)."""
    if not any(is_dask_collection(a) for a in arrays):
        return arrays
    import dask

    return dask.compute(*arrays)


class LinearSVC(ClassifierMixin, BaseEstimator):
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
    coordinate descent (Hsieh et al. 2008) with LIBLINEAR's shrinking; it
    stops on the exact relative duality gap, a certificate that the primal
    objective is within ``tol`` of the optimum.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter: cost of a unit of loss. Must be > 0.
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        Squared hinge (LIBLINEAR ``-s 1``) or hinge (``-s 3``).  Ignored
        by ``multi_class="crammer_singer"``, whose loss is its own.
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
        of up to ``block_bytes``, solves the dual on block plus cache for
        ``inner_iter`` passes and keeps the most informative rows in a
        cache of ``cache_bytes``; ``"bm"`` is the same without a cache
        (Yu et al. 2010). ``"auto"`` streams Dask collections and file
        paths with ``"streamsvm"`` and solves in-memory data in memory.
    cache_bytes : int or str, default="1GB"
        Memory budget of the row cache of the streaming solvers: an int or a
        string such as ``"512MB"`` or ``"2GiB"``.
    block_bytes : int, str or None, default=None
        ``solver="sbm"`` and ``"bm"``: bytes of rows loaded per block (None:
        ``cache_bytes`` for SBM, the paper's SBM-1/2, and ``2 * cache_bytes``
        for BM, which then uses the same memory as SBM).
    inner_iter : int, default=10
        ``solver="sbm"`` and ``"bm"``: DCD passes over block plus cache per
        block, as in the paper; ``cluster="cocoa"``: local DCD passes per
        round.
    cache_policy : {"informative", "random"}, default="informative"
        ``solver="sbm"``: keep the rows the paper's score ranks highest
        (unbounded rows first), or a random subset (the paper's SBM-rand).
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
        so that ``predict_proba`` works.  In memory, as libsvm does: the
        sigmoid is fitted on 5-fold cross-fitted decision values (folds from
        a hash of the row number and ``random_state``), and the model on all
        rows; six solves in all.  Streaming holds a tenth of the rows (by
        the same hash) out of training and fits the sigmoid on their
        decision values, collected during the read that certifies the final
        model, at no extra I/O.
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
        moved, gap). None trains in this process.
    on_invalid : {"raise", "skip"}, default="raise"
        What a row with a NaN or infinite feature, a missing label, or a
        NaN, infinite or negative sample weight does: ``"raise"`` stops the
        fit with an error naming the partition (or file and line), row and
        column; ``"skip"`` drops the row and counts it in ``history_``
        (``rows_skipped``, cumulative over the reads).
    retries : int, default=2
        Streaming: times a partition whose read fails with an I/O error
        (:class:`OSError`, except a missing file or a refused permission) is
        read again, after 0.1, 0.2, 0.4 ... seconds, before the fit fails
        with that error. ``history_`` counts them (``read_retries``).
    checkpoint_dir : str, path or None, default=None
        Streaming solvers: write the whole state of the fit (weights, every
        row's dual variable, the cache, the random state, the history) to
        ``checkpoint_dir/checkpoint.zip`` at the end of every pass,
        atomically; ``fit(..., resume=True)`` continues from it.
    checkpoint_every : float or None, default=None
        Seconds: with ``checkpoint_dir``, write at the end of the first pass
        that ends at least this long after the last checkpoint, rather than
        after every pass.
    random_state : int, RandomState or None, default=None
        Seeds the row permutations; the same seed gives the same model.
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
        loss="squared_hinge",
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
        inner_iter=10,
        cache_policy="informative",
        prefetch=2,
        shuffle=True,
        alpha_store="memory",
        probability=False,
        callbacks=None,
        validation_data=None,
        cluster=None,
        on_invalid="raise",
        retries=2,
        checkpoint_dir=None,
        checkpoint_every=None,
        random_state=None,
        verbose=0,
    ):
        self.C = C
        self.loss = loss
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
        self.prefetch = prefetch
        self.shuffle = shuffle
        self.alpha_store = alpha_store
        self.probability = probability
        self.cluster = cluster
        self.callbacks = callbacks
        self.validation_data = validation_data
        self.on_invalid = on_invalid
        self.retries = retries
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_params(self):
        C = check_positive_float("C", self.C)
        check_choice("loss", self.loss, LOSSES)
        tol = check_positive_float("tol", self.tol)
        max_iter = check_positive_int("max_iter", self.max_iter)
        check_choice("solver", self.solver, SOLVERS)
        check_choice("multi_class", self.multi_class, MULTI_CLASS)
        check_class_weight(self.class_weight)
        check_choice("on_invalid", self.on_invalid, ON_INVALID)
        check_positive_int("retries", self.retries, low=0)
        if self.checkpoint_every is not None:
            check_positive_float("checkpoint_every", self.checkpoint_every, allow_zero=True)
        bias = 0.0
        if self.fit_intercept:
            bias = check_positive_float("intercept_scaling", self.intercept_scaling)
        return C, tol, max_iter, bias

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
        interrupt before that propagates.
        """
        clock_start = time.perf_counter()
        C, tol, max_iter, bias = self._check_params()
        self.__dict__.pop("_stream", None)  # a fit ends any partial_fit stream
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
        if self.cluster is not None:
            return self._fit_cluster(X, y, sample_weight, client, C, tol, max_iter, bias, clock_start)
        if streaming:
            return self._fit_stream(X, y, sample_weight, C, tol, max_iter, bias, clock_start, resume)
        X, y, sample_weight = _compute_if_dask(X, y, sample_weight)
        X, y, sample_weight, skipped = self._drop_invalid(X, y, sample_weight)
        X, y = self._validated(X, y, reset=True)
        check_classification_targets(y)
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        if hasattr(self.feature_map, "expand"):  # virtual examples: train on every row's variants
            X, y, sample_weight = self.feature_map.expand(X, y, sample_weight)
        classes, counts = np.unique(y, return_counts=True)
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int64).max, size=max(classes.shape[0], 1), dtype=np.int64)
        trained = sample_weight > 0
        weighted_classes = np.unique(y[trained]) if trained.any() else classes[:0]
        signs, costs = self._problem_tables(classes, counts, weighted_classes, C)
        y_index = np.searchsorted(classes, y)
        spec = self._feature_spec(X.shape[1])
        rows = kernel_rows(X, spec)
        width = model_width(X.shape[1], spec)

        def solve(weights, hooks=None):
            """``(W, certificates, passes, history, converged)`` of the model trained with ``weights``."""
            if self._crammer_singer:
                result = solve_crammer_singer(
                    rows, y_index, costs[0, y_index] * weights, k=classes.shape[0],
                    n_features=width, bias=bias, tol=tol, max_iter=max_iter, seed=int(seeds[0]),
                    clock_start=clock_start, on_pass=None if hooks is None else hooks.joint,
                )  # fmt: skip
                return (
                    _cs_model(result.W), [result.certificate], result.passes, result.history,
                    [result.converged],
                )  # fmt: skip
            results = []
            for c in range(signs.shape[0]):
                problem = BinaryProblem(
                    rows, signs[c, y_index], costs[c, y_index] * weights, self.loss, bias, width
                )
                results.append(
                    solve_in_memory(
                        problem, tol=tol, max_iter=max_iter, seed=int(seeds[c]), clock_start=clock_start,
                        on_pass=None if hooks is None else hooks.memory(c), label=self._problem_label(c),
                    )
                )  # fmt: skip
                if results[-1].interrupted and c + 1 < signs.shape[0]:
                    raise KeyboardInterrupt(
                        f"interrupted while training class {self._problem_label(c)!r}; the classes after "
                        "it were not trained, so no model was kept"
                    )
            if hooks is not None and any(r.interrupted for r in results):
                hooks.interrupted = max(r.passes for r in results)
            return (
                np.vstack([r.w for r in results]),
                [r.certificate for r in results],
                max(r.passes for r in results),
                [record for r in results for record in r.history],
                [r.converged for r in results],
            )

        scores = None
        if self.probability:
            # libsvm's recipe: cross-fitted decision values for the sigmoid,
            # then the model on all rows.
            fold = folds(X.shape[0], int(rng.randint(np.iinfo(np.int64).max)))
            scores = None
            for f in range(N_FOLDS):
                W = solve(sample_weight * (fold != f))[0]
                mask = fold == f
                if scores is None:
                    scores = np.empty((X.shape[0], W.shape[0]))
                scores[mask] = linear_scores(X[mask], W, bias, spec)
        hooks = _PassHooks(self, bias)
        result = solve(sample_weight, hooks)
        self._set_model(*result, bias=bias, stopped=hooks.stopped or hooks.interrupted is not None)
        if skipped:
            for record in self.history_:
                record["rows_skipped"] = skipped
        if hooks.interrupted is not None:
            _warn_interrupted(self, hooks.interrupted)
        if scores is not None:
            self._fit_platt(scores[trained], y[trained])
        return self

    def _drop_invalid(self, X, y, sample_weight):
        """In-memory input with the invalid rows dropped (``on_invalid="skip"``), and their count."""
        if self.on_invalid != "skip" or self._encoding:
            return X, y, sample_weight, 0
        from sklearn.utils import check_array

        X = check_array(
            X, accept_sparse="csr", dtype=[np.float64, np.float32], ensure_all_finite=False,
            accept_large_sparse=True,
        )  # fmt: skip
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            return X, y, sample_weight, 0  # the checks that follow name the problem
        bad = missing_labels(y).copy()
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            bad_values = np.flatnonzero(~np.isfinite(X.data))
            bad[np.searchsorted(X.indptr, bad_values, side="right") - 1] = True
        else:
            bad |= ~np.isfinite(X).all(axis=1)
        if sample_weight is not None and not np.isscalar(sample_weight):
            weights = np.asarray(sample_weight)
            if weights.shape == y.shape and weights.dtype.kind in "fiub":
                weights = weights.astype(np.float64)
                bad |= ~np.isfinite(weights) | (weights < 0)
        if not bad.any():
            return X, y, sample_weight, 0
        keep = ~bad
        if sample_weight is not None and not np.isscalar(sample_weight):
            sample_weight = np.asarray(sample_weight)[keep]
        return X[keep], y[keep], sample_weight, int(bad.sum())

    def partial_fit(self, X, y=None, classes=None, sample_weight=None):
        """One pass of selective block minimization over a block of a stream.

        SBM for streaming data (Chang & Roth 2011, section 4): the new rows
        start with ``alpha = 0``; the dual is solved on them plus a cache of
        the most informative rows kept from earlier blocks
        (``inner_iter`` passes); then the cache is chosen anew within
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
        need the whole data and are refused.
        """
        C, _, _, bias = self._check_params()
        inner_iter = check_positive_int("inner_iter", self.inner_iter)
        check_choice("cache_policy", self.cache_policy, CACHE_POLICIES)
        if isinstance(self.class_weight, str):
            raise ValueError(
                "class_weight='balanced' needs the class counts of the whole stream, which partial_fit "
                "does not see; pass a dict of weights or compute them first."
            )
        if self.probability:
            raise ValueError("probability=True is not supported by partial_fit; use fit.")
        if self.checkpoint_dir is not None:
            raise ValueError(
                "partial_fit writes no checkpoints: the model after each call is its whole state. Save it "
                "with save() (or pickle) between calls, and leave checkpoint_dir=None."
            )
        stream = getattr(self, "_stream", None)
        fitted = hasattr(self, "coef_")
        if classes is None and stream is None and not fitted:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        if classes is not None:
            classes = np.unique(np.asarray(classes))
            if (stream is not None or fitted) and not np.array_equal(classes, self.classes_):
                raise ValueError(
                    f"`classes={classes.tolist()!r}` is not the same as on the last call to partial_fit, "
                    f"was: {self.classes_.tolist()!r}."
                )
        else:
            classes = self.classes_
        clock_start = time.perf_counter()
        out_of_core = is_dask_collection(X) or isinstance(X, str | os.PathLike)
        first = stream is None and not fitted
        if out_of_core:
            blocks, n_features = self._stream_blocks(X, y, sample_weight, first)
        else:
            X, y, sample_weight, skipped = self._drop_invalid(X, y, sample_weight)
            X, y = self._validated(X, y, reset=first)
            check_classification_targets(y)
            n_features = X.shape[1]
            blocks = [(X, y, check_sample_weight(sample_weight, X.shape[0]), skipped)]
            if hasattr(self.feature_map, "expand"):
                blocks = [(*self.feature_map.expand(X, y, blocks[0][2]), skipped)]
        signs, costs = self._problem_tables(classes, np.ones(classes.shape[0], dtype=np.int64), classes, C)
        if stream is None:
            rng = check_random_state(self.random_state)
            stream = OnePassSBM(
                k=signs.shape[0], n_features=n_features, loss="hinge" if self._crammer_singer else self.loss,
                bias=bias, cache_bytes=parse_bytes(self.cache_bytes), inner_iter=inner_iter,
                cache_policy=self.cache_policy, crammer_singer=self._crammer_singer,
                seed=int(rng.randint(np.iinfo(np.int64).max, dtype=np.int64)),
                feature_map=self._feature_spec(n_features),
            )  # fmt: skip
            if fitted:
                stream.W[:] = self._warm_start_weights(bias)
            self.history_ = []
            self._stream = stream
        for X_block, y_block, weight, skipped in blocks:
            y_index = _class_index(classes, y_block)
            record = stream.add_block(X_block, signs[:, y_index], costs[:, y_index] * weight)
            record["seconds"] = time.perf_counter() - clock_start
            record["rows_skipped"] = skipped
            self.history_.append(record)
        W = _cs_model(stream.W) if self._crammer_singer else stream.W
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1] * bias
        self.n_iter_ = stream.blocks
        problems = 1 if self._crammer_singer else self.coef_.shape[0]
        self.objective_ = np.nan if problems == 1 else np.full(problems, np.nan)
        self.duality_gap_ = np.nan if problems == 1 else np.full(problems, np.nan)
        return self

    def _warm_start_weights(self, bias):
        """The stream's starting ``W`` from a model fitted by :meth:`fit`."""
        W = np.hstack([self.coef_, (self.intercept_ / bias if bias > 0 else 0.0 * self.intercept_)[:, None]])
        if self._crammer_singer and W.shape[0] == 1:
            return np.vstack([np.zeros_like(W), W])  # w_1 - w_0 = coef_
        return W

    def _stream_blocks(self, X, y, sample_weight, first):
        """Blocks ``(X, y, sample_weight)`` of a Dask collection or path, read ahead, one pass."""
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        source = DaskSource(X, y, sample_weight, encoder=self._source_encoder(), on_invalid=self.on_invalid)
        if first:
            self.n_features_in_ = source.n_input_features
            names = source.feature_names
            if names is not None and all(isinstance(c, str) for c in source.column_labels):
                self.feature_names_in_ = names
        elif source.n_input_features != self.n_features_in_:
            raise ValueError(
                f"X has {source.n_input_features} features, but LinearSVC is expecting "
                f"{self.n_features_in_} features as input."
            )
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int64).max, dtype=np.int64))
        prefetch = check_positive_int("prefetch", self.prefetch)

        def blocks():
            shuffle = bool(self.shuffle)
            with Reader(
                source, prefetch=prefetch, max_passes=1, shuffle=shuffle, seed=seed, retries=self.retries
            ) as reader:
                while True:
                    item = reader.get()
                    if item[0] == "done":
                        return
                    if item[0] == "block" and item[2].n_rows + item[2].n_skipped > 0:
                        block = item[2]
                        yield block.X, block.y, block.sample_weight, block.n_skipped

        return blocks(), source.n_features

    def _problem_tables(self, classes, counts, weighted_classes, C):
        """Labels and costs of each binary problem, by class index.

        Returns ``signs`` and ``costs`` of shape (n_problems, n_classes): a
        row of class j in problem c has label ``signs[c, j]`` and
        ``C_i = costs[c, j] * sample_weight_i``.  Binary: one problem with
        ``classes_[1]`` positive and ``C * class_weight[y]``.  One-vs-rest:
        LIBLINEAR weights only the positive class of each problem.
        """
        self.classes_ = classes
        if classes.shape[0] < 2:
            raise ValueError(
                "LinearSVC needs samples of at least 2 classes, but the data contains "
                f"only one class: {classes.tolist()[0]!r}. Pass y with two or more distinct labels."
            )
        if weighted_classes.shape[0] == 0:
            raise ValueError(
                "sample_weight is zero for every row, so there is nothing to train on. "
                "Give some rows a positive weight."
            )
        if weighted_classes.shape[0] < 2:
            raise ValueError(
                "LinearSVC needs samples of at least 2 classes with positive sample_weight, "
                f"but only class {weighted_classes.tolist()} has any. Give rows of another class "
                "a positive weight."
            )
        y_for_weights = np.repeat(classes, counts)
        class_weight = compute_class_weight(self.class_weight, classes=classes, y=y_for_weights)
        k = classes.shape[0]
        if self._crammer_singer:
            # One joint problem over k classes: row j's variables share C * class_weight[y].
            signs = np.where(np.eye(k, dtype=bool), 1.0, -1.0)
            return signs, np.repeat((C * class_weight)[None, :], k, axis=0)
        if k == 2:
            return np.array([[-1.0, 1.0]]), (C * class_weight)[None, :]
        same = np.eye(k, dtype=bool)
        signs = np.where(same, 1.0, -1.0)
        costs = np.where(same, C * class_weight[None, :], C)
        return signs, costs

    def _feature_spec(self, n_features):
        """The kernels' spec of ``feature_map`` for ``n_features`` raw features, or None."""
        if self.feature_map is None:
            return None
        if not hasattr(self.feature_map, "spec"):
            raise TypeError(
                f"feature_map must be a map of dask_streamsvm.features (PolynomialMap, ...) or None, "
                f"got {self.feature_map!r}."
            )
        return self.feature_map.spec(n_features)

    @property
    def _crammer_singer(self):
        return self.multi_class == "crammer_singer"

    def _problem_label(self, c):
        if self._crammer_singer:
            return None
        labels = self.classes_.tolist()
        return labels[1] if len(labels) == 2 else labels[c]

    def _set_model(self, W, certificates, n_iter, history, converged, *, bias, stopped=False):
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1] * bias
        self.n_iter_ = int(n_iter)
        objective = np.array([c.primal for c in certificates])
        gap = np.array([c.relative_gap for c in certificates])
        single = len(certificates) == 1
        self.objective_ = float(objective[0]) if single else objective
        self.duality_gap_ = float(gap[0]) if single else gap
        self.history_ = history
        for name in ("probA_", "probB_"):
            if hasattr(self, name):
                delattr(self, name)
        unconverged = [self._problem_label(c) for c, ok in enumerate(converged) if not ok]
        if unconverged and not stopped:
            which = "" if single else f" for classes {unconverged}"
            warnings.warn(
                f"LinearSVC did not reach tol={self.tol:g} (relative duality gap) within "
                f"max_iter={self.max_iter} passes{which}; the final gap is {np.max(gap):.3g}. "
                "Increase max_iter, loosen tol, or (for loss='hinge') use a smaller C.",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _fit_stream(self, X, y, sample_weight, C, tol, max_iter, bias, clock_start, resume=False):
        parse_bytes(self.cache_bytes)  # checked before any data is read
        check_positive_int("prefetch", self.prefetch)
        check_choice("alpha_store", self.alpha_store, ("memory", "disk"))
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            X, y, sample_weight = as_dask(X, y, sample_weight)
        source = DaskSource(X, y, sample_weight, encoder=self._source_encoder(), on_invalid=self.on_invalid)
        checkpoints = saved = None
        if self.checkpoint_dir is not None:
            checkpoints = Checkpoints(self.checkpoint_dir, self.checkpoint_every, self._fingerprint(source))
            saved = checkpoints.load() if resume else None
        if saved is not None:  # the classes counted by the fit that wrote it: no read to count them again
            arrays = saved[1]
            label_counts = (arrays["classes"], arrays["class_counts"], arrays["weighted_classes"])
        else:
            label_counts = source.label_counts()
        return self._fit_source(
            source, label_counts, C, tol, max_iter, bias, clock_start, checkpoints=checkpoints, resume=saved
        )

    def _fingerprint(self, source):
        """What a checkpoint must match to be resumed: the data's layout, the parameters that shape w."""
        params = self.get_params(deep=False)
        for name in ("tol", "max_iter", "callbacks", "verbose", "validation_data", "prefetch", "retries",
                     "checkpoint_dir", "checkpoint_every", "alpha_store", "cluster"):  # fmt: skip
            params.pop(name)
        params["random_state"] = repr(params["random_state"])
        params["feature_map"] = repr(params["feature_map"])
        params["class_weight"] = repr(params["class_weight"])
        return {
            **params,
            "n_partitions": source.n_partitions,
            "n_features": source.n_features,
            "dtype": str(source.dtype),
            "sparse": bool(source.is_sparse),
        }

    def _fit_cluster(self, X, y, sample_weight, client, C, tol, max_iter, bias, clock_start):
        """``cluster="average"`` or ``"cocoa"`` on a ``dask.distributed`` cluster (:mod:`.cluster`)."""
        from . import cluster as cl
        from .engine.certificate import Certificate

        check_choice("cluster", self.cluster, cl.CLUSTER_MODES)
        unsupported = {
            "multi_class='crammer_singer'": self._crammer_singer,
            "probability=True": bool(self.probability),
            "validation_data": self.validation_data is not None,
        }
        for what, used in unsupported.items():
            if used:
                raise ValueError(f"cluster={self.cluster!r} does not support {what} yet; use cluster=None.")
        client = cl.resolve_client(client)
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            raise TypeError(
                f"cluster={self.cluster!r} trains on a Dask Array or DataFrame (or a path), got "
                f"{type(X).__name__}; wrap it with dask.array.from_array or dask.dataframe.from_pandas, "
                "or set cluster=None to train in this process."
            )
        parse_bytes(self.cache_bytes)
        passes = check_positive_int("inner_iter", self.inner_iter)
        source = DaskSource(X, y, sample_weight, encoder=self._source_encoder(), on_invalid=self.on_invalid)
        plan = cl.plan(source.n_partitions, cl._workers(client))
        parts = [(w, cl.Packed(source.subset(ids))) for w, ids in plan]
        part_counts = cl._gather(client, [cl._submit(client, cl.count_labels, s, worker=w) for w, s in parts])
        label_counts = merge_label_counts(part_counts)
        signs, costs = self._problem_tables(*label_counts, C)
        self.n_features_in_ = source.n_input_features
        names = source.feature_names
        if names is not None and all(isinstance(c, str) for c in source.column_labels):
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        spec = self._feature_spec(source.n_features)
        tables = (self.classes_, signs, costs, spec, self.loss == "squared_hinge")
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        if self.cluster == "average":
            params = self.get_params(deep=False)
            params.update(cluster=None, callbacks=None, validation_data=None, verbose=0, random_state=seed)
            rows = [int(np.sum(c[1])) for c in part_counts]
            W, primal, dual, history, messages = cl.fit_average(
                client, parts, rows, params, label_counts, C, tol, max_iter, bias, tables, clock_start
            )
            for message in messages:
                warnings.warn(f"on a worker: {message}", ConvergenceWarning, stacklevel=3)
            n_iter = max(r.get("passes", 0) for r in history)
            converged, stopped = [True] * W.shape[0], True  # the average's gap is reported, not a target
        else:
            callbacks = list(self.callbacks or [])
            stop = {"now": False}

            def on_round(record):
                stop["now"] = any([bool(cb(record)) for cb in callbacks])
                return stop["now"]

            W, primal, dual, n_iter, history, done = cl.fit_cocoa(
                client, parts, tol, max_iter, passes, seed, tables, model_width(source.n_features, spec),
                bias,
                clock_start, on_round=on_round if callbacks else None,
            )  # fmt: skip
            converged, stopped = [done] * W.shape[0], stop["now"]
        certificates = [
            Certificate(primal=float(p), dual=float(d)) for p, d in zip(primal, dual, strict=True)
        ]
        self._set_model(W, certificates, n_iter, history, converged, bias=bias, stopped=stopped)
        return self

    def _fit_source(
        self, source, label_counts, C, tol, max_iter, bias, clock_start, checkpoints=None, resume=None
    ):
        """Stream ``source`` (a :class:`DaskSource`) with its ``(classes, counts, weighted classes)``.

        ``checkpoints`` and ``resume`` (a loaded checkpoint) go to the trainer
        (:func:`~.engine.streamsvm.run_trainer`); the checkpoints carry the
        label counts too.
        """
        cache_bytes = parse_bytes(self.cache_bytes)
        prefetch = check_positive_int("prefetch", self.prefetch)
        classes, counts, weighted_classes = label_counts
        signs, costs = self._problem_tables(classes, counts, weighted_classes, C)
        self.n_features_in_ = source.n_input_features
        spec = self._feature_spec(source.n_features)
        names = source.feature_names
        if names is not None and all(isinstance(c, str) for c in source.column_labels):
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

        def encode(block):
            y_index = np.searchsorted(classes, block.y)
            y_index = np.minimum(y_index, classes.shape[0] - 1)
            unknown = classes[y_index] != block.y
            if unknown.any():
                label = block.y[np.flatnonzero(unknown)[0]].item()
                raise ValueError(
                    f"partition {block.partition} has label {label!r}, which is not among the classes "
                    f"{classes.tolist()} found in y; the collection changed between reads."
                )
            return signs[:, y_index], costs[:, y_index] * block.sample_weight

        if checkpoints is not None:
            checkpoints = _WithLabels(checkpoints, label_counts)
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int64).max, dtype=np.int64))
        calibration_seed = int(rng.randint(np.iinfo(np.int64).max)) if self.probability else None
        held = {"pass": None, "scores": [], "y": []}  # this read's held-out rows, for Platt

        def encode_for_training(block):
            y_pm, cost = encode(block)
            if calibration_seed is not None:
                cost = cost * ~held_out(block.row_ids, calibration_seed)
            return y_pm, cost

        hooks = _PassHooks(self, bias, n_partitions=source.n_partitions, cache_bytes=cache_bytes)

        def on_block(pass_k, block, W, fill):
            hooks.block(pass_k, block, fill)
            if calibration_seed is None:
                return
            if pass_k != held["pass"]:
                held.update({"pass": pass_k, "scores": [], "y": []})
            mask = held_out(block.row_ids, calibration_seed) & (block.sample_weight > 0)
            if mask.any():
                W = _cs_model(W) if self._crammer_singer else W
                scores = linear_scores(block.X[mask], W, bias, spec)
                held["scores"].append(scores)
                held["y"].append(block.y[mask])

        solve, options = solve_streamsvm, {}
        if self.solver in ("sbm", "bm"):
            from .engine.sbm import solve_sbm

            # Default: SBM-1/2 (block = cache); BM gets the same memory in its block.
            block_bytes = cache_bytes if self.solver == "sbm" else 2 * cache_bytes
            if self.block_bytes is not None:
                block_bytes = parse_bytes(self.block_bytes, "block_bytes")
            check_choice("cache_policy", self.cache_policy, CACHE_POLICIES)
            solve = solve_sbm
            options = {
                "cache_bytes": 0 if self.solver == "bm" else cache_bytes,
                "block_bytes": block_bytes,
                "inner_iter": check_positive_int("inner_iter", self.inner_iter),
                "cache_policy": self.cache_policy,
            }
        result = solve(
            source,
            encode_for_training,
            n_problems=signs.shape[0],
            loss="hinge" if self._crammer_singer else self.loss,
            crammer_singer=self._crammer_singer,
            feature_map=spec,
            bias=bias,
            tol=tol,
            max_iter=max_iter,
            **{"cache_bytes": cache_bytes, **options},
            prefetch=prefetch,
            shuffle=bool(self.shuffle),
            seed=seed,
            labels=[self._problem_label(c) for c in range(1 if self._crammer_singer else signs.shape[0])],
            alpha_store=self.alpha_store,
            clock_start=clock_start,
            on_pass=hooks.stream,
            on_block=on_block,
            retries=check_positive_int("retries", self.retries, low=0),
            checkpoints=checkpoints,
            resume=resume,
        )
        W = _cs_model(result.W) if self._crammer_singer else result.W
        self._set_model(
            W, result.certificates, result.passes, result.history,
            [result.converged] * len(result.certificates), bias=bias,
            stopped=hooks.stopped or result.interrupted,
        )  # fmt: skip
        if result.interrupted:
            _warn_interrupted(self, result.passes)
        if calibration_seed is not None:
            # The last read certified the returned model: its held-out scores are the model's.
            scores = np.vstack(held["scores"]) if held["scores"] else np.zeros((0, signs.shape[0]))
            labels = np.concatenate(held["y"]) if held["y"] else np.zeros(0)
            self._fit_platt(scores, labels)
        return self

    def _fit_platt(self, scores, y):
        """Platt's sigmoid per problem on held-out decision values ``scores`` (n, n_problems)."""
        scores = np.asarray(scores).reshape(y.shape[0], -1)
        k = scores.shape[1]
        positives = [y == self.classes_[1]] if k == 1 else [y == label for label in self.classes_]
        fitted = [fit_sigmoid(scores[:, c], positives[c]) for c in range(k)]
        self.probA_ = np.array([a for a, _ in fitted])
        self.probB_ = np.array([b for _, b in fitted])

    # -- prediction ----------------------------------------------------------------------

    def _scores(self, rows):
        W = np.hstack([self.coef_, self.intercept_[:, None]])
        scores = linear_scores(rows, W, 1.0, self._feature_spec(self._raw_width()))
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _labels(self, rows):
        scores = self._scores(rows)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[scores.argmax(axis=1)]

    def _proba(self, rows):
        return probabilities(self._scores(rows), self.probA_, self.probB_)

    def _check_in_memory(self, X):
        return self._validated(X, reset=False)[0]

    def _validated(self, X, y=None, *, reset):
        """In-memory ``X`` (and ``y``) checked: ``(rows, y)``.

        With a map that encodes (:class:`~dask_streamsvm.features.HashingMap`),
        ``X`` may hold strings; the names and number of its columns are
        checked, and ``rows`` are its encoded raw rows.
        """
        check = {"accept_sparse": "csr", "dtype": [np.float64, np.float32], "accept_large_sparse": True}
        if not self._encoding:
            if y is None:
                return validate_data(self, X, reset=reset, **check), None
            return validate_data(self, X, y, reset=reset, order="C", **check)
        if not hasattr(X, "columns"):
            from sklearn.utils import check_array

            X = check_array(X, **check)
        validate_data(self, X, skip_check_array=True, reset=reset)  # n_features_in_, feature_names_in_
        rows = self.feature_map.encode(X)
        if y is not None:
            from sklearn.utils import check_array
            from sklearn.utils.validation import column_or_1d

            # 1-D and finite, as scikit-learn checks y (validate_data with X would reset feature names).
            y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name="y"), warn=True)
            if y.shape[0] != rows.shape[0]:
                raise ValueError(f"X has {rows.shape[0]} rows but y has {y.shape[0]} labels.")
        return rows, y

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

    def decision_function(self, X):
        """Signed distance to the hyperplane(s).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, Dask Array, Dask DataFrame}
            Dask input gives a lazy result with the same partitions: a Dask
            Array for a Dask Array, a Dask Series (two classes) or DataFrame
            (a column per class) for a Dask DataFrame, whose columns other
            than the model's features (a label column, say) are ignored.

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            columns = None if self.coef_.shape[0] == 1 else self.classes_
            return map_rows(self, X, self._scores, columns=columns, name="decision")
        return self._scores(self._check_in_memory(X))

    def predict(self, X):
        """Class labels: positive score for the second class, else argmax.

        Dask input gives a lazy Dask Array or Series with its partitions.
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return map_rows(self, X, self._labels, name="prediction")
        return self._labels(self._check_in_memory(X))

    def _has_probability(self):
        if not self.probability:
            raise AttributeError("predict_proba needs probability=True at fit time.")
        return True

    @available_if(_has_probability)
    def predict_proba(self, X):
        """Class probabilities by Platt scaling (``probability=True``).

        Returns an array of shape (n_samples, n_classes), columns in the
        order of ``classes_`` (a lazy Dask Array or DataFrame for Dask input).
        """
        check_is_fitted(self, "probA_")
        if is_dask_collection(X):
            return map_rows(self, X, self._proba, columns=self.classes_, name="proba")
        return self._proba(self._check_in_memory(X))

    @available_if(_has_probability)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))  # lazy for Dask results too

    def score(self, X, y, sample_weight=None):
        """Accuracy on ``(X, y)``; for a Dask DataFrame ``y`` may name its label column."""
        if not is_dask_collection(X):
            return super().score(X, y, sample_weight=sample_weight)
        import dask
        from sklearn.metrics import accuracy_score

        if isinstance(y, str) and _is_dask_dataframe(X):
            y = X[y]
        predicted, y, sample_weight = dask.compute(self.predict(X), y, sample_weight)
        return float(accuracy_score(np.asarray(y), np.asarray(predicted), sample_weight=sample_weight))

    # -- model files ---------------------------------------------------------------------

    def save(self, path):
        """Write the fitted model to ``path`` without pickle; read it with :func:`dask_streamsvm.load`.

        The file is a zip archive of ``.npy`` arrays and JSON metadata with a
        format version and checksums.  ``callbacks`` and ``validation_data``
        are not saved, and a ``random_state`` that is not an int is saved
        as None.
        """
        check_is_fitted(self)
        save_model(self, path)

    def _model_params(self):
        params = self.get_params(deep=False)
        params["callbacks"] = params["validation_data"] = None
        if not isinstance(params["random_state"], int | np.integer | None):
            params["random_state"] = None
        return params

    def _model_state(self):
        arrays = {"coef_": self.coef_, "intercept_": self.intercept_, "classes_": self.classes_}
        if hasattr(self, "probA_"):
            arrays.update(probA_=self.probA_, probB_=self.probB_)
        attributes = {
            "n_features_in_": self.n_features_in_,
            "n_iter_": self.n_iter_,
            "objective_": np.atleast_1d(self.objective_).tolist(),
            "duality_gap_": np.atleast_1d(self.duality_gap_).tolist(),
            "history_": [{k: plain(v) for k, v in r.items()} for r in self.history_],
        }
        if hasattr(self, "feature_names_in_"):
            attributes["feature_names_in_"] = [str(c) for c in self.feature_names_in_]
        return arrays, attributes

    def _set_model_state(self, arrays, attributes):
        self._check_params()
        classes = arrays["classes_"]
        coef = np.asarray(arrays["coef_"], dtype=np.float64)
        intercept = np.asarray(arrays["intercept_"], dtype=np.float64)
        n_features = int(attributes["n_features_in_"])
        k = classes.shape[0]
        rows = 1 if k == 2 else k
        if classes.ndim != 1 or k < 2 or np.unique(classes).shape[0] != k:
            raise ValueError(f"classes_ must hold at least 2 distinct labels, got {classes!r}")
        raw = self.feature_map.raw_width(n_features) if self.feature_map is not None else n_features
        width = model_width(raw, self._feature_spec(raw))
        if coef.shape != (rows, width) or intercept.shape != (rows,):
            raise ValueError(
                f"coef_ {coef.shape} and intercept_ {intercept.shape} do not fit {k} classes "
                f"and {width} features"
            )
        if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
            raise ValueError("coef_ or intercept_ holds NaN or infinity")
        objective = np.asarray(attributes["objective_"], dtype=np.float64)
        gap = np.asarray(attributes["duality_gap_"], dtype=np.float64)
        problems = 1 if self._crammer_singer else rows
        if objective.shape != (problems,) or gap.shape != (problems,):
            raise ValueError("objective_ and duality_gap_ need one value per problem")
        self.classes_, self.coef_, self.intercept_ = classes, coef, intercept
        self.n_features_in_ = n_features
        self.n_iter_ = int(attributes["n_iter_"])
        self.objective_ = float(objective[0]) if problems == 1 else objective
        self.duality_gap_ = float(gap[0]) if problems == 1 else gap
        history = attributes.get("history_", [])
        if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
            raise ValueError("history_ must be a list of records")
        self.history_ = history
        if "feature_names_in_" in attributes:
            names = np.asarray(attributes["feature_names_in_"], dtype=object)
            if names.shape != (n_features,):
                raise ValueError("feature_names_in_ must name every feature")
            self.feature_names_in_ = names
        if "probA_" in arrays:
            probA = np.asarray(arrays["probA_"], dtype=np.float64)
            probB = np.asarray(arrays["probB_"], dtype=np.float64)
            if probA.shape != (rows,) or probB.shape != (rows,):
                raise ValueError("probA_ and probB_ need one value per problem")
            self.probA_, self.probB_ = probA, probB


def linear_scores(X, W, bias, feature_map=None):
    """``[phi(x), bias] . w_c`` for every row of ``X`` and row ``w_c`` of ``W``, shape (n, k)."""
    if feature_map is None:
        return safe_sparse_dot(X, W[:, :-1].T, dense_output=True) + W[:, -1] * bias
    rows = kernel_rows(X, feature_map)
    scores = np.empty((W.shape[0], X.shape[0]))
    for c in range(W.shape[0]):
        decision_values(rows, np.ascontiguousarray(W[c]), bias, scores[c])
    return scores.T


def _class_index(classes, y):
    """Index of each label in ``classes``, or a ValueError naming a label outside them."""
    y = np.asarray(y).ravel()
    index = np.minimum(np.searchsorted(classes, y), classes.shape[0] - 1)
    unknown = classes[index] != y
    if unknown.any():
        raise ValueError(
            f"y has label {y[np.flatnonzero(unknown)[0]].item()!r}, which is not among the classes "
            f"{classes.tolist()} given to partial_fit; pass every class of the stream in `classes`."
        )
    return index


class _WithLabels:
    """Checkpoints that also carry the label counts, so that resuming need not count them again."""

    def __init__(self, checkpoints, label_counts):
        self.checkpoints = checkpoints
        classes, counts, weighted = label_counts
        self.arrays = {
            "classes": _plain_array("classes", classes),
            "class_counts": np.asarray(counts, dtype=np.int64),
            "weighted_classes": _plain_array("weighted_classes", weighted),
        }

    def due(self):
        return self.checkpoints.due()

    def save(self, state, arrays):
        self.checkpoints.save(state, {**arrays, **self.arrays})


def _warn_interrupted(estimator, passes):
    gap = np.max(np.atleast_1d(estimator.duality_gap_))
    warnings.warn(
        f"fit was interrupted (KeyboardInterrupt); the model is the one certified after pass {passes} "
        f"(relative duality gap {gap:.3g}). Fit again to go on"
        + (", with resume=True to start from the last checkpoint." if estimator.checkpoint_dir else "."),
        UserWarning,
        stacklevel=3,
    )


def _cs_model(W):
    """Crammer-Singer weights as the model's rows: ``w_1 - w_0`` for two classes, as scikit-learn."""
    return W[1:2] - W[0:1] if W.shape[0] == 2 else W


class _PassHooks:
    """What ``fit`` does after every pass: validation score, progress, callbacks."""

    def __init__(self, estimator, bias, n_partitions=None, cache_bytes=None):
        self.estimator = estimator
        self.bias = bias
        self.callbacks = list(estimator.callbacks or [])
        if not all(callable(cb) for cb in self.callbacks):
            raise TypeError(f"callbacks must be a list of callables, got {estimator.callbacks!r}.")
        self.verbose = estimator.verbose
        self.validation = _validation_set(estimator)
        self.cache_bytes = cache_bytes
        self.progress = PassProgress(n_partitions) if n_partitions is not None and self.verbose == 1 else None
        self.stopped = False
        self.interrupted = None  # in memory: the pass an interrupt stopped at

    def _call(self, record):
        stop = False
        for callback in self.callbacks:
            stop = bool(callback(record)) or stop
        self.stopped = self.stopped or stop
        return stop

    def _score(self, W, c=None):
        X_val, y_val = self.validation
        spec = self.estimator._feature_spec(self.estimator._raw_width())
        scores = linear_scores(X_val, W, self.bias, spec)
        classes = self.estimator.classes_
        if c is not None:  # one one-vs-rest problem: its own binary accuracy
            return float(np.mean((scores[:, 0] > 0) == (y_val == classes[c])))
        if W.shape[0] == 1:
            return float(np.mean(classes[(scores[:, 0] > 0).astype(np.intp)] == y_val))
        return float(np.mean(classes[scores.argmax(axis=1)] == y_val))

    def memory(self, c):
        multi = self.estimator.classes_.shape[0] > 2

        def on_pass(record, w):
            if self.validation is not None:
                record["validation_score"] = self._score(w[None, :], c if multi else None)
            if self.verbose:
                print(pass_line(record), flush=True)
            return self._call(record)

        return on_pass

    def joint(self, record, W):
        """After a pass of a problem over all classes (Crammer-Singer in memory)."""
        return self.stream([record], W)

    def block(self, pass_k, block, fill):
        if self.progress is not None:
            self.progress.block(pass_k, block.n_rows, fill)

    def stream(self, records, W):
        if self.validation is not None:
            score = self._score(W)
            for record in records:
                record["validation_score"] = score
        if self.progress is not None:
            self.progress.end_pass(records, records[0]["cache_bytes"] / self.cache_bytes)
        elif self.verbose:
            for record in records:
                print(pass_line(record), flush=True)
        summary = dict(records[0])
        if len(records) > 1:
            summary.update(
                {
                    "class": None,
                    "primal": sum(r["primal"] for r in records),
                    "dual": sum(r["dual"] for r in records),
                    "gap": max(r["gap"] for r in records),
                }
            )
        return self._call(summary)


def _validation_set(estimator):
    """``validation_data`` as checked in-memory rows and labels, or None."""
    data = estimator.validation_data
    if data is None:
        return None
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise ValueError("validation_data must be a pair (X_val, y_val).")
    X_val, y_val = data
    if _is_dask_dataframe(X_val):
        if isinstance(y_val, str):
            y_val = X_val[y_val]
        X_val = feature_frame(estimator, X_val)
    elif hasattr(X_val, "columns") and hasattr(estimator, "feature_names_in_"):
        X_val = X_val[list(estimator.feature_names_in_)]
    X_val, y_val = _compute_if_dask(X_val, y_val)
    from sklearn.utils import check_array

    if estimator._encoding:
        X_val = estimator._validated(X_val, reset=False)[0]
    else:
        X_val = check_array(
            X_val, accept_sparse="csr", dtype=[np.float64, np.float32], accept_large_sparse=True
        )
    y_val = np.asarray(y_val).ravel()
    if X_val.shape[1] != estimator._raw_width() or y_val.shape[0] != X_val.shape[0]:
        raise ValueError(
            f"validation_data has {X_val.shape[0]} rows x {X_val.shape[1]} features and {y_val.shape[0]} "
            f"labels; the training data has {estimator.n_features_in_} features."
        )
    return X_val, y_val

"""What the linear models share: the one fit plan, the engine's front door, the fitted attributes.

:class:`LinearModel` is the base of :class:`~dask_streamsvm.LinearSVC` and
:class:`~dask_streamsvm.LogisticRegression`: it validates their parameters,
builds one :class:`~dask_streamsvm.engine.plan.problem.FitPlan`, asks
:func:`dask_streamsvm.engine.choice.place` where the fit runs, opens its input
for that place (in memory, a Dask collection or a path), calls
:func:`dask_streamsvm.engine.fit.fit` (``partial_fit``:
:func:`~dask_streamsvm.engine.fit.fit_partial`), which chooses the method once,
and sets the fitted attributes from the one
:class:`~dask_streamsvm.engine.plan.result.FitResult` it returns.  A model says
which problem it solves with :meth:`LinearModel._model`: its loss (a name of
:data:`~dask_streamsvm.engine.plan.problem.LOSSES`), whether its classes are one
joint problem (Crammer-Singer), and whether it fits Platt's sigmoids.
"""

import os
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets

from ._fit_context import fitted_in_context
from ._hooks import PassHooks, warn_interrupted, warn_uncertified
from ._lazy import feature_frame
from ._persist import LinearModelFile
from ._stream_classifier import StreamClassifier, feature_spec
from ._validation import (
    anything,
    auto_or_bool,
    boolean,
    cache_size,
    callables,
    check_sample_weight,
    checked_sparse,
    drop_invalid,
    integer,
    non_negative_float,
    one_of,
    optional,
    pair,
    positive_float,
    validated_rows,
    verbosity,
)
from ._validation import byte_size as byte_size_check
from ._validation import class_weight as class_weight_check
from ._validation import feature_map as feature_map_check
from ._validation import random_state as random_state_check
from .engine.choice import place
from .engine.data.source import DaskSource, is_dask_collection, is_dask_dataframe
from .engine.data.waiting import computed
from .engine.fit import MemoryData, check_partial, fit, fit_partial
from .engine.plan.problem import (
    CACHE_POLICIES,
    CLUSTER_MODES,
    SOLVERS,
    FitPlan,
    linear_scores,
    model_weights,
    scale_advice,
    unconverged_message,
)
from .engine.plan.sizes import CacheShare
from .features import Standardize
from .io import as_dask, open_path

_INT64_MAX = np.iinfo(np.int64).max

# The parameters every linear model has, and their checks (each model adds its own).
PARAMETER_CONSTRAINTS = {
    "C": positive_float,
    "penalty": one_of("l2"),
    "dual": auto_or_bool,
    "fit_intercept": boolean,
    "intercept_scaling": anything,  # checked with fit_intercept (checked_params)
    "class_weight": class_weight_check,
    "feature_map": feature_map_check,
    "tol": positive_float,
    "max_iter": integer(),
    "solver": one_of(*SOLVERS),
    "cache_bytes": cache_size,
    "block_bytes": optional(byte_size_check),
    "inner_iter": optional(integer()),
    "cache_policy": one_of(*CACHE_POLICIES),
    "deterministic": boolean,
    "shuffle": boolean,
    "prefetch": integer(),
    "alpha_store": one_of("memory", "disk"),
    "callbacks": callables,
    "cluster": optional(one_of(*CLUSTER_MODES)),
    "on_invalid": one_of("raise", "skip"),
    "retries": integer(low=0),
    "read_timeout": optional(positive_float),
    "spill": auto_or_bool,
    "checkpoint_every": optional(non_negative_float),
    "validation_data": pair,
    "random_state": random_state_check,
    "verbose": verbosity,
}


def parameter_docs(doc, names):
    """The entries ``names`` of the numpydoc Parameters section of ``doc``, in that order: a
    model documents once the parameters it shares with another (each entry is its line
    ``name : type`` at four spaces and the lines indented deeper below it)."""
    entries, current = {}, None
    section = doc.split("Parameters\n    ----------\n", 1)[1].split("\n    Attributes\n", 1)[0]
    for line in section.splitlines():
        head = line[4:].split(" : ", 1)[0]
        if line.startswith("    ") and not line.startswith("     ") and " : " in line and head.isidentifier():
            current = entries.setdefault(head, [])
        if current is not None:
            current.append(line)
    missing = [name for name in names if name not in entries]
    if missing:
        raise ValueError(f"the docstring documents no parameter {missing}")
    return "".join("\n".join(entries[name]).rstrip() + "\n" for name in names)


class LinearModel(LinearModelFile, StreamClassifier):
    """The base of the linear models: fit, ``partial_fit``, the fitted attributes (``save``: its base).

    A subclass stores its parameters (those of :data:`PARAMETER_CONSTRAINTS`
    and its own) and says which problem it solves (:meth:`_model`).
    """

    def _model(self):
        """``(loss, crammer_singer, platt)``: the loss's name, whether the classes are one joint
        problem, and whether Platt's sigmoids are fitted for ``predict_proba``."""
        raise NotImplementedError

    def _penalty(self, params):
        """``(words, l1_ratio)``: the penalty as the parameters name it (for messages) and ``r`` of
        ``r ||w||_1 + (1 - r)/2 ||w||^2`` (0: the L2 penalty)."""
        return f"penalty={params['penalty']!r}", 1.0 if params["penalty"] == "l1" else 0.0

    def _sparse_penalty(self):
        """The penalty's words (for messages) where the parameters ask for an L1 part, else None;
        read from the parameters as they are, without validating or warning (:meth:`_penalty` does)."""
        penalty = getattr(self, "penalty", "l2")
        return f"penalty={penalty!r}" if isinstance(penalty, str) and penalty == "l1" else None

    def _multinomial(self):
        """Whether the parameters ask for the multinomial (softmax) model, read as they are."""
        return False

    def _fitted_kind(self, softmax):
        """The fitted attributes that say which model a fit trained (``softmax``: the multinomial
        model): none for a model of one kind."""
        return {}

    def _softmax_fitted(self):
        """Whether the fitted model is the multinomial (softmax) model."""
        return False

    def _partial_fit_available(self):
        """Whether ``partial_fit`` is offered: not with an L1 part in the penalty, nor for the
        multinomial model, whose solvers need every row at once.  scikit-learn hides a method the
        parameters rule out (``available_if``): ``hasattr(model, "partial_fit")`` is then False, and
        calling it raises an AttributeError from this one, which says why."""
        if self._multinomial():
            raise AttributeError(
                "partial_fit is not available with multi_class='multinomial': its solver needs every "
                "row at once. Use fit, or multi_class='ovr' to stream."
            )
        words = self._sparse_penalty()
        if words is not None:
            raise AttributeError(
                f"partial_fit is not available with {words}: its solver needs every row at once. Use "
                "fit, or the L2 penalty (penalty='l2', l1_ratio=0) to stream."
            )
        return True

    def _plan(self, params, solver):
        """The one :class:`FitPlan` of a fit: these parameters, no features or labels yet."""
        loss, crammer_singer, platt = self._model()
        penalty, l1_ratio = self._penalty(params)
        cache_bytes, share = params["cache_bytes"], None
        if isinstance(cache_bytes, CacheShare):  # a share of the rows: the engine resolves it
            cache_bytes, share = None, float(cache_bytes)
        scaler = self.feature_map if isinstance(self.feature_map, Standardize) else None
        multinomial = params.get("multi_class") == "multinomial"
        bias = params["bias"]
        if multinomial and bias:  # its intercept is not penalised: intercept_scaling plays no part
            bias = 1.0
        return FitPlan(
            C=params["C"], loss=loss, penalty=penalty, l1_ratio=l1_ratio, crammer_singer=crammer_singer,
            multinomial=multinomial, multinomial_auto=params.get("multi_class") == "auto",
            estimator=type(self).__name__,
            class_weight=self.class_weight, bias=bias, tol=params["tol"],
            max_iter=params["max_iter"], solver=solver, dual=params["dual"], cluster=self.cluster,
            cache_bytes=cache_bytes, block_bytes=params["block_bytes"], cache_share=share,
            inner_iter=params["inner_iter"], cache_policy=params["cache_policy"], prefetch=params["prefetch"],
            shuffle=bool(self.shuffle), retries=params["retries"], alpha_store=params["alpha_store"],
            read_timeout=params["read_timeout"], spill=params["spill"], spill_dir=self.spill_dir,
            deterministic=bool(self.deterministic), random_state=self.random_state,
            probability=platt, scaler=scaler,
        )  # fmt: skip

    def fit(self, X, y, sample_weight=None, client=None, resume=False):
        """Fit the model to ``X`` and ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, Dask Array, Dask DataFrame}
            In-memory data (NumPy, SciPy sparse, pandas) is solved in memory.
            Dask collections and paths are streamed (``solver="auto"``:
            the primal solver, the band from a sample or SBM's row cache;
            see ``solver``) unless ``solver="memory"`` asks to compute them
            into memory.
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
        return fitted_in_context(self, LinearModel._fit, X, y, sample_weight, client, resume, scored=(X, y))

    def _fit(self, params, X, y, sample_weight, client, resume):
        clock_start = time.perf_counter()
        self.__dict__.pop("_stream", None)  # a fit ends any partial_fit stream
        checkpointing, validating = self.checkpoint_dir is not None, self.validation_data is not None
        placement = place(
            self._plan(params, self.solver), X, client, checkpointing=checkpointing, resuming=resume,
            validating=validating,
        )  # fmt: skip
        data = self._open(placement.where, X, y, sample_weight)
        n_features = data.X.shape[1] if placement.where == "memory" else data.n_features
        plan = placement.plan.replace(feature_map=feature_spec(self.feature_map, n_features))
        checkpoint = None
        if checkpointing:
            checkpoint = (self.checkpoint_dir, self.checkpoint_every, self.get_params(deep=False))
        hooks = PassHooks(
            self.callbacks, self.verbose, self._validation_set(), plan.feature_map,
            tasks=self.__dict__.get("_fit_tasks"),
            # a Standardize() map's weights are the scaled features' until the fit folds the scales in
            fitted=None if isinstance(self.feature_map, Standardize) else self._input_attributes,
        )  # fmt: skip
        result = fit(
            data, plan, hooks, placement=placement, checkpoint=checkpoint, resume=resume,
            clock_start=clock_start,
        )  # fmt: skip
        self._set_model(result)
        return self

    @available_if(_partial_fit_available)
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
        need the whole data and are refused; with an L1 part in the penalty
        (``LinearSVC(penalty="l1")``, ``LogisticRegression(l1_ratio > 0)``)
        there is no ``partial_fit`` (an AttributeError says why).  A call that fails or is
        interrupted leaves the model as it was, and forgets the cache.
        """
        try:
            return fitted_in_context(self, LinearModel._partial_fit, X, y, classes, sample_weight)
        except BaseException:
            self.__dict__.pop("_stream", None)  # the stream was trained in place, part-way
            raise

    def _partial_fit(self, params, X, y, classes, sample_weight):
        plan = self._plan(params, "partial").settled(False)  # partial_fit: the one-vs-rest problems
        check_partial(plan, checkpointing=self.checkpoint_dir is not None)
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
        result = fit_partial(data, plan, stream, start_from, clock_start)
        self._stream = result.state
        self.history_ = [*self.history_, *result.history]
        self._set_weights(plan, result.W)
        self.n_iter_ = result.state.blocks
        self.__dict__.update(self._fitted_kind(False))
        problems = 1 if plan.crammer_singer else self.coef_.shape[0]
        self.objective_ = np.nan if problems == 1 else np.full(problems, np.nan)
        self.duality_gap_ = np.nan if problems == 1 else np.full(problems, np.nan)
        return self

    def _set_weights(self, plan, W):
        """``coef_`` and ``intercept_`` from the engine's ``W`` (a row per problem, bias weight last)."""
        self.coef_, self.intercept_ = model_weights(W, plan.bias, plan.crammer_singer)

    def _set_model(self, result):
        """Every fitted attribute from the engine's :class:`~dask_streamsvm.engine.plan.result.FitResult`;
        warns if it did not converge, or was interrupted."""
        plan = result.plan
        for name in ("cluster_parts_", "standardize_", "probA_", "probB_"):  # set again where they apply
            self.__dict__.pop(name, None)
        self.classes_ = plan.classes
        self._set_weights(plan, result.W)
        self.__dict__.update(self._fitted_kind(plan.multinomial))
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
            warn_uncertified(result.passes, result.interrupted, scale_advice(result.feature_max))
        elif not np.all(result.converged) and not (result.stopped or result.interrupted or result.explained):
            solver = result.history[-1].get("solver") if result.history else None
            message = unconverged_message(
                plan, result.certificates, result.converged, result.feature_max, solver=solver
            )
            warnings.warn(message, ConvergenceWarning, stacklevel=5)
        if result.interrupted and result.certified:
            warn_interrupted(self, result.passes)

    # -- input: in memory, a Dask collection or a path, and the validation set ----------------

    def _input_attributes(self):
        """What a model of the engine's weights needs beside them to predict: scikit-learn's callbacks
        score each step's model."""
        return {k: v for k, v in vars(self).items() if k in ("n_features_in_", "feature_names_in_")}

    def _open(self, where, X, y, sample_weight):
        """The input opened for a fit ``where`` the door placed it (:data:`~.engine.choice.WHERE`):
        in-memory rows, or a source streamed or read on a cluster."""
        if where == "memory":
            return self._memory_data(X, y, sample_weight)
        if where == "cluster":
            return self._cluster_source(X, y, sample_weight)
        return self._source(X, y, sample_weight)

    def _memory_data(self, X, y, sample_weight, reset=True):
        """In-memory input (Dask collections computed first; a path read, a DataFrame's label column
        named by ``y`` taken out) as validated :class:`MemoryData` (``reset``: the input sets
        ``n_features_in_``, else is checked against it)."""
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if isinstance(y, str) and hasattr(X, "columns"):  # solver="memory" on a table: its label column
            if y not in X.columns:
                raise ValueError(
                    f"y={y!r} names no column of X; its columns are {list(X.columns)[:10]}. Pass the label "
                    "column's name, or the labels themselves."
                )
            X, y = X.drop(columns=[y]), X[y]
        if any(is_dask_collection(a) for a in (X, y, sample_weight)):  # a cluster without workers: named
            X, y, sample_weight = computed([X, y, sample_weight])
        X, y, sample_weight, skipped = self._drop_invalid(X, y, sample_weight)
        X, y = self._validated(X, y, reset=reset)
        check_classification_targets(y)
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        if hasattr(self.feature_map, "expand"):  # virtual examples: train on every row's variants
            X, y, sample_weight = self.feature_map.expand(X, y, sample_weight)
        return MemoryData(X, y, sample_weight, skipped)

    def _cluster_source(self, X, y, sample_weight):
        """The source of a cluster fit: a Dask collection or a path, never in-memory data."""
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            raise TypeError(
                f"cluster={self.cluster!r} trains on a Dask Array or DataFrame (or a path), got "
                f"{type(X).__name__}; wrap it with dask.array.from_array or dask.dataframe.from_pandas, "
                "or set cluster=None to train in this process."
            )
        return self._source(X, y, sample_weight)

    def _drop_invalid(self, X, y, sample_weight):
        """In-memory input with the invalid rows dropped (``on_invalid="skip"``), and their count."""
        if self.on_invalid != "skip":
            return X, y, sample_weight, 0
        encoder = self.feature_map if self._encoding else None
        scaled = getattr(self.feature_map, "scales_rows", False)  # x . x checked once scaled
        return drop_invalid(X, y, sample_weight, encoder=encoder, scaled=scaled)

    def _source(self, X, y, sample_weight, check_width=False):
        """A :class:`DaskSource` of the input (paths opened, in-memory data wrapped).

        Sets ``n_features_in_`` and ``feature_names_in_``, or with
        ``check_width`` checks the input's width against them.
        """
        if isinstance(X, str | os.PathLike):
            X, y = open_path(X, y)
        if not is_dask_collection(X):
            X, y, sample_weight = as_dask(checked_sparse(X), y, sample_weight)
        source = DaskSource(X, y, sample_weight, encoder=self._source_encoder(), on_invalid=self.on_invalid)
        return self._adopt_width(source, reset=not check_width)

    def _validation_set(self):
        """``validation_data`` as checked in-memory rows and labels, or None."""
        data = self.validation_data
        if data is None:
            return None
        if not isinstance(data, tuple | list) or len(data) != 2:
            raise ValueError("validation_data must be a pair (X_val, y_val).")
        X_val, y_val = data
        if is_dask_dataframe(X_val):
            y_val = X_val[y_val] if isinstance(y_val, str) else y_val
            X_val = feature_frame(self, X_val)
        elif hasattr(X_val, "columns") and hasattr(self, "feature_names_in_"):
            X_val = X_val[list(self.feature_names_in_)]
        if is_dask_collection(X_val) or is_dask_collection(y_val):
            X_val, y_val = computed([X_val, y_val])
        if self._encoding:
            X_val = self._validated(X_val, reset=False)[0]
        else:
            X_val = check_array(
                X_val, accept_sparse="csr", dtype=[np.float64, np.float32], accept_large_sparse=True
            )
        y_val = np.asarray(y_val).ravel()
        if X_val.shape[1] != self._raw_width() or y_val.shape[0] != X_val.shape[0]:
            raise ValueError(
                f"validation_data has {X_val.shape[0]} rows x {X_val.shape[1]} features and {y_val.shape[0]} "
                f"labels; the training data has {self.n_features_in_} features."
            )
        return X_val, y_val

    # -- prediction ----------------------------------------------------------------------

    def _scores(self, rows):
        W = np.hstack([self.coef_, self.intercept_[:, None]])
        scores = linear_scores(rows, W, 1.0, feature_spec(self.feature_map, self._raw_width()))
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _check_in_memory(self, X):
        return self._validated(X, reset=False)[0]

    def _validated(self, X, y=None, *, reset):
        return validated_rows(self, X, y, reset=reset, encoder=self.feature_map if self._encoding else None)

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

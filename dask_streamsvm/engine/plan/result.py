"""What every solver returns: one :class:`FitResult`.

The in-memory solvers (one binary problem, every problem, Crammer-Singer),
the streaming schedules, the primal Newton solver and the cluster's
methods all return this record, and :func:`~..fit.fit` hands one to the
estimator, which sets its fitted attributes from it and from nothing else.
A field a solver does not fill keeps its default.
"""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class FitResult:
    """A trained model, the certificates that bound it, and how it got there.

    ``W`` has a row per problem (``(n_problems, width + 1)``, the bias
    weight last; Crammer-Singer's ``(k, width + 1)``, see
    :func:`~.problem.cs_model`) and ``certificates`` one
    :class:`~.certificate.Certificate` per row of ``W`` (one for
    Crammer-Singer's joint problem).
    """

    W: np.ndarray
    certificates: list
    passes: int
    converged: object  # a bool, or one per problem
    history: list
    interrupted: bool = False  # a KeyboardInterrupt stopped the fit; W is certified all the same
    stopped: bool = False  # a callback stopped the fit (no convergence warning)
    # The messages say why the fit stopped above tol (float64's rounding reached): no other warning.
    explained: bool = False
    plan: object = None  # the plan the model was trained with, label tables included
    # Platt's held-out decision values and their labels (streaming with a calibration seed: from
    # the read that certified W), or the sigmoids fitted to them: ``(probA, probB)``.
    held_scores: np.ndarray = None
    held_y: np.ndarray = None
    platt: tuple = None
    scaler: object = None  # the fitted Standardize the rows were scaled by, or None
    # The last pass's weights and, per problem, (sum alpha, sum D_ii alpha_i^2) of its dual
    # variables (the cluster's averaging certifies a combination of the parts' duals from them:
    # these weights are those duals' own, W may be an earlier pass's); None if unknown.
    dual_sums: tuple = None
    feature_max: np.ndarray = None  # each column's largest |x| on the rows read (scale advice)
    alpha: np.ndarray = field(default=None, repr=False)  # one in-memory problem's dual variables
    state: object = field(default=None, repr=False)  # partial_fit: the stream to go on with
    parts: list = None  # on a cluster: per part, its worker, partitions and rows
    messages: list = field(default_factory=list)  # warnings for the user (ConvergenceWarning)
    # The weights the fit trained past its last certificate (a streaming trainer's live ``w``, the
    # primal solver's warm start), or None; :func:`~..fit.fit` returns them, uncertified, in place
    # of a certified ``W`` that is still the starting point ``w = 0`` (:meth:`prefer_trained`).
    trained_W: np.ndarray = field(default=None, repr=False)
    certified: bool = True  # False: ``W`` is the trained, uncertified model (certificates: w = 0's)

    def prefer_trained(self):
        """Return the trained weights instead of ``W`` where ``W`` is the starting point ``w = 0``
        but rows were trained on: a fit stopped (by a callback, ``max_iter`` or Ctrl-C) before a read
        certified what it learned.  Its certificates then bound ``w = 0``, not the model:
        ``certified`` becomes False and the estimator reports no gap for it."""
        trained, self.trained_W = self.trained_W, None
        if trained is None or np.all(self.converged) or np.any(self.W != 0) or not np.any(trained != 0):
            return
        self.W, self.certified = np.array(trained, dtype=np.float64), False

    @property
    def w(self):
        """The weights of a single problem (bias last)."""
        return self.W[0]

    @property
    def certificate(self):
        """The certificate of a single problem."""
        return self.certificates[0]


def solve_each_problem(solve_one, labels):
    """Every binary problem solved by ``solve_one(c)`` (a one-problem :class:`FitResult`), joined
    into one: ``W`` a row per problem, ``converged`` one per problem, the histories one after the
    other.  An interrupt that ended a problem while a class after it is still untrained
    propagates (no partial model); ``labels`` name the classes in its message."""
    results = []
    for c, label in enumerate(labels):
        results.append(solve_one(c))
        if results[-1].interrupted and c + 1 < len(labels):
            raise KeyboardInterrupt(
                f"interrupted while training class {label!r}; the classes after "
                "it were not trained, so no model was kept"
            )
    return FitResult(
        W=np.vstack([r.w for r in results]),
        certificates=[r.certificate for r in results],
        passes=max(r.passes for r in results),
        converged=[r.converged for r in results],
        history=[record for r in results for record in r.history],
        interrupted=any(r.interrupted for r in results),
    )

"""Each loss's engine-side pieces, by name: what the drivers ask a loss instead of branching on it.

A :class:`Loss` carries the code its kernels' leaves are chosen by
(:mod:`dask_streamsvm.kernels.losses`, where each loss's maths is), and
what the drivers need around them:

- **the dual's sums.**  Every loss here has a dual
  ``D(alpha) = sums[0] - 1/2 sums[1] - 1/2 ||w||^2`` of two sums over rows
  (the hinges: ``sum alpha`` and ``sum D_ii alpha_i^2``; the logistic loss:
  its entropies ``sum H_i(alpha_i)`` and 0), so a part of the rows, or a
  streamed pass, certifies its duals from two sums (:attr:`Loss.dual_sum_names`,
  :meth:`Loss.dual_sums`) and ``w`` (:meth:`Loss.dual_value`); the row
  cache's store keeps them as rows come and go (:class:`~..dual.alpha_store.AlphaStore`),
  the cluster adds them up;
- **the primal**: ``1/2 ||w||^2`` plus the loss's weighted sum (:meth:`Loss.primal_value`,
  the kernels' :func:`~dask_streamsvm.kernels.objective.weighted_loss_sum`);
- **the averaging's scales**: scaling a part's duals by ``t`` keeps them
  feasible for ``0 <= t <= scale_upper`` (the hinge's box ``alpha <= C``:
  1; the squared hinge's none), the bound of ``combined_dual``'s small
  quadratic on a cluster, which needs a dual quadratic in ``t``
  (:attr:`Loss.quadratic_dual`; the logistic loss's entropy is not: its
  average is certified by the dual point its model gives, :meth:`Loss.newton_dual`);
- **Newton**: whether the primal Newton solver (:mod:`..primal.newton`) minimises
  the loss (:func:`newton_blocker` says why not), its certificate from
  the Newton sums (:meth:`Loss.newton_dual`), and whether the loss is
  piecewise quadratic (:attr:`Loss.piecewise_quadratic`: a read's band of
  rows then makes its model exact, :func:`~..primal.newton.band_step`).

Adding a loss: its code and leaves in the kernels' module, a :class:`Loss`
here (its dual's sums, its scale bound, its Newton pieces), and its name
in :data:`LOSSES`, which :data:`~.problem.LOSSES` and the estimators'
checks read.
"""

from dataclasses import dataclass

import numpy as np

from ...kernels import losses as kl


@dataclass(frozen=True)
class Loss:
    """One loss of the binary SVM: its name, its kernels' code, and its engine pieces (module docstring)."""

    name: str  # as ``loss=`` spells it
    code: int  # the kernels' code (:mod:`dask_streamsvm.kernels.losses`)
    title: str  # in words, for messages
    scale_upper: float  # the largest scale of a part's duals that stays dual feasible
    newton: bool  # whether the primal Newton solver minimises it
    dual_sum_names: tuple = ("sum alpha", "sum D alpha^2")
    quadratic_dual: bool = True  # the dual's row terms are alpha_i - 1/2 D_ii alpha_i^2
    piecewise_quadratic: bool = True  # the loss is quadratic between its kinks (Newton's band)
    # The band from a sample trains it out of core (:mod:`..primal.sample_band`): linear on one side
    # of its kink and zero on the other, its dual's box [0, C_i], so that a row held on either piece
    # is a constant dual variable and a sum.
    band: bool = False

    def dual_sums(self, alpha, upper, diag):
        """The dual's sums over rows of dual variables ``alpha``, box ``upper`` (``U_i``) and
        diagonal ``diag``: ``(sum alpha, sum D alpha^2)`` for the hinges, ``(sum H, 0)`` for the
        logistic loss, as a part or a pass adds them up."""
        if not self.quadratic_dual:
            return kl.dual_term_sum(self.code, alpha, upper, diag), 0.0
        return float(alpha.sum()), float(np.dot(diag, alpha * alpha))

    def dual_value(self, sums, half_sq):
        """``D = sum alpha - 1/2 ||w||^2 - 1/2 sum D alpha^2`` from ``sums`` (``(..., 2)``: the
        :meth:`dual_sums` of each problem) and ``half_sq`` (``1/2 ||w||^2`` of each)."""
        sums = np.asarray(sums)
        return sums[..., 0] - half_sq - 0.5 * sums[..., 1]

    def primal_value(self, half_sq, loss_sum):
        """``P = 1/2 ||w||^2 + sum_i C_i loss(m_i)``, the loss's sum from the kernels."""
        return half_sq + loss_sum

    def newton_dual(self, dual_sum, v, loss_sum):
        """The dual value certifying a Newton read's point from its sums: ``dual_sum`` (the sum of
        the rows' :func:`~dask_streamsvm.kernels.losses.newton_dual_term`), ``v = sum alpha_i y_i
        x_i`` and ``loss_sum``, at the dual point ``alpha_i(w) = -C_i loss'(m_i)`` of the read's
        point ``w``.

        The squared hinge's ``alpha(w) = 2 C xi`` is dual feasible, its ``dual_sum`` is ``sum
        alpha_i``, and its dual term ``sum alpha_i^2 / (4 C_i) = sum C_i xi_i^2`` is the loss sum
        itself::

            D(alpha) = sum_i alpha_i - 1/2 ||v||^2 - sum_i C_i xi_i^2

        The logistic loss's ``alpha(w) = C sigma(-m)`` is inside its box, and ``dual_sum`` is
        the sum of the entropies ``H_i(alpha_i)``::

            D(alpha) = sum_i H_i(alpha_i) - 1/2 ||v||^2
        """
        if not self.newton:
            raise ValueError(f"loss={self.name!r} has no Newton pieces; {newton_blocker(self.name)}.")
        if not self.quadratic_dual:
            return dual_sum - 0.5 * float(v @ v)
        return dual_sum - 0.5 * float(v @ v) - loss_sum

    def scaled_newton_terms(self, dual_sum, loss_sum, scale):
        """The dual's row terms ``sum_i phi_i(scale alpha_i)`` at the Newton read's dual point
        scaled by ``0 < scale <= 1`` (the sparse penalties' feasible point,
        :mod:`..primal.penalties`), from the read's sums: exact for the squared hinge, whose
        ``phi_i(a) = a - a^2 / (4 C_i)`` gives ``scale sum alpha_i - scale^2 sum C_i xi_i^2``; a
        lower bound for the logistic loss, whose entropy is concave and 0 at 0, so that
        ``H_i(scale a) >= scale H_i(a)`` (exact at ``scale = 1``).  A lower dual value only widens
        the certified gap."""
        if not self.newton:
            raise ValueError(f"loss={self.name!r} has no Newton pieces; {newton_blocker(self.name)}.")
        if not self.quadratic_dual:
            return scale * dual_sum
        return scale * dual_sum - scale * scale * loss_sum


HINGE = Loss("hinge", kl.HINGE, "the hinge", scale_upper=1.0, newton=False, band=True)
SQUARED_HINGE = Loss("squared_hinge", kl.SQUARED_HINGE, "the squared hinge", scale_upper=np.inf, newton=True)
LOGISTIC = Loss(
    "log_loss", kl.LOGISTIC, "the logistic loss", scale_upper=1.0, newton=True,
    dual_sum_names=("sum H", "0"), quadratic_dual=False, piecewise_quadratic=False,
)  # fmt: skip

# Every loss by its name, in the order the estimators' messages list them.
LOSSES = {loss.name: loss for loss in (HINGE, SQUARED_HINGE, LOGISTIC)}
# The losses of the SVM (``LinearSVC(loss=...)``); the logistic loss is LogisticRegression's.
SVM_LOSSES = (HINGE.name, SQUARED_HINGE.name)
# The losses the band from a sample trains (:attr:`Loss.band`).
BAND_LOSSES = tuple(loss.name for loss in LOSSES.values() if loss.band)
_BY_CODE = {loss.code: loss for loss in LOSSES.values()}
# The loss a store or cache assumes when none is given (the estimators' default).
DEFAULT = _BY_CODE[kl.DEFAULT]
# The loss a Crammer-Singer plan records: its own loss bounds each row's duals by C, as this one's box.
CRAMMER_SINGER = HINGE


def loss_of(name):
    """The :class:`Loss` named ``name``, or a ValueError naming the choices."""
    try:
        return LOSSES[name]
    except (KeyError, TypeError):
        choices = ", ".join(repr(n) for n in LOSSES)
        raise ValueError(f"loss must be one of {choices}; got loss={name!r}.") from None


def loss_by_code(code):
    """The :class:`Loss` of the kernels' ``code`` (a bool reads as the old flag: ``True`` is 1)."""
    try:
        return _BY_CODE[int(code)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"no loss has the code {code!r}; the codes are {sorted(_BY_CODE)}.") from None


def band_blocker(name):
    """Why the band from a sample cannot train ``loss=name`` (a phrase for an error), or None."""
    if loss_of(name).band:
        return None
    trained = " or ".join(loss.title for loss in LOSSES.values() if loss.band)
    return f"loss={name!r} (it trains {trained}; the primal solver's reads keep a band for the others)"


def newton_blocker(name):
    """Why the primal Newton solver cannot train ``loss=name`` (a phrase for an error), or None."""
    if loss_of(name).newton:
        return None
    minimised = " or ".join(loss.title for loss in LOSSES.values() if loss.newton)
    return f"loss={name!r} (the primal solver minimises {minimised}, as LIBLINEAR's does)"


def sparse_penalty_blocker(name):
    """Why the L1 and elastic-net penalties cannot train ``loss=name`` (a phrase for an error), or None:
    their solver (:mod:`..primal.l1`) takes a Newton direction per coordinate, which needs the
    loss's second derivative (LIBLINEAR's ``-s 5`` and ``-s 6``; scikit-learn refuses the others too)."""
    if loss_of(name).newton:
        return None
    trained = " or ".join(f"loss={loss.name!r}" for loss in LOSSES.values() if loss.newton)
    return f"loss={name!r} (the L1 penalty trains {trained}, as LIBLINEAR's -s 5 and -s 6 do)"

"""Each loss's engine-side pieces, by name: what the drivers ask a loss instead of branching on it.

A :class:`Loss` carries the code its kernels' leaves are chosen by
(:mod:`dask_streamsvm.kernels.losses`, where each loss's maths is), and
what the drivers need around them:

- **the dual's sums.**  Every loss here has the dual
  ``D(alpha) = sum alpha - 1/2 sum D_ii alpha_i^2 - 1/2 ||w||^2``, so a
  part of the rows, or a streamed pass, certifies its duals from two sums
  (:attr:`Loss.dual_sum_names`, :meth:`Loss.dual_sums`) and ``w``
  (:meth:`Loss.dual_value`); the row cache's store keeps them as rows come
  and go (:class:`~.dual_store.AlphaStore`), the cluster adds them up;
- **the primal**: ``1/2 ||w||^2`` plus the loss's weighted sum (:meth:`Loss.primal_value`,
  the kernels' :func:`~dask_streamsvm.kernels.objective.weighted_loss_sum`);
- **the averaging's scales**: scaling a part's duals by ``t`` keeps them
  feasible for ``0 <= t <= scale_upper`` (the hinge's box ``alpha <= C``:
  1; the squared hinge's none), the bound of
  ``combined_dual``'s small quadratic on a cluster;
- **Newton**: whether the primal Newton solver (:mod:`.primal`) minimises
  the loss (:func:`newton_blocker` says why not), and its certificate from
  the Newton sums (:meth:`Loss.newton_dual`).

Adding a loss: its code and leaves in the kernels' module, a :class:`Loss`
here (its dual's sums, its scale bound, its Newton pieces), and its name
in :data:`LOSSES`, which :data:`~.problem.LOSSES` and the estimators'
checks read.
"""

from dataclasses import dataclass

import numpy as np

from ..kernels import losses as kl


@dataclass(frozen=True)
class Loss:
    """One loss of the binary SVM: its name, its kernels' code, and its engine pieces (module docstring)."""

    name: str  # as ``loss=`` spells it
    code: int  # the kernels' code (:mod:`dask_streamsvm.kernels.losses`)
    title: str  # in words, for messages
    scale_upper: float  # the largest scale of a part's duals that stays dual feasible
    newton: bool  # whether the primal Newton solver minimises it
    dual_sum_names: tuple = ("sum alpha", "sum D alpha^2")

    def dual_sums(self, alpha, diag):
        """The dual's sums over rows of dual variables ``alpha`` and diagonal ``diag``: ``(sum alpha,
        sum D alpha^2)``, as a part or a pass adds them up."""
        return float(alpha.sum()), float(np.dot(diag, alpha * alpha))

    def dual_value(self, sums, half_sq):
        """``D = sum alpha - 1/2 ||w||^2 - 1/2 sum D alpha^2`` from ``sums`` (``(..., 2)``: the
        :meth:`dual_sums` of each problem) and ``half_sq`` (``1/2 ||w||^2`` of each)."""
        sums = np.asarray(sums)
        return sums[..., 0] - half_sq - 0.5 * sums[..., 1]

    def primal_value(self, half_sq, loss_sum):
        """``P = 1/2 ||w||^2 + sum_i C_i loss(m_i)``, the loss's sum from the kernels."""
        return half_sq + loss_sum

    def newton_dual(self, alpha_sum, v, loss_sum):
        """The dual value certifying a Newton read's point from its sums: ``alpha_sum`` (sum of the
        gradient factors ``alpha_i``), ``v = sum alpha_i y_i x_i`` and ``loss_sum``.

        The squared hinge's ``alpha(w) = 2 C xi`` is dual feasible, and its dual term
        ``sum alpha_i^2 / (4 C_i) = sum C_i xi_i^2`` is the loss sum itself::

            D(alpha) = sum_i alpha_i - 1/2 ||v||^2 - sum_i C_i xi_i^2
        """
        if not self.newton:
            raise ValueError(f"loss={self.name!r} has no Newton pieces; {newton_blocker(self.name)}.")
        return alpha_sum - 0.5 * float(v @ v) - loss_sum


HINGE = Loss("hinge", kl.HINGE, "the hinge", scale_upper=1.0, newton=False)
SQUARED_HINGE = Loss("squared_hinge", kl.SQUARED_HINGE, "the squared hinge", scale_upper=np.inf, newton=True)

# Every loss by its name, in the order the estimators' messages list them.
LOSSES = {loss.name: loss for loss in (HINGE, SQUARED_HINGE)}
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


def newton_blocker(name):
    """Why the primal Newton solver cannot train ``loss=name`` (a phrase for an error), or None."""
    if loss_of(name).newton:
        return None
    minimised = " or ".join(loss.title for loss in LOSSES.values() if loss.newton)
    return f"loss={name!r} (the primal solver minimises {minimised}, as LIBLINEAR's does)"

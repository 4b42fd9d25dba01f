"""Exact optimality certificate: primal, dual and relative duality gap.

Weak duality gives ``D(alpha) <= P* <= P(w)`` for every feasible ``alpha``
and every ``w``; the relative gap ``(P(w) - D(alpha)) / |P(w)|`` therefore
bounds the relative suboptimality ``(P(w) - P*) / P*`` of the model we
return.  ``D`` is computed from ``||w||^2`` of the ``w`` the solver keeps
up to date; the drivers rebuild ``w = w(alpha)`` exactly before the final
certificate, so the reported gap holds to rounding of one pass.
"""

from dataclasses import dataclass

import numpy as np

from ...kernels.objective import weighted_loss_sum
from .losses import DEFAULT, loss_by_code


@dataclass(frozen=True)
class Certificate:
    """Primal value, dual value (maximisation form) and their gap."""

    primal: float
    dual: float

    @property
    def gap(self):
        """Absolute duality gap ``P - D`` (non-negative up to rounding)."""
        return self.primal - self.dual

    @property
    def relative_gap(self):
        """``(P - D) / |P|``; the stopping criterion ``tol`` compares to this."""
        if self.primal == 0.0:
            return 0.0 if self.gap == 0.0 else np.inf
        return self.gap / abs(self.primal)


# A gap below -ROUNDING * max(|P|, |D|) cannot come from rounding: the sums behind P and D have relative
# errors near n * 1e-16 at worst, far below this for any data that fits a disk.
ROUNDING = 1e-6


def check_gap(certificate, where):
    """``certificate``, or ValueError if its gap is negative beyond rounding.

    Weak duality makes ``P(w) >= D(alpha)`` for any data; a clearly negative
    gap means ``P`` and ``D`` were not computed on the same rows: the data
    changed under the fit.  Accepting it as convergence would certify a
    model of rows nobody trained on.
    """
    scale = max(abs(certificate.primal), abs(certificate.dual))
    if not certificate.gap >= -ROUNDING * scale:
        raise ValueError(
            f"{where}: the duality gap is negative (primal {certificate.primal!r} < dual "
            f"{certificate.dual!r}), which no exact certificate can be: the rows read changed during the "
            "fit. Train on data that gives the same rows on every read (persist the collection or "
            "write it to Parquet first)."
        )
    return certificate


def relative_gap(primal, dual):
    """Per problem, ``(primal - dual) / |primal|`` (0 where the primal is 0): of the primal and dual
    values a cluster's method summed (averaging's combined dual, CoCoA+'s sums at the broadcast
    ``w``), what ``tol`` is compared to."""
    return np.where(primal != 0.0, (primal - dual) / np.abs(np.where(primal != 0.0, primal, 1.0)), 0.0)


def certificates(primal, dual, labels):
    """A :class:`Certificate` per problem of the summed ``primal`` and ``dual`` values, each checked
    (:func:`check_gap`)."""
    return [
        check_gap(Certificate(primal=float(p), dual=float(d)), f"class {label!r}")
        for p, d, label in zip(primal, dual, labels, strict=True)
    ]


def dual_value(alpha, upper, diag, w, loss=None):
    """``D(alpha)`` of the loss whose kernels' code is ``loss`` (the default's if None), from the
    sums of ``alpha`` (box ``upper``, diagonal ``diag``) and ``w``: ``sum alpha_i - 1/2 ||w||^2 -
    1/2 sum D_ii alpha_i^2`` for the hinges (:meth:`~.losses.Loss.dual_value`)."""
    loss = loss_by_code(DEFAULT.code if loss is None else loss)
    half_sq_w = 0.5 * float(np.dot(w, w))
    return float(loss.dual_value(loss.dual_sums(alpha, upper, diag), half_sq_w))


def binary_certificate(X, y, cost, upper, diag, alpha, w, bias, loss):
    """Certificate of ``(w, alpha)`` for the binary problem of the loss whose kernels' code is ``loss``."""
    loss_sum = weighted_loss_sum(X, y, cost, w, bias, loss)
    primal = loss_by_code(loss).primal_value(0.5 * float(np.dot(w, w)), loss_sum)
    return Certificate(primal=primal, dual=dual_value(alpha, upper, diag, w, loss))

"""The certificate of a cluster's model, from the primal and dual values its method summed.

Averaging and CoCoA+ both end with, per problem, a primal value of the model and a dual value
that bounds the optimum from below (:func:`~.average.combined_dual`, or CoCoA+'s sums at the
broadcast ``w``): :func:`relative_gap` is what ``tol`` is compared to, and :func:`certificates`
the checked :class:`~..plan.certificate.Certificate` of each problem.
"""

import numpy as np

from ..plan.certificate import Certificate, check_gap


def relative_gap(primal, dual):
    """Per problem, ``(primal - dual) / |primal|`` (0 where the primal is 0)."""
    return np.where(primal != 0.0, (primal - dual) / np.abs(np.where(primal != 0.0, primal, 1.0)), 0.0)


def certificates(primal, dual, labels):
    """A :class:`~..plan.certificate.Certificate` per problem, each checked
    (:func:`~..plan.certificate.check_gap`)."""
    return [
        check_gap(Certificate(primal=float(p), dual=float(d)), f"class {label!r}")
        for p, d, label in zip(primal, dual, labels, strict=True)
    ]

"""A binary problem with rows held fixed outside it, solved by dual coordinate descent: the band's
problem on rows too wide for the smoothed Newton's Hessian (issue 52).

The band from a sample (:mod:`~..primal.sample_band`) holds the rows a read found far inside the
margin at ``alpha_i = C_i`` and keeps only their sums ``(u, S)``; the band's own rows are solved with
them as an offset (:class:`~.memory.BinaryProblem`'s ``offset``): ``w = u + sum_i alpha_i y_i x~_i``,
the dual ``S + sum_i alpha_i - 1/2 ||w||^2`` a lower bound on the optimum of every row.  Where the
model is at most :data:`~..primal.newton.MAX_WIDTH` wide the band is solved by the smoothed Newton
instead (:mod:`~..primal.smoothed`), which does not care how the columns are scaled; wider rows
(text: a hundred thousand columns, a few dozen nonzeros a row) are LIBLINEAR's case, whose steps
cost a row's nonzeros.  The door (:mod:`~..fit`) hands this solver to the band.
"""

import numpy as np

from ..plan.layout import as_kernel_rows
from .memory import BinaryProblem, solve_in_memory

# Passes over the band, at most: each ends with the exact certificate, and a band of text reached a
# tenth of the fit's tolerance in 4-10 (200k x 200k, 50 nonzeros a row, C = 1, a 20,000-row band,
# tol 1e-4).
DCD_MAX_PASSES = 1000


def solve_with_offset(X, y, cost, bias, *, loss, tol, offset=None, margins=None, seed=0, alpha=None):
    """The problem of the rows ``X`` (labels ``y`` of +1/-1, costs ``cost``, the ``bias`` column)
    with ``offset = (u, S)`` (None: none) to a relative gap of ``tol``: ``(w, certificate, info)``,
    ``w`` with the bias last, ``info`` the passes made and the last ``alpha``.  ``margins``: the
    rows' margins at a point near the solution, whose rows of positive shortfall start at their
    bound (None: every ``alpha_i = 0``); ``alpha``: the rows' start instead (a feasible point, the
    band's kept values: :class:`~..primal.sample_band.KeptAlphas`); ``seed``: the order of the coordinates."""
    if offset is not None:
        offset = (np.asarray(offset[0], dtype=np.float64), float(offset[1]))
    problem = BinaryProblem(as_kernel_rows(X), y, cost, loss, bias, X.shape[1], offset)
    if alpha is None and margins is not None:
        alpha = np.where(np.asarray(margins) < 1.0, problem.upper, 0.0)
    result = solve_in_memory(problem, tol=tol, max_iter=DCD_MAX_PASSES, seed=seed, alpha=alpha)
    info = {"newton_steps": 0, "stages": 0, "dcd_passes": result.passes, "alpha": result.alpha}
    return result.w, result.certificate, info

"""The band's hinge problem in memory, at any width: smoothed Newton where its Hessian fits, dual
coordinate descent with the held rows as an offset where it does not.

:func:`~.smoothed.solve_smoothed` forms the ``D x D`` Hessian of the rows it solves, which
:data:`~.newton.MAX_WIDTH` bounds.  Wider rows (text: a hundred thousand columns, a few dozen
nonzeros a row) are solved by LIBLINEAR's dual coordinate descent
(:func:`~..dual.memory.solve_in_memory`), whose steps cost a row's nonzeros, with the rows held on
the hinge's linear piece as an offset ``(u, S)`` (:class:`~..dual.memory.BinaryProblem`):
``w = u + sum_i alpha_i y_i x~_i`` and the certificate of the same problem as the smoothed solver's,
its dual value a lower bound on the data's optimum.  Dual coordinate descent stalls where columns
have scales of their own (raw 0..255 values, issue 52); such rows are narrow, and the smoothed
Newton solves them.
"""

import numpy as np

from ..dual.memory import BinaryProblem, solve_in_memory
from ..plan.layout import as_kernel_rows
from .newton import MAX_WIDTH
from .smoothed import solve_smoothed

# Dual coordinate descent's passes over the band, at most: each pass ends with the exact certificate,
# and a band of text reaches a tenth of the fit's tolerance in 4-10 (measured: 200k x 200k, 50
# nonzeros a row, C = 1, a 20,000-row band, tol 1e-4).
DCD_MAX_PASSES = 1000


def solve_hinge(rows, *, tol, offset=None, start=None, seed=0):
    """The hinge problem of ``rows`` (a :class:`~.smoothed.Rows`) with ``offset = (u, S)`` to a
    relative gap of ``tol``: ``(w, certificate, info)`` as :func:`~.smoothed.solve_smoothed`, by the
    smoothed Newton where the model is at most :data:`~.newton.MAX_WIDTH` wide, else by dual
    coordinate descent (:func:`solve_wide`)."""
    if rows.width <= MAX_WIDTH:
        return solve_smoothed(rows, tol=tol, offset=offset, start=start)
    return solve_wide(rows, tol=tol, offset=offset, start=start, seed=seed)


def solve_wide(rows, *, tol, offset=None, start=None, seed=0):
    """The hinge problem of ``rows`` by dual coordinate descent (module docstring):
    ``(w, certificate, info)``.  ``start``: a point whose rows of positive shortfall start at
    ``alpha_i = C_i``, the others at 0 (None: every ``alpha_i = 0``); ``seed``: the order of the
    coordinates."""
    D = rows.width
    if offset is not None:
        offset = (np.asarray(offset[0], dtype=np.float64), float(offset[1]))
    problem = BinaryProblem(as_kernel_rows(rows.X), rows.y, rows.cost, "hinge", rows.bias, D - 1, offset)
    alpha = None
    if start is not None:
        alpha = np.where(rows.margins(np.asarray(start, dtype=np.float64)) < 1.0, problem.upper, 0.0)
    result = solve_in_memory(problem, tol=tol, max_iter=DCD_MAX_PASSES, seed=seed, alpha=alpha)
    return result.w, result.certificate, {"newton_steps": 0, "stages": 0, "dcd_passes": result.passes}

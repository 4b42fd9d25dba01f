"""The one-pass driver: every problem's minimum enclosing ball, fed a block at a time.

Rai, Daume III & Venkatasubramanian (IJCAI 2009): the L2-SVM
``min ||w||^2 + C sum_i xi_i^2`` s.t. ``y_i w . x_i >= 1 - xi_i`` is the
minimum enclosing ball of the points ``[y_i x_i ; C^(-1/2) e_i]`` when the
rows have equal norms.  :class:`Balls` keeps a ball per one-vs-rest problem
(the arrays of :class:`~dask_streamsvm.kernels.meb.BallState`), scales each
block's rows to unit norm (or checks that their norms are equal) and hands
them to :func:`~dask_streamsvm.kernels.meb.meb_block`, which grows the balls
(Algorithm 1) or buffers rows for the exact update of Algorithm 2.
:meth:`Balls.finish` encloses what is left in the buffers (Algorithm 2,
lines 12-15).  Memory is ``O(n_features * lookahead)`` per problem, however
long the stream; the maths is in :mod:`dask_streamsvm.kernels.meb`.
"""

import copy

import numpy as np

from ...kernels.dcd import row_sqnorms
from ...kernels.meb import BallSettings, BallState, flush, meb_block
from ..dual.memory import check_sqnorms
from ..plan.layout import as_kernel_rows

# The arrays of a model file that hold the balls (``ball_`` and a field of BallState) and what each
# holds: real numbers, real numbers >= 0, counts, booleans.
BALL_ARRAYS = {
    "ball_V": "real", "ball_A": "real", "ball_WSQ": "non-negative", "ball_R": "non-negative",
    "ball_XI2": "non-negative", "ball_M": "count", "ball_started": "boolean", "ball_buf": "real",
    "ball_buf_y": "real", "ball_n_buf": "count",
}  # fmt: skip


class Balls:
    """The balls of ``n_problems`` problems over rows of ``n_features`` features.

    ``bias`` is the value of the constant feature (0: no intercept);
    ``normalize`` scales every row, with its constant feature, to unit norm
    as it is fed, and otherwise every row must have the norm of the first.
    """

    def __init__(self, n_problems, n_features, *, C, lookahead, bias, normalize):
        self.normalize = normalize
        self.settings = BallSettings(float(bias), 1.0 / C, int(lookahead))
        k, width = n_problems, n_features + 1
        depth = lookahead if lookahead > 1 else 0
        self.state = BallState(
            V=np.zeros((k, width)),
            A=np.ones(k),
            WSQ=np.zeros(k),
            R=np.zeros(k),
            XI2=np.zeros(k),
            M=np.zeros(k, dtype=np.int64),
            started=np.zeros(k, dtype=np.bool_),
            buf=np.zeros((k, depth, width)),
            buf_y=np.zeros((k, depth)),
            n_buf=np.zeros(k, dtype=np.int64),
        )
        self.norm = None  # normalize=False: the x . x every row must have

    @staticmethod
    def saved_shapes(n_problems, n_features, lookahead):
        """The shape of each array of :data:`BALL_ARRAYS` for these problems, features and lookahead."""
        k, width, depth = n_problems, n_features + 1, lookahead if lookahead > 1 else 0
        shapes = dict.fromkeys(["ball_A", "ball_WSQ", "ball_R", "ball_XI2", "ball_M", "ball_started"], (k,))
        shapes.update(ball_V=(k, width), ball_buf=(k, depth, width), ball_buf_y=(k, depth), ball_n_buf=(k,))
        return shapes

    def saved(self):
        """The balls as the arrays of :data:`BALL_ARRAYS` (the rows still buffered included)."""
        return {f"ball_{name}": np.copy(value) for name, value in self.state._asdict().items()}

    def restore(self, arrays, norm):
        """Set what :meth:`saved` gave (checked by the caller: the shapes of :meth:`saved_shapes` and
        the kinds of :data:`BALL_ARRAYS`, ``ball_n_buf`` within the lookahead) and ``norm`` (every
        row's ``x . x`` with ``normalize=False``, or None) on these fresh balls."""
        for name, value in self.state._asdict().items():
            value[...] = arrays[f"ball_{name}"]
        self.norm = norm

    def feed(self, X, signs, order):
        """Rows ``order`` of ``X`` (dense or CSR) in order; ``signs[c, i]``: row i's sign in problem c."""
        rows = as_kernel_rows(X)
        sq = np.empty(X.shape[0])
        row_sqnorms(rows, self.settings.bias, sq)
        check_sqnorms(sq)  # an infinite norm would scale its row to zero
        if self.normalize:
            with np.errstate(divide="ignore"):
                inv_norm = np.where(sq > 0.0, 1.0 / np.sqrt(sq), 0.0)  # a zero row stays zero
            sqnorm = np.where(sq > 0.0, 1.0, 0.0)
        else:
            self._check_norms(sq)
            inv_norm, sqnorm = np.ones_like(sq), sq
        order = np.asarray(order, dtype=np.int64)
        meb_block(rows, np.ascontiguousarray(signs), order, inv_norm, sqnorm, self.settings, self.state)

    def _check_norms(self, sq):
        if sq.shape[0] == 0:
            return
        if self.norm is None:
            self.norm = float(sq[0])
        off = np.abs(sq - self.norm) > 1e-6 * max(self.norm, 1e-300)
        if off.any():
            i = int(np.flatnonzero(off)[0])
            raise ValueError(
                f"OnePassSVC(normalize=False) needs every row (with its intercept feature) to have the same "
                f"norm, as the ball's equivalence with the SVM assumes: row {i} of this block has x . x = "
                f"{sq[i]:.6g}, the first row {self.norm:.6g}. Use normalize=True (the default), or "
                "scale the rows to equal norms yourself."
            )

    def finish(self):
        """Algorithm 2, lines 12-15: enclose what is left in the buffers; returns ``self``."""
        for c in range(self.state.V.shape[0]):
            flush(self.state, c, self.settings.inv_C)
        return self

    def finished_copy(self):
        """The balls :meth:`finish` would give, leaving these (and their buffers) as they are."""
        return copy.deepcopy(self).finish()

    def weights(self):
        """``w`` of every problem, shape ``(n_problems, n_features + 1)``, the bias weight last."""
        return self.state.A[:, None] * self.state.V

"""``cluster="average"`` (StreamSVM section 1.3): each worker trains its part, the models averaged.

Each part trains the full out-of-core engine (:func:`~..dual.schedules.fit_stream`, the entry every
streaming fit goes through) on its partitions with its own ``cache_bytes``
(:func:`train_part`), and the client averages the weight vectors with the parts' row counts as
weights.  One more read computes the averaged model's primal objective (:func:`part_loss`);
its dual is bounded from below by the parts' duals, each part's scaled by its own factor
(:func:`combined_dual`), so ``duality_gap_`` bounds its suboptimality.  A loss whose dual is not
quadratic in those factors (the logistic loss, :attr:`~..plan.losses.Loss.quadratic_dual`) is
certified instead by the dual point the average itself gives, ``alpha_i(w) = -C_i loss'(m_i)``,
whose sums the same read adds up (:func:`part_point`).  The gap is reported, and warned of above
``tol``: it is not a target.
"""

import time
from dataclasses import dataclass

import numpy as np

from ...kernels.objective import weighted_loss_sum
from ..dual.schedules import fit_stream
from ..plan.certificate import certificates, relative_gap
from ..plan.layout import kernel_rows
from ..plan.losses import LOSSES, loss_of
from ..plan.problem import encode_block, joined_column_max, scale_advice, unconverged_message
from ..plan.result import FitResult
from ..primal.sums import Sums, block_sums
from .parts import part_source, read_prints
from .runtime import cancel_check, cancelled_on_error, gather, submit, synchronous

# Coordinate-descent sweeps of :func:`combined_dual`'s small quadratic (K variables per problem).
_SCALE_SWEEPS = 200


@dataclass
class PartFit:
    """What a worker sends back from :func:`train_part`: its part's model and certificate.

    ``primal`` and ``dual`` are per problem; ``dual_W`` and ``dual_sums`` are the weights of the
    part's last certified dual variables (``W`` may be an earlier, better pass's) and, per problem,
    their ``(sum alpha, sum D alpha^2)``: what :func:`combined_dual` combines.
    """

    W: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    passes: int
    seconds: float
    messages: list  # the part's convergence warning, if it did not converge
    dual_W: np.ndarray
    dual_sums: np.ndarray
    prints: np.ndarray = None  # the fingerprints of the part's reads (:func:`~.parts.read_prints`)
    feature_max: np.ndarray = None  # each column's largest |x| on the part's first read (scale advice)


class _StopWhenCancelled:
    """Hooks of a part's fit that stop it (:class:`~.runtime.TaskCancelled`) at the block or pass
    after its task was cancelled: the worker's thread is free for the next fit's tasks."""

    def __init__(self):
        self.on_block = cancel_check()

    def on_pass(self, records, W):
        return self.on_block()


def train_part(plan, packed):
    """Fit the out-of-core engine on one part (on its worker): a :class:`PartFit`."""
    start = time.perf_counter()
    source = packed.source()
    with synchronous():
        result = fit_stream(source, plan, _StopWhenCancelled(), clock_start=start)
    messages = []
    if not result.converged:
        messages.append(unconverged_message(plan, result.certificates, result.converged, result.feature_max))
    dual_W, dual_sums = result.dual_sums
    return PartFit(
        W=result.W,
        primal=np.array([c.primal for c in result.certificates]),
        dual=np.array([c.dual for c in result.certificates]),
        passes=int(result.passes),
        seconds=time.perf_counter() - start,
        messages=messages,
        dual_W=dual_W,
        dual_sums=dual_sums,
        prints=read_prints(source),
        feature_max=result.feature_max,
    )


def _better_mode(plan):
    """The advice after an average above ``tol``: the cluster method that trains to ``tol``."""
    newton = next(name for name, loss in LOSSES.items() if loss.newton)
    if loss_of(plan.loss).newton:
        return (
            "Use cluster='auto' (the default: Newton steps summed on the workers, to tol in a few "
            "reads whatever the number of workers)."
        )
    return (
        f"Use cluster='cocoa' (CoCoA+ rounds to tol; cluster='auto' picks it for loss={plan.loss!r}), "
        f"or loss={newton!r} with cluster='auto' (Newton steps, to tol in a few reads)."
    )


def fit_average(client, placement, plan, clock_start, on_part=None):
    """The parts' models averaged, weighted by their rows: a :class:`~..plan.result.FitResult`.

    A lost worker's part is trained again on a live one (Dask runs its task again, from the same
    seed); a fit that fails cancels every task it made.  ``on_part(record)`` is called as each part
    is trained (``part``, ``parts``, ``worker``, ``seconds``), in the order they finish."""
    with cancelled_on_error(client):
        return _fit_average(client, placement, plan, clock_start, on_part)


def _fit_average(client, placement, plan, clock_start, on_part):
    parts = placement.parts
    # Every part draws its seeds from the fit's seed, as a fit with random_state=plan.seed does.
    part_seed = int(np.random.RandomState(plan.seed).randint(np.iinfo(np.int64).max, dtype=np.int64))
    part_plan = plan.replace(seed=part_seed, calibration_seed=None)
    futures = [submit(client, train_part, part_plan, source, worker=worker) for worker, source in parts]

    def trained(j):
        if on_part is not None:
            seconds = time.perf_counter() - clock_start
            on_part({"part": j, "parts": len(parts), "worker": parts[j][0], "seconds": seconds})

    fits = gather(client, futures, on_done=trained)
    sent = 3 * sum(packed.nbytes for _, packed in parts)  # counting labels, training, certifying
    received = sum(f.W.nbytes for f in fits)
    rows = np.asarray(placement.rows, dtype=float)
    share = rows / rows.sum()
    W = sum(s * f.W for s, f in zip(share, fits, strict=True))
    half_sq = 0.5 * np.einsum("ij,ij->i", W, W)
    loss = loss_of(plan.loss)
    if loss.quadratic_dual:
        # The duals' own weights (a part's model may be an earlier, better pass's) and their sums.
        dual_Ws, dual_sums = [f.dual_W for f in fits], [f.dual_sums for f in fits]
        dual, scales = combined_dual(dual_Ws, dual_sums, share, loss)
        losses = gather(
            client,
            [
                submit(client, part_loss, source, W, plan, fit.prints, worker=worker)
                for (worker, source), fit in zip(parts, fits, strict=True)
            ],
        )
        primal = half_sq + np.sum(losses, axis=0)
    else:  # the average's own dual point certifies it: its sums come with the loss's
        losses = gather(
            client,
            [
                submit(client, part_point, source, W, plan, fit.prints, worker=worker)
                for (worker, source), fit in zip(parts, fits, strict=True)
            ],
        )
        point = losses[0]
        for more in losses[1:]:
            point.add(more)
        primal = half_sq + point.loss
        sums = zip(point.alpha, point.v, point.loss, strict=True)
        dual = np.array([loss.newton_dual(a, v, lo) for a, v, lo in sums])
        scales = np.full((W.shape[0], len(parts)), np.nan)
    history = [
        {
            "part": k,
            "worker": worker,
            "partitions": source.n_partitions,
            "rows": int(n),
            "random_state": plan.seed,
            "passes": f.passes,
            "seconds": f.seconds,
            "primal": float(np.sum(f.primal)),
            "dual": float(np.sum(f.dual)),
            "dual_scale": scales[:, k].tolist(),
        }
        for k, ((worker, source), n, f) in enumerate(zip(parts, rows, fits, strict=True))
    ]
    gap = relative_gap(primal, dual)
    history.append(
        {
            "part": "average",
            "seconds": time.perf_counter() - clock_start,
            "bytes_sent": sent + W.nbytes * len(parts),
            "bytes_received": received + sum(_nbytes(x) for x in losses),
            "primal": float(primal.sum()),
            "dual": float(dual.sum()),
            "gap": float(gap.max()),
        }
    )
    messages = sorted({f"on a worker: {m}" for f in fits for m in f.messages})
    if gap.max() > plan.tol:
        messages.append(
            f"cluster='average' certified a relative duality gap of {gap.max():.3g} for the averaged "
            f"model, above tol={plan.tol:g}: the average of the parts' models is not the optimum of "
            f"all the rows. {_better_mode(plan)}"
            + scale_advice(joined_column_max([f.feature_max for f in fits]))
        )
    return FitResult(
        W=W,
        certificates=certificates(primal, dual, plan.labels),
        passes=max(r.get("passes", 0) for r in history),
        converged=True,  # the average's gap is reported (and warned of), not a target
        history=history,
        stopped=True,
        messages=messages,
        parts=placement.record(),
    )


def combined_dual(Ws, dual_sums, share, loss):
    """The best dual value of the union of the parts' dual variables, each part's scaled by its
    own ``t_k``: ``(dual per problem, t (problems, K))``.

    Part ``k``'s certified duals ``alpha_k`` (on disjoint rows) have ``sum_i alpha_i y_i x_i = W_k``,
    ``A_k = sum alpha`` and ``E_k = sum D_ii alpha_i^2`` (``dual_sums[k]``, per problem), so the
    union scaled by ``t`` has dual value

        D(t) = sum_k t_k A_k - 1/2 ||sum_k t_k W_k||^2 - 1/2 sum_k t_k^2 E_k,

    feasible for ``0 <= t_k <= loss.scale_upper`` (1 for a loss whose box is ``alpha <= C``): a concave
    quadratic in ``K`` variables, maximised here by exact coordinate steps from ``t = share``
    (the shares' point, whose ``w`` is the average: the bound :func:`fit_average` gave before).
    Any feasible ``t`` bounds the optimum from below, so the gap of the averaged model against it
    is a true bound; at ``t = share`` that gap is about ``1 - 1/K`` whatever the average's
    quality, at the best ``t`` it tracks the average's true distance to the optimum.
    """
    K, problems = len(Ws), Ws[0].shape[0]
    upper = loss.scale_upper
    duals, scales = np.empty(problems), np.empty((problems, K))
    for c in range(problems):
        V = np.array([W[c] for W in Ws])  # (K, D)
        A = np.array([sums[c, 0] for sums in dual_sums])
        Q = V @ V.T + np.diag([sums[c, 1] for sums in dual_sums])
        t = np.minimum(np.asarray(share, dtype=float), upper)
        for _ in range(_SCALE_SWEEPS):
            for k in range(K):
                if Q[k, k] > 0.0:
                    t[k] = min(max(t[k] + (A[k] - Q[k] @ t) / Q[k, k], 0.0), upper)
        duals[c] = float(t @ A - 0.5 * t @ Q @ t)
        scales[c] = t
    return duals, scales


def _nbytes(sums):
    """Bytes a part's certificate sums sent back: a loss array, or a :class:`~..primal.sums.Sums`."""
    if isinstance(sums, Sums):
        return sums.loss.nbytes + sums.alpha.nbytes + sums.v.nbytes
    return np.asarray(sums).nbytes


def part_point(packed, W, plan, prints=None):
    """A part's :class:`~..primal.sums.Sums` at ``W`` without a Hessian (one read, a partition at a
    time): its loss, the dual sum and ``sum alpha_i y_i x_i`` of the dual point ``alpha(W)``,
    which certify the average of a loss whose dual is not quadratic
    (:meth:`~..plan.losses.Loss.newton_dual`)."""
    k, width = W.shape
    total = Sums.zeros(k, width, hessian=False)
    zero, code, fmap = np.zeros_like(W), plan.loss_code, plan.feature_map  # zero: no trial direction
    for block, y_pm, cost in _labelled_blocks(packed, plan, prints):
        total.add(block_sums(block.X, y_pm, cost, W, zero, plan.bias, code, fmap, hessian=False))
    return total


def _labelled_blocks(packed, plan, prints=None):
    """``(block, y, cost)`` of each partition of a part with rows, read once on its worker (the
    synchronous scheduler), stopping at the partition after its task was cancelled.  Each block is
    checked against ``prints``, the fingerprints of the part's training reads (:class:`PartFit`),
    so that the average is never certified on rows other than those it was trained on."""
    from ..data.reader import source_prints

    source = part_source(packed, prints)
    checked = source_prints(source)
    stop_if_cancelled = cancel_check()
    with synchronous():
        for p in range(source.n_partitions):
            stop_if_cancelled()
            block = source.load(p)
            checked.check(block)
            if block.n_rows:
                yield (block, *encode_block(plan, block))


def part_loss(packed, W, plan, prints=None):
    """Per problem, the weighted loss sum of a part's rows at ``W`` (one read, a partition at a time)."""
    total = np.zeros(W.shape[0])
    for block, y_pm, cost in _labelled_blocks(packed, plan, prints):
        rows = kernel_rows(block.X, plan.feature_map)  # CSR for a feature map
        for c in range(W.shape[0]):
            total[c] += weighted_loss_sum(
                rows, y_pm[c], cost[c], np.ascontiguousarray(W[c]), plan.bias, plan.loss_code
            )
    return total

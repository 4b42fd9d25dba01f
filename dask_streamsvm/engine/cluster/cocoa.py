"""``cluster="cocoa"``: CoCoA+ rounds to the single-machine optimum (Ma, Smith, Jaggi et al. 2015,
adding with ``sigma' = K``).

Each part keeps its dual variables on its worker, and its rows when they fit in
``cache_bytes`` (a larger part is read every round: :mod:`.cocoa_local`).  Every round each part
fetches ``w`` (the columns its rows touch, when they are few: :mod:`.changes`), computes its
share of the certificate at ``w`` (loss sum, ``sum alpha``, ``sum D alpha^2``), runs
``inner_iter`` DCD passes of its local subproblem, and sends its change of ``w`` up a tree of
additions on the workers (:func:`~.tree.tree_sum` with :func:`add_updates`); at the root the
next ``w`` is made and only the certificate's sums go to the client.  The exact duality gap of
the broadcast ``w`` is known every round, and the fit stops at ``tol``.

Tasks are pure functions of their inputs (the dual variables are copied before a round changes
them, seeds are fixed), so Dask may retry them; a part read every round changes in place, and
its rounds name its version.  A worker lost in a round, or while the parts are read or ``w`` is
placed, is survived (:func:`_recover`): parts whose state was on it are read again from the
collection on a live worker with ``alpha = 0``, ``w`` is rebuilt exactly from every part's
``alpha``, and the rounds go on.  After :data:`_MAX_RECOVERIES` losses the fit stops with
:class:`~.runtime.WorkerLost` naming the lost workers; a fit that fails cancels its tasks
(:func:`~.runtime.cancelled_on_error`).
"""

import time

import numpy as np

from ..plan.certificate import certificates, relative_gap
from ..plan.losses import loss_of
from ..plan.problem import joined_column_max
from ..plan.result import FitResult
from .changes import add_changes, narrow, widened
from .cocoa_local import (
    load_part,
    local_round,
    part_feature_max,
    part_stats,
    part_weights,
    touched_of,
    update_of,
)
from .runtime import (
    WorkerLost,
    cancelled_on_error,
    gather,
    held,
    live_workers,
    no_workers,
    scatter,
    submit,
    wait,
)
from .tree import tree_sum

# A fit gives up after this many recoveries from lost workers.
_MAX_RECOVERIES = 3


def fit_cocoa(client, placement, plan, n_features, clock_start, on_round=None):
    """CoCoA+ rounds to the relative gap ``plan.tol``, at most ``plan.max_iter`` of ``plan.inner_iter``
    local passes: a :class:`~..plan.result.FitResult` (``passes`` counts the rounds).

    ``on_round(record)``, after every round, stops the rounds with a true value.  A fit that fails
    cancels every task it made.
    """
    with cancelled_on_error(client):
        return _fit_cocoa(client, placement, plan, n_features, clock_start, on_round)


def _fit_cocoa(client, placement, plan, n_features, clock_start, on_round):
    k, tol, max_iter, passes, seed = plan.n_problems, plan.tol, plan.max_iter, plan.fixed_passes, plan.seed
    loss = loss_of(plan.loss)
    parts = placement.parts
    sigma = float(len(parts))
    placed = placement.workers  # a lost part's worker is replaced here

    def load(j, worker):
        source = parts[j][1]
        return submit(client, load_part, source, plan, sigma, n_features, worker=worker)

    states = [load(j, worker) for j, worker in enumerate(placed)]
    versions = [0] * len(states)  # rounds each part has done: a part read every round checks it
    W = np.zeros((k, n_features + 1))
    w_bytes = W.nbytes
    history, converged, stop, recoveries, lost = [], False, False, 0, set()
    primal = dual = np.full(k, np.nan)
    rounds, sent, recovering = 0, 0, False
    # w lives on the workers: the parts' changes are added in a tree there, the new w is made at
    # the root and fetched from it by the other parts' workers; the client gets the certificate.
    W_at = cols = fetched = None  # placed once the parts are read, and again after a recovery
    while rounds < max_iter:
        start = time.perf_counter()
        try:
            if recovering:
                states, W, versions = _recover(client, states, placed, load)
                recovering, W_at = False, None
            if W_at is None:
                wait(client, states, placed, placement.reads)  # the parts' one read (up to cache_bytes)
                cols, fetched = _touched(client, states, placed, k)
                W_at = scatter(client, W, placed[0])
                sent += w_bytes
            # A part whose rows touch few columns fetches those of w only (sparse data).
            views = [W_at if c is None else submit(client, narrow, W_at, c, worker=placed[0]) for c in cols]
            new_states = [
                submit(client, local_round, state, views[j], passes, seed + 1_000_003 * rounds + 7919 * j,
                       versions[j], worker=placed[j])
                for j, state in enumerate(states)
            ]  # fmt: skip
            updates = [submit(client, update_of, s, worker=placed[j]) for j, s in enumerate(new_states)]
            root = tree_sum(client, updates, placed, add=add_updates)
            next_W = submit(client, apply_update, W_at, root, worker=placed[0])
            certify = submit(client, round_sums, W_at, root, worker=placed[0])
            half_sq, sums, tree_bytes = gather(client, [certify], placed)[0]
        except Exception as exc:  # noqa: BLE001 - a lost worker shows as many kinds of error
            gone = _lost_workers(client, states, placed, exc)
            if not gone:
                raise
            lost.update(gone)
            if recoveries >= _MAX_RECOVERIES:
                raise WorkerLost(
                    lost, f" during CoCoA+ round {rounds + 1}, after {recoveries} recoveries of their parts"
                ) from exc
            recoveries, recovering = recoveries + 1, True
            history.append(
                {"round": rounds, "recovered": repr(exc)[:200], "lost_workers": sorted(gone),
                 "seconds": time.perf_counter() - clock_start}
            )  # fmt: skip
            continue
        rounds += 1
        primal = half_sq + sums[:, 0]
        dual = loss.dual_value(sums[:, 1:], half_sq)
        gap = relative_gap(primal, dual)
        record = {
            "round": rounds,
            "seconds": time.perf_counter() - clock_start,
            "round_seconds": time.perf_counter() - start,
            "bytes_sent": sent,
            "bytes_received": half_sq.nbytes + sums.nbytes,
            # the tree's edges carry changes of w (counted on the way), and every part's worker but
            # the root's fetches its columns of the new w (all of them, unless its rows touch few)
            "bytes_between_workers": int(tree_bytes)
            + sum(w_bytes if f is None else f for j, f in enumerate(fetched) if placed[j] != placed[0]),
            "primal": float(primal.sum()),
            "dual": float(dual.sum()),
            "gap": float(gap.max()),
        }
        sent = 0
        history.append(record)
        converged = gap.max() <= tol
        stop = on_round is not None and on_round(record)
        if converged or stop or rounds == max_iter:
            break  # W_at is the certified one
        W_at, states = next_W, new_states
        versions = [v + 1 for v in versions]
    W = W if W_at is None else gather(client, [W_at], placed)[0]
    stats = [submit(client, part_stats, s, worker=placed[j]) for j, s in enumerate(states)]
    local = gather(client, stats, placed)
    feature_max = None
    if not converged:  # the warning's advice on scaling, from the columns' largest |x| on every part
        asked = [submit(client, part_feature_max, s, worker=placed[j]) for j, s in enumerate(states)]
        feature_max = joined_column_max(gather(client, asked, placed))
    record = placement.record()
    for entry, stats in zip(record, local, strict=True):
        entry.update(stats)
    return FitResult(
        W=W,
        certificates=certificates(primal, dual, plan.labels),
        passes=rounds,
        converged=converged,
        history=history,
        stopped=bool(stop),
        parts=record,
        feature_max=feature_max,
    )


def _touched(client, states, placed, k):
    """Per part, a future of the columns of ``W`` its rows touch (None: all, or too many to send
    apart), and the bytes of those columns of ``W`` (None: the whole ``W``)."""
    cols = [submit(client, touched_of, s, worker=placed[j]) for j, s in enumerate(states)]
    sizes = [submit(client, _size_or_none, c, worker=placed[j]) for j, c in enumerate(cols)]
    counts = gather(client, sizes)
    cols = [None if n is None else c for c, n in zip(cols, counts, strict=True)]
    return cols, [None if n is None else n * (8 + 8 * k) for n in counts]


def _size_or_none(cols):
    return None if cols is None else int(cols.size)


def add_updates(first, second):
    """Two ``(change of W, certificate sums, bytes moved)`` added: a node of CoCoA+'s tree, on the
    worker of ``first``; ``second`` came from another worker (its change and sums moved)."""
    moved = first[2] + second[2] + second[0].nbytes + second[1].nbytes
    return add_changes(first[0], second[0]), first[1] + second[1], moved


def apply_update(W, update):
    """The next round's ``W``: this one plus the sum of the parts' changes (on the tree's root)."""
    return W + widened(update[0], W.shape[1])


def round_sums(W, update):
    """What the client needs to certify ``W``: ``(1/2 ||W_c||^2, sums, bytes moved up the tree)``."""
    return 0.5 * np.einsum("ij,ij->i", W, W), update[1], update[2]


# -- a worker lost in a round ----------------------------------------------------------------


def _lost_workers(client, states, placed, error):
    """The workers of ``placed`` that left, sorted (empty when ``error`` is a task's own failure):
    those :class:`~.runtime.WorkerLost` named, else those the scheduler no longer lists, else, where
    a part's state was lost with its worker, that part's worker."""
    if isinstance(error, WorkerLost):
        return error.workers
    alive = set(live_workers(client))
    gone = {worker for worker in placed if worker not in alive}
    gone.update(placed[j] for j, s in enumerate(states) if s.status in ("lost", "cancelled"))
    return sorted(gone)


def _recover(client, states, placed, load):
    """Parts of lost workers read again (``alpha = 0``) on live ones; ``W`` rebuilt from all alphas.

    A part is read again when its worker is not among the scheduler's workers or holds its
    state no more.  A worker lost meanwhile raises :class:`~.runtime.WorkerLost` from the
    gather, and :func:`fit_cocoa` recovers again.
    """
    alive = live_workers(client)
    if not alive:
        raise no_workers(client)
    for j, state in enumerate(states):
        if placed[j] not in alive or not held(client, state):
            placed[j] = alive[j % len(alive)]
            states[j] = load(j, placed[j])
    weights = [submit(client, part_weights, s, worker=placed[j]) for j, s in enumerate(states)]
    shares = gather(client, weights, placed)
    return states, np.sum([w for w, _ in shares], axis=0), [v for _, v in shares]

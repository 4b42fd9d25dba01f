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
its rounds name its version.  A worker lost in a round is survived (:func:`_recover`): parts
whose state was on it are read again from the collection on a live worker with ``alpha = 0``,
``w`` is rebuilt exactly from every part's ``alpha``, and the rounds go on.
"""

import time

import numpy as np

from ..losses import loss_of
from ..result import FitResult
from .certify import certificates, relative_gap
from .changes import add_changes, narrow, widened
from .cocoa_local import load_part, local_round, part_stats, part_weights, touched_of, update_of
from .runtime import POLL_SECONDS, gather, live_workers, scatter, submit, wait
from .tree import tree_sum

# A fit gives up after this many rounds lost to failed workers.
_MAX_RECOVERIES = 3


def fit_cocoa(client, placement, plan, n_features, clock_start, on_round=None):
    """CoCoA+ rounds to the relative gap ``plan.tol``, at most ``plan.max_iter`` of ``plan.inner_iter``
    local passes: a :class:`~..result.FitResult` (``passes`` counts the rounds).

    ``on_round(record)``, after every round, stops the rounds with a true value.
    """
    k, tol, max_iter, passes, seed = plan.n_problems, plan.tol, plan.max_iter, plan.fixed_passes, plan.seed
    loss = loss_of(plan.loss)
    parts = placement.parts
    sigma = float(len(parts))
    placed = placement.workers  # a lost part's worker is replaced here

    def load(j, worker):
        source = parts[j][1]
        return submit(client, load_part, source, plan, sigma, n_features, worker=worker)

    states = [load(j, worker) for j, worker in enumerate(placed)]
    wait(client, states, placed, placement.reads)  # the parts' one read (up to cache_bytes of each)
    versions = [0] * len(states)  # rounds each part has done: a part read every round checks it
    W = np.zeros((k, n_features + 1))
    w_bytes = W.nbytes
    history, converged, stop, recoveries = [], False, False, 0
    primal = dual = np.full(k, np.nan)
    rounds = 0
    # w lives on the workers: the parts' changes are added in a tree there, the new w is made at
    # the root and fetched from it by the other parts' workers; the client gets the certificate.
    W_at = scatter(client, W, placed[0])
    sent = w_bytes
    cols, fetched = _touched(client, states, placed, k)
    while rounds < max_iter:
        start = time.perf_counter()
        try:
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
            if not _lost_worker(client, states, placed) or recoveries >= _MAX_RECOVERIES:
                raise
            recoveries += 1
            states, W, versions = _recover(client, states, placed, load)
            cols, fetched = _touched(client, states, placed, k)
            W_at = scatter(client, W, placed[0])
            sent += w_bytes
            history.append(
                {"round": rounds, "recovered": repr(exc)[:200], "seconds": time.perf_counter() - clock_start}
            )
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
    W = gather(client, [W_at], placed)[0]
    local = gather(client, [submit(client, part_stats, s, worker=placed[j]) for j, s in enumerate(states)])
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


def _lost_worker(client, states, placed):
    """Whether a part's worker is gone (rather than a task failing on its own)."""
    alive = set(live_workers(client))
    return any(worker not in alive for worker in placed) or any(
        s.status in ("lost", "cancelled") for s in states
    )


def _held(client, future):
    """Whether a worker holds ``future``'s result (false for a cancelled or forgotten one)."""
    if future.status in ("error", "cancelled", "lost"):
        return False
    try:
        return bool(client.who_has([future]).get(future.key))
    except Exception:  # noqa: BLE001 - the scheduler forgot it meanwhile
        return False


def _recover(client, states, placed, load):
    """Parts of lost workers read again (``alpha = 0``) on live ones; ``W`` rebuilt from all alphas.

    The scheduler may learn of a death after the client does: the parts are
    checked again, and their weights gathered, up to three times.
    """
    fresh = set()  # parts read again here: pending, not lost
    for attempt in range(3):
        alive = live_workers(client)
        if not alive:
            raise RuntimeError("every Dask worker is gone; the cluster fit cannot go on.")
        for j, state in enumerate(states):
            if j not in fresh and (placed[j] not in alive or not _held(client, state)):
                placed[j] = alive[j % len(alive)]
                states[j] = load(j, placed[j])
                fresh.add(j)
        try:
            shares = gather(
                client,
                [submit(client, part_weights, s, worker=placed[j]) for j, s in enumerate(states)],
                placed,
            )
            return states, np.sum([w for w, _ in shares], axis=0), [v for _, v in shares]
        except Exception:  # noqa: BLE001 - another part was lost meanwhile: look again
            if attempt == 2:
                raise
            time.sleep(POLL_SECONDS)
    raise AssertionError("unreachable")

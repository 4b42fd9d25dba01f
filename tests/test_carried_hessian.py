"""The in-memory Newton reads of the squared hinge carry their Hessian from read to read
(``engine/primal/carried.py``): the rows that changed piece are added to or taken from the last
read's Hessian, which is then the Hessian of the rows the read counts active; the read's other sums
are a full read's, and a fit takes the same steps to the same certificate."""

import numpy as np
import pytest

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.plan.threads import row_threads
from dask_streamsvm.engine.primal import carried as carried_module
from dask_streamsvm.engine.primal.carried import CHANGED_SHARE, CarriedHessian
from dask_streamsvm.engine.primal.sums import block_sums
from dask_streamsvm.kernels.losses import SQUARED_HINGE

BIAS = 1.0


def rows_and_problems(rng, n=3_000, d=7, k=3, dtype=np.float64):
    X = (rng.standard_normal((n, d)) * rng.uniform(0.5, 3.0, d)).astype(dtype)
    Y = np.where(rng.random((k, n)) < 0.4, 1.0, -1.0)
    cost = rng.uniform(0.1, 2.0, (k, n))
    cost[:, :5] = 0.0  # rows of no weight: never active
    return X, Y, cost


def formed_hessian(X, y, cost, point, bias=BIAS):
    """``sum_i 2 C_i x~_i x~_i^T`` over the rows of shortfall and cost above 0, by NumPy."""
    Xa = np.hstack([X.astype(np.float64), np.full((X.shape[0], 1), bias)])
    weight = np.where((1.0 - y * (Xa @ point) > 0) & (cost > 0), 2.0 * cost, 0.0)
    return Xa.T @ (weight[:, None] * Xa)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_carried_hessian_is_the_hessian_of_the_rows_the_read_counts_active(dtype, threads):
    """Three reads of three problems, the second and third at points that move hundreds of rows
    across the hinge point (some problems left out of a read, as a converged problem is): each
    Hessian is the one formed from the rows at that point, and every other sum is a full read's."""
    rng = np.random.default_rng(5)
    X, Y, cost = rows_and_problems(rng, dtype=dtype)
    D = X.shape[1] + 1
    carried = CarriedHessian(X, BIAS)
    W = rng.standard_normal((3, D)) * 0.3
    rel = 1e-12 if dtype == np.float64 else 2e-6  # float32 rows' Gram matrices are made in float32
    moved = []
    with row_threads(threads):
        for todo, S in (
            ([0, 1, 2], np.zeros((3, D))),
            ([0, 1, 2], rng.standard_normal((3, D)) * 0.05),
            ([0, 2], rng.standard_normal((2, D)) * 0.05),
        ):
            W_todo = W[todo]
            before = {c: carried.active.get(c) for c in todo}
            sums = carried.read(Y[todo], cost[todo], W_todo, S, todo, SQUARED_HINGE)
            full = block_sums(X, Y[todo], cost[todo], W_todo, S, BIAS, SQUARED_HINGE)
            for j, c in enumerate(todo):
                point = W_todo[j] + S[j]
                expected = formed_hessian(X, Y[c], cost[c], point)
                scale = np.abs(expected).max()
                np.testing.assert_allclose(sums.hessian[j], expected, rtol=0, atol=rel * scale)
                assert np.array_equal(sums.hessian[j], sums.hessian[j].T)
                if before[c] is not None:
                    moved.append(int(np.count_nonzero(before[c] != carried.active[c])))
            for name in ("loss", "alpha", "v", "trial"):
                np.testing.assert_allclose(getattr(sums, name), getattr(full, name), rtol=1e-12, atol=1e-12)
            assert np.array_equal(sums.active, full.active) and sums.rows == X.shape[0]
            W[todo] = W_todo + S
    assert carried.formed == 1 and carried.carried == 2
    assert min(moved) > 10  # the steps moved rows across the hinge point: the Hessians changed


def test_a_hessian_is_carried_up_to_half_the_active_rows_changed_and_formed_beyond(monkeypatch):
    """:data:`~.carried.CHANGED_SHARE`: the rows that changed piece are added to or taken from the
    last Hessian while they are at most half the rows the read counts active; beyond, the Hessian is
    formed from the active rows.  One column, the rows' margins ``x_i w`` with ``w = 1`` spread
    evenly; reads at ``w`` moved so that exactly the rows between move across the hinge point."""
    assert CHANGED_SHARE == 0.5
    n = 1_000
    x = np.linspace(0.001, 2.0, n)  # at w = (w_x, 0), row i is active where x_i w_x < 1 (labels +1)
    X = x[:, None]
    Y, cost = np.ones((1, n)), np.ones((1, n))
    grams = []
    original = CarriedHessian._gram

    def counted(self, rows, cost):
        grams.append(rows.size)
        return original(self, rows, cost)

    monkeypatch.setattr(CarriedHessian, "_gram", counted)

    def read_at(carried, w_x):
        return carried.read(Y, cost, np.array([[w_x, 0.0]]), np.zeros((1, 2)), [0], SQUARED_HINGE)

    def active_at(w_x):
        return int(np.count_nonzero(x * w_x < 1.0))

    for changed_share, carried_path in ((0.49, True), (0.51, False)):
        carried = CarriedHessian(X, 0.0)
        read_at(carried, 1.0)  # active: x < 1, half the rows
        first = active_at(1.0)
        # a point at which the active rows number a, of which first - a left: (first - a) / a = share
        a = int(round(first / (1.0 + changed_share)))
        w_x = 1.0 / x[a - 1] * (1.0 - 1e-9)  # rows 0 .. a-1 stay active
        assert active_at(w_x) == a
        grams.clear()
        sums = read_at(carried, w_x)
        expected = formed_hessian(X, Y[0], cost[0], np.array([w_x, 0.0]), bias=0.0)
        np.testing.assert_allclose(sums.hessian[0], expected, rtol=1e-12)
        assert grams == ([first - a] if carried_path else [a])


def test_an_in_memory_fit_carries_its_hessian_after_the_first_read_to_the_same_certificate(monkeypatch):
    """``LinearSVC(dual=False)`` on dense rows in memory: its sample's reads and its own form the
    Hessian once each and carry it after; the fit takes the same reads to the same certificate and
    weights as reads that form every Hessian from the rows (``CHANGED_SHARE`` below 0)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60_000, 12)).astype(np.float32) * rng.uniform(1, 50, 12).astype(np.float32)
    y = np.where(X @ rng.standard_normal(12) + 5 * rng.standard_normal(60_000) > 0, 1, -1)
    counts = []
    original = CarriedHessian.read

    def counted(self, *args, **kwargs):
        sums = original(self, *args, **kwargs)
        counts.append((id(self), self.formed, self.carried))
        return sums

    monkeypatch.setattr(CarriedHessian, "read", counted)
    carrying = LinearSVC(C=1.0, dual=False, tol=1e-6).fit(X, y)
    last = {}
    for key, formed, carried in counts:
        last[key] = (formed, carried)
    assert len(last) >= 2  # the sample's reads and the rows' own
    assert all(formed == 1 for formed, _ in last.values())
    assert sum(carried for _, carried in last.values()) >= 2
    monkeypatch.setattr(carried_module, "CHANGED_SHARE", -1.0)
    forming = LinearSVC(C=1.0, dual=False, tol=1e-6).fit(X, y)
    assert carrying.n_iter_ == forming.n_iter_
    assert carrying.duality_gap_ <= 1e-6 and forming.duality_gap_ <= 1e-6
    np.testing.assert_allclose(carrying.coef_, forming.coef_, rtol=1e-5, atol=1e-8)


def test_the_passes_over_a_cluster_parts_held_rows_carry_each_blocks_hessian():
    """A cluster's part passes over the rows its first read kept (``HeldRead`` over ``HeldRows``):
    each dense block carries its Hessian from pass to pass as rows in memory do, formed at the first
    pass only; each pass's sums are those of a pass that forms every Hessian (its Hessian up to
    rounding), a sparse block's summed as a read's; a copy of the rows (a transfer between workers)
    carries no Hessian, so its next pass forms them again; and a block whose Hessian and pieces would
    take the rows held past the part's budget forms its Hessian at every pass."""
    import pickle

    import scipy.sparse as sp

    from dask_streamsvm.engine.data.source import Block
    from dask_streamsvm.engine.plan.problem import FitPlan
    from dask_streamsvm.engine.primal.reads import HeldRead, HeldRows, carried_bytes

    rng = np.random.default_rng(11)
    n, d = 2_000, 6
    blocks = []
    for part in range(3):
        X = rng.standard_normal((n, d)) * rng.uniform(0.5, 3.0, d)
        blocks.append(Block(part, X, np.where(rng.random(n) < 0.4, 1, -1), rng.uniform(0.5, 2.0, n)))
    sparse = sp.random(n, d, density=0.3, random_state=1, format="csr") * 2.0
    blocks.append(Block(3, sparse, np.where(rng.random(n) < 0.5, 1, -1), np.ones(n)))
    held = HeldRows(blocks)
    labels = np.concatenate([b.y for b in blocks])
    classes = np.array([-1, 1])
    plan = FitPlan(C=1.0, dual=False).with_labels(classes, np.bincount(labels > 0), classes)
    carrying, forming = HeldRead(held, plan), HeldRead(held, plan)
    assert carrying.carries
    forming.carries = False
    W = rng.standard_normal((1, d + 1)) * 0.3
    hessians = []
    steps = [np.zeros((1, d + 1))] + [rng.standard_normal((1, d + 1)) * 0.05 for _ in range(2)]
    for S in steps:
        sums, full = carrying(W, S, [0]), forming(W, S, [0])
        for name in ("loss", "alpha", "v", "trial", "active"):
            np.testing.assert_allclose(getattr(sums, name), getattr(full, name), rtol=1e-12, atol=1e-12)
        scale = np.abs(full.hessian).max()
        np.testing.assert_allclose(sums.hessian, full.hessian, rtol=0, atol=1e-12 * scale)
        assert sums.rows == full.rows == 0 and sums.held is None  # a pass reads nothing, keeps no band
        hessians.append(full.hessian)
        W = W + S
    assert not np.allclose(hessians[1], hessians[2])  # the steps moved rows across the hinge point
    assert sorted(held._carried) == [0, 1, 2]  # the sparse block is summed as a read sums it
    assert all((c.formed, c.carried) == (1, 2) for c in held._carried.values())
    copy = pickle.loads(pickle.dumps(held))
    assert copy._carried == {} and len(copy.blocks) == 4
    # a budget that holds the rows and one block's Hessian and pieces: the others form theirs
    one = carried_bytes(n, 1, d + 1)
    assert one == 9 * n + 8 * (d + 1) ** 2
    tight = HeldRows(blocks, budget=held.nbytes + one)
    sums = HeldRead(tight, plan)(W, np.zeros((1, d + 1)), [0])
    full = forming(W, np.zeros((1, d + 1)), [0])
    np.testing.assert_allclose(sums.hessian, full.hessian, rtol=0, atol=1e-12 * np.abs(full.hessian).max())
    assert sorted(tight._carried) == [0]

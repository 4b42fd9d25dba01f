"""Each loss's leaves (kernels/losses.py) and engine pieces (engine/losses.py) against NumPy references.

The references are written from the maths, not from the code: a changed
constant (``MAX_DIAG``, a factor 2) or formula fails here before it moves a
model.
"""

import numpy as np
import pytest

from dask_streamsvm.engine import losses as el
from dask_streamsvm.engine.problem import LOSSES
from dask_streamsvm.kernels import losses as kl

NAMES = ["hinge", "squared_hinge"]


def ref_loss(name, m):
    xi = np.maximum(0.0, 1.0 - m)
    return xi if name == "hinge" else xi**2


def ref_derivative(name, m):
    """d loss / d m (the hinge's right derivative at m = 1: 0)."""
    if name == "hinge":
        return np.where(m < 1.0, -1.0, 0.0)
    return -2.0 * np.maximum(0.0, 1.0 - m)


def ref_box(name, C):
    """``(U, D)`` of the dual (Hsieh et al. 2008, eq. 4), D capped at 1e300."""
    if name == "hinge":
        upper, diag = C.copy(), np.zeros_like(C)
    else:
        with np.errstate(divide="ignore", over="ignore"):
            upper, diag = np.full_like(C, np.inf), np.minimum(1.0 / (2.0 * C), 1e300)
    weightless = C <= 0.0
    upper[weightless], diag[weightless] = 0.0, 0.0
    return upper, diag


def ref_newton(name, C, m):
    """``(factor, weight)``: ``alpha = -C loss'(m)`` and the generalised ``D_ii = C loss''(m)``."""
    active = (m < 1.0) & (C > 0.0)
    if name == "hinge":
        return np.where(m < 1.0, C, 0.0), np.zeros_like(C)
    return 2.0 * C * np.maximum(0.0, 1.0 - m), np.where(active, 2.0 * C, 0.0)


@pytest.fixture
def draws():
    """Margins around the kink (1 itself, 0 and far on either side) and costs from 0 to subnormal."""
    rng = np.random.RandomState(0)
    m = np.concatenate([rng.uniform(-3.0, 3.0, 200), [1.0, 0.0, 1.0 - 1e-12, 1.0 + 1e-12, -50.0, 50.0]])
    C = np.concatenate([rng.uniform(0.01, 10.0, 200), [0.0, 1.0, 5e-324, 1e-310, 1e300, 2.5]])
    return m, C


def leaf(fn, *arrays):
    """A numba leaf applied to every element (the leaves are scalar functions)."""
    out = [fn(*args) for args in zip(*arrays, strict=True)]
    return np.array(out)


def test_the_codes_and_the_registry_agree():
    assert (kl.HINGE, kl.SQUARED_HINGE) == (0, 1)  # callers passing the old bool rely on these
    assert LOSSES == tuple(el.LOSSES) == tuple(NAMES)
    for name in NAMES:
        loss = el.loss_of(name)
        assert loss.name == name and el.loss_by_code(loss.code) is loss
    assert el.loss_by_code(True) is el.loss_of("squared_hinge")
    assert el.loss_by_code(False) is el.loss_of("hinge")
    assert el.DEFAULT is el.loss_of("squared_hinge") and kl.DEFAULT == kl.SQUARED_HINGE
    with pytest.raises(ValueError, match=r"loss must be one of 'hinge', 'squared_hinge'; got loss='l1'"):
        el.loss_of("l1")
    with pytest.raises(ValueError, match="no loss has the code 7"):
        el.loss_by_code(7)


@pytest.mark.parametrize("name", NAMES)
def test_value_and_derivative_match_the_reference(name, draws):
    m, C = draws
    code = el.loss_of(name).code
    s = 1.0 - m
    np.testing.assert_array_equal(leaf(lambda x: kl.loss_value(code, x), s), ref_loss(name, m))
    np.testing.assert_array_equal(leaf(lambda x: kl.loss_derivative(code, x), s), ref_derivative(name, m))
    weighted = leaf(lambda c, x: kl.weighted_loss(code, c, x), C, s)
    np.testing.assert_allclose(weighted, C * ref_loss(name, m), rtol=1e-15, atol=0)
    # The derivative is the slope of the value away from the kink.
    far = np.abs(1.0 - m) > 1e-3
    h = 1e-7
    slope = (ref_loss(name, m + h) - ref_loss(name, m - h)) / (2 * h)
    np.testing.assert_allclose(ref_derivative(name, m)[far], slope[far], atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_the_box_and_diagonal_match_the_reference_with_the_cap(name, draws):
    _, C = draws
    code = el.loss_of(name).code
    pairs = leaf(lambda c: kl.upper_and_diag(code, c), C)
    upper, diag = ref_box(name, C)
    np.testing.assert_array_equal(pairs[:, 0], upper)
    np.testing.assert_array_equal(pairs[:, 1], diag)
    # The arrays' twin, any shape, float32 costs too.
    for cost in (C.reshape(2, -1), C[:200].astype(np.float32)):
        U, D = kl.upper_and_diag_arrays(cost, code)
        ref_U, ref_D = ref_box(name, np.asarray(cost, dtype=np.float64))
        np.testing.assert_array_equal(U, ref_U)
        np.testing.assert_array_equal(D, ref_D)
    if name == "squared_hinge":
        assert kl.MAX_DIAG == 1e300
        assert kl.upper_and_diag(code, 5e-324) == (np.inf, 1e300)  # 1 / (2 C) overflows: capped
        assert kl.upper_and_diag(True, 2.0) == (np.inf, 0.25)  # the old bool still means this loss


@pytest.mark.parametrize("name", NAMES)
def test_the_dual_term_its_sums_and_the_row_gap_match_the_reference(name, draws):
    m, C = draws
    code = el.loss_of(name).code
    rng = np.random.RandomState(1)
    upper, diag = ref_box(name, C)
    a = np.where(C > 0, rng.uniform(0.0, 1.0, C.shape) * np.minimum(upper, 3.0), 0.0)
    term = leaf(lambda x, d: kl.dual_term(code, x, d), a, diag)
    np.testing.assert_allclose(term, a - 0.5 * diag * a**2, rtol=1e-15)
    old = rng.uniform(0.0, 1.0, C.shape)
    changes = leaf(lambda n, o, d: kl.dual_sums_change(code, n, o, d), a, old, diag)
    np.testing.assert_allclose(changes[:, 0], a - old, rtol=1e-15)
    np.testing.assert_allclose(changes[:, 1], diag * (a**2 - old**2), rtol=1e-12, atol=1e-300)
    # gap_i = C loss(m) + a (m - 1) + 1/2 D a^2 >= 0, from the DCD gradient g = m - 1 + D a.
    weighted = (C > 0) & (C < 1e299)  # 1e300 * loss overflows nothing, but 1e-310's diag does
    g = m - 1.0 + diag * a
    gap = leaf(lambda gi, ai, u, d: kl.row_gap(code, gi, ai, u, d), g, a, upper, diag)
    expected = np.maximum(0.0, C * ref_loss(name, m) + a * (m - 1.0) + 0.5 * diag * a**2)
    np.testing.assert_allclose(gap[weighted], expected[weighted], rtol=1e-9, atol=1e-12)
    assert (gap >= 0).all()
    # The cache knows C only through (U, D).
    box = leaf(lambda x, u, d: kl.box_loss(code, x, u, d), 1.0 - m, upper, diag)
    np.testing.assert_allclose(box[weighted], (C * ref_loss(name, m))[weighted], rtol=1e-12)
    assert (box[C == 0.0] == 0.0).all()


@pytest.mark.parametrize("name", NAMES)
def test_the_newton_pieces_match_the_reference(name, draws):
    m, C = draws
    code = el.loss_of(name).code
    terms = leaf(lambda c, x: kl.newton_terms(code, c, x), C, 1.0 - m)
    factor, weight = ref_newton(name, C, m)
    np.testing.assert_array_equal(terms[:, 0], ref_loss(name, m))
    np.testing.assert_allclose(terms[:, 1], factor, rtol=1e-15)
    np.testing.assert_array_equal(terms[:, 2], weight)
    # The factor is -C loss'(m), and the rows' twin agrees with the leaf.
    np.testing.assert_allclose(terms[:, 1], -C * ref_derivative(name, m), rtol=1e-15)
    loss, f, w = (np.empty_like(m) for _ in range(3))
    kl.newton_rows(code, C, 1.0 - m, loss, f, w)
    np.testing.assert_array_equal(np.column_stack([loss, f, w]), terms)
    trial = np.empty_like(m)
    kl.newton_losses(code, 1.0 - m, trial)
    np.testing.assert_array_equal(trial, ref_loss(name, m))
    # NumPy's maximum keeps a NaN shortfall: so do the Newton sums (the certificate then refuses it).
    assert np.isnan(kl.newton_terms(code, 1.0, np.nan)[0]) and kl.loss_value(code, np.nan) == 0.0


def test_the_engine_pieces():
    hinge, squared = el.loss_of("hinge"), el.loss_of("squared_hinge")
    assert (hinge.scale_upper, squared.scale_upper) == (1.0, np.inf)
    assert (hinge.newton, squared.newton) == (False, True)
    assert el.newton_blocker("squared_hinge") is None
    assert el.newton_blocker("hinge") == (
        "loss='hinge' (the primal solver minimises the squared hinge, as LIBLINEAR's does)"
    )
    rng = np.random.RandomState(2)
    alpha, diag = rng.uniform(0, 1, 50), rng.uniform(0, 2, 50)
    for loss in (hinge, squared):
        assert loss.dual_sum_names == ("sum alpha", "sum D alpha^2")
        sums = loss.dual_sums(alpha, diag)
        assert sums == pytest.approx((alpha.sum(), (diag * alpha**2).sum()), rel=1e-14)
        expected = alpha.sum() - 1.25 - 0.5 * (diag * alpha**2).sum()
        assert loss.dual_value(sums, 1.25) == pytest.approx(expected, rel=1e-14)
        both = loss.dual_value(np.array([sums, sums]), np.array([1.25, 0.0]))
        np.testing.assert_allclose(both, [expected, expected + 1.25], rtol=1e-14)
        assert loss.primal_value(1.25, 3.0) == 4.25
    v = rng.randn(5)
    assert squared.newton_dual(4.0, v, 1.5) == pytest.approx(4.0 - 0.5 * v @ v - 1.5)
    with pytest.raises(ValueError, match="loss='hinge' has no Newton pieces"):
        hinge.newton_dual(4.0, v, 1.5)

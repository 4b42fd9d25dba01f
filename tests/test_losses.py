"""Each loss's leaves (kernels/losses.py) and engine pieces (engine/plan/losses.py) against NumPy references.

The references are written from the maths, not from the code: a changed
constant (``MAX_DIAG``, a factor 2) or formula fails here before it moves a
model.
"""

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import expit, xlogy

from dask_streamsvm.engine.plan import losses as el
from dask_streamsvm.engine.plan.problem import LOSSES
from dask_streamsvm.kernels import losses as kl

NAMES = ["hinge", "squared_hinge", "log_loss"]
HINGES = ["hinge", "squared_hinge"]


def ref_loss(name, m):
    if name == "log_loss":
        return np.logaddexp(0.0, -m)
    xi = np.maximum(0.0, 1.0 - m)
    return xi if name == "hinge" else xi**2


def ref_derivative(name, m):
    """d loss / d m (the hinge's right derivative at m = 1: 0)."""
    if name == "log_loss":
        return -expit(-m)
    if name == "hinge":
        return np.where(m < 1.0, -1.0, 0.0)
    return -2.0 * np.maximum(0.0, 1.0 - m)


def ref_entropy(a, C):
    """The logistic dual's row term ``-a log(a / C) - (C - a) log(1 - a / C)`` (0 log 0 = 0), as
    ``-C (r log r + (1 - r) log1p(-r))`` of ``r = a / C``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / C
        out = -C * (xlogy(r, r) + (1.0 - r) * np.log1p(-r))
    return np.where(C > 0, np.nan_to_num(out, nan=0.0), 0.0)


def ref_box(name, C):
    """``(U, D)`` of the dual (Hsieh et al. 2008, eq. 4; Yu et al. 2011, eq. 4), D capped at 1e300."""
    if name in ("hinge", "log_loss"):
        upper, diag = C.copy(), np.zeros_like(C)
    else:
        with np.errstate(divide="ignore", over="ignore"):
            upper, diag = np.full_like(C, np.inf), np.minimum(1.0 / (2.0 * C), 1e300)
    weightless = C <= 0.0
    upper[weightless], diag[weightless] = 0.0, 0.0
    return upper, diag


def ref_newton(name, C, m):
    """``(factor, weight)``: ``alpha = -C loss'(m)`` and the generalised ``D_ii = C loss''(m)``."""
    if name == "log_loss":
        return C * expit(-m), np.where(C > 0.0, C * expit(m) * expit(-m), 0.0)
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
    # callers passing the old bool rely on the first two
    assert (kl.HINGE, kl.SQUARED_HINGE, kl.LOGISTIC) == (0, 1, 2)
    assert LOSSES == tuple(el.LOSSES) == tuple(NAMES)
    assert el.SVM_LOSSES == tuple(HINGES)
    for name in NAMES:
        loss = el.loss_of(name)
        assert loss.name == name and el.loss_by_code(loss.code) is loss
    assert el.loss_by_code(True) is el.loss_of("squared_hinge")
    assert el.loss_by_code(False) is el.loss_of("hinge")
    assert el.DEFAULT is el.loss_of("squared_hinge") and kl.DEFAULT == kl.SQUARED_HINGE
    with pytest.raises(ValueError, match=r"loss must be one of 'hinge', 'squared_hinge', 'log_loss'; got"):
        el.loss_of("l1")
    with pytest.raises(ValueError, match="no loss has the code 7"):
        el.loss_by_code(7)


@pytest.mark.parametrize("name", NAMES)
def test_value_and_derivative_match_the_reference(name, draws):
    m, C = draws
    code = el.loss_of(name).code
    s = 1.0 - m
    if name == "log_loss":  # no kink: the same values to rounding (s = 1 - m is one rounding away)
        equal = lambda got, want: np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)  # noqa: E731
    else:
        equal = np.testing.assert_array_equal
    equal(leaf(lambda x: kl.loss_value(code, x), s), ref_loss(name, m))
    equal(leaf(lambda x: kl.loss_derivative(code, x), s), ref_derivative(name, m))
    weighted = leaf(lambda c, x: kl.weighted_loss(code, c, x), C, s)
    np.testing.assert_allclose(weighted, C * ref_loss(name, m), rtol=1e-13 if name == "log_loss" else 1e-15)
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
    term = leaf(lambda x, u, d: kl.dual_term(code, x, u, d), a, upper, diag)
    old = np.minimum(rng.uniform(0.0, 1.0, C.shape), upper)
    changes = leaf(lambda n, o, u, d: kl.dual_sums_change(code, n, o, u, d), a, old, upper, diag)
    if name == "log_loss":
        np.testing.assert_allclose(term, ref_entropy(a, C), rtol=1e-13, atol=1e-300)
        change = ref_entropy(a, C) - ref_entropy(old, C)
        np.testing.assert_allclose(changes[:, 0], change, rtol=1e-9, atol=1e-12)
        assert (changes[:, 1] == 0.0).all()
        assert (term >= 0).all()
    else:
        np.testing.assert_allclose(term, a - 0.5 * diag * a**2, rtol=1e-15)
        np.testing.assert_allclose(changes[:, 0], a - old, rtol=1e-15)
        np.testing.assert_allclose(changes[:, 1], diag * (a**2 - old**2), rtol=1e-12, atol=1e-300)
    # gap_i = a m + C loss(m) - term(a) >= 0 (the hinges' from the DCD gradient g = m - 1 + D a).
    weighted = (C > 0) & (C < 1e299)  # 1e300 * loss overflows nothing, but 1e-310's diag does
    g = leaf(lambda mi, ai, u, d: kl.dual_gradient(code, mi, ai, u, d), m, a, upper, diag)
    gap = leaf(lambda mi, gi, ai, u, d: kl.row_gap(code, mi, gi, ai, u, d), m, g, a, upper, diag)
    if name == "log_loss":
        expected = np.maximum(0.0, a * m + C * ref_loss(name, m) - ref_entropy(a, C))
    else:
        np.testing.assert_array_equal(g, m - 1.0 + diag * a)
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
    rtol = 1e-13 if name == "log_loss" else 1e-15  # the logistic loss reads m back from s = 1 - m
    np.testing.assert_allclose(terms[:, 0], ref_loss(name, m), rtol=rtol, atol=0)
    tiny = 1e-300 if name == "log_loss" else 0.0  # subnormal costs: a few units in their last place
    np.testing.assert_allclose(terms[:, 1], factor, rtol=rtol, atol=tiny)
    np.testing.assert_allclose(terms[:, 2], weight, rtol=rtol, atol=tiny)
    # The factor is -C loss'(m), and the rows' twin agrees with the leaf.
    np.testing.assert_allclose(terms[:, 1], -C * ref_derivative(name, m), rtol=rtol, atol=tiny)
    loss, f, w = (np.empty_like(m) for _ in range(3))
    kl.newton_rows(code, C, 1.0 - m, loss, f, w)
    np.testing.assert_array_equal(np.column_stack([loss, f, w]), terms)
    trial = np.empty_like(m)
    kl.newton_losses(code, 1.0 - m, trial)
    np.testing.assert_array_equal(trial, terms[:, 0])
    # The dual sum's term: alpha itself (squared hinge), the entropy of alpha(w) (logistic loss).
    dual = np.empty_like(m)
    kl.newton_dual_rows(code, C, 1.0 - m, f, dual)
    if name == "log_loss":
        # H(C p) with p = sigma(-m): -C (p log p + (1 - p) log(1 - p)), the logs from the margin (an
        # alpha within a float of C, at m = -50, still has an entropy of its own)
        ref = np.where(C > 0, C * (expit(-m) * np.logaddexp(0, m) + expit(m) * np.logaddexp(0, -m)), 0.0)
        np.testing.assert_allclose(dual, ref, rtol=1e-12, atol=1e-300)
        inside = (factor > 0) & (factor < 0.5 * C)  # where alpha itself holds every digit
        np.testing.assert_allclose(dual[inside], ref_entropy(factor, C)[inside], rtol=1e-9)
    else:
        np.testing.assert_array_equal(dual, f)
    # NumPy's maximum keeps a NaN shortfall: so do the Newton sums (the certificate then refuses it).
    assert np.isnan(kl.newton_terms(code, 1.0, np.nan)[0])
    if name != "log_loss":
        assert kl.loss_value(code, np.nan) == 0.0


def test_the_engine_pieces():
    hinge, squared, logistic = (el.loss_of(name) for name in NAMES)
    assert (hinge.scale_upper, squared.scale_upper, logistic.scale_upper) == (1.0, np.inf, 1.0)
    assert (hinge.newton, squared.newton, logistic.newton) == (False, True, True)
    assert (hinge.piecewise_quadratic, squared.piecewise_quadratic, logistic.piecewise_quadratic) == (
        True, True, False
    )  # fmt: skip
    assert el.newton_blocker("squared_hinge") is None and el.newton_blocker("log_loss") is None
    assert el.newton_blocker("hinge") == (
        "loss='hinge' (the primal solver minimises the squared hinge or the logistic loss, as "
        "LIBLINEAR's does)"
    )
    rng = np.random.RandomState(2)
    alpha, diag = rng.uniform(0, 1, 50), rng.uniform(0, 2, 50)
    upper = np.full(50, 1.5)
    sums = logistic.dual_sums(alpha, upper, np.zeros(50))
    assert sums[1] == 0.0 and sums[0] == pytest.approx(ref_entropy(alpha, upper).sum(), rel=1e-13)
    assert logistic.dual_value(sums, 1.25) == pytest.approx(sums[0] - 1.25, rel=1e-14)
    v = rng.randn(5)
    assert logistic.newton_dual(4.0, v, 1.5) == pytest.approx(4.0 - 0.5 * v @ v)  # the loss is no term
    for loss in (hinge, squared):
        assert loss.dual_sum_names == ("sum alpha", "sum D alpha^2")
        sums = loss.dual_sums(alpha, upper, diag)
        assert sums == pytest.approx((alpha.sum(), (diag * alpha**2).sum()), rel=1e-14)
        expected = alpha.sum() - 1.25 - 0.5 * (diag * alpha**2).sum()
        assert loss.dual_value(sums, 1.25) == pytest.approx(expected, rel=1e-14)
        both = loss.dual_value(np.array([sums, sums]), np.array([1.25, 0.0]))
        np.testing.assert_allclose(both, [expected, expected + 1.25], rtol=1e-14)
        assert loss.primal_value(1.25, 3.0) == 4.25
    assert squared.newton_dual(4.0, v, 1.5) == pytest.approx(4.0 - 0.5 * v @ v - 1.5)
    with pytest.raises(ValueError, match="loss='hinge' has no Newton pieces"):
        hinge.newton_dual(4.0, v, 1.5)


# -- the logistic dual's coordinate step (Yu, Huang and Lin 2011, Algorithm 3) ----------------------


def ref_logistic_step(m, a, C, q):
    """The root of ``log(z / (C - z)) + q (z - a) + m`` on (0, C) as its logit ``u = log(z / (C - z))``:
    the root of ``u + q (C sigma(u) - a) + m``, whose slope is at least 1 (brentq)."""
    f = lambda u: u + q * (C * expit(u) - a) + m  # noqa: E731
    return brentq(f, -1000.0, 1000.0, xtol=1e-14, rtol=1e-15, maxiter=500)


@pytest.mark.parametrize("C", [1e-3, 1.0, 250.0])
def test_the_logistic_step_solves_its_one_dimensional_problem(C):
    rng = np.random.RandomState(3)
    code = kl.LOGISTIC
    cases = [(rng.uniform(-4, 4), rng.uniform(0, 1) * C, rng.uniform(0, 5)) for _ in range(200)]
    cases += [(0.3, 0.0, 1.0), (-0.3, C, 1.0), (30.0, 0.5 * C, 0.0), (-30.0, 0.5 * C, 0.0), (2.0, 0.0, 0.0)]
    cases += [(-40.0, C, 2.0), (40.0, 0.0, 2.0), (0.0, 0.5 * C, 3.0)]
    for m, a, q in cases:
        g = kl.dual_gradient(code, m, a, C, 0.0)
        z = kl.dual_step(code, m, g, a, C, q)
        assert 0.0 <= z <= C
        u = ref_logistic_step(m, a, C, q)
        # Newton's last iterate: the derivative there (the subproblem's, at z) is at most a tenth of
        # the row's gradient where the step began, and the root is within reach of its last step.
        t = z if u < 0 else C - z
        if t > 0:  # (a root closer to an end than a float can be is that end)
            after = np.log(t / (C - t)) + q * (t - (a if u < 0 else C - a)) + (m if u < 0 else -m)
            assert abs(after) <= max(0.1 * abs(g), 1e-12) + 1e-9, (m, a, q, z, u)
        got, want = (z, C * expit(u)) if u < 0 else (C - z, C * expit(-u))
        assert abs(got - want) <= 0.2 * abs(g) * want + 1e-9 * want + 4e-16 * C * (u >= 0), (m, a, q, z, u)
    # A row already at its optimum does not move; a row of no weight stays at 0.
    z = C * expit(ref_logistic_step(0.7, 0.2 * C, C, 1.5))
    m = 0.7 + 1.5 * (z - 0.2 * C)  # the margin once alpha is z, so that z is this step's own root
    g = kl.dual_gradient(code, m, z, C, 0.0)
    assert abs(g) < 1e-9 and kl.dual_step(code, m, g, z, C, 1.5) == z
    assert kl.dual_step(code, 0.3, 0.0, 0.0, 0.0, 1.0) == 0.0


def test_the_logistic_gradient_is_finite_at_the_ends_of_the_box_and_exact_inside():
    """At alpha = 0 or C the distance to the end counts as EDGE * C: the gradient says whether the
    row wants to leave the end (a changed EDGE moves these values); inside the box, however near
    an end, it is exact (a clamp there froze a w8a fit at a 1.8e-6 gap: its projected gradient
    never fell, so its steps' tolerance never did)."""
    code, C = kl.LOGISTIC, 2.0
    assert kl.EDGE == 2.0**-53
    assert kl.dual_gradient(code, 0.5, 0.0, C, 0.0) == pytest.approx(0.5 + np.log(2.0**-53), rel=1e-15)
    assert kl.dual_gradient(code, -0.5, C, C, 0.0) == pytest.approx(-0.5 - np.log(2.0**-53), rel=1e-15)
    assert kl.dual_gradient(code, 0.5, 0.5, C, 0.0) == pytest.approx(0.5 + np.log(0.5 / 1.5), rel=1e-15)
    assert kl.dual_gradient(code, 0.5, 0.0, 0.0, 0.0) == 0.0  # no weight: nothing to move
    # A row at 0 whose margin passes -log(EDGE) is optimal there (its gradient points out of the box).
    assert kl.dual_gradient(code, 37.0, 0.0, C, 0.0) > 0.0 > kl.dual_gradient(code, 36.0, 0.0, C, 0.0)
    tiny = 1e-20  # inside the box, below EDGE * C: the exact log ratio, not the clamp's
    assert kl.dual_gradient(code, 40.0, tiny, C, 0.0) == pytest.approx(40.0 + np.log(tiny / (C - tiny)))


def test_the_logistic_step_tolerance_is_a_tenth_of_the_rows_gradient():
    assert (kl.INNER_SHARE, kl.INNER_FLOOR, kl.INNER_STEPS, kl.INNER_BACK) == (0.1, 1e-12, 100, 0.1)
    # A start that needs several Newton iterations: the step stops once the subproblem's derivative
    # is a tenth of the gradient it started from, not before (a looser share would stop sooner).
    code, C, q, a, m = kl.LOGISTIC, 1.0, 0.5, 0.5, 3.0
    g = kl.dual_gradient(code, m, a, C, 0.0)
    z = kl.dual_step(code, m, g, a, C, q)
    after = np.log(z / (C - z)) + q * (z - a) + m
    assert abs(after) <= 0.1 * abs(g)

"""Feature maps computed on the fly (COFFIN): PolynomialMap, explicit and hashed."""

import subprocess
import sys

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import PolynomialFeatures
from sklearn.svm import LinearSVC as LiblinearSVC

from dask_streamsvm import LinearSVC, PolynomialMap
from dask_streamsvm._validation import as_kernel_rows, kernel_rows
from dask_streamsvm.engine.cache import AlphaStore, RowCache
from dask_streamsvm.features import materialise
from dask_streamsvm.kernels.dcd import row_sqnorms
from dask_streamsvm.kernels.objective import add_weighted_rows, decision_values, weighted_loss_sum
from dask_streamsvm.kernels.rng import make_state
from dask_streamsvm.kernels.sbm import gradients

from .conftest import load_libsvm_dataset


def random_sparse(n=60, p=9, density=0.35, seed=0, dtype=np.float64):
    return sp.random(n, p, density=density, random_state=seed, format="csr", dtype=dtype)


MAPS = [
    PolynomialMap(),
    PolynomialMap(interaction_only=True),
    PolynomialMap(n_features=7),  # many collisions
    PolynomialMap(n_features=1000, alternate_sign=False),
    PolynomialMap(n_features=64, interaction_only=True, seed=5),
]


@pytest.mark.parametrize("interaction_only", [False, True])
def test_transform_is_scikit_learns_polynomial_features(interaction_only):
    X = random_sparse()
    expected = PolynomialFeatures(2, interaction_only=interaction_only, include_bias=False).fit_transform(X)
    ours = PolynomialMap(interaction_only=interaction_only).fit_transform(X)
    np.testing.assert_allclose(ours.toarray(), expected.toarray(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("fmap", MAPS, ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dot_add_and_norm_equal_the_materialised_rows(fmap, dtype):
    X = random_sparse(dtype=dtype)
    spec = fmap.spec(X.shape[1])
    Z = materialise(X, spec).toarray()
    rows = kernel_rows(X, spec)
    rng = np.random.RandomState(1)
    w = rng.randn(Z.shape[1] + 1)
    out = np.empty(X.shape[0])
    decision_values(rows, w, 0.7, out)  # DOT
    np.testing.assert_allclose(out, Z @ w[:-1] + 0.7 * w[-1], rtol=1e-12, atol=1e-12)
    sq = np.empty(X.shape[0])
    row_sqnorms(rows, 0.5, sq)  # ||phi(x)||^2, collisions included
    np.testing.assert_allclose(sq, (Z * Z).sum(axis=1) + 0.25, rtol=1e-12, atol=1e-12)
    y = np.where(rng.rand(X.shape[0]) < 0.5, 1.0, -1.0)
    alpha = rng.rand(X.shape[0])
    v = np.zeros_like(w)
    add_weighted_rows(rows, y, alpha, v, 0.7)  # ADD
    np.testing.assert_allclose(v[:-1], Z.T @ (alpha * y), rtol=1e-12, atol=1e-12)
    assert v[-1] == pytest.approx(0.7 * (alpha * y).sum())


def test_the_cache_reads_raw_rows_through_the_map():
    X = random_sparse(n=30)
    spec = PolynomialMap(n_features=50).spec(X.shape[1])
    store = AlphaStore(1)
    cache = RowCache(100_000, X.shape[1], np.float64, True, 1, nnz_per_row=4, feature_map=spec)
    cache.insert(X, np.arange(30), np.ones((1, 30)), np.ones((1, 30)), False, 1.0, store, make_state(0))
    Z = materialise(X, spec).toarray()
    slots = store.slot_of[:30]
    np.testing.assert_allclose(cache.QD[0, slots], (Z * Z).sum(axis=1) + 1.0, rtol=1e-12)
    W = np.random.RandomState(0).randn(1, 51)
    live = cache.live[: cache.n_live].copy()
    G = np.empty((1, live.shape[0]))
    gradients(cache.layout, cache.Y, cache.D, cache.A, W, 1.0, live, G)  # y w . [phi(x), 1] - 1 at alpha 0
    expected = Z @ W[0, :-1] + W[0, -1] - 1.0
    np.testing.assert_allclose(G[0], expected[cache.gid[live]], rtol=1e-12)


def test_hashing_is_the_same_in_another_process():
    code = (
        "import numpy as np, scipy.sparse as sp;"
        "from dask_streamsvm.features import PolynomialMap;"
        "X = sp.random(20, 6, density=0.5, random_state=3, format='csr');"
        "Z = PolynomialMap(n_features=32, seed=9).fit_transform(X);"
        "print(repr(Z.toarray().round(12).tolist()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    here = PolynomialMap(n_features=32, seed=9).fit_transform(sp.random(20, 6, density=0.5, random_state=3))
    assert eval(out) == here.toarray().round(12).tolist()  # noqa: S307 - our own repr of floats
    other_seed = PolynomialMap(n_features=32, seed=10).fit_transform(
        sp.random(20, 6, density=0.5, random_state=3)
    )
    assert not np.array_equal(here.toarray(), other_seed.toarray())


def test_bad_maps_are_named():
    X = random_sparse()
    with pytest.raises(ValueError, match="degree=2 only, got degree=3"):
        LinearSVC(feature_map=PolynomialMap(degree=3)).fit(X, np.arange(60) % 2)
    with pytest.raises(ValueError, match="n_features must be >= 1"):
        PolynomialMap(n_features=0).fit(X)
    with pytest.raises(TypeError, match="feature_map must be a map"):
        LinearSVC(feature_map="poly").fit(X, np.arange(60) % 2)


# -- against LIBLINEAR on the materialised features --------------------------------------


def primal(Z, y, C, w, squared):
    """P(w) of the linear SVM without intercept on materialised rows ``Z``."""
    loss = weighted_loss_sum(as_kernel_rows(Z), y, np.full(y.shape[0], C), np.append(w, 0.0), 0.0, squared)
    return 0.5 * float(w @ w) + loss


def liblinear_primal(Z, y, C, loss):
    ref = LiblinearSVC(C=C, loss=loss, fit_intercept=False, tol=1e-10, max_iter=100_000).fit(Z, y)
    return primal(Z, y, C, ref.coef_.ravel(), loss == "squared_hinge")


# (data, loss, C): settings where LIBLINEAR on the materialised features converges tightly.
POLY_CASES = {"ijcnn1": ("squared_hinge", 1.0), "a9a": ("squared_hinge", 0.1)}


_POLY = {}


def poly_problem(name):
    """Raw rows, materialised degree-2 rows, the setting and LIBLINEAR's primal on them (cached)."""
    if name not in _POLY:
        loss, C = POLY_CASES[name]
        X, y = load_libsvm_dataset(name)
        Z = PolynomialFeatures(2, include_bias=False).fit_transform(X).tocsr()
        _POLY[name] = X, y, Z, loss, C, liblinear_primal(Z, y, C, loss)
    return _POLY[name]


@pytest.mark.parametrize("name", sorted(POLY_CASES))
def test_degree_two_in_memory_matches_liblinear(name):
    X, y, Z, loss, C, expected = poly_problem(name)
    clf = LinearSVC(
        C=C, loss=loss, fit_intercept=False, feature_map=PolynomialMap(), tol=1e-7, max_iter=10_000,
        random_state=0,
    ).fit(X, y)  # fmt: skip
    assert clf.coef_.shape == (1, Z.shape[1])
    assert abs(clf.objective_ - expected) / expected < 1e-6, name
    assert clf.objective_ == pytest.approx(primal(Z, y, C, clf.coef_.ravel(), True), rel=1e-10)
    np.testing.assert_array_equal(clf.predict(X[:500]), np.where(Z[:500] @ clf.coef_.ravel() > 0, 1.0, -1.0))


@pytest.mark.slow
# a9a with SBM only, to keep the suite short; StreamSVM on ijcnn1.
@pytest.mark.parametrize("name, solver", [("ijcnn1", "streamsvm"), ("ijcnn1", "sbm"), ("a9a", "sbm")])
def test_degree_two_out_of_core_matches_liblinear(name, solver):
    X, y, Z, loss, C, expected = poly_problem(name)
    step = -(-X.shape[0] // 8)
    dense = X.toarray()
    Xd = da.from_array(dense, chunks=(step, dense.shape[1]))
    yd = da.from_array(y, chunks=step)
    clf = LinearSVC(
        C=C, loss=loss, fit_intercept=False, feature_map=PolynomialMap(), solver=solver,
        cache_bytes=int(0.25 * (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)), tol=1e-6,
        max_iter=200, random_state=0,
    ).fit(Xd, yd)  # fmt: skip
    assert abs(clf.objective_ - expected) / expected < 1e-6, name
    lazy = clf.predict(Xd)
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute()[:500], clf.predict(X[:500]))


def test_hashed_map_matches_liblinear_on_its_own_transform():
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:4000], y[:4000]
    fmap = PolynomialMap(n_features=2**10, seed=1)
    Z = fmap.fit_transform(X)
    expected = liblinear_primal(Z, y, 0.1, "hinge")
    for fit_X in (X, da.from_array(X.toarray(), chunks=(500, 123))):
        clf = LinearSVC(
            C=0.1, loss="hinge", fit_intercept=False, feature_map=fmap, tol=1e-7, max_iter=5000,
            cache_bytes="200KB", random_state=0,
        ).fit(fit_X, y if not isinstance(fit_X, da.Array) else da.from_array(y, chunks=500))  # fmt: skip
        assert abs(clf.objective_ - expected) / expected < 1e-6


def test_crammer_singer_and_partial_fit_take_a_map():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X[:600] / 16.0
    y = y[:600]
    fmap = PolynomialMap(interaction_only=True, n_features=4096)
    Z = fmap.fit_transform(X)
    ours = LinearSVC(C=0.01, multi_class="crammer_singer", feature_map=fmap, tol=1e-5, max_iter=3000,
                     random_state=0).fit(X, y)  # fmt: skip
    direct = LinearSVC(C=0.01, multi_class="crammer_singer", tol=1e-5, max_iter=3000, random_state=0).fit(
        Z, y
    )
    assert ours.objective_ == pytest.approx(direct.objective_, rel=3e-5)
    streamed = LinearSVC(C=0.01, feature_map=fmap, cache_bytes="100KB", random_state=0)
    for start in range(0, 600, 100):
        streamed.partial_fit(X[start : start + 100], y[start : start + 100], classes=np.arange(10))
    assert streamed.coef_.shape == (10, 4096) and streamed.score(X, y) > 0.9


def test_model_file_keeps_the_map(tmp_path):
    from dask_streamsvm import load

    X, y = load_libsvm_dataset("a9a")
    clf = LinearSVC(feature_map=PolynomialMap(n_features=512, seed=4), tol=1e-2, random_state=0)
    clf.fit(X[:2000], y[:2000])
    clf.save(tmp_path / "poly.model")
    again = load(tmp_path / "poly.model")
    assert again.feature_map.get_params() == clf.feature_map.get_params()
    np.testing.assert_array_equal(again.decision_function(X[:300]), clf.decision_function(X[:300]))

"""Feature maps computed on the fly (COFFIN): PolynomialMap, explicit and hashed."""

import subprocess
import sys

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import PolynomialFeatures
from sklearn.svm import LinearSVC as LiblinearSVC

from dask_streamsvm import (
    HashingMap,
    LinearSVC,
    PolynomialMap,
    SpectrumMap,
    WeightedDegreeMap,
    load,
)
from dask_streamsvm.datasets import make_splice_sites
from dask_streamsvm.engine.dual.alpha_store import AlphaStore
from dask_streamsvm.engine.dual.cache import RowCache
from dask_streamsvm.engine.plan.layout import as_kernel_rows, kernel_rows
from dask_streamsvm.features import materialise
from dask_streamsvm.io import csr_to_dask
from dask_streamsvm.kernels.dcd import row_sqnorms
from dask_streamsvm.kernels.objective import add_weighted_rows, decision_values, weighted_loss_sum
from dask_streamsvm.kernels.rng import make_state
from dask_streamsvm.kernels.sbm import gradients

from ._helpers import load_libsvm_dataset


def random_sparse(n=60, p=9, density=0.35, seed=0, dtype=np.float64):
    return sp.random(n, p, density=density, random_state=seed, format="csr", dtype=dtype)


MAPS = [
    PolynomialMap(),
    PolynomialMap(interaction_only=True),
    PolynomialMap(n_features=7),  # many collisions
    PolynomialMap(n_features=1000, alternate_sign=False),
    PolynomialMap(n_features=64, interaction_only=True, seed=5),
    PolynomialMap(degree=3, gamma=0.5, coef0=1.0),  # the polynomial kernel's weighted map
    PolynomialMap(degree=2, gamma=2.0, coef0=0.0),
    PolynomialMap(degree=4, n_features=64, seed=3),  # hashed, many collisions
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


@pytest.mark.parametrize("degree, gamma, coef0", [(3, 1.0, 1.0), (2, 0.5, 2.0), (4, 0.3, 0.0), (5, 0.2, 1.5)])
def test_the_weighted_map_s_gram_matrix_is_the_polynomial_kernel(degree, gamma, coef0):
    """phi(x) . phi(z) = (gamma x.z + coef0)^degree exactly, and ||phi(x)||^2 in closed form."""
    X = random_sparse(n=12, p=5, density=0.5).toarray()
    fmap = PolynomialMap(degree=degree, gamma=gamma, coef0=coef0)
    Z = fmap.fit_transform(X).toarray()
    from math import comb

    assert Z.shape == (12, comb(5 + degree, degree))
    np.testing.assert_allclose(Z @ Z.T, (gamma * X @ X.T + coef0) ** degree, rtol=1e-12, atol=1e-12)
    sq = np.empty(12)
    row_sqnorms(kernel_rows(sp.csr_matrix(X), fmap.spec(5)), 0.0, sq)
    np.testing.assert_allclose(sq, (gamma * (X * X).sum(axis=1) + coef0) ** degree, rtol=1e-12)


@pytest.mark.parametrize("fmap", [m for m in MAPS if m.n_features is None], ids=repr)
def test_kernel_is_the_maps_inner_products_in_closed_form(fmap):
    X, Z = random_sparse(), random_sparse(n=20, seed=1)
    phi_X, phi_Z = (materialise(A, fmap.spec(A.shape[1])) for A in (X, Z))
    np.testing.assert_allclose(fmap.kernel(X, Z), (phi_X @ phi_Z.T).toarray(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fmap.kernel(X.toarray()), (phi_X @ phi_X.T).toarray(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="X has 9 features and Z 3"):
        fmap.kernel(X, Z[:, :3])


def test_the_default_map_is_polynomial_features_not_the_polynomial_kernels():
    """Issue 41: PolynomialMap() is PolynomialFeatures' map, every monomial of weight 1, whose inner products
    are x.z + ((x.z)^2 + sum_i x_i^2 z_i^2) / 2, not the kernel's (x.z + 1)^2; the kernel's map is the one
    with gamma or coef0 given, or another degree, and its inner products are scikit-learn's
    polynomial_kernel exactly."""
    from sklearn.metrics.pairwise import polynomial_kernel

    X = random_sparse(n=40)
    G, squares = (X @ X.T).toarray(), (X.multiply(X) @ X.multiply(X).T).toarray()
    plain = PolynomialMap().kernel(X)
    np.testing.assert_allclose(plain, G + (G**2 + squares) / 2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(PolynomialMap(interaction_only=True).kernel(X), G + (G**2 - squares) / 2,
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    quadratic = polynomial_kernel(X, degree=2, gamma=1.0, coef0=1.0)
    assert np.abs(plain - quadratic).min() >= 0.5  # no inner product is the kernel's: the constant alone is 1
    for fmap, expected in [
        (PolynomialMap(), plain),
        (PolynomialMap(gamma=1.0, coef0=1.0), quadratic),
        (PolynomialMap(coef0=1.0), quadratic),
        (PolynomialMap(degree=3), polynomial_kernel(X, degree=3, gamma=1.0, coef0=1.0)),
        (PolynomialMap(gamma=0.5, coef0=0.0), polynomial_kernel(X, degree=2, gamma=0.5, coef0=0.0)),
    ]:
        phi = fmap.fit_transform(X)
        np.testing.assert_allclose((phi @ phi.T).toarray(), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fmap.kernel(X), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "dask"])
def test_a_degree_three_kernel_map_trains_to_liblinears_optimum_on_its_transform(stream):
    X, y = load_libsvm_dataset("ijcnn1")
    X, y = X[:3000], y[:3000]
    fmap = PolynomialMap(degree=3, gamma=0.5, coef0=1.0)
    Z = fmap.fit_transform(X)
    expected = liblinear_primal(Z, y, 1.0, "squared_hinge")
    data = csr_to_dask(X, y, 4) if stream else (X, y)
    params = {"solver": "streamsvm", "cache_bytes": "30%"} if stream else {}
    clf = LinearSVC(feature_map=fmap, fit_intercept=False, tol=1e-5, dual=True, random_state=0, **params).fit(
        *data
    )
    assert clf.coef_.shape == (1, Z.shape[1])
    assert 0.0 <= (clf.objective_ - expected) / clf.objective_ <= clf.duality_gap_ + 1e-9


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
    # y w . [phi(x), 1] - 1 at alpha 0 (the hinge's gradient: the rows were inserted with code 0)
    gradients(cache.layout, cache.Y, cache.U, cache.D, cache.A, W, 1.0, 0, live, G)
    expected = Z @ W[0, :-1] + W[0, -1] - 1.0
    # atol: G = w . phi(x) - 1 can cancel to ~1e-4, where the sums' order shows at 1e-16.
    np.testing.assert_allclose(G[0], expected[cache.gid[live]], rtol=1e-12, atol=1e-12)


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
    with pytest.raises(ValueError, match="interaction_only applies to the plain degree-2 map"):
        LinearSVC(feature_map=PolynomialMap(degree=3, interaction_only=True)).fit(X, np.arange(60) % 2)
    with pytest.raises(ValueError, match="has 2,872,408,791 monomials.*pass n_features"):
        PolynomialMap(degree=5, gamma=1.0).spec(200)
    with pytest.raises(ValueError, match="gamma must be"):
        PolynomialMap(degree=3, gamma=0.0).spec(4)
    with pytest.raises(ValueError, match="coef0 must be a finite number >= 0"):
        PolynomialMap(degree=3, coef0=-1.0).spec(4)
    with pytest.raises(ValueError, match="degree must be an integer >= 1"):
        PolynomialMap(degree=0).spec(4)
    with pytest.raises(ValueError, match="n_features must be an integer >= 1"):
        PolynomialMap(n_features=0).fit(X)
    with pytest.raises(TypeError, match="feature_map must be a map"):
        LinearSVC(feature_map="poly").fit(X, np.arange(60) % 2)


# -- against LIBLINEAR on the materialised features


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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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

    X, y = load_libsvm_dataset("a9a")
    clf = LinearSVC(feature_map=PolynomialMap(n_features=512, seed=4), tol=1e-2, random_state=0)
    clf.fit(X[:2000], y[:2000])
    clf.save(tmp_path / "poly.model")
    again = load(tmp_path / "poly.model")
    assert again.feature_map.get_params() == clf.feature_map.get_params()
    np.testing.assert_array_equal(again.decision_function(X[:300]), clf.decision_function(X[:300]))


# -- HashingMap


def mixed_frame(n=3000, seed=0):
    """A frame of string, categorical, numeric, boolean and token-list columns, with a label."""
    import pandas as pd

    rng = np.random.RandomState(seed)
    colour = rng.choice(["red", "green", "blue", "cyan"], n).astype(object)
    colour[rng.rand(n) < 0.05] = None  # missing values give no feature
    city = rng.choice([f"city{i}" for i in range(200)], n)
    x = rng.randn(n)
    tags = [list(rng.choice(list("abcde"), rng.randint(0, 4))) for _ in range(n)]
    score = (colour == "red") * 1.5 + (np.char.str_len(city.astype(str)) % 2) + x - 1.2
    score += np.array([1.0 * ("a" in t) for t in tags])
    y = np.where(score + 0.3 * rng.randn(n) > 0, "yes", "no")
    return pd.DataFrame(
        {
            "colour": colour,
            "city": pd.Categorical(city),
            "x": x,
            "flag": rng.rand(n) < 0.3,
            "tags": tags,
            "label": y,
        }
    )


def feature_hasher_dicts(frame):
    """The frame's rows as scikit-learn FeatureHasher dicts, by HashingMap's naming rules."""
    rows = []
    for record in frame.drop(columns="label").to_dict("records"):
        d = {}
        if isinstance(record["colour"], str):
            d[f"colour={record['colour']}"] = 1
        d[f"city={record['city']}"] = 1
        d["x"] = record["x"]
        d["flag"] = float(record["flag"])
        for token in record["tags"]:
            d[f"tags={token}"] = d.get(f"tags={token}", 0) + 1
        rows.append(d)
    return rows


def test_hashing_is_scikit_learns_feature_hasher():
    from sklearn.feature_extraction import FeatureHasher

    frame = mixed_frame(400)
    for n, sign in [(64, True), (2**12, False)]:
        ours = HashingMap(n_features=n, alternate_sign=sign).fit_transform(frame.drop(columns="label"))
        ref = FeatureHasher(n_features=n, input_type="dict", alternate_sign=sign)
        expected = ref.transform(feature_hasher_dicts(frame))
        np.testing.assert_array_equal(ours.toarray(), expected.toarray())
    X = random_sparse()
    numeric = HashingMap(n_features=16).fit_transform(X)
    ref = FeatureHasher(n_features=16, input_type="dict").transform(
        [{str(j): v for j, v in zip(X[i].indices, X[i].data, strict=True)} for i in range(X.shape[0])]
    )
    np.testing.assert_allclose(numeric.toarray(), ref.toarray(), rtol=1e-15)


@pytest.mark.slow
def test_a_frame_of_strings_trains_without_encoding(tmp_path):
    """In memory, streamed and one pass: the same hashed problem as LIBLINEAR on FeatureHasher's output."""
    import dask
    import dask.dataframe as dd
    from sklearn.feature_extraction import FeatureHasher

    frame = mixed_frame()
    X, y = frame.drop(columns="label"), frame["label"].to_numpy()
    fmap = HashingMap(n_features=2**11)
    Z = FeatureHasher(n_features=2**11, input_type="dict").transform(feature_hasher_dicts(frame))
    yy = np.where(y == "yes", 1.0, -1.0)
    ref = LiblinearSVC(C=0.5, loss="hinge", fit_intercept=False, tol=1e-10, max_iter=100_000).fit(Z, yy)
    expected = primal(Z, yy, 0.5, ref.coef_.ravel(), False)
    params = {"C": 0.5, "loss": "hinge", "fit_intercept": False, "feature_map": fmap, "tol": 1e-7}
    clf = LinearSVC(max_iter=20_000, random_state=0, **params).fit(X, y)
    assert abs(clf.objective_ - expected) / expected < 1e-6
    assert clf.n_features_in_ == 5 and list(clf.feature_names_in_) == list(X.columns)
    with dask.config.set({"dataframe.convert-string": False}):  # keep the token lists as lists
        frames = dd.from_pandas(frame, npartitions=6)
    streamed = LinearSVC(solver="sbm", cache_bytes="100KB", max_iter=300, random_state=0, **params)
    streamed.fit(frames, "label")
    assert abs(streamed.objective_ - expected) / expected < 1e-6
    lazy = streamed.predict(frames)
    np.testing.assert_array_equal(lazy.compute().to_numpy(), clf.predict(X))
    clf.save(tmp_path / "hashed.model")
    np.testing.assert_array_equal(
        load(tmp_path / "hashed.model").decision_function(X), clf.decision_function(X)
    )
    one_pass = LinearSVC(feature_map=fmap, cache_bytes="100KB", random_state=0)
    one_pass.partial_fit(frames, "label", classes=["no", "yes"])
    assert one_pass.score(X, y) > 0.8


@pytest.mark.slow
@pytest.mark.parametrize("name", ["a9a", "ijcnn1"])
def test_rows_hashed_as_they_are_read(name):
    from sklearn.feature_extraction import FeatureHasher

    X, y = load_libsvm_dataset(name)
    Z = FeatureHasher(n_features=64, input_type="dict").transform(
        [{str(j): v for j, v in zip(X[i].indices, X[i].data, strict=True)} for i in range(X.shape[0])]
    )
    expected = liblinear_primal(Z, y, 1.0, "squared_hinge")
    params = {
        "fit_intercept": False,
        "feature_map": HashingMap(n_features=64),
        "tol": 1e-7,
        "random_state": 0,
    }
    in_memory = LinearSVC(max_iter=20_000, **params).fit(X, y)
    assert abs(in_memory.objective_ - expected) / expected < 1e-6
    Xd = da.from_array(X.toarray(), chunks=(4096, X.shape[1]))
    streamed = LinearSVC(solver="sbm", cache_bytes="1MB", max_iter=300, **params).fit(
        Xd, da.from_array(y, 4096)
    )
    assert abs(streamed.objective_ - expected) / expected < 1e-6


def test_maps_never_change_their_input():
    import pandas as pd

    X = random_sparse()
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    for fmap in (HashingMap(n_features=4), PolynomialMap(n_features=5), PolynomialMap()):
        fmap.fit_transform(X)
        for a, b in zip(before, (X.data, X.indices, X.indptr), strict=True):
            np.testing.assert_array_equal(a, b)
    frame = pd.DataFrame({"a": ["x", "y"], "b": [1.0, 2.0]})
    copy = frame.copy()
    HashingMap(n_features=4).fit_transform(frame)
    pd.testing.assert_frame_equal(frame, copy)


# -- string maps

STRING_MAPS = [
    WeightedDegreeMap(degree=4, n_features=64),
    WeightedDegreeMap(degree=3, n_features=10**6, normalize=False),
    SpectrumMap(3, n_features=32),
    SpectrumMap(4, weighted=True, n_features=1000, alternate_sign=False),
]


@pytest.mark.parametrize("fmap", STRING_MAPS, ids=repr)
def test_string_maps_dot_add_and_norm(fmap):
    frame, _ = make_splice_sites(40, length=25, random_state=0)
    frame.loc[3, "sequence"] = "ACG"  # shorter than some k-mers
    raw = fmap.encode(frame)
    spec = fmap.spec(raw.shape[1])
    assert_map_kernels(kernel_rows(raw, spec), materialise(raw, spec).toarray())


def assert_map_kernels(rows, Z, seed=2):
    """DOT (with a bias of 0.5), ||phi(x)||^2 and ADD of mapped ``rows`` equal those of ``Z`` = phi(X)."""
    rng = np.random.RandomState(seed)
    n = Z.shape[0]
    w = rng.randn(Z.shape[1] + 1)
    out = np.empty(n)
    decision_values(rows, w, 0.5, out)
    np.testing.assert_allclose(out, Z @ w[:-1] + 0.5 * w[-1], rtol=1e-12, atol=1e-12)
    sq = np.empty(n)
    row_sqnorms(rows, 0.0, sq)
    np.testing.assert_allclose(sq, (Z * Z).sum(axis=1), rtol=1e-12)
    v = np.zeros_like(w)
    alpha, y = rng.rand(n), np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    add_weighted_rows(rows, y, alpha, v, 0.0)
    np.testing.assert_allclose(v[:-1], Z.T @ (alpha * y), rtol=1e-12, atol=1e-12)


def sparse_dot(a, b):
    left = dict(zip(a.indices.tolist(), a.data.tolist(), strict=True))
    return sum(left.get(i, 0.0) * v for i, v in zip(b.indices.tolist(), b.data.tolist(), strict=True))


def test_weighted_degree_and_spectrum_are_their_kernels():
    """Without collisions, phi(s) . phi(t) is the kernel of the definitions."""
    import pandas as pd

    s, t = "ACGTACGGA", "ACGAACGTA"
    frame = pd.DataFrame({"seq": [s, t]})
    d = 4

    def beta(j):
        return 2 * (d - j + 1) / (d * (d + 1))

    wd = WeightedDegreeMap(degree=d, n_features=2**30, normalize=False, alternate_sign=False)
    Z = wd.fit_transform(frame)
    expected = sum(
        beta(j) for j in range(1, d + 1) for p in range(len(s) - j + 1) if s[p : p + j] == t[p : p + j]
    )
    assert sparse_dot(Z[0], Z[1]) == pytest.approx(expected, rel=1e-12)
    spectrum = SpectrumMap(3, n_features=2**30, normalize=False, alternate_sign=False).fit_transform(frame)
    counts_s = {s[p : p + 3]: s.count(s[p : p + 3]) for p in range(len(s) - 2)}
    kmers_t = [t[p : p + 3] for p in range(len(t) - 2)]
    expected = sum(counts_s.get(m, 0) for m in kmers_t)
    assert sparse_dot(spectrum[0], spectrum[1]) == pytest.approx(expected)


@pytest.mark.slow
def test_weighted_degree_svm_matches_liblinear_on_its_transform():
    import dask.dataframe as dd

    frame, y = make_splice_sites(3000, random_state=0)
    fmap = WeightedDegreeMap(degree=6, n_features=2**14, seed=3)
    Z = fmap.fit_transform(frame)
    expected = liblinear_primal(Z, y.astype(float), 1.0, "squared_hinge")
    params = {"fit_intercept": False, "feature_map": fmap, "tol": 1e-7, "random_state": 0}
    clf = LinearSVC(max_iter=20_000, **params).fit(frame, y)
    assert abs(clf.objective_ - expected) / expected < 1e-6
    assert clf.coef_.shape == (1, 2**14)
    frames = dd.from_pandas(frame.assign(label=y), npartitions=6)
    streamed = LinearSVC(solver="sbm", cache_bytes="200KB", max_iter=300, **params).fit(frames, "label")
    assert abs(streamed.objective_ - expected) / expected < 1e-6
    test_frame, y_test = make_splice_sites(1000, random_state=1)
    assert clf.score(test_frame, y_test) > 0.8
    np.testing.assert_array_equal(
        streamed.predict(frames).compute().to_numpy()[:200], clf.predict(frame)[:200]
    )


def test_a_map_of_a_map(tmp_path):
    """Degree-2 interactions of hashed columns: HashingMap encodes, PolynomialMap expands in the kernels."""
    from dask_streamsvm import MapOf

    frame = mixed_frame(2000, seed=1)
    X, y = frame.drop(columns="label"), frame["label"].to_numpy()
    fmap = MapOf(PolynomialMap(interaction_only=True, n_features=2**12), HashingMap(n_features=2**8))
    Z = fmap.fit_transform(X)
    expected_Z = PolynomialMap(interaction_only=True, n_features=2**12).fit_transform(
        HashingMap(n_features=2**8).fit_transform(X)
    )
    np.testing.assert_allclose(Z.toarray(), expected_Z.toarray(), rtol=1e-15)
    yy = np.where(y == "yes", 1.0, -1.0)
    expected = liblinear_primal(Z, yy, 1.0, "squared_hinge")
    clf = LinearSVC(fit_intercept=False, feature_map=fmap, tol=1e-7, max_iter=20_000, random_state=0).fit(
        X, y
    )
    assert abs(clf.objective_ - expected) / expected < 1e-6
    clf.save(tmp_path / "composed.model")
    np.testing.assert_array_equal(load(tmp_path / "composed.model").predict(X), clf.predict(X))
    with pytest.raises(ValueError, match="only maps that encode"):
        MapOf(PolynomialMap(), PolynomialMap()).fit(np.ones((2, 2)))


# -- virtual examples

SHIFTS = [(0, 0), (1, 0), (0, 1), (-1, 0)]


def shift_images(X, v):
    """Variant ``v`` of 8 x 8 images: shifted by ``SHIFTS[v]`` pixels, zeros coming in."""
    dx, dy = SHIFTS[v]
    images = np.asarray(X).reshape(-1, 8, 8)
    out = np.zeros_like(images)
    src = images[:, max(-dy, 0) : 8 - max(dy, 0), max(-dx, 0) : 8 - max(dx, 0)]
    out[:, max(dy, 0) : 8 - max(-dy, 0), max(dx, 0) : 8 - max(-dx, 0)] = src
    return out.reshape(X.shape)


def test_virtual_examples_are_examples_of_their_own():
    from sklearn.datasets import load_digits

    from dask_streamsvm import VirtualExamples

    X, y = load_digits(return_X_y=True)
    mask = (y == 3) | (y == 8)
    X, y = X[mask] / 16.0, np.where(y[mask] == 3, 1.0, -1.0)
    ve = VirtualExamples(shift_images, n_variants=4)
    expanded = ve.variants(X)
    assert expanded.shape == (4 * X.shape[0], 64)
    np.testing.assert_array_equal(expanded[: X.shape[0]], X)
    expected = liblinear_primal(expanded, np.tile(y, 4), 0.1, "hinge")
    params = {"C": 0.1, "loss": "hinge", "fit_intercept": False, "feature_map": ve, "tol": 1e-7}
    clf = LinearSVC(max_iter=20_000, random_state=0, **params).fit(X, y)
    assert abs(clf.objective_ - expected) / expected < 1e-6
    assert clf.coef_.shape == (1, 64)  # prediction sees the rows as they are
    Xd, yd = da.from_array(X, chunks=(100, 64)), da.from_array(y, chunks=100)
    streamed = LinearSVC(solver="sbm", cache_bytes="100KB", max_iter=300, random_state=0, **params).fit(
        Xd, yd
    )
    assert abs(streamed.objective_ - expected) / expected < 1e-6
    assert streamed.history_[0]["rows_read"] == 4 * X.shape[0]
    with pytest.raises(ValueError, match="must keep X's shape"):
        LinearSVC(feature_map=VirtualExamples(lambda X, v: X[:, :10], 2)).fit(X, y)


@pytest.mark.parametrize("cache", [None, "1MB"], ids=["every-variant-held", "sampled"])
@pytest.mark.parametrize("chunk", [None, 2_500], ids=["one-chunk", "chunks"])
def test_virtual_examples_in_the_primal_solvers_first_read(chunk, cache):
    """The default fit (the primal solver) on a Dask Array with virtual examples: its first read counts
    the variants it will keep (3 of each of the 10,000 rows the chunks give: more than the 28,000
    rows of its sample), so that where they fit ``cache_bytes`` it keeps them all and solves them in
    memory, and where they do not (1 MB holds the rows but not their variants) it keeps a sample.  It
    used to count the rows alone: it began to keep every row, and at the block where the variants
    outgrew the count it raised numpy's "need at least one array to concatenate" (one chunk) or went
    on with a sample.  The fit is LIBLINEAR's on the variants."""
    from dask_streamsvm import VirtualExamples

    rng = np.random.default_rng(5)
    X = rng.normal(size=(10_000, 6))
    y = np.where(X @ rng.normal(size=6) + 0.5 * rng.normal(size=10_000) > 0, 1.0, -1.0)
    ve = VirtualExamples(lambda X, v: X * (1.0 + 0.25 * v), n_variants=3)
    expected = liblinear_primal(ve.variants(X), np.tile(y, 3), 0.5, "squared_hinge")
    chunks = X.shape[0] if chunk is None else chunk
    params = {} if cache is None else {"cache_bytes": cache}
    clf = LinearSVC(C=0.5, fit_intercept=False, feature_map=ve, tol=1e-9, **params).fit(
        da.from_array(X, chunks=(chunks, 6)), da.from_array(y, chunks=chunks)
    )
    first = clf.history_[0]
    assert first["solver"] == "newton" and first["rows_read"] == 30_000
    assert (first["sample_rows"] == 30_000) == (cache is None)
    assert abs(clf.objective_ - expected) / expected < 1e-7


def test_virtual_examples_count_for_the_primal_solvers_rule_of_rows():
    """``dual="auto"`` streams the primal solver where the rows are at least 100 times the model's
    width (7 here: 700 rows); with 3 variants of each of 300 rows the read gives 900, so the read that
    counts the classes is the primal solver's first read, which keeps every variant: one read.  The
    rule used to see the 300 rows alone and counted the labels first."""
    from dask_streamsvm import VirtualExamples

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 6))
    y = np.where(X @ rng.normal(size=6) + 0.5 * rng.normal(size=300) > 0, 1.0, -1.0)
    ve = VirtualExamples(lambda X, v: X * (1.0 + 0.25 * v), n_variants=3)
    clf = LinearSVC(C=0.5, fit_intercept=False, feature_map=ve, tol=1e-9).fit(
        da.from_array(X, chunks=(100, 6)), da.from_array(y, chunks=100)
    )
    first = clf.history_[0]
    assert first["solver"] == "newton" and first["sample_rows"] == 900
    assert clf.history_[-1]["rows_read"] == 900  # the read that counted the classes, and no other
    expected = liblinear_primal(ve.variants(X), np.tile(y, 3), 0.5, "squared_hinge")
    assert abs(clf.objective_ - expected) / expected < 1e-7


# -- sums of maps over column groups


def grouped_frame(n=2000, seed=0):
    """Sequences with numeric and categorical columns; the label depends on all three."""
    frame, y = make_splice_sites(n, length=30, random_state=seed)
    rng = np.random.RandomState(seed + 1)
    frame["gc"] = rng.rand(n)
    frame["size"] = rng.randn(n)
    frame["tissue"] = rng.choice(["liver", "brain", "skin"], n).astype(object)
    score = y + 1.5 * (frame["gc"] - 0.5) * frame["size"] + (frame["tissue"] == "brain")
    return frame, np.where(score + 0.3 * rng.randn(n) > 0, 1, -1)


def grouped_map():
    from dask_streamsvm import ColumnMaps

    return ColumnMaps(
        [
            (WeightedDegreeMap(degree=4, n_features=2**10, seed=1), ["sequence"]),
            (PolynomialMap(), ["gc", "size"]),
            (HashingMap(n_features=16), ["tissue"]),
            ("passthrough", ["size"]),
        ]
    )


def test_column_maps_is_its_parts_side_by_side():
    frame, _ = grouped_frame(300)
    frame.loc[5, "size"] = 0.0  # a group with an empty entry
    Z = grouped_map().fit_transform(frame)
    parts = [
        WeightedDegreeMap(degree=4, n_features=2**10, seed=1).fit_transform(frame[["sequence"]]),
        PolynomialFeatures(2, include_bias=False).fit_transform(frame[["gc", "size"]].to_numpy()),
        HashingMap(n_features=16).fit_transform(frame[["tissue"]]),
        frame[["size"]].to_numpy(),
    ]
    expected = sp.hstack([sp.csr_matrix(p) for p in parts]).toarray()
    assert Z.shape == (300, 2**10 + 5 + 16 + 1)
    np.testing.assert_allclose(Z.toarray(), expected, rtol=1e-15, atol=1e-15)
    # The kernels on the side-by-side raw rows: DOT, ADD, ||phi(x)||^2 of the whole sum.
    fmap = grouped_map()
    raw = fmap.encode(frame)
    assert_map_kernels(kernel_rows(raw, fmap.spec(raw.shape[1])), expected, seed=3)


@pytest.mark.slow
def test_column_maps_trains_in_memory_and_out_of_core(tmp_path):
    import dask.dataframe as dd

    frame, y = grouped_frame()
    fmap = grouped_map()
    Z = fmap.fit_transform(frame)
    expected = liblinear_primal(Z, y.astype(float), 1.0, "squared_hinge")
    params = {"fit_intercept": False, "feature_map": fmap, "tol": 1e-7, "random_state": 0}
    clf = LinearSVC(max_iter=20_000, **params).fit(frame, y)
    assert abs(clf.objective_ - expected) / expected < 1e-6
    frames = dd.from_pandas(frame.assign(label=y), npartitions=5)
    for solver in ("sbm", "streamsvm"):
        streamed = LinearSVC(solver=solver, cache_bytes="300KB", max_iter=300, **params).fit(frames, "label")
        assert abs(streamed.objective_ - expected) / expected < 1e-6, solver
    # Asynchronous StreamSVM's model depends on timing: rows on the boundary (|margin| at the two
    # models' tol-level difference) may fall either side; every other row must agree.
    sure = np.abs(clf.decision_function(frame)) > 1e-3
    got = streamed.predict(frames).compute().to_numpy()
    np.testing.assert_array_equal(got[sure], clf.predict(frame)[sure])
    assert sure.mean() > 0.99
    clf.save(tmp_path / "grouped.model")
    np.testing.assert_array_equal(
        load(tmp_path / "grouped.model").decision_function(frame), clf.decision_function(frame)
    )


def test_column_maps_by_position_on_ijcnn1():
    """Degree 2 over the first 10 columns of ijcnn1, the other 12 as they are, against LIBLINEAR."""
    from dask_streamsvm import ColumnMaps

    X, y = load_libsvm_dataset("ijcnn1")
    X, y = X[:20_000], y[:20_000]
    fmap = ColumnMaps([(PolynomialMap(), list(range(10))), ("passthrough", list(range(10, 22)))])
    dense = X.toarray()
    Z = sp.hstack([PolynomialFeatures(2, include_bias=False).fit_transform(dense[:, :10]), X[:, 10:]]).tocsr()
    np.testing.assert_allclose(fmap.fit_transform(X).toarray(), Z.toarray(), rtol=1e-15)
    expected = liblinear_primal(Z, y, 1.0, "squared_hinge")
    params = {"fit_intercept": False, "feature_map": fmap, "tol": 1e-7, "random_state": 0}
    clf = LinearSVC(max_iter=20_000, **params).fit(X, y)
    assert abs(clf.objective_ - expected) / expected < 1e-6
    streamed = LinearSVC(solver="sbm", cache_bytes="1MB", max_iter=300, **params)
    streamed.fit(da.from_array(dense, chunks=(4000, 22)), da.from_array(y, chunks=4000))
    assert abs(streamed.objective_ - expected) / expected < 1e-6


def test_bad_column_maps_are_named():
    from dask_streamsvm import ColumnMaps, VirtualExamples

    frame, y = grouped_frame(50)
    with pytest.raises(ValueError, match=r"names columns \['nope'\] that X does not have"):
        LinearSVC(feature_map=ColumnMaps([(PolynomialMap(), ["gc", "nope"])])).fit(frame, y)
    with pytest.raises(ValueError, match="by name, but X has no column names"):
        ColumnMaps([(PolynomialMap(), ["gc"])]).fit_transform(np.ones((3, 2)))
    with pytest.raises(ValueError, match="positions \\[0, 5\\]; X has 2 columns"):
        ColumnMaps([(PolynomialMap(), [0, 5])]).fit_transform(np.ones((3, 2)))
    with pytest.raises(ValueError, match="must be a pair"):
        ColumnMaps([PolynomialMap()]).fit_transform(np.ones((3, 2)))
    with pytest.raises(TypeError, match="feature map or 'passthrough'"):
        ColumnMaps([(VirtualExamples(lambda X, v: X, 2), [0])]).fit_transform(np.ones((3, 2)))
    with pytest.raises(ValueError, match="non-empty list"):
        ColumnMaps([]).fit_transform(np.ones((3, 2)))


# -- issue 36, round three: HashingMap on Dask input and in memory agree


def _hashed_frame():
    rng = np.random.RandomState(0)
    frame = pd.DataFrame({"v": rng.randn(40), "s": ["u", "w"] * 20})
    frame.loc[7, "v"] = 1e300
    return frame, np.array([0, 1] * 20)


def test_hashing_map_refuses_values_at_1e300_on_dask_input_as_in_memory():
    frame, y = _hashed_frame()
    model = dict(feature_map=HashingMap(n_features=16), random_state=0)
    with pytest.raises(ValueError) as memory:
        LinearSVC(**model).fit(frame, y)  # in memory
    ddf = dd.from_pandas(frame.assign(y=y), npartitions=2)
    with pytest.raises(ValueError) as streamed:
        LinearSVC(solver="sbm", cache_bytes="8KB", **model).fit(ddf, "y")
    tail = "the row's squared norm x . x overflows float64 (its largest value is 1e+300)"
    assert str(memory.value).startswith(f"X, row 7: {tail}")
    assert str(streamed.value).startswith("partition 0, row 7")
    assert f"column 'v': {tail}" in str(streamed.value)
    assert str(memory.value).split(": ", 1)[1] == str(streamed.value).split("column 'v': ", 1)[1]


def test_hashing_map_skips_the_same_rows_on_dask_input_as_in_memory():
    frame, y = _hashed_frame()
    model = dict(feature_map=HashingMap(n_features=16), random_state=0, on_invalid="skip", max_iter=50)
    memory = LinearSVC(**model).fit(frame, y)
    ddf = dd.from_pandas(frame.assign(y=y), npartitions=2)
    streamed = LinearSVC(solver="sbm", cache_bytes="8KB", **model).fit(ddf, "y")
    assert memory.history_[-1]["rows_skipped"] == 1
    assert streamed.history_[0]["rows_skipped"] == 1


def test_hashed_signs_make_the_hashed_polynomial_kernel_unbiased():
    """Weinberger et al. (2009): with a hashed sign per monomial, colliding monomials cancel on
    average, so over seeds the hashed map's squared norm is the explicit map's; without signs the
    collisions of positive monomials add up (issue 52: removing the sign failed nothing before)."""
    x = np.random.default_rng(0).random((1, 10)) + 0.5  # positive inputs: every monomial positive

    def squared_norm(fmap):
        return float(fmap.fit_transform(x).power(2).sum())

    exact = squared_norm(PolynomialMap())

    def mean_ratio(sign):
        maps = [PolynomialMap(n_features=16, alternate_sign=sign, seed=s) for s in range(200)]
        return np.mean([squared_norm(fmap) for fmap in maps]) / exact

    assert abs(mean_ratio(True) - 1.0) < 0.3  # measured 1.0 +- 0.05 over 200 seeds
    assert mean_ratio(False) > 2.0  # the collisions' bias: about 1 + 64 / 16 here

"""Same data, same ``random_state``, same model bit for bit: the modes ``docs/reliability.md`` says are.

Each mode fits twice on a Dask collection whose partitions take a random 0 to 20 ms to compute, a
different timing on every read, so that a decision taken on timing would show.  Not tested here:
``solver="streamsvm"`` with ``deterministic=False`` (the default), whose trainer sweeps while the
reader has nothing ready, so that its model follows the reader's speed (documented as not
reproducible).
"""

import random
import time

import dask
import dask.array as da
import numpy as np
import pytest

from dask_streamsvm import BudgetedSVC, LinearSVC, OnePassSVC

N_PARTS, PART_ROWS, N_FEATURES = 6, 80, 6


def _data(classes=2):
    rng = np.random.RandomState(0)
    X = rng.randn(N_PARTS * PART_ROWS, N_FEATURES) * rng.uniform(0.2, 5.0, N_FEATURES)
    scores = X @ rng.randn(N_FEATURES) + rng.randn(X.shape[0])
    y = np.digitize(scores, np.quantile(scores, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y.astype(np.int64)


def _jittery(a):
    """``a`` as a Dask Array whose partitions each take a random 0 to 20 ms to compute."""

    def part(i):
        time.sleep(random.uniform(0.0, 0.02))
        return a[i * PART_ROWS : (i + 1) * PART_ROWS]

    shape = (PART_ROWS, *a.shape[1:])
    return da.concatenate([da.from_delayed(dask.delayed(part)(i), shape, a.dtype) for i in range(N_PARTS)])


def _arrays(model):
    if isinstance(model, BudgetedSVC):
        return [*model.support_vectors_, *model.dual_coef_, model.intercept_]
    return [model.coef_, model.intercept_]


STREAM = dict(C=10.0, cache_bytes=8_000, tol=1e-6, max_iter=20, random_state=0)
MODES = {
    "memory, dual": (lambda: LinearSVC(solver="memory", random_state=0, tol=1e-6), "memory", 2),
    "memory, dual=False": (lambda: LinearSVC(dual=False, random_state=0), "memory", 2),
    "memory, crammer_singer": (lambda: LinearSVC(multi_class="crammer_singer", random_state=0), "memory", 3),
    "memory, probability": (lambda: LinearSVC(probability=True, random_state=0), "memory", 2),
    "streamed, dual=False": (lambda: LinearSVC(dual=False, random_state=0), "dask", 2),
    "sbm": (lambda: LinearSVC(**STREAM, solver="sbm", inner_iter=3), "dask", 2),
    "bm": (lambda: LinearSVC(**STREAM, solver="bm", inner_iter=3), "dask", 2),
    "sbm, one-vs-rest, probability": (lambda: LinearSVC(**STREAM, solver="sbm", probability=True), "dask", 3),
    "streamsvm, deterministic": (
        lambda: LinearSVC(**STREAM, solver="streamsvm", deterministic=True),
        "dask",
        2,
    ),
    "partial_fit": (lambda: LinearSVC(cache_bytes=8_000, random_state=0), "partial", 2),
    "OnePassSVC": (lambda: OnePassSVC(random_state=0), "dask", 2),
    "BudgetedSVC": (lambda: BudgetedSVC(budget=30, max_iter=2, random_state=0), "dask", 2),
}


def _fit(make, how, classes):
    X, y = _data(classes)
    model = make()
    if how == "memory":
        return model.fit(X, y)
    if how == "partial":
        model.partial_fit(_jittery(X), _jittery(y), classes=np.unique(y))
        return model.partial_fit(_jittery(X), _jittery(y))
    return model.fit(_jittery(X), _jittery(y))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("mode", list(MODES))
def test_two_fits_of_a_reproducible_mode_give_the_same_model_bit_for_bit(mode):
    make, how, classes = MODES[mode]
    first, second = (_arrays(_fit(make, how, classes)) for _ in range(2))
    for a, b in zip(first, second, strict=True):
        assert np.array_equal(a, b), f"{mode}: the two fits differ by up to {np.max(np.abs(a - b))}"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "params",
    [
        dict(cluster="average", solver="sbm"),
        dict(cluster="average", deterministic=True),
        dict(cluster="cocoa"),
        dict(cluster="cocoa", dual=False),
    ],
    ids=["average-sbm", "average-streamsvm-deterministic", "cocoa", "dual=False"],
)
def test_two_cluster_fits_on_the_same_parts_give_the_same_model_bit_for_bit(params, local_cluster):
    distributed = pytest.importorskip("distributed")
    X, y = _data()
    with distributed.Client(local_cluster) as client:
        client.wait_for_workers(1, timeout=60)  # the session's cluster may be starting its worker still
        models = [
            LinearSVC(**{**STREAM, "tol": 1e-4}, **params).fit(_jittery(X), _jittery(y)) for _ in range(2)
        ]
    assert models[0].cluster_parts_ == models[1].cluster_parts_
    for a, b in zip(_arrays(models[0]), _arrays(models[1]), strict=True):
        assert np.array_equal(a, b)

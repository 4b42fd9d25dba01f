"""The band from a sample on a cluster (issue 52): the hinge in two or three reads of every part,
whatever the workers, the band solved from the parts' joined bands; CoCoA+ where it gives up."""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.primal import smoothed

from ._helpers import load_libsvm_dataset, noisy_linear_data, two_worker_client

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with two_worker_client() as c:
        yield c


def _primal(X, sign, C, w):
    return 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - sign * (X @ w[:-1] + w[-1])).sum())


@pytest.mark.parametrize("scale", ["unit", "raw"])
def test_the_hinge_on_a_cluster_is_the_band_in_two_reads_with_a_true_certificate(client, scale):
    X, y = noisy_linear_data(40_000, 6, seed=9)
    if scale == "raw":
        X = np.clip(np.round(X * 40 + 128), 0, 255)
    Xd, yd = da.from_array(X, chunks=(4_000, 6)), da.from_array(y, chunks=4_000)
    clf = LinearSVC(loss="hinge", C=0.1, tol=1e-4, cache_bytes="10%").fit(Xd, yd, client=client)
    methods = {r["method"] for r in clf.history_}
    assert methods == {"band"} and clf.n_iter_ <= 2
    assert clf.duality_gap_ <= 1e-4
    sign = np.where(y > 0, 1.0, -1.0)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    assert clf.objective_ == pytest.approx(_primal(X, sign, 0.1, w), rel=1e-10)
    _, reference, _ = smoothed.solve_smoothed(smoothed.Rows(X, sign, np.full(len(y), 0.1), 1.0), tol=1e-11)
    assert (clf.objective_ - reference.primal) / clf.objective_ <= clf.duality_gap_ + 1e-10
    assert clf.objective_ * (1 - clf.duality_gap_) <= reference.primal * (1 + 1e-10)
    assert clf.history_[-1]["bytes_received"] > 0 and clf.history_[-1]["parts"] == 2


def test_on_a_cluster_the_band_gives_way_to_cocoa_and_says_so(client):
    X, y = load_libsvm_dataset("a9a")
    X, y = X[:16_000], y[:16_000]
    Xd, yd = da.from_array(X, chunks=(1_600, 123)), da.from_array(y, chunks=1_600)
    with pytest.warns(ConvergenceWarning, match=r"gave way to CoCoA\+ \(cluster='cocoa'\) after one read"):
        warnings.simplefilter("ignore", ConvergenceWarning)  # CoCoA+'s own, of its rounds
        warnings.filterwarnings("always", "the band from a sample", ConvergenceWarning)
        clf = LinearSVC(loss="hinge", cache_bytes="10%", tol=1e-2, max_iter=5, random_state=0).fit(
            Xd, yd, client=client
        )
    methods = [r["method"] for r in clf.history_]
    assert methods[:2] == ["band", "band"] and set(methods[2:]) == {"cocoa"}

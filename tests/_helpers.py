"""Data and constants shared by the test files: the LIBSVM datasets and LIBLINEAR's optima.

Test files import from here (``from ._helpers import ...``), never from each other
or from ``conftest.py``, which holds only fixtures.
"""

import contextlib
import functools
import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm.datasets import compact_csr

# LIBLINEAR optima from shared/DESIGN.md: fit_intercept=False, primal P*.
LIBLINEAR_OPTIMA = {
    ("a9a", "squared_hinge", 1.0): 13742.3973,
    ("a9a", "hinge", 0.1): 1149.9041,
    ("a9a", "hinge", 1.0): 11433.8077,
    ("w8a", "squared_hinge", 1.0): 7816.1697,
    ("w8a", "hinge", 0.1): 755.1134,
    ("w8a", "hinge", 1.0): 6604.8866,
    ("ijcnn1", "squared_hinge", 1.0): 11023.1900,
    ("ijcnn1", "hinge", 0.1): 897.1785,
    ("ijcnn1", "hinge", 1.0): 8596.0042,
}
N_FEATURES = {"a9a": 123, "w8a": 300, "ijcnn1": 22}


def shared_data_dir():
    """``$DASK_STREAMSVM_DATA`` or the ``shared/data`` folder beside the checkout."""
    env = os.environ.get("DASK_STREAMSVM_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


_CACHE = {}


def dataset_path(name):
    """Path of ``name.bz2``: the shared data, or for a9a the copy shipped in the package; else skip."""
    path = shared_data_dir() / f"{name}.bz2"
    if not path.exists() and name == "a9a":
        path = Path(__file__).resolve().parents[1] / "dask_streamsvm" / "data" / "a9a.bz2"
    if not path.exists():
        pytest.skip(f"{path} not found: set DASK_STREAMSVM_DATA to the folder with the LIBSVM datasets")
    return path


def load_libsvm_dataset(name):
    """(X as float64 CSR, y as float64) of a LIBSVM file in the shared data."""
    if name not in _CACHE:
        from sklearn.datasets import load_svmlight_file

        X, y = load_svmlight_file(str(dataset_path(name)), n_features=N_FEATURES[name])
        _CACHE[name] = (compact_csr(X), y.astype(np.float64))
    return _CACHE[name]


def a9a_dask(layout, dtype, n_partitions=16):
    """a9a as a Dask Array of ``n_partitions`` dense or CSR blocks, its labels, and its bytes."""
    X, y = load_libsvm_dataset("a9a")
    X = X.astype(dtype)
    step = -(-X.shape[0] // n_partitions)
    if layout == "dense":
        Xd = da.from_array(X.toarray(), chunks=(step, X.shape[1]))
        nbytes = X.shape[0] * X.shape[1] * np.dtype(dtype).itemsize
    else:
        dense = da.from_array(X.toarray(), chunks=(step, X.shape[1]))
        Xd = dense.map_blocks(sp.csr_matrix, dtype=dtype, meta=sp.csr_matrix((0, X.shape[1]), dtype=dtype))
        nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return Xd, da.from_array(y, chunks=step), nbytes


def run(argv):
    """The command line's ``main(argv)``: ``(exit status, stdout, stderr)``."""
    from dask_streamsvm.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code, out, err, *fragments):
    """The command failed with status 2 and one line of error naming every fragment, no traceback."""
    assert code == 2, (code, out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dask-streamsvm: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def three_class_frame(n=1200, seed=0):
    """A table of ``n`` rows: four Gaussian columns ``a``-``d`` and a string ``label`` of three classes
    ("x", "y", "z": the largest of the first three columns, with noise)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = np.array(["x", "y", "z"])[np.argmax(X[:, :3] + 0.3 * rng.standard_normal((n, 3)), axis=1)]
    return pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(label=y)


def noisy_linear_data(n, d, seed=0):
    """``(X, y)``: ``n`` Gaussian rows of ``d`` features, labels of a random hyperplane with noise."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = (X @ rng.randn(d) + 0.3 * rng.randn(n) > 0).astype(np.int64)
    return X, y


# The small streaming fit of the reliability tests: SBM with a cache of a few rows.
# The forms of a partition's rows that the cache reads where they lie, or copies first (a feature
# map's unsorted rows, another dtype): rows_in_form.
ROW_FORMS = ["dense", "csr", "csr, mapped", "csr unsorted, mapped", "csr float32", "csr int64 indptr"]


def rows_in_form(data, form):
    """``(X, spec, width)``: the dense ``data`` in the form ``form`` of :data:`ROW_FORMS`, the
    feature map's spec the form names (None) and the width the cache holds."""
    from dask_streamsvm.features import PolynomialMap

    X = data if form == "dense" else sp.csr_matrix(data)
    if "float32" in form:
        X = X.astype(np.float32)
    if "int64" in form:
        X.indptr = X.indptr.astype(np.int64)
    if "unsorted" in form:
        X = sp.csr_matrix((X.data[::-1].copy(), X.indices[::-1].copy(), X.indptr.copy()), shape=X.shape)
        X = sp.csr_matrix(X[::-1])
        X.has_sorted_indices = False
    n_features = data.shape[1]
    spec = PolynomialMap(n_features=30).spec(n_features) if "mapped" in form else None
    return X, spec, (30 if spec is not None else n_features)


STREAM_PARAMS = dict(solver="sbm", cache_bytes=4_000, tol=1e-4, max_iter=30, random_state=0, inner_iter=3)


def stream_model(**params):
    """A :class:`LinearSVC` with :data:`STREAM_PARAMS`, ``params`` replacing them."""
    from dask_streamsvm import LinearSVC

    return LinearSVC(**{**STREAM_PARAMS, **params})


FUZZ_SCALE = int(os.environ.get("DASK_STREAMSVM_FUZZ_SCALE", "1"))


def fuzz_settings(examples):
    """Hypothesis settings for ``examples`` inputs per run, times ``DASK_STREAMSVM_FUZZ_SCALE``;
    derandomised (the same inputs every run) at scale 1."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=examples * FUZZ_SCALE,
        deadline=None,
        derandomize=FUZZ_SCALE == 1,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# The default suite runs this share of each property's examples; its ``_full`` twin (slow) runs them all.
FUZZ_QUICK_SHARE = 0.2


def fuzz_twins(examples, *decorators):
    """A property test twice: with ``FUZZ_QUICK_SHARE`` of ``examples`` in the default suite, and as
    ``NAME_full``, marked slow, with all of them (``make test-slow``).

    ``decorators`` are Hypothesis's, outermost first (``given(...)``, ``example(...)``); each twin
    gets its own, over :func:`fuzz_settings`.  The twin is put in the test's module, beside it.
    """

    def twins(body):
        def made(n):
            @functools.wraps(body)
            def test(*args, **kwargs):
                return body(*args, **kwargs)

            test = fuzz_settings(n)(test)
            for decorator in reversed(decorators):
                test = decorator(test)
            return test

        full = pytest.mark.slow(made(examples))
        full.__name__ = full.__qualname__ = f"{body.__name__}_full"
        vars(sys.modules[body.__module__])[full.__name__] = full
        return made(max(1, round(examples * FUZZ_QUICK_SHARE)))

    return twins


@contextlib.contextmanager
def two_worker_client(memory_limit=0):
    """A client of a LocalCluster of two single-thread worker processes (any free dashboard port,
    patient heartbeats for a loaded machine): the cluster tests' usual cluster."""
    import dask
    import distributed

    with (
        dask.config.set({"distributed.scheduler.worker-ttl": "15 minutes"}),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40,
            memory_limit=memory_limit,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        yield client


CHILD_SECONDS = 120  # a child process that takes longer blocked
# (its imports and a tiny fit take a few seconds)


def child_json_lines(script, *args):
    """Run ``script`` in a Python process of its own: ``[outcome, ...]`` of its JSON lines.

    A read that blocks fails the test (after :data:`CHILD_SECONDS`), never the suite.
    """
    try:
        run = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=CHILD_SECONDS,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"blocked on a FIFO; done before: {exc.stdout}")
    assert run.returncode == 0, run.stderr[-3000:]
    return [json.loads(line) for line in run.stdout.splitlines()]


def counted_reads(X, y, rows):
    """``(Xd, yd, reads)``: ``X`` and ``y`` as Dask arrays of ``rows`` rows a block, and ``reads`` a
    list that grows by one each time a block of ``X`` is computed (a fit refused before any read
    leaves it empty)."""
    reads = []

    def part(block):
        reads.append(1)
        return block

    Xd = da.from_array(X, chunks=(rows, X.shape[1])).map_blocks(part, dtype=X.dtype, meta=np.empty((0, 0)))
    return Xd, da.from_array(y, chunks=rows), reads


def reads_ended():
    """Wait until no read the library began on a thread of its own is running (the reader's reads,
    ``engine/data/waiting.py: OnThread``, threads named ``dask-streamsvm-read``).

    A dual trainer's reader begins the next pass's first reads at a pass's end; a fit that then
    stops waits for them as it leaves its reader (``Reader.wait_reads``), but one that raised or was
    interrupted returns without them (Dask cannot stop a task half-way): they end moments later.
    A test counting the blocks parsed waits for them before it counts, so that it counts each fit's
    own and never a read of the fit before.  60 s: a liveness guard, not a timing."""
    import threading
    import time

    for _ in range(6_000):
        if not any(t.name == "dask-streamsvm-read" and t.is_alive() for t in threading.enumerate()):
            return
        time.sleep(0.01)
    raise AssertionError("a read was still running after 60 s")


# seconds: a liveness guard for what a working thread does at once (a kept thread taking its work, or
# freeing what it was handed), not a timing: only a thread that never gets there reaches it
LIVENESS_GUARD = 60


def wait_until(condition, what="the condition"):
    """Wait until ``condition()`` holds, at most :data:`LIVENESS_GUARD` seconds (a liveness guard)."""
    deadline = time.monotonic() + LIVENESS_GUARD
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not hold within the liveness guard"
        threading.Event().wait(0.001)

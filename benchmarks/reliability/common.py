"""What more than one fault family uses: the data and its Dask collections, the fit, the outcome of a
call, the threads and spill directories a fit leaves, and child processes (under a memory limit)."""

import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

from benchmarks._common import ROOT

N_PARTS, PART_ROWS, N_FEATURES = 12, 200, 8
SOLVERS = ("streamsvm", "sbm", "bm")
_CALL = "import sys\nfrom {0} import {1}\n{1}(*sys.argv[1:])\n"
MEMORY_HEADROOM = 3 * 2**30  # bytes a child may allocate beyond what it holds after its imports
SPILL_STEM = "dask_streamsvm-spill-"  # how the engine names a spill's directory


def data(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(N_PARTS * PART_ROWS, N_FEATURES)
    y = (X @ rng.randn(N_FEATURES) + 0.5 * rng.randn(X.shape[0]) > 0).astype(np.int64)
    return X, y


def collection(read=None, seed=0):
    """The data as a Dask Array whose partition ``i`` is computed by ``read(i, rows)``."""
    import dask
    import dask.array as da

    X, y = data(seed)
    if read is None:
        return da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    parts = [
        da.from_delayed(
            dask.delayed(read)(i, X[i * PART_ROWS : (i + 1) * PART_ROWS]), (PART_ROWS, N_FEATURES), X.dtype
        )
        for i in range(N_PARTS)
    ]
    return da.concatenate(parts), da.from_array(y, chunks=PART_ROWS)


def params(solver):
    # deterministic: the guarantees checked bit for bit (resume, retries) hold for the modes that
    # are bit-reproducible (docs/reliability.md); StreamSVM's asynchronous default sweeps its cache
    # while the reader is behind, so on a loaded machine its models differ run to run anyway.
    cache = 30_000 if solver != "bm" else 60_000
    return dict(
        solver=solver, cache_bytes=cache, tol=1e-6, max_iter=25, random_state=0, inner_iter=3,
        deterministic=True,
    )  # fmt: skip


def changing_collection(change, X=None, y=None):
    """``(frame, "label")``: ``X`` and ``y`` (by default :func:`data`) as a Dask DataFrame whose
    partition ``i`` holds ``change(i, read, rows, labels)`` on its ``read``-th read (0 is the label
    count's, 1 the first training pass's).

    A frame, not two arrays: one task computes a partition's rows and labels together, so each read
    of the fit is one call of ``change``.  (The fit takes the partitions of two arrays apart, with
    ``to_delayed``, whose graph optimisation gives each its own copy of a task they share.)
    """
    import dask
    import dask.dataframe as dd
    import pandas as pd

    if X is None:
        X, y = data()
    columns = [f"x{j}" for j in range(X.shape[1])]
    reads, lock = {}, threading.Lock()

    def part(i):
        with lock:
            read = reads.get(i, 0)
            reads[i] = read + 1
        rows = slice(i * PART_ROWS, (i + 1) * PART_ROWS)
        values, labels = change(i, read, X[rows].copy(), y[rows].copy())
        frame = pd.DataFrame(values, columns=columns, index=pd.RangeIndex(rows.start, rows.stop))
        frame["label"] = labels
        return frame

    meta = pd.DataFrame({**{c: pd.Series(dtype=X.dtype) for c in columns}, "label": pd.Series(dtype=y.dtype)})
    parts = [dask.delayed(part, pure=False)(i) for i in range(len(y) // PART_ROWS)]
    return dd.from_delayed(parts, meta=meta, verify_meta=False), "label"


def chunked(*arrays):
    import dask.array as da

    return [da.from_array(a, chunks=PART_ROWS) for a in arrays]


def fit_solver(solver, args=None, resume=False, **extra):
    """A fit of ``params(solver)`` and ``extra`` on ``args`` (by default :func:`collection`)."""
    from sklearn.exceptions import ConvergenceWarning

    from dask_streamsvm import LinearSVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        read = extra.pop("read", None)
        model = LinearSVC(**{**params(solver), **extra})
        fit_params = {"resume": True} if resume else {}
        return model.fit(*(collection(read) if args is None else args), **fit_params)


def attempt(call, expected=ValueError):
    """``(outcome, message, result)`` of ``call()``: ``"returned"``, ``expected``'s name, or the name
    of the type of the exception it raised (with its module unless a builtin: ``zlib.error``)."""
    try:
        return "returned", None, call()
    except expected as exc:
        return expected.__name__, str(exc), None
    except Exception as exc:  # noqa: BLE001 - its type is the outcome
        kind, module = type(exc), type(exc).__module__
        return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}", str(exc), None


def reader_threads(name="dask-streamsvm-reader"):
    """How many threads named ``name`` are still alive after waiting up to 5 s for them to end."""
    deadline = time.time() + 5
    while time.time() < deadline:
        alive = [t for t in threading.enumerate() if t.name == name and t.is_alive()]
        if not alive:
            return 0
        time.sleep(0.02)
    return len(alive)


def vector(model):
    return np.hstack([model.coef_.ravel(), model.intercept_, [model.n_iter_]])


def limit_memory():
    import resource

    with open("/proc/self/status") as f:
        held = int(next(line for line in f if line.startswith("VmSize")).split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (held + MEMORY_HEADROOM, held + MEMORY_HEADROOM))


def in_child(function, *args, timeout):
    """Run ``function`` (a module-level function of this package) in a new interpreter: ``(returncode
    or None if it timed out, stdout, end of stderr)``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", _CALL.format(function.__module__, function.__name__), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return None, out, ""
    return done.returncode, done.stdout, done.stderr[-300:]


def how_ended(returncode):
    """What a child process that printed no outcome ended with."""
    if returncode is None:
        return "hang (killed after its timeout)"
    return f"crash (signal {-returncode})" if returncode < 0 else f"exit {returncode}"


def spills_in(directory):
    """``(count, bytes)`` of the spill directories in ``directory``."""
    if not directory.is_dir():
        return 0, 0
    spills = [p for p in directory.iterdir() if p.name.startswith(SPILL_STEM)]
    size = sum(f.stat().st_size for p in spills for f in p.rglob("*") if f.is_file())
    return len(spills), size


def write_libsvm(directory, target=None):
    """:func:`data` as ``N_PARTS`` LIBSVM files of ``PART_ROWS`` rows in ``directory`` (a partition each
    when read): their glob.  With ``target``, the rows of the other files keep 2 of their 8 values, so
    that only ``target``'s partition makes a large spill file."""
    from sklearn.datasets import dump_svmlight_file

    X, y = data()
    directory.mkdir(exist_ok=True)
    for p in range(N_PARTS):
        rows = slice(p * PART_ROWS, (p + 1) * PART_ROWS)
        part = X[rows] if p == target or target is None else np.where(np.arange(N_FEATURES) < 2, X[rows], 0.0)
        dump_svmlight_file(part, y[rows], str(directory / f"part-{p:02d}.svm"), zero_based=False)
    return str(directory / "part-*.svm")

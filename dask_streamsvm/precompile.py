"""Compile the numba kernels ahead of time, into numba's cache: ``dask-streamsvm compile``.

Every kernel is ``@njit(cache=True)``: the first process that calls it with new argument types
compiles it (a fit's kernels take 4-40 CPU-seconds) and writes the machine code to numba's cache,
and later processes load it from there (about a second for a fit's kernels).  A fresh container,
a new Dask worker or a test run on an empty cache pays the compilation on its first fit;
:func:`compile_kernels` pays it once, ahead, where it is cheap to wait: at install, at an image's
build, before the tests' workers start.

It runs small representative fits (:data:`FITS`: every estimator and path, on dense and CSR rows)
and lets numba compile whatever they call, so the set of kernels it fills follows the library's
fits, not a list kept by hand.  The fits are spread over the cores the process may use
(``os.sched_getaffinity``), in child processes with disjoint groups of fits: the fits that share
kernels (one layout's) go to one child, so that a kernel is compiled once and the wall time is
about the CPU time over the cores.

Where the cache is, as numba decides: ``NUMBA_CACHE_DIR`` when set; else the ``__pycache__``
folder beside each kernel's source when the process can write there; else the user's cache
(``~/.cache/numba`` on Linux).  numba uses only a folder it can write: an install whose
site-packages is read-only at run time skips a cache compiled there at build time and uses the
user's instead.  Entries are keyed on the source file, the argument types, numba's version and
the CPU (``NUMBA_CPU_NAME=generic`` makes them portable between machines), and a process loads
only what matches.  docs/guide/compile.md says how to keep the cache in a container image and
on a Dask cluster.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

__all__ = ["FITS", "compile_kernels", "default_jobs"]

# Rows of the representative fits: enough for several partitions and a cache that evicts, few
# enough that a fit on a warm cache takes a fraction of a second.
ROWS, DENSE_FEATURES, SPARSE_FEATURES, PARTS = 1_200, 8, 40, 4
STREAMED = {"cache_bytes": "30%", "max_iter": 3, "random_state": 0}

# name -> (function of the layout, the layouts it takes, the rough seconds it adds compiling after the
# fits above it of its layout); filled by the @_fit decorator below.  The seconds only balance the
# children's groups: a stale figure costs some wall time, never a kernel.
FITS = {}


def _fit(name, layouts=("dense", "csr"), seconds=10.0):
    def register(function):
        FITS[name] = (function, layouts, seconds)
        return function

    return register


# -- data -------------------------------------------------------------------------------


def _data(layout, n_classes=2, dtype="float64"):
    """``(X, y)`` in memory: dense ``ROWS x DENSE_FEATURES`` or CSR ``ROWS x SPARSE_FEATURES``."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.RandomState(0)
    if layout == "dense":
        X = rng.randn(ROWS, DENSE_FEATURES).astype(dtype)
    else:
        X = sp.random(ROWS, SPARSE_FEATURES, density=0.2, format="csr", random_state=rng, dtype=dtype)
    scores = X @ rng.randn(X.shape[1], n_classes)
    y = (scores[:, 0] > 0) if n_classes == 2 else np.argmax(scores, axis=1)
    return X, np.asarray(y, dtype=np.int64)


def _dask(X, y):
    """``X`` and ``y`` as Dask arrays of :data:`PARTS` row blocks (CSR blocks for sparse ``X``)."""
    import dask.array as da
    import scipy.sparse as sp

    from .io import csr_to_dask

    if sp.issparse(X):
        return csr_to_dask(X, y, PARTS)
    step = -(-X.shape[0] // PARTS)
    return da.from_array(X, chunks=(step, X.shape[1])), da.from_array(y, chunks=step)


def _frame(X, y):
    """Dense ``X`` and ``y`` as a Dask DataFrame of :data:`PARTS` partitions with a ``label`` column."""
    import dask.dataframe as dd
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(label=y)
    return dd.from_pandas(frame, npartitions=PARTS)


def _streamed(layout, n_classes=2, dtype="float64"):
    """The streaming fits' input: a Dask DataFrame and its label column for dense rows, Dask arrays
    of CSR blocks for sparse ones."""
    X, y = _data(layout, n_classes, dtype)
    if layout == "dense":
        return _frame(X, y), "label"
    return _dask(X, y)


# -- the representative fits ----------------------------------------------------------------


@_fit("LinearSVC in memory (dual)", seconds=45)
def _linear_memory(layout):
    from . import LinearSVC

    for dtype in ("float64", "float32"):
        X, y = _data(layout, dtype=dtype)
        LinearSVC(solver="memory", dual=True, random_state=0).fit(X, y)
    LinearSVC(solver="memory", dual=True, class_weight="balanced", random_state=0).fit(X, y)


@_fit("LinearSVC in memory (primal Newton)", seconds=15)
def _linear_primal(layout):
    import numpy as np

    from . import LinearSVC

    LinearSVC(dual=False).fit(*_data(layout))
    if layout == "dense":  # a fit whose last step its band certifies (newton.step_band): its sums
        LinearSVC(dual=False, tol=1e-6).fit(*_data(layout))
        X, y = _data(layout, dtype="float32")  # integer values: their Hessian exact (sums.ExactGram)
        LinearSVC(dual=False).fit(np.round(X * 40 + 128), y)


@_fit("LinearSVC streamed (primal Newton)", seconds=3)
def _linear_primal_streamed(layout):
    from . import LinearSVC

    LinearSVC(dual=False, cache_bytes="30%", random_state=0).fit(*_streamed(layout))


@_fit("LinearSVC streamed, the band from a sample", seconds=6)
def _sample_band(layout):
    from . import LinearSVC
    from .engine.plan.losses import BAND_LOSSES

    for dtype in ("float64", "float32"):
        LinearSVC(loss=BAND_LOSSES[0], solver="band", **STREAMED).fit(*_streamed(layout, dtype=dtype))


@_fit("StreamSVM", seconds=70)
def _streamsvm(layout):
    from . import LinearSVC

    for deterministic in (False, True):
        LinearSVC(dual=True, solver="streamsvm", deterministic=deterministic, **STREAMED).fit(
            *_streamed(layout)
        )


@_fit("SBM", seconds=80)
def _sbm(layout):
    from . import LinearSVC

    LinearSVC(dual=True, solver="sbm", **STREAMED).fit(*_streamed(layout))


@_fit("BM", seconds=2)
def _bm(layout):
    from . import LinearSVC

    LinearSVC(dual=True, solver="bm", **STREAMED).fit(*_streamed(layout))


@_fit("LinearSVC.partial_fit", seconds=4)
def _partial_fit(layout):
    from . import LinearSVC

    X, y = _data(layout)
    LinearSVC(random_state=0).partial_fit(X, y, classes=[0, 1])


@_fit("crammer_singer", seconds=80)
def _crammer_singer(layout):
    from . import LinearSVC

    X, y = _data(layout, n_classes=3)
    LinearSVC(multi_class="crammer_singer", max_iter=50, random_state=0).fit(X, y)
    LinearSVC(dual=True, solver="sbm", multi_class="crammer_singer", **STREAMED).fit(
        *_streamed(layout, n_classes=3)
    )


@_fit("LogisticRegression", seconds=3)
def _logistic(layout):
    from . import LogisticRegression

    X, y = _data(layout)
    LogisticRegression(dual=True, solver="memory", random_state=0).fit(X, y)
    LogisticRegression(dual=False).fit(X, y)
    LogisticRegression(multi_class="multinomial").fit(X, y)  # the softmax kernels
    LogisticRegression(dual=True, solver="sbm", **STREAMED).fit(*_streamed(layout))
    # The multinomial model's Newton reads (its shifted dual point's terms)
    LogisticRegression(multi_class="multinomial", cache_bytes="30%").fit(*_streamed(layout, n_classes=3))


@_fit("the L1 and elastic-net penalties", seconds=20)
def _sparse_penalties(layout):
    from . import LinearSVC, LogisticRegression

    X, y = _data(layout)
    LinearSVC(penalty="l1", random_state=0).fit(X, y)  # coordinate descent
    LogisticRegression(l1_ratio=0.5, random_state=0).fit(X, y)
    LinearSVC(penalty="l1", cache_bytes="30%").fit(*_streamed(layout))  # the Newton reads' model
    LogisticRegression(l1_ratio=1.0, cache_bytes="30%").fit(*_streamed(layout))


@_fit("OnePassSVC", seconds=70)
def _onepass(layout):
    from . import OnePassSVC

    OnePassSVC(random_state=0).fit(*_dask(*_data(layout)))


@_fit("BudgetedSVC", seconds=40)
def _budgeted(layout):
    from . import BudgetedSVC

    BudgetedSVC(budget=20, max_iter=2, random_state=0).fit(*_dask(*_data(layout)))


# On CSR rows, the streamed maps' on dense ones: the two layouts' groups then compile about as long.
@_fit("feature maps in memory", layouts=("csr",), seconds=50)
def _feature_maps_memory(layout):
    from . import LinearSVC, PolynomialMap

    LinearSVC(feature_map=PolynomialMap(), solver="memory", dual=True, random_state=0).fit(*_data(layout))


@_fit("feature maps streamed", layouts=("dense",), seconds=90)
def _feature_maps_streamed(layout):
    from . import LinearSVC, PolynomialMap, Standardize

    X, y = _data(layout)
    for solver in ("streamsvm", "auto"):  # "auto": SBM (engine/choice.py, AUTO_SCHEDULE)
        LinearSVC(feature_map=PolynomialMap(n_features=64), dual=True, solver=solver, **STREAMED).fit(
            *_dask(X, y)
        )
    LinearSVC(feature_map=Standardize(), dual=False).fit(*_dask(X, y))


@_fit("CLI train on LIBSVM text and Parquet", layouts=("csr",), seconds=36)
def _cli_train(layout):
    """``dask-streamsvm train`` as a user runs it, in a process of its own (this module sits below
    the command line and does not import it): its compilations fill the same cache, but are not
    in this fit's report."""
    from sklearn.datasets import dump_svmlight_file

    X, y = _data("csr")
    with tempfile.TemporaryDirectory(prefix="dask-streamsvm-compile-") as folder:
        text = os.path.join(folder, "train.svm")
        dump_svmlight_file(X, 2 * y - 1, text, zero_based=False)
        table = os.path.join(folder, "train.parquet")
        _frame(*_data("dense")).to_parquet(table)
        for argv in (
            [text, "--passes", "3", "--cache", "30%"],
            [text, "--solver", "memory"],
            [table, "--label", "label", "--passes", "3", "--cache", "30%"],
        ):
            model = os.path.join(folder, "train.model")
            command = [sys.executable, "-m", __package__, "train", *argv, "--model", model, "--overwrite"]
            done = subprocess.run([*command, "--quiet", "--seed", "0"], capture_output=True, text=True)
            if done.returncode != 0:
                status = f"exited {done.returncode}: {done.stderr}"
                raise RuntimeError(f"dask-streamsvm train {' '.join(argv)} {status}")


# -- the children ---------------------------------------------------------------------------


def default_jobs():
    """The cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count()`` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _units():
    """Every (fit, layout), dense ones first: a layout's fits share most of their kernels."""
    units = [(name, layout) for name, (_, layouts, _) in FITS.items() for layout in layouts]
    return sorted(units, key=lambda unit: ("dense", "csr").index(unit[1]))


def _groups(units, jobs):
    """``units`` cut into at most ``jobs`` consecutive groups of about equal rough seconds, a group
    never holding two layouts: each layout gets a share of the ``jobs`` by its seconds (one at
    least, when there are as many jobs as layouts), and its fits are cut into that many groups."""
    blocks = {}
    for unit in units:
        blocks.setdefault(unit[1], []).append(unit)
    blocks = list(blocks.values())
    if jobs < len(blocks):  # fewer jobs than layouts: one group, or consecutive layouts together
        return _cut(units, jobs)
    weights = [sum(FITS[name][2] for name, _ in block) for block in blocks]
    shares = [1 + (jobs - len(blocks)) * w / sum(weights) for w in weights]
    counts = [int(share) for share in shares]
    for k in sorted(range(len(blocks)), key=lambda k: counts[k] - shares[k])[: jobs - sum(counts)]:
        counts[k] += 1  # the largest remainders
    return [group for block, n in zip(blocks, counts, strict=True) for group in _cut(block, n)]


def _cut(units, n):
    """``units`` cut into at most ``n`` consecutive groups of about equal rough seconds."""
    seconds = [FITS[name][2] for name, _ in units]
    total, groups, done = sum(seconds), [[]], 0.0
    for unit, cost in zip(units, seconds, strict=True):
        if groups[-1] and len(groups) < n and done + cost / 2 > total * len(groups) / n:
            groups.append([])
        groups[-1].append(unit)
        done += cost
    return groups


def _kernel_name(dispatcher):
    function = dispatcher.py_func
    return f"{function.__module__}.{function.__qualname__}"


def _dispatchers():
    """The numba dispatchers of the library's modules imported in this process."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith(__package__ + ".") and module is not None:
            for value in list(vars(module).values()):
                if isinstance(value, Dispatcher):
                    found[_kernel_name(value)] = value
    return found


_LOCK = "DASK_STREAMSVM_COMPILE_LOCK"  # environment variable: the lock file of the children's cache writes


def _serialise_cache_writes(path):
    """The children's writes to numba's cache, one at a time, under an exclusive lock on ``path``.

    numba saves an entry by reading the function's index, picking a data file's number, writing the
    index and then the data, without a lock (numba issue #4807): two children compiling signatures
    of one kernel at once (its dense and its CSR variant) could leave an index that names the other
    child's data file, machine code for other argument types.  Where ``fcntl`` is missing
    (Windows) the writes are left as numba makes them.
    """
    try:
        import fcntl

        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        return
    save = IndexDataCacheFile.save

    def locked_save(self, key, data):
        with open(path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            return save(self, key, data)

    IndexDataCacheFile.save = locked_save


def _run_units(units):
    """In a child: run each unit's fits; what numba compiled for each, and what it loaded."""
    import dask
    from numba.core import event

    if os.environ.get(_LOCK):
        _serialise_cache_writes(os.environ[_LOCK])

    compiled, depth, starts = [], [0], []

    class Compilations(event.Listener):
        """Every compilation (nested ones too: a kernel's callees); the outermost ones' seconds."""

        def on_start(self, ev):
            depth[0] += 1
            if depth[0] == 1:
                starts.append(time.perf_counter())

        def on_end(self, ev):
            depth[0] -= 1
            compiled.append(_kernel_name(ev.data["dispatcher"]))
            if depth[0] == 0:
                seconds[0] += time.perf_counter() - starts.pop()

    event.register("numba:compile", Compilations())
    dask.config.set(scheduler="sync")  # one thread per child: the children are the parallelism
    results = []
    for name, layout in units:
        seconds, done = [0.0], len(compiled)
        start, cpu = time.perf_counter(), time.process_time()
        error = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the capped fits' ConvergenceWarning
                FITS[name][0](layout)
        except Exception as exc:  # reported, and the other fits go on
            error = f"{type(exc).__name__}: {exc}"
        results.append(
            {
                "fit": name,
                "layout": layout,
                "seconds": time.perf_counter() - start,
                "cpu_seconds": time.process_time() - cpu,
                "compile_seconds": seconds[0],
                "compiled": compiled[done:],
                "error": error,
            }
        )
    dispatchers = _dispatchers()
    loaded = {name: sum(d.stats.cache_hits.values()) for name, d in dispatchers.items()}
    paths = sorted({d.stats.cache_path for d in dispatchers.values() if d.stats.cache_path})
    return {
        "units": results,
        "loaded": {name: n for name, n in loaded.items() if n},
        "cache_paths": paths,
        "cpu_seconds": time.process_time(),
    }


def _child_main():
    """``python -c`` entry of a child: units as JSON in argv[1], the result as JSON on the last line."""
    units = [tuple(unit) for unit in json.loads(sys.argv[1])]
    print("RESULT " + json.dumps(_run_units(units)), flush=True)


_CHILD = "import sys; from dask_streamsvm.precompile import _child_main; _child_main()"


def _child_report(group, proc, out, err):
    """A finished child's report, or for a child that died, its fits each failed with its stderr."""
    out.seek(0)
    err.seek(0)
    lines = [line for line in out.read().splitlines() if line.startswith("RESULT ")]
    stderr = err.read()
    out.close()
    err.close()
    if proc.returncode == 0 and lines:
        return json.loads(lines[-1][len("RESULT ") :])
    error = f"child exited with status {proc.returncode}: {stderr[-2000:]}"
    failed = [
        {"fit": name, "layout": layout, "seconds": 0.0, "cpu_seconds": 0.0, "compile_seconds": 0.0,
         "compiled": [], "error": error}
        for name, layout in group
    ]  # fmt: skip
    return {"units": failed, "loaded": {}, "cache_paths": [], "cpu_seconds": 0.0}


def compile_kernels(jobs=None, fits=None, layouts=None, progress=None):
    """Compile every kernel the library's fits run into numba's cache, in parallel child processes.

    Parameters
    ----------
    jobs : int, optional
        Child processes run at once; default the cores this process may use
        (:func:`default_jobs`).  Each takes a disjoint group of the fits (one
        layout's fits together), so that a kernel is compiled by one child.
    fits : iterable of str, optional
        Names of :data:`FITS` to run (default all).
    layouts : iterable of str, optional
        ``"dense"``, ``"csr"`` or both (default).
    progress : callable, optional
        Called with each finished child's report (a dict), as they finish.

    Returns
    -------
    dict
        ``units`` (each fit and layout: ``seconds``, ``compile_seconds``, the
        ``compiled`` kernels' names, ``error`` or None), ``compiled`` (the
        distinct kernels compiled), ``loaded`` (kernels loaded from the cache),
        ``errors``, ``cache_paths``, ``jobs``, ``seconds`` (wall) and
        ``cpu_seconds`` (all children).

    Examples
    --------
    >>> from dask_streamsvm.precompile import compile_kernels
    >>> report = compile_kernels(fits=["LinearSVC in memory (primal Newton)"], layouts=["dense"])
    >>> report["errors"]
    []
    """
    names = list(FITS) if fits is None else list(fits)
    unknown = sorted(set(names) - set(FITS))
    if unknown:
        raise ValueError(f"unknown fits {unknown}; expected some of {sorted(FITS)}")
    wanted = {"dense", "csr"} if layouts is None else set(layouts)
    if not wanted <= {"dense", "csr"}:
        raise ValueError(f"layouts must be 'dense' or 'csr', got {sorted(wanted)}")
    units = [unit for unit in _units() if unit[0] in names and unit[1] in wanted]
    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got jobs={jobs}")
    groups = _groups(units, jobs)
    env = dict(os.environ)
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(variable, "1")  # one core per child: the children are the parallelism
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dask-streamsvm-compile-") as folder:
        env[_LOCK] = os.path.join(folder, "cache-writes.lock")
        children = []
        for k, group in enumerate(groups):
            # files, not pipes: a child's output never blocks it (closed in _child_report)
            out = open(os.path.join(folder, f"{k}.out"), "w+")
            err = open(os.path.join(folder, f"{k}.err"), "w+")
            proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD, json.dumps(group)], stdout=out, stderr=err, env=env
            )
            children.append((group, proc, out, err))
        reports = []
        try:
            while children:  # as they finish, for ``progress``
                finished = [child for child in children if child[1].poll() is not None]
                if not finished:
                    time.sleep(0.1)
                for child in finished:
                    children.remove(child)
                    reports.append(_child_report(*child))
                    if progress is not None:
                        progress(reports[-1])
        finally:  # interrupted: no child left compiling
            for _, proc, out, err in children:
                proc.kill()
                proc.wait()
                out.close()
                err.close()
    order = {unit: k for k, unit in enumerate(units)}
    units_done = sorted(
        (unit for report in reports for unit in report["units"]), key=lambda u: order[(u["fit"], u["layout"])]
    )
    loaded = {}
    for report in reports:
        for name, n in report["loaded"].items():
            loaded[name] = loaded.get(name, 0) + n
    return {
        "units": units_done,
        "compiled": sorted({name for unit in units_done for name in unit["compiled"]}),
        "compilations": sum(len(unit["compiled"]) for unit in units_done),
        "loaded": sorted(loaded),
        "errors": [f"{u['fit']} ({u['layout']}): {u['error']}" for u in units_done if u["error"]],
        "cache_paths": sorted({path for report in reports for path in report["cache_paths"]}),
        "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR") or None,
        "jobs": len(groups),
        "seconds": time.perf_counter() - start,
        "cpu_seconds": sum(report["cpu_seconds"] for report in reports),
    }


def unit_lines(units):
    """A line per fit and layout: how many compilations, in how long."""
    lines = []
    for unit in units:
        state = "FAILED" if unit["error"] else f"{len(unit['compiled']):3d} compilations"
        lines.append(
            f"  {unit['fit']} ({unit['layout']}): {state} in {unit['seconds']:.1f} s "
            f"({unit['compile_seconds']:.1f} s compiling)"
        )
    return lines


def total_lines(report):
    """The totals of :func:`compile_kernels`'s report, where the cache is, and the errors."""
    ours = [name for name in report["compiled"] if name.startswith(__package__ + ".")]
    lines = [
        f"compiled {len(ours)} kernels of {__package__} and {len(report['compiled']) - len(ours)} of "
        f"numba's own ({report['compilations']} compilations), loaded {len(report['loaded'])} from the "
        f"cache, in {report['seconds']:.1f} s ({report['cpu_seconds']:.1f} CPU-s in {report['jobs']} "
        f"processes)",
        f"numba cache: {', '.join(report['cache_paths']) or '(none)'}",
    ]
    return lines + [f"error: {error}" for error in report["errors"]]

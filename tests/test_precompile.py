"""``dask-streamsvm compile`` (:mod:`dask_streamsvm.precompile`): the kernels compiled ahead, then loaded.

Each test points numba at a cache folder of its own (``NUMBA_CACHE_DIR``), fills it with the
compile step, and fits in a fresh interpreter on that cache: numba's ``numba:compile`` event
(fired only for a compilation, never for a kernel loaded from the cache) must not fire, and the
kernels' ``stats.cache_hits`` must count the loads.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dask_streamsvm import precompile

from ._helpers import run

ROOT = Path(__file__).resolve().parents[1]

# A fresh interpreter: the fits in argv[1] (a list of names of FITS_AFTER), counting numba's
# compilations and the kernels loaded from the cache.
CHILD = r"""
import json, sys, warnings
import numpy as np, scipy.sparse as sp, dask
from numba.core import event

compiled = []


class Compilations(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        f = ev.data["dispatcher"].py_func
        compiled.append(f"{f.__module__}.{f.__qualname__}")


event.register("numba:compile", Compilations())
import dask_streamsvm as ds
from dask_streamsvm import precompile

dask.config.set(scheduler="sync")
rng = np.random.RandomState(1)
dense = rng.randn(700, 5)  # not the compile step's data: other shapes, the same types
csr = sp.random(700, 30, density=0.1, format="csr", random_state=rng)
y = (dense[:, 0] + rng.randn(700) > 0).astype(np.int64)
y3 = np.argmax(dense[:, :3], axis=1)
STREAMED = dict(cache_bytes="25%", max_iter=4, random_state=1)
FITS = {
    "primal dense": lambda: ds.LinearSVC(dual=False).fit(dense, y),
    "primal dense integers": lambda: ds.LinearSVC(dual=False).fit(
        np.round(dense * 40 + 128).astype(np.float32), y
    ),
    "streamsvm csr": lambda: ds.LinearSVC(solver="streamsvm", **STREAMED).fit(*precompile._dask(csr, y)),
    "sbm dense frame": lambda: ds.LinearSVC(solver="sbm", **STREAMED).fit(*precompile._streamed("dense")),
    "memory csr": lambda: ds.LinearSVC(solver="memory", dual=True, random_state=1).fit(csr, y),
    "logistic dense": lambda: ds.LogisticRegression().fit(dense, y),
    "crammer_singer dense": lambda: ds.LinearSVC(multi_class="crammer_singer", max_iter=20).fit(dense, y3),
    "l1 dense": lambda: ds.LinearSVC(penalty="l1", random_state=1).fit(dense, y),
    "l1 streamed csr": lambda: ds.LogisticRegression(l1_ratio=0.5, cache_bytes="25%").fit(
        *precompile._dask(csr, y)
    ),
    "multinomial streamed csr": lambda: ds.LogisticRegression(
        multi_class="multinomial", cache_bytes="25%"
    ).fit(*precompile._dask(csr, y3)),
    "onepass csr": lambda: ds.OnePassSVC(random_state=1).fit(*precompile._dask(csr, y)),
    "budgeted dense": lambda: ds.BudgetedSVC(budget=10, max_iter=1, random_state=1).fit(
        *precompile._dask(dense, y)
    ),
}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name in json.loads(sys.argv[1]):
        FITS[name]()
hits = sum(sum(d.stats.cache_hits.values()) for d in precompile._dispatchers().values())
print("RESULT " + json.dumps({"compiled": compiled, "cache_hits": hits}))
"""


def _fresh_fits(names, cache_dir):
    """Run the fits ``names`` of :data:`CHILD` in a fresh interpreter on ``cache_dir``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(names)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,  # a guard against a hang, not a bound on the time
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


PRIMAL = "LinearSVC in memory (primal Newton)"  # the compile step's cheapest fit (a few CPU-seconds)


@pytest.fixture(scope="module")
def primal_cache(tmp_path_factory):
    """A numba cache folder filled by the compile step's primal fit (dense and CSR, two children)."""
    folder = tmp_path_factory.mktemp("numba-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NUMBA_CACHE_DIR", str(folder))  # the children inherit it
        report = precompile.compile_kernels(jobs=2, fits=[PRIMAL])
    return folder, report


def test_a_fresh_process_loads_what_the_compile_step_compiled(primal_cache):
    folder, report = primal_cache
    assert report["errors"] == [] and report["jobs"] == 2  # dense in one child, CSR in the other
    assert any(name.startswith("dask_streamsvm.kernels.") for name in report["compiled"])
    assert report["cache_paths"] and all(p.startswith(str(folder)) for p in report["cache_paths"])
    assert any(folder.rglob("*.nbc"))  # numba's cache files, where NUMBA_CACHE_DIR said

    fresh = _fresh_fits(["primal dense"], folder)
    assert fresh["compiled"] == []  # nothing compiled: numba fires numba:compile only on a miss
    assert fresh["cache_hits"] > 0


def test_the_command_reports_each_fit_the_totals_and_the_cache(primal_cache, monkeypatch):
    folder, _ = primal_cache
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(folder))
    monkeypatch.setattr(precompile, "FITS", {PRIMAL: precompile.FITS[PRIMAL]})  # the children run only it
    code, out, err = run(["compile", "--jobs", "3"])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("dask-streamsvm: compiling the kernels of 1 fits in 3 processes")
    assert str(folder) in lines[0]
    assert f"  {PRIMAL} (dense):   0 compilations in " in out  # the cache is warm: loaded, not compiled
    assert f"  {PRIMAL} (csr):   0 compilations in " in out
    totals = [line for line in lines if line.startswith("compiled ")]
    assert len(totals) == 1 and "compiled 0 kernels" in totals[0] and "in 2 processes" in totals[0]
    assert "loaded 0 from" not in totals[0]
    assert lines[-1].startswith(f"numba cache: {folder}")


def test_a_failing_fit_is_reported_and_the_status_is_1(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(precompile, "FITS", {"no such fit": (None, ("dense",), 1.0)})
    code, out, err = run(["compile", "--jobs", "1"])
    assert code == 1
    assert "dask-streamsvm: error: no such fit (dense): KeyError" in err
    assert "FAILED" in out


@pytest.mark.parametrize("jobs", [1, 2, 3, 5, 100])
def test_the_groups_are_disjoint_cover_every_fit_and_keep_a_layout_together(jobs):
    units = precompile._units()
    groups = precompile._groups(units, jobs)
    assert [unit for group in groups for unit in group] == units  # each once, in order
    assert 1 <= len(groups) <= jobs and all(groups)
    # dense fits first, then CSR: a layout's fits (which share kernels) are in consecutive groups
    layouts = [layout for _, layout in units]
    assert layouts == sorted(layouts, key=["dense", "csr"].index)
    if jobs == 2:
        assert {layout for _, layout in groups[0]} == {"dense"}
        assert {layout for _, layout in groups[1]} == {"csr"}


def test_unknown_fits_and_layouts_and_jobs_say_what_is_expected():
    with pytest.raises(ValueError, match=r"unknown fits \['SVC'\]; expected some of"):
        precompile.compile_kernels(fits=["SVC"])
    with pytest.raises(ValueError, match=r"layouts must be 'dense' or 'csr', got \['coo'\]"):
        precompile.compile_kernels(layouts=["coo"])
    with pytest.raises(ValueError, match="jobs must be >= 1, got jobs=0"):
        precompile.compile_kernels(jobs=0)
    code, _, err = run(["compile", "--jobs", "0"])
    assert code == 2 and "argument --jobs: must be an integer >= 1, got '0'" in err


@pytest.mark.slow
def test_after_the_command_every_estimator_and_path_loads_its_kernels(tmp_path):
    """The whole compile step (every fit of FITS, on both cores), then other fits of each estimator
    and path, on other data, in a fresh interpreter: nothing compiled."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "dask_streamsvm", "compile", "--jobs", "2", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["errors"] == [] and len(report["compiled"]) > 50
    names = ["primal dense", "primal dense integers", "streamsvm csr", "sbm dense frame", "memory csr"]
    names += ["logistic dense"]
    names += ["crammer_singer dense", "onepass csr", "budgeted dense", "l1 dense", "l1 streamed csr"]
    names += ["multinomial streamed csr"]
    fresh = _fresh_fits(names, tmp_path)
    assert fresh["compiled"] == [] and fresh["cache_hits"] > 0

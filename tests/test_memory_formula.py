"""What keeps a streaming fit's peak RSS near the memory guide's formula (docs/guide/memory.md).

The allocator's settings (:mod:`dask_streamsvm.engine.data.malloc`): freed
partitions leave the process instead of staying in glibc's heaps; and the
dual store and a row memory the data fills are allocated once, at their
final size, instead of doubling (which holds the old arrays beside the new).
"""

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import dask.array as da
import numpy as np
import pytest

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.data import malloc as _malloc
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.dual.alpha_store import AlphaStore
from dask_streamsvm.engine.dual.cache import RowCache
from dask_streamsvm.engine.dual.trainer import fit_rows, reserve_full

from ._helpers import noisy_linear_data

GLIBC = sys.platform.startswith("linux") and _malloc._mallopt is not None

# A child in the state glibc's adaptive thresholds reach once a partition of tens of MB is freed
# (its mapping's size becomes the mmap threshold, twice that the trim threshold: set here with
# mallopt, as reaching it by allocations depends on the heap the imports left), then fills and
# frees a 20 MB array and prints how much of it stayed resident.
RETAINED = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from dask_streamsvm.engine import _malloc
    _malloc._mallopt(_malloc._M_MMAP_THRESHOLD, 24 << 20)
    _malloc._mallopt(_malloc._M_TRIM_THRESHOLD, 48 << 20)
    if sys.argv[1] == "bounded":
        import dask.array as da
        from dask_streamsvm.engine.data.source import DaskSource
        DaskSource(da.zeros((4, 2), chunks=2), da.zeros(4, chunks=2))  # a fit's first step
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    before = rss()
    b = np.ones(20 << 20, dtype=np.uint8); del b
    print(rss() - before)
    """
)


def _retained(mode, env=None):
    # Without glibc's own settings: distributed's nanny puts MALLOC_TRIM_THRESHOLD_ in the
    # environment of the process that starts a LocalCluster (an earlier test in this worker),
    # and the setting rightly leaves a user's (or Dask's) choice alone.
    clean = {k: v for k, v in os.environ.items() if k not in _malloc._USER_SETTINGS}
    out = subprocess.run(
        [sys.executable, "-c", RETAINED, mode], capture_output=True, text=True, check=True,
        env={**clean, **(env or {})},
    )  # fmt: skip
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt")
def test_a_freed_partition_leaves_the_process_once_a_source_is_made():
    # Without the setting glibc keeps the freed 20 MB in its heap (below its trim threshold).
    assert _retained("plain") > 16 << 20
    assert _retained("bounded") < 2 << 20


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt")
def test_the_users_own_glibc_settings_are_kept():
    for name in _malloc._USER_SETTINGS:
        code = f"import os; os.environ[{name!r}] = '4096'\n"
        code += "from dask_streamsvm.engine import _malloc; print(_malloc.bound_retention())"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.split()[-1] == "False", name


def test_the_thresholds_are_the_measured_ones():
    # 1 MiB: decoded columns (400 KB for 100k float32 rows) stay in the heaps, partitions and
    # Arrow's column groups (GROUP_BYTES) get mappings; the trim threshold is glibc's default.
    assert _malloc.MMAP_THRESHOLD == 1 << 20 and _malloc.TRIM_THRESHOLD == 128 << 10


def _allocations(monkeypatch, cls, method):
    sizes = []
    original = getattr(cls, method)

    def recording(self, size, *args):
        sizes.append(size)
        return original(self, size, *args)

    monkeypatch.setattr(cls, method, recording)
    return sizes


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["streamsvm", "sbm", "bm"])
def test_the_alpha_store_is_allocated_once_for_the_rows_counted(monkeypatch, solver):
    sizes = _allocations(monkeypatch, AlphaStore, "_allocate")
    X, y = noisy_linear_data(3000, 5, 0)
    Xd, yd = da.from_array(X, chunks=300), da.from_array(y, chunks=300)
    LinearSVC(solver=solver, cache_bytes="10%", max_iter=3, tol=1e-2, random_state=0).fit(Xd, yd)
    assert sizes == [1024, 3000]  # as made, then for every row counted (not 2048, then 4096)


def test_a_row_memory_the_data_fills_is_allocated_whole_and_one_above_it_grows():
    cache = RowCache(20_000, 5, np.float64, False, 1)
    reserve_full(cache, cache.n_slots - 1)  # fewer rows than slots: it grows with the rows held
    assert cache.allocated_slots == 0
    reserve_full(cache, cache.n_slots)
    assert cache.allocated_slots == cache.n_slots and cache.nbytes <= cache.cache_bytes


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["streamsvm", "sbm"])
def test_a_cache_below_the_data_grows_once(monkeypatch, solver):
    sizes = _allocations(monkeypatch, RowCache, "_grow_slots")
    X, y = noisy_linear_data(400, 5, 0)
    Xd, yd = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
    LinearSVC(solver=solver, cache_bytes="10%", max_iter=3, tol=1e-2, random_state=0).fit(Xd, yd)
    assert len(sizes) == 1


def test_a_cluster_part_is_not_sized_by_the_whole_collections_counts():
    X, y = noisy_linear_data(400, 5, 0)
    source = DaskSource(da.from_array(X, chunks=40), da.from_array(y, chunks=40))
    plan = SimpleNamespace(counts=np.array([150, 250]))
    assert fit_rows(plan, source) == 400
    assert fit_rows(plan, source.subset([0, 1])) == 0  # its rows grow the store as they come
    assert fit_rows(SimpleNamespace(counts=None), source) == 0

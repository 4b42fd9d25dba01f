"""Each kernel fed by :func:`~dask_streamsvm.engine.plan.layout.as_kernel_rows` compiles once per layout.

A fresh process pays numba's compilation once per kernel and argument types
(``benchmarks/bench_first_fit.py`` measures it).  Writable and read-only
arrays (``np.frombuffer``, memory maps, arrays on Dask workers) and int32
and int64 CSR indices are distinct types to numba, so the engine hands the
kernels one of each: read-only views, int32 column indices.  The fits below
see both kinds of input, in memory and streamed; a kernel that compiles a
second variant for either would show up here as an extra signature.
"""

import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, warnings
import numpy as np, scipy.sparse as sp, dask, dask.array as da
import dask_streamsvm as ds
from dask_streamsvm.kernels import dcd, layout, objective
from dask_streamsvm.kernels import cache as kcache

dask.config.set(scheduler="sync")
rng = np.random.RandomState(0)
X = rng.randn(600, 8)
y = (X @ rng.randn(8) > 0).astype(np.int64)
S = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))


def variants(read_only, wide):
    # (dense, CSR) with read-only or writable arrays, int64 or int32 indices
    D = X.copy()
    C = S.copy()
    if wide:
        C.indices, C.indptr = C.indices.astype(np.int64), C.indptr.astype(np.int64)
    for a in (D, C.data, C.indices, C.indptr):
        a.flags.writeable = not read_only
    return D, C


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for read_only, wide in ((False, False), (True, True)):
        for Z in variants(read_only, wide):
            ds.LinearSVC(solver="memory", dual=True, max_iter=5, random_state=0).fit(Z, y)
            step = 150
            if sp.issparse(Z):
                meta = sp.csr_matrix((0, Z.shape[1]))
                parts = [
                    da.from_delayed(dask.delayed(Z[i : i + step]), (step, 8), dtype=Z.dtype, meta=meta)
                    for i in range(0, Z.shape[0], step)
                ]
                Zd = da.concatenate(parts)
            else:
                Zd = da.from_array(Z, chunks=(step, Z.shape[1]))
            yd = da.from_array(y, chunks=step)
            ds.LinearSVC(solver="streamsvm", cache_bytes="20%", max_iter=3, random_state=0).fit(Zd, yd)

kernels = {
    "dcd_passes": dcd.dcd_passes,
    "row_sqnorms": dcd.row_sqnorms,
    "weighted_loss_sum": objective.weighted_loss_sum,
    "add_weighted_rows": objective.add_weighted_rows,
    "gap_scores": kcache.gap_scores,
    "scan_values": layout.scan_values,
    "largest_bits": layout.largest_bits,
}
print("RESULT " + json.dumps({name: [str(s[0]) for s in k.signatures] for name, k in kernels.items()}))
"""

DENSE = "readonly array(float64, 2d, C)"
CSR = "Tuple(readonly array(int64, 1d, C), readonly array(int32, 1d, C), readonly array(float64, 1d, C))"
# StreamSVM's pieces of a partition read where they lie (RowCache.piece_layout): the rows' spans in
# kernels.rows' slotted layout, starts and ends beside the partition's indices and values
SLOTTED = (
    "Tuple(readonly array(int64, 1d, C), readonly array(int64, 1d, C), readonly array(int32, 1d, C), "
    "readonly array(float64, 1d, C))"
)


def first_arguments(prelude=""):
    """``{kernel: [type of its first argument, per compiled signature]}`` after the child's fits."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-c", prelude + CHILD],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


def test_one_compiled_variant_per_layout_whatever_the_input_arrays():
    seen = first_arguments()
    layouts = {
        "dcd_passes": [DENSE, CSR],
        "weighted_loss_sum": [DENSE, CSR],
        "add_weighted_rows": [DENSE, CSR],
        # StreamSVM scores its sparse pieces where they lie, and the cache takes their norms there
        # (the in-memory solver reads whole CSR rows)
        "gap_scores": [DENSE, SLOTTED],
        "row_sqnorms": [DENSE, CSR, SLOTTED],
    }
    for name, expected in layouts.items():
        # one each, read-only with int32 indices, though the fits gave writable int32 and read-only
        # int64 arrays
        assert sorted(seen[name]) == sorted(expected), (name, seen[name])
    # the finiteness scan reads the dense values and the CSR data as their bits: one read-only
    # variant; the scan for the first value that is not finite only runs where there is one
    assert seen["largest_bits"] == ["readonly array(uint64, 1d, C)"], seen["largest_bits"]
    assert seen["scan_values"] == [], seen["scan_values"]

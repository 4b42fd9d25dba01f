"""``python -m benchmarks``: every method against the peers on the hinge loss (bench_peers), then
the primal Newton solver (``dual=False``, squared hinge) against LIBLINEAR's primal solver in memory,
out of core and on a cluster (bench_primal) with bench_peers' dense synthetic set as its tall set,
then logistic regression against scikit-learn in memory, out of core and against dask-ml on a
cluster (bench_logistic, its default sizes, its Parquet set as tall as bench_primal's), in one run.
``--full``, ``--workdir`` and ``--dense-rows`` go to bench_peers and bench_primal (``--workdir`` and
the rows of the tall Parquet set to bench_logistic too); the other options are bench_peers'."""

import argparse
import sys

from benchmarks import bench_first_fit, bench_logistic, bench_peers, bench_primal

argv = sys.argv[1:]
parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--full", action="store_true")
parser.add_argument("--workdir", default=None)
parser.add_argument("--dense-rows", type=int, default=None)
shared, _ = parser.parse_known_args(argv)
bench_peers.main(argv)
# The primal solver's tall set is the dense synthetic set at the size bench_peers used.
rows = shared.dense_rows or (10_000_000 if shared.full else 2_000_000)
workdir = ["--workdir", shared.workdir] if shared.workdir else []
primal = ["--rows", str(rows)] + ["--full"] * shared.full
bench_primal.main(primal + workdir)
# Logistic regression at its default sizes (estimated 30 minutes on 2 cores), its out-of-core Parquet set as
# tall as the primal solver's; the cluster part keeps its own 2M rows (dask-ml's solvers are capped).
bench_logistic.main(["--rows", str(rows)] + workdir)
# What a fresh process pays to compile the kernels, solver by solver (empty numba cache).
bench_first_fit.main([])

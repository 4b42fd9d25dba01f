"""``python -m benchmarks``: every method against the peers on the hinge loss (bench_peers), then
the primal Newton solver (``dual=False``, squared hinge) against LIBLINEAR's primal solver in memory,
out of core and on a cluster (bench_primal) with bench_peers' dense synthetic set as its tall set,
in one run.  ``--full``, ``--workdir`` and ``--dense-rows`` go to both; the other options are
bench_peers'."""

import argparse
import sys

from benchmarks import bench_first_fit, bench_peers, bench_primal

argv = sys.argv[1:]
parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--full", action="store_true")
parser.add_argument("--workdir", default=None)
parser.add_argument("--dense-rows", type=int, default=None)
shared, _ = parser.parse_known_args(argv)
bench_peers.main(argv)
# The primal solver's tall set is the dense synthetic set at the size bench_peers used.
rows = shared.dense_rows or (10_000_000 if shared.full else 2_000_000)
primal = ["--rows", str(rows)] + ["--full"] * shared.full
bench_primal.main(primal + (["--workdir", shared.workdir] if shared.workdir else []))
# What a fresh process pays to compile the kernels, solver by solver (empty numba cache).
bench_first_fit.main([])

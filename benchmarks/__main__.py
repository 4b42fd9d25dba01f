"""``python -m benchmarks``: every method against the peers on the hinge loss (bench_peers), then
the primal Newton solver (``dual=False``, squared hinge) against LIBLINEAR's primal solver in memory,
out of core and on a cluster (bench_primal), in one run.  ``--full`` and ``--workdir`` go to both;
the other options are bench_peers'."""

import argparse
import sys

from benchmarks import bench_peers, bench_primal

argv = sys.argv[1:]
parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--full", action="store_true")
parser.add_argument("--workdir", default=None)
shared, _ = parser.parse_known_args(argv)
bench_peers.main(argv)
bench_primal.main(["--full"] * shared.full + (["--workdir", shared.workdir] if shared.workdir else []))

"""Train on UCI Adult (a9a) out of core and compare with LIBLINEAR, certificate included.

The same problem three ways: streamed from a Dask Array of 16 CSR
partitions through a row cache of a tenth of the data's bytes, in memory,
and by LIBLINEAR (scikit-learn's ``LinearSVC(dual=True)``).  The logic is
in :mod:`dask_streamsvm._demo`, shared with ``dask-streamsvm demo``.

Run with ``make demo``, ``dask-streamsvm demo --plot demo_convergence.png``
or ``python examples/a9a_vs_liblinear.py [PLOT.png]``.
"""

import sys

from dask_streamsvm._demo import run_demo

if __name__ == "__main__":
    run_demo(plot=sys.argv[1] if len(sys.argv) > 1 else None)

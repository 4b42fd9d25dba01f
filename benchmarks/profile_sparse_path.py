"""Where a read of a sparse out-of-core fit goes: the trainer's profile, the reader's busy time.

The sparse synthetic rows of ``python -m benchmarks`` (``--nnz`` binary
features per row out of ``--features``, unit norm, labels from a noisy
linear rule, 5% flipped), ``--rows`` of them in ``--partitions`` in-memory
partitions (:func:`~dask_streamsvm.io.csr_to_dask`: no text to parse, so
the reader's share is Dask's and the checks', and the trainer's is ours).
One ``LinearSVC(solver=..., cache_bytes=10% of the data)`` fit of
``--reads`` reads runs under :mod:`cProfile` on the trainer's thread (the
caller's); the reader thread is timed by its own counters.

Printed: the fit's seconds per read, the reader's busy seconds per read,
one plain read of the same collection, and the trainer's functions by
their own time (``tottime``), the package's first.

Run ``python -m benchmarks.profile_sparse_path [--solver streamsvm]``.
"""

import argparse
import cProfile
import io
import pstats
import time
import warnings

import numpy as np

from benchmarks.bench_peers import _synthetic_rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=100_000)
    parser.add_argument("--nnz", type=int, default=40)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--solver", default="streamsvm", choices=["streamsvm", "sbm", "bm"])
    parser.add_argument("--reads", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)

    from dask_streamsvm import LinearSVC
    from dask_streamsvm.engine.data.source import DaskSource
    from dask_streamsvm.io import csr_to_dask

    rng = np.random.default_rng(0)
    w_true = rng.standard_normal(args.features)
    X, y = _synthetic_rows("sparse", rng, w_true, args.rows, args.features, args.nnz)
    data_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    Xd, yd = csr_to_dask(X, y, args.partitions)
    source = DaskSource(Xd, yd)
    source.load(0)
    start = time.perf_counter()
    for p in range(source.n_partitions):
        source.load(p)
    plain = time.perf_counter() - start

    params = dict(solver=args.solver, cache_bytes=int(0.1 * data_bytes), tol=1e-12, random_state=0)
    with warnings.catch_warnings():  # compile (or load) the kernels outside the profile
        warnings.simplefilter("ignore")
        LinearSVC(**params, max_iter=1).fit(*csr_to_dask(X[:2000], y[:2000], 2))
    clf = LinearSVC(**params, max_iter=args.reads)
    profile = cProfile.Profile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        profile.enable()
        clf.fit(Xd, yd)
        profile.disable()
        seconds = time.perf_counter() - start
    last = clf.history_[-1]
    reads = last["pass"] + 1
    print(
        f"{args.rows:,} x {args.features:,} sparse, {args.nnz} nonzeros a row, {args.partitions} partitions, "
        f"{data_bytes / 1e6:.0f} MB; {args.solver}, cache 10%\n"
        f"plain read {plain:.2f} s; fit {seconds:.2f} s for {reads} reads = {seconds / reads:.2f} s a read; "
        f"reader busy {last['reader_busy_s'] / reads:.2f} s a read, trainer waited "
        f"{last['trainer_wait_s'] / reads:.2f} s a read; {last['row_visits'] / reads / args.rows:.1f} visits "
        "a row a read"
    )
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()

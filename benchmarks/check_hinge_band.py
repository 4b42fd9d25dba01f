"""The band from a sample's certificates on the tall sets against the optimum solved in memory.

Each default hinge fit of ``bench_two_reads --loss hinge`` (``LinearSVC(loss="hinge", C,
cache_bytes="10%")`` on ``<data-dir>/dense`` and ``<data-dir>/raw``) beside the optimum of the same
rows solved in memory by ``engine/primal/smoothed.py`` to a certified relative gap of 1e-9: the fit's
certified gap must be at least its suboptimality (issue 52).  Needs the sets ``bench_two_reads``
writes and about 2 GB of memory.

    python -m benchmarks.check_hinge_band          # results/hinge_band_certificates.json
"""

import argparse
import glob
import json
import time

import dask.dataframe as dd
import numpy as np
import pandas as pd

from benchmarks._common import ROOT
from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.primal.smoothed import Rows, solve_smoothed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", default="/tmp/tall", help="bench_two_reads's sets: <dir>/dense, <dir>/raw"
    )
    data_dir = parser.parse_args(argv).data_dir
    out = []
    for kind in ("dense", "raw"):
        files = sorted(glob.glob(f"{data_dir}/{kind}/*.parquet"))
        df = pd.concat([pd.read_parquet(f) for f in files])
        feats = [c for c in df.columns if c != "label"]
        X = np.ascontiguousarray(df[feats].to_numpy(np.float32))
        y = df["label"].to_numpy()
        classes = np.unique(y)
        sign = np.where(y == classes[1], 1.0, -1.0)
        frame = dd.read_parquet(f"{data_dir}/{kind}")
        for C in (0.01, 1.0):
            clf = LinearSVC(loss="hinge", C=C, cache_bytes="10%").fit(frame[feats], frame["label"])
            t = time.perf_counter()
            _, ref, info = solve_smoothed(Rows(X, sign, np.full(len(y), C), 1.0), tol=1e-9)
            ts = time.perf_counter() - t
            w = np.append(clf.coef_.ravel(), clf.intercept_)
            m = sign * (X.astype(np.float64) @ w[:-1] + w[-1])
            P = 0.5 * w @ w + C * np.maximum(0, 1 - m).sum()
            subopt_lo = (clf.objective_ - ref.primal) / clf.objective_
            row = dict(
                data=kind,
                C=C,
                reads=clf.n_iter_ + 1,
                certified_gap=float(clf.duality_gap_),
                objective=clf.objective_,
                numpy_primal=P,
                optimum_primal=ref.primal,
                optimum_dual=ref.dual,
                optimum_gap=ref.relative_gap,
                suboptimality_at_least=subopt_lo,
                holds=bool(
                    subopt_lo <= clf.duality_gap_ and clf.objective_ * (1 - clf.duality_gap_) <= ref.primal
                ),
                in_memory_s=ts,
                newton_steps=info["newton_steps"],
            )
            print(row, flush=True)
            out.append(row)
    (ROOT / "benchmarks" / "results" / "hinge_band_certificates.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

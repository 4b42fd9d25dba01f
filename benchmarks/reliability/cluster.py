"""The cluster: a fit on a Dask cluster whose data change between reads.

- ``cluster-changed-data``: on a LocalCluster (two worker processes of one
  thread; a partition's reads counted in a file, wherever they run), a
  random partition changes from a random read after the first on
  (reordered, labels flipped, values scaled, or its odd rows scaled 5x with
  their labels kept: the issue's trial), under one of the cluster's methods:
  Newton (``LinearSVC(dual=False)`` or ``LogisticRegression(dual=False)``)
  or CoCoA+ (``cluster="cocoa"``), with ``cache_bytes`` below the data so
  that the parts are read again.  Expected: the ValueError naming the
  partition that a single machine raises; a model returned after a changed
  read is a false certificate.
- ``no-worker``: a LocalCluster with no live worker, started with none
  (``n_workers=0``) or emptied after a first fit (``scale(0)``), and a
  random call on it: ``read_libsvm`` of a glob (its width scan), a fit of
  the glob, or a fit of a Dask Array (``cluster="auto"``, ``"cocoa"``,
  ``dual=False``, or ``cluster=None``: trained in this process, read on the
  cluster); in a child process killed after ``NO_WORKER_TIMEOUT`` s.
  Expected: the documented RuntimeError ("every Dask worker is gone"), and
  how long it took.
"""

import json
import time
import warnings

from benchmarks.reliability.data_changes import PRIMAL_CHANGES

METHODS = ("LinearSVC newton", "LogisticRegression newton", "LinearSVC cocoa")
NO_WORKER_TIMEOUT = 180  # seconds the child may take (a cluster's start included) before it counts as hung
NO_WORKER_CLUSTERS = ("started with none", "emptied after a fit")
NO_WORKER_CALLS = (
    "read_libsvm(glob)", "fit(glob)", "fit(array), cluster='auto'", "fit(array), cluster='cocoa'",
    "fit(array), dual=False", "fit(array), cluster=None",
)  # fmt: skip
GONE = "every Dask worker is gone"


def changing_part(i, folder, target, from_read, change, seed):
    """Partition ``i`` of :func:`~.common.data` as a frame, on a worker: its reads are counted in
    the file ``folder/i`` (the workers are processes), and partition ``target`` is changed by
    ``change`` from its ``from_read``-th read on (0 is the first)."""
    import numpy as np
    import pandas as pd

    from benchmarks.reliability.common import PART_ROWS, data

    with open(f"{folder}/{i}", "ab") as counts:
        counts.write(b".")
        read = counts.tell() - 1
    X, y = data()
    rows = slice(i * PART_ROWS, (i + 1) * PART_ROWS)
    X, y = X[rows].copy(), y[rows].copy()
    if i == target and read >= from_read:
        rng = np.random.RandomState(seed)
        if change == "reorder rows":
            order = rng.permutation(PART_ROWS)
            X, y = X[order], y[order]
        elif change == "flip labels":
            flipped = rng.choice(PART_ROWS, size=rng.randint(1, PART_ROWS // 4 + 1), replace=False)
            y[flipped] = 1 - y[flipped]
        elif change == "scale odd rows 5x":
            X[1::2] *= 5.0
        else:
            X *= rng.uniform(0.5, 2.0)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])], index=range(rows.start, rows.stop))
    frame["label"] = y
    return frame


def trial_cluster_changed_data(rng, solver, work):
    import re

    import dask
    import dask.dataframe as dd
    import distributed
    from sklearn.exceptions import ConvergenceWarning

    from benchmarks.reliability.common import N_PARTS, attempt
    from dask_streamsvm import LinearSVC, LogisticRegression

    method = METHODS[rng.randint(len(METHODS))]
    target, from_read = int(rng.randint(N_PARTS)), int(rng.randint(1, 4))
    change, seed = PRIMAL_CHANGES[rng.randint(len(PRIMAL_CHANGES))], int(rng.randint(2**31))
    estimator = LogisticRegression if method.startswith("Logistic") else LinearSVC
    # Budgets below the data, so that the parts are read again: a sample of the rows for Newton's
    # warm start, parts streamed for CoCoA+ (held in memory, a part is read once).
    if method.endswith("newton"):
        params = dict(dual=False, cluster="auto", cache_bytes=20_000)
    else:
        params = dict(cluster="cocoa", cache_bytes=2_000)
    meta = changing_part(0, work, -1, 0, None, 0).iloc[:0]
    (work / "0").unlink()
    parts = [
        dask.delayed(changing_part, pure=False)(i, str(work), target, from_read, change, seed)
        for i in range(N_PARTS)
    ]
    frame = dd.from_delayed(parts, meta=meta, verify_meta=False)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):

        def fit():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model = estimator(tol=1e-8, max_iter=50, random_state=0, **params)
                return model.fit(frame, "label", client=client)

        outcome, message, _ = attempt(fit)
    reads = (work / str(target)).stat().st_size if (work / str(target)).exists() else 0
    changed_reads = max(0, reads - from_read)
    pattern = rf"partition {target} gave other rows on this read than on its first"
    return {
        "method": method, "partition": target, "from_read": from_read, "change": change,
        "changed_reads": changed_reads, "outcome": outcome,
        "detected": outcome == "ValueError" and bool(re.search(pattern, message or "")),
        "false_certificate": outcome == "returned" and changed_reads > 0, "message": (message or "")[:300],
    }  # fmt: skip


def no_worker_call(how, call, folder):
    """In the child: ``call`` on a LocalCluster with no live worker (``how``); prints the outcome."""
    import distributed
    import numpy as np
    from sklearn.datasets import dump_svmlight_file

    from dask_streamsvm import LinearSVC
    from dask_streamsvm.io import read_libsvm

    warnings.simplefilter("ignore")
    rng = np.random.RandomState(0)
    for k in range(2):
        X = rng.randn(200, 5)
        dump_svmlight_file(X, (X[:, 0] > 0).astype(int), f"{folder}/p{k}.svm", zero_based=False)
    pattern = f"{folder}/p*.svm"
    workers = 0 if how == "started with none" else 2
    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        import dask.array as da

        X, y = rng.randn(400, 5), np.arange(400) % 2
        Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
        if workers:
            LinearSVC(max_iter=5).fit(Xd, yd, client=client)
            cluster.scale(0)
            while client.scheduler_info()["workers"]:
                time.sleep(0.2)
        params = {
            "fit(array), cluster='auto'": {}, "fit(array), cluster='cocoa'": {"cluster": "cocoa"},
            "fit(array), dual=False": {"dual": False}, "fit(array), cluster=None": {"cluster": None},
        }  # fmt: skip
        start = time.perf_counter()
        try:
            if call == "read_libsvm(glob)":
                read_libsvm(pattern)
            elif call == "fit(glob)":
                LinearSVC().fit(pattern, None)
            else:
                LinearSVC(**params[call]).fit(Xd, yd)
            outcome, message = "returned", ""
        except Exception as exc:  # noqa: BLE001 - the type is the outcome
            outcome, message = type(exc).__name__, str(exc)
        seconds = time.perf_counter() - start
    print(json.dumps({"outcome": outcome, "message": message[:300], "seconds": seconds}), flush=True)


def trial_no_worker(rng, solver, work):
    from benchmarks.reliability.common import how_ended, in_child

    how = NO_WORKER_CLUSTERS[rng.randint(len(NO_WORKER_CLUSTERS))]
    call = NO_WORKER_CALLS[rng.randint(len(NO_WORKER_CALLS))]
    returncode, out, err = in_child(no_worker_call, how, call, str(work), timeout=NO_WORKER_TIMEOUT)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    result = lines[0] if lines else {"outcome": how_ended(returncode), "message": err, "seconds": None}
    named = result["outcome"] == "RuntimeError" and GONE in result["message"]
    return {"cluster": how, "call": call, "named": named, **result}

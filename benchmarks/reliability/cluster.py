"""The cluster: a fit on a Dask cluster whose data change between reads.

- ``cluster-changed-data``: on a LocalCluster (two workers of one thread,
  in this process, so that a partition's reads are counted wherever they
  run), a random partition changes from a random read after the first on
  (reordered, labels flipped, values scaled, or its odd rows scaled 5x with
  their labels kept: the issue's trial), under one of the cluster's methods:
  Newton (``LinearSVC(dual=False)`` or ``LogisticRegression(dual=False)``)
  or CoCoA+ (``cluster="cocoa"``).  Expected: the ValueError naming the
  partition that a single machine raises; a model returned after a changed
  read is a false certificate.
"""

import warnings

from benchmarks.reliability.data_changes import PRIMAL_CHANGES, changed_partition_trial

METHODS = ("LinearSVC newton", "LogisticRegression newton", "LinearSVC cocoa")


def trial_cluster_changed_data(rng, solver):
    import distributed
    from sklearn.exceptions import ConvergenceWarning

    from dask_streamsvm import LinearSVC, LogisticRegression

    method = METHODS[rng.randint(len(METHODS))]
    estimator = LogisticRegression if method.startswith("Logistic") else LinearSVC
    params = dict(dual=False, cluster="auto") if method.endswith("newton") else dict(cluster="cocoa")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):

        def fit(data):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model = estimator(tol=1e-8, max_iter=50, random_state=0, **params)
                return model.fit(*data, client=client)

        record = changed_partition_trial(rng, PRIMAL_CHANGES, (1, 4), fit, method)
    return {**record, "method": method}

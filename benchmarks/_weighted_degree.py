"""Weighted-degree string features as data grow (the COFFIN paper's splice-site design, Table 2).

Data: :func:`dask_streamsvm.datasets.make_splice_sites`, DNA-like sequences
of 60 letters with an acceptor-site ``AG`` in the middle of every one and a
pyrimidine tract before it in the positives (25% of the rows, 10% of the
labels flipped); the test set is 20,000 sequences from another seed.

For each training size: ``LinearSVC(feature_map=WeightedDegreeMap(degree=8,
n_features=2**20), loss="hinge", C=1)`` in memory (the rows are the strings,
one byte a letter, plus the row state; the kernels hash the k-mers inside
DOT and ADD), and streamed from a Dask DataFrame with SBM and a cache of 10%
of the strings' row memory.  Reported: the dimension of the explicit
weighted-degree space (``sum_k (L - k + 1) 4^k``) and the buckets the model
uses (nonzero weights), the row memory of the strings against what the
materialised hashed features would take, seconds, reads, and the test
accuracy and auPRC (average precision of the decision values), next to a
spectrum map (3-mers, position-free) as a baseline that cannot see where a
k-mer is.
"""

import time

import numpy as np

LENGTH = 60
DEGREE = 8
N_FEATURES = 2**20
ROW_STATE = 88  # bytes of solver state per cached row (one problem, sparse rows)


def explicit_dimension(length=LENGTH, degree=DEGREE, alphabet=4):
    return sum((length - k + 1) * alphabet**k for k in range(1, degree + 1))


def weighted_degree_strings(sizes, seed=0):
    """One record per training size; see the module docstring."""
    import dask.dataframe as dd
    from sklearn.metrics import average_precision_score

    from dask_streamsvm import LinearSVC, SpectrumMap, WeightedDegreeMap
    from dask_streamsvm.datasets import make_splice_sites

    test, y_test = make_splice_sites(20_000, length=LENGTH, random_state=seed + 1)
    wd = WeightedDegreeMap(degree=DEGREE, n_features=N_FEATURES)
    raw_bytes = LENGTH * (4 + 8) + ROW_STATE  # a string in the row memory: index and value per letter
    phi_bytes = LENGTH * DEGREE * (4 + 8) + ROW_STATE  # its hashed features, before collisions
    records = []
    for n in sizes:
        frame, y = make_splice_sites(n, length=LENGTH, random_state=seed)
        record = {"rows": n, "explicit dimension": explicit_dimension(), "buckets": N_FEATURES}
        record["row bytes strings"] = raw_bytes
        record["row bytes materialised"] = phi_bytes
        record["data MB strings"] = n * raw_bytes / 1e6
        record["data MB materialised"] = n * phi_bytes / 1e6
        start = time.perf_counter()
        clf = LinearSVC(C=1.0, loss="hinge", feature_map=wd, tol=1e-3, max_iter=300, random_state=seed)
        clf.fit(frame, y)
        record["memory s"] = time.perf_counter() - start
        record["memory passes"] = clf.n_iter_
        record["memory gap"] = float(clf.duality_gap_)
        record["buckets used"] = int(np.count_nonzero(clf.coef_))
        scores = clf.decision_function(test)
        record["test accuracy"] = float(clf.score(test, y_test))
        record["auPRC"] = float(average_precision_score(y_test == 1, scores))
        frames = dd.from_pandas(frame.assign(label=y), npartitions=max(4, n // 5000))
        cache = int(0.1 * n * raw_bytes)
        start = time.perf_counter()
        streamed = LinearSVC(
            C=1.0, loss="hinge", feature_map=wd, solver="sbm", cache_bytes=cache, tol=1e-3, max_iter=50,
            random_state=seed,
        ).fit(frames, "label")  # fmt: skip
        record["sbm s"] = time.perf_counter() - start
        record["sbm reads"] = streamed.n_iter_
        record["sbm gap"] = float(streamed.duality_gap_)
        record["sbm cache MB"] = cache / 1e6
        record["sbm auPRC"] = float(average_precision_score(y_test == 1, streamed.decision_function(test)))
        start = time.perf_counter()
        spectrum = LinearSVC(
            C=1.0, loss="hinge", feature_map=SpectrumMap(3, n_features=N_FEATURES), tol=1e-3, max_iter=300,
            random_state=seed,
        ).fit(frame, y)  # fmt: skip
        record["spectrum s"] = time.perf_counter() - start
        record["spectrum auPRC"] = float(
            average_precision_score(y_test == 1, spectrum.decision_function(test))
        )
        records.append(record)
    return records


def report(records):
    """Markdown lines of the weighted-degree table."""
    lines = [
        "",
        "Weighted-degree string features as data grow (`WeightedDegreeMap(degree=8, n_features=2**20)`, "
        "hinge, C = 1, tol 1e-3) on DNA-like sequences of 60 letters with a planted acceptor-site signal "
        "(`dask_streamsvm.datasets.make_splice_sites`; 25% positives, 10% of labels flipped; test: 20,000 "
        f"sequences from another seed). The explicit weighted-degree space has "
        f"{explicit_dimension():,} dimensions, hashed into 2^20 buckets; *buckets used*: nonzero weights "
        "of the model. *MB strings / materialised*: row memory of all training rows as strings (a byte "
        "code and index per letter plus the row state) and as their hashed features (480 a row before "
        "collisions). *in memory*: seconds, passes; *SBM*: streamed from a Dask DataFrame with a cache "
        "of 10% of the strings' row memory, seconds and reads. *auPRC*: average precision on the test "
        "set; *spectrum*: a 3-mer spectrum map, which cannot see positions, as a baseline.",
        "",
        "| rows | MB strings / materialised | buckets used | in memory s (passes) | SBM s (reads) "
        "| test acc | auPRC | SBM auPRC | spectrum auPRC |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['rows']:,} | {r['data MB strings']:.1f} / {r['data MB materialised']:.1f} "
            f"| {r['buckets used']:,} | {r['memory s']:.1f} ({r['memory passes']}) "
            f"| {r['sbm s']:.1f} ({r['sbm reads']}) | {r['test accuracy']:.4f} | {r['auPRC']:.4f} "
            f"| {r['sbm auPRC']:.4f} | {r['spectrum auPRC']:.4f} |"
        )
    return lines

"""Bad input, round two: malformed sparse matrices, complex values, infinite labels, overflowing
rows, mixed label types, duplicated columns and arrays of the wrong rank (docs/reliability.md).

Every test injects a bad value and checks what the user gets: a clear error naming the partition
and row (in memory: the row), or a correct model; never a crash or a silently wrong model.  A
malformed CSR matrix crashed the process before these checks, so its tests run in a subprocess.
"""

import json
import subprocess
import sys
import textwrap

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dask_streamsvm import BudgetedSVC, LinearSVC, OnePassSVC
from dask_streamsvm.features import HashingMap, PolynomialMap

from ._helpers import noisy_linear_data, stream_model

N_PARTS, PART_ROWS = 4, 30


def _data(seed=0, n=N_PARTS * PART_ROWS, d=4):
    return noisy_linear_data(n, d, seed)


def _stream(**params):
    return stream_model(**{"tol": 1e-6, "max_iter": 60, **params})


def _chunks(X, y):
    return da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)


def _same_model(a, b, rtol=1e-5):
    assert abs(a.objective_ - b.objective_) <= rtol * abs(b.objective_)


# -- malformed sparse matrices (in a subprocess: they corrupted memory) ---------------------------

# Builds ``malformed(base)``: kind -> (a copy of the CSR ``base`` with that one flaw, the row the
# error must name, or a text it must hold), and ``MALFORMED = malformed(GOOD)``, from a well-formed
# 30 x 6 CSR ``GOOD`` whose row 7 is full.  The flaws are made by assigning the index arrays, as code
# that builds CSR by hand does; SciPy's constructors would refuse some of them.
_MALFORMED = """
import json, warnings
import numpy as np, scipy.sparse as sp

rng = np.random.RandomState(0)
dense = rng.randn(30, 6) * (rng.rand(30, 6) < 0.6)
dense[7] = rng.randn(6)
GOOD = sp.csr_matrix(dense)
Y = (dense[:, 0] + dense[:, 1] > 0).astype(np.int64)
Y[:2] = [0, 1]

def set_at(a, i, v):
    a = a.copy()
    a[i] = v
    return a

def malformed(base):
    k, n = int(base.indptr[7]), base.shape[0]

    def flawed(indptr=None, indices=None, data=None):
        X = base.copy()
        X.indptr = base.indptr.copy() if indptr is None else indptr
        X.indices = base.indices.copy() if indices is None else indices
        X.data = base.data.copy() if data is None else data
        return X

    return {
        "index >= n_features": (flawed(indices=set_at(base.indices, k, 6)), 7),
        "huge index": (flawed(indices=set_at(base.indices, k, 2**31 - 1)), 7),
        "negative index": (flawed(indices=set_at(base.indices, k + 1, -1)), 7),
        "indptr decreasing": (flawed(indptr=set_at(base.indptr, 8, base.indptr[7] - 1)), 7),
        "indptr past nnz": (flawed(indptr=set_at(base.indptr, n, base.nnz + 5)), n - 1),
        "indptr not from 0": (flawed(indptr=set_at(base.indptr, 0, 1)), "X: the sparse matrix is "
                              "malformed: indptr starts at 1"),
        "indptr too short": (flawed(indptr=base.indptr[:-1].copy()), f"indptr has {n} entries"),
        "data longer than indices": (flawed(data=np.append(base.data, 1.0)), "and data"),
    }

MALFORMED = {
    kind: (X, f"X, row {at}: the" if isinstance(at, int) else at)
    for kind, (X, at) in malformed(GOOD).items()
}

def outcome(call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except ValueError as exc:
        return "ValueError", str(exc)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "accepted", ""

def report(kind, entry, call, expected):
    kind_, message = outcome(call)
    print(json.dumps([kind, entry, kind_, message, expected]), flush=True)
"""


def _run_isolated(body):
    """Run ``_MALFORMED`` + ``body`` in a fresh interpreter: its reported outcomes, or a failure
    that shows how the process ended (a SIGSEGV or abort ends it with a negative code)."""
    script = _MALFORMED + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert done.returncode == 0, (
        f"the process ended with code {done.returncode} after {len(rows)} outcomes: {rows[-1:]}\n"
        f"{done.stderr[-2000:]}"
    )
    return rows


def _assert_named(rows, n_expected):
    assert len(rows) == n_expected
    for kind, entry, outcome, message, expected in rows:
        assert outcome == "ValueError", (kind, entry, outcome, message)
        assert "the sparse matrix is malformed" in message, (kind, entry, message)
        assert expected in message, (kind, entry, message)


def test_malformed_csr_in_memory_is_a_value_error_naming_the_row_never_a_crash():
    rows = _run_isolated("""
        from dask_streamsvm import LinearSVC
        fitted = LinearSVC(random_state=0).fit(GOOD, Y)
        for kind, (X, expected) in MALFORMED.items():
            report(kind, "fit", lambda: LinearSVC(max_iter=5).fit(X, Y), expected)
            report(kind, "fit skip", lambda: LinearSVC(max_iter=5, on_invalid="skip").fit(X, Y), expected)
            report(kind, "partial_fit", lambda: LinearSVC().partial_fit(X, Y, classes=[0, 1]), expected)
            report(kind, "predict", lambda: fitted.predict(X), expected)
            report(kind, "decision_function", lambda: fitted.decision_function(X), expected)
    """)
    _assert_named(rows, 5 * 8)


def test_malformed_csr_in_memory_with_a_streaming_solver_is_a_value_error_naming_the_row():
    # LinearSVC._source checks in-memory input (_validation.checked_sparse) before cutting it into
    # partitions: slicing a malformed matrix silently dropped or mangled its bad entries.
    rows = _run_isolated("""
        from dask_streamsvm import LinearSVC
        for kind, (X, expected) in MALFORMED.items():
            report(kind, "sbm", lambda: LinearSVC(solver="sbm", max_iter=3).fit(X, Y), expected)
    """)
    _assert_named(rows, 8)


def test_malformed_csc_and_coo_in_memory_are_value_errors():
    rows = _run_isolated("""
        from dask_streamsvm import LinearSVC
        csc = sp.csc_matrix(GOOD)
        csc.indices = set_at(csc.indices, 3, 30)
        report("csc row index", "fit", lambda: LinearSVC(max_iter=5).fit(csc, Y), "outside [0, 30)")
        coo = sp.coo_matrix(GOOD)
        coo.col = set_at(coo.col, 3, 9)
        report("coo column index", "fit", lambda: LinearSVC(max_iter=5).fit(coo, Y), "outside [0, 6)")
        coo = sp.coo_matrix(GOOD)
        coo.row = set_at(coo.row, 3, -2)
        report("coo row index", "fit", lambda: LinearSVC(max_iter=5).fit(coo, Y), "outside [0, 30)")
    """)
    _assert_named(rows, 3)


def test_malformed_csr_is_refused_by_onepass_and_budgeted():
    # Their in-memory input goes through _stream_classifier's _validated and _check_in_memory.
    rows = _run_isolated("""
        from dask_streamsvm import BudgetedSVC, OnePassSVC
        for make in (lambda: OnePassSVC(random_state=0), lambda: BudgetedSVC(max_iter=1, random_state=0)):
            fitted = make().fit(GOOD, Y)
            name = type(fitted).__name__
            for kind in ("index >= n_features", "negative index", "indptr decreasing"):
                X, expected = MALFORMED[kind]
                report(kind, name + " fit", lambda: make().fit(X, Y), expected)
                learn = lambda: make().partial_fit(X, Y, classes=[0, 1])
                report(kind, name + " partial_fit", learn, expected)
                report(kind, name + " predict", lambda: fitted.predict(X), expected)
    """)
    _assert_named(rows, 2 * 3 * 3)


def test_malformed_csr_partition_is_a_value_error_naming_partition_and_row():
    rows = _run_isolated("""
        import dask, dask.array as da
        from dask_streamsvm import LinearSVC, OnePassSVC

        def collection(bad):
            # Partitions of 10 rows; the third (rows 20-29) is the malformed matrix's rows 0-9.
            parts = [GOOD[0:10], GOOD[10:20], bad, GOOD[0:10]]
            blocks = [
                da.from_delayed(dask.delayed(lambda p=p: p)(), shape=(10, 6), dtype=np.float64,
                                meta=sp.csr_matrix((0, 6)))
                for p in parts
            ]
            labels = np.concatenate([Y[:10], Y[10:20], Y[:10], Y[:10]])
            return da.concatenate(blocks), da.from_array(labels, chunks=10)

        for kind, (X, r) in malformed(GOOD[0:10]).items():
            Xd, yd = collection(X)
            where = f"partition 2, row {r} (row {20 + r} of the collection): the" if isinstance(r, int) else (
                "partition 2: the"
            )
            report(kind, "sbm", lambda: LinearSVC(solver="sbm", max_iter=3).fit(Xd, yd), where)
            report(kind, "streamsvm", lambda: LinearSVC(solver="streamsvm", max_iter=3).fit(Xd, yd), where)
            report(kind, "OnePassSVC", lambda: OnePassSVC().fit(Xd, yd), where)
    """)
    _assert_named(rows, 8 * 3)


def test_malformed_csr_partition_at_prediction_is_a_value_error_never_a_crash():
    # Lazy prediction checks each sparse partition (_lazy._check_rows) before scoring it.
    rows = _run_isolated("""
        import dask, dask.array as da
        from dask_streamsvm import LinearSVC, OnePassSVC
        meta = sp.csr_matrix((0, 6))
        for model in (LinearSVC(random_state=0).fit(GOOD, Y), OnePassSVC(random_state=0).fit(GOOD, Y)):
            for kind, (X, at) in malformed(GOOD).items():
                if kind.startswith(("index", "huge", "negative", "indptr decreasing")):  # Dask's
                    # concatenation of the results refuses the other kinds (SciPy's basic check)
                    part = dask.delayed(lambda X=X: X)()
                    Xd = da.from_delayed(part, shape=X.shape, dtype=np.float64, meta=meta)
                    where = f"a partition, row {at}: the"
                    report(kind, type(model).__name__, lambda: model.predict(Xd).compute(), where)
    """)
    _assert_named(rows, 2 * 4)


# -- complex values ---------------------------------------------------------------------------------


def test_complex_dask_features_are_refused_not_cast_to_their_real_part():
    X, y = _data()
    Xc = X.astype(np.complex128)
    Xc[33, 1] += 2j
    with pytest.raises(
        ValueError, match=r"X holds complex values \(dtype complex128\); complex values are not"
    ):
        _stream().fit(*_chunks(Xc, y))
    # A partition whose values are complex although the collection says float64.
    parts = [
        dask.delayed(lambda i=i: (Xc if i == 1 else X)[i * PART_ROWS : (i + 1) * PART_ROWS])()
        for i in range(N_PARTS)
    ]
    Xd = da.concatenate([da.from_delayed(p, shape=(PART_ROWS, 4), dtype=np.float64) for p in parts])
    with pytest.raises(ValueError, match=r"partition 1: X holds complex values"):
        _stream().fit(Xd, da.from_array(y, chunks=PART_ROWS))
    frame = pd.DataFrame(X, columns=list("abcd")).assign(c=Xc[:, 2] + 1j, y=y)
    with pytest.raises(ValueError, match=r"X's columns \['c'\] holds complex values"):
        _stream().fit(dd.from_pandas(frame, npartitions=N_PARTS), "y")
    sparse = sp.csr_matrix(Xc)
    Xs = da.concatenate(
        [da.from_delayed(dask.delayed(lambda i=i: sparse[i * PART_ROWS : (i + 1) * PART_ROWS])(),
                         shape=(PART_ROWS, 4), dtype=np.float64, meta=sp.csr_matrix((0, 4)))
         for i in range(N_PARTS)]
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"partition \d: X holds complex values"):
        _stream().fit(Xs, da.from_array(y, chunks=PART_ROWS))
    with pytest.raises(ValueError, match="Complex data not supported"):  # in memory, as scikit-learn says
        LinearSVC().fit(Xc, y)


# -- infinite labels --------------------------------------------------------------------------------


def test_infinite_labels_are_refused_naming_partition_and_row_or_skipped_like_nan_labels():
    X, y = _data()
    labels = y.astype(np.float64)
    labels[37] = np.inf
    with pytest.raises(ValueError, match=r"partition 1, row 7: the label is infinite \(inf\), not a class"):
        _stream().fit(*_chunks(X, labels))
    objects = np.where(np.arange(len(y)) == 95, -np.inf, y).astype(object)  # a pandas object column's labels
    with pytest.raises(ValueError, match=r"partition 3, row 5: the label is infinite \(-inf\)"):
        _stream().fit(da.from_array(X, chunks=PART_ROWS), da.from_array(objects, chunks=PART_ROWS))
    with pytest.raises(ValueError, match="Input y contains infinity"):  # in memory, as scikit-learn says
        LinearSVC().fit(X, labels)
    labels[95] = -np.inf
    keep = np.isfinite(labels)
    clean = LinearSVC(tol=1e-8, random_state=0).fit(X[keep], y[keep])
    skipped = _stream(on_invalid="skip").fit(*_chunks(X, labels))
    assert skipped.classes_.tolist() == [0.0, 1.0]
    assert skipped.history_[0]["rows_skipped"] == 2
    _same_model(skipped, clean)
    in_memory = LinearSVC(tol=1e-8, random_state=0, on_invalid="skip").fit(X, labels)
    assert in_memory.history_[0]["rows_skipped"] == 2
    _same_model(in_memory, clean, rtol=1e-7)


# -- HashingMap and on_invalid="skip" -----------------------------------------------------------------


def _hashing_frame():
    X, y = _data()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "colour": np.where(X[:, 2] > 0, "red", "blue")})
    frame["y"] = y
    bad = frame.copy()
    bad.loc[41, "b"] = np.nan
    bad.loc[77, "a"] = np.inf
    return frame, bad


def test_hashing_map_with_skip_drops_rows_holding_nan_when_streaming():
    frame, bad = _hashing_frame()
    fmap = HashingMap(n_features=64)
    with pytest.raises(ValueError, match=r"partition 1, row 11, column 'b': the value is NaN; 1 rows"):
        _stream(feature_map=fmap).fit(dd.from_pandas(bad, npartitions=N_PARTS), "y")
    model = _stream(feature_map=fmap, on_invalid="skip").fit(dd.from_pandas(bad, npartitions=N_PARTS), "y")
    assert model.history_[0]["rows_skipped"] == 2
    clean = LinearSVC(feature_map=fmap, tol=1e-8, random_state=0).fit(
        frame.drop(index=[41, 77]).drop(columns="y"), frame.drop(index=[41, 77])["y"]
    )
    _same_model(model, clean)


def test_hashing_map_with_skip_drops_rows_holding_nan_in_memory():
    # LinearSVC._drop_invalid hands its feature map to _validation.drop_invalid (encoder=...).
    frame, bad = _hashing_frame()
    fmap = HashingMap(n_features=64)
    model = LinearSVC(feature_map=fmap, tol=1e-8, random_state=0, on_invalid="skip")
    model.fit(bad.drop(columns="y"), bad["y"])
    assert model.history_[0]["rows_skipped"] == 2
    kept = frame.drop(index=[41, 77])
    clean = LinearSVC(feature_map=fmap, tol=1e-8, random_state=0).fit(kept.drop(columns="y"), kept["y"])
    _same_model(model, clean, rtol=1e-7)


# -- values whose squares overflow --------------------------------------------------------------------


def test_rows_whose_squared_norm_overflows_say_the_features_need_scaling():
    X, y = _data()
    huge = X.copy()
    huge[50, 1] = 3e155  # (3e155)^2 = 9e310 > 1.8e308: x . x is infinite
    scale = r"overflows float64 \(its largest value is 3e\+155\); .* need scaling \(e\.g\. .*StandardScaler"
    with pytest.raises(ValueError, match=r"^X, row 50: the row's squared norm x \. x " + scale):
        LinearSVC().fit(huge, y)
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        _stream().fit(*_chunks(huge, y))
    sparse = da.from_array(sp.csr_matrix(huge), chunks=(PART_ROWS, 4), asarray=False)
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        _stream().fit(sparse, da.from_array(y, chunks=PART_ROWS))
    keep = np.arange(len(y)) != 50
    clean = LinearSVC(tol=1e-8, random_state=0).fit(X[keep], y[keep])
    in_memory = LinearSVC(tol=1e-8, random_state=0, on_invalid="skip").fit(huge, y)
    assert in_memory.history_[0]["rows_skipped"] == 1
    _same_model(in_memory, clean, rtol=1e-7)
    skipped = _stream(on_invalid="skip").fit(*_chunks(huge, y))
    assert skipped.history_[0]["rows_skipped"] == 1
    _same_model(skipped, clean)
    # Every row too large: the fit said only "increase max_iter" before.
    with pytest.raises(ValueError, match="need scaling"):
        LinearSVC().fit(X * 1e155, y)
    # phi(x) of a feature map overflows although x . x does not.
    with pytest.raises(ValueError, match=r"row 50: its squared norm .* overflows float64; .* need scaling"):
        LinearSVC(feature_map=PolynomialMap()).fit(
            np.where(np.arange(4) == 1, 1e80, 1.0) * (np.arange(len(y)) == 50)[:, None] + X, y
        )


def test_overflowing_rows_give_onepass_and_budgeted_the_same_clear_error():
    X, y = _data()
    huge = X.copy()
    huge[50, 1] = 3e155
    # OnePassSVC scaled such a row to zero and returned a zero model when every row was one.
    for data in (huge, X * 1e155):
        with pytest.raises(ValueError, match="need scaling"):
            OnePassSVC(random_state=0).fit(data, y)
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        OnePassSVC(random_state=0).fit(*_chunks(huge, y))
    # BudgetedSVC raised a bare OverflowError (streaming) or trained on gamma=0 (in memory).
    with pytest.raises(
        ValueError, match=r"partition 1, row 20 \(row 50 of the collection\): the row's squared"
    ):
        BudgetedSVC(max_iter=1, random_state=0).fit(*_chunks(huge, y))
    with pytest.raises(ValueError, match="need scaling"):
        BudgetedSVC(max_iter=1, random_state=0).fit(huge, y)


def test_overflowing_rows_with_a_given_gamma_name_the_row_in_memory():
    # Through _stream_classifier's _validated (validated_rows): the row, not only the variance.
    X, y = _data()
    huge = X.copy()
    huge[50, 1] = 3e155
    with pytest.raises(ValueError, match=r"^X, row 50: the row's squared norm x \. x overflows"):
        BudgetedSVC(gamma=1.0, max_iter=1, random_state=0).fit(huge, y)


# -- label types, column names, ranks --------------------------------------------------------------


def test_string_labels_in_one_partition_and_numbers_in_another_name_the_partitions():
    X, y = _data()
    labels = y.astype(object)
    labels[:PART_ROWS] = np.where(y[:PART_ROWS] == 1, "yes", "no")
    mixed = (
        r"the labels mix strings and numbers: partition 0 has the label 'no' and partition 1 the label 0\. "
    )
    with pytest.raises(ValueError, match=mixed + "Give y one type"):
        _stream().fit(da.from_array(X, chunks=PART_ROWS), da.from_array(labels, chunks=PART_ROWS))
    with pytest.raises(
        ValueError, match=r"partition 0, row 0 has the label 'yes' and partition 0, row 30 the"
    ):
        _stream().fit(da.from_array(X, chunks=len(y)), da.from_array(labels, chunks=len(y)))
    with pytest.raises(ValueError, match=r"the labels mix strings and numbers: partition 0 has"):
        OnePassSVC().fit(da.from_array(X, chunks=PART_ROWS), da.from_array(labels, chunks=PART_ROWS))
    # A frame whose files were parsed apart: one partition's label column holds strings.
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y=y)
    parts = [frame.iloc[i * PART_ROWS : (i + 1) * PART_ROWS] for i in range(N_PARTS)]
    parts[2] = parts[2].assign(y=parts[2]["y"].map({0: "no", 1: "yes"}).astype(object))
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0], verify_meta=False)
        with pytest.raises(ValueError, match=r"partition 2 has the label 'no' and partition 0 the label 0"):
            _stream().fit(ddf, "y")


def test_duplicated_column_names_are_refused_when_the_source_is_built():
    X, y = _data()
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "a", "b"]).assign(y=y), npartitions=N_PARTS)
    match = r"X has duplicated column names \['a', 'b'\]; every column needs a name of its own"
    with pytest.raises(ValueError, match=match):
        _stream().fit(frame, "y")
    with pytest.raises(ValueError, match=match):
        OnePassSVC().fit(frame.drop(columns="y"), frame["y"])


@pytest.mark.parametrize(
    ("shape", "fix"),
    [((120,), r"ndim=1 \(shape \(120,\)\): for one feature, pass X\.reshape\(-1, 1\)"),
     ((120, 4, 2), r"ndim=3 \(shape \(120, 4, 2\)\): flatten the trailing axes, X\.reshape\(X\.shape\[0\], -1"
                   r"\)")],
    ids=["1-D", "3-D"],
)  # fmt: skip
def test_a_dask_x_of_another_rank_says_how_to_reshape_it(shape, fix):
    _, y = _data()
    X = da.ones(shape, chunks=PART_ROWS)
    match = r"X must be 2-D with shape \(n_samples, n_features\), got a Dask Array with " + fix
    with pytest.raises(ValueError, match=match):
        _stream().fit(X, da.from_array(y, chunks=PART_ROWS))
    with pytest.raises(ValueError, match=match):
        BudgetedSVC().fit(X, da.from_array(y, chunks=PART_ROWS))

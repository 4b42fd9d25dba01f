"""Property-based fuzzing (Hypothesis) of the LIBSVM reader and of the estimator's input checks.

Every property runs a fixed, derandomized set of examples (``EXAMPLES``), so
a run is reproducible: the default suite a fifth of them, and the property's
``_full`` twin, marked slow, all of them (``_helpers.fuzz_twins``); ``pytest tests/test_fuzz.py
--hypothesis-show-statistics`` prints how many each one tried and their
outcomes.  ``DASK_STREAMSVM_FUZZ_SCALE=20`` runs 20 times as many, from a
fresh random seed each run.

* The reader gives scikit-learn's rows bit for bit, or, where scikit-learn's
  reader rejects the text, a ValueError naming the first bad line.
* A fit either raises a ValueError or TypeError with a message, or gives a
  finite model whose ``predict`` works: never another exception.
* A model file (LinearSVC, BudgetedSVC, OnePassSVC) with bytes flipped,
  replaced, inserted, deleted or cut off, or with crafted JSON metadata
  (deep nesting, wrong types in any field, huge shapes, NaN), either loads
  as a model that predicts exactly as the saved one or raises a ValueError
  naming the file: never another exception, never a different model.
"""

import io
import json
import re
import warnings
import zipfile

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import event, example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning

from dask_streamsvm import BudgetedSVC, LinearSVC, OnePassSVC, load
from dask_streamsvm.io import _parse_block, _show, read_libsvm
from dask_streamsvm.kernels.text import parse_block

from ._helpers import fuzz_twins

EXAMPLES = {
    "parse_block_mutated": 500,
    "parse_block_bytes": 500,
    "read_libsvm": 120,
    "fit_numpy": 500,
    "fit_dask_sbm": 100,
    "model_file_bytes": 300,
    "model_file_json": 200,
}


def _twins(name, *decorators):
    """The property with a share of ``EXAMPLES[name]`` examples, and its slow twin with them all."""
    return fuzz_twins(EXAMPLES[name], *decorators)


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    """Compile the LIBSVM parser and the solvers once, before any example is timed."""
    _parse_block(b"1 1:0.5\n", None, np.float64, False, "warm-up")
    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    y = np.array([0, 1, 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        LinearSVC(max_iter=5, tol=1e-2).fit(X, y)
        sbm = LinearSVC(max_iter=5, tol=1e-2, solver="sbm")
        sbm.fit(da.from_array(X, chunks=2), da.from_array(y, chunks=2))


# --- LIBSVM text -------------------------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda v: f"{v:.6g}"),
    st.floats(-1e6, 1e6).map(lambda v: f"{v:e}"),
    st.sampled_from(["nan", "-inf", "+1", ".5", "1.", "-0", "1e400", "1e-400", "00012", "1_000", "+.5e+3"]),
)
# Bytes that matter to a LIBSVM parser, inserted into valid text.
# fmt: off
_PIECES = st.one_of(
    st.sampled_from([
        b" ", b"\t", b"\n", b"\r", b"\r\n", b":", b"::", b"#", b"0", b"1", b"9", b"-", b"+", b".", b"e", b"x",
        b"nan", b"inf", b"qid:", b"qid", b"0:", b"1:", b"_", b"\x00", b"\x0b", b"\x0c", b"\xff", b"1e400",
        b" 0:1", b" 7:2", b"2147483648:1", b"-1:2", b"99999999999999999999",
    ]),
    st.binary(min_size=1, max_size=2),
)
# fmt: on


@st.composite
def _libsvm_line(draw, zero_based):
    label = draw(st.one_of(st.sampled_from(["1", "-1", "+1", "0", "2"]), _NUMBERS))
    first = 0 if zero_based else 1
    tokens = [label]
    if draw(st.integers(0, 9)) == 0:
        tokens.append(f"qid:{draw(st.integers(0, 9))}")
    for index in sorted(draw(st.sets(st.integers(first, 9), max_size=4))):
        tokens.append(f"{index}:{draw(_NUMBERS)}")
    line = draw(st.sampled_from([" ", "\t", "  ", " \t"])).join(tokens)
    return line + draw(st.sampled_from(["", "", " ", "\r", " # a comment 1:x", "#", "\t# qid:1"]))


@st.composite
def _mutated_libsvm(draw):
    """``(text, zero_based)``: valid LIBSVM lines with up to three bytes-level edits."""
    zero_based = draw(st.booleans())
    line = st.one_of(_libsvm_line(zero_based), st.sampled_from(["", "# a header", "   "]))
    text = "\n".join(draw(st.lists(line, max_size=8))) + draw(st.sampled_from(["", "\n"]))
    data = bytearray(text.encode())
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        pos = draw(st.integers(0, len(data)))
        if op == "insert":
            data[pos:pos] = draw(_PIECES)
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 4))]
        else:
            data[pos : pos + 1] = draw(_PIECES)
    return bytes(data), zero_based


_N_FEATURES = st.one_of(st.none(), st.integers(1, 10))
_DTYPES = st.sampled_from([np.float64, np.float32])


def _scikit_learn(data, n_features, zero_based, dtype=np.float64):
    """scikit-learn's ``(X, y)`` of ``data``, or the exception it raises."""
    try:
        X, y = load_svmlight_file(io.BytesIO(data), n_features=n_features, dtype=dtype, zero_based=zero_based)
    except (ValueError, OverflowError) as exc:  # OverflowError: an index past a C int
        return exc
    return sp.csr_matrix(X), y


def _assert_same_rows(X, y, ref):
    X_ref, y_ref = ref
    assert X.shape == X_ref.shape and X.dtype == X_ref.dtype
    np.testing.assert_array_equal(X.indptr, X_ref.indptr)
    np.testing.assert_array_equal(X.indices, X_ref.indices)
    bits = f"u{X.data.itemsize}"
    np.testing.assert_array_equal(X.data.view(bits), X_ref.data.view(bits))
    np.testing.assert_array_equal(y.view(np.uint64), y_ref.view(np.uint64))


def _named_line(message, where, data):
    """The line number an error names, after checking its form and the quoted line."""
    match = re.match(rf"{re.escape(where)}, line (\d+): malformed LIBSVM data: (.+) in line ['\"]", message)
    assert match, f"the error does not name the line: {message}"
    number = int(match.group(1))
    lines = data.split(b"\n")
    assert 1 <= number <= len(lines), message
    quoted = _show(lines[number - 1].rstrip(b"\r"))
    assert f" in line {quoted}" in message, message
    return number, lines


def _check_parse_block(data, n_features, zero_based, dtype):
    ref = _scikit_learn(data, n_features, zero_based, dtype)
    try:
        X, y = _parse_block(data, n_features, dtype, zero_based, "fuzz.svm")
    except ValueError as exc:
        assert isinstance(ref, Exception), f"scikit-learn reads {data!r}, we raise {exc}"
        number, lines = _named_line(str(exc), "fuzz.svm", data)
        # The named line is the first one scikit-learn's reader rejects.
        before = b"\n".join(lines[: number - 1])
        assert not isinstance(_scikit_learn(before, n_features, zero_based), Exception), str(exc)
        through = before + b"\n" + lines[number - 1]
        assert isinstance(_scikit_learn(through, n_features, zero_based), Exception), str(exc)
        event("malformed: line named")
        return
    assert not isinstance(ref, Exception), f"scikit-learn raises {ref!r} on {data!r}, we read it"
    _assert_same_rows(X, y, ref)
    fast = parse_block(data, n_features, zero_based) is not None
    event("read by the compiled parser" if fast else "read by scikit-learn's reader")


@_twins("parse_block_mutated", given(_mutated_libsvm(), _N_FEATURES, _DTYPES))
def test_parse_block_on_edited_text_equals_scikit_learn_or_names_the_line(text, n_features, dtype):
    data, zero_based = text
    _check_parse_block(data, n_features, zero_based, dtype)


@_twins(
    "parse_block_bytes",
    given(
        st.one_of(st.binary(max_size=80), st.lists(_PIECES, max_size=30).map(b"".join)),
        _N_FEATURES,
        st.booleans(),
    ),
)
def test_parse_block_on_random_bytes_equals_scikit_learn_or_names_the_line(data, n_features, zero_based):
    _check_parse_block(data, n_features, zero_based, np.float64)


@_twins("read_libsvm", given(_mutated_libsvm(), _N_FEATURES, st.integers(1, 48)))
def test_read_libsvm_in_any_blocks_equals_scikit_learn_or_names_the_file_line(
    tmp_path_factory, text, n_features, blocksize
):
    data, zero_based = text
    path = tmp_path_factory.getbasetemp() / "fuzz.svm"
    path.write_bytes(data)
    ref = _scikit_learn(data, n_features, zero_based)
    with dask.config.set(scheduler="sync"):
        try:
            X, y = read_libsvm(str(path), n_features, blocksize=blocksize, zero_based=zero_based)
            parts = dask.compute(*X.to_delayed().ravel())
            (labels,) = dask.compute(y)
        except ValueError as exc:
            assert isinstance(ref, Exception), f"scikit-learn reads {data!r}, we raise {exc}"
            # Blocks are parsed in any order: the named line is a bad one, not always the first.
            number, lines = _named_line(str(exc), str(path), data)
            assert isinstance(_scikit_learn(lines[number - 1], n_features, zero_based), Exception), str(exc)
            event("malformed: line named")
            return
    assert not isinstance(ref, Exception), f"scikit-learn raises {ref!r} on {data!r}, we read it"
    assert all(p.shape[1] == ref[0].shape[1] for p in parts)
    _assert_same_rows(sp.vstack(parts, format="csr"), labels, ref)
    event(f"read in {len(parts)} block(s)" if len(parts) < 4 else "read in 4 or more blocks")


# --- estimator inputs --------------------------------------------------------------------------------

_VALUES = st.floats(-5, 5)
# One flaw at a time, so that each check is reached (and fits that should work do).
_FLAWS = (
    "none", "none", "none", "none", "nan", "inf", "huge", "tiny", "int", "object", "strings", "1d", "3d",
    "list", "no rows", "no features", "one class", "nan label", "inf label", "string labels", "three classes",
    "column y", "y longer", "y shorter", "negative weight", "nan weight", "inf weight", "zero weights",
    "weights shorter", "weights 2d",
)  # fmt: skip


@st.composite
def _fit_inputs(draw):
    """``(X, y, sample_weight)``: small valid inputs, or broken in one of the ways users break them."""
    flaw = draw(st.sampled_from(_FLAWS))
    n = 0 if flaw == "no rows" else draw(st.integers(1, 30))
    d = 0 if flaw == "no features" else draw(st.integers(1, 4))
    X = draw(hnp.arrays(np.float64, (n, d), elements=_VALUES))
    classes = {"three classes": [0, 1, 2], "one class": [1], "string labels": ["a", "b"]}.get(flaw, [-1, 1])
    y = np.array(draw(st.lists(st.sampled_from(classes), min_size=n, max_size=n)))
    w = draw(st.one_of(st.none(), hnp.arrays(np.float64, (n,), elements=st.floats(0, 3))))
    if n:
        spot = (draw(st.integers(0, n - 1)), draw(st.integers(0, max(d - 1, 0))))
    if flaw in ("nan", "inf", "huge", "tiny") and n and d:
        X[spot] = {"nan": np.nan, "inf": -np.inf, "huge": 1e300, "tiny": 1e-300}[flaw]
    elif flaw == "int":
        X = np.round(X).astype(np.int64)
    elif flaw in ("object", "strings") and n and d:
        X = X.astype(object)
        X[spot] = "a" if flaw == "strings" else "1.5"
    elif flaw == "1d":
        X = X[:, 0] if d else X.ravel()
    elif flaw == "3d":
        X = X[:, :, None]
    elif flaw == "list":
        X = X.tolist()
    elif flaw in ("nan label", "inf label") and n:
        y = y.astype(np.float64)
        y[spot[0]] = np.nan if flaw == "nan label" else np.inf
    elif flaw == "column y":
        y = y[:, None]
    elif flaw == "y longer":
        y = np.append(y, y[:1] if n else [1])
    elif flaw == "y shorter":
        y = y[:-1]
    elif flaw in ("negative weight", "nan weight", "inf weight") and n:
        w = np.ones(n)
        w[spot[0]] = {"negative weight": -1.0, "nan weight": np.nan, "inf weight": np.inf}[flaw]
    elif flaw == "zero weights":
        w = np.zeros(n)
    elif flaw == "weights shorter":
        w = np.ones(max(n - 1, 0))
    elif flaw == "weights 2d":
        w = np.ones((n, 1))
    return X, y, w


def _fit(make_model, X, y, w, X_predict=None):
    """Fit; returns "error" for a clear ValueError/TypeError, "fit" for a finite model that predicts."""
    X_predict = X if X_predict is None else X_predict
    values = np.asarray(X_predict)
    extreme = values.dtype.kind == "f" and bool(np.any(~(np.abs(values) < 1e100)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataConversionWarning)  # y as a column: scikit-learn's warning
        if extreme:
            # Sums of 1e300 overflow, inf - inf is NaN: warnings on the way to a clear error (scikit-learn's
            # finiteness check sums X) or to a model that must still be finite.
            warnings.filterwarnings("ignore", "(overflow|invalid value) encountered", RuntimeWarning)
        try:
            model = make_model().fit(X, y, sample_weight=w)
        except (ValueError, TypeError) as exc:
            assert not type(exc).__module__.startswith("numba"), f"numba error: {exc!r}"
            assert str(exc).strip(), f"{type(exc).__name__} without a message"
            event(f"raised {type(exc).__name__}: {re.sub(r'[0-9]+', 'N', str(exc))[:70]}")
            return "error"
        assert np.isfinite(model.coef_).all() and np.isfinite(model.intercept_).all(), model.coef_
        shape = np.shape(X_predict)
        assert model.n_features_in_ == shape[1] >= 1, f"the fit took X of shape {shape}: it has no features"
        predicted = np.asarray(model.predict(X_predict))
        assert predicted.shape == (shape[0],)
        assert set(np.unique(predicted)) <= set(model.classes_)
    event("fitted")
    return "fit"


# Found by this test: C * sample_weight underflowing to a subnormal cost overflowed 1 / (2 C_i) (now capped).
@_twins(
    "fit_numpy",
    given(_fit_inputs()),
    example((np.zeros((2, 1)), np.array([-1, 1]), np.array([5e-324, 5e-324]))),
)
def test_fit_on_any_small_array_fits_or_raises_a_clear_error(inputs):
    X, y, w = inputs
    _fit(lambda: LinearSVC(max_iter=5, tol=1e-2), X, y, w)


# Found by this test: a Dask X with no columns fitted an intercept-only model; it now raises, as in memory.
@_twins(
    "fit_dask_sbm",
    given(_fit_inputs(), st.integers(1, 12), st.booleans()),
    example((np.zeros((2, 0)), np.array([-1, 1]), None), 1, False),
)
def test_sbm_fit_on_any_small_dask_array_fits_or_raises_a_clear_error(inputs, k, whole_rows):
    X, y, w = inputs
    X = np.asarray(X)
    chunks = (k,) + (-1,) * (X.ndim - 1) if whole_rows else k
    Xd = da.from_array(X, chunks=chunks)
    yd = da.from_array(y, chunks=k)
    wd = None if w is None else da.from_array(w, chunks=k)
    with dask.config.set(scheduler="sync"):
        _fit(lambda: LinearSVC(max_iter=5, tol=1e-2, solver="sbm"), Xd, yd, wd, X_predict=X)


# --- model files -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """``{name: (model, X, file bytes)}``: a binary model; a 3-class one with probabilities and weights;
    a 3-class BudgetedSVC and OnePassSVC (issue 53)."""
    rng = np.random.RandomState(0)
    X = rng.randn(120, 3)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.8)
    folder = tmp_path_factory.mktemp("models")
    models = {
        "binary": LinearSVC(random_state=0).fit(X, (y > 0).astype(int)),
        "three classes": LinearSVC(
            probability=True, class_weight={0: 2.0, 1: 1.0, 2: 0.5}, random_state=0
        ).fit(X, y),
        "budgeted": BudgetedSVC(budget=8, max_iter=2, random_state=0).fit(X, y),
        "onepass": OnePassSVC(lookahead=3, random_state=0).fit(X, y),
    }
    files = {}
    for name, model in models.items():
        model.save(folder / f"{name}.dsvm")
        files[name] = (model, X, (folder / f"{name}.dsvm").read_bytes())
    return files


def _load_or_refuse(tmp_path_factory, data, original, X):
    """Load ``data``: a ValueError naming the file, or a model that predicts exactly as ``original``.

    Damage never gives another model (zip's CRC-32 covers model.json, SHA-256
    every array).  Crafted metadata could describe another valid model on
    purpose, which is tampering and beyond any checksum; the values drawn
    here, with a field's type or range wrong, never do.
    """
    path = tmp_path_factory.getbasetemp() / "fuzz.dsvm"
    path.write_bytes(data)
    try:
        model = load(path)
    except ValueError as exc:
        assert str(path) in str(exc), f"the error does not name the file: {exc}"
        event(f"refused: {re.sub(r'[0-9]+', 'N', str(exc).replace(str(path), 'FILE'))[:60]}")
        return "refused"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # feature names a crafted file may add
        assert np.array_equal(model.classes_, original.classes_)
        np.testing.assert_array_equal(model.decision_function(X), original.decision_function(X))
        if getattr(original, "probability", False):
            np.testing.assert_array_equal(model.predict_proba(X), original.predict_proba(X))
    event("loaded: the same model")
    return "loaded"


MODEL_FILES = ["binary", "three classes", "budgeted", "onepass"]


@st.composite
def _damaged_bytes(draw, data):
    """``data`` with one to three bit flips, byte replacements, insertions, deletions or a truncation."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "flip", "replace", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "replace" and data:
            data[pos] = draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, 0x50, 0x4B])) ^ draw(st.integers(0, 1))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 16))]
        else:
            del data[pos:]
    return bytes(data)


@_twins("model_file_bytes", given(st.sampled_from(MODEL_FILES), st.data()))
def test_a_damaged_model_file_loads_the_same_model_or_raises_value_error(
    tmp_path_factory, model_files, name, data
):
    original, X, saved = model_files[name]
    _load_or_refuse(tmp_path_factory, data.draw(_damaged_bytes(saved)), original, X)


_RAW = "__raw_json__"
# JSON texts a crafted model.json may hold where a value belongs.
_RAW_TEXTS = st.sampled_from([
    "[" * 100_000 + "]" * 100_000, '{"a":' * 5_000 + "1" + "}" * 5_000, "[" * 70 + "]" * 70, "NaN",
    "-Infinity", "1e999", "9" * 5_000, "[1e308, -1e308]", "[1000000000000, 1000000000000]",
])  # fmt: skip
_NAMES = st.sampled_from(
    ["LinearSVC", "<f8", "|O", "coef_", "__pairs__", "__feature_map__", "shape", "dtype"]
)
_JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=8), _NAMES,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), _NAMES), children, max_size=3),
    ),
    max_leaves=10,
)  # fmt: skip


def _json_paths(value, path=()):
    """Every path (keys and indices) into a JSON value, the value's own first."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _json_paths(child, (*path, key))


@st.composite
def _crafted_meta(draw, meta):
    """model.json text of ``meta`` with one value replaced, one key removed or one unknown key added."""
    meta = json.loads(json.dumps(meta))
    section = draw(st.sampled_from(["", "format", "version", "estimator", "params", "attributes", "arrays"]))
    paths = [p for p in _json_paths(meta) if p[:1] == (section,)] if section else [()]
    path = draw(st.sampled_from(paths))
    op = draw(st.sampled_from(["value", "value", "raw", "delete", "add"]))
    if op == "value" or op == "raw" or not path:
        replacement = _RAW if op == "raw" else draw(_JSON_VALUES)
        if path:
            parent = meta
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = replacement
        else:
            meta = replacement
    else:
        parent = meta
        for key in path[:-1]:
            parent = parent[key]
        if op == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(_JSON_VALUES)
        else:
            parent.append(draw(_JSON_VALUES))
    text = json.dumps(meta, allow_nan=True)
    return text.replace(json.dumps(_RAW), draw(_RAW_TEXTS)) if op == "raw" else text


@_twins("model_file_json", given(st.sampled_from(MODEL_FILES), st.data()))
def test_crafted_model_metadata_loads_the_same_model_or_raises_value_error(
    tmp_path_factory, model_files, name, data
):
    original, X, saved = model_files[name]
    with zipfile.ZipFile(io.BytesIO(saved)) as archive:
        members = {member: archive.read(member) for member in archive.namelist()}
    members["model.json"] = data.draw(_crafted_meta(json.loads(members["model.json"])))
    crafted = io.BytesIO()
    with zipfile.ZipFile(crafted, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, content in members.items():
            archive.writestr(member, content)
    _load_or_refuse(tmp_path_factory, crafted.getvalue(), original, X)

"""Files: the files the library writes, a saved model altered before it is loaded again and a
spill whose write fails part-way; each load or fit in a child process.

- ``crafted-model``: a saved model file with a byte flipped, truncated, with
  its model.json rewritten (deep nesting, a value of the wrong type, a bad
  array shape or dtype), replaced by a FIFO, or with an array member
  inflated into a zip bomb; ``dask_streamsvm.load`` reads the batch in one
  child process, under an alarm per file and a memory limit.  Expected: a
  ValueError, or a model that predicts exactly as the original (counted
  apart); anything else fails.
- ``disk-full-spill``: a spilling fit of LIBSVM files (a partition each) whose random partition's
  spill file is larger than a file size limit (``RLIMIT_FSIZE``, ``SIGXFSZ`` ignored): its write
  fails part-way, with a short write or EFBIG, as on a full disk.  In a child process, against a
  fit without a spill on the same files (``deterministic=True``).  Expected: the fit drops the
  spill, says so in one warning and trains the model of the fit without a spill, bit for bit;
  no spill directory left.
"""

import io
import json
import os
import shutil
import signal
import warnings
import zipfile
from pathlib import Path

import numpy as np

from benchmarks.reliability.common import (
    N_FEATURES,
    N_PARTS,
    attempt,
    data,
    fit_solver,
    how_ended,
    in_child,
    limit_memory,
    spills_in,
    vector,
    write_libsvm,
)

# Model files: altered copies of saved models, loaded by one child process (load_crafted) per batch.
ALTERATIONS = {"byte flip": 0.3, "truncation": 0.2, "crafted JSON": 0.3, "FIFO": 0.1, "zip bomb": 0.1}
JSON_CRAFTS = ("deep nesting", "wrong type", "bad shape or dtype")
WRONG_VALUES = (
    None, True, -1, 0, 2**70, 1e308, -1.5, "", "x" * 1000, [], [1, 2, 3], {}, {"a": 1},
    {"__pairs__": 5}, {"__feature_map__": ["Path", {}]},
)  # fmt: skip
BAD_ARRAYS = (
    ("shape", [2**40, 2**40]), ("shape", [2**62, 8]), ("shape", [100_000, 100_000]), ("shape", [-1, 8]),
    ("shape", [1, 8, 1]), ("shape", [0]), ("shape", [1.5, 8]), ("shape", "8"), ("dtype", "|O"),
    ("dtype", "<U1000000"), ("dtype", "|V1000000000"), ("dtype", "<c16"),
)  # fmt: skip
BOMB_BYTES = (2**28, 2**31)
LOAD_ALARM_S = 20  # seconds one load may take in the child before it counts as a hang


def _saved_models(work):
    """Two saved models (binary, three classes) and, beside each, its predictions on :func:`_probe`."""
    from sklearn.exceptions import ConvergenceWarning

    from dask_streamsvm import LinearSVC

    X, y = data()
    saved = {}
    for name, labels in (("binary", y), ("three classes", y + (X[:, 0] > 0.5))):
        path = work / f"{name.replace(' ', '-')}.model"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LinearSVC(random_state=0).fit(X, labels)
        model.save(path)
        outputs = dict(predict=model.predict(_probe()), decision=model.decision_function(_probe()))
        np.savez(path.with_suffix(".npz"), **outputs)
        saved[name] = path
    return saved


def _probe():
    return data(seed=1)[0][:300]


def _rewrite_zip(original, path, name, write):
    """``original`` (a zip file) copied to ``path``, member ``name``'s content written by ``write(file)``."""
    with (
        zipfile.ZipFile(original) as src,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as dst,
    ):
        for info in src.infolist():
            if info.filename != name:
                dst.writestr(info.filename, src.read(info.filename))
                continue
            with dst.open(name, "w", force_zip64=True) as f:
                write(f)


def _zip_bomb(original, size, work):
    """``original`` with ``arrays/coef_.npy`` (its header kept) padded with zeros to ``size`` bytes;
    built once per model and size."""
    path = work / f"bomb-{original.stem}-{size}.zip"
    if not path.exists():
        with zipfile.ZipFile(original) as src:
            member = src.read("arrays/coef_.npy")
        header = member[: len(member) - np.load(io.BytesIO(member)).nbytes]

        def inflate(f):
            f.write(header)
            zeros = bytes(2**24)
            for _ in range(size // len(zeros)):
                f.write(zeros)

        _rewrite_zip(original, path, "arrays/coef_.npy", inflate)
    return path


def _crafted_json(rng, meta):
    """``(model.json text, what was done)``: ``meta`` with one crafted change."""
    craft = JSON_CRAFTS[rng.randint(len(JSON_CRAFTS))]
    if craft == "bad shape or dtype":
        name = sorted(meta["arrays"])[rng.randint(len(meta["arrays"]))]
        key, value = BAD_ARRAYS[rng.randint(len(BAD_ARRAYS))]
        meta["arrays"][name][key] = value
        return json.dumps(meta), f"{craft}: arrays.{name}.{key} = {json.dumps(value)}"
    path, node = [], meta  # a random walk down from the top, stopping at each level with odds 0.3
    while isinstance(node, dict | list) and node and (not path or rng.rand() < 0.7):
        key = list(node)[rng.randint(len(node))] if isinstance(node, dict) else int(rng.randint(len(node)))
        path.append(key)
        parent, node = node, node[key]
    where = ".".join(map(str, path))
    if craft == "deep nesting":
        depth = int(rng.choice([100, 10_000, 1_000_000]))
        parent[path[-1]] = "@@nested@@"
        text = json.dumps(meta).replace('"@@nested@@"', "[" * depth + "]" * depth)
        return text, f"{craft}: {depth} levels at {where}"
    choices = [v for v in WRONG_VALUES if type(v) is not type(node)]
    parent[path[-1]] = choices[rng.randint(len(choices))]
    return json.dumps(meta), f"{craft}: {where} = {json.dumps(parent[path[-1]])[:40]}"


def _alter(rng, alteration, original, path, work):
    """Write ``original`` altered by ``alteration`` to ``path``; say what was done."""
    raw = original.read_bytes()
    if alteration == "byte flip":
        offset, mask = int(rng.randint(len(raw))), int(rng.randint(1, 256))
        flipped = bytearray(raw)
        flipped[offset] ^= mask
        path.write_bytes(bytes(flipped))
        return f"byte {offset} of {len(raw)} xor {mask:#04x}"
    if alteration == "truncation":
        size = int(rng.randint(len(raw)))
        path.write_bytes(raw[:size])
        return f"{size} of {len(raw)} bytes kept"
    if alteration == "FIFO":
        os.mkfifo(path)
        return "a FIFO at the model's path"
    if alteration == "zip bomb":
        size = int(BOMB_BYTES[rng.randint(len(BOMB_BYTES))])
        shutil.copyfile(_zip_bomb(original, size, work), path)
        return f"arrays/coef_.npy inflates to {size} bytes"
    with zipfile.ZipFile(original) as src:
        text, detail = _crafted_json(rng, json.loads(src.read("model.json")))
    _rewrite_zip(original, path, "model.json", lambda f: f.write(text.encode()))
    return detail


class _Hung(BaseException):
    """SIGALRM in the child: a load took longer than LOAD_ALARM_S."""


def _on_alarm(signum, frame):
    raise _Hung


def _load_outcome(path, probe, expected):
    """``(outcome, message)`` of loading ``path`` and predicting ``probe`` (``expected``: the original's)."""
    import dask_streamsvm

    outcome, message, model = attempt(lambda: dask_streamsvm.load(path))
    if model is None:
        return outcome, message

    def same():
        return np.array_equal(model.predict(probe), expected["predict"]) and np.array_equal(
            model.decision_function(probe), expected["decision"]
        )

    outcome, message, equal = attempt(same)
    if outcome != "returned":
        return f"loaded, then predict raised {outcome}", message
    return ("same predictions" if equal else "different model"), None


def load_crafted(jobs):
    """In a child process: load each job's file, and print the outcome of each as a JSON line."""
    import dask_streamsvm  # noqa: F401 - imported before the memory limit

    signal.signal(signal.SIGALRM, _on_alarm)
    probe = _probe()
    limit_memory()
    for job in json.loads(jobs):
        expected = np.load(job["expected"])
        signal.alarm(LOAD_ALARM_S)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcome, message = _load_outcome(job["path"], probe, expected)
        except _Hung:
            outcome, message = "hang (alarm)", None
        finally:
            signal.alarm(0)
        print(json.dumps({"outcome": outcome, "message": (message or "")[:300]}), flush=True)


def trial_crafted_model(rng, solver, work, count):
    """``count`` trials at once (their files are loaded by one child process): a list of records.
    ``solver`` is unused: the models are fitted in memory."""
    work.mkdir(parents=True, exist_ok=True)
    originals = _saved_models(work)
    names, kinds = sorted(originals), list(ALTERATIONS)
    jobs = []
    for t in range(count):
        name = names[rng.randint(len(names))]
        alteration = kinds[rng.choice(len(kinds), p=list(ALTERATIONS.values()))]
        path = work / f"crafted-{t}.model"
        detail = _alter(rng, alteration, originals[name], path, work)
        jobs.append({"model": name, "alteration": alteration, "detail": detail, "path": str(path),
                     "expected": str(originals[name].with_suffix(".npz"))})  # fmt: skip
    outcomes = []
    while len(outcomes) < len(jobs):  # a child that dies loses the file it was on; the rest go on
        returncode, out, err = in_child(
            load_crafted, json.dumps(jobs[len(outcomes) :]), timeout=60 + 2 * LOAD_ALARM_S * len(jobs)
        )
        outcomes += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if len(outcomes) < len(jobs):
            outcomes.append({"outcome": how_ended(returncode), "message": err})
    for job, outcome in zip(jobs, outcomes, strict=True):
        outcome["message"] = outcome["message"].replace(job["path"], "FILE")
    keep = ("model", "alteration", "detail")
    return [{**{k: job[k] for k in keep}, **outcome} for job, outcome in zip(jobs, outcomes, strict=True)]


SMALL_SPILL, LARGE_SPILL = 10_000, 25_000  # about the bytes a partition of 2 (8) values a row spills


def fit_spill_short_write(spec):
    """In a child process: fit ``spec["file"]`` without a spill (the reference), then with one under
    a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails part-way with EFBIG, as a
    full disk's does); print the outcome as a JSON line."""
    import resource

    from dask_streamsvm.io import read_libsvm

    spec = json.loads(spec)
    spill_dir = Path(spec["spill_dir"])

    def fit(**extra):  # deterministic: StreamSVM's asynchronous schedule would differ anyway
        X, y = read_libsvm(spec["files"], n_features=N_FEATURES)
        return fit_solver(spec["solver"], (X, y), deterministic=True, **extra)

    reference = vector(fit(spill=False))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["limit"], resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome, message, model = attempt(lambda: fit(spill=True, spill_dir=str(spill_dir)), OSError)
    said = [str(w.message) for w in caught if "spill" in str(w.message)]
    left, left_bytes = spills_in(spill_dir)
    print(json.dumps({
        "outcome": outcome, "message": (message or "")[:300], "warnings": len(said),
        "warning": said[0][:300] if said else None,
        "same": model is not None and bool(np.array_equal(vector(model), reference)),
        "spill_bytes": None if model is None else model.history_[-1].get("spill_bytes"),
        "spills_left": left, "spill_bytes_left": left_bytes,
    }), flush=True)  # fmt: skip


def trial_disk_full_spill(rng, solver, work):
    """A spill whose write fails part-way, in a random partition: the fit must drop the spill, read
    from the source, train the model of a fit without a spill and say so once."""
    target = int(rng.randint(N_PARTS))
    files = write_libsvm(work / "data", target)
    # A partition of 2 values a row spills SMALL_SPILL bytes, the target's 8 values a row LARGE_SPILL:
    # a limit between them fails the target's write part-way, and no other.
    limit = int(rng.uniform(SMALL_SPILL + 2_000, LARGE_SPILL - 2_000))
    spec = {"files": files, "solver": solver, "limit": limit, "spill_dir": str(work / "spill")}
    returncode, out, err = in_child(fit_spill_short_write, json.dumps(spec), timeout=300)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    result = lines[0] if lines else {"outcome": how_ended(returncode), "message": err}
    return {"solver": solver, "partition": target, "limit": limit, **result}

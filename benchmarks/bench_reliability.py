"""Fault injection: random faults thrown at streaming fits, and what each left behind.

Five kinds of trial, each with its fault at a random place and time (seeded):

- ``kill``: a fit with ``checkpoint_dir`` in a child process gets SIGKILL
  at a random moment; a second process resumes it.  Checked: the resumed
  model is the uninterrupted fit's, bit for bit, and the checkpoint lagged
  the last certified pass by at most one pass.
- ``ctrl-c``: SIGINT from a timer thread at a random moment of a fit.
  Checked: before the first certified pass the KeyboardInterrupt
  propagates; after, ``fit`` returns the model of a certified pass (its
  objective is that pass's primal in the uninterrupted fit's history), with
  a warning; how long after the signal the fit returned; no reader thread
  left.
- ``transient``: random partitions fail with OSError 1 or 2 times on random
  passes.  Checked: the model is the fault-free one, and ``read_retries``
  counts every failure.
- ``permanent``: a random partition raises on a random pass.  Checked: the
  original exception reaches the caller, how long after the fault, and no
  reader thread or temporary file (``alpha_store="disk"``) is left.
- ``bad-value``: a NaN, an infinity or a negative weight at a random row.
  Checked: the error names that partition and row; with
  ``on_invalid="skip"`` the row is dropped and counted.

Run ``python -m benchmarks.bench_reliability [--trials N] [--seed S]``;
results go to ``benchmarks/results/bench_reliability.json`` and
``docs/reliability.md``.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, machine, payload_header, save_json, write_section

RESULTS = ROOT / "benchmarks" / "results" / "bench_reliability.json"
REPORT = ROOT / "docs" / "reliability.md"
MARKER = "## Fault-injection campaign"
N_PARTS, PART_ROWS, N_FEATURES = 12, 200, 8
SOLVERS = ("streamsvm", "sbm", "bm")
NAN = float("nan")

_CHILD = """
import sys, time
import numpy as np
from benchmarks.bench_reliability import collection, params

solver, directory, mode, out = sys.argv[1:5]

def report(record):
    print(record["pass"], flush=True)
    time.sleep(0.05)

from dask_streamsvm import LinearSVC
model = LinearSVC(**params(solver), checkpoint_dir=directory, callbacks=[report])
model.fit(*collection(), resume=mode == "resume")
np.save(out, np.hstack([model.coef_.ravel(), model.intercept_, [model.n_iter_]]))
"""


def data(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(N_PARTS * PART_ROWS, N_FEATURES)
    y = (X @ rng.randn(N_FEATURES) + 0.5 * rng.randn(X.shape[0]) > 0).astype(np.int64)
    return X, y


def collection(read=None, seed=0):
    """The data as a Dask Array whose partition ``i`` is computed by ``read(i, rows)``."""
    import dask
    import dask.array as da

    X, y = data(seed)
    if read is None:
        return da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)
    parts = [
        da.from_delayed(
            dask.delayed(read)(i, X[i * PART_ROWS : (i + 1) * PART_ROWS]), (PART_ROWS, N_FEATURES), X.dtype
        )
        for i in range(N_PARTS)
    ]
    return da.concatenate(parts), da.from_array(y, chunks=PART_ROWS)


def params(solver):
    cache = 30_000 if solver != "bm" else 60_000
    return dict(solver=solver, cache_bytes=cache, tol=1e-6, max_iter=25, random_state=0, inner_iter=3)


def _fit(solver, **extra):
    from sklearn.exceptions import ConvergenceWarning

    from dask_streamsvm import LinearSVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        read = extra.pop("read", None)
        return LinearSVC(**params(solver), **extra).fit(*collection(read))


def _reader_threads():
    deadline = time.time() + 5
    while time.time() < deadline:
        alive = [t for t in threading.enumerate() if t.name == "dask-streamsvm-reader" and t.is_alive()]
        if not alive:
            return 0
        time.sleep(0.02)
    return len(alive)


def _vector(model):
    return np.hstack([model.coef_.ravel(), model.intercept_, [model.n_iter_]])


# -- trials ------------------------------------------------------------------------------------


def trial_kill(rng, solver, reference, work):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = [sys.executable, "-c", _CHILD, solver, str(work / "ck")]
    child = subprocess.Popen([*run, "fresh", str(work / "a.npy")], stdout=subprocess.PIPE, text=True, env=env)
    delay = rng.uniform(0.0, 1.5)
    printed = -1
    for line in child.stdout:
        printed = int(line)
        if printed == 0:
            time.sleep(delay)  # a random moment after the first certified pass
            break
    child.send_signal(signal.SIGKILL)
    printed = max([printed, *(int(line) for line in child.stdout.read().split())])  # what it printed before
    child.stdout.close()
    child.wait(60)
    finished = child.returncode == 0
    saved = -1  # killed before the first checkpoint: the resumed fit starts over
    if (work / "ck" / "checkpoint.zip").exists():
        with zipfile.ZipFile(work / "ck" / "checkpoint.zip") as archive:
            saved = json.loads(archive.read("model.json"))["state"]["current"]
    subprocess.run(
        [*run, "resume", str(work / "b.npy")], check=True, timeout=300, env=env, capture_output=True
    )
    same = bool(np.array_equal(np.load(work / "b.npy"), reference))
    return {
        "solver": solver, "delay_s": delay, "killed": not finished, "last_certified_pass": printed,
        "checkpoint_pass": saved, "same": same,
    }  # fmt: skip


def trial_ctrl_c(rng, solver, reference_history):
    def slow(i, rows):
        time.sleep(0.01)
        return rows

    delay = rng.uniform(0.0, 1.0)
    sent = {}

    def interrupt():
        sent["at"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(delay, interrupt)
    start = time.perf_counter()
    timer.start()
    outcome, certified, ended = "finished first", None, None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = _fit(solver, read=slow)
        ended = time.perf_counter()
        if any("interrupted" in str(w.message) for w in caught):
            outcome = "model of a certified pass"
            primals = [r["primal"] for r in reference_history]
            certified = bool(model.objective_ == primals[model.n_iter_])
    except KeyboardInterrupt:
        ended = time.perf_counter()
        outcome = "KeyboardInterrupt propagated"
    timer.cancel()
    while timer.is_alive():
        try:
            timer.join()
        except KeyboardInterrupt:  # the signal came after fit had returned
            pass
    latency = ended - sent["at"] if "at" in sent and ended >= sent["at"] else None
    return {
        "solver": solver, "delay_s": delay, "outcome": outcome, "certified_model_matches": certified,
        "signal_after_s": sent["at"] - start if "at" in sent else None, "latency_s": latency,
        "reader_threads_left": _reader_threads(),
    }  # fmt: skip


def trial_transient(rng, solver, reference):
    plan = {}
    for p in rng.choice(N_PARTS, size=rng.randint(1, 4), replace=False):
        plan[(int(rng.randint(0, 3)), int(p))] = int(rng.randint(1, 3))  # (read of the partition, failures)
    reads, failed, injected = {}, {}, {"n": 0}
    lock = threading.Lock()

    def flaky(i, rows):
        with lock:
            k = reads.get(i, 0)  # the how-manieth successful read of partition i this is
            if failed.get((k, i), 0) < plan.get((k, i), 0):
                failed[(k, i)] = failed.get((k, i), 0) + 1
                injected["n"] += 1
                raise OSError(5, f"I/O error reading partition {i}")
            reads[i] = k + 1
        return rows

    model = _fit(solver, read=flaky, retries=2)
    counted = model.history_[-1]["read_retries"]
    return {
        "solver": solver, "faults": injected["n"], "counted": counted,
        "same": bool(np.array_equal(_vector(model), reference)),
    }  # fmt: skip


class InjectedFault(RuntimeError):
    pass


def trial_permanent(rng, solver):
    target, on_read = int(rng.randint(N_PARTS)), int(rng.randint(0, 3))
    reads, fault = {}, {}
    lock = threading.Lock()

    def failing(i, rows):
        with lock:
            k = reads.get(i, 0)
            reads[i] = k + 1
        if i == target and k == on_read:
            fault["at"] = time.perf_counter()
            raise InjectedFault(f"partition {i}, read {k}")
        return rows

    temp = Path(tempfile.mkdtemp(prefix="bench-reliability-"))
    old, tempfile.tempdir = tempfile.tempdir, str(temp)
    raised = None
    try:
        _fit(solver, read=failing, alpha_store="disk")
    except InjectedFault as exc:
        raised = exc
    finally:
        tempfile.tempdir = old
    ended = time.perf_counter()
    left = list(temp.iterdir())
    temp.rmdir() if not left else None
    return {
        "solver": solver, "partition": target, "read": on_read, "reached": "at" in fault,
        "original_error": raised is not None, "latency_s": ended - fault["at"] if "at" in fault else None,
        "reader_threads_left": _reader_threads(), "temp_files_left": len(left),
    }  # fmt: skip


def trial_bad_value(rng, solver):
    import dask.array as da

    from dask_streamsvm import LinearSVC

    X, y = data()
    w = np.ones(len(y))
    row, col = int(rng.randint(len(y))), int(rng.randint(N_FEATURES))
    kind = ["nan", "inf", "weight"][rng.randint(3)]
    if kind == "weight":
        w[row] = -1.0
    else:
        X[row, col] = np.nan if kind == "nan" else np.inf
    chunks = PART_ROWS
    args = (da.from_array(X, chunks=chunks), da.from_array(y, chunks=chunks), da.from_array(w, chunks=chunks))
    p, r = divmod(row, PART_ROWS)
    named = False
    try:
        LinearSVC(**params(solver)).fit(*args)
    except ValueError as exc:
        named = bool(re.search(rf"partition {p}, row {r} \(row {row} of the collection\)", str(exc)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearSVC(**params(solver), on_invalid="skip").fit(*args)
    return {"solver": solver, "kind": kind, "named": named, "skipped": model.history_[0]["rows_skipped"]}


# -- the run -----------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_reliability", description=__doc__)
    parser.add_argument("--trials", type=int, default=20, help="trials of each kind (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.RandomState(args.seed)
    start = time.perf_counter()
    references = {s: _fit(s) for s in SOLVERS}
    vectors = {s: _vector(m) for s, m in references.items()}
    trials = {"kill": [], "ctrl-c": [], "transient": [], "permanent": [], "bad-value": []}
    with tempfile.TemporaryDirectory() as tmp:
        for t in range(args.trials):
            solver = SOLVERS[t % len(SOLVERS)]
            work = Path(tmp) / f"kill-{t}"
            work.mkdir()
            trials["kill"].append(trial_kill(rng, solver, vectors[solver], work))
            trials["ctrl-c"].append(trial_ctrl_c(rng, solver, references[solver].history_))
            trials["transient"].append(trial_transient(rng, solver, vectors[solver]))
            trials["permanent"].append(trial_permanent(rng, solver))
            trials["bad-value"].append(trial_bad_value(rng, solver))
            print(f"trial {t + 1}/{args.trials} done ({time.perf_counter() - start:.0f} s)", flush=True)
    payload = {
        **payload_header("bench_reliability", argv),
        "machine": machine(),
        "seed": args.seed,
        "seconds": time.perf_counter() - start,
        "trials": trials,
    }
    save_json(RESULTS, payload)
    write_report(payload)


def _summary(payload):
    t = payload["trials"]
    kill, cc, tr, pe, bv = (t[k] for k in ("kill", "ctrl-c", "transient", "permanent", "bad-value"))
    after = [r for r in cc if r["outcome"] == "model of a certified pass"]
    before = [r for r in cc if r["outcome"] == "KeyboardInterrupt propagated"]
    first_pass = min(
        (r["signal_after_s"] for r in after if r["signal_after_s"] is not None), default=float("nan")
    )
    latencies = [r["latency_s"] for r in cc if r["latency_s"] is not None]
    perm_lat = [r["latency_s"] for r in pe if r["latency_s"] is not None]
    rows = [
        (
            "SIGKILL mid-fit, then `fit(..., resume=True)`",
            len(kill),
            f"{sum(r['same'] for r in kill)} of {len(kill)} resumed models equal the uninterrupted fit "
            f"bit for bit ({sum(r['killed'] for r in kill)} processes were killed before they finished); "
            "the checkpoint was behind the last certified pass by at most "
            f"{max(r['last_certified_pass'] - r['checkpoint_pass'] for r in kill)} pass",
            "none" if all(r["same"] for r in kill) else "SEE JSON",
        ),
        (
            "Ctrl-C (SIGINT from a timer thread)",
            len(cc),
            f"{len(after)} returned a certified pass's model (matching the uninterrupted history: "
            f"{sum(bool(r['certified_model_matches']) for r in after)}), {len(before)} propagated (signals "
            f"sent {_span(before)} s after the start; the earliest that returned a model was sent at "
            f"{first_pass:.2f} s), {len(cc) - len(after) - len(before)} came after the fit ended; "
            "longest stop "
            f"{max(latencies, default=NAN):.2f} s after the signal; reader threads left: "
            f"{sum(r['reader_threads_left'] for r in cc)}",
            "none: the last certified pass is kept",
        ),
        (
            "transient OSError on random reads (retries=2)",
            len(tr),
            f"{sum(r['faults'] for r in tr)} failed reads, {sum(r['counted'] for r in tr)} counted in "
            f"`read_retries`; {sum(r['same'] for r in tr)} of {len(tr)} models equal the fault-free fit",
            "none" if all(r["same"] for r in tr) else "SEE JSON",
        ),
        (
            "permanent error in a random partition's read",
            len(pe),
            f"{sum(r['original_error'] for r in pe)} of {sum(r['reached'] for r in pe)} faults reached "
            f"raised the original exception, at most {max(perm_lat, default=NAN):.3f} s after the fault; "
            f"reader threads left: {sum(r['reader_threads_left'] for r in pe)}, temporary files left: "
            f"{sum(r['temp_files_left'] for r in pe)}",
            "n/a (the fit fails, as it must)",
        ),
        (
            "NaN, inf or negative weight at a random row",
            len(bv),
            f"{sum(r['named'] for r in bv)} of {len(bv)} errors named the partition and row; with "
            f"`on_invalid='skip'` {sum(r['skipped'] == 1 for r in bv)} of {len(bv)} fits dropped and "
            "counted exactly that row",
            "only the row asked to be skipped",
        ),
    ]
    return rows


def _span(trials):
    times = [r["signal_after_s"] for r in trials if r["signal_after_s"] is not None]
    return f"{min(times):.2f}-{max(times):.2f}" if times else "-"


def write_report(payload):
    lines = [
        "",
        f"Command: `{payload['command']}` ({payload['date']}, {payload['machine']['cores']} cores, "
        f"{payload['seconds'] / 60:.1f} min). Each fault is placed at random (seed {payload['seed']}), "
        f"and the solvers rotate over {', '.join(SOLVERS)}; the data are {N_PARTS} partitions of "
        f"{PART_ROWS} rows x {N_FEATURES} features. Raw results: "
        "`benchmarks/results/bench_reliability.json`.",
        "",
        "| fault | trials | what happened | data lost |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in _summary(payload)],
        "",
    ]
    write_section(MARKER, lines, report=REPORT)


if __name__ == "__main__":
    main()

"""Interrupts: a fit stopped from outside by a signal at a random moment (seeded).

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
- ``mid-pass-resume``: a fit with ``checkpoint_dir`` in a child process
  (``LogisticRegression`` with ``solver="streamsvm", deterministic=True``,
  the issue's case, or ``LinearSVC`` with StreamSVM or SBM) kills itself
  with SIGKILL at a random partition's read of a random pass, in the
  middle of that pass; a second process resumes it.  Checked: the resumed
  model (weights, ``n_iter_``) is the uninterrupted fit's, bit for bit.
- ``sigterm``: a spilling fit of LIBSVM files in a child process gets SIGTERM at a random moment
  after its first pass.  Counted: whether it ended by the signal and how soon, the spill
  directories left in its ``spill_dir``, and those left after a next fit in the same directory
  (which removes the spills of processes that are gone).
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
import zipfile

import numpy as np

from benchmarks._common import ROOT
from benchmarks.reliability.common import attempt, fit_solver, reader_threads, spills_in, write_libsvm

_CHILD = """
import sys
import numpy as np
from benchmarks.reliability.common import collection, params
from benchmarks.reliability.interrupts import print_pass

solver, directory, mode, out = sys.argv[1:5]

from dask_streamsvm import LinearSVC
model = LinearSVC(**params(solver), checkpoint_dir=directory, callbacks=[print_pass])
model.fit(*collection(), resume=mode == "resume")
np.save(out, np.hstack([model.coef_.ravel(), model.intercept_, [model.n_iter_]]))
"""

_SIGTERM_CHILD = """
import sys
from benchmarks.reliability.common import N_FEATURES, fit_solver
from benchmarks.reliability.interrupts import print_pass
from dask_streamsvm.io import read_libsvm

solver, files, spill_dir = sys.argv[1:4]

fit_solver(
    solver, read_libsvm(files, n_features=N_FEATURES), spill=True, spill_dir=spill_dir, callbacks=[print_pass]
)
print("finished", flush=True)
"""


_MID_PASS_CHILD = """
import os, signal, sys, warnings
import numpy as np
from benchmarks.reliability.interrupts import mid_pass_model
from benchmarks.reliability.common import collection

case, directory, mode, out, kill_pass, kill_part = sys.argv[1:7]
reads = {}

def read(i, rows):  # X's partitions are read once a pass: the (kill_pass + 1)-th read is that pass's
    reads[i] = reads.get(i, 0) + 1
    if mode == "fresh" and i == int(kill_part) and reads[i] == int(kill_pass) + 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return rows

warnings.simplefilter("ignore")  # an unconverged fit, on purpose
model = mid_pass_model(case, checkpoint_dir=directory)
model.fit(*collection(read), resume=mode == "resume")
np.save(out, np.hstack([model.coef_.ravel(), model.intercept_, [model.n_iter_]]))
"""
MID_PASS_CASES = ("logistic-streamsvm", "streamsvm", "sbm")
MID_PASS_ITER = 8  # passes of every fit (tol=1e-9 is not reached): the kill lands in pass 1 to 8


def mid_pass_model(case, **extra):
    """The estimator of a ``mid-pass-resume`` trial: its fits stop unconverged at ``MID_PASS_ITER``."""
    from dask_streamsvm import LinearSVC, LogisticRegression

    estimator = LogisticRegression if case.startswith("logistic") else LinearSVC
    solver = "sbm" if case == "sbm" else "streamsvm"
    return estimator(
        solver=solver, deterministic=solver == "streamsvm", cache_bytes=1_000, tol=1e-9,
        max_iter=MID_PASS_ITER, random_state=0, **extra,
    )  # fmt: skip


def trial_mid_pass_resume(rng, solver, work):
    from benchmarks.reliability.common import N_PARTS, collection, vector

    case = MID_PASS_CASES[rng.randint(len(MID_PASS_CASES))]
    kill_pass, kill_part = int(rng.randint(1, MID_PASS_ITER + 1)), int(rng.randint(N_PARTS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = vector(mid_pass_model(case).fit(*collection()))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = [sys.executable, "-c", _MID_PASS_CHILD, case, str(work / "ck")]
    point = [str(kill_pass), str(kill_part)]
    killed = subprocess.run([*run, "fresh", str(work / "a.npy"), *point], env=env, capture_output=True)
    saved = -1
    if (work / "ck" / "checkpoint.zip").exists():
        with zipfile.ZipFile(work / "ck" / "checkpoint.zip") as archive:
            saved = json.loads(archive.read("model.json"))["state"]["current"]
    resumed = subprocess.run([*run, "resume", str(work / "b.npy"), *point], env=env, capture_output=True)
    same = resumed.returncode == 0 and bool(np.array_equal(np.load(work / "b.npy"), reference))
    return {
        "case": case, "kill_pass": kill_pass, "kill_partition": kill_part,
        "killed": killed.returncode == -signal.SIGKILL, "checkpoint_pass": saved, "same": same,
        "message": resumed.stderr.decode()[-300:],
    }  # fmt: skip


def print_pass(record):
    """A callback of the fits in the children: print each certified pass, and slow the fit a little."""
    print(record["pass"], flush=True)
    time.sleep(0.05)


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
            model = fit_solver(solver, read=slow)
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
        "reader_threads_left": reader_threads(),
    }  # fmt: skip


def trial_sigterm(rng, solver, work):
    """A spilling fit in a child process gets SIGTERM at a random moment after its first pass: it
    must end (by the signal) and leave no spill directory; a next fit in the same ``spill_dir``
    removes whatever was left by a process that is gone."""
    files = write_libsvm(work / "data")
    spill_dir = work / "spill"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = [sys.executable, "-c", _SIGTERM_CHILD, solver, files, str(spill_dir)]
    child = subprocess.Popen(
        run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    delay = rng.uniform(0.0, 0.5)
    printed, during = [], None
    for line in child.stdout:
        printed.append(line.strip())
        if line.strip() == "0":
            time.sleep(delay)  # a random moment after the first pass
            during = spills_in(spill_dir)[0]  # the spill the signal interrupts
            break
    sent = time.perf_counter()
    child.send_signal(signal.SIGTERM)
    try:
        rest, err = child.communicate(timeout=60)
        ended = time.perf_counter() - sent
    except subprocess.TimeoutExpired:
        child.kill()
        rest, err = child.communicate()
        ended = None
    printed += rest.split()
    left, left_bytes = spills_in(spill_dir)
    outcome, message, _ = attempt(lambda: fit_solver(solver, spill=True, spill_dir=str(spill_dir)))
    return {
        "solver": solver, "delay_s": delay, "finished_first": "finished" in printed,
        "spills_during": during, "returncode": child.returncode, "ended_after_s": ended,
        "spills_left": left, "spill_bytes_left": left_bytes, "next_fit": outcome,
        "spills_left_after_next_fit": spills_in(spill_dir)[0], "stderr": err.strip()[-300:],
    }  # fmt: skip

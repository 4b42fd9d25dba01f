"""Outputs: the paths the library writes to, planted with what must not be written through.

- ``output-path``: the path that ``save``, ``train --model`` or
  ``predict --out`` writes is, before the write, a FIFO with no reader, a
  Unix socket, a symbolic link to a precious file in another directory, or
  a dangling link into another directory; each in a child process
  (``--overwrite`` given, so that only the kind of the path can refuse it),
  killed after ``OUTPUT_TIMEOUT`` s.  Expected: a FIFO or a socket refused
  naming the path and left as it was; a link either refused naming it
  (``--out``) or replaced by the file (a model, which is renamed into
  place); the precious file and the link's other directory untouched;
  nothing hangs.
"""

import json
import os
import socket
import subprocess
import sys
import time

from benchmarks._common import ROOT
from benchmarks.reliability.common import chunked, data, fit_solver, how_ended, in_child

OUTPUT_TIMEOUT = 60  # seconds a child may take (its start and imports included) before it counts as hung
PLANTED = ("FIFO", "socket", "link to a file", "dangling link")
USES = ("save", "train --model", "predict --out")
PRECIOUS = "precious, not to be written over\n"


def save_to(model_path, out):
    """In the child: load ``model_path`` and save it to ``out``; print the outcome as JSON."""
    import dask_streamsvm

    model = dask_streamsvm.load(model_path)
    try:
        model.save(out)
        print(json.dumps({"outcome": "written", "message": ""}), flush=True)
    except Exception as exc:  # noqa: BLE001 - the type is the outcome
        print(json.dumps({"outcome": type(exc).__name__, "message": str(exc)[:300]}), flush=True)


def _plant(kind, path, elsewhere):
    """Put ``kind`` at ``path``; returns what must survive (a socket, kept open, or None)."""
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        return server
    elif kind == "link to a file":
        (elsewhere / "precious.txt").write_text(PRECIOUS)
        path.symlink_to(elsewhere / "precious.txt")
    else:
        path.symlink_to(elsewhere / "created-through-the-link")
    return None


def _model_and_table(work):
    """A model file and a CSV table of :func:`data` the commands can read."""
    from dask_streamsvm import LinearSVC

    X, y = data()
    model = fit_solver("sbm", chunked(X, y))
    path = work / "trained.model"
    LinearSVC.save(model, path)
    table = work / "data.csv"
    columns = ",".join(f"f{j}" for j in range(X.shape[1]))
    rows = "\n".join(
        ",".join([*map(repr, map(float, x)), str(int(label))]) for x, label in zip(X, y, strict=True)
    )
    table.write_text(f"{columns},label\n{rows}\n")
    return path, table


def trial_output_path(rng, solver, work):
    """One output path planted with a FIFO, a socket or a link, written by one use in a child."""
    kind, use = PLANTED[rng.randint(len(PLANTED))], USES[rng.randint(len(USES))]
    model, table = _model_and_table(work)
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    suffix = {"save": ".model", "train --model": ".model", "predict --out": ".csv"}
    out = work / f"output{suffix[use]}"
    held = _plant(kind, out, elsewhere)
    mode = os.lstat(out).st_mode
    start = time.perf_counter()
    try:
        if use == "save":
            returncode, stdout, stderr = in_child(save_to, str(model), str(out), timeout=OUTPUT_TIMEOUT)
            lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
            result = lines[0] if lines else {"outcome": how_ended(returncode), "message": stderr}
        else:
            argv = {
                "train --model": ["train", table, "--label", "label", "--model", out, "--quiet"],
                "predict --out": ["predict", model, table, "--label", "label", "--out", out],
            }[use]
            command = [sys.executable, "-m", "dask_streamsvm", *map(str, argv), "--overwrite"]
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=OUTPUT_TIMEOUT, env=env
                )
                status = "usage error (exit 2)" if done.returncode == 2 else how_ended(done.returncode)
                result = {"outcome": "written" if done.returncode == 0 else status,
                          "message": done.stderr.strip()[-300:]}  # fmt: skip
            except subprocess.TimeoutExpired:
                result = {"outcome": how_ended(None), "message": ""}
    finally:
        if held is not None:
            held.close()
    seconds = time.perf_counter() - start
    named = str(out) in result["message"] or out.name in result["message"]
    refused = result["outcome"] in ("ValueError", "usage error (exit 2)") and named
    left = os.path.lexists(out) and os.lstat(out).st_mode == mode  # the planted thing, as it was
    precious = elsewhere / "precious.txt"
    untouched = (not precious.exists() or precious.read_text() == PRECIOUS) and sorted(
        p.name for p in elsewhere.iterdir()
    ) == (["precious.txt"] if kind == "link to a file" else [])
    replaced = result["outcome"] == "written" and out.is_file() and not out.is_symlink()
    if kind in ("FIFO", "socket"):
        safe = refused and left
    else:  # a link: refused and left, or replaced by the file (never written through)
        safe = (refused and left) or (replaced and use in ("save", "train --model"))
    return {
        "kind": kind, "use": use, "seconds": seconds, "refused": refused, "replaced": replaced,
        "left": left, "elsewhere_untouched": untouched, "safe": safe and untouched, **result,
    }  # fmt: skip

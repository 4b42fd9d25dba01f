"""What every benchmark shares: paths, the real datasets, the results file."""

import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "benchmarks.md"
N_FEATURES = {"a9a": 123, "w8a": 300, "ijcnn1": 22}


def data_dir():
    """``$DASK_STREAMSVM_DATA`` or the ``shared/data`` folder beside the checkout."""
    env = os.environ.get("DASK_STREAMSVM_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


def payload_header(module, argv):
    """The command that produced a result and when."""
    args = argv if argv is not None else sys.argv[1:]
    return {
        "command": f"python -m benchmarks.{module} {' '.join(args)}".rstrip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def run_header(module, argv):
    """:func:`payload_header` with the load average at the start, the commit checked out and
    :func:`machine`."""
    payload = payload_header(module, argv)
    payload["load"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    payload["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    payload["machine"] = machine()
    return payload


def save_json(path, payload):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2))


def results_path(path, busy):
    """Where a run's JSON goes: ``path``, or beside it ``<stem>_busy.json`` for a run beside busy
    processes (its quiet run's results kept)."""
    return path.with_name(f"{path.stem}_busy{path.suffix}") if busy else path


def write_section(marker, lines, report=REPORT):
    """Replace the ``marker`` section of ``report`` (up to the next ``## ``) with ``lines``."""
    text = report.read_text() if report.exists() else "# Benchmarks\n"
    body = "\n".join([marker, *lines])
    if marker in text:
        before, after = text.split(marker, 1)
        rest = after.split("\n## ", 1)
        text = before + body + ("\n## " + rest[1] if len(rest) > 1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    report.write_text(text)


def section_lines(marker, report=REPORT):
    """The lines of the ``marker`` section of ``report`` after its heading (none if it has none): what
    a run beside busy processes appends its table to."""
    text = report.read_text() if report.exists() else ""
    if marker not in text:
        return []
    return text.split(marker, 1)[1].split("\n## ", 1)[0].rstrip("\n").split("\n")[1:]


def machine():
    """Versions and hardware of the run, for the results files."""
    import dask
    import numba
    import scipy
    import sklearn

    import dask_streamsvm

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "dask": dask.__version__,
        "numba": numba.__version__,
        "dask_streamsvm": dask_streamsvm.__version__,
    }


def peak_rss():
    """This process's peak resident memory in bytes (Linux VmHWM).

    Not ``ru_maxrss``: Linux carries that across ``exec`` from the parent, so a child started by a
    parent that once held the data would report the parent's peak.
    """
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1]) * 1024


# The environment this process started with: a LocalCluster's nannies set OMP_NUM_THREADS=1 (and
# MKL's, OpenBLAS's) in the process that starts them, for their workers, and leave them set, so that
# a child started afterwards would run BLAS on one thread where a user's fresh process does not.
ENV_AT_START = dict(os.environ)


def run_child(module, task, spec, env=None, timeout=None):
    """``child_<task>(spec)`` of ``benchmarks.<module>`` in a fresh interpreter (``env``: its
    environment, :data:`ENV_AT_START` after a LocalCluster; None: this process's; ``timeout``: the
    seconds it may take, else it is killed and :class:`subprocess.TimeoutExpired` raised): its dict, with
    the process's peak RSS (VmHWM, ``peak_rss_bytes``) and ``ru_maxrss`` beside it (which Linux
    carries over from the parent process across ``exec``)."""
    code = (
        "import json, resource\n"
        "from benchmarks._common import peak_rss\n"
        f"from benchmarks.{module} import child_{task}\n"
        f"spec = json.loads({json.dumps(json.dumps(spec))})\n"
        f"out = child_{task}(spec)\n"
        "out['peak_rss_bytes'] = peak_rss()\n"
        "out['ru_maxrss_bytes'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024\n"
        "print('RESULT ' + json.dumps(out))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False, env=env,
        timeout=timeout,
    )  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"child {task} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(lines[-1][len("RESULT ") :])


def machine_words(payload):
    """The cores and versions of a results file's ``machine`` record, as a report's sentence."""
    m = payload.get("machine", {})
    versions = f"scikit-learn {m.get('scikit-learn', '?')}, numba {m.get('numba', '?')}"
    return f"{m.get('cores', '?')} cores, {versions}."


@contextlib.contextmanager
def beside_busy(n):
    """``n`` busy processes (``python -c "while True: pass"``) running for the ``with`` block."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for process in busy:
            process.kill()


def timed_children(module, specs, busy_levels, timeout):
    """``child_fit(spec)`` of ``benchmarks.<module>`` for each of ``specs`` in a fresh interpreter
    (:func:`run_child`), beside each of ``busy_levels`` busy processes in turn: the records, each
    the spec, its result (``{"seconds": None}`` past ``timeout`` seconds), ``busy`` and the load."""
    records = []
    for busy in busy_levels:
        with beside_busy(busy):
            for spec in specs:
                load = round(os.getloadavg()[0], 2)
                try:
                    out = run_child(module, "fit", spec, timeout=timeout)
                except subprocess.TimeoutExpired:
                    out = {"seconds": None}
                records.append({**spec, **out, "busy": busy, "load": load})
                print(f"busy {busy} {spec}: {out}", flush=True)
    return records

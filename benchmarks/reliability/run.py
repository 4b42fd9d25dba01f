"""The campaign: every kind's trials, the solvers rotating over them, then the results file and the
report.

Run ``python -m benchmarks.bench_reliability [--kinds KIND ...] [--trials N]
[--seed S] [--no-write]`` (or ``python -m benchmarks.reliability``, the same).  Each kind runs its
default number of trials (:data:`KINDS`: 20 for kill, ctrl-c, transient, permanent and bad-value,
10 for the others but 50 for the cheap ``crafted-model`` and 8 for ``fifo-input``), or ``N`` each
with ``--trials``; each kind draws from a random stream of its own (seed and kind), so its trials do
not depend on which other kinds run.  Results go to
``benchmarks/results/bench_reliability.json`` and a section of
``docs/reliability.md`` with a row for each kind run (so run all kinds for
the docs); ``--no-write`` writes neither, and the table is printed either
way.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import reliability
from benchmarks._common import ROOT, machine, payload_header, save_json
from benchmarks.reliability import cluster, data_changes, files, inputs, interrupts, outputs, reads
from benchmarks.reliability.common import SOLVERS, fit_solver, vector
from benchmarks.reliability.report import table, write_report

RESULTS = ROOT / "benchmarks" / "results" / "bench_reliability.json"
# The help: what the harness is, each family's faults and checks, and how to run it.
DESCRIPTION = "\n\n".join(
    m.__doc__ for m in (reliability, interrupts, reads, data_changes, inputs, files, outputs, cluster)
)
DESCRIPTION += "\n\n" + __doc__

KINDS = {  # fault kind: default number of trials
    "kill": 20, "ctrl-c": 20, "transient": 20, "permanent": 20, "bad-value": 20, "hung": 10,
    "changed-between-reads": 10, "changed-under-resume": 10, "failed-refit": 10, "bad-csr": 10,
    "crafted-model": 50, "changed-between-primal-reads": 10, "disk-full-spill": 10, "fifo-input": 8,
    "sigterm": 10, "output-path": 10, "mid-pass-resume": 10, "cluster-changed-data": 10,
    "no-worker": 10,
}  # fmt: skip


def _trial(kind, rng, solver, work, reference):
    """One trial of ``kind``; ``reference(solver)`` is the fault-free fit."""
    if kind == "kill":
        return interrupts.trial_kill(rng, solver, vector(reference(solver)), work)
    if kind == "ctrl-c":
        return interrupts.trial_ctrl_c(rng, solver, reference(solver).history_)
    if kind == "transient":
        return reads.trial_transient(rng, solver, vector(reference(solver)))
    if kind == "changed-under-resume":
        return data_changes.trial_changed_under_resume(rng, solver, vector(reference(solver)), work)
    if kind == "bad-csr":
        return inputs.trial_bad_csr(rng, "sbm")
    if kind in (
        "disk-full-spill",
        "fifo-input",
        "sigterm",
        "output-path",
        "mid-pass-resume",
        "no-worker",
        "cluster-changed-data",
    ):
        trial = {
            "disk-full-spill": files.trial_disk_full_spill, "fifo-input": inputs.trial_fifo_input,
            "sigterm": interrupts.trial_sigterm, "output-path": outputs.trial_output_path,
            "mid-pass-resume": interrupts.trial_mid_pass_resume, "no-worker": cluster.trial_no_worker,
            "cluster-changed-data": cluster.trial_cluster_changed_data,
        }[kind]  # fmt: skip
        return trial(rng, solver, work)
    trial = {
        "permanent": reads.trial_permanent, "bad-value": inputs.trial_bad_value, "hung": reads.trial_hung,
        "changed-between-reads": data_changes.trial_changed_between_reads,
        "failed-refit": reads.trial_failed_refit,
        "changed-between-primal-reads": data_changes.trial_changed_between_primal_reads,
    }[kind]  # fmt: skip
    return trial(rng, solver)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_reliability", description=DESCRIPTION)
    parser.add_argument(
        "--kinds", nargs="+", choices=list(KINDS), default=list(KINDS), metavar="KIND",
        help=f"the fault kinds to run (default all: {', '.join(KINDS)})",
    )  # fmt: skip
    parser.add_argument(
        "--trials", type=int, default=None,
        help="trials of each kind (default: 20 each of kill, ctrl-c, transient, permanent, bad-value; "
        "50 of crafted-model; 8 of fifo-input; 10 of the others)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="write neither the results file nor the docs")
    args = parser.parse_args(argv)
    kinds = [k for k in KINDS if k in args.kinds]
    counts = {k: KINDS[k] if args.trials is None else args.trials for k in kinds}
    rngs = {k: np.random.RandomState([args.seed, list(KINDS).index(k)]) for k in kinds}
    start = time.perf_counter()
    references = {}

    def reference(solver):
        if solver not in references:
            references[solver] = fit_solver(solver)
        return references[solver]

    trials = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        if "crafted-model" in kinds:
            trials["crafted-model"] = files.trial_crafted_model(
                rngs["crafted-model"], None, Path(tmp) / "models", counts["crafted-model"]
            )
            print(f"crafted-model done ({time.perf_counter() - start:.0f} s)", flush=True)
        for t in range(max((n for k, n in counts.items() if k != "crafted-model"), default=0)):
            solver = SOLVERS[t % len(SOLVERS)]
            for kind in kinds:
                if kind != "crafted-model" and t < counts[kind]:
                    work = Path(tmp) / f"{kind}-{t}"
                    work.mkdir()
                    trials[kind].append(_trial(kind, rngs[kind], solver, work, reference))
            print(f"trial {t + 1} done ({time.perf_counter() - start:.0f} s)", flush=True)
    payload = {
        **payload_header("bench_reliability", argv),
        "machine": machine(),
        "seed": args.seed,
        "seconds": time.perf_counter() - start,
        "trials": trials,
    }
    print("\n".join(table(payload)))
    if not args.no_write:
        save_json(RESULTS, payload)
        write_report(payload)

"""The campaign's report: a row (fault, trials, what happened, data lost) for each kind run, printed
as a Markdown table and written as the ``## Fault-injection campaign`` section of
``docs/reliability.md``."""

import signal

from benchmarks._common import ROOT, write_section
from benchmarks.reliability.cluster import NO_WORKER_TIMEOUT
from benchmarks.reliability.common import N_FEATURES, N_PARTS, PART_ROWS, SOLVERS
from benchmarks.reliability.inputs import CSR_FEATURES, CSR_PARTS, CSR_ROWS, FIFO_TIMEOUT
from benchmarks.reliability.outputs import OUTPUT_TIMEOUT
from benchmarks.reliability.reads import READ_TIMEOUT

REPORT = ROOT / "docs" / "reliability.md"
MARKER = "## Fault-injection campaign"
NAN = float("nan")


def _tally(values):
    """``"ValueError 8, accepted 2"``: how often each value occurs, the most frequent first."""
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{v} {n}" for v, n in sorted(counts.items(), key=lambda item: -item[1])) or "-"


def _by(records, key, describe):
    """``"a: ...; b: ..."``: ``describe(group)`` of the records with each value of ``key``, sorted."""
    groups = {}
    for r in records:
        groups.setdefault(r[key], []).append(r)
    return "; ".join(f"{value}: {describe(group)}" for value, group in sorted(groups.items()))


def _lost(failures, what):
    return "none" if not failures else f"{what} ({failures} trials; see the JSON)"


def _rows_kill(kill):
    return [(
        "SIGKILL mid-fit, then `fit(..., resume=True)`",
        len(kill),
        f"{sum(r['same'] for r in kill)} of {len(kill)} resumed models equal the uninterrupted fit "
        f"bit for bit ({sum(r['killed'] for r in kill)} processes were killed before they finished); "
        "the checkpoint was behind the last certified pass by at most "
        f"{max((r['last_certified_pass'] - r['checkpoint_pass'] for r in kill), default=0)} pass",
        "none" if all(r["same"] for r in kill) else "SEE JSON",
    )]  # fmt: skip


def _rows_ctrl_c(cc):
    after = [r for r in cc if r["outcome"] == "model of a certified pass"]
    before = [r for r in cc if r["outcome"] == "KeyboardInterrupt propagated"]
    first_pass = min(
        (r["signal_after_s"] for r in after if r["signal_after_s"] is not None), default=float("nan")
    )
    latencies = [r["latency_s"] for r in cc if r["latency_s"] is not None]
    return [(
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
    )]  # fmt: skip


def _rows_transient(tr):
    return [(
        "transient OSError on random reads (retries=2)",
        len(tr),
        f"{sum(r['faults'] for r in tr)} failed reads, {sum(r['counted'] for r in tr)} counted in "
        f"`read_retries`; {sum(r['same'] for r in tr)} of {len(tr)} models equal the fault-free fit",
        "none" if all(r["same"] for r in tr) else "SEE JSON",
    )]  # fmt: skip


def _rows_permanent(pe):
    perm_lat = [r["latency_s"] for r in pe if r["latency_s"] is not None]
    return [(
        "permanent error in a random partition's read",
        len(pe),
        f"{sum(r['original_error'] for r in pe)} of {sum(r['reached'] for r in pe)} faults reached "
        f"raised the original exception, at most {max(perm_lat, default=NAN):.3f} s after the fault; "
        f"reader threads left: {sum(r['reader_threads_left'] for r in pe)}, temporary files left: "
        f"{sum(r['temp_files_left'] for r in pe)}",
        "n/a (the fit fails, as it must)",
    )]  # fmt: skip


def _rows_bad_value(bv):
    return [(
        "NaN, inf or negative weight at a random row",
        len(bv),
        f"{sum(r['named'] for r in bv)} of {len(bv)} errors named the partition and row; with "
        f"`on_invalid='skip'` {sum(r['skipped'] == 1 for r in bv)} of {len(bv)} fits dropped and "
        "counted exactly that row",
        "only the row asked to be skipped",
    )]  # fmt: skip


def _rows_hung(hu):
    timed = [r for r in hu if r["outcome"] == "TimeoutError"]
    threads = [r["reader_threads_left"] + r["read_threads_left"] for r in hu]
    good = sum(r["named"] and r["returned_while_blocked"] for r in timed) == len(hu) and not any(threads)
    delays = [r["after_timeout_s"] for r in timed if r["after_timeout_s"] is not None]
    return [(
        f"hung partition read (`read_timeout={READ_TIMEOUT}`)",
        len(hu),
        f"{sum(r['named'] for r in timed)} of {len(hu)} raised TimeoutError naming the partition "
        f"({_tally(r['during'] for r in timed)}), {sum(r['returned_while_blocked'] for r in timed)} while "
        f"the read was still blocked, {min(delays, default=NAN):.2f}-{max(delays, default=NAN):.2f} s "
        "after the timeout (from the start of the hung read); reader threads left: "
        f"{sum(r['reader_threads_left'] for r in hu)}, read threads left once the read was released: "
        f"{sum(r['read_threads_left'] for r in hu)}; outcomes: {_tally(r['outcome'] for r in hu)}",
        "n/a (the fit fails, as it must)" if good else "SEE JSON",
    )]  # fmt: skip


def _rows_changed_between_reads(cb):
    reached = [r for r in cb if r["changed_reads"]]
    false = sum(r["false_certificate"] for r in cb)
    by_change = _by(reached, "change", lambda group: f"{sum(r['detected'] for r in group)}/{len(group)}")
    return [(
        "a partition's rows change between reads (reordered, labels flipped, values scaled)",
        len(cb),
        f"{sum(r['detected'] for r in reached)} of {len(reached)} changes read by the fit were detected "
        f"(ValueError naming the partition; {by_change}); {false} fits returned a model after a changed "
        f"read; outcomes: {_tally(r['outcome'] for r in cb)}",
        "none" if not false else f"false certificate ({false} fits)",
    )]  # fmt: skip


def _rows_changed_under_resume(cr):
    false = sum(r["outcome"] == "returned" for r in cr)
    return [(
        "`resume=True` on changed data of the same layout (labels flipped, rows reordered)",
        len(cr),
        f"{sum(r['refused'] for r in cr)} of {len(cr)} resumes refused, naming the partition "
        f"(outcomes: {_tally(r['outcome'] for r in cr)}); control, resumed on the same data: "
        f"{sum(r['control_outcome'] == 'returned' for r in cr)} of {len(cr)} fitted, "
        f"{sum(r['control_same'] for r in cr)} equal to the uninterrupted fit bit for bit (the first fits "
        f"stopped unconverged after 1-3 passes: {sum(r['unconverged'] for r in cr)} of {len(cr)})",
        "none" if not false else f"false certificate ({false} fits)",
    )]  # fmt: skip


def _rows_failed_refit(fr):
    reached = [r for r in fr if r["reached"]]
    whole = [r for r in reached if r["outcome"] == "InjectedFault" and not r["attributes_replaced"]]
    mixed = sum(bool(r["attributes_replaced"]) or not r["same_predictions"] for r in reached)
    return [(
        "a refit on other data fails part-way (a partition raises)",
        len(fr),
        f"{sum(r['outcome'] == 'InjectedFault' for r in reached)} of {len(reached)} refits that met the "
        f"fault raised it; {len(whole)} left every fitted attribute the same object, "
        f"{sum(r['same_predictions'] for r in reached)} predict as before (other data: "
        f"{_tally(r['change'] for r in reached)})",
        _lost(mixed, "a mixed model"),
    )]  # fmt: skip


def _rows_bad_csr(bc):
    rows = []
    for mode, label in (("memory", "in memory, `LinearSVC().fit`"), ("dask", "a Dask partition, sbm")):
        outcomes = [r[mode]["outcome"] for r in bc]
        named = sum(r[mode].get("named", False) for r in bc)
        accepted = outcomes.count("accepted")
        crashed = sum(o.startswith(("crash", "hang")) for o in outcomes)
        lost = [f"a model of corrupt data ({accepted})"] * bool(accepted)
        lost += [f"the process ({crashed})"] * bool(crashed)
        rows.append((
            f"malformed CSR matrix ({label}; each fit in a child process)",
            len(bc),
            f"outcomes: {_tally(outcomes)}; {named} errors named the row"
            f"{' and partition' if mode == 'dask' else ''}; flaws: {_tally(r['flaw'] for r in bc)}",
            ", ".join(lost) or ("none" if outcomes.count("ValueError") == len(bc) else "SEE JSON"),
        ))  # fmt: skip
    return rows


def _rows_crafted_model(cm):
    fine = ("ValueError", "same predictions")
    failures = sum(r["outcome"] not in fine for r in cm)
    by_alteration = _by(cm, "alteration", lambda group: _tally(r["outcome"] for r in group))
    return [(
        "altered model file, then `dask_streamsvm.load` (one child process, an alarm per file)",
        len(cm),
        f"outcomes: {_tally(r['outcome'] for r in cm)} ({by_alteration})",
        _lost(failures, "neither a ValueError nor the original model"),
    )]  # fmt: skip


def _changed_data_row(fault, records, key):
    """The row of a changed-data kind: the changes read by the fit that were detected, by ``key``."""
    reached = [r for r in records if r["changed_reads"]]
    false = sum(r["false_certificate"] for r in records)
    by = _by(reached, key, lambda group: f"{sum(r['detected'] for r in group)}/{len(group)}")
    return (
        fault,
        len(records),
        f"{sum(r['detected'] for r in reached)} of {len(reached)} changes read by the fit were detected "
        f"(ValueError naming the partition; {by or '-'}); {false} fits returned a model after a "
        f"changed read; outcomes: {_tally(r['outcome'] for r in records)}",
        "none" if not false else f"false certificate ({false} fits)",
    )


def _rows_changed_between_primal_reads(cp):
    fault = (
        "`dual=False`: a partition's rows change between the primal solver's reads (reordered, labels "
        "flipped, values scaled, odd rows 5x)"
    )
    return [_changed_data_row(fault, cp, "change")]


def _rows_disk_full_spill(ds):
    stepped = [r for r in ds if r["outcome"] == "returned" and r.get("warnings")]
    same = sum(bool(r.get("same")) for r in stepped)
    failed = [r for r in ds if r["outcome"] != "returned"]
    left = sum(r.get("spills_left") or 0 for r in ds)
    return [(
        "a spill write fails part-way in a random partition (a file size limit: a short write, EFBIG, "
        "as a full disk's; each fit in a child process)",
        len(ds),
        f"outcomes: {_tally(r['outcome'] for r in ds)}; {len(stepped)} fits dropped the spill and said "
        f"so ({sum(r['warnings'] == 1 for r in stepped)} in exactly one warning), {same} of them trained "
        f"the model of a fit without a spill bit for bit; spill directories left: {left}",
        "none" if not failed and same == len(ds) else _lost(len(failed), "the fit") if failed else "SEE JSON",
    )]  # fmt: skip


def _rows_fifo_input(fi):
    hung = [r for r in fi if r["outcome"].startswith("hang")]
    by_use = _by(fi, "use", lambda group: _tally(r["outcome"] for r in group))
    slowest = max((r["seconds"] for r in fi if not r["outcome"].startswith("hang")), default=NAN)
    return [(
        f"a FIFO with no writer as the data input (`fit(path)`, `train`, `predict`, `evaluate`; a child "
        f"process, killed after {FIFO_TIMEOUT} s)",
        len(fi),
        f"{sum(r['refused'] for r in fi)} of {len(fi)} refused naming the FIFO ({by_use}); the slowest "
        f"answer took {slowest:.1f} s (the child's start included)",
        "none" if not hung else f"a hung command ({len(hung)} trials)",
    )]  # fmt: skip


def _rows_sigterm(st):
    hit = [r for r in st if not r["finished_first"]]
    by_signal = sum(r["returncode"] == -signal.SIGTERM for r in hit)
    ended = [r["ended_after_s"] for r in hit if r["ended_after_s"] is not None]
    left = sum(r["spills_left"] for r in hit)
    after = sum(r["spills_left_after_next_fit"] for r in st)
    spilling = sum(bool(r["spills_during"]) for r in hit)
    return [(
        "SIGTERM mid-fit with a spill (a child process, a random moment after its first pass)",
        len(st),
        f"{by_signal} of {len(hit)} processes signalled mid-fit ({spilling} with a spill directory at "
        "that moment) ended by the signal, at most "
        f"{max(ended, default=NAN):.2f} s after it ({len(st) - len(hit)} finished first; exit statuses: "
        f"{_tally(r['returncode'] for r in hit)}); spill directories left: {left} "
        f"({sum(r['spill_bytes_left'] for r in hit):,} bytes); after the next fit in the same "
        f"`spill_dir`: {after}",
        "none" if not left else f"{left} spill directories until the next fit",
    )]  # fmt: skip


def _rows_output_path(op):
    hung = [r for r in op if r["outcome"].startswith("hang")]
    by_kind = _by(op, "kind", lambda group: _by(group, "use", lambda g: _tally(r["outcome"] for r in g)))
    return [(
        "an output path planted with a FIFO, a socket or a symbolic link (`save`, `train --model`, "
        f"`predict --out`, `--overwrite` given; a child process, killed after {OUTPUT_TIMEOUT} s)",
        len(op),
        f"{sum(r['safe'] for r in op)} of {len(op)} safe: FIFOs and sockets refused naming the path and "
        f"left as they were, links refused or replaced by the model file, never written through "
        f"({by_kind}); the file a link pointed to untouched in {sum(r['elsewhere_untouched'] for r in op)}",
        "none" if all(r["safe"] for r in op) and not hung else "SEE JSON",
    )]  # fmt: skip


def _rows_mid_pass_resume(mp):
    by_case = _by(mp, "case", lambda group: f"{sum(r['same'] for r in group)}/{len(group)}")
    return [(
        "SIGKILL in the middle of a pass (at a random partition's read of a random pass, from inside "
        "the fit, in a child process), then `fit(..., resume=True)` in another",
        len(mp),
        f"{sum(r['same'] for r in mp)} of {len(mp)} resumed models equal the uninterrupted fit bit for "
        f"bit ({by_case}); {sum(r['killed'] for r in mp)} processes were killed by the signal",
        "none" if all(r["same"] for r in mp) else "SEE JSON",
    )]  # fmt: skip


def _rows_cluster_changed_data(cc):
    fault = (
        "on a LocalCluster, a partition's rows change between reads (reordered, labels flipped, values "
        "scaled, odd rows 5x)"
    )
    return [_changed_data_row(fault, cc, "method")]


def _rows_no_worker(nw):
    hung = [r for r in nw if r["outcome"].startswith("hang")]
    seconds = [r["seconds"] for r in nw if r["seconds"] is not None and r["named"]]
    by_call = _by(nw, "call", lambda group: _tally(r["outcome"] for r in group))
    return [(
        "a cluster with no live worker (started with none, or emptied after a fit), then `read_libsvm` "
        f"of a glob or a fit (a child process, killed after {NO_WORKER_TIMEOUT} s)",
        len(nw),
        f"{sum(r['named'] for r in nw)} of {len(nw)} raised the documented error ({by_call}); in "
        f"{min(seconds, default=NAN):.1f}-{max(seconds, default=NAN):.1f} s",
        "none" if not hung else f"a hung call ({len(hung)} trials)",
    )]  # fmt: skip


ROWS = {  # fault kind: its rows in the report
    "kill": _rows_kill, "ctrl-c": _rows_ctrl_c, "transient": _rows_transient, "permanent": _rows_permanent,
    "bad-value": _rows_bad_value, "hung": _rows_hung, "changed-between-reads": _rows_changed_between_reads,
    "changed-under-resume": _rows_changed_under_resume, "failed-refit": _rows_failed_refit,
    "bad-csr": _rows_bad_csr, "crafted-model": _rows_crafted_model,
    "changed-between-primal-reads": _rows_changed_between_primal_reads,
    "disk-full-spill": _rows_disk_full_spill, "fifo-input": _rows_fifo_input, "sigterm": _rows_sigterm,
    "output-path": _rows_output_path, "mid-pass-resume": _rows_mid_pass_resume,
    "cluster-changed-data": _rows_cluster_changed_data, "no-worker": _rows_no_worker,
}  # fmt: skip


def _summary(payload):
    """The report's rows, ``(fault, trials, what happened, data lost)``, for the kinds in ``payload``."""
    rows = []
    for kind, results in payload["trials"].items():
        rows += ROWS[kind](results) if results else []
    return rows


def _span(trials):
    times = [r["signal_after_s"] for r in trials if r["signal_after_s"] is not None]
    return f"{min(times):.2f}-{max(times):.2f}" if times else "-"


def table(payload):
    return [
        "| fault | trials | what happened | data lost |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in _summary(payload)],
    ]


def write_report(payload):
    lines = [
        "",
        f"Command: `{payload['command']}` ({payload['date']}, {payload['machine']['cores']} cores, "
        f"{payload['seconds'] / 60:.1f} min). Each fault is placed at random (seed {payload['seed']}), "
        f"and the solvers rotate over {', '.join(SOLVERS)}; the data are {N_PARTS} partitions of "
        f"{PART_ROWS} rows x {N_FEATURES} features ({CSR_PARTS} of {CSR_ROWS} x {CSR_FEATURES} for the "
        f"malformed CSR matrices; for the spill and SIGTERM trials the same rows as {N_PARTS} LIBSVM files). "
        "Raw results: `benchmarks/results/bench_reliability.json`.",
        "",
        *table(payload),
        "",
    ]
    write_section(MARKER, lines, report=REPORT)

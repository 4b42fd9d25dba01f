"""Fault injection: random faults thrown at streaming fits, and what each left behind.  Each fault
kind is a trial with its fault at a random place and time (seeded), and the kinds come in families,
a module each: ``interrupts`` (SIGKILL then resume, Ctrl-C, SIGTERM during a spill), ``reads`` (a
partition's read failing transiently, permanently, by hanging, or in the middle of a refit),
``data_changes`` (a partition changed between reads, under a resume, or between the primal solver's
reads), ``inputs`` (a bad value, a malformed CSR matrix, a FIFO as the data input) and ``files`` (a
crafted model file, a spill write failing as on a full disk); ``common`` holds what they share,
``run`` the campaign (``python -m benchmarks.bench_reliability``, or ``python -m
benchmarks.reliability``) and ``report`` its table in ``docs/reliability.md``.  The kinds came in
three rounds: kill, ctrl-c, transient, permanent and bad-value; then, for the guarantees of the
second round (no false certificates, no hangs, no memory corruption, no half-replaced model), hung,
changed-between-reads, changed-under-resume, failed-refit, bad-csr and crafted-model; then, for the
third (issue 36: every solver checks its partitions, the spill steps back, no hang on any input,
SIGTERM cleans up), changed-between-primal-reads, disk-full-spill, fifo-input and sigterm.
"""

"""``python -m benchmarks.reliability``: the fault-injection campaign, as
``python -m benchmarks.bench_reliability`` (:func:`benchmarks.reliability.run.main`)."""

from benchmarks.reliability.run import main

main()

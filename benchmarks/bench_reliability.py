"""Fault injection: random faults thrown at streaming fits, and what each left behind.

The harness is the package :mod:`benchmarks.reliability` (a module per fault family); this module
keeps the documented command ``python -m benchmarks.bench_reliability [--kinds KIND ...]
[--trials N] [--seed S] [--no-write]``.
"""

from benchmarks.reliability.run import main

if __name__ == "__main__":
    main()

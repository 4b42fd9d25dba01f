"""``python -m benchmarks``: every method against the peers, in one run (see bench_peers)."""

from benchmarks.bench_peers import main

main()

"""The read path: sources, checks, labels, the reader thread, Parquet, the spill, fingerprints."""

"""The primal Newton solver: its loop, the sums it sees, its reads and its warm starts."""

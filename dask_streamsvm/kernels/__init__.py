"""numba kernels: they see only NumPy arrays and scalars (house style, rule 1)."""

"""Support vector machines on data larger than memory and on Dask clusters."""

from .linear import LinearSVC

__all__ = ["LinearSVC"]
__version__ = "0.1.0.dev0"

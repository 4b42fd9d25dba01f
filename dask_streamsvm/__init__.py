"""Support vector machines on data larger than memory and on Dask clusters."""

from .io import read_libsvm
from .linear import LinearSVC

__all__ = ["LinearSVC", "read_libsvm"]
__version__ = "0.1.0.dev0"

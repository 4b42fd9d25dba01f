"""Handing freed memory back to the operating system between partitions.

glibc's allocator keeps the memory of freed arrays below its (adaptive)
mmap threshold in its heaps, and with several threads allocating, in
several heaps: after a few partitions of tens of MB have come and gone,
the process holds hundreds of MB it does not use (measured: a streaming fit
of a 0.5 GB sparse set peaked at 1.29 GB, and at 0.91 GB with glibc told to
map every allocation above 1 MB). ``malloc_trim(0)`` returns the free pages of
every heap; the reader calls it before computing each partition, when the
previous ones have been released.  Elsewhere than glibc it does nothing.
"""

import ctypes
import ctypes.util
import sys

_trim = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _trim = _libc.malloc_trim
        _trim.argtypes = [ctypes.c_size_t]
        _trim.restype = ctypes.c_int
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        _trim = None


def release_free_memory():
    """Return the allocator's free pages to the operating system (glibc); True if it could."""
    if _trim is None:
        return False
    _trim(0)
    return True

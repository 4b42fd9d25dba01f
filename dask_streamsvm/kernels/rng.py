"""Explicit random state for kernels.

Kernels never touch a global generator: the driver derives a 64-bit seed
from ``random_state`` and passes a one-element ``uint64`` array that the
kernel advances in place.  The generator is SplitMix64 (Steele, Lea &
Flood 2014): tiny, fast, and with full 64-bit output, which is more than a
permutation of a few billion rows needs.
"""

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)


@njit(cache=True, nogil=True, inline="always")
def next_uint64(state):
    """Advance ``state[0]`` and return the next 64-bit output."""
    z = state[0] + _GOLDEN
    state[0] = z
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True)
def shuffle_prefix(index, size, state):
    """Fisher-Yates shuffle of ``index[:size]`` in place.

    The draw plays the part of LIBLINEAR's ``j = i + rand() % (size - i)``,
    reduced to ``[0, size - i)`` by Lemire's multiply-shift on the top 32
    bits instead of a division (it costs about as much as a pass's DOT on
    short rows otherwise).  The bias is below ``size / 2**32``.
    """
    for i in range(size - 1):
        span = np.uint64(size - i)
        j = i + np.int64(((next_uint64(state) >> _S32) * span) >> _S32)
        tmp = index[i]
        index[i] = index[j]
        index[j] = tmp


def make_state(seed):
    """A fresh state array from a non-negative integer seed."""
    return np.array([seed], dtype=np.uint64)

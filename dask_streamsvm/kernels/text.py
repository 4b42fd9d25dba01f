"""LIBSVM text to CSR rows, compiled: the fast path of :func:`dask_streamsvm.read_libsvm`.

``parse_libsvm`` reads the common form, ``label idx:value ...`` with
increasing indices, comments after ``#``, and numbers written with at most
18 significant digits and a decimal exponent within [-22, 22] after the
point is moved (``0.158114``, ``-3``, ``1e-05``, ``+1``).  For those numbers
one correctly rounded IEEE operation on two exact doubles, ``m * 10**e`` or
``m / 10**-e`` with ``m < 2**53``, gives the correctly rounded value: the
same double as ``strtod`` and scikit-learn's reader (Clinger's fast path).
Anything else (more digits, larger exponents, ``nan``, ``qid:``, a
malformed token, an index out of range or out of order)
makes it return a negative code, and the caller parses the block with
scikit-learn's reader instead, which gives the same rows or its error.
"""

import numba
import numpy as np

_POW10 = np.array([10.0**k for k in range(23)])
_EXACT = 2**53
_SPACE, _TAB, _CR, _NL = 32, 9, 13, 10


@numba.njit(cache=True, nogil=True, inline="always")
def _is_blank(c):
    return c == _SPACE or c == _TAB or c == _CR


@numba.njit(cache=True, nogil=True)
def _integer(buf, pos, end, cap):
    """Parses the unsigned integer at ``buf[pos]``; returns (value, next position, ok <= cap)."""
    value = 0
    start = pos
    while pos < end and 48 <= buf[pos] <= 57:
        value = value * 10 + (buf[pos] - 48)
        if value > cap:
            return value, pos, False
        pos += 1
    return value, pos, pos > start


@numba.njit(cache=True, nogil=True, inline="always")
def _digit(c):
    """Whether byte ``c`` is a decimal digit: one unsigned comparison."""
    return np.uint8(c - np.uint8(48)) < np.uint8(10)


@numba.njit(cache=True, nogil=True, inline="always")
def _number(buf, pos, end, pow10):
    """Parses a decimal at ``buf[pos]``; returns (value, next position, ok).

    ``[+-]digits[.digits][(e|E)[+-]digits]`` with at most 18 significant digits (leading zeros
    do not count; past 18 the mantissa may wrap, and the number is declined all the same).
    """
    negative = False
    if pos < end:
        c = buf[pos]
        if c == 43 or c == 45:
            negative = c == 45
            pos += 1
    mantissa = np.int64(0)
    sig = 0
    seen = 0
    while pos < end and _digit(buf[pos]):
        d = np.int64(buf[pos]) - 48
        if mantissa != 0 or d != 0:
            sig += 1
        mantissa = mantissa * 10 + d
        seen += 1
        pos += 1
    frac = 0
    if pos < end and buf[pos] == 46:
        pos += 1
        while pos < end and _digit(buf[pos]):
            d = np.int64(buf[pos]) - 48
            if mantissa != 0 or d != 0:
                sig += 1
            mantissa = mantissa * 10 + d
            frac += 1
            pos += 1
        seen += frac
    if sig > 18 or seen == 0:
        return 0.0, pos, False
    exponent = -frac
    if pos < end and (buf[pos] == 101 or buf[pos] == 69):
        pos += 1
        sign = 1
        if pos < end and (buf[pos] == 43 or buf[pos] == 45):
            sign = -1 if buf[pos] == 45 else 1
            pos += 1
        e = 0
        start = pos
        while pos < end and _digit(buf[pos]):
            e = e * 10 + (np.int64(buf[pos]) - 48)
            if e > 400:
                return 0.0, pos, False
            pos += 1
        if pos == start:
            return 0.0, pos, False
        exponent += sign * e
    if mantissa >= _EXACT:
        return 0.0, pos, False
    if mantissa == 0:
        value = 0.0
    elif 0 <= exponent <= 22:
        value = np.float64(mantissa) * pow10[exponent]
    elif -22 <= exponent < 0:
        value = np.float64(mantissa) / pow10[-exponent]
    else:
        return 0.0, pos, False
    return (-value if negative else value), pos, True


@numba.njit(cache=True, nogil=True)
def parse_libsvm(buf, n_features, zero_based, labels, indptr, indices, values, pow10):
    """Fills ``labels``, ``indptr``, ``indices``, ``values``; returns the number of rows, or -1.

    The output arrays must hold at least as many rows as ``buf`` has lines
    and as many entries as it has colons.
    """
    end = buf.shape[0]
    pos = 0
    row = 0
    nnz = 0
    indptr[0] = 0
    shift = 0 if zero_based else 1
    while pos < end:
        c = buf[pos]
        while c == 32 or c == 9 or c == 13:
            pos += 1
            if pos >= end:
                break
            c = buf[pos]
        if pos >= end:
            break
        if c == 35:  # a comment line
            while pos < end and buf[pos] != 10:
                pos += 1
            pos += 1
            continue
        if c == _NL:
            pos += 1  # a blank line, skipped as scikit-learn's reader does
            continue
        label, pos, ok = _number(buf, pos, end, pow10)
        if not ok:
            return -1
        labels[row] = label
        last = -1
        while True:
            start = pos
            while pos < end and (buf[pos] == 32 or buf[pos] == 9 or buf[pos] == 13):
                pos += 1
            if pos >= end or buf[pos] == 10:
                pos += 1
                break
            if buf[pos] == 35:
                while pos < end and buf[pos] != 10:
                    pos += 1
                pos += 1
                break
            if pos == start:
                return -1  # tokens must be separated by blanks
            index = np.int64(0)
            istart = pos
            while pos < end and _digit(buf[pos]):
                index = index * 10 + (np.int64(buf[pos]) - 48)
                if index > 2_000_000_000:
                    return -1
                pos += 1
            if pos == istart or pos >= end or buf[pos] != 58:  # ':'
                return -1
            pos += 1
            index -= shift
            if index < 0 or index <= last or (n_features >= 0 and index >= n_features):
                return -1
            value, pos, ok = _number(buf, pos, end, pow10)
            if not ok:
                return -1
            indices[nnz] = index
            values[nnz] = value
            nnz += 1
            last = index
        row += 1
        indptr[row] = nnz
    return row


def parse_block(data, n_features, zero_based):
    """``(values, indices, indptr, labels, width)`` of LIBSVM bytes, or None where the fast path declines.

    ``n_features=None`` reads the width from the largest index.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    max_rows = data.count(b"\n") + 1  # bytes.count: no temporary as large as the text
    max_nnz = data.count(b":")
    labels = np.empty(max_rows, dtype=np.float64)
    indptr = np.empty(max_rows + 1, dtype=np.int64)
    indices = np.empty(max_nnz, dtype=np.int32)
    values = np.empty(max_nnz, dtype=np.float64)
    limit = -1 if n_features is None else int(n_features)
    rows = parse_libsvm(buf, limit, bool(zero_based), labels, indptr, indices, values, _POW10)
    if rows < 0:
        return None
    nnz = int(indptr[rows])
    width = int(n_features) if n_features is not None else (int(indices[:nnz].max()) + 1 if nnz else 0)
    return values[:nnz], indices[:nnz], indptr[: rows + 1], labels[:rows], width


@numba.njit(cache=True, nogil=True)
def largest_index(buf, zero_based):
    """The largest feature index of LIBSVM bytes plus one (0 without features), or -1 where the
    fast path declines (the caller then parses the block): each line's label and values are skipped,
    only the digits before each ``:`` are read, so a scan runs several times faster than a parse."""
    end = buf.shape[0]
    pos = 0
    top = -1
    while pos < end:
        while pos < end and _is_blank(buf[pos]):
            pos += 1
        if pos >= end:
            break
        if buf[pos] == 35 or buf[pos] == _NL:  # a comment or a blank line
            while pos < end and buf[pos] != _NL:
                pos += 1
            pos += 1
            continue
        while pos < end and buf[pos] != _NL and buf[pos] != 35 and not _is_blank(buf[pos]):
            if buf[pos] == 58:  # a ':' in the label: the parse says what is wrong
                return -1
            pos += 1  # the label
        while True:
            while pos < end and _is_blank(buf[pos]):
                pos += 1
            if pos >= end or buf[pos] == _NL or buf[pos] == 35:
                while pos < end and buf[pos] != _NL:
                    pos += 1
                pos += 1
                break
            index, pos, ok = _integer(buf, pos, end, 2_000_000_000)
            if not ok or pos >= end or buf[pos] != 58:  # 'qid:', a malformed token
                return -1
            if index > top:
                top = index
            pos += 1
            while pos < end and buf[pos] != _NL and buf[pos] != 35 and not _is_blank(buf[pos]):
                pos += 1  # the value
    if top < 0:
        return 0
    if not zero_based:
        return top if top >= 1 else -1
    return top + 1

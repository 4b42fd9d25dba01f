"""Feature maps computed inside DOT and ADD (COFFIN, Sonnenburg & Franc 2010).

A solver touches an example only through ``w . phi(x)`` (DOT), ``w += a
phi(x)`` (ADD) and ``||phi(x)||^2`` (the diagonal ``Q_ii`` of the dual).  A
*mapped layout* ``(raw, spec)`` pairs the stored raw rows (a sparse layout
of :mod:`.rows`: CSR or the cache's slotted CSR) with a one-element record
array ``spec`` (:data:`MAP_SPEC`) that says which map to apply; the
overloads in :mod:`.rows` route the three operations here, so every kernel
(DCD, Crammer-Singer, the certificates, SBM's scores) runs on mapped rows
unchanged and ``phi(x)`` is never stored.

Degree-2 polynomial map (``kind = POLY2``; COFFIN section 2.1.2), in the
feature order of scikit-learn's ``PolynomialFeatures(degree=2,
include_bias=False)``::

    phi(x) = [x_0 .. x_{p-1},  x_i x_j for i <= j (i < j if interaction_only)]
    pair (i, j), i <= j:  p + i p - i (i - 1) / 2 + (j - i)
    pair (i, j), i < j:   p + i (p - 1) - i (i - 1) / 2 + (j - i - 1)

Only the nonzero monomials of a row are visited: ``O(m^2)`` work for a row
of ``m`` nonzeros, whatever ``p``.

The polynomial kernel's map (``kind = POLYK``, :func:`_polyk_walk`): every
monomial of degree ``0 .. degree``, weighted so that its dot products are
``(gamma x.z + coef0)^degree``; its explicit features are ranked by the
combinatorial number system, and ``phi(x) . phi(x)`` is the kernel itself.

Each map walks its features three times over: for DOT, for ADD and to
list them (``map_entries``, for ``||phi(x)||^2`` under collisions and for
``transform``).  The loops are written out for each: DOT and ADD are the
solver's hot path, and numba has no cheap way to hand a loop the action to
take per feature.

Hashing (``hashed = 1``): feature ``f`` of the map goes to bucket
``h(f) mod n_out`` with sign ``+1`` or ``-1`` from one more bit of ``h``
(``alternate_sign``; Weinberger et al. 2009), ``h`` being SplitMix64's
finaliser of ``f`` and the seed: a pure function of integers, the same in
every process.  DOT and ADD are exact for the hashed vector, collisions
included; its ``||phi(x)||^2`` adds up the buckets a row shares.
"""

import numpy as np
from numba import njit

MAP_SPEC = np.dtype(
    [
        ("kind", np.int64),
        ("n_in", np.int64),  # raw features p
        ("n_out", np.int64),  # dimension of phi(x) (the hashed buckets when hashed)
        ("interaction_only", np.int64),
        ("hashed", np.int64),
        ("alternate_sign", np.int64),
        ("seed", np.int64),
        ("degree", np.int64),  # strings: longest k-mer
        ("min_degree", np.int64),  # strings: shortest k-mer
        ("positional", np.int64),  # strings: 1 weighted degree (k-mers per position), 0 spectrum
        ("normalize", np.int64),  # strings: scale phi(x) to about unit norm
        ("col_lo", np.int64),  # the raw columns this map reads: [col_lo, col_hi)
        ("col_hi", np.int64),
        ("out_lo", np.int64),  # where its features start in phi(x)
        ("gamma", np.float64),  # kernel polynomial: (gamma x.z + coef0)^degree
        ("coef0", np.float64),
    ]
)
LINEAR = 0
POLY2 = 1
STRING = 2
POLYK = 3

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def make_spec(
    kind, n_in, n_out, *, interaction_only=False, hashed=False, alternate_sign=True, seed=0, degree=0,
    min_degree=0, positional=False, normalize=False, gamma=0.0, coef0=0.0,
):  # fmt: skip
    """The one-element record array of a map."""
    spec = np.zeros(1, dtype=MAP_SPEC)
    spec[0] = (
        kind, n_in, n_out, int(interaction_only), int(hashed), int(alternate_sign), seed, degree, min_degree,
        int(positional), int(normalize), 0, n_in, 0, float(gamma), float(coef0),
    )  # fmt: skip
    return spec


def spec_width(spec_array):
    """Dimension of ``phi(x)``: where the last map's features end."""
    return int((spec_array["out_lo"] + spec_array["n_out"]).max())


def concatenate_specs(parts):
    """The spec of ``phi(x) = [phi_1(x_1), phi_2(x_2), ...]`` for consecutive raw column groups ``x_g``.

    ``parts`` lists ``(spec, raw_width)``: each map reads the next
    ``raw_width`` raw columns and writes the next ``spec_width(spec)``
    features.  Its kernel is the sum of the parts' kernels.
    """
    records, col, out = [], 0, 0
    for spec, width in parts:
        shifted = spec.copy()
        shifted["col_lo"] += col
        shifted["col_hi"] += col
        shifted["out_lo"] += out
        records.append(shifted)
        col += int(width)
        out += spec_width(spec)
    return np.concatenate(records)


@njit(cache=True, nogil=True, inline="always")
def _u(index):
    """An index into ``w`` as unsigned: no code for negative indices in the hot loops (2x on DOT)."""
    return np.uint64(index)


@njit(cache=True, nogil=True)
def mix64(value, seed):
    """SplitMix64's finaliser of ``value + seed * golden``: a fixed integer hash."""
    z = np.uint64(value) + np.uint64(seed) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def poly2_dimension(p, interaction_only):
    """Features of the explicit degree-2 map of ``p`` inputs."""
    return p + (p * (p - 1) // 2 if interaction_only else p * (p + 1) // 2)


@njit(cache=True, nogil=True)
def _pair_base(i, p, interaction_only):
    """``_pair(i, j) - j`` for ``j >= i``: where row ``i``'s pairs start in ``phi``."""
    if interaction_only:
        return p + i * (p - 1) - i * (i - 1) // 2 - i - 1
    return p + i * p - i * (i - 1) // 2 - i


@njit(cache=True, nogil=True)
def _pair(i, j, p, interaction_only):
    if j < i:
        i, j = j, i
    if interaction_only:
        return p + i * (p - 1) - i * (i - 1) // 2 + (j - i - 1)
    return p + i * p - i * (i - 1) // 2 + (j - i)


@njit(cache=True, nogil=True)
def _target(spec, feature):
    """``(index into w, sign)`` of map feature ``feature``."""
    if spec.hashed == 0:
        return feature, 1.0
    return _bucket(spec, mix64(feature, spec.seed))


@njit(cache=True, nogil=True)
def _bucket(spec, h):
    """``(index into w, sign)`` of a hashed feature ``h``."""
    bucket = np.int64((h >> np.uint64(1)) % np.uint64(spec.n_out))
    if spec.alternate_sign != 0 and (h & np.uint64(1)) != 0:
        return bucket, -1.0
    return bucket, 1.0


@njit(cache=True, nogil=True)
def _kmer_weight(spec, k):
    """Weight of a k-mer: ``sqrt(beta_k)``, ``beta_k = 2 (d - k + 1) / (d (d + 1))`` (COFFIN eq. for WD)."""
    d = spec.degree
    if spec.min_degree == d:
        return 1.0  # the plain spectrum of one k
    return np.sqrt(2.0 * (d - k + 1) / (d * (d + 1.0)))


@njit(cache=True, nogil=True)
def _string_scale(spec, length):
    """``1 / sqrt(sum_k (L - k + 1) beta_k)``: unit norm without collisions (Shogun's normalisation)."""
    if spec.normalize == 0:
        return 1.0
    total = 0.0
    for k in range(spec.min_degree, spec.degree + 1):
        if length - k + 1 > 0:
            wk = _kmer_weight(spec, k)
            total += (length - k + 1) * wk * wk
    return 1.0 / np.sqrt(total) if total > 0.0 else 1.0


@njit(cache=True, nogil=True)
def _kmer_hash(spec, p, k, h, code):
    """Extend the hash ``h`` of the (k-1)-mer starting at ``p`` by the next character ``code``."""
    if k == 1:
        # Weighted degree: a k-mer is a feature of its position; spectrum: of its letters only.
        start = np.uint64(p + 1) if spec.positional != 0 else np.uint64(0)
        h = mix64(start, spec.seed)
    return mix64(h ^ np.uint64(code), k)


@njit(cache=True, nogil=True)
def string_terms(data, lo, hi, spec, out_index, out_value):
    """The signed, weighted k-mer features of the string ``data[lo:hi]`` (byte codes); their count.

    Weighted degree (``positional``): ``(p, k, s[p:p+k])`` for every position
    ``p`` and ``k = min_degree .. degree``; spectrum: ``s[p:p+k]`` alone, so
    equal k-mers at different places add up.  Each is hashed incrementally
    (one mix per character) into ``n_out`` buckets.
    """
    length = hi - lo
    scale = _string_scale(spec, length)
    n = 0
    for p in range(length):
        h = np.uint64(0)
        for k in range(1, spec.degree + 1):
            if p + k > length:
                break
            h = _kmer_hash(spec, p, k, h, np.uint64(np.int64(data[lo + p + k - 1])))
            if k < spec.min_degree:
                continue
            t, sign = _bucket(spec, h)
            out_index[n] = t
            out_value[n] = sign * scale * _kmer_weight(spec, k)
            n += 1
    return n


@njit(cache=True, nogil=True)
def binomial(n, k):
    """``C(n, k)`` in integers (0 outside ``0 <= k <= n``)."""
    if k < 0 or n < k:
        return 0
    r = 1
    for j in range(1, k + 1):
        r = r * (n - k + j) // j
    return r


@njit(cache=True, nogil=True)
def _degree_weight(spec, k):
    """``sqrt(C(d, k) coef0^(d - k) gamma^k)``: the binomial expansion's factor of degree ``k``."""
    d = spec.degree
    return np.sqrt(binomial(d, k) * spec.coef0 ** (d - k) * spec.gamma**k)


@njit(cache=True, nogil=True)
def _polyk_walk(indices, data, lo, hi, spec, mode, w_read, w_write, a_scale, out_index, out_value):
    """Every monomial of degree ``0 .. d`` of the row's entries ``lo:hi``, weighted so that
    ``phi(x) . phi(z) = (gamma x.z + coef0)^d`` (``kind = POLYK``).

    The monomial of the multiset ``i_1 <= ... <= i_k`` of columns has the weight
    ``sqrt(C(d, k) coef0^(d-k) gamma^k k! / prod_j m_j!)`` (``m_j``: how often column ``j``
    repeats), so the multinomial expansion of ``(gamma x.z + coef0)^d`` is a dot product.
    Explicit features: degree ``k`` takes ``C(p + k - 1, k)`` places after the lower degrees',
    the multiset's place its rank ``sum_t C(i_t + t - 1, t)`` (the combinatorial number system of
    ``c_t = i_t + t - 1``); hashed: a hash of the degree and the columns in order.

    ``mode`` 0 returns ``w_read . phi(x)``; 1 adds ``a_scale phi(x)`` to ``w_write``; 2 writes the
    features to ``out_index``/``out_value`` and returns their count.  (Reading and writing take
    different arrays so that a read-only ``w`` can be read.)
    """
    d = spec.degree
    o = spec.out_lo
    c = spec.col_lo
    p = spec.n_in
    m = hi - lo
    pos = np.zeros(d + 1, dtype=np.int64)
    s = 0.0
    n = 0
    offset = 0
    for k in range(d + 1):
        factor = _degree_weight(spec, k)
        size = binomial(p + k - 1, k)
        if k > 0 and m == 0:
            offset += size
            continue
        for t in range(k + 1):
            pos[t] = 0
        while True:
            value = factor
            weight2 = 1.0
            rank = 0
            h = mix64(np.uint64(k), spec.seed)
            run = 0
            for t in range(1, k + 1):
                a = lo + pos[t]
                col = np.int64(indices[a]) - c
                run = run + 1 if t > 1 and pos[t] == pos[t - 1] else 1
                weight2 *= t / run
                value *= data[a]
                rank += binomial(col + t - 1, t)
                h = mix64(h ^ np.uint64(col), t)
            value *= np.sqrt(weight2)
            if spec.hashed == 0:
                target, sign = offset + rank, 1.0
            else:
                target, sign = _bucket(spec, h)
            if mode == 0:
                s += sign * w_read[_u(o + target)] * value
            elif mode == 1:
                w_write[_u(o + target)] += sign * a_scale * value
            else:
                out_index[n] = o + target
                out_value[n] = sign * value
                n += 1
            t = k  # the next multiset: the odometer of non-decreasing positions
            while t >= 1 and pos[t] == m - 1:
                t -= 1
            if t == 0:
                break
            pos[t] += 1
            for u in range(t + 1, k + 1):
                pos[u] = pos[t]
        offset += size
    return s if mode == 0 else float(n)


@njit(cache=True, nogil=True)
def _part_terms(spec, m):
    if spec.kind == STRING:
        return m * spec.degree
    if spec.kind == POLYK:
        return binomial(m + spec.degree, spec.degree)
    if spec.kind == LINEAR:
        return m
    return m + m * (m + 1) // 2


@njit(cache=True, nogil=True)
def map_terms(spec_array, m):
    """Most features ``phi`` of a raw row with ``m`` entries can have (before collisions)."""
    n = 0
    for r in range(spec_array.shape[0]):
        n += _part_terms(spec_array[r], m)
    return n


@njit(cache=True, nogil=True)
def _part_span(indices, a, hi, spec):
    """``(lo, hi)`` of the entries from ``a`` on that fall in the part's raw columns (rows are sorted)."""
    while a < hi and np.int64(indices[a]) < spec.col_lo:
        a += 1
    b = a
    while b < hi and np.int64(indices[b]) < spec.col_hi:
        b += 1
    return a, b


@njit(cache=True, nogil=True)
def _string_dot(data, lo, hi, w, spec):
    length = hi - lo
    scale = _string_scale(spec, length)
    s = 0.0
    for p in range(length):
        h = np.uint64(0)
        for k in range(1, spec.degree + 1):
            if p + k > length:
                break
            h = _kmer_hash(spec, p, k, h, np.uint64(np.int64(data[lo + p + k - 1])))
            if k >= spec.min_degree:
                t, sign = _bucket(spec, h)
                s += sign * _kmer_weight(spec, k) * w[_u(t)]
    return s * scale


@njit(cache=True, nogil=True)
def _string_axpy(data, lo, hi, a_scale, w, spec):
    length = hi - lo
    a = a_scale * _string_scale(spec, length)
    for p in range(length):
        h = np.uint64(0)
        for k in range(1, spec.degree + 1):
            if p + k > length:
                break
            h = _kmer_hash(spec, p, k, h, np.uint64(np.int64(data[lo + p + k - 1])))
            if k >= spec.min_degree:
                t, sign = _bucket(spec, h)
                w[_u(t)] += sign * _kmer_weight(spec, k) * a


@njit(cache=True, nogil=True)
def _part_dot(indices, data, lo, hi, w, spec):
    """``w . phi(x)`` of one map over its entries ``lo:hi`` (columns from col_lo, features from out_lo)."""
    o = spec.out_lo
    c = spec.col_lo
    if spec.kind == STRING:
        return _string_dot(data, lo, hi, w[o:], spec)
    if spec.kind == POLYK:
        nothing = np.empty(0)
        return _polyk_walk(indices, data, lo, hi, spec, 0, w, nothing, 0.0, np.empty(0, np.int64), nothing)
    s = 0.0
    if spec.kind == LINEAR:
        for a in range(lo, hi):
            s += w[_u(o + np.int64(indices[a]) - c)] * data[a]
        return s
    p = spec.n_in
    skip = spec.interaction_only
    if spec.hashed == 0:  # explicit: pair (i, j) sits at _pair_base(i) + j (rows are sorted, j >= i)
        for a in range(lo, hi):
            i = np.int64(indices[a]) - c
            v = data[a] * 1.0
            s += w[_u(o + i)] * v
            base = o + _pair_base(i, p, skip) - c
            inner = 0.0
            for b in range(a + skip, hi):
                inner += w[_u(base + np.int64(indices[b]))] * data[b]
            s += v * inner
        return s
    for a in range(lo, hi):
        i = np.int64(indices[a]) - c
        v = data[a] * 1.0
        t, sign = _target(spec, i)
        s += sign * w[_u(o + t)] * v
        for b in range(a + skip, hi):
            t, sign = _target(spec, _pair(i, np.int64(indices[b]) - c, p, skip))
            s += sign * w[_u(o + t)] * v * data[b]
    return s


@njit(cache=True, nogil=True)
def map_dot(indices, data, lo, hi, w, spec_array):
    """``w . phi(x)`` for the raw row ``indices/data[lo:hi]`` (bias not included)."""
    if spec_array.shape[0] == 1:
        return _part_dot(indices, data, lo, hi, w, spec_array[0])
    s = 0.0
    b = lo
    for r in range(spec_array.shape[0]):
        a, b = _part_span(indices, b, hi, spec_array[r])
        s += _part_dot(indices, data, a, b, w, spec_array[r])
    return s


@njit(cache=True, nogil=True)
def _part_axpy(indices, data, lo, hi, a_scale, w, spec):
    """``w += a_scale * phi(x)`` of one map over its entries ``lo:hi``."""
    o = spec.out_lo
    c = spec.col_lo
    if spec.kind == STRING:
        _string_axpy(data, lo, hi, a_scale, w[o:], spec)
        return
    if spec.kind == POLYK:
        nothing = np.empty(0)
        _polyk_walk(indices, data, lo, hi, spec, 1, nothing, w, a_scale, np.empty(0, np.int64), nothing)
        return
    if spec.kind == LINEAR:
        for a in range(lo, hi):
            w[_u(o + np.int64(indices[a]) - c)] += a_scale * data[a]
        return
    p = spec.n_in
    skip = spec.interaction_only
    if spec.hashed == 0:  # explicit, as in _part_dot
        for a in range(lo, hi):
            i = np.int64(indices[a]) - c
            v = a_scale * data[a]
            w[_u(o + i)] += v
            base = o + _pair_base(i, p, skip) - c
            for b in range(a + skip, hi):
                w[_u(base + np.int64(indices[b]))] += v * data[b]
        return
    for a in range(lo, hi):
        i = np.int64(indices[a]) - c
        v = a_scale * data[a]
        t, sign = _target(spec, i)
        w[_u(o + t)] += sign * v
        for b in range(a + skip, hi):
            t, sign = _target(spec, _pair(i, np.int64(indices[b]) - c, p, skip))
            w[_u(o + t)] += sign * v * data[b]


@njit(cache=True, nogil=True)
def map_axpy(indices, data, lo, hi, a_scale, w, spec_array):
    """``w += a_scale * phi(x)`` for the raw row ``indices/data[lo:hi]`` (bias not included)."""
    if spec_array.shape[0] == 1:
        _part_axpy(indices, data, lo, hi, a_scale, w, spec_array[0])
        return
    b = lo
    for r in range(spec_array.shape[0]):
        a, b = _part_span(indices, b, hi, spec_array[r])
        _part_axpy(indices, data, a, b, a_scale, w, spec_array[r])


@njit(cache=True, nogil=True)
def _part_entries(indices, data, lo, hi, spec, out_index, out_value, n):
    """Append one map's features of entries ``lo:hi`` at ``out[n:]``; the new count."""
    o = spec.out_lo
    c = spec.col_lo
    if spec.kind == STRING:
        m = string_terms(data, lo, hi, spec, out_index[n:], out_value[n:])
        for t in range(n, n + m):  # not out_index[n:n+m] += o: a slice assignment compiles numba's error text
            out_index[t] += o
        return n + m
    if spec.kind == POLYK:
        nothing = np.empty(0)
        rest_index, rest_value = out_index[n:], out_value[n:]
        count = _polyk_walk(indices, data, lo, hi, spec, 2, nothing, nothing, 0.0, rest_index, rest_value)
        return n + int(count)
    if spec.kind == LINEAR:
        for a in range(lo, hi):
            out_index[n] = o + np.int64(indices[a]) - c
            out_value[n] = data[a]
            n += 1
        return n
    p = spec.n_in
    skip = spec.interaction_only
    for a in range(lo, hi):
        i = np.int64(indices[a]) - c
        v = data[a] * 1.0
        t, sign = _target(spec, i)
        out_index[n] = o + t
        out_value[n] = sign * v
        n += 1
        for b in range(a + skip, hi):
            t, sign = _target(spec, _pair(i, np.int64(indices[b]) - c, p, skip))
            out_index[n] = o + t
            out_value[n] = sign * v * data[b]
            n += 1
    return n


@njit(cache=True, nogil=True)
def map_entries(indices, data, lo, hi, spec_array, out_index, out_value):
    """Write the nonzero features of ``phi(x)`` (signed, before summing collisions); return their count."""
    if spec_array.shape[0] == 1:
        return _part_entries(indices, data, lo, hi, spec_array[0], out_index, out_value, 0)
    n = 0
    b = lo
    for r in range(spec_array.shape[0]):
        a, b = _part_span(indices, b, hi, spec_array[r])
        n = _part_entries(indices, data, a, b, spec_array[r], out_index, out_value, n)
    return n


@njit(cache=True, nogil=True)
def _part_sqnorm(indices, data, lo, hi, spec):
    """``||phi(x)||^2`` of one map over its entries ``lo:hi``; exact under hash collisions."""
    if spec.kind == POLYK and spec.hashed == 0:  # the kernel itself: (gamma ||x||^2 + coef0)^d
        sq = 0.0
        for a in range(lo, hi):
            v = data[a] * 1.0
            sq += v * v
        return (spec.gamma * sq + spec.coef0) ** spec.degree
    if spec.kind == LINEAR or (spec.kind == POLY2 and spec.hashed == 0):
        s = 0.0
        for a in range(lo, hi):
            v = data[a] * 1.0
            s += v * v
            if spec.kind == POLY2:
                for b in range(a + spec.interaction_only, hi):
                    u = v * data[b]
                    s += u * u
        return s
    size = _part_terms(spec, hi - lo)
    index = np.empty(size, dtype=np.int64)
    value = np.empty(size)
    n = _part_entries(indices, data, lo, hi, spec, index, value, 0)
    order = np.argsort(index[:n])
    s = 0.0
    run = 0.0
    for t in range(n):
        run += value[order[t]]
        if t == n - 1 or index[order[t + 1]] != index[order[t]]:
            s += run * run
            run = 0.0
    return s


@njit(cache=True, nogil=True)
def map_sqnorm(indices, data, lo, hi, spec_array):
    """``||phi(x)||^2`` of the raw row (bias not included); the maps of a sum write disjoint features."""
    if spec_array.shape[0] == 1:
        return _part_sqnorm(indices, data, lo, hi, spec_array[0])
    s = 0.0
    b = lo
    for r in range(spec_array.shape[0]):
        a, b = _part_span(indices, b, hi, spec_array[r])
        s += _part_sqnorm(indices, data, a, b, spec_array[r])
    return s


@njit(cache=True, nogil=True)
def map_rows_into(indptr, indices, data, spec_array, out):
    """``out[r] += phi(x_r)`` for the canonical CSR rows ``(indptr, indices, data)``: the map's
    features of a few rows written out densely (hashed features that collide add up, as in
    ``phi``).  ``out`` has the map's width in columns and is zeroed by the caller."""
    longest = 0
    for r in range(indptr.shape[0] - 1):
        longest = max(longest, np.int64(indptr[r + 1] - indptr[r]))
    size = map_terms(spec_array, longest)
    index = np.empty(size, dtype=np.int64)
    value = np.empty(size)
    for r in range(indptr.shape[0] - 1):
        n = map_entries(indices, data, indptr[r], indptr[r + 1], spec_array, index, value)
        for k in range(n):
            out[r, index[k]] += value[k]

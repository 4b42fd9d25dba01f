"""The primal solver's warm starts: the solution of a sample, where the Newton reads start.

Out of core the first read keeps a uniform sample of the rows (:func:`sample_rows`,
:class:`~.reads.Sample`), and :func:`warm_start` solves its problem in memory; in memory a smooth
loss starts from the solution of a random share of its rows (:func:`memory_start`).  The full reads
then do the last Newton steps and the certificate.
"""

import time

import numpy as np

from ..plan.layout import take_rows
from ..plan.losses import loss_of
from .newton import BAND_SHARE, solve_primal
from .reads import Sample, memory_read

# The warm start (:func:`warm_start`): the first read keeps a uniform sample of this many rows per
# column of the model (features plus bias), at least SAMPLE_MIN_ROWS, within ``cache_bytes``
# (:func:`sample_rows`);
# the sample's problem is solved in memory to a relative gap of WARM_TOL.  Measured in
# benchmarks/bench_primal.py (docs/benchmarks.md, "primal").
SAMPLE_ROWS_PER_WIDTH = 4000


SAMPLE_MIN_ROWS = 20_000


WARM_TOL = 1e-6


def sample_rows(width):
    """Rows the first read keeps for the warm start of a model ``width`` features wide (plus the
    bias): :data:`SAMPLE_ROWS_PER_WIDTH` per column, at least :data:`SAMPLE_MIN_ROWS` (the sampler
    keeps fewer where ``cache_bytes`` holds fewer)."""
    return max(SAMPLE_MIN_ROWS, SAMPLE_ROWS_PER_WIDTH * (width + 1))


# The first read of the SVM's Newton loss (:func:`whole_sample`) keeps every row where they all fit
# ``cache_bytes`` (dense rows whose count is known before the read: :class:`~.reads.Sampler`'s
# ``whole``), so that the sample's solve is the fit, after one read: on the 2M x 60 tall sets (480
# MB, the default 1 GB cache) 2.0-3.7 s where the two reads from a sample took 3.2-5.1 s in the same
# run, quiet and beside a busy process (docs/benchmarks.md, "Two reads").  The band from a sample
# (:mod:`~.sample_band`) keeps them too where they are enough for it in memory
# (:func:`band_from_memory`) and fit ``cache_bytes`` with its sample and band
# (:func:`band_held_bytes`): then its passes over the rows held are the reads.  On a cluster the
# Newton steps' parts keep their rows where they fit their budget (cluster/newton.py, part_first_read),
# each step a pass over them.  The tests that stream Newton reads on sets that fit the default cache
# turn both off (tests/conftest.py, ``partial_sample``).
EVERY_ROW_IN_BUDGET = True


# In memory, solver="auto" trains a loss without Newton steps by the band from a sample (the door's
# memory_band; out of core, a first read that kept every row: whole_sample) where the rows are at
# least this many times the sample a streamed fit's first read keeps (sample_rows: 4,000 a column of
# the model, at least 20,000).  benchmarks/bench_memory_band.py (docs/benchmarks.md, the section it
# writes), C = 0.01 and 1, tol 1e-3: on 2M x 60 rows (Gaussian and 0..255) 1.5-2.6 s where
# coordinate descent took 5.1 s or stopped at 100 passes (48-61 s, gap 0.05-1.0); 1M x 20 with heavy
# label noise 0.4-0.5 s where 1.3 and 11.9 s (stopped); a9a tiled to 2M x 123 5.0 and 8.3 s where 5.1
# and 55 s (stopped).  Below it the band gave way to coordinate descent or took longer: a9a (32,561 x
# 123 dense) at C >= 0.1 and 0.16 s where 0.06 s at C = 0.01, the HIGGS subset (7,000 x 28) at every
# C (2026-12-02, one process, not committed).
MEMORY_BAND_SAMPLES = 4


# What the band holds of a row beside its values, label and weight: its sign, cost, shortfall and
# key (:class:`~.sample_band.MemoryBandRead`, :class:`~.reads.Sample`).
BAND_ROW_EXTRA = 32


def band_from_memory(n_rows, width):
    """Whether the band from a sample trains ``n_rows`` rows held in memory, of a model ``width``
    features wide (plus the bias): at least :data:`MEMORY_BAND_SAMPLES` times :func:`sample_rows`."""
    return n_rows >= MEMORY_BAND_SAMPLES * sample_rows(width)


def band_held_bytes(row_bytes):
    """The row memory the band from a sample holds for each row it trains on in memory, a row being
    ``row_bytes`` (values, label and weight): the row, and the larger of its share of the warm
    start's sample (:data:`MEMORY_SAMPLE_SHARE`, dropped before the passes) and of a binary
    problem's band (:data:`~.newton.BAND_SHARE`, :data:`BAND_ROW_EXTRA` more a row: the larger while
    the band's share is the larger)."""
    return row_bytes + max(MEMORY_SAMPLE_SHARE * row_bytes, BAND_SHARE * (row_bytes + BAND_ROW_EXTRA))


def whole_sample(plan, expected=None, width=None, band=False):
    """What the first read keeps of every row where they all fit ``cache_bytes``
    (:data:`EVERY_ROW_IN_BUDGET`; :class:`~.reads.Sampler`'s ``whole``): True (the rows alone) for
    the piecewise-quadratic Newton loss with the L2 penalty, one model per problem; where the band
    from a sample trains (``band``, the door's choice), :func:`band_held_bytes` if the ``expected``
    rows of a model ``width`` wide are enough for it in memory (:func:`band_from_memory`); else
    False.  The others keep their sample, measured on the same rows in fresh processes (2026-12-02,
    load 0.9): the logistic loss's one read and solve in memory took 3.3-3.4 s, as its two reads
    from a sample (no gain for 480 MB more held); the softmax model's three classes 17.5-18.4 s where
    its three reads took 7.5-9.8 s."""
    loss = loss_of(plan.loss)
    if not EVERY_ROW_IN_BUDGET or plan.sparse_penalty:
        return False
    if band:
        return band_held_bytes if expected and band_from_memory(expected, width) else False
    return loss.newton and loss.piecewise_quadratic


# In memory, the Newton reads start from the solution of a sample (:func:`memory_start`) of
# MEMORY_SAMPLE_SHARE of the rows, at least MEMORY_SAMPLE_PER_WIDTH per column of the model, where
# that is at most a quarter of them: the sample's solve takes Newton's damped first steps from
# w = 0, and the reads of every row its last two or three.  Measured (docs/benchmarks.md, "Logistic
# regression"): on 200k x 40 dense rows, 3 reads where 8 from w = 0; the SVM's, :func:`memory_start`.
MEMORY_SAMPLE_SHARE = 0.1


MEMORY_SAMPLE_PER_WIDTH = 50


MEMORY_SAMPLE_SEED = 0


def memory_start(X, y_index, weights, plan, width, clock_start=None):
    """``(W0, notes)``: the start of the Newton reads on in-memory rows, from a sample of them
    (:data:`MEMORY_SAMPLE_SHARE`, :func:`warm_start`), or ``(None, None)``: too few rows for a
    sample to save reads.  The squared hinge's too: on the 2M x 60 tall set (dense, C = 0.01 and 1)
    2 and 3 reads of every row where 5 and 6 from ``w = 0``, 0.77 and 0.95 s against 1.33 and 1.61 s
    (2 cores, load 1); a9a 3 and 5 reads where 5 and 6, ijcnn1 3 where 5 to 7.  The sample is ``m``
    rows drawn without replacement from a fixed seed (one data, one model): a systematic every-k-th
    row sample met the period of rows stored in blocks (ijcnn1 dense at C = 1: 8 Newton reads where
    the random sample needs 3)."""
    sample = memory_sample(X, y_index, weights, plan, width)
    if sample is None:
        return None, None
    W0, notes, _ = warm_start(sample, plan, width, clock_start)
    return W0, notes


def memory_sample_rows(n, weights):
    """The rows of the sample that ``n`` rows in memory start from: :data:`MEMORY_SAMPLE_SHARE` of
    them, at least :data:`MEMORY_SAMPLE_PER_WIDTH` for each of the model's ``weights``."""
    return max(int(MEMORY_SAMPLE_SHARE * n), MEMORY_SAMPLE_PER_WIDTH * weights)


def memory_sample(X, y_index, weights, plan, width):
    """The :class:`~.reads.Sample` in-memory rows start from (:func:`memory_start`, and the hinge's
    band, :func:`~.sample_band.fit_band_memory`): :data:`MEMORY_SAMPLE_SHARE` of the rows, at least
    :data:`MEMORY_SAMPLE_PER_WIDTH` per column of the model ``width`` wide, drawn without replacement
    from :data:`MEMORY_SAMPLE_SEED`; None where that is more than a quarter of them."""
    n = X.shape[0]
    m = memory_sample_rows(n, width + 1)
    if 4 * m > n:
        return None
    drawn = np.zeros(n, dtype=bool)  # the drawn rows in order: 3 ms on 2M rows where np.sort took 8 ms
    drawn[np.random.default_rng(MEMORY_SAMPLE_SEED).choice(n, m, replace=False)] = True
    rows = np.flatnonzero(drawn)
    return Sample(take_rows(X, rows), plan.classes[y_index[rows]], weights[rows], rows_seen=n)


def warm_start(sample, plan, width, clock_start=None, on_pass=None, column_max=None):
    """The start of the Newton reads from the first read's :class:`~.newton.primal_reads.Sample`:
    ``(W0, notes, result)``.

    The sample's problem, its costs scaled by ``rows_seen / sample rows`` so that its loss
    estimates the data's, is solved in memory to a relative gap of :data:`WARM_TOL` (a smooth
    loss's from a sample of its own, :func:`memory_start`); its solution ``W0`` is where the
    first full read evaluates the data's gradient and Hessian, so that the
    full reads do the last Newton steps and the certificate.  If the sample holds every row, its
    problem is the data's: it is solved to ``plan.tol`` and ``result`` is the fit (its certificate
    the data's, ``on_pass`` seeing its records), else None.  ``notes``: the sample's rows and bytes
    and the seconds the solve took, for the history.  ``column_max``: the read's columns' largest
    ``|value|`` (:attr:`~.reads.FirstRead.column_max`), or None: where the sample is every row, with
    it the squared hinge's reads certify their step's point from its band (:func:`~.newton.step_band`).
    """
    from ..plan.problem import class_index

    started = time.perf_counter()
    y_index = class_index(plan.classes, sample.y, lambda label: f"the sample has label {label!r}")
    complete = sample.complete
    scale = sample.rows_seen / sample.n_rows
    if not complete:
        plan, on_pass = plan.replace(tol=min(plan.tol, WARM_TOL), max_iter=min(plan.max_iter, 100)), None
    # The Hessian, as the reads that follow form it (out of core the rows are at most MAX_WIDTH wide).
    weights = sample.sample_weight * scale if scale != 1.0 else sample.sample_weight  # every row: no copy
    read = memory_read(sample.X, y_index, weights, plan, products=False)
    start, _ = memory_start(sample.X, y_index, weights, plan, width)  # a smooth loss: a sample's sample
    result = solve_primal(
        read, plan, width, clock_start=clock_start, on_pass=on_pass, start=start, start_read=False,
        column_max=column_max if complete else None,
    )  # fmt: skip
    notes = {
        "sample_rows": int(sample.n_rows),
        "sample_bytes": sample.nbytes,
        "warm_start_s": time.perf_counter() - started,
    }
    return result.W, notes, (result if complete else None)

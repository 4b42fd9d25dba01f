"""The reader thread: partitions computed ahead of the trainer.

StreamSVM's reader (Matsushima et al. 2012, Algorithm 1) keeps the RAM
filled from disk while the trainer works.  Here the "disk" is Dask: the
reader computes partitions in each pass's order, converts and checks them
(:meth:`DaskSource.load`), draws their row order, stamps global row ids and
puts finished blocks in a bounded queue of ``prefetch`` blocks.  It never
touches the cache, alpha or w: the trainer is the single writer.

Items on the queue: ``("block", pass, Block)``, ``("end", pass)`` after the
last partition of a pass, ``("done", None)`` after ``max_passes`` passes, and
``("error", exception)`` if anything failed; the trainer re-raises the
original exception, traceback included.

A partition whose read fails with an I/O error (:class:`OSError`, other
than a missing file, a directory, or a permission refused, which do not
heal by waiting) is read again up to ``retries`` times, after 0.1, 0.2,
0.4 ... seconds; the block records how many reads failed.  A read that
takes longer than ``read_timeout`` seconds stops the fit with
:class:`ReadTimeout` naming the partition (never retried: the task may be
hung, and Dask cannot stop it).

With ``prefetch`` > 1 the reader starts the next partitions' reads while
it waits for the current one, so that up to ``prefetch`` partitions are
computed at once (by Dask's scheduler: threads, or a distributed client's
workers) and a machine with more cores reads faster.  Blocks still come in
the pass's order.  A read starts only when the blocks queued and the reads
in flight are fewer than ``prefetch``: with the trainer's block, at most
``prefetch`` + 1 partitions are alive.  It starts as soon as there is that
room: when the trainer takes a block while the reader waits for a read, not
once that read ends (on the 2M x 60 Parquet set, 2 cores, ``prefetch=2``:
the tall fits took 0.85-1.08 of their seconds, the hinge's band from a
sample 0.90-0.99; docs/benchmarks.md, "Read-ahead as soon as there is room").

Every block read is fingerprinted (:mod:`.fingerprint`): a partition that
gives other rows than on its first read (or than the checkpoint a fit
resumes saved) stops the fit with an error naming it.  The first read is
the source's, not the reader's: every reader of one source checks against
the same fingerprints (:func:`source_prints`), so a solver that makes a
reader per read (the primal Newton solver, :func:`read_blocks`) is checked
as a reader of many passes is.

A disk's speed, for benchmarks (:data:`_read_bytes_per_s`, off by
default): when set, every partition's read, from the source or from its
spill, takes at least its bytes over that speed; the reader thread sleeps
the rest (the trainer works meanwhile), as a serial disk would make it wait.
"""

import queue
import threading
import time
import weakref

import numpy as np

from .fingerprint import PartitionPrints
from .malloc import release_free_memory
from .row_ids import RowIds
from .waiting import POLL, OnThread, ReadTimeout

# A reader left at a fit's normal end waits for the reads it began that are still running (the next
# pass's first, begun as a dual trainer decided to stop; Reader.wait_reads), at most this many
# seconds (or ``read_timeout``, where set) for each: the fit then returns with no read of its own
# still taking a core, and a read that hangs longer is left to end on its thread (Dask cannot stop a
# task).
CLOSE_WAIT = 60.0
RETRY_DELAY = 0.1  # seconds before the first repeated read; doubled for each next one, at most 5 s
# I/O errors that repeating the read cannot mend.
PERMANENT = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
# Benchmarks' hook (``bench_out_of_core --read-mb-s``): a disk's speed in bytes a second that every
# partition's read is held to, or None (the default) for reads as fast as they come.  Read once per
# Reader, as it starts.
_read_bytes_per_s = None


# Per source, the fingerprints every read of it is checked against, with the ``row_transform`` they
# were taken under: kept as long as the source lives (:func:`source_prints`).
_SOURCE_PRINTS = weakref.WeakKeyDictionary()
_SOURCE_PRINTS_LOCK = threading.Lock()


def source_prints(source):
    """The :class:`~.fingerprint.PartitionPrints` that every read of ``source`` checks its blocks against.

    One table per source for as long as it lives, whichever reader reads it:
    the first read of a partition, by any reader, is the one later reads
    must match.  A source that changes its ``row_transform`` (the scales of
    :class:`~dask_streamsvm.features.Standardize`, learnt by a read before
    it) gives other rows from then on, and starts a new table.  A source
    that cannot be weakly referenced gets a table of its own per call.
    """
    transform = getattr(source, "row_transform", None)
    with _SOURCE_PRINTS_LOCK:
        try:
            kept = _SOURCE_PRINTS.get(source)
        except TypeError:  # not hashable, or no weak reference to it
            return PartitionPrints()
        if kept is None or kept[0] != transform:
            kept = (transform, PartitionPrints())
            _SOURCE_PRINTS[source] = kept
        return kept[1]


class Stopped(Exception):
    """The reader was closed while waiting for a read; ends the reader thread quietly."""


class Reader:
    """Background thread reading ``source`` pass after pass.

    Use as a context manager: leaving the block stops and joins the thread,
    whatever happened inside, and, where it is left normally, waits for the
    reads the thread began that still run (:meth:`wait_reads`).  ``prints``:
    the fingerprints its blocks must match (a resumed fit's, from its
    checkpoint); by default the source's (:func:`source_prints`), shared with
    every other reader of it.
    ``hold``: after a pass's end, start the next pass's reads only once the
    trainer asks for its first block (:meth:`get` after the end), where the
    trainer decides between passes whether it reads again: the Newton and band
    reads (:class:`~..primal.reads.StreamRead`), whose fit, certified by its
    last read, reads nothing more.  Without it the reader begins the next
    pass at once, and a fit that ends there left those reads to take the cores
    from its last solve and to be waited for (the hinge's band fits:
    docs/benchmarks.md, "A reader that waits for the next read to be asked").
    The dual trainers keep reading on: they train their cache meanwhile, and a
    fit that stops there waits for the reads begun as it leaves the block.
    """

    def __init__(
        self, source, *, prefetch, max_passes, shuffle, seed, start_pass=0, retries=0, row_ids=None,
        prints=None, read_timeout=None, hold=False,
    ):  # fmt: skip
        self.source = source
        self.max_passes = max_passes
        self.start_pass = start_pass
        self.retries = retries
        self.read_timeout = read_timeout
        self.shuffle = shuffle
        self.row_ids = RowIds() if row_ids is None else row_ids
        self.prints = source_prints(source) if prints is None else prints
        self._seed = seed
        self.prefetch = prefetch
        self.hold = hold
        # The pass the trainer last asked a block of (``hold``): ``start_pass``, then a pass more for
        # each end it has taken.
        self._asked = self._ends = start_pass
        self._ahead = {}  # (pass, partition) -> OnThread: reads started before their turn
        self._reads = []  # the reads' OnThreads, each until found done (_began, wait_reads)
        self._left = False  # whether the running reads are left to end on their own (leave_reads)
        self._queue = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        # Notified when a read ends or the trainer takes a block: the reader, waiting for a read, then
        # starts the next reads that have room (:meth:`_compute`).
        self._wake = threading.Condition()
        self._thread = None  # :meth:`_run` on a thread of its own (an OnThread), from __enter__
        # Statistics, written by the reader thread only.
        self.wait_for_room = 0.0
        self._started = self._finished = None
        self.rows_read = 0
        self.bytes_read = 0
        self.throttle_wait = 0.0  # seconds slept to hold reads to ``_read_bytes_per_s``
        self._bytes_per_s = _read_bytes_per_s

    # -- trainer side ---------------------------------------------------------

    def __enter__(self):
        if self._thread is not None:
            raise RuntimeError("a Reader reads once: make a new one to read again")
        self._thread = OnThread(self._run, name="dask-streamsvm-reader")
        return self

    def __exit__(self, kind, *exc):
        self.close()
        if kind is None or kind is GeneratorExit:  # a fit's normal end, or a generator closed
            self.wait_reads()
        return False

    def close(self, timeout=5.0):
        """Stop the thread and wait for it: about :data:`POLL` seconds, as it does not wait for a read
        (the reads it began that still run end on their threads: :meth:`wait_reads`)."""
        self._stop.set()
        self._notify()
        while self._thread is not None and self._thread.is_alive():
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            self._thread.done.wait(0.05)
            timeout -= 0.05
            if timeout <= 0:
                break

    def wait_reads(self):
        """Wait for the reads the thread began that still run, at most :data:`CLOSE_WAIT` seconds
        each (``read_timeout`` where set), unless :meth:`leave_reads` was called: leaving the block
        normally does, so that a fit returns with none of its reads still running."""
        if self._left:
            return
        limit = CLOSE_WAIT if self.read_timeout is None else self.read_timeout
        for read in list(self._reads):
            deadline = time.monotonic() + limit
            while not read.done.wait(POLL) and time.monotonic() < deadline:
                pass
        self._reads = [read for read in self._reads if not read.done.is_set()]

    def leave_reads(self):
        """The reads still running are left to end on their threads, not waited for (Ctrl-C: the fit
        returns what it certified at once)."""
        self._left = True

    def _began(self, fn):
        """``fn()`` begun on a read's thread of its own (:class:`~.waiting.OnThread`), kept until done."""
        self._reads = [read for read in self._reads if not read.done.is_set()]
        read = OnThread(fn, self._notify)
        self._reads.append(read)
        return read

    def get(self, block=True, timeout=None):
        """Next item, or None when ``block`` is false and nothing is ready.

        A wait without ``timeout`` looks up every :data:`~.waiting.POLL` seconds: Linux may hand a
        process's SIGINT to any of its threads, and a main thread blocked on the queue for good
        would then never run the handler, so Ctrl-C would not stop a fit waiting on a hung read.
        """
        if self.hold and self._asked < self._ends:
            self._asked = self._ends  # a block of the next pass asked for: its reads may start
            self._notify()
        try:
            if block and timeout is None:
                while True:
                    try:
                        item = self._queue.get(timeout=POLL)
                        break
                    except queue.Empty:
                        continue
            else:
                item = self._queue.get(block=block, timeout=timeout)
        except queue.Empty:
            return None
        self._notify()  # room for another read
        if item[0] == "error":
            raise item[1]
        if item[0] == "end":
            self._ends += 1
        return item

    def ready(self):
        """Whether :meth:`get` would return at once: an item is queued, or the thread has ended."""
        return not self._queue.empty() or not self._thread.is_alive()

    def partition_order(self, pass_index):
        """Partitions in the order of pass ``pass_index`` (reproducible from the seed)."""
        return pass_order(self.source.n_partitions, pass_index, self.shuffle, self._seed)

    def _notify(self):
        with self._wake:
            self._wake.notify_all()

    # -- reader thread --------------------------------------------------------

    def _put(self, item):
        start = time.perf_counter()
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                break
            except queue.Full:
                continue
        self.wait_for_room += time.perf_counter() - start

    def _wait_for_room(self):
        """Wait until the queue and the reads ahead hold fewer than ``prefetch`` partitions.

        So a new read never makes the reader's side hold more than
        ``prefetch`` partitions (queued or being read); the trainer's block
        makes ``prefetch + 1``.
        """
        start = time.perf_counter()
        q = self._queue
        with q.not_full:
            while len(q.queue) + len(self._ahead) >= self.prefetch and not self._stop.is_set():
                q.not_full.wait(0.05)
        self.wait_for_room += time.perf_counter() - start

    def _read_ahead(self, upcoming):
        """Start the reads of the first of ``upcoming`` ``(pass, partition)`` that fit in ``prefetch``."""
        room = self.prefetch - self._queue.qsize() - 1 - len(self._ahead)  # the current read counts
        for key in upcoming:
            if room <= 0:
                break
            if key not in self._ahead:
                self._ahead[key] = self._began(lambda p=key[1]: self._read(p))
                room -= 1

    def _upcoming(self, k, i):
        """The next ``prefetch - 1`` ``(pass, partition)`` after the ``i``-th partition of pass ``k``.

        Not past the pass's end: at a pass end the trainer may decide that
        it needs no further read (its cache holds every row).
        """
        order = self.partition_order(k)
        return [(k, int(p)) for p in order[i + 1 : i + self.prefetch]]

    def _load(self, p, started=None, upcoming=()):
        """``source.load(p)``, repeated after a transient I/O error (see the module docstring).

        ``started``: its read, if it was started ahead (:meth:`_read_ahead`); ``upcoming``: the
        partitions to read ahead while waiting for it (:meth:`_upcoming`).
        """
        failed = 0
        while True:
            try:
                block = self._compute(p, started if not failed else None, upcoming)
                block.retries = failed
                return block
            except (ReadTimeout, Stopped):
                raise
            except OSError as exc:
                if failed >= self.retries or isinstance(exc, PERMANENT):
                    if failed:
                        exc.add_note(f"(partition {p} failed {failed + 1} reads; retries={self.retries})")
                    raise
                if self._stop.wait(min(RETRY_DELAY * 2**failed, 5.0)):
                    raise
                failed += 1

    def _read(self, p):
        """``source.load(p)`` on a read's thread, unless the reader was closed before that thread ran.

        A read started just before a close (the next pass's first, while a dual trainer decides
        that it needs no more) may run only once the fit has returned and closed its text source's
        spill: it would parse the partition again for nothing (``tests/test_one_parse.py`` counted
        such a parse now and then)."""
        if self._stop.is_set():
            raise Stopped
        return self.source.load(p)

    def _compute(self, p, read=None, upcoming=()):
        """``source.load(p)`` on a thread of its own, waited for while watching ``close`` and the timeout.

        Dask cannot stop a task half-way, so the reader does not wait for a
        read that is no longer wanted: its thread ends at once, and the
        thread computing the partition when its task does (:meth:`wait_reads`
        at a fit's normal end).  ``read``:
        the partition's read if already started.  While it waits, each time
        the trainer takes a block (or a read ends) the reads of ``upcoming``
        that now have room start (:meth:`_read_ahead`), not only those that
        had room when this read began.
        """
        if read is None:
            read = self._began(lambda: self._read(p))
        deadline = None if self.read_timeout is None else time.monotonic() + self.read_timeout
        while True:
            with self._wake:
                if read.done.is_set():
                    break
                self._read_ahead(upcoming)
                self._wake.wait(POLL)
            if self._stop.is_set():
                raise Stopped
            if deadline is not None and time.monotonic() >= deadline:
                raise ReadTimeout(
                    f"partition {self.source.partition_id(p)} was not read within read_timeout="
                    f"{self.read_timeout} s: its task is hung or slower than allowed. Raise read_timeout "
                    "(or pass None to wait without limit), or check the source of that partition."
                )
        return read.result()

    def _hold_to_disk_speed(self, read_start, nbytes):
        """Sleep until a read of ``nbytes`` begun at ``read_start`` took ``nbytes / _read_bytes_per_s``.

        A read started ahead (``prefetch`` > 1) counts from its turn, so the
        reads together never pass that speed, as on one disk.
        """
        rest = read_start + nbytes / self._bytes_per_s - time.perf_counter()
        if rest > 0:
            self.throttle_wait += rest
            if self._stop.wait(rest):
                raise Stopped

    @property
    def busy_seconds(self):
        """Seconds the reader spent reading (its lifetime less its waits for room)."""
        if self._started is None:
            return 0.0
        end = self._finished if self._finished is not None else time.perf_counter()
        return end - self._started - self.wait_for_room

    def _held(self, k):
        """Wait until the trainer asks for a block of pass ``k`` (``hold``) or the reader is closed (the
        stop checked under the lock that :meth:`close` notifies with: no close is missed)."""
        with self._wake:
            while self._asked < k and not self._stop.is_set():
                self._wake.wait(POLL)

    def _run(self):
        self._started = time.perf_counter()
        kept = False  # whether a pass ran since the heaps last gave back what they kept
        try:
            for k in range(self.start_pass, self.max_passes):
                if kept:
                    # What the heaps kept during the last pass (the decoded columns each read reuses,
                    # malloc.TRIM_THRESHOLD; the blocks the trainer has finished) leaves the process,
                    # before this pass's first read: the trainer, told the last pass ended, may stop
                    # meanwhile, and then no read of this pass starts.
                    release_free_memory()
                    kept = False
                if self.hold and k > self.start_pass:
                    self._held(k)  # the trim above ran while the trainer decides
                    if self._stop.is_set():
                        return
                kept = True
                for i, p in enumerate(self.partition_order(k)):
                    if self._stop.is_set():
                        return
                    started = self._ahead.pop((k, int(p)), None)
                    if started is None:
                        self._wait_for_room()
                    upcoming = self._upcoming(k, i) if self.prefetch > 1 else ()
                    self._read_ahead(upcoming)
                    read_start = time.perf_counter()
                    block = self._load(int(p), started, upcoming)
                    if self._bytes_per_s is not None:
                        self._hold_to_disk_speed(read_start, block.nbytes)
                    stamp(block, k, int(p), self.row_ids, self.prints, self.shuffle, self._seed)
                    self.rows_read += block.n_rows
                    self.bytes_read += block.nbytes
                    self._put(("block", k, block))
                self._put(("end", k))
            self._put(("done", None))
        except Stopped:
            return
        except BaseException as exc:  # noqa: BLE001 - handed to the trainer, which re-raises it
            self._put(("error", exc))
        finally:
            if kept:  # the last pass's, as the thread ends (a pass done, stopped or failed)
                release_free_memory()
            self._finished = time.perf_counter()


def pass_order(n_partitions, pass_index, shuffle, seed):
    """The ``n_partitions`` partitions' numbers in the order of pass ``pass_index``: as they are
    without ``shuffle``, else a permutation drawn from ``seed`` and the pass (one seed, one order)."""
    if not shuffle:
        return np.arange(n_partitions)
    return np.random.default_rng([seed, pass_index]).permutation(n_partitions)


def stamp(block, pass_index, p, row_ids, prints, shuffle, seed):
    """What a read gives ``block``, the ``p``-th partition of the source (its order's number) read
    in pass ``pass_index``, before a trainer takes it: its rows' global ids from ``row_ids`` (a
    :class:`~.row_ids.RowIds`), its fingerprint checked against ``prints`` (a
    :class:`~.fingerprint.PartitionPrints`), and the order to visit its rows in (a permutation
    drawn from ``seed``, the pass and ``p`` with ``shuffle``; moving the rows would copy them)."""
    block.row_ids = row_ids.ids(block.partition, block.n_rows)
    prints.check(block)
    if shuffle:
        block.order = np.random.default_rng([seed, pass_index, p, 1]).permutation(block.n_rows)
    else:
        block.order = np.arange(block.n_rows)
    return block


def read_blocks(source, *, passes=1, prefetch=2, shuffle=False, seed=0, retries=0, read_timeout=None):
    """Every block of ``passes`` reads of ``source``, as ``(pass, block)``, read ahead by a :class:`Reader`.

    The one loop over a reader's queue for the drivers that need no pass
    ends (one-pass, budgeted, ``partial_fit``).  Blocks with no rows left
    come too (their ``n_skipped`` may count).  Closing the generator, or
    leaving the loop, stops and joins the reader thread.  Every block is
    checked against the source's first read of its partition
    (:func:`source_prints`), by this call or an earlier one.
    """
    with Reader(
        source, prefetch=prefetch, max_passes=passes, shuffle=shuffle, seed=seed, retries=retries,
        read_timeout=read_timeout,
    ) as reader:  # fmt: skip
        while (item := reader.get())[0] != "done":
            if item[0] == "block":
                yield item[1], item[2]

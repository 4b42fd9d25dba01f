"""Text progress for ``verbose=1``: a bar per reader pass, a line per pass in memory."""

import contextvars
import math
import sys
import time

# Rewrites advice shown with the progress (the note on unscaled features) into the words of where it is
# read: the command line sets it to name its options (--scale) where the library names parameters.
advice_words = contextvars.ContextVar("advice_words", default=None)
CLEAR_LINE = "\x1b[K"  # a terminal's erase to the end of the line: a shorter redraw leaves no tail


def _count(n):
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(int(n))


class PassProgress:
    """Draws ``pass 3 [#####.....] 8/16 partitions 1.2M rows cache 87% gap 3.1e-03``.

    On a terminal the bar is redrawn in place as blocks arrive (at most ten
    times a second); elsewhere (logs, notebooks' captured output) only the
    line that ends each pass is written.  That line is numbered by the
    pass's record, not by the last block seen, and says where a pass read
    nothing: StreamSVM's passes once its cache holds every row (``pass 4
    [no read: every row is in the cache]``), and the primal solver's Newton
    steps on the rows its first read kept (``pass 0 step 2 [no read: ...]``).
    A read that began before the bar (the one that counted the classes) is
    shown whole, its rows from the records' ``rows_read``.
    """

    width = 20

    def __init__(self, n_partitions, stream=None):
        self.n_partitions = max(int(n_partitions), 1)
        self.stream = sys.stderr if stream is None else stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.pass_k = None
        self.parts = self.rows = 0
        self.seen = set()  # this pass's partitions: one seen again is a read started over
        self.rows_read = 0  # the fit's rows read at the last pass end (the records' running count)
        self.ended = None  # the pass of the last line written, and the steps since its read
        self.steps = 0
        self.last_draw = 0.0
        self.last_gap = None

    def block(self, pass_k, n_rows, cache_fill, partition=None):
        if pass_k != self.pass_k or partition in self.seen:  # a new pass, or read 0 started over
            self.pass_k, self.parts, self.rows = pass_k, 0, 0
            self.seen = set()
        if partition is not None:
            self.seen.add(partition)
        self.parts += 1
        self.rows += n_rows
        now = time.monotonic()
        if self.live and (now - self.last_draw > 0.1 or self.parts == self.n_partitions):
            self.last_draw = now
            self._write("\r" + self._line(cache_fill, self.last_gap) + CLEAR_LINE, end="")

    def end_pass(self, records, cache_fill):
        record = records[0]
        gap = max(r["gap"] for r in records)
        self.last_gap = gap
        pass_k = record.get("pass", self.pass_k)
        rows_read = record.get("rows_read")
        extra = ""
        if "validation_score" in record:
            extra = f" val {record['validation_score']:.4f}"
        tail = f" {record['seconds']:.1f}s{extra}"
        if record.get("in_cache"):  # trained and certified from the cache alone
            self.pass_k, self.parts, self.rows, self.seen = pass_k, 0, 0, set()
            text = self._line(cache_fill, gap, "every row is in the cache", record.get("cache_rows", 0))
        elif pass_k == self.ended:  # another step on the rows this pass's read kept (no block since)
            self.steps += 1
            kept = f"the rows read {pass_k} kept"
            text = self._line(cache_fill, gap, kept, self.rows, f" step {self.steps}")
        else:
            if pass_k != self.pass_k:  # a read the bar saw no block of: whole, its rows from the records
                self.pass_k, self.parts, self.seen = pass_k, self.n_partitions, set()
                self.rows = 0 if rows_read is None else rows_read - self.rows_read
            text = self._line(cache_fill, gap)
        if pass_k != self.ended:
            self.ended, self.steps = pass_k, 0
        if rows_read is not None:
            self.rows_read = rows_read
        self._write("\r" + text + tail + CLEAR_LINE if self.live else text + tail)

    def note(self, text):
        """A line of advice under the finished pass's line (the bar goes on below it)."""
        self._write(text)

    def _line(self, cache_fill, gap, trained_on=None, rows=None, step=""):
        """The bar of the pass being read; with ``trained_on``, the line of a pass (or a ``step``
        of one) that read nothing and trained the ``rows`` it names."""
        gap_text = "" if gap is None else f" gap {max(gap, 0.0):.2e}"
        cache_text = "" if cache_fill is None else f" cache {cache_fill:.0%}"  # None: no cache
        if trained_on is not None:
            where = f"[no read: {trained_on}]"
            return f"pass {self.pass_k}{step} {where} {_count(rows)} rows{cache_text}{gap_text}"
        done = min(self.parts, self.n_partitions)
        filled = round(self.width * done / self.n_partitions)
        bar = "#" * filled + "." * (self.width - filled)
        return (
            f"pass {self.pass_k} [{bar}] {done}/{self.n_partitions} partitions "
            f"{_count(self.rows)} rows{cache_text}{gap_text}"
        )

    def _write(self, text, end="\n"):
        self.stream.write(text + end)
        self.stream.flush()


def round_line(record, name="LinearSVC"):
    """One line per round of a cluster's rounds (CoCoA+): its certificate, the bytes it moved;
    ``name`` the model's."""
    return (
        f"[{name}] {record.get('method', 'cocoa')} round {record['round']}: primal={record['primal']:.6f} "
        f"dual={record['dual']:.6f} gap={max(record['gap'], 0.0):.3e} "
        f"between_workers={record.get('bytes_between_workers', 0)}B t={record['seconds']:.3f}s"
    )


def part_line(record, name="LinearSVC"):
    """One line per part of ``cluster="average"`` as its worker finishes training it."""
    return (
        f"[{name}] average: part {record['part'] + 1} of {record['parts']} trained on {record['worker']} "
        f"t={record['seconds']:.3f}s"
    )


def pass_line(record, name="LinearSVC"):
    """One line per in-memory pass (``verbose=1``) or per record (``verbose >= 2``): the certificate
    where the pass computed one (in memory not every pass does: its values are NaN then), a gap
    that rounding made negative shown as 0; ``name`` the model's."""
    if "active" in record:
        where = f"active={record['active']}"
    elif "cache_rows" in record:
        where = f"cache_rows={record['cache_rows']}"
    else:  # a Newton step in memory (the multinomial model): its line search's length
        where = f"step={record['step']:.3g}"
    extra = f" val={record['validation_score']:.4f}" if "validation_score" in record else ""
    certified = all(math.isfinite(record.get(k, math.nan)) for k in ("primal", "dual", "gap"))
    certificate = (
        f"primal={record['primal']:.6f} dual={record['dual']:.6f} gap={max(record['gap'], 0.0):.3e} "
        if certified
        else ""
    )
    return (
        f"[{name}] class={record['class']!r} pass {record['pass']}: {certificate}{where} "
        f"t={record['seconds']:.3f}s{extra}"
    )

"""Text progress for ``verbose=1``: a bar per reader pass, a line per pass in memory."""

import math
import sys
import time


def _count(n):
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(int(n))


class PassProgress:
    """Draws ``pass 3 [#####.....] 8/16 partitions 1.2M rows cache 87% gap 3.1e-03``.

    On a terminal the bar is redrawn in place as blocks arrive (at most ten
    times a second); elsewhere (logs, notebooks' captured output) only the
    line that ends each pass is written.
    """

    width = 20

    def __init__(self, n_partitions, stream=None):
        self.n_partitions = max(int(n_partitions), 1)
        self.stream = sys.stderr if stream is None else stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.pass_k = None
        self.parts = self.rows = 0
        self.last_draw = 0.0
        self.last_gap = None

    def block(self, pass_k, n_rows, cache_fill):
        if pass_k != self.pass_k:
            self.pass_k, self.parts, self.rows = pass_k, 0, 0
        self.parts += 1
        self.rows += n_rows
        now = time.monotonic()
        if self.live and (now - self.last_draw > 0.1 or self.parts == self.n_partitions):
            self.last_draw = now
            self._write("\r" + self._line(cache_fill, self.last_gap), end="")

    def end_pass(self, records, cache_fill):
        gap = max(r["gap"] for r in records)
        self.last_gap = gap
        seconds = records[0]["seconds"]
        extra = ""
        if "validation_score" in records[0]:
            extra = f" val {records[0]['validation_score']:.4f}"
        text = self._line(cache_fill, gap) + f" {seconds:.1f}s{extra}"
        self._write(("\r" if self.live else "") + text)

    def note(self, text):
        """A line of advice under the finished pass's line (the bar goes on below it)."""
        self._write(text)

    def _line(self, cache_fill, gap):
        done = min(self.parts, self.n_partitions)
        filled = round(self.width * done / self.n_partitions)
        bar = "#" * filled + "." * (self.width - filled)
        gap_text = "" if gap is None else f" gap {max(gap, 0.0):.2e}"
        cache_text = "" if cache_fill is None else f" cache {cache_fill:.0%}"  # None: no cache
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


def pass_line(record, name="LinearSVC"):
    """One line per in-memory pass (``verbose=1``) or per record (``verbose >= 2``): the certificate
    where the pass computed one (in memory not every pass does: its values are NaN then), a gap
    that rounding made negative shown as 0; ``name`` the model's."""
    where = f"active={record['active']}" if "active" in record else f"cache_rows={record['cache_rows']}"
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

"""SIGTERM during a fit: unwound like Ctrl-C, so that the fit cleans up, then the process ends.

SIGTERM's default action ends a process at once: no ``finally`` block
runs, so a streaming fit would leave its spill directory and the files of
``alpha_store="disk"`` behind.  While a fit runs in the main thread,
:func:`sigterm_unwinds` turns SIGTERM into :class:`Terminated`, an
exception that no part of a fit catches (a KeyboardInterrupt returns the
certified model; SIGTERM asks the process to end): the fit's ``with``
blocks run and remove what it wrote, the default action is restored and
the signal raised again, so the process ends as SIGTERM asked, killed by
it, after the clean-up.

A program that handles or ignores SIGTERM itself keeps its handler:
nothing is installed then (its handler decides), nor outside the main
thread, where Python delivers no signal.
"""

import contextlib
import signal
import threading


class Terminated(SystemExit):
    """SIGTERM arrived during a fit.  A SystemExit with status 128 + SIGTERM, so that, raised
    anywhere the fit's own handler cannot see it, the interpreter still ends as SIGTERM asks."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


@contextlib.contextmanager
def sigterm_unwinds():
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (once: a second
    SIGTERM while the fit unwinds is ignored, so that its clean-up finishes); the process then
    ends by SIGTERM.  The previous handler is restored however the block ends."""
    sigterm = getattr(signal, "SIGTERM", None)
    if (
        sigterm is None
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(sigterm) is not signal.SIG_DFL
    ):
        yield
        return
    received = []

    def terminate(signum, frame):
        if not received:
            received.append(signum)
            raise Terminated()

    signal.signal(sigterm, terminate)
    try:
        yield
    except Terminated:
        if not received:  # raised by someone else: not ours to act on
            raise
    finally:
        signal.signal(sigterm, signal.SIG_DFL)
        if received:  # the fit has unwound, however: end as SIGTERM asked, by its default action
            signal.raise_signal(sigterm)
    if received:  # pragma: no cover - only if SIGTERM is blocked in this thread
        raise Terminated()

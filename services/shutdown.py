"""Clean shutdown on SIGTERM and SIGINT for the long-running commands: `stream`,
`exporter` and `demo`.

Python's default SIGTERM kills the process on the spot: no `finally` block runs, so the
embedded PostgreSQL the command started stays behind as an orphan (and the process's
entry in its handle list stays too). Under `stoppable`, the first signal only records
itself: the command notices it at its next safe point (`requested()`; the stream between
micro-batches, the exporter while it waits), finishes or abandons the step in hand and
returns through its context managers, which stop the query, dispose of the engines and
stop the embedded server. A second signal, a second or more after the first, raises
`Interrupted` at once, for an operator who will not wait; the `finally` blocks still run.
(Within that second it is the same request delivered twice, as `timeout` and a shell's
process group both send it.)

A command stopped by a signal exits with 128 + the signal's number (143 for SIGTERM,
130 for SIGINT), as shells report a process the signal killed: the run did not complete,
which matters to scripts around `stream --once` and `demo`.
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)

REPEAT_S = 1.0

_requested = threading.Event()
_signal_number: list[int] = []
_first_at: list[float] = []


class Interrupted(BaseException):
    """A second signal arrived while the command was still shutting down.

    A BaseException, like KeyboardInterrupt, so that `except Exception` does not stop it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


def requested() -> int | None:
    """The number of the signal that asked the command to stop, or None."""
    return _signal_number[0] if _requested.is_set() else None


def wait(timeout: float | None = None) -> bool:
    """Block until a stop is requested, or `timeout` seconds; True once requested."""
    return _requested.wait(timeout)


def _handle(signum: int, _frame: FrameType | None) -> None:
    if _requested.is_set():
        if time.monotonic() - _first_at[0] < REPEAT_S:
            return
        raise Interrupted(signum)
    _signal_number.append(signum)
    _first_at.append(time.monotonic())
    _requested.set()


def _reset() -> None:
    _requested.clear()
    _signal_number.clear()
    _first_at.clear()


def stoppable(command: Callable[[Any], int]) -> Callable[[Any], int]:
    """Run `command` with the handlers installed; 128 + signal number if it was stopped.

    The handlers can only be installed from the main thread; elsewhere (a test's worker
    thread) the command runs with the process's own handling.
    """

    @functools.wraps(command)
    def run(args: Any) -> int:
        if threading.current_thread() is not threading.main_thread():
            return command(args)
        previous = {signum: signal.signal(signum, _handle) for signum in SIGNALS}
        _reset()
        try:
            code = command(args)
        except Interrupted as exc:
            return 128 + exc.signum
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        stopped_by = requested()
        _reset()
        return code if stopped_by is None else 128 + stopped_by

    return run

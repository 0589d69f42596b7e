"""The thread that reads what the members report, and ticks the run's clock.

Every member writes to its own pipe, so a member killed in the middle of a write can
break only its own pipe, never another's (a shared multiprocessing queue could be left
locked). Events are handled under one condition variable shared with the fleet, which
is notified after each one, so that steps can wait for a member to join.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

TICK_S = 0.2


class EventPump(threading.Thread):
    def __init__(self, lock: threading.Condition, tick: Callable[[], None]) -> None:
        super().__init__(name="workload-events", daemon=True)
        self.lock = lock
        self._tick = tick
        self._watched: dict[Connection, tuple[Callable[[tuple], None], Callable[[], None]]] = {}
        self._halt = threading.Event()

    def watch(
        self,
        conn: Connection,
        on_event: Callable[[tuple], None],
        on_close: Callable[[], None],
    ) -> None:
        """Call `on_event(event)` for each event on `conn`, and `on_close()` at its end;
        both under the lock."""
        with self.lock:
            self._watched[conn] = (on_event, on_close)

    def _read(self, conn: Connection) -> None:
        on_event, on_close = self._watched[conn]
        try:
            event: Any = conn.recv()
        except (EOFError, OSError):
            with self.lock:
                del self._watched[conn]
                on_close()
                self.lock.notify_all()
            conn.close()
            return
        with self.lock:
            on_event(event)
            self.lock.notify_all()

    def run(self) -> None:
        while not self._halt.is_set():
            with self.lock:
                conns = list(self._watched)
            if conns:
                ready = wait(conns, timeout=TICK_S)
                for conn in conns:
                    if conn in ready:
                        self._read(conn)
            else:
                self._halt.wait(TICK_S)
            self._tick()

    def drain(self, timeout: float) -> None:
        """Wait until every watched pipe has closed (or `timeout` passes)."""
        with self.lock:
            self.lock.wait_for(lambda: not self._watched, timeout)

    def stop(self) -> None:
        self._halt.set()
        self.join(5)

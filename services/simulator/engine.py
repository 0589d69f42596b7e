"""Time: a scheduler of timed callbacks over a simulated or a wall clock.

The simulated clock jumps to each event's time (an hour of a busy cluster in seconds);
the wall clock sleeps until it, so records appear live. Ties run in scheduling order,
which keeps a seeded run deterministic.
"""

from __future__ import annotations

import heapq
import itertools
import time as _time
from collections.abc import Callable
from typing import Any

DEFAULT_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, the simulated clock's epoch


class Scheduler:
    """Runs callbacks in time order until `end` (ms)."""

    def __init__(self, start: int, wall_clock: bool = False) -> None:
        self.now = start
        self.start = start
        self.wall_clock = wall_clock
        self._queue: list[tuple[int, int, Callable[..., Any], tuple]] = []
        self._seq = itertools.count()
        self._wall_origin = _time.time() * 1000 - start

    def at(self, when: int, callback: Callable[..., Any], *args: Any) -> None:
        heapq.heappush(self._queue, (max(when, self.now), next(self._seq), callback, args))

    def after(self, delay: int, callback: Callable[..., Any], *args: Any) -> None:
        self.at(self.now + delay, callback, *args)

    def run(self, end: int, progress: Callable[[int], None] | None = None) -> None:
        queue = self._queue
        pop = heapq.heappop
        steps = 0
        while queue and queue[0][0] <= end:
            when, _, callback, args = pop(queue)
            self._wait_until(when)
            self.now = when
            callback(*args)
            steps += 1
            if progress is not None and steps % 4096 == 0:
                progress(when)
        self._wait_until(end)
        self.now = end

    def _wait_until(self, when: int) -> None:
        if self.wall_clock:
            wait = (self._wall_origin + when) / 1000 - _time.time()
            if wait > 0:
                _time.sleep(wait)

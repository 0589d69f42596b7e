"""The steady trickle of messages the groups consume: a thread with one producer."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

TICK_S = 0.1
BACKLOG_S = 5.0


class Trickle(threading.Thread):
    """Produces `rate` messages per second, round-robin over `topics`, keyed so that
    they spread over every partition. `stop()` flushes and ends the thread."""

    def __init__(self, config: Mapping[str, str], topics: Sequence[str], rate: float) -> None:
        super().__init__(name="workload-producer", daemon=True)
        from confluent_kafka import Producer

        settings = {**config, "linger.ms": 50, "client.id": "workload-producer"}
        self._producer: Any = Producer(settings)
        self._topics = list(topics)
        self._rate = rate
        self._halt = threading.Event()
        self.produced = 0
        self.failed = 0
        self.last_error: str | None = None

    def _on_delivery(self, err: Any, _message: Any) -> None:
        if err is None:
            self.produced += 1
        else:
            self.failed += 1
            self.last_error = str(err)

    def run(self) -> None:
        started = time.monotonic()
        sent = 0
        keys = itertools.count()
        topics = itertools.cycle(self._topics)
        while not self._halt.is_set():
            due = int((time.monotonic() - started) * self._rate)
            sent = max(sent, due - int(self._rate * BACKLOG_S))  # no burst after an outage
            while sent < due:
                key = next(keys)
                value = json.dumps({"n": key, "at": time.time()}).encode()
                try:
                    self._producer.produce(
                        next(topics),
                        key=str(key).encode(),
                        value=value,
                        on_delivery=self._on_delivery,
                    )
                except BufferError:
                    break  # the broker is away: deliver what is queued, catch up later
                sent += 1
            self._producer.poll(0)
            self._halt.wait(TICK_S)
        self._producer.flush(10)
        self._producer = None  # destroy the client now, not whenever it is collected

    def stop(self) -> None:
        self._halt.set()
        self.join(15)

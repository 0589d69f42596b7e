"""The driver's cluster metadata lookups (topic names, replica racks): their AdminClient,
and failures that never stop the stream: said once while they last, retried later."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any


class ClusterLookup:
    """An AdminClient, made at the first lookup (a job that never needs one opens no
    connection), or None where librdkafka refused the properties (a Java-only one given to
    `--source spark-kafka`), which `unable` says once; and when to ask again."""

    def __init__(
        self,
        config: dict[str, Any],
        log: logging.Logger,
        unable: str,
        retry_after: float,
        clock: Callable[[], float],
    ) -> None:
        self.admin: Any = None
        self._config: dict[str, Any] | None = config  # until the client is made
        self._log = log
        self._unable = unable
        self._retry_after = retry_after
        self._clock = clock
        self._retry_at = 0.0
        self._failing = False

    def ready(self) -> bool:
        """True when there is a client and no failed lookup within `retry_after`."""
        if self._config is not None:
            from confluent_kafka import KafkaException
            from confluent_kafka.admin import AdminClient

            from spark_jobs.broker import quiet

            config, self._config = self._config, None
            try:
                self.admin = AdminClient(quiet(config))
            except KafkaException as exc:
                self._log.warning("%s: %s", self._unable, exc)
        return self.admin is not None and self._clock() >= self._retry_at

    def failed(self, message: str) -> None:
        """A lookup failed: `message` is logged unless the last one failed too."""
        self._retry_at = self._clock() + self._retry_after
        if not self._failing:
            self._log.warning("%s", message)
        self._failing = True

    def answered(self) -> None:
        if self._failing:
            self._log.info("the cluster answers again")
        self._failing = False

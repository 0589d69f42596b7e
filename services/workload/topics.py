"""Create the workload's topics if they are missing (AdminClient)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

TIMEOUT_S = 30.0


def ensure_topics(
    config: Mapping[str, str],
    names: Sequence[str],
    partitions: int,
    replication_factor: int = -1,
) -> list[str]:
    """Create those of `names` that do not exist; wait until all are visible.

    Returns the names created. An existing topic is used as it is, whatever its
    partition count. `replication_factor=-1` leaves it to the broker's default.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(dict(config))
    existing = admin.list_topics(timeout=TIMEOUT_S).topics
    missing = [n for n in names if n not in existing]
    created = []
    if missing:
        futures = admin.create_topics(
            [NewTopic(n, partitions, replication_factor) for n in missing],
            request_timeout=TIMEOUT_S,
        )
        for name, future in futures.items():
            try:
                future.result(TIMEOUT_S)
                created.append(name)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
    deadline = time.monotonic() + TIMEOUT_S
    while not all(n in admin.list_topics(timeout=TIMEOUT_S).topics for n in names):
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {', '.join(names)} did not all appear")
        time.sleep(0.2)
    return created

"""Upper bounds of numeric flags.

Each bound lies far beyond any real use and below where a value breaks something deep
inside (an int32 column, a list allocated per partition, a timer's platform limit), so
an extreme value gets a one-line reason and exit 2 instead of a traceback or a hang.
"""

from __future__ import annotations

INT32_MAX = 2**31 - 1  # Kafka partition numbers are int32 on the wire
INT64_MAX = 2**63 - 1  # Kafka offsets and Spark's read limits are int64 / Java long
# offsets.topic.num.partitions: Kafka's default is 50; the simulator keeps a list entry
# per partition, so a bound keeps `--partitions 99999999999` from exhausting memory.
MAX_OFFSETS_PARTITIONS = 100_000
# Simulated groups: 10,000 is the load scenario's default; each group costs memory.
MAX_SIMULATED_GROUPS = 1_000_000


def at_most(flag: str, value: int | float, maximum: int | float) -> None:
    """A one-line `UsageError` when `value` is above `maximum`."""
    from services.cli import UsageError

    if value > maximum:
        raise UsageError(f"{flag} must be at most {maximum:,}, got {value}")

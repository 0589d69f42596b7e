"""``assign``: one entry point for the six assignors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.assignor.model import (
    AssignmentError,
    Member,
    RawMember,
    check_partition_counts,
    check_partition_racks,
    to_members,
)
from services.assignor.range import assign_range
from services.assignor.roundrobin import assign_roundrobin
from services.assignor.server.range import assign_server_range
from services.assignor.server.uniform import assign_uniform
from services.assignor.sticky.assignor import assign_sticky

ASSIGNORS: tuple[str, ...] = (
    "range",
    "roundrobin",
    "sticky",
    "cooperative-sticky",
    "uniform",
    "server-range",
)


def assign(
    assignor: str,
    partitions_per_topic: Mapping[str, int],
    members: Sequence[RawMember | Member],
    partition_racks: Mapping[str, Sequence[Sequence[str] | None]] | None = None,
    topic_ids: Mapping[str, str] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """Run Kafka's ``assignor`` and return each member's partitions as (topic, partition).

    ``members`` are mappings with ``id``, ``topics``, ``owned`` ((topic, partition) pairs),
    ``generation`` (None or -1 for none), ``rack`` and ``group_instance_id``. The order of
    ``members`` stands for the order of Kafka's JoinGroup member list, which only matters
    where Kafka's result depends on HashMap iteration order.

    ``topic_ids`` (topic name -> Kafka's base64 ``Uuid``) matter to ``uniform`` only, which
    orders topics by id; topics without one get ids that order like their names.

    Raises ``AssignmentError`` for malformed input and ``PartitionAssignorError`` where
    Kafka's server-side assignors raise ``PartitionAssignorException``.
    """
    check_assignor(assignor)
    counts = check_partition_counts(partitions_per_topic)
    if assignor in ("sticky", "cooperative-sticky"):
        return _sticky(counts, members, partition_racks, assignor == "cooperative-sticky")
    group = to_members(members)
    racks = check_partition_racks(partition_racks, counts)
    if assignor == "range":
        return assign_range(counts, group, racks)
    if assignor == "roundrobin":
        return assign_roundrobin(counts, group)
    if assignor == "uniform":
        return assign_uniform(counts, group, racks, topic_ids)
    return assign_server_range(counts, group)


def check_assignor(name: object) -> str:
    """``name`` if it names one of ``ASSIGNORS``; else ``AssignmentError``."""
    if not isinstance(name, str) or name not in ASSIGNORS:
        raise AssignmentError(f"unknown assignor {name!r}; choose from {', '.join(ASSIGNORS)}")
    return name


def _sticky(
    counts: dict[str, int],
    members: Sequence[RawMember | Member],
    partition_racks: Mapping[str, Sequence[Sequence[str] | None]] | None,
    cooperative: bool,
) -> dict[str, list[tuple[str, int]]]:
    """The sticky assignors read the owned partitions themselves (``assign_sticky``).

    Errors stay those of the usual order (members, their owned partitions included, then
    racks): if any check fails, the full checks run again and raise the first failure.
    """
    raw = list(members)
    try:
        group = to_members(raw, with_owned=False)
        racks = check_partition_racks(partition_racks, counts)
    except AssignmentError:
        to_members(raw)
        raise
    return assign_sticky(counts, group, racks, cooperative=cooperative, sent=raw)

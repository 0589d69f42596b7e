"""``uniform``: ``org.apache.kafka.coordinator.group.assignor.UniformAssignor`` (KIP-848).

Homogeneous groups go to ``UniformHomogeneousAssignmentBuilder``, heterogeneous ones to
``UniformHeterogeneousAssignmentBuilder`` (see their modules). Kafka 4.3.1's builders
ignore racks, so ``racks`` plays no part. Kafka orders topics by their ids (``HashSet``
iteration, ``Uuid.compareTo``), so which partitions move depends on them: pass the
cluster's ``topic_ids`` (name -> Kafka's base64 ``Uuid``) for Kafka's exact result; without
them, ids that order like the names stand in (``topic_ids``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.assignor.model import Assignment, Member
from services.assignor.server.common import group_topic_ids, member_order, to_output
from services.assignor.server.uniform_heterogeneous import HeterogeneousBuilder
from services.assignor.server.uniform_homogeneous import assign_homogeneous


def assign_uniform(
    counts: Mapping[str, int],
    members: list[Member],
    racks: Mapping[str, Sequence[frozenset[str]]],
    topic_ids: Mapping[str, str] | None = None,
) -> Assignment:
    """``UniformAssignor.assign``; ``racks`` is accepted for the common signature only."""
    del racks
    if not members:
        return {}
    ids = group_topic_ids(counts, members, topic_ids)
    ordered = member_order(members)
    if all(set(m.topics) == set(ordered[0].topics) for m in ordered):
        assigned = assign_homogeneous(counts, ordered, ids)
    else:
        assigned = HeterogeneousBuilder(counts, ordered, ids).build()
    return to_output(members, assigned)

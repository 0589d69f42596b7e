"""``uniform``: ``org.apache.kafka.coordinator.group.assignor.UniformAssignor`` (KIP-848).

Homogeneous groups go to ``UniformHomogeneousAssignmentBuilder``, heterogeneous ones to
``UniformHeterogeneousAssignmentBuilder`` (see their modules). Kafka 4.3.1's builders
ignore racks, so ``racks`` plays no part. Kafka iterates topics by topic id (a HashSet of
UUIDs, or UUID order as the last tie-break); we use topic names. The result is Kafka's
exactly when the ids sort like the names (as the differential tests arrange); otherwise
which partitions move can differ, though the sizes and the number of moves do not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.assignor.model import Assignment, Member
from services.assignor.server.common import member_order, to_output
from services.assignor.server.uniform_heterogeneous import HeterogeneousBuilder
from services.assignor.server.uniform_homogeneous import assign_homogeneous


def assign_uniform(
    counts: Mapping[str, int],
    members: list[Member],
    racks: Mapping[str, Sequence[frozenset[str]]],
) -> Assignment:
    """``UniformAssignor.assign``; ``racks`` is accepted for the common signature only."""
    del racks
    if not members:
        return {}
    ordered = member_order(members)
    if all(set(m.topics) == set(ordered[0].topics) for m in ordered):
        assigned = assign_homogeneous(counts, ordered)
    else:
        assigned = HeterogeneousBuilder(counts, ordered).build()
    return to_output(members, assigned)

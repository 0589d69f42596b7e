"""Read back each live group's latest generation: where the streaming job resumes.

The job measures a rebalance against the group's previous generation, which may have
been written by an earlier run. On start it reads the latest generation of every group
of its cluster that is not deleted, with its members and assignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine, select
from sqlalchemy.dialects.postgresql import distinct_on

from services.store.clusters import DEFAULT_CLUSTER
from services.store.models import Generation, GenerationMember, Group


@dataclass(frozen=True)
class LatestMember:
    member_id: str
    group_instance_id: str | None
    subscribed_topics: Sequence[str]
    assignment: dict[str, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class LatestGeneration:
    group: str
    generation: int
    assignor: str | None
    source_partition: int
    source_offset: int
    time: datetime
    members: Sequence[LatestMember]


def latest_generations(
    engine: Engine, cluster: str = DEFAULT_CLUSTER
) -> dict[str, LatestGeneration]:
    """The newest generation (by source position) of every group of `cluster` not
    deleted."""
    newest = (
        select(Generation)
        .join(Group, (Group.cluster == Generation.cluster) & (Group.name == Generation.group_name))
        .where(Group.deleted_at.is_(None), Generation.cluster == cluster)
        .order_by(
            Generation.group_name,
            Generation.source_partition.desc(),
            Generation.source_offset.desc(),
        )
        .ext(distinct_on(Generation.group_name))
    )
    with engine.connect() as conn:
        generations = conn.execute(newest).all()
        pks = [g.id for g in generations]
        members = (
            conn.execute(
                select(GenerationMember).where(GenerationMember.generation_pk.in_(pks))
            ).all()
            if pks
            else []
        )
    grouped: dict[int, list[LatestMember]] = {}
    for m in members:
        grouped.setdefault(m.generation_pk, []).append(
            LatestMember(
                m.member_id,
                m.group_instance_id,
                tuple(m.subscribed_topics or ()),
                {topic: list(partitions) for topic, partitions in m.assignment.items()},
            )
        )
    return {
        g.group_name: LatestGeneration(
            g.group_name,
            g.generation,
            g.assignor,
            g.source_partition,
            g.source_offset,
            g.time,
            grouped.get(g.id, []),
        )
        for g in generations
    }

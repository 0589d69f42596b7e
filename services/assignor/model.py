"""Input checking and normalisation shared by every assignor.

The public shapes are plain mappings (see ``services.assignor.assign``); the assignors work
on ``Member`` records whose owned partitions are already validated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import cast

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]
# A member as given (JSON): ``id``, ``topics``, ``owned``, ``generation``, ... unchecked.
RawMember = Mapping[str, object]


class AssignmentError(ValueError):
    """The input cannot be assigned: a malformed group, or a case where Kafka raises."""


class PartitionAssignorError(AssignmentError):
    """Mirrors Kafka's ``PartitionAssignorException`` (server-side assignors)."""


@dataclass(frozen=True, slots=True)
class Member:
    """One group member. ``generation`` is None when unknown (Kafka's -1)."""

    id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int | None = None
    rack: str | None = None
    group_instance_id: str | None = None


def _topic_partition(value: object, member_id: str) -> TopicPartition:
    if isinstance(value, Mapping):
        value = (value.get("topic"), value.get("partition"))
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise AssignmentError(f"member {member_id!r}: owned entries are [topic, partition] pairs")
    topic, partition = value
    if not isinstance(topic, str) or isinstance(partition, bool) or not isinstance(partition, int):
        raise AssignmentError(f"member {member_id!r}: owned entries are [topic, partition] pairs")
    if partition < 0:
        raise AssignmentError(f"member {member_id!r}: negative partition {topic}-{partition}")
    return topic, partition


def _owned(values: object, member_id: str) -> tuple[TopicPartition, ...]:
    """Owned partitions as tuples: checked in bulk when well formed, one by one otherwise."""
    if isinstance(values, (list, tuple)):
        items: list[object] | tuple[object, ...] = values
    elif isinstance(values, Iterable) and not isinstance(values, (str, bytes, Mapping)):
        items = list(values)
    else:
        raise AssignmentError(f"member {member_id!r}: owned must be a list of [topic, partition]")
    if set(map(type, items)) <= {tuple}:
        pairs = cast("tuple[tuple[object, ...], ...]", tuple(items))  # all tuples, just checked
    else:
        try:  # an item that is not iterable raises TypeError: then all are checked one by one
            pairs = tuple(map(tuple, cast("Sequence[Iterable[object]]", items)))
        except TypeError:
            pairs = ()
    if len(pairs) == len(items) and set(map(len, pairs)) <= {2}:
        partitions = list(map(itemgetter(1), pairs))
        if (
            set(map(type, partitions)) <= {int}
            and min(partitions, default=0) >= 0
            and set(map(type, map(itemgetter(0), pairs))) <= {str}
        ):
            return cast("tuple[TopicPartition, ...]", pairs)  # (str, int >= 0) pairs, checked
    return tuple(_topic_partition(value, member_id) for value in items)


def _optional_str(raw: RawMember, key: str, member_id: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise AssignmentError(f"member {member_id!r}: {key} must be a string or null")
    return value


def _checked_owned(values: object, member_id: str) -> tuple[TopicPartition, ...]:
    owned = _owned(values or (), member_id)
    if len(set(owned)) != len(owned):
        raise AssignmentError(f"member {member_id!r} owns a partition twice")
    return owned


def to_member(raw: RawMember | Member, *, with_owned: bool = True) -> Member:
    """Validate one member mapping (``id``, ``topics``, ``owned``, ``generation``, ...).

    With ``with_owned=False`` the owned partitions are neither read nor checked and the
    member owns nothing; ``owned_as_sent`` and ``with_owned`` supply them later.
    """
    if isinstance(raw, Member):
        return raw if with_owned or not raw.owned else replace(raw, owned=())
    if not isinstance(raw, Mapping):
        raise AssignmentError("each member must be an object")
    member_id = raw.get("id")
    if not isinstance(member_id, str) or not member_id:
        raise AssignmentError("each member needs a non-empty string id")
    topics = raw.get("topics") or ()
    if isinstance(topics, (str, Mapping)) or not isinstance(topics, Iterable):
        raise AssignmentError(f"member {member_id!r}: topics must be a list of strings")
    topics = tuple(topics)
    if not set(map(type, topics)) <= {str}:
        raise AssignmentError(f"member {member_id!r}: topics must be a list of strings")
    owned = _checked_owned(raw.get("owned"), member_id) if with_owned else ()
    generation = raw.get("generation")
    if generation is not None and (isinstance(generation, bool) or not isinstance(generation, int)):
        raise AssignmentError(f"member {member_id!r}: generation must be an integer or null")
    if generation is not None and generation < 0:
        generation = None
    return Member(
        id=member_id,
        topics=tuple(dict.fromkeys(topics)),
        owned=owned,
        generation=generation,
        rack=_optional_str(raw, "rack", member_id),
        group_instance_id=_optional_str(raw, "group_instance_id", member_id),
    )


def to_members(
    raw_members: Iterable[RawMember | Member], *, with_owned: bool = True
) -> list[Member]:
    """``to_member`` for each member; member ids must be unique."""
    members = [to_member(m, with_owned=with_owned) for m in raw_members]
    seen: set[str] = set()
    for member in members:
        if member.id in seen:
            raise AssignmentError(f"member id {member.id!r} appears twice")
        seen.add(member.id)
    return members


def owned_as_sent(raw: RawMember | Member) -> object:
    """A member's owned partitions exactly as given: not copied, not checked."""
    return raw.owned if isinstance(raw, Member) else raw.get("owned")


def with_owned(member: Member, raw: RawMember | Member) -> Member:
    """``member`` (``to_member(raw, with_owned=False)``) with raw's owned partitions.

    They are checked as ``to_member`` checks them and raise the same errors; a ``Member``
    given as such keeps its owned partitions unchecked, as ``to_member`` keeps them.
    """
    if isinstance(raw, Member):
        return raw
    owned = _checked_owned(raw.get("owned"), member.id)
    return replace(member, owned=owned) if owned else member


def check_partition_counts(partitions_per_topic: Mapping[str, int]) -> dict[str, int]:
    if not isinstance(partitions_per_topic, Mapping):
        raise AssignmentError("partitions_per_topic must map topic to partition count")
    counts: dict[str, int] = {}
    for topic, count in partitions_per_topic.items():
        if not isinstance(topic, str):
            raise AssignmentError("topic names must be strings")
        if isinstance(count, bool) or not isinstance(count, int):
            raise AssignmentError(f"topic {topic!r}: partition count must be an integer")
        if count < 0:
            raise AssignmentError(f"topic {topic!r}: negative partition count {count}")
        counts[topic] = count
    return counts


def check_partition_racks(
    partition_racks: Mapping[str, Sequence[Sequence[str] | None]] | None,
    counts: Mapping[str, int],
) -> dict[str, list[frozenset[str]]]:
    """Replica racks per partition; partitions of topics not listed have no known racks."""
    if not partition_racks:
        return {}
    if not isinstance(partition_racks, Mapping):
        raise AssignmentError("partition_racks must map topic to a list of replica racks")
    racks: dict[str, list[frozenset[str]]] = {}
    for topic, per_partition in partition_racks.items():
        if topic not in counts:
            continue
        if isinstance(per_partition, (str, Mapping)) or not isinstance(per_partition, Sequence):
            raise AssignmentError(f"partition_racks[{topic!r}] must be a list, one per partition")
        if len(per_partition) != counts[topic]:
            raise AssignmentError(
                f"partition_racks[{topic!r}] has {len(per_partition)} entries "
                f"for {counts[topic]} partitions"
            )
        entries = []
        for entry in per_partition:
            listed = entry is None or (
                isinstance(entry, Sequence) and not isinstance(entry, (str, bytes))
            )
            if not listed or not all(r is None or isinstance(r, str) for r in entry or ()):
                raise AssignmentError(
                    f"partition_racks[{topic!r}]: each entry is a list of rack names"
                )
            entries.append(frozenset(r for r in entry or () if r is not None))
        racks[topic] = entries
    return racks

"""Making a batch's values storable, and recording every change as a `Repair`.

Anything a Kafka client sends ends up in `__consumer_offsets`: a commit's metadata, a
group id, member and client ids, hosts, topics. Two kinds of strings PostgreSQL refuses:

- **U+0000.** A `text` value cannot hold it (`invalid byte sequence for encoding
  "UTF8": 0x00`), and a json `\\u0000` cannot be read back as text. It is replaced by
  U+FFFD (`storable_text`).
- **Over-long keys.** A btree entry must fit a third of a page (about 2,700 bytes:
  `index row size … exceeds btree … maximum`). Group ids, topics and member ids are
  keys; one longer than `KEY_LIMIT_BYTES` is stored as a prefix, "…" and the SHA-256 of
  the whole (`storable_key`). Every command that looks a group up by name applies the
  same function, so `groupscope postmortem <the full name>` finds it.

Each changed field becomes a `Repair` (its original UTF-8 bytes, what was stored), which
the store writes to `record_repairs` in the batch's transaction.

The checks sit on the offset-commit hot path, so a clean string costs one `len` and one
`in` (`needs_repair`); the string that needs work takes the slow path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace

from services.store.batch import (
    DecodeFailure,
    Generation,
    GroupEvent,
    Member,
    OffsetCommit,
    Repair,
)

NUL = "\x00"
REPLACEMENT = "\ufffd"
ELLIPSIS = "…"
# Two keys share the committed_offsets index entry (group, topic, partition): 2 x 1024
# bytes plus headers stays below btree's 2,704-byte limit for 8 kB pages.
KEY_LIMIT_BYTES = 1024
# A string of at most this many characters cannot exceed the limit in UTF-8 (4 bytes a
# character at most), so `len` alone clears almost every key.
KEY_LIMIT_CHARS = KEY_LIMIT_BYTES // 4
_HASH_CHARS = 64
_PREFIX_BYTES = KEY_LIMIT_BYTES - len(ELLIPSIS.encode()) - _HASH_CHARS

HAS_NUL = "contains U+0000 (replaced by U+FFFD)"
TOO_LONG = f"key longer than {KEY_LIMIT_BYTES} bytes (shortened, SHA-256 suffix)"


def storable_text(value: str) -> str:
    """`value` without U+0000, which PostgreSQL text cannot hold."""
    return value.replace(NUL, REPLACEMENT) if NUL in value else value


def storable_key(value: str) -> str:
    """`value` as the store keeps a key (group id, topic, member id): without U+0000, and
    if longer than `KEY_LIMIT_BYTES` in UTF-8, its first bytes, "…" and the SHA-256 hex of
    the whole original. Deterministic and idempotent, so lookups can apply it too."""
    text = storable_text(value)
    if len(text) <= KEY_LIMIT_CHARS:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= KEY_LIMIT_BYTES:
        return text
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    prefix = data[:_PREFIX_BYTES].decode("utf-8", "ignore")  # drops a cut character
    return f"{prefix}{ELLIPSIS}{digest}"


def needs_repair(value: str | None, key: bool = False) -> bool:
    """The cheap test: could `value` need `storable_text` (or `storable_key`)?"""
    if value is None:
        return False
    return NUL in value or (key and len(value) > KEY_LIMIT_CHARS)


class Repairs:
    """Collects the repairs of one record (a source position) as its fields are fixed."""

    def __init__(self, out: list[Repair], source_partition: int, source_offset: int) -> None:
        self.out = out
        self.position = (source_partition, source_offset)

    def text(self, value: str | None, field: str) -> str | None:
        """`value` without U+0000 (None stays None)."""
        return None if value is None else self.string(value, field)

    def string(self, value: str, field: str) -> str:
        if NUL not in value:
            return value
        return self._record(value, storable_text(value), field, HAS_NUL)

    def key(self, value: str, field: str) -> str:
        """`value` as `storable_key` stores it."""
        stored = storable_key(value)
        if stored == value:
            return value
        reasons = [HAS_NUL] if NUL in value else []
        if stored != storable_text(value):
            reasons.append(TOO_LONG)
        return self._record(value, stored, field, "; ".join(reasons))

    def _record(self, original: str, stored: str, field: str, reason: str) -> str:
        self.out.append(
            Repair(
                *self.position,
                field=field,
                reason=reason,
                original=original.encode("utf-8", "surrogatepass"),
                stored=stored,
            )
        )
        return stored

    def topics(self, topics: Sequence[str], field: str) -> tuple[str, ...]:
        return tuple(self.string(t, f"{field}[{i}]") for i, t in enumerate(topics))

    def by_topic(
        self, partitions: Mapping[str, Sequence[int]], field: str
    ) -> dict[str, Sequence[int]]:
        return {self.string(t, f"{field}[{i}]"): ps for i, (t, ps) in enumerate(partitions.items())}


def offset_commit(commit: OffsetCommit, out: list[Repair]) -> OffsetCommit:
    """`commit` with storable group, topic and metadata (call when `needs_repair`)."""
    r = Repairs(out, commit.source_partition, commit.source_offset)
    return replace(
        commit,
        group=r.key(commit.group, "key.group"),
        topic=r.key(commit.topic, "key.topic"),
        metadata=r.text(commit.metadata, "metadata"),
    )


def group_event(event: GroupEvent, out: list[Repair]) -> GroupEvent:
    if not needs_repair(event.group, key=True) and not needs_repair(event.type):
        return event
    r = Repairs(out, event.source_partition, event.source_offset)
    return replace(event, group=r.key(event.group, "key.group"), type=r.text(event.type, "type"))


def _member_clean(m: Member) -> bool:
    """No string of `m` needs a repair. Per member of every generation, so it joins
    lists rather than looping over them (half the time of `any` over a generator)."""
    member_id = m.member_id
    return not (
        len(member_id) > KEY_LIMIT_CHARS
        or NUL in member_id
        or NUL in (m.client_id or "")
        or NUL in (m.client_host or "")
        or NUL in (m.group_instance_id or "")
        or NUL in (m.rack or "")
        or NUL in "".join(m.subscribed_topics)
        or NUL in "".join(m.assignment)
        or (m.owned_partitions is not None and NUL in "".join(m.owned_partitions))
    )


def _member(m: Member, r: Repairs, field: str) -> Member:
    return replace(
        m,
        member_id=r.key(m.member_id, f"{field}.member_id"),
        client_id=r.text(m.client_id, f"{field}.client_id"),
        client_host=r.text(m.client_host, f"{field}.client_host"),
        group_instance_id=r.text(m.group_instance_id, f"{field}.group_instance_id"),
        rack=r.text(m.rack, f"{field}.rack"),
        subscribed_topics=r.topics(m.subscribed_topics, f"{field}.subscribed_topics"),
        assignment=r.by_topic(m.assignment, f"{field}.assignment"),
        owned_partitions=None
        if m.owned_partitions is None
        else r.by_topic(m.owned_partitions, f"{field}.owned_partitions"),
    )


def generation(g: Generation, out: list[Repair]) -> Generation:
    """`g` with storable strings. Field paths are the classic GroupMetadataValue's
    (`members[2].client_host`); a KIP-848 epoch's members come from member records, but
    are recorded under the epoch's position with the same paths."""
    clean = not (
        needs_repair(g.group, key=True)
        or needs_repair(g.protocol_type)
        or needs_repair(g.assignor)
        or needs_repair(g.leader, key=True)
    )
    dirty = [i for i, m in enumerate(g.members) if not _member_clean(m)]
    if clean and not dirty:
        return g
    r = Repairs(out, g.source_partition, g.source_offset)
    members = list(g.members)
    for i in dirty:
        members[i] = _member(members[i], r, f"members[{i}]")
    return replace(
        g,
        group=r.key(g.group, "key.group"),
        protocol_type=r.text(g.protocol_type, "protocol_type"),
        assignor=r.text(g.assignor, "protocol"),
        leader=None if g.leader is None else r.key(g.leader, "leader"),
        members=members,
    )


def decode_failure(f: DecodeFailure, out: list[Repair]) -> DecodeFailure:
    if not needs_repair(f.reason) and not needs_repair(f.category):
        return f
    r = Repairs(out, f.source_partition, f.source_offset)
    return replace(f, reason=r.string(f.reason, "reason"), category=r.text(f.category, "category"))

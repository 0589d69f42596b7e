"""Topic ids, the keys by which KIP-848's assignors order topics.

The coordinator's assignors see topics only as ``org.apache.kafka.common.Uuid``s. Their
order shows in two places: ``Uuid.compareTo`` (the heterogeneous uniform builder's last
tie-break) and ``Uuid.hashCode`` (the iteration order of the ``HashSet``s and
``HashMap``s the homogeneous builder walks). Either decides which partitions move, so
the baseline of a real group needs the cluster's own ids.

A topic without a given id gets one the way the differential harness
(``tests/kafka/harness/AssignorHarness.java``) makes them: the names, in ``String``
order, numbered ``Uuid(1, 0)``, ``Uuid(2, 0)``, ..., skipping the named ones. Such ids
compare and hash like the names' order, which is what a group without ids means.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.assignor.javaorder import java_str_key
from services.assignor.model import AssignmentError

_LONG = 1 << 64


@dataclass(frozen=True, slots=True)
class TopicId:
    """A ``Uuid`` as its two signed 64-bit halves."""

    msb: int
    lsb: int

    @classmethod
    def parse(cls, text: str) -> TopicId:
        """``Uuid.fromString``: URL-safe base64 of 16 bytes, without padding."""
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError) as exc:
            raise AssignmentError(f"topic id {text!r} is not a Kafka Uuid: {exc}") from None
        if len(raw) != 16 or len(text) != 22:
            raise AssignmentError(f"topic id {text!r} is not a Kafka Uuid (22 base64 characters)")
        return cls(_signed(raw[:8]), _signed(raw[8:]))

    def hash(self) -> int:
        """``Uuid.hashCode`` as an unsigned 32-bit value."""
        folded = (self.msb ^ self.lsb) % _LONG
        return (folded >> 32 ^ folded) & 0xFFFFFFFF

    def __str__(self) -> str:
        """``Uuid.toString``: the 16 bytes in URL-safe base64, unpadded."""
        raw = (self.msb % _LONG).to_bytes(8, "big") + (self.lsb % _LONG).to_bytes(8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def key(self) -> tuple[int, int]:
        """A sort key that orders ids like ``Uuid.compareTo`` (signed halves)."""
        return self.msb, self.lsb


def _signed(raw: bytes) -> int:
    return int.from_bytes(raw, "big", signed=True)


def topic_ids(names: Iterable[str], given: Mapping[str, str] | None) -> dict[str, TopicId]:
    """Every topic in ``names`` with its id: the given one, else the harness's."""
    given = given or {}
    if not isinstance(given, Mapping):
        raise AssignmentError(f"topic ids must map topic names to ids, not {given!r}")
    ids: dict[str, TopicId] = {}
    generated = 1
    for name in sorted(set(names), key=java_str_key):
        text = given.get(name)
        if text is None:
            ids[name] = TopicId(generated, 0)
            generated += 1
        elif not isinstance(text, str):
            raise AssignmentError(f"topic {name!r}: its id must be a string, not {text!r}")
        else:
            ids[name] = TopicId.parse(text)
    seen: dict[TopicId, str] = {}
    for name, ident in ids.items():
        other = seen.setdefault(ident, name)
        if other != name:
            raise AssignmentError(f"topics {other!r} and {name!r} have the same id")
    return ids

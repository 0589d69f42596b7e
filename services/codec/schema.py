"""The vocabulary of Kafka's message specs (`clients/src/main/resources/common/message`).

A `Message` is one JSON spec: its valid and flexible versions and its fields. A `Field`
keeps exactly the attributes that decide the bytes on the wire: name, type, the
versions it is present in, nullable versions, default, tag, and nested fields for
struct types. The tables in `schemas.py` are written with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_NUMBER = re.compile(r"-?\d+")


@dataclass(frozen=True)
class VersionRange:
    """A spec version range: "none", "3", "0-4" or "3+"."""

    low: int
    high: int | None  # None: open-ended ("3+")
    spec: str

    @classmethod
    def parse(cls, spec: str) -> VersionRange:
        if spec == "none":
            return cls(1, 0, spec)  # empty
        if spec.endswith("+"):
            return cls(int(spec[:-1]), None, spec)
        low, _, high = spec.partition("-")
        return cls(int(low), int(high or low), spec)

    def __contains__(self, version: int) -> bool:
        return version >= self.low and (self.high is None or version <= self.high)


@dataclass(frozen=True)
class Field:
    """One field of a message or struct, as declared in Kafka's JSON spec."""

    name: str
    type: str
    versions: str
    nullable: str = "none"
    default: Any = ...  # ...: the type's own default (0, "", [], zero UUID)
    tag: int | None = None
    tagged: str = "none"
    fields: tuple[Field, ...] = ()

    @property
    def snake(self) -> str:
        """Kafka's field name in snake_case: `leaderEpoch` -> `leader_epoch`."""
        return to_snake(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return bool(self.fields)

    def present_in(self, version: int) -> bool:
        return version in VersionRange.parse(self.versions)

    def nullable_in(self, version: int) -> bool:
        return version in VersionRange.parse(self.nullable)

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in VersionRange.parse(self.tagged)

    def default_value(self) -> Any:
        """The value a reader fills in when the field is absent from a version."""
        if self.default is not ...:
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            return None
        return {"string": "", "bytes": b"", "uuid": ZERO_UUID, "bool": False}.get(self.type, 0)


@dataclass(frozen=True)
class Message:
    """One JSON message spec: a record key, a record value or an embedded protocol."""

    name: str
    valid_versions: str
    flexible_versions: str
    fields: tuple[Field, ...] = field(default=())

    @property
    def versions(self) -> range:
        r = VersionRange.parse(self.valid_versions)
        return range(r.low, (r.high if r.high is not None else r.low) + 1)

    def is_flexible(self, version: int) -> bool:
        return version in VersionRange.parse(self.flexible_versions)


ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's Uuid.ZERO_UUID.toString()


def to_snake(name: str) -> str:
    """`commitTimestamp` -> `commit_timestamp`, `GroupId` -> `group_id`, `key` -> `key`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def parse_default(value: Any) -> Any:
    """A spec default ("null", "-1", -1) as a Python value."""
    if value == "null" or value is None:
        return None
    if isinstance(value, str) and _NUMBER.fullmatch(value):
        return int(value)
    return value

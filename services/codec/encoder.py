"""Encode field dictionaries with the tables, byte-exact with Kafka's generated `write()`.

Each (message, version) becomes a plan: a tuple of (field name, writer, default) steps,
built once. Writers append to a `bytearray`. Flexible versions use compact lengths and
end every struct with its tagged-field section, tags in ascending order, a tagged field
written only when it differs from its default (`MessageDataGenerator`).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from services.codec.errors import EncodeError
from services.codec.schema import Field, Message

Writer = Callable[[bytearray, Any], None]

_FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "bool": "?"}


def write_uvarint(out: bytearray, value: int) -> None:
    """`ByteUtils.writeUnsignedVarint`."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uuid_to_bytes(text: str) -> bytes:
    """Inverse of Kafka's `Uuid.toString()`."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise EncodeError(f"not a Kafka UUID: {text!r}")
    return raw


def _fixed_writer(fmt: str) -> Writer:
    pack = struct.Struct(">" + fmt).pack

    def write(out: bytearray, value: Any) -> None:
        out += pack(value)

    return write


def _length_writer(flexible: bool, width: str) -> Callable[[bytearray, int], None]:
    """Writes a length or count; -1 is null. Compact forms store N+1 as a varint."""
    if flexible:
        return lambda out, n: write_uvarint(out, n + 1)
    pack = struct.Struct(">" + width).pack
    return lambda out, n: out.extend(pack(n))


class _PlanBuilder:
    def __init__(self, version: int, flexible: bool) -> None:
        self.version = version
        self.flexible = flexible

    def writer(self, f: Field, path: str) -> Writer:
        nullable = f.nullable_in(self.version)
        if f.is_array:
            return self.array(f, path)
        if f.is_struct:
            sub = self.struct(f.fields, path)
            if not nullable:
                return sub

            def nullable_struct(out: bytearray, value: Any) -> None:
                if value is None:
                    out.append(0xFF)
                else:
                    out.append(1)
                    sub(out, value)

            return nullable_struct
        if f.type in _FIXED:
            return _fixed_writer(_FIXED[f.type])
        if f.type == "uuid":
            return lambda out, value: out.extend(uuid_to_bytes(value))
        if f.type in ("string", "bytes"):
            length = _length_writer(self.flexible, "h" if f.type == "string" else "i")
            is_string = f.type == "string"

            def write_blob(out: bytearray, value: Any) -> None:
                if value is None:
                    if not nullable:
                        raise EncodeError(f"{path} is not nullable in version {self.version}")
                    length(out, -1)
                    return
                data = value.encode() if is_string else bytes(value)
                length(out, len(data))
                out += data

            return write_blob
        raise EncodeError(f"unsupported type {f.type!r} at {path}")

    def array(self, f: Field, path: str) -> Writer:
        length = _length_writer(self.flexible, "i")
        if f.is_struct:
            element = self.struct(f.fields, path)
        else:
            element = self.writer(Field(f.name, f.element, f.versions), path)

        nullable = f.nullable_in(self.version)

        def write_array(out: bytearray, values: Any) -> None:
            if values is None:
                if nullable:
                    length(out, -1)
                    return
                raise EncodeError(f"{path} is not nullable")
            length(out, len(values))
            for value in values:
                element(out, value)

        return write_array

    def struct(self, fields: tuple[Field, ...], path: str) -> Writer:
        v = self.version
        steps = tuple(
            (f.snake, self.writer(f, f"{path}.{f.snake}" if path else f.snake), f.default_value())
            for f in fields
            if f.present_in(v) and not f.tagged_in(v)
        )
        tagged = tuple(
            (
                f.tag,
                f.snake,
                self.struct(f.fields, f.snake)
                if f.is_struct and not f.is_array
                else self.writer(f, f.snake),
                f.default_value(),
                f.is_struct and not f.is_array,
            )
            for f in fields
            if f.tag is not None and f.tagged_in(v)
        )
        flexible = self.flexible

        def write_struct(out: bytearray, value: dict[str, Any]) -> None:
            get = value.get
            for name, write, default in steps:
                write(out, get(name, default))
            if flexible:
                _write_tagged(out, value, tagged)

        return write_struct


# One tagged field: (tag, name, writer, default, is_struct).
_Tagged = tuple[int, str, Writer, Any, bool]


def _write_tagged(out: bytearray, value: dict[str, Any], tagged: tuple[_Tagged, ...]) -> None:
    entries: dict[int, bytes] = {}
    for tag, name, write, default, is_struct in tagged:
        field_value = value.get(name, default)
        if field_value == default:
            continue
        body = bytearray()
        if is_struct:
            write_uvarint(body, 1)  # present marker, as an UNSIGNED_VARINT inside a tag
        write(body, field_value)
        entries[tag] = bytes(body)
    for tag, raw in (value.get("unknown_tagged_fields") or {}).items():
        entries.setdefault(int(tag), bytes(raw))
    write_uvarint(out, len(entries))
    for tag in sorted(entries):
        write_uvarint(out, tag)
        write_uvarint(out, len(entries[tag]))
        out += entries[tag]


@cache
def encoder_for(message: Message, version: int) -> Writer:
    """A writer for `message` at `version`; raises EncodeError for an invalid version."""
    if version not in message.versions:
        raise EncodeError(f"{message.name} has no version {version}")
    return _PlanBuilder(version, message.is_flexible(version)).struct(message.fields, "")


def encode_message(message: Message, version: int, value: dict[str, Any]) -> bytes:
    """The body of `message` at `version` (no version prefix)."""
    out = bytearray()
    try:
        encoder_for(message, version)(out, value)
    except struct.error as exc:
        raise EncodeError(f"{message.name} v{version}: {exc}") from exc
    return bytes(out)

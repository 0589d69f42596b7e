"""Hypothesis strategies for field values, built from the codec's tables."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

from services.codec.schema import Field, Message

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
text = st.text(max_size=12)
uuids = st.binary(min_size=16, max_size=16).map(
    lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
)


def field_value(f: Field, version: int) -> st.SearchStrategy[Any]:
    if f.is_array:
        element = (
            struct_value(f.fields, version)
            if f.is_struct
            else field_value(Field(f.name, f.element, f.versions), version)
        )
        return st.lists(element, max_size=3)
    if f.is_struct:
        inner = struct_value(f.fields, version)
        return st.one_of(st.none(), inner) if f.nullable_in(version) else inner
    if f.type in _INTS:
        low, high = _INTS[f.type]
        return st.integers(low, high)
    base = {"string": text, "bytes": st.binary(max_size=12), "uuid": uuids}[f.type]
    return st.one_of(st.none(), base) if f.nullable_in(version) else base


def struct_value(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {f.snake: field_value(f, version) for f in fields if f.present_in(version)}
    )


def message_value(message: Message, version: int) -> st.SearchStrategy[dict]:
    return struct_value(message.fields, version)

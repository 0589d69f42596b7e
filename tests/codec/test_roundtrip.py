"""Byte-exact round trips for every record type and every value version."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from services.codec import decode_record, encode_key, encode_record, encode_value
from services.codec.records import RECORD_TYPES
from services.codec.schema import Field
from tests.codec.strategies import message_value

CASES = [(t, v) for t, rt in sorted(RECORD_TYPES.items()) for v in rt.value.versions]


def with_defaults(fields: tuple[Field, ...], version: int, value: dict[str, Any]) -> dict:
    """What a reader returns: every field, defaults where the version lacks it."""
    out = {}
    for f in fields:
        if not f.present_in(version):
            out[f.snake] = f.default_value()
            continue
        v = value[f.snake]
        if f.is_struct and f.is_array:
            v = [with_defaults(f.fields, version, e) for e in v]
        elif f.is_struct and v is not None:
            v = with_defaults(f.fields, version, v)
        out[f.snake] = v
    return out


@pytest.mark.parametrize(("type_id", "version"), CASES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(type_id: int, version: int, data: st.DataObject) -> None:
    rt = RECORD_TYPES[type_id]
    key = data.draw(message_value(rt.key, 0))
    value = data.draw(message_value(rt.value, version))
    if type_id == 2:
        assume(value["protocol_type"] != "consumer")  # embedded protocols: test_embedded.py
    key_bytes = encode_key(type_id, key)
    value_bytes = encode_value(type_id, version, value)

    record = decode_record(key_bytes, value_bytes)

    assert record["record_type"] == rt.name
    assert record["key_version"] == type_id
    assert record["value_version"] == version
    assert record["tombstone"] is False
    assert record["key"] == key
    assert record["value"] == with_defaults(rt.value.fields, version, value)
    assert encode_record(record) == (key_bytes, value_bytes)


@pytest.mark.parametrize("type_id", sorted(RECORD_TYPES))
@given(data=st.data())
@settings(max_examples=10, deadline=None)
def test_tombstone_round_trip(type_id: int, data: st.DataObject) -> None:
    rt = RECORD_TYPES[type_id]
    key = data.draw(message_value(rt.key, 0))
    key_bytes = encode_key(type_id, key)
    record = decode_record(key_bytes, None)
    assert record["tombstone"] is True
    assert record["value"] is None and record["value_version"] is None
    assert record["key"] == key
    assert encode_record(record) == (key_bytes, None)


def test_unknown_tagged_fields_are_kept_and_written_back() -> None:
    key = encode_key("consumer_group_metadata", {"group_id": "g"})
    # Epoch 7, then a tagged section with one unknown tag 5 of 3 bytes.
    value = bytes.fromhex("000000000007010503aabbcc")
    record = decode_record(key, value)
    assert record["value"]["epoch"] == 7
    assert record["value"]["unknown_tagged_fields"] == {5: bytes.fromhex("aabbcc")}
    assert encode_record(record) == (key, value)

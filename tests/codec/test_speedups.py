"""The C accelerator (services/codec/_speedups.c) against the pure-Python decoder.

For every input, decode_record with the accelerator gives exactly what the pure-Python
decoder gives: the same objects (types and key order included, compared by repr), or
the same DecodeError (message, field and offset).
"""

from __future__ import annotations

import random
import shutil
import struct
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.codec import (
    DecodeError,
    decode_record,
    encode_assignment,
    encode_key,
    encode_subscription,
    encode_value,
    records,
)
from services.codec.records import pure_python
from services.codec.schemas import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    GROUP_METADATA_VALUE,
)
from tests.codec.strategies import message_value, text
from tests.codec.test_vectors import s16

try:
    from services.codec._speedups import decode_group_metadata_value as c_decode
except ImportError:  # see test_the_accelerator_is_built_where_a_compiler_is
    c_decode = None

BUILD = "`make setup` (or `pip install -e .`) builds the C accelerator with the C compiler"
needs_accelerator = pytest.mark.skipif(c_decode is None, reason="C accelerator not built")
KEY = encode_key("group_metadata", {"group": "g"})
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(key: bytes, value: bytes | None) -> str:
    """The decoded record or the error, as a string that shows types and key order."""
    try:
        return repr(decode_record(key, value))
    except DecodeError as exc:
        return f"DecodeError({exc!s}, field={exc.field!r}, offset={exc.offset})"


def assert_same_as_pure_python(value: bytes) -> tuple[Any, dict | None]:
    """decode_record gives the same with and without the accelerator, and so does the
    accelerator called directly wherever it answers. Returns its direct answer and the
    pure-Python record (None for a DecodeError)."""
    with pure_python():
        expected = outcome(KEY, value)
        try:
            record = decode_record(KEY, value)
        except DecodeError:
            record = None
    for _ in range(2):  # a version's first decode takes the full path and fills the fast one
        assert outcome(KEY, value) == expected
    direct = c_decode(value)
    if direct is not None:
        assert record is not None, "accepted bytes that the Python decoder rejects"
        assert repr(direct) == repr(record["value"])
    return direct, record


# -- inputs ------------------------------------------------------------------------------


@st.composite
def embedded(draw: st.DrawFn, message: Any, encode: Any) -> bytes:
    """Subscription or assignment bytes: exact, lenient (newer versions, bodies that end
    early), arbitrary version headers, empty, or junk."""
    kind = draw(st.sampled_from(["exact"] * 4 + ["newer", "prefix", "header", "empty", "junk"]))
    if kind == "empty":
        return b""
    if kind == "junk":
        return draw(st.binary(max_size=24))
    schema = draw(st.integers(0, 3 if kind != "prefix" else 2))
    body = encode({**draw(message_value(message, schema)), "version": schema})[2:]
    if kind == "exact":
        header, trailing = schema, b""
    elif kind == "newer":  # a future version: read by its known prefix, the rest kept raw
        header, trailing = draw(st.integers(4, 9)), draw(st.binary(min_size=1, max_size=4))
    elif kind == "prefix":  # a body that ends early, as KafkaJS's v1 without owned partitions
        header, trailing = draw(st.integers(schema + 1, 9)), b""
    else:
        header, trailing = draw(st.integers(-2, 9)), draw(st.binary(max_size=4))
    return struct.pack(">h", header) + body + trailing


subscriptions = embedded(CONSUMER_PROTOCOL_SUBSCRIPTION, encode_subscription)
assignments = embedded(CONSUMER_PROTOCOL_ASSIGNMENT, encode_assignment)
tags = st.dictionaries(st.integers(0, 300), st.binary(max_size=4), max_size=2)


@st.composite
def group_metadata_values(draw: st.DrawFn, version: int | None = None) -> bytes:
    version = draw(st.integers(0, 4)) if version is None else version
    value = draw(message_value(GROUP_METADATA_VALUE, version))
    protocol_type = draw(st.sampled_from(["consumer"] * 4 + ["connect", "any"]))
    value["protocol_type"] = draw(text) if protocol_type == "any" else protocol_type
    consumer = value["protocol_type"] == "consumer"
    for member in value["members"]:
        if consumer:
            member["subscription"] = draw(subscriptions)
            member["assignment"] = draw(assignments)
        if version >= 4 and draw(st.integers(0, 9)) == 0:
            member["unknown_tagged_fields"] = draw(tags)
    if version >= 4 and draw(st.integers(0, 9)) == 0:
        value["unknown_tagged_fields"] = draw(tags)
    value["members"] += [draw(regular_member(version))] * draw(st.integers(0, 2))
    return encode_value("group_metadata", version, value)


@st.composite
def regular_member(draw: st.DrawFn, version: int) -> dict[str, Any]:
    """A member as real clients write it, with topic names that repeat (the accelerator
    keeps recent ones), non-ASCII ones included."""
    topics = draw(st.lists(st.sampled_from(["orders", "payments", "pagos-ñ", ""]), max_size=3))
    owned = [{"topic": t, "partitions": draw(st.lists(st.integers(-1, 300)))} for t in topics]
    return {
        "member_id": draw(text),
        "group_instance_id": draw(st.none() | text) if version >= 3 else None,
        "client_id": "c",
        "client_host": "/10.0.0.1",
        "rebalance_timeout": 300_000,
        "session_timeout": 45_000,
        "subscription": encode_subscription(
            {
                "version": draw(st.integers(0, 3)),
                "topics": topics,
                "user_data": draw(st.none() | st.binary(max_size=4)),
                "owned_partitions": owned,
                "generation_id": 4,
                "rack_id": draw(st.none() | st.just("rack-a")),
            }
        ),
        "assignment": encode_assignment(
            {"version": 1, "assigned_partitions": owned, "user_data": None}
        ),
    }


MEMBER = {
    "member_id": "m",
    "group_instance_id": None,
    "client_id": "c",
    "client_host": "h",
    "rebalance_timeout": 1,
    "session_timeout": 1,
    "subscription": encode_subscription(
        {
            "version": 3,
            "topics": ["orders"],
            "user_data": None,
            "owned_partitions": [{"topic": "orders", "partitions": [0, 1]}],
            "generation_id": 1,
            "rack_id": None,
        }
    ),
    "assignment": encode_assignment(
        {"version": 3, "assigned_partitions": [], "user_data": b"\x01"}
    ),
}


def mutate(data: bytes, seed: int, mutations: int) -> bytes:
    """Overwritten, deleted and inserted bytes, as in test_fuzz, and lengths and counts
    overwritten with edge values."""
    rnd = random.Random(seed)
    out = bytearray(data)
    for _ in range(mutations):
        choice = rnd.random()
        pos = rnd.randrange(len(out)) if out else 0
        if choice < 0.4 and out:
            out[pos] = rnd.randrange(256)
        elif choice < 0.6:
            del out[pos : pos + rnd.randrange(1, 4)]
        elif choice < 0.8:
            out[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 4)))
        else:
            width = rnd.choice([1, 2, 4])
            edge = rnd.choice(
                [-2, -1, 0, 1, 2, 3, 2 ** (8 * width - 1) - 1, -(2 ** (8 * width - 1))]
            )
            out[pos : pos + width] = edge.to_bytes(width, "big", signed=True)
    return bytes(out)


# -- tests -------------------------------------------------------------------------------


def test_the_accelerator_is_built_where_a_compiler_is() -> None:
    """CI installs gcc (`make setup`), so there the accelerator must be built and used;
    only a machine without a C compiler runs the pure-Python decoder alone."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if c_decode is None:
        if shutil.which(compiler):
            pytest.fail(f"the C accelerator is not built, though {compiler} is here: {BUILD}")
        pytest.skip(f"no C compiler ({compiler}): the pure-Python decoder runs alone")
    assert records.accelerated()


@needs_accelerator
def test_decode_record_uses_the_accelerator() -> None:
    value = encode_value(
        "group_metadata",
        3,
        {
            "protocol_type": "consumer",
            "generation": 1,
            "protocol": "range",
            "leader": "m",
            "members": [MEMBER, MEMBER],
        },
    )
    calls = []

    def spy(data: bytes) -> Any:
        calls.append(data)
        return c_decode(data)

    decode_record(KEY, value)
    saved, records._accelerated = records._accelerated, spy
    try:
        decoded = decode_record(KEY, value)
    finally:
        records._accelerated = saved
    assert calls == [value]
    assert decoded["value"]["members"][1]["subscription"]["topics"] == ["orders"]


@needs_accelerator
def test_the_accelerator_is_built_from_the_current_source() -> None:
    """An in-place build (`pip install -e .`) older than its source is stale: `make setup`
    rebuilds it."""
    from services.codec import _speedups

    built = Path(_speedups.__file__)
    source = built.with_name("_speedups.c")
    if source.exists():
        assert built.stat().st_mtime >= source.stat().st_mtime, f"stale build: {BUILD}"


@needs_accelerator
@SETTINGS
@given(st.integers(0, 4).flatmap(group_metadata_values))
def test_valid_records_of_every_version(value: bytes) -> None:
    assert_same_as_pure_python(value + b"\x00")  # trailing bytes
    direct, record = assert_same_as_pure_python(value)
    assert record is not None
    decoded = record["value"]
    members = decoded["members"]
    regular = "unknown_tagged_fields" not in decoded and not any(
        "unknown_tagged_fields" in m
        or any(isinstance(m[k], dict) and "error" in m[k] for k in ("subscription", "assignment"))
        for m in members
    )
    if regular:  # the accelerator gives up only on what it leaves to Python
        assert direct is not None


@needs_accelerator
@SETTINGS
@given(st.integers(0, 4).flatmap(group_metadata_values), st.integers(0, 2**32), st.integers(1, 6))
def test_mutated_and_truncated_records(value: bytes, seed: int, mutations: int) -> None:
    assert_same_as_pure_python(mutate(value, seed, mutations))


@needs_accelerator
@settings(max_examples=100, deadline=None)
@given(st.integers(0, 4).flatmap(group_metadata_values))
def test_every_truncation(value: bytes) -> None:
    for end in range(2, len(value)):
        assert_same_as_pure_python(value[:end])


@needs_accelerator
@SETTINGS
@given(st.integers(0, 5), st.binary(max_size=200))
def test_random_bytes(version: int, body: bytes) -> None:
    assert_same_as_pure_python(struct.pack(">h", version) + body)


@needs_accelerator
def test_only_bytes_are_accelerated() -> None:
    value = encode_value(
        "group_metadata",
        2,
        {"protocol_type": "consumer", "generation": 1, "protocol": None, "leader": None},
    )
    assert c_decode(value) is not None
    assert c_decode(bytearray(value)) is None
    assert c_decode(memoryview(value)) is None
    assert c_decode(b"") is None
    assert c_decode(b"\x00\x05" + value[2:]) is None  # no such version


# Embedded bytes at the edges of each rule: (name, subscription bytes).
EDGES = [
    ("v1 without owned partitions", struct.pack(">hi", 1, 1) + s16("a") + struct.pack(">i", -1)),
    ("v3 ending before rack", struct.pack(">hi", 3, 0) + struct.pack(">iii", -1, 0, 7)),
    ("older prefix then junk", struct.pack(">hi", 3, 0) + struct.pack(">iii", -1, 0, 7) + b"z"),
    ("newer with trailing", struct.pack(">hi", 8, 0) + struct.pack(">iiih", -1, 0, 7, -1) + b"z"),
    ("user data length -2", struct.pack(">hii", 0, 0, -2)),
    ("rack length -2", struct.pack(">hi", 3, 0) + struct.pack(">iiih", -1, 0, 7, -2)),
    (
        "partition count beyond the bytes left / 4",
        struct.pack(">hi", 1, 0) + struct.pack(">ii", -1, 1) + s16("a") + struct.pack(">ii", 3, 9),
    ),
    ("invalid UTF-8 topic", struct.pack(">hih", 0, 1, 2) + b"\xc3\x28" + struct.pack(">i", -1)),
    ("non-ASCII topic", struct.pack(">hi", 0, 1) + s16("pagos-ñ") + struct.pack(">i", -1)),
    (
        "latin-1 bytes of a recent non-ASCII topic",
        struct.pack(">hi", 0, 2) + s16("ñ") + struct.pack(">h", 1) + b"\xf1" + b"\xff" * 4,
    ),
    ("one byte", b"\x00"),
    ("negative version", struct.pack(">hii", -1, 0, -1)),
]


@needs_accelerator
@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize(("name", "subscription"), EDGES, ids=[name for name, _ in EDGES])
def test_embedded_edge_cases(version: int, name: str, subscription: bytes) -> None:
    member = {**MEMBER, "subscription": subscription}
    value = encode_value(
        "group_metadata",
        version,
        {
            "protocol_type": "consumer",
            "generation": 1,
            "protocol": "r",
            "leader": "m",
            "members": [member],
        },
    )
    assert_same_as_pure_python(value)

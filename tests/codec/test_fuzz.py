"""No input makes the codec raise anything but DecodeError."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from services.codec import DecodeError, decode_record, encode_key, encode_value
from services.codec.records import RECORD_TYPES
from tests.codec.test_vectors import OFFSET_KEY

SEEDS: list[tuple[bytes, bytes]] = [
    (OFFSET_KEY, encode_value("offset_commit", v, {"offset": 1, "metadata": "m"})) for v in range(5)
]
SEEDS += [
    (
        encode_key("group_metadata", {"group": "g"}),
        encode_value(
            "group_metadata",
            v,
            {
                "protocol_type": "consumer",
                "generation": 1,
                "protocol": "range",
                "leader": "m",
                "members": [
                    {
                        "member_id": "m",
                        "client_id": "c",
                        "client_host": "h",
                        "subscription": bytes.fromhex(
                            "00010000000100016100000000000000010001610000000100000003"
                        ),
                        "assignment": bytes.fromhex("0000000000010001610000000100000003ffffffff"),
                    }
                ],
            },
        ),
    )
    for v in range(5)
]


def decode_or_decode_error(key: bytes, value: bytes | None) -> None:
    try:
        decode_record(key, value)
    except DecodeError as exc:
        assert exc.field is not None and exc.offset >= 0


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 25).map(lambda t: t.to_bytes(2, "big")),
    st.binary(max_size=64),
    st.one_of(st.none(), st.binary(max_size=128)),
)
def test_random_bytes_for_every_record_type(prefix: bytes, body: bytes, value: bytes | None):
    decode_or_decode_error(prefix + body, value)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, len(SEEDS) - 1), st.integers(0, 2**32), st.integers(1, 8))
def test_mutated_valid_records(seed_index: int, seed: int, mutations: int) -> None:
    rnd = random.Random(seed)
    key, value = SEEDS[seed_index]
    data = bytearray(value)
    for _ in range(mutations):
        choice = rnd.random()
        pos = rnd.randrange(len(data)) if data else 0
        if choice < 0.5 and data:
            data[pos] = rnd.randrange(256)
        elif choice < 0.75:
            del data[pos : pos + rnd.randrange(1, 4)]
        else:
            data[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 4)))
    decode_or_decode_error(key, bytes(data))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(RECORD_TYPES)), st.binary(max_size=96))
def test_random_values_of_flexible_types(type_id: int, body: bytes) -> None:
    key = type_id.to_bytes(2, "big") + b"\x00\x01g" + b"\x00\x01m"
    decode_or_decode_error(key, b"\x00\x00" + body)

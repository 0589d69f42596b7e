"""Values PostgreSQL refuses are made storable, deterministically, with the change kept."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from services.store import sanitize
from services.store.batch import Repair
from services.store.sanitize import KEY_LIMIT_BYTES, storable_key, storable_text
from tests.fixtures.batches import commit, generation, member


def test_nul_is_replaced_and_nothing_else_changes() -> None:
    assert storable_text("a\x00b\x00") == "a\ufffdb\ufffd"
    assert storable_text("plain é ✓") == "plain é ✓"
    assert storable_key("grp\x00") == "grp\ufffd"


def test_a_long_key_is_a_prefix_an_ellipsis_and_the_hash_of_the_whole() -> None:
    name = "g" * 5000
    short = storable_key(name)
    assert len(short.encode()) <= KEY_LIMIT_BYTES
    assert short.startswith("g" * 900)
    assert short.endswith("…" + hashlib.sha256(name.encode()).hexdigest())
    assert storable_key(short) == short  # idempotent: looking the short key up works too
    assert storable_key("g" * 4999 + "h") != short  # the hash tells similar names apart
    exact = "g" * KEY_LIMIT_BYTES
    assert storable_key(exact) == exact


def test_a_multibyte_cut_never_splits_a_character() -> None:
    name = "€" * 2000  # 3 bytes each: a 1024-byte limit is not a character boundary
    short = storable_key(name)
    assert len(short.encode()) <= KEY_LIMIT_BYTES
    assert short.startswith("€" * 300)


@given(st.text(min_size=0, max_size=3000))
def test_storable_keys_fit_hold_no_nul_and_are_stable(name: str) -> None:
    short = storable_key(name)
    assert "\x00" not in short
    assert len(short.encode("utf-8", "surrogatepass")) <= KEY_LIMIT_BYTES
    assert storable_key(short) == short
    if "\x00" not in name and len(name.encode("utf-8", "surrogatepass")) <= KEY_LIMIT_BYTES:
        assert short == name


def test_a_commit_repair_keeps_each_original_under_its_field_path() -> None:
    repairs: list[Repair] = []
    original = commit(5, 100, group="g\x00", topic="t" * 3000)
    fixed = sanitize.offset_commit(original, repairs)
    assert (fixed.group, fixed.topic) == ("g\ufffd", storable_key("t" * 3000))
    by_field = {r.field: r for r in repairs}
    assert by_field.keys() == {"key.group", "key.topic"}
    assert by_field["key.group"].original == b"g\x00"
    assert by_field["key.group"].stored == "g\ufffd"
    assert "U+0000" in by_field["key.group"].reason
    assert by_field["key.topic"].original == b"t" * 3000
    assert "longer than" in by_field["key.topic"].reason
    assert {(r.source_partition, r.source_offset) for r in repairs} == {(35, 100)}


def test_a_clean_generation_is_returned_as_is_and_a_dirty_member_is_named() -> None:
    clean = generation(1, 10, [member("a-1", {"orders": [0]})])
    repairs: list[Repair] = []
    assert sanitize.generation(clean, repairs) is clean and repairs == []
    dirty = generation(
        2,
        11,
        [
            member("a-1", {"orders": [0]}),
            member("b-1", {"or\x00ders": [1]}, host="/10.0.0.\x00", instance="i" * 2000),
        ],
    )
    fixed = sanitize.generation(dirty, repairs)
    assert {r.field for r in repairs} == {
        "members[1].client_host",
        "members[1].assignment[0]",
        "members[1].subscribed_topics[0]",
    }  # an instance id is not a key: long is fine
    assert fixed.members[1].client_host == "/10.0.0.\ufffd"
    assert dict(fixed.members[1].assignment) == {"or\ufffdders": [1]}
    assert fixed.members[0] is dirty.members[0]

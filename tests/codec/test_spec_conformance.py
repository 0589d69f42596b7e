"""The codec's field tables match Kafka's own JSON specs, field by field, version by version."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from services.codec import schemas
from services.codec.records import RECORD_TYPES
from services.codec.schema import Field, Message, VersionRange, parse_default

SPEC = Path(__file__).resolve().parents[3] / "shared" / "kafka-schemas"
SPEC_39 = SPEC / "kafka-3.9.0"

pytestmark = pytest.mark.skipif(not SPEC.is_dir(), reason=f"the spec folder {SPEC} is missing")


def load(path: Path) -> dict[str, Any]:
    text = "\n".join(
        line for line in path.read_text().splitlines() if not line.lstrip().startswith("//")
    )
    return json.loads(text)


def spec_fields(declared: list[dict], common: dict[str, dict]) -> list[dict]:
    """Spec fields in a comparable form, with commonStructs resolved."""
    out = []
    for f in declared:
        element = f["type"].removeprefix("[]")
        nested = f.get("fields") or common.get(element, {}).get("fields") or []
        out.append(
            {
                "name": f["name"],
                "type": f["type"],
                "versions": f["versions"],
                "nullable": f.get("nullableVersions", "none"),
                "default": parse_default(f["default"]) if "default" in f else ...,
                "tag": f.get("tag"),
                "tagged": f.get("taggedVersions", "none"),
                "fields": spec_fields(nested, common),
            }
        )
    return out


def table_fields(fields: tuple[Field, ...]) -> list[dict]:
    return [
        {
            "name": f.name,
            "type": f.type,
            "versions": f.versions,
            "nullable": f.nullable,
            "default": f.default,
            "tag": f.tag,
            "tagged": f.tagged,
            "fields": table_fields(f.fields),
        }
        for f in fields
    ]


def spec_message(path: Path) -> tuple[dict, list[dict]]:
    spec = load(path)
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    return spec, spec_fields(spec["fields"], common)


TABLES: dict[str, Message] = {
    m.name: m
    for m in vars(schemas).values()
    if isinstance(m, Message) and m is not schemas.SHARE_GROUP_PARTITION_METADATA_VALUE_3_9
}
TRUNK_FILES = sorted(p.name for p in SPEC.glob("*.json"))


@pytest.mark.parametrize("filename", [f for f in TRUNK_FILES if "Legacy" not in f])
def test_every_trunk_spec_matches_its_table(filename: str) -> None:
    """(The Legacy* files: test_legacy_offset_commit_is_offset_commit_at_v0.)"""
    spec, fields = spec_message(SPEC / filename)
    table = TABLES[spec["name"]]
    assert table.valid_versions == spec["validVersions"]
    assert table.flexible_versions == spec["flexibleVersions"]
    assert table_fields(table.fields) == fields


def test_legacy_offset_commit_is_offset_commit_at_v0() -> None:
    """Record type 0 is decoded with the type-1 tables: same bytes at value version 0."""
    _, legacy_key = spec_message(SPEC / "LegacyOffsetCommitKey.json")
    _, legacy_value = spec_message(SPEC / "LegacyOffsetCommitValue.json")
    key_table = table_fields(schemas.OFFSET_COMMIT_KEY.fields)
    assert [(f["name"], f["type"]) for f in legacy_key] == [
        (f["name"], f["type"]) for f in key_table
    ]
    v0 = [f for f in schemas.OFFSET_COMMIT_VALUE.fields if f.present_in(0)]
    assert [(f["name"], f["type"]) for f in legacy_value] == [(f.name, f.type) for f in v0]
    assert RECORD_TYPES[0].value is schemas.OFFSET_COMMIT_VALUE


@pytest.mark.parametrize("filename", sorted(p.name for p in SPEC_39.glob("*Value.json")))
def test_kafka_3_9_values_have_the_same_layout(filename: str) -> None:
    """3.9 values describe the same bytes, except the reworked share-group type 9."""
    spec, fields = spec_message(SPEC_39 / filename)
    name = spec["name"]
    table = (
        schemas.SHARE_GROUP_PARTITION_METADATA_VALUE_3_9
        if name == "ShareGroupPartitionMetadataValue"
        else TABLES[name]
    )
    assert table_fields(table.fields) == fields


def _strip_versions(fields: list[dict]) -> list[tuple]:
    return [(f["name"], f["type"], _strip_versions(f["fields"])) for f in fields]


@pytest.mark.parametrize(
    "filename",
    sorted(p.name for p in SPEC_39.glob("*.json") if not p.name.endswith("Value.json")),
)
def test_kafka_3_9_keys_and_protocols(filename: str) -> None:
    """In 3.x files a key's validVersions *is* its record type; the body is the same."""
    spec, fields = spec_message(SPEC_39 / filename)
    if spec["type"] == "data" and not spec["name"].endswith("Key"):
        table = TABLES[spec["name"]]
        assert table.valid_versions == spec["validVersions"]
        assert _strip_versions(table_fields(table.fields)) == _strip_versions(fields)
        return
    r = VersionRange.parse(spec["validVersions"])
    for type_id in range(r.low, (r.high or r.low) + 1):
        assert RECORD_TYPES[type_id].key.name == spec["name"]
        assert _strip_versions(table_fields(RECORD_TYPES[type_id].key.fields)) == (
            _strip_versions(fields)
        )


@pytest.mark.parametrize("filename", [f for f in TRUNK_FILES if "Legacy" not in f])
def test_record_types_match_api_keys(filename: str) -> None:
    spec = load(SPEC / filename)
    if spec["type"] == "data":
        return
    rt = RECORD_TYPES[spec["apiKey"]]
    expected = rt.key if spec["type"] == "coordinator-key" else rt.value
    assert expected.name == spec["name"]


def test_every_spec_file_is_covered() -> None:
    named = {load(SPEC / f)["name"] for f in TRUNK_FILES}
    assert named - {"LegacyOffsetCommitKey", "LegacyOffsetCommitValue"} <= set(TABLES)
    record_names = {rt.key.name for rt in RECORD_TYPES.values()} | {
        rt.value.name for rt in RECORD_TYPES.values()
    }
    assert {n for n in named if re.search(r"(Key|Value)$", n) and "Legacy" not in n} == (
        record_names
    )

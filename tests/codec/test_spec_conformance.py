"""The codec's field tables match Kafka 4.3.1's own JSON specs, field by field, version by
version.

The specs are read from the release's jars (resources ``common/message/*.json``): the
group coordinator's records from kafka-group-coordinator, the consumer's embedded
protocol (``ConsumerProtocol{Subscription,Assignment}``) from kafka-clients, both on the
classpath ``make kafka`` writes beside the virtualenv. Without it the tests skip; with
``GROUPSCOPE_REQUIRE_KAFKA`` set they fail.
"""

from __future__ import annotations

import json
import os
import re
import sys
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from services.codec import schemas
from services.codec.records import RECORD_TYPES
from services.codec.schema import Field, Message, parse_default
from tests.kafka.version import kafka_version
from tests.settings import kafka_unavailable

CLASSPATH_FILE = Path(sys.prefix) / "share" / "groupscope" / "kafka.classpath"
# Which jar holds which specs: (artifact prefix of the jar's file name, spec file pattern).
SPEC_JARS = (
    (f"kafka-group-coordinator-{kafka_version()}", re.compile(r"common/message/[^/]+\.json")),
    (
        f"kafka-clients-{kafka_version()}",
        re.compile(r"common/message/ConsumerProtocol[A-Za-z]+\.json"),
    ),
)
# Record types the codec still decodes (written by earlier Kafka versions) that Kafka
# 4.3.1 no longer defines: share group (type 9) and streams group (type 18) partition
# metadata, replaced by a metadata hash in the groups' metadata values.
RETIRED = {
    "ShareGroupPartitionMetadataKey",
    "ShareGroupPartitionMetadataValue",
    "StreamsGroupPartitionMetadataKey",
    "StreamsGroupPartitionMetadataValue",
}


class SpecsUnavailable(RuntimeError):
    pass


def strip_comments(text: str) -> str:
    """Kafka's specs carry ``//`` comment lines (the license header and notes)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


@cache
def release_specs() -> dict[str, dict[str, Any]]:
    """File name -> parsed spec, for every spec in the release's jars (see SPEC_JARS)."""
    if not CLASSPATH_FILE.is_file():
        raise SpecsUnavailable(f"no Kafka classpath at {CLASSPATH_FILE} (run `make kafka`)")
    jars = [Path(j) for j in CLASSPATH_FILE.read_text().strip().split(os.pathsep) if j]
    specs: dict[str, dict[str, Any]] = {}
    for prefix, pattern in SPEC_JARS:
        jar = next((j for j in jars if j.name == f"{prefix}.jar"), None)
        if jar is None or not jar.is_file():
            raise SpecsUnavailable(f"{prefix}.jar is not on the Kafka classpath")
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                if pattern.fullmatch(name):
                    text = archive.read(name).decode()
                    specs[Path(name).name] = json.loads(strip_comments(text))
    if not specs:
        raise SpecsUnavailable("no JSON specs found in the Kafka jars")
    return specs


def _specs_or_skip() -> dict[str, dict[str, Any]]:
    try:
        return release_specs()
    except (SpecsUnavailable, OSError, zipfile.BadZipFile, ValueError) as exc:
        kafka_unavailable(f"Kafka's specs cannot be read: {exc}")


@pytest.fixture(scope="module")
def specs() -> dict[str, dict[str, Any]]:
    return _specs_or_skip()


def _names() -> list[str]:
    """Spec file names for parametrizing: the GROUP record specs, or a placeholder so the
    tests still run (and skip, or fail, in the fixture) without the jars."""
    try:
        return sorted(f for f in release_specs() if f.endswith(".json"))
    except (SpecsUnavailable, OSError, zipfile.BadZipFile, ValueError):
        return ["<kafka specs unavailable>"]


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
                # Kafka's FieldSpec: a tagged field may omit versions (taggedVersions then)
                "versions": f.get("versions", f.get("taggedVersions")),
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


def spec_message(spec: dict[str, Any]) -> list[dict]:
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    return spec_fields(spec["fields"], common)


FALLBACKS = {id(m) for rt in RECORD_TYPES.values() for m in rt.fallbacks}
TABLES: dict[str, Message] = {
    m.name: m
    for m in vars(schemas).values()
    if isinstance(m, Message) and id(m) not in FALLBACKS  # older layouts, read as fallbacks
}
NAMES = _names()


@pytest.mark.parametrize("filename", [f for f in NAMES if "Legacy" not in f])
def test_every_release_spec_matches_its_table(specs: dict, filename: str) -> None:
    """(The Legacy* files: test_legacy_offset_commit_is_offset_commit_at_v0.)"""
    spec = specs[filename]
    table = TABLES[spec["name"]]
    assert table.valid_versions == spec["validVersions"]
    assert table.flexible_versions == spec["flexibleVersions"]
    assert table_fields(table.fields) == spec_message(spec)


def test_legacy_offset_commit_is_offset_commit_at_v0(specs: dict) -> None:
    """Record type 0 is decoded with the type-1 tables: same bytes at value version 0."""
    legacy_key = spec_message(specs["LegacyOffsetCommitKey.json"])
    legacy_value = spec_message(specs["LegacyOffsetCommitValue.json"])
    key_table = table_fields(schemas.OFFSET_COMMIT_KEY.fields)
    assert [(f["name"], f["type"]) for f in legacy_key] == [
        (f["name"], f["type"]) for f in key_table
    ]
    v0 = [f for f in schemas.OFFSET_COMMIT_VALUE.fields if f.present_in(0)]
    assert [(f["name"], f["type"]) for f in legacy_value] == [(f.name, f.type) for f in v0]
    assert RECORD_TYPES[0].value is schemas.OFFSET_COMMIT_VALUE


@pytest.mark.parametrize("filename", [f for f in NAMES if "Legacy" not in f])
def test_record_types_match_api_keys(specs: dict, filename: str) -> None:
    spec = specs[filename]
    if spec["type"] == "data":
        return
    rt = RECORD_TYPES[spec["apiKey"]]
    expected = rt.key if spec["type"] == "coordinator-key" else rt.value
    assert expected.name == spec["name"]


def test_every_spec_file_is_covered(specs: dict) -> None:
    """Every record the release defines has its tables, and every record type we decode
    is one the release defines, but for the retired ones (RETIRED)."""
    named = {spec["name"] for spec in specs.values()}
    assert named - {"LegacyOffsetCommitKey", "LegacyOffsetCommitValue"} <= set(TABLES)
    record_names = {rt.key.name for rt in RECORD_TYPES.values()} | {
        rt.value.name for rt in RECORD_TYPES.values()
    }
    release_records = {n for n in named if re.search(r"(Key|Value)$", n) and "Legacy" not in n}
    assert release_records == record_names - RETIRED
    assert not RETIRED & named

"""One record must never stop ingestion: hostile values through the whole job (real Spark,
real PostgreSQL) are stored repaired, or set aside, and the records beside them land."""

from __future__ import annotations

import base64
import hashlib
import itertools
import struct
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from services.cli import main
from services.codec import encode_key, encode_value, partition_for
from services.simulator.records import (
    assignment_bytes,
    consumer_group_epoch,
    consumer_group_member,
    consumer_group_target,
    consumer_group_target_epoch,
    consumer_group_topics,
    subscription_bytes,
)
from services.store.database import create_store_engine
from services.store.sanitize import storable_key

Row = tuple[int, int, bytes | None, bytes | None]  # partition, offset, key, value
SOURCE_TIME = 1_767_225_600_000
HUGE_MS = 2**62  # year ~146 million


def commit(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    metadata: str = "",
    commit_ms: int = SOURCE_TIME,
    expire_ms: int | None = None,
) -> tuple[bytes, bytes]:
    """An OffsetCommitKey and value: v1 when it has an expire time, else v3."""
    key = encode_key("offset_commit", {"group": group, "topic": topic, "partition": partition})
    fields = {"offset": offset, "metadata": metadata, "commit_timestamp": commit_ms}
    if expire_ms is not None:
        return key, encode_value("offset_commit", 1, {**fields, "expire_timestamp": expire_ms})
    return key, encode_value("offset_commit", 3, {**fields, "leader_epoch": 4})


def member(
    member_id: str, topics: Sequence[str], partitions: Sequence[tuple[str, int]], **fields: str
) -> dict:
    return {
        "member_id": member_id,
        "group_instance_id": fields.get("instance"),
        "client_id": fields.get("client_id", "app"),
        "client_host": fields.get("host", "/10.0.0.1"),
        "rebalance_timeout": 300_000,
        "session_timeout": 45_000,
        "subscription": subscription_bytes(topics, [], -1, None),
        "assignment": assignment_bytes(partitions),
    }


def group_metadata(
    group: str,
    generation: int,
    members: Sequence[dict],
    *,
    protocol: str = "range",
    state_ms: int = SOURCE_TIME,
) -> tuple[bytes, bytes]:
    value = {
        "protocol_type": "consumer",
        "generation": generation,
        "protocol": protocol,
        "leader": members[0]["member_id"] if members else None,
        "current_state_timestamp": state_ms,
        "members": list(members),
    }
    return encode_key("group_metadata", {"group": group}), encode_value("group_metadata", 3, value)


_files = itertools.count()


def write_records(directory: Path, rows: Sequence[Row]) -> None:
    """One parquet file of `__consumer_offsets` records in a replay directory."""
    (directory / "records").mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "topic": ["__consumer_offsets"] * len(rows),
            "partition": pa.array([r[0] for r in rows], pa.int32()),
            "offset": pa.array([r[1] for r in rows], pa.int64()),
            "timestamp": pa.array([SOURCE_TIME] * len(rows), pa.timestamp("ms", tz="UTC")),
            "key": pa.array([r[2] for r in rows], pa.binary()),
            "value": pa.array([r[3] for r in rows], pa.binary()),
        }
    )
    pq.write_table(table, directory / "records" / f"part-{next(_files):05d}.parquet")


def at(group: str, offset: int, record: tuple[bytes, bytes | None]) -> Row:
    """`record` at `offset` of the group's own partition of `__consumer_offsets`."""
    return (partition_for(group), offset, *record)


def stream(directory: Path, url: str, checkpoint: Path) -> int:
    return main(
        [
            *("stream", "--source", "replay", str(directory), "--once"),
            *("--database-url", url, "--checkpoint", str(checkpoint)),
        ]
    )


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = create_store_engine(database_url)
    yield engine
    engine.dispose()


def query(engine: Engine, sql: str, **params: object) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params)]


def repairs(engine: Engine) -> dict[tuple[int, str], tuple]:
    rows = query(
        engine, "SELECT source_offset, field, original, original_ms, stored FROM record_repairs"
    )
    return {(r[0], r[1]): r[2:] for r in rows}


def incompressible(length: int, seed: str) -> str:
    """Letters no compression shrinks (PostgreSQL compresses long index entries)."""
    out, block = [], seed.encode()
    while len(out) < length:
        block = hashlib.sha256(block).digest()
        out += [chr(ord("a") + b % 26) for b in block]
    return "".join(out[:length])


def test_nul_characters_anywhere_are_stored_as_u_fffd_and_recorded(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    nul_member = member(
        "m\x00-1",
        ["or\x00ders"],
        [("or\x00ders", 0)],
        client_id="c\x00",
        host="/h\x00",
        instance="i\x00",
    )
    write_records(
        tmp_path,
        [
            at("ok", 10, commit("ok", "t", 0, 5, metadata="meta\x00data")),
            at("nul\x00group", 11, commit("nul\x00group", "to\x00pic", 1, 6)),
            at("gm\x00", 12, group_metadata("gm\x00", 1, [nul_member], protocol="ra\x00nge")),
            at("ok", 13, commit("ok", "t", 1, 7)),
        ],
    )
    assert stream(tmp_path, database_url, tmp_path / "checkpoint") == 0
    assert sorted(
        query(engine, "SELECT group_name, topic, committed_offset, metadata FROM committed_offsets")
    ) == [
        ("nul\ufffdgroup", "to\ufffdpic", 6, ""),
        ("ok", "t", 5, "meta\ufffddata"),
        ("ok", "t", 7, ""),
    ]
    assert query(
        engine,
        "SELECT g.group_name, g.assignor, g.leader, m.member_id, m.client_id, m.client_host, "
        "m.group_instance_id, m.subscribed_topics, a.topic FROM generations g "
        "JOIN generation_members m ON m.generation_pk = g.id "
        "JOIN assignments a ON a.generation_pk = g.id",  # the view reads the JSON as text
    ) == [
        (
            *("gm\ufffd", "ra\ufffdnge", "m\ufffd-1", "m\ufffd-1", "c\ufffd", "/h\ufffd"),
            *("i\ufffd", ["or\ufffdders"], "or\ufffdders"),
        )
    ]
    got = repairs(engine)
    assert got[(10, "metadata")] == (b"meta\x00data", None, "meta\ufffddata")
    assert got[(11, "key.topic")] == (b"to\x00pic", None, "to\ufffdpic")
    assert got[(12, "members[0].client_host")] == (b"/h\x00", None, "/h\ufffd")
    assert {f for o, f in got if o == 12} == {
        "key.group",
        "protocol",
        "leader",
        *(
            f"members[0].{f}"
            for f in (
                "member_id",
                "client_id",
                "client_host",
                "group_instance_id",
                "subscribed_topics[0]",
                "assignment[0]",
            )
        ),
    }


def test_a_group_id_of_thousands_of_characters_is_stored_and_found_by_its_name(
    database_url: str, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    group = "billing-" + incompressible(6000, "group")
    member_id = "consumer-" + incompressible(4000, "member")
    topic = incompressible(3000, "topic")
    write_records(
        tmp_path,
        [
            at(group, 20, commit(group, topic, 0, 99)),
            at(group, 21, group_metadata(group, 1, [member(member_id, ["t"], [("t", 0)])])),
        ],
    )
    assert stream(tmp_path, database_url, tmp_path / "checkpoint") == 0
    short = storable_key(group)
    assert query(engine, "SELECT group_name, topic, committed_offset FROM committed_offsets") == [
        (short, storable_key(topic), 99)
    ]
    assert query(engine, "SELECT member_id FROM generation_members") == [(storable_key(member_id),)]
    got = repairs(engine)
    assert got[(20, "key.group")] == (group.encode(), None, short)
    assert got[(21, "members[0].member_id")][0] == member_id.encode()
    capsys.readouterr()
    assert main(["postmortem", group, "--json", "--database-url", database_url]) == 0
    assert '"generation": 1' in capsys.readouterr().out


def test_times_out_of_the_range_of_a_date_are_null_with_the_milliseconds_kept(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    write_records(
        tmp_path,
        [
            at("far", 30, commit("far", "t", 0, 1, commit_ms=HUGE_MS)),
            at("far", 31, commit("far", "t", 1, 2, commit_ms=-(2**63), expire_ms=HUGE_MS)),
            at(
                "far",
                32,
                group_metadata("far", 1, [member("m-1", ["t"], [("t", 0)])], state_ms=HUGE_MS),
            ),
            at("far", 33, commit("far", "t", 2, 3)),
        ],
    )
    assert stream(tmp_path, database_url, tmp_path / "checkpoint") == 0
    assert sorted(
        query(
            engine,
            "SELECT partition, committed_offset, commit_timestamp IS NULL, "
            "expire_timestamp IS NULL FROM committed_offsets",
        )
    ) == [(0, 1, True, True), (1, 2, True, True), (2, 3, False, True)]
    assert query(
        engine, "SELECT state_timestamp, extract(epoch FROM time) * 1000 FROM generations"
    ) == [(None, SOURCE_TIME)]
    assert repairs(engine) == {
        (30, "commit_timestamp"): (None, HUGE_MS, None),
        (31, "commit_timestamp"): (None, -(2**63), None),
        (31, "expire_timestamp"): (None, HUGE_MS, None),
        (32, "current_state_timestamp"): (None, HUGE_MS, None),
    }


def test_a_record_the_database_rejects_is_set_aside_with_its_bytes_and_the_rest_lands(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    # The same member id twice: generation_members' primary key refuses the generation.
    twice = [member("m-1", ["t"], [("t", 0)]), member("m-1", ["t"], [("t", 1)])]
    bad = at("dup", 41, group_metadata("dup", 1, twice))
    rows = [
        at("dup", 40, commit("dup", "t", 0, 5)),
        bad,
        at("fine", 42, group_metadata("fine", 3, [member("f-1", ["t"], [("t", 0)])])),
        at("dup", 43, commit("dup", "t", 1, 6)),
    ]
    write_records(tmp_path, rows)
    assert stream(tmp_path, database_url, tmp_path / "checkpoint") == 0
    assert query(
        engine, "SELECT source_offset, committed_offset FROM committed_offsets ORDER BY 1"
    ) == [
        (40, 5),
        (43, 6),
    ]
    assert query(engine, "SELECT group_name, generation FROM generations") == [("fine", 3)]
    failures = query(
        engine,
        "SELECT source_partition, source_offset, key, value, reason, category FROM decode_failures",
    )
    assert [f[:4] for f in failures] == [bad]
    assert "pk_generation_members" in failures[0][4] and failures[0][5] == "not storable"
    progress = query(
        engine, "SELECT last_offset FROM pipeline_progress WHERE partition = :p", p=bad[0]
    )
    assert progress == [(43,)]
    # Replaying it all from scratch (a lost checkpoint) sets the same record aside, once.
    before = query(engine, "SELECT * FROM decode_failures")
    assert stream(tmp_path, database_url, tmp_path / "fresh") == 0
    assert query(engine, "SELECT * FROM decode_failures") == before


INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TIMES = st.one_of(st.just(SOURCE_TIME), st.just(-1), INT64)
HOSTILE_TEXT = st.one_of(
    st.text(max_size=12),  # any code point Python can encode: odd unicode, controls
    st.builds(lambda a, b: f"{a}\x00{b}", st.text(max_size=8), st.text(max_size=8)),
    st.text(alphabet="\x00", min_size=1, max_size=3),
    st.integers(1200, 4000).map(lambda n: incompressible(n, str(n))),
)


def cesu_commit_key(group: str) -> bytes:
    """An offset-commit key whose group holds a lone surrogate, as Java's modified
    UTF-8 would write it: not valid UTF-8, which a client library could still send."""
    raw = group.encode("utf-8", "surrogatepass")
    return struct.pack(">hh", 1, len(raw)) + raw + struct.pack(">h", 1) + b"t" + b"\0\0\0\0"


def topic_id(raw: bytes) -> str:
    """A Kafka Uuid as `Uuid.toString()` writes it."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def kip848_epoch(draw: st.DrawFn, group: str) -> list[tuple[bytes, bytes | None]]:
    """A KIP-848 group's epoch: its metadata, topics, members, targets and target epoch."""
    epoch = draw(INT32)
    topic, tid = draw(HOSTILE_TEXT), topic_id(draw(st.binary(min_size=16, max_size=16)))
    records = [
        consumer_group_epoch(group, epoch),
        consumer_group_topics(group, [(tid, topic, draw(INT32))]),
    ]
    for _ in range(draw(st.integers(1, 2))):
        member_id = draw(HOSTILE_TEXT)
        fields = {
            "instance_id": draw(st.one_of(st.none(), HOSTILE_TEXT)),
            "client_id": draw(HOSTILE_TEXT),
            "client_host": draw(HOSTILE_TEXT),
            "topics": [topic, draw(HOSTILE_TEXT)],
            "rebalance_timeout_ms": draw(INT32),
            "server_assignor": draw(st.one_of(st.none(), HOSTILE_TEXT)),
        }
        records.append(consumer_group_member(group, member_id, fields))
        partitions = [(topic, draw(INT32))]
        records.append(consumer_group_target(group, member_id, partitions, {topic: tid}))
    return [*records, consumer_group_target_epoch(group, epoch)]


@st.composite
def hostile_records(draw: st.DrawFn, n: int) -> tuple[list[tuple[bytes, bytes | None]], bool]:
    """The n-th hostile record (several for a KIP-848 epoch), its group unique to it; and
    whether its first record must end up stored or set aside (garbage may decode as
    anything, or as nothing to store)."""
    group = f"h{n}-" + draw(HOSTILE_TEXT)
    kind = draw(st.sampled_from(["commit", "group", "kip848", "surrogate", "garbage"]))
    if kind == "commit":
        record = commit(
            group,
            draw(HOSTILE_TEXT),
            draw(INT32),
            draw(INT64),
            metadata=draw(HOSTILE_TEXT),
            commit_ms=draw(TIMES),
            expire_ms=draw(st.one_of(st.none(), TIMES)),
        )
        return [record], True
    if kind == "group":
        members = [
            {
                **member(
                    draw(HOSTILE_TEXT),
                    [topic := draw(HOSTILE_TEXT)],
                    [(topic, draw(INT32))],
                    client_id=draw(HOSTILE_TEXT),
                    host=draw(HOSTILE_TEXT),
                ),
                "group_instance_id": draw(st.one_of(st.none(), HOSTILE_TEXT)),
                "session_timeout": draw(INT32),
            }
            for _ in range(draw(st.integers(0, 3)))
        ]
        protocol, state_ms = draw(HOSTILE_TEXT), draw(TIMES)
        record = group_metadata(group, draw(INT32), members, protocol=protocol, state_ms=state_ms)
        return [record], True
    if kind == "kip848":
        return kip848_epoch(draw, group), True
    if kind == "surrogate":
        return [(cesu_commit_key(f"h{n}-\ud800"), commit("g", "t", 0, 1)[1])], True
    return [(draw(st.binary(min_size=1, max_size=40)), draw(st.binary(max_size=40)))], False


_examples = itertools.count()


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_hostile_values_never_stop_the_job_and_the_good_records_beside_them_land(
    postgres_server, migrated_template: str, data: st.DataObject
) -> None:
    hostile = [data.draw(hostile_records(n), label=f"hostile {n}") for n in range(6)]
    rows: list[Row] = []
    expected, accounted = {}, []
    for n, (records, must_land) in enumerate(hostile):  # good, hostile, ... good
        rows.append((7, len(rows), *commit("good", "t", n, 1000 + n)))
        expected[n] = 1000 + n
        if must_land:
            accounted.append(len(rows))
        rows += [(7, len(rows) + i, *record) for i, record in enumerate(records)]
    rows.append((7, len(rows), *commit("good", "t", 99, 5)))
    expected[99] = 5
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    engine = create_store_engine(url)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / f"capture-{next(_examples)}"
        try:
            write_records(directory, rows)
            assert stream(directory, url, directory / "checkpoint") == 0
            good = query(
                engine,
                "SELECT partition, committed_offset FROM committed_offsets "
                "WHERE group_name = 'good' AND topic = 't'",
            )
            assert dict(good) == expected
            assert query(engine, "SELECT last_offset FROM pipeline_progress") == [(len(rows) - 1,)]
            # Each hostile commit, group record or epoch is stored (repaired) or set aside.
            stored = {
                r[0]
                for r in query(
                    engine,
                    "SELECT source_offset FROM committed_offsets UNION "
                    "SELECT source_offset FROM generations UNION "
                    "SELECT source_offset FROM decode_failures",
                )
            }
            assert set(accounted) <= stored
        finally:
            engine.dispose()
            postgres_server.drop_database(name)

"""Reading offset ranges (`spark_jobs.range_reader`) from a real Kafka-protocol broker
(tansu): the native reader and confluent-kafka's give the same records, end at the
range's end across gaps, and are reused from range to range. Gaps left by aborted
transactions, which tansu does not filter, are in tests/job/test_real_kafka_ranges.py."""

from __future__ import annotations

import shutil
import sysconfig

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from services.cli import UsageError
from spark_jobs import range_reader
from spark_jobs.range_reader import SCHEMA, chosen_reader, native_available, read_range
from spark_jobs.settings import SparkSettings

BUILD = "`make setup` (or `pip install -e .`) builds spark_jobs._kafka_read with the C compiler"
KINDS = [
    "python",
    pytest.param(
        "native", marks=pytest.mark.skipif(not native_available(), reason="native reader not built")
    ),
]


def value_of(i: int) -> bytes | None:
    """Partition 0's i-th value: null, empty, or 1-50 bytes."""
    if i % 11 == 0:
        return None
    return b"" if i % 13 == 0 else b"v" * (i % 50) + bytes([i % 256])


@pytest.fixture(scope="module")
def topic(kafka_broker) -> str:
    """Two partitions. Partition 0: 300 records with every shape of key and value and
    their own timestamps. Partition 1: 20 records, a transaction's marker after them."""
    name = kafka_broker.create_topic(partitions=2)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for i in range(300):
        key = None if i % 7 == 0 else f"key-{i}".encode()
        value = (
            None if i % 11 == 0 else (b"" if i % 13 == 0 else b"v" * (i % 50) + bytes([i % 256]))
        )
        producer.produce(name, value, key, partition=0, timestamp=1_767_225_600_000 + i)
    producer.flush(30)
    transactional = Producer(
        {"bootstrap.servers": kafka_broker.bootstrap_servers, "transactional.id": name}
    )
    transactional.init_transactions(30)
    transactional.begin_transaction()
    for i in range(20):
        transactional.produce(name, f"t{i}".encode(), f"k{i}".encode(), partition=1)
    transactional.commit_transaction(30)
    return name


def config(kafka_broker) -> dict[str, str]:
    return {"bootstrap.servers": kafka_broker.bootstrap_servers}


def table(kafka_broker, topic: str, kind: str, partition: int, start: int, end: int) -> pa.Table:
    return pa.Table.from_batches(
        list(read_range(topic, partition, start, end, config(kafka_broker), kind)), SCHEMA
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("start,end", [(0, 300), (0, 1), (7, 8), (100, 157), (299, 300)])
def test_a_range_is_exactly_its_records(kafka_broker, topic: str, kind: str, start, end) -> None:
    got = table(kafka_broker, topic, kind, 0, start, end).to_pylist()
    assert [r["offset"] for r in got] == list(range(start, end))
    for r in got:
        i = r["offset"]
        assert r["topic"] == topic and r["partition"] == 0
        assert r["key"] == (None if i % 7 == 0 else f"key-{i}".encode())
        expected = (
            None if i % 11 == 0 else (b"" if i % 13 == 0 else b"v" * (i % 50) + bytes([i % 256]))
        )
        assert r["value"] == expected
        assert int(r["timestamp"].timestamp() * 1000) == 1_767_225_600_000 + i


@pytest.mark.skipif(not native_available(), reason="native reader not built")
def test_native_and_python_readers_give_the_same_batches(kafka_broker, topic: str) -> None:
    for partition, end in ((0, 300), (1, 21)):
        native = table(kafka_broker, topic, "native", partition, 0, end)
        python = table(kafka_broker, topic, "python", partition, 0, end)
        assert native.equals(python)
        assert native.num_rows == (300 if partition == 0 else 20)


@pytest.mark.parametrize("kind", KINDS)
def test_a_range_that_ends_on_a_transaction_marker_ends(kafka_broker, topic: str, kind) -> None:
    """Offset 20 of partition 1 is the commit marker, never delivered: the range [0, 21)
    ends at the partition's end instead of polling until it gives up."""
    got = table(kafka_broker, topic, kind, 1, 0, 21)
    assert got.column("offset").to_pylist() == list(range(20))
    assert got.column("value").to_pylist() == [f"t{i}".encode() for i in range(20)]


@pytest.mark.parametrize("kind", KINDS)
def test_one_consumer_serves_range_after_range(kafka_broker, topic: str, kind: str) -> None:
    for partition, start, end in ((0, 0, 10), (1, 5, 15), (0, 290, 300), (0, 3, 4)):
        got = table(kafka_broker, topic, kind, partition, start, end)
        assert got.column("offset").to_pylist() == list(range(start, end))
        assert set(got.column("partition").to_pylist()) == {partition}
    mine = [k for k in range_reader._readers if f'"{kind}"' in k]
    assert len(mine) == 1


def test_a_new_reader_freezes_what_the_worker_has_imported(
    kafka_broker, topic: str, monkeypatch
) -> None:
    """pyspark's daemon collects garbage after every task; what the worker holds once its
    reader exists is exempted, and a reused reader freezes nothing more.

    The permanent generation can shrink between two calls (a frozen object that loses its
    last reference is freed), so the calls to `gc.freeze` are counted, not the objects."""
    import gc

    freezes = []
    real_freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: (freezes.append(1), real_freeze())[1])
    for key in list(range_reader._readers):
        range_reader._readers.pop(key).close()
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        table(kafka_broker, topic, "python", 0, 0, 10)
        assert len(freezes) == 1
        assert gc.get_freeze_count() > 10_000  # pyspark, pyarrow and confluent-kafka's objects
        (reader,) = range_reader._readers.values()
        assert gc.is_tracked(reader)
        assert not any(o is reader for o in gc.get_objects())  # frozen: never walked again
        table(kafka_broker, topic, "python", 0, 10, 20)
        assert len(freezes) == 1
        assert not any(o is reader for o in gc.get_objects())
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("kind", KINDS)
def test_a_range_past_the_partitions_end_ends_empty(kafka_broker, topic: str, kind) -> None:
    assert table(kafka_broker, topic, kind, 0, 300, 305).num_rows == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_range_that_never_arrives_times_out_naming_it(
    kafka_broker, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(range_reader, "IDLE_POLLS", 2)
    with pytest.raises(TimeoutError, match="no-such-topic-here-0: no records for 2 polls"):
        list(read_range("no-such-topic-here", 0, 0, 5, config(kafka_broker), kind))
    assert not [k for k in range_reader._readers if f'"{kind}"' in k]  # not reused


@pytest.mark.skipif(not native_available(), reason="native reader not built")
def test_a_bad_librdkafka_property_is_named(kafka_broker) -> None:
    with pytest.raises(ValueError, match=r"no\.such\.property"):
        range_reader.NativeReader({**config(kafka_broker), "no.such.property": "1"})


def test_the_reader_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_KAFKA_READER", "python")
    assert chosen_reader() == "python"
    monkeypatch.setenv("GROUPSCOPE_KAFKA_READER", "fast")
    with pytest.raises(UsageError, match="GROUPSCOPE_KAFKA_READER='fast'"):
        chosen_reader()
    assert chosen_reader(SparkSettings(kafka_reader="python")) == "python"


def test_the_native_reader_is_built_where_a_compiler_is() -> None:
    """CI installs gcc (`make setup`), so there the native reader must be built; only a
    machine without a C compiler reads with confluent-kafka's API alone."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if not native_available():
        if shutil.which(compiler):
            pytest.fail(f"spark_jobs._kafka_read is not built, though {compiler} is here: {BUILD}")
        pytest.skip(f"no C compiler ({compiler}): confluent-kafka's API reads alone")
    from pathlib import Path

    from spark_jobs import _kafka_read

    built = Path(_kafka_read.__file__)
    source = built.with_name("_kafka_read.c")
    if source.exists():
        assert built.stat().st_mtime >= source.stat().st_mtime, f"stale build: {BUILD}"

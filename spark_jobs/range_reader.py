"""Reading one offset range of one Kafka partition as Arrow record batches.

This is the Kafka source's work on the executors (`kafka_source.KafkaRange`). Two readers
drive the same librdkafka consumer settings:

* `native`: `spark_jobs._kafka_read`, a small C extension that fills Arrow's buffers
  straight from librdkafka's messages, at a fraction of the CPU per record;
* `python`: confluent-kafka's `Consumer.consume`, one Python message object per record
  (docs/performance.md, "Design measurements": native range reader).

`auto` (the default) takes the native reader where it was built (`pip install` compiles
it when a C compiler is present) and confluent-kafka's otherwise.
`GROUPSCOPE_KAFKA_READER` on the driver chooses; the choice travels with each range.
"""

from __future__ import annotations

import gc
import json
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from services.outage import Outage
from spark_jobs.broker import DEFAULT_WAITS, BrokerProbe, BrokerWaits
from spark_jobs.settings import SparkSettings, current

_log = logging.getLogger("groupscope.kafka")
ARROW_ROWS = 65_536
POLL_MS = 1000
IDLE_POLLS = 30  # a range stalls after this many empty polls in a row (--read-stall-timeout)
_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("key", pa.binary()),
    ("value", pa.binary()),
]
SCHEMA = pa.schema(_COLUMNS)
MILLIS = pa.timestamp("ms", tz="UTC")


def consumer_config(config: dict[str, Any]) -> dict[str, Any]:
    """The librdkafka properties of a range reader: the user's, within fixed rules."""
    return {
        # librdkafka stops fetching once its queue holds queued.min.messages and then
        # waits fetch.queue.backoff.ms (1 s by default) before fetching again, so a
        # large range idled most of the time (docs/performance.md, "Design
        # measurements": consumer queue). What it fetches past a range's end is dropped
        # at the next assign, so the queue is kept small.
        "queued.min.messages": 10_000,
        "fetch.queue.backoff.ms": 10,
        # A range ends at offsets known to exist, so waiting on the broker for new
        # records is never useful; and a reused consumer's next range waits for the last
        # fetch of its previous one (500 ms by default at a partition's end; "Design
        # measurements": fetch wait).
        "fetch.wait.max.ms": 10,
        **config,
        "group.id": "groupscope-reader",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
        # A start offset deleted by retention or compaction: resume at the earliest
        # record still there, never at the end (librdkafka's default).
        "auto.offset.reset": "earliest",
        "fetch.max.bytes": 52_428_800,
    }


class RangeReader(Protocol):
    def assign(self, topic: str, partition: int, offset: int) -> None: ...
    def read(self, end: int, want: int) -> tuple[pa.RecordBatch | None, bool, bool]:
        """Up to `want` records before `end`: (records or None, range done, polled)."""
        ...

    def position(self) -> int:
        """The next offset of the assigned partition, -1 when unknown."""
        ...

    def unassign(self) -> None: ...
    def close(self) -> None: ...


def _columns(topic: str, partition: int, n: int, offsets, stamps, keys, values) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            offsets,
            stamps.cast(SCHEMA.field("timestamp").type),
            keys,
            values,
        ],
        schema=SCHEMA,
    )


class PythonReader:
    """confluent-kafka's consumer API."""

    def __init__(self, config: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        self._consumer = Consumer(consumer_config(config))
        self._where = ("", -1)

    def assign(self, topic: str, partition: int, offset: int) -> None:
        from confluent_kafka import TopicPartition

        self._where = (topic, partition)
        self._consumer.assign([TopicPartition(topic, partition, offset)])

    def read(self, end: int, want: int) -> tuple[pa.RecordBatch | None, bool, bool]:
        from confluent_kafka import KafkaError

        messages = self._consumer.consume(want, timeout=POLL_MS / 1000)
        offsets: list[int] = []
        stamps: list[int] = []
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        done = False
        for m in messages:
            error = m.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    done = True
                    break
                raise RuntimeError(str(error))
            offset = m.offset()
            if offset is None:  # only error events have none
                raise RuntimeError(f"a message without an offset from {m.topic()}")
            if offset >= end:
                done = True
                break
            offsets.append(offset)
            stamps.append(m.timestamp()[1])
            keys.append(m.key())
            values.append(m.value())
            if offset == end - 1:
                done = True
                break
        batch = None
        if offsets:
            batch = _columns(
                *self._where,
                len(offsets),
                pa.array(offsets, pa.int64()),
                pa.array(stamps, MILLIS),
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
            )
        return batch, done, bool(messages)

    def position(self) -> int:
        from confluent_kafka import TopicPartition

        (tp,) = self._consumer.position([TopicPartition(*self._where)])
        return tp.offset if tp.offset >= 0 else -1

    def unassign(self) -> None:
        self._consumer.unassign()

    def close(self) -> None:
        self._consumer.close()


def librdkafka_path() -> str:
    """The librdkafka confluent-kafka loaded (its wheel bundles one), so that both readers
    run the same library: found in this process's memory map once confluent-kafka is in."""
    import confluent_kafka  # noqa: F401  (loads librdkafka)

    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "librdkafka" in Path(path).name:
            return path
    import ctypes.util

    found = ctypes.util.find_library("rdkafka")
    if found is None:
        raise ImportError("librdkafka not found")
    return found


class NativeReader:
    """`spark_jobs._kafka_read`: librdkafka's messages straight into Arrow buffers."""

    def __init__(self, config: dict[str, Any]) -> None:
        from spark_jobs._kafka_read import Reader

        properties = {
            k: (str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in consumer_config(config).items()
        }
        self._reader = Reader(librdkafka_path(), properties)
        self._where = ("", -1)

    def assign(self, topic: str, partition: int, offset: int) -> None:
        self._where = (topic, partition)
        self._reader.assign(topic, partition, offset)

    def read(self, end: int, want: int) -> tuple[pa.RecordBatch | None, bool, bool]:
        (n, offsets, stamps, kv, ko, kd, vv, vo, vd, done, polled) = self._reader.read(
            end, want, POLL_MS
        )
        batch = None
        if n:
            batch = _columns(
                *self._where,
                n,
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
                pa.Array.from_buffers(MILLIS, n, [None, pa.py_buffer(stamps)]),
                pa.Array.from_buffers(pa.binary(), n, [pa.py_buffer(b) for b in (kv, ko, kd)]),
                pa.Array.from_buffers(pa.binary(), n, [pa.py_buffer(b) for b in (vv, vo, vd)]),
            )
        return batch, done, polled

    def position(self) -> int:
        return self._reader.position(*self._where)

    def unassign(self) -> None:
        self._reader.unassign()

    def close(self) -> None:
        self._reader.close()


_fallback_told = False  # this process said once that it reads without the native reader


def native_available() -> bool:
    try:
        import spark_jobs._kafka_read  # noqa: F401
    except ImportError:
        return False
    return True


def _native_or_say_why() -> bool:
    """`native_available()`, and where it is not, a warning, once per process: on a
    cluster an executor whose Python cannot load the extension (another platform, a
    different Python minor version) reads with confluent-kafka's Python API instead."""
    global _fallback_told
    try:
        import spark_jobs._kafka_read  # noqa: F401
    except ImportError as exc:
        if not _fallback_told:
            _fallback_told = True
            _log.warning(
                "spark_jobs._kafka_read cannot be loaded here (%s): reading Kafka with "
                "confluent-kafka's Python API, about 3x the CPU a record",
                exc,
            )
        return False
    return True


def chosen_reader(settings: SparkSettings | None = None) -> str:
    """GROUPSCOPE_KAFKA_READER (`SparkSettings.kafka_reader`, a known name already),
    checked on the driver: `native` must be built here."""
    choice = current(settings).kafka_reader
    if choice == "native" and not native_available():
        raise ValueError(
            "GROUPSCOPE_KAFKA_READER=native, but spark_jobs._kafka_read is not built "
            "(reinstall with a C compiler present)"
        )
    return choice


_readers: dict[str, RangeReader] = {}  # one consumer per config, in each worker process
_incarnations: dict[str, int] = {}  # the log incarnation each reader was made for


def _key(kind: str, config: dict[str, Any]) -> str:
    return json.dumps([kind, config], sort_keys=True)


def _reader(kind: str, config: dict[str, Any], incarnation: int = 0) -> RangeReader:
    """This worker process's reader for `config`, created on first use.

    Spark reuses Python workers across tasks (`spark.python.worker.reuse`), so a consumer
    outlives its range and is reassigned to the next: creating one costs CPU (threads,
    bootstrap, metadata; docs/performance.md, "Design measurements": consumer reuse),
    and a batch has one range per partition. On an
    executor without the native reader, `auto` takes confluent-kafka's.

    A consumer is not reused across log incarnations (`kafka_source`: the topic deleted
    and recreated): librdkafka 2.16 reassigned to a recreated topic's partition crashed
    the process (SIGSEGV, on tansu 0.6), so a new incarnation closes it and starts anew.
    """
    key = _key(kind, config)
    if key in _readers and _incarnations.get(key, 0) != incarnation:
        _drop_reader(kind, config)
    if key not in _readers:
        native = kind == "native" or (kind == "auto" and _native_or_say_why())
        _readers[key] = NativeReader(config) if native else PythonReader(config)
        _incarnations[key] = incarnation
        _freeze_imports()
    return _readers[key]


def _freeze_imports() -> None:
    """Exempt what this worker holds now (pyspark, pyarrow, confluent-kafka, the reader)
    from Python's cyclic garbage collector.

    pyspark's daemon runs a full `gc.collect()` after every task of a reused worker
    (`pyspark/daemon.py`), and a batch has one task per partition. A full collection
    walks every object the worker has imported, a large share of the Python workers' CPU
    (docs/performance.md, "Design measurements": frozen imports). Freezing after the
    first reader is built (`gc.freeze`, after a collection, so no garbage is kept)
    leaves each later collection only what the tasks themselves created.
    """
    gc.collect()
    gc.freeze()


def _drop_reader(kind: str, config: dict[str, Any]) -> None:
    reader = _readers.pop(_key(kind, config), None)
    if reader is not None:
        reader.close()


def read_range(
    topic: str,
    partition: int,
    start: int,
    end: int,
    config: dict[str, Any],
    kind: str = "auto",
    incarnation: int = 0,
    waits: BrokerWaits = DEFAULT_WAITS,
) -> Iterator[pa.RecordBatch]:
    """Records [start, end) of one partition, in batches of about ARROW_ROWS.
    `incarnation` names the topic's log (see `_reader`).

    Gaps that compaction and control records leave are expected: the range ends at the
    record end - 1, at a record past it, at the partition's end, or once the consumer's
    position has passed `end`.

    A range that stalls (no record for `waits.stall_timeout` seconds, IDLE_POLLS polls
    by default, or an error from librdkafka) while the broker cannot be reached waits
    for it as `waits` says (past `waits.max_outage`: `BrokerUnavailableError`), and goes
    on from the next offset with a new consumer: the range was planned from offsets the
    broker had, so they are read once it is back. A stall with the broker there fails as before.
    """
    if end <= start:
        return
    idle_polls = IDLE_POLLS if waits.stall_timeout is None else stall_polls(waits.stall_timeout)
    reader = _reader(kind, config, incarnation)
    # The exact start offset, even 0: a logical offset (OFFSET_BEGINNING) costs a lookup
    # per range (docs/performance.md, "Design measurements": exact start offsets), and a
    # start that no longer exists resets to the earliest record anyway
    # (auto.offset.reset).
    reader.assign(topic, partition, start)
    pending: list[pa.RecordBatch] = []
    rows, idle, expected = 0, 0, start
    try:
        while True:
            # Never ask for more records than the range can still hold: librdkafka waits
            # for the full count or the timeout, so asking for more idles at every range's
            # end. (Fewer arrive only where compaction or control records left gaps.)
            try:
                batch, done, polled = reader.read(end, max(1, min(ARROW_ROWS, end - expected)))
            except RuntimeError as exc:
                stalled: BaseException = RuntimeError(f"{topic}-{partition}: {exc}")
                reader = _after_stall(
                    stalled, kind, config, incarnation, (topic, partition, expected), waits
                )
                idle = 0
                continue
            if not polled:
                idle += 1
                if idle >= idle_polls:
                    stalled = TimeoutError(
                        f"{topic}-{partition}: no records for {idle_polls} polls "
                        f"before offset {end}"
                    )
                    at = (topic, partition, expected)
                    reader = _after_stall(stalled, kind, config, incarnation, at, waits)
                    idle = 0
                continue
            idle = 0
            if batch is not None:
                expected = batch.column("offset")[-1].as_py() + 1
                pending.append(batch)
                rows += batch.num_rows
            if rows >= ARROW_ROWS:
                yield _combined(pending)
                pending, rows = [], 0
            if done or reader.position() >= end:
                break
    except BaseException:
        _drop_reader(kind, config)  # a consumer in an unknown state is not reused
        raise
    reader.unassign()  # no prefetching for this range while the worker waits
    if pending:
        yield _combined(pending)


def _after_stall(
    stalled: BaseException,
    kind: str,
    config: dict[str, Any],
    incarnation: int,
    at: tuple[str, int, int],
    waits: BrokerWaits,
) -> RangeReader:
    """A reader at `at` (topic, partition, offset) once the broker answers again; raises
    `stalled` when the broker answers (the stall is not an outage: a topic deleted, say)."""
    topic, partition, offset = at
    probe = BrokerProbe(config, None)  # only the broker: a deleted topic is no outage
    if probe.problem() is None:
        raise stalled
    _drop_reader(kind, config)
    outage = Outage(f"the Kafka broker (reading {topic}-{partition})", _log)
    waits.wait(probe, outage)
    reader = _reader(kind, config, incarnation)
    reader.assign(topic, partition, offset)
    return reader


def stall_polls(stall_timeout: float) -> int:
    """The empty polls (of POLL_MS each) in `stall_timeout` seconds, at least one."""
    return max(1, math.ceil(stall_timeout * 1000 / POLL_MS))


def _combined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]

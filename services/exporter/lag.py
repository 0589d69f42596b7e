"""Offset lag and time lag: log-end offsets polled from Kafka, and their recent history.

**Offset lag** of a partition is its log-end offset minus the group's committed offset
(never below 0: a commit can briefly run ahead of a stale log-end sample).

The log-end offset is the one a `read_committed` consumer sees: the **last stable
offset** (ListOffsets with isolation level READ_COMMITTED, KIP-98). On a topic without
open transactions it equals the high watermark; while a transaction is open it stops
at the transaction's first record, which no `read_committed` consumer can pass before
the transaction ends, so a group caught up with everything it may read shows no lag.
Both lags use it (time lag interpolates on its samples). `__consumer_offsets` does not
say which isolation level a group uses; a `read_uncommitted` group's lag is short by at
most the records of the transactions open at the poll (`kafka-consumer-groups.sh`
counts to the high watermark instead).

**Time lag** estimates how old the committed position is: when did the log-end offset
pass the committed offset? Every poll adds a (log-end offset, time) sample per
partition to a short history. While the offset does not move, the newest sample's time
is advanced instead, so each sample knows when the log was first and last seen ending
there. For a committed offset c between two samples o1 <= c < o2, the record at c was
appended after the log was last seen at o1 (t1) and before it was first seen at o2
(t2), and linear interpolation places it at t1 + (c - o1) / (o2 - o1) * (t2 - t1); the
time lag is now minus that. A committed
offset older than the whole history is extrapolated back at the history's average rate
(or, with no rate, the history's age, a lower bound). Caught up (c >= the latest
log-end offset) is 0. This is the method of kafka-lag-exporter's lookup table; its
limits are in docs/architecture.md, "Lag": bursty producers make interpolation coarse,
and right after start the history is one sample deep.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from confluent_kafka import KafkaException

from services.exporter.rows import RowIndex, extend

if TYPE_CHECKING:  # rebalancelag reads LagResult
    from services.exporter.rebalancelag import RebalanceLag
    from services.exporter.snapshot import GroupKey

log = logging.getLogger("groupscope.exporter")

# (topic names, topic index per partition, partition numbers) -> log-end offsets, -1 where
# unknown. Arrays rather than tuples, which cost far more memory at scale
# (docs/performance.md, "Design measurements": partition arrays).
Fetch = Callable[[Sequence[str], np.ndarray, np.ndarray], np.ndarray]

POLLS_KEPT = 64  # poll times remembered, for `lowest_recent`
CHUNK = 16_384  # rows per vectorized block: bounds the temporaries (~8 MB)


@dataclass
class LagResult:
    """Per committed-offset row: offset lag and time lag (NaN: no log-end offset known)."""

    lag: np.ndarray  # float64 (NaN where unknown)
    seconds: np.ndarray  # float64 (NaN where unknown)
    # Burrow's status code per row (services.exporter.lagstatus; 0 where unknown)
    status: np.ndarray | None = None
    # group -> how far it fell behind during its latest rebalance, where the exporter's
    # samples cover it (services.exporter.rebalancelag.RebalanceLag)
    rebalance: dict[GroupKey, RebalanceLag] = field(default_factory=dict)


class OffsetHistory:
    """The last `depth` distinct log-end offsets of every polled partition, each with the
    first and the last time a poll saw it.

    A record at offset c with o[j] <= c < o[j+1] was appended after the log was last seen
    ending at o[j] and before it was first seen ending at o[j+1]; time lag interpolates in
    that interval. Partitions are int64 keys (a stable topic id in the high 32 bits, the
    partition in the low), looked up by binary search; rows stay in arrival order. Times
    are float32 seconds since the first sample (0.5 s resolution after 100 days), which
    keeps 500,000 partitions x 16 samples at 128 MB.
    """

    def __init__(self, depth: int = 16) -> None:
        if depth < 2:
            raise ValueError("the history needs at least 2 samples per partition")
        self.depth = depth
        self.epoch: float | None = None
        self.topic_ids: dict[str, int] = {}
        self.polls: deque[float] = deque(maxlen=POLLS_KEPT)  # the times of the last polls
        self.index = RowIndex()
        self.offsets = np.zeros((0, depth), np.int64)
        self.first = np.zeros((0, depth), np.float32)
        self.last = np.zeros((0, depth), np.float32)

    def __len__(self) -> int:
        return len(self.index)

    def keys(self, topics: Sequence[str], topic_index: np.ndarray, partitions: np.ndarray):
        """Stable int64 keys of (topics[topic_index[i]], partitions[i])."""
        ids = np.fromiter(
            (self.topic_ids.setdefault(t, len(self.topic_ids)) for t in topics),
            np.int64,
            len(topics),
        )
        return (ids[topic_index] << 32) | partitions.astype(np.int64)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """History row per key, -1 where never polled."""
        return self.index.rows_of(keys)

    def record(self, keys: np.ndarray, values: np.ndarray, at: float) -> None:
        """Add one poll's log-end offsets (`values`, -1: not read), taken at `at`."""
        if self.epoch is None:
            self.epoch = at
        self.polls.append(at)
        t = np.float32(at - self.epoch)
        read = values >= 0
        keys, values = keys[read], values[read]
        rows = self.rows_of(keys)
        new = rows < 0
        if new.any():
            rows[new] = self._grow(keys[new], values[new], t)
        known = ~new
        rows, values = rows[known], values[known]
        newest = self.offsets[rows, -1]
        # A log that shrank was deleted and recreated: its history no longer applies.
        shrank = values < newest
        self._reset(rows[shrank], values[shrank], t)
        self.last[rows[values == newest], -1] = t
        grew = values > newest
        shift = rows[grew]
        if len(shift):
            for array in (self.offsets, self.first, self.last):
                array[shift, :-1] = array[shift, 1:]
            self.offsets[shift, -1] = values[grew]
            self.first[shift, -1] = t
            self.last[shift, -1] = t

    def _grow(self, keys: np.ndarray, values: np.ndarray, t: np.float32) -> np.ndarray:
        count = len(keys)
        self.offsets = extend(self.offsets, count)
        self.first = extend(self.first, count)
        self.last = extend(self.last, count)
        rows = self.index.add(keys)
        self._reset(rows, values, t)
        return rows

    def _reset(self, rows: np.ndarray, values: np.ndarray, t: np.float32) -> None:
        """One sample, repeated across the row: no rate known yet."""
        self.offsets[rows] = values[:, None]
        self.first[rows] = t
        self.last[rows] = t

    def lowest_recent(self, rows: np.ndarray, polls: int) -> np.ndarray:
        """Per row, the lowest log-end offset that the last `polls` polls saw (Burrow's
        ring of recent broker offsets); -1 where none did (or the row was never polled)."""
        out = np.full(len(rows), -1, np.int64)
        known = rows >= 0
        if self.epoch is None or not known.any():
            return out
        since = self.polls[-min(polls, len(self.polls))]
        r = rows[known]
        recent = self.last[r] >= np.float32(since - self.epoch)
        lowest = np.where(recent, self.offsets[r], np.iinfo(np.int64).max).min(axis=1)
        out[known] = np.where(recent.any(axis=1), lowest, -1)
        return out

    def lag(self, rows: np.ndarray, committed: np.ndarray, now: float) -> LagResult:
        """Offset and time lag of committed offsets on the given history rows."""
        lag = np.full(len(rows), np.nan)
        seconds = np.full(len(rows), np.nan)
        for start in range(0, len(rows), CHUNK):
            block = slice(start, start + CHUNK)
            self._lag_block(rows[block], committed[block], now, lag[block], seconds[block])
        return LagResult(lag, seconds)

    def _lag_block(
        self,
        rows: np.ndarray,
        committed: np.ndarray,
        now: float,
        lag_out: np.ndarray,
        seconds_out: np.ndarray,
    ) -> None:
        known = rows >= 0
        if not known.any() or self.epoch is None:
            return
        r, c = rows[known], committed[known]
        offsets = self.offsets[r]
        first = self.first[r].astype(np.float64)
        last = self.last[r].astype(np.float64)
        elapsed = now - self.epoch
        latest = offsets[:, -1]
        lag = np.maximum(latest - c, 0)
        # j: the newest sample at or below c (-1: c is older than the whole history).
        j = (offsets <= c[:, None]).sum(axis=1) - 1
        seconds = np.zeros(len(r))
        between = (j >= 0) & (j < self.depth - 1)
        if between.any():
            k = np.nonzero(between)[0]
            jj = j[k]
            o1, o2 = offsets[k, jj], offsets[k, jj + 1]
            t1, t2 = last[k, jj], first[k, jj + 1]
            seconds[k] = elapsed - (t1 + (c[k] - o1) / (o2 - o1) * (t2 - t1))
        older = j < 0
        if older.any():
            k = np.nonzero(older)[0]
            o0, t0 = offsets[k, 0], first[k, 0]
            span_o = (latest[k] - o0).astype(np.float64)
            span_t = first[k, -1] - t0
            rate = np.divide(span_o, span_t, out=np.zeros(len(k)), where=span_t > 0)
            behind = np.divide(
                (o0 - c[k]).astype(np.float64), rate, out=np.zeros(len(k)), where=rate > 0
            )
            seconds[k] = elapsed - t0 + behind
        lag_out[known] = lag
        seconds_out[known] = np.maximum(seconds, 0.0)


class LagPollError(Exception):
    """A poll that could not read some partitions' log-end offsets for a reason other
    than an unknown topic: the broker is down or slow, or the principal lacks Describe
    on a topic. `ends` holds what was read (-1 elsewhere), so that one topic cannot
    hide the others; the exporter counts the poll as failed
    (`groupscope_exporter_lag_poll_errors_total`, alert GroupscopeLagPollFailing)."""

    def __init__(self, ends: np.ndarray, failed: int, first: str) -> None:
        super().__init__(f"log-end offsets of {failed} partitions not read ({first})")
        self.ends = ends


class LogEndPoller:
    """Polls log-end offsets of many partitions with few requests (confluent-kafka).

    `AdminClient.list_offsets` groups the partitions by leader and sends one ListOffsets
    request per broker, so 500,000 partitions on 6 brokers cost 6 requests, not 500,000.
    It asks for the latest offset at isolation level READ_COMMITTED: the last stable
    offset (see the module docstring).
    """

    def __init__(self, config: Mapping[str, str], timeout_s: float = 30.0) -> None:
        from confluent_kafka.admin import AdminClient

        self.timeout_s = timeout_s
        self.admin = AdminClient(dict(config))

    def __call__(
        self, topics: Sequence[str], topic_index: np.ndarray, partitions: np.ndarray
    ) -> np.ndarray:
        """Last stable offset per (topics[topic_index[i]], partitions[i]); -1 where it
        failed."""
        from confluent_kafka import IsolationLevel
        from confluent_kafka import TopicPartition as KafkaTopicPartition
        from confluent_kafka.admin import OffsetSpec

        out = np.full(len(partitions), -1, np.int64)
        if not len(partitions):
            return out
        latest = OffsetSpec.latest()
        where = {
            (topics[t], p): i
            for i, (t, p) in enumerate(zip(topic_index.tolist(), partitions.tolist(), strict=True))
        }
        request = {KafkaTopicPartition(t, p): latest for t, p in where}
        futures = self.admin.list_offsets(
            request,
            isolation_level=IsolationLevel.READ_COMMITTED,
            request_timeout=self.timeout_s,
        )
        failed, first = 0, ""
        for tp, future in futures.items():
            try:
                out[where[(tp.topic, tp.partition)]] = future.result(timeout=self.timeout_s).offset
            except (KafkaException, TimeoutError) as exc:
                if _unknown_topic(exc):  # a deleted topic's commits outlive it: no error
                    continue
                failed += 1
                first = first or f"{tp.topic}-{tp.partition}: {exc or type(exc).__name__}"
        if failed:
            raise LagPollError(out, failed, first)
        return out


def _unknown_topic(exc: Exception) -> bool:
    from confluent_kafka import KafkaError

    return isinstance(exc, KafkaException) and exc.args[0].code() in (
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
    )

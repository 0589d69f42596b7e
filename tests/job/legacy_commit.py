"""An OffsetCommit v2 request with a retention time, as clients before KIP-211 sent it.

OffsetCommit v2-v4 carry `retention_time_ms`; Kafka 4.3.1 still accepts v2 (KIP-896
removed only v0-v1) and, for such a commit, stores an expire timestamp
(`OffsetMetadataManager.expireTimestampMs`, written as OffsetCommitValue v1). Its
expiry check (`OffsetExpirationConditionImpl.isOffsetExpired`) then expires the offset at
that timestamp instead of after `offsets.retention.minutes` (at least a minute), and
writes the tombstone at its next `offsets.retention.check.interval.ms`. No client this
project uses sends v2 any more, hence the request is written by hand here: a
size-prefixed request (header v1, non-flexible body) on a plain socket to the broker,
which on a one-node cluster is every group's coordinator.
"""

from __future__ import annotations

import socket
import struct
import time

OFFSET_COMMIT = 8
VERSION = 2
COORDINATOR_PENDING = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_
TIMEOUT_S = 30.0


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def request(group: str, topic: str, offsets: dict[int, int], retention_ms: int) -> bytes:
    """The size-prefixed OffsetCommit v2 request: a simple (generation -1, no member)
    commit of `offsets` (partition -> offset) of `topic`."""
    body = _string(group) + struct.pack(">i", -1) + _string("") + struct.pack(">q", retention_ms)
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", len(offsets))
    for partition, offset in sorted(offsets.items()):
        body += struct.pack(">iqh", partition, offset, -1)  # metadata: null
    header = struct.pack(">hhi", OFFSET_COMMIT, VERSION, 1) + _string("groupscope-tests")
    message = header + body
    return struct.pack(">i", len(message)) + message


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        out += chunk
    return out


def error_codes(response: bytes) -> dict[int, int]:
    """partition -> error code, from an OffsetCommit v2 response (of one topic)."""
    (_correlation, topics), at = struct.unpack_from(">ii", response), 8
    codes = {}
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", response, at)
        at += 2 + length
        (partitions,) = struct.unpack_from(">i", response, at)
        at += 4
        for _ in range(partitions):
            partition, code = struct.unpack_from(">ih", response, at)
            at += 6
            codes[partition] = code
    return codes


def commit_with_retention(
    bootstrap: str, group: str, topic: str, offsets: dict[int, int], retention_ms: int
) -> None:
    """Commit through OffsetCommit v2 with `retention_ms`; again while the coordinator
    loads. Raises AssertionError with the error codes if the broker refuses."""
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
            sock.sendall(request(group, topic, offsets, retention_ms))
            (size,) = struct.unpack(">i", _read(sock, 4))
            codes = error_codes(_read(sock, size))
        if set(codes.values()) == {0} and codes.keys() == offsets.keys():
            return
        if not set(codes.values()) <= COORDINATOR_PENDING | {0} or time.monotonic() > deadline:
            raise AssertionError(f"OffsetCommit v2 for {group} failed: {codes}")
        time.sleep(0.2)

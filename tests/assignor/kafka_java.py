"""Apache Kafka's own assignors, run in one JVM per test session (``kafka_assignors``).

``tests/kafka/harness/AssignorHarness.java`` is compiled against the Kafka 4.3.1
classpath that ``make kafka`` writes beside the virtualenv, cached there by the source's
hash, and reads one JSON request per line (see its Javadoc). Each call costs about a
millisecond once the JVM is warm, so hypothesis can compare hundreds of groups.

Without Java or the classpath the fixture skips; with ``GROUPSCOPE_REQUIRE_KAFKA`` set (CI)
it fails instead.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

import pytest

from tests.kafka.javac import JavaUnavailable as HarnessUnavailable
from tests.kafka.javac import compiled, kafka_classpath
from tests.settings import kafka_unavailable

HARNESS_SOURCE = Path(__file__).resolve().parents[1] / "kafka" / "harness" / "AssignorHarness.java"
CALL_TIMEOUT_S = 60.0


class KafkaRaised(Exception):
    """Kafka's assignor threw: ``java_class`` and ``message`` are the exception's."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(f"{java_class}: {message}")
        self.java_class = java_class
        self.message = message


def compiled_harness(classpath: str) -> Path:
    """The folder holding AssignorHarness.class, compiled once per version of its source."""
    return compiled(HARNESS_SOURCE, classpath, "harness")


class KafkaAssignors:
    """A running harness JVM: ``assign`` mirrors ``services.assignor.assign``."""

    def __init__(self, classpath: str, classes: Path) -> None:
        java = shutil.which("java")
        if java is None:
            raise HarnessUnavailable("java is not installed")
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self._process = subprocess.Popen(
            [
                java,
                "-Xss16m",
                "-XX:+UseSerialGC",
                "-Dlog4j2.level=OFF",
                "-cp",
                f"{classes}{os.pathsep}{classpath}",
                "AssignorHarness",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._selector = selectors.DefaultSelector()
        assert self._process.stdout is not None
        self._selector.register(self._process.stdout, selectors.EVENT_READ)

    def assign(
        self,
        assignor: str,
        partitions_per_topic: Mapping[str, int],
        members: Sequence[Mapping],
        partition_racks: Mapping[str, Sequence[Sequence[str | None] | None]] | None = None,
        topic_ids: Mapping[str, str] | None = None,
    ) -> dict[str, list[tuple[str, int]]]:
        """Kafka's assignment, each member's partitions in Kafka's order.

        Raises ``KafkaRaised`` where Kafka's assignor throws.
        """
        request = {
            "assignor": assignor,
            "partitions": dict(partitions_per_topic),
            "racks": partition_racks or {},
            "topic_ids": topic_ids or {},
            "members": [
                {
                    "id": m["id"],
                    "topics": list(m.get("topics") or ()),
                    "owned": [list(tp) for tp in m.get("owned") or ()],
                    "generation": m.get("generation"),
                    "rack": m.get("rack"),
                    "group_instance_id": m.get("group_instance_id"),
                }
                for m in members
            ],
        }
        response = self._call(request)
        if "error" in response:
            raise KafkaRaised(response["error"]["class"], response["error"]["message"])
        return {
            member: [(topic, partition) for topic, partition in partitions]
            for member, partitions in response["assignment"].items()
        }

    def _call(self, request: dict) -> dict:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
        except BrokenPipeError as exc:
            raise HarnessUnavailable(f"the harness JVM died:\n{self._log()}") from exc
        if not self._selector.select(CALL_TIMEOUT_S):
            raise TimeoutError(f"Kafka's assignor gave no answer in {CALL_TIMEOUT_S} s")
        line = stdout.readline()
        if not line:
            raise HarnessUnavailable(f"the harness JVM died:\n{self._log()}")
        return json.loads(line)

    def _log(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-4000:]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._selector.close()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()


def start_harness() -> KafkaAssignors:
    classpath = kafka_classpath()
    return KafkaAssignors(classpath, compiled_harness(classpath))


@pytest.fixture(scope="session")
def kafka_assignors() -> Iterator[KafkaAssignors]:
    """Kafka 4.3.1's assignors in one JVM for the session; skips (or fails) without Kafka."""
    try:
        harness = start_harness()
    except HarnessUnavailable as exc:
        kafka_unavailable(str(exc))
    try:
        yield harness
    finally:
        harness.close()

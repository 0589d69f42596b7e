"""`groupscope stream --once` on a real broker, Kafka's own account of its groups, and
what the job stored.

- `run_job_once`: the job as a subprocess, the groups' members polled meanwhile.
- `admin_offsets`: ListConsumerGroupOffsets through confluent-kafka's AdminClient.
- `describe_groups`, `delete_offsets`: Kafka's Java Admin client
  (tests/kafka/harness/GroupAdmin.java, compiled once against the Kafka 4.3.1 classpath)
  for the group and member epochs librdkafka does not report, and for OffsetDelete,
  which confluent-kafka's Python binding lacks.
- `rows`, `stored_generations`, `on`: reading the store back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Engine, text

from tests.fixtures.real_kafka import RealKafka
from tests.kafka.javac import JavaUnavailable, compiled, kafka_classpath
from tests.settings import kafka_unavailable

JOB_TIMEOUT_S = 300.0
ADMIN_TIMEOUT_S = 120.0
GROUP_ADMIN = Path(__file__).resolve().parents[1] / "kafka" / "harness" / "GroupAdmin.java"

TopicPartitions = frozenset[tuple[str, int]]


class Polled(Protocol):
    def poll(self, timeout: float = 0.1) -> None: ...


def run_job_once(
    broker: RealKafka,
    url: str,
    checkpoint: Path,
    groups: Sequence[Polled] = (),
    source: str | None = None,
) -> subprocess.CompletedProcess:
    """`groupscope stream --once` on the broker, the groups' members polled meanwhile
    (so that they stay in their generation); `source` is `--source` (default: the
    job's). A run from an existing checkpoint resumes there; each run's stderr is kept
    beside the checkpoint."""
    args = [
        *(sys.executable, "-m", "services.cli", "stream", "--once"),
        *(("--source", source) if source else ()),
        *("--bootstrap-servers", broker.bootstrap_servers, "--database-url", url),
        *("--checkpoint", str(checkpoint)),
    ]
    runs = len(list(checkpoint.parent.glob("job*.err")))
    err = checkpoint.parent / (f"job-{runs + 1}.err" if runs else "job.err")
    with open(err, "w") as out:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=out, text=True)
        deadline = time.monotonic() + JOB_TIMEOUT_S
        try:
            while process.poll() is None:
                if time.monotonic() > deadline:
                    raise AssertionError(f"the job ran over {JOB_TIMEOUT_S}s")
                for group in groups:
                    group.poll(0.05)
                time.sleep(0.2)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
    return subprocess.CompletedProcess(args, process.returncode, "", err.read_text())


def records_read(job: subprocess.CompletedProcess) -> int:
    """The records a job's batches held, from its log (`batch N: R records ...`)."""
    found = re.findall(r"groupscope\.stream batch \d+: (\d+) records", job.stderr)
    return sum(map(int, found))


def spark_kafka_connector() -> None:
    """Skips (or fails, under GROUPSCOPE_REQUIRE_KAFKA) unless Spark's Kafka connector
    is in Maven's cache (`make kafka`) or Ivy's, where the job resolves it offline."""
    from spark_jobs import connector

    coordinate = connector.coordinate()
    group, artifact, version = coordinate.split(":")
    ivy = Path.home() / ".ivy2.5.2" / "jars" / f"{group}_{artifact}-{version}.jar"
    if not (connector.m2_jar(coordinate).is_file() or ivy.is_file()):
        kafka_unavailable(f"Spark's Kafka connector {coordinate} is not cached: run `make kafka`")


def admin_offsets(broker: RealKafka, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    """Kafka's own answer: ListConsumerGroupOffsets for every group."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())
    out = {}
    for group in groups:
        (future,) = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)]
        ).values()
        result = future.result(30)
        out[group] = {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}
    return out


def _group_admin(broker: RealKafka, *args: str) -> str:
    """GroupAdmin's output; skips (or fails, under GROUPSCOPE_REQUIRE_KAFKA) where Java
    cannot run it, and raises AssertionError with Kafka's error where the call failed."""
    try:
        classpath = kafka_classpath()
        classes = compiled(GROUP_ADMIN, classpath, "harness")
    except JavaUnavailable as exc:
        kafka_unavailable(f"Kafka's Java Admin client unavailable: {exc}")
    java = shutil.which("java") or "java"
    done = subprocess.run(
        [
            *(java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=OFF"),
            *("-cp", f"{classes}{os.pathsep}{classpath}", "GroupAdmin"),
            *(args[0], broker.bootstrap_servers, *args[1:]),
        ],
        capture_output=True,
        text=True,
        timeout=ADMIN_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"GroupAdmin {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def describe_groups(broker: RealKafka, groups: list[str]) -> dict[str, dict[str, Any]]:
    """`Admin.describeConsumerGroups`: group -> {"type", "state", "assignor",
    "group_epoch", "target_assignment_epoch", "members": [{"member_id", "member_epoch",
    "assignment", "target_assignment"}]}, the assignments as lists of [topic, partition]."""
    described = [json.loads(line) for line in _group_admin(broker, "describe", *groups).split()]
    return {d["group"]: d for d in described}


def delete_offsets(broker: RealKafka, group: str, topic: str, partitions: list[int]) -> None:
    """`Admin.deleteConsumerGroupOffsets` (OffsetDelete): the coordinator writes a
    tombstone for each partition's offset."""
    _group_admin(broker, "delete-offsets", group, topic, *map(str, partitions))


def rows(engine: Engine, sql: str, **params: Any) -> list:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).all()


def stored_generations(
    engine: Engine, group: str, by_instance: bool = False
) -> dict[int, dict[str, TopicPartitions]]:
    """generation -> member id -> (topic, partition)s; with `by_instance`, a static
    member is keyed by its group instance id instead (KIP-345: it keeps that across
    restarts, while the coordinator gives it a new member id each time)."""
    out: dict[int, dict[str, TopicPartitions]] = {}
    key = "coalesce(m.group_instance_id, m.member_id)" if by_instance else "m.member_id"
    sql = (
        f"SELECT g.generation, {key}, m.assignment FROM generations g "
        "LEFT JOIN generation_members m ON m.generation_pk = g.id WHERE g.group_name = :group"
    )
    for generation, member_id, assignment in rows(engine, sql, group=group):
        members = out.setdefault(generation, {})
        if member_id is not None:
            members[member_id] = frozenset(
                (t, p) for t, ps in (assignment or {}).items() for p in ps
            )
    return out


def stored_offsets(engine: Engine, group: str) -> dict[tuple[str, int], int]:
    """The group's live committed offsets in the store: (topic, partition) -> offset."""
    sql = (
        "SELECT topic, partition, committed_offset FROM committed_offsets "
        "WHERE group_name = :group AND NOT deleted"
    )
    return {(t, p): o for t, p, o in rows(engine, sql, group=group)}


def on(topic: str, partitions: frozenset[int]) -> TopicPartitions:
    return frozenset((topic, p) for p in partitions)

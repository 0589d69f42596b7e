"""Offset commits with flexible (v4) values, as Apache Kafka 4.3's group coordinator writes
them: the Spark SQL fast path leaves them to the codec, which must count every commit a
batch holds, the superseded ones too, as the fast path does (`groups.commits_total`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from services.codec import encode_key, encode_value
from services.store.database import create_store_engine
from tests.job.test_poison_records import at, commit, query, stream, write_records


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = create_store_engine(database_url)
    yield engine
    engine.dispose()


def flexible_commit(group: str, topic: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    key = encode_key("offset_commit", {"group": group, "topic": topic, "partition": partition})
    value = {"offset": offset, "leader_epoch": -1, "metadata": "", "commit_timestamp": 1}
    return key, encode_value("offset_commit", 4, value)


def test_superseded_flexible_commits_are_counted(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    rows = [
        # group v4: three commits of one partition, one of another
        at("v4", 0, flexible_commit("v4", "orders", 0, 5)),
        at("v4", 1, flexible_commit("v4", "orders", 0, 10)),
        at("v4", 2, flexible_commit("v4", "orders", 1, 7)),
        at("v4", 3, flexible_commit("v4", "orders", 0, 15)),
        # group mixed: v3 commits (the fast path) and v4 ones (the codec) of one partition,
        # a v4 first and last
        at("mixed", 0, flexible_commit("mixed", "orders", 0, 1)),
        at("mixed", 1, commit("mixed", "orders", 0, 2)),
        at("mixed", 2, commit("mixed", "orders", 0, 3)),
        at("mixed", 3, flexible_commit("mixed", "orders", 0, 4)),
        # and one where a v3 commit is the latest
        at("mixed", 4, flexible_commit("mixed", "orders", 1, 8)),
        at("mixed", 5, commit("mixed", "orders", 1, 9)),
    ]
    write_records(tmp_path / "replay", rows)
    assert stream(tmp_path / "replay", database_url, tmp_path / "checkpoint") == 0
    assert dict(query(engine, "SELECT name, commits_total FROM groups")) == {"v4": 4, "mixed": 6}
    offsets = query(engine, "SELECT group_name, partition, committed_offset FROM committed_offsets")
    assert sorted(offsets) == [("mixed", 0, 4), ("mixed", 1, 9), ("v4", 0, 15), ("v4", 1, 7)]
    history = query(
        engine, "SELECT group_name, sum(commits) FROM offset_history_entries GROUP BY 1"
    )
    assert sorted(history) == [("mixed", 6), ("v4", 4)]

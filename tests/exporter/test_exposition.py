"""The exporter's metrics from a real history store, parsed back with prometheus-client's
own parser: every value is one the store's rows imply."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, text

from services.exporter.app import Exporter, ExporterConfig
from services.exporter.catalogue import BY_NAME, METRICS
from services.exporter.exposition import ExporterStats, Options, render
from services.exporter.lag import LagResult
from services.exporter.snapshot import only_groups, read_snapshot
from services.groupfilter import KEEP_ALL, GroupFilter
from services.store.batch import (
    CAUSES,
    BatchHealth,
    Cause,
    DecodeFailure,
    GroupEvent,
    OffsetCommit,
    PipelineReport,
    RebalanceCost,
    primary_cause,
)
from services.store.repository import HistoryStore
from tests.fixtures.batches import SOURCE, batch, churn, generation, member

NOW = datetime.now(UTC).replace(microsecond=0)


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


def commit(group: str, partition: int, offset: int | None, source_offset: int, commits: int = 1):
    return OffsetCommit(
        group=group,
        topic="orders",
        partition=partition,
        offset=offset,
        source_partition=7,
        source_offset=source_offset,
        commit_time=ago(1),
        commits=commits,
    )


SESSION = Cause("session_timeout", "a-1 stopped committing 45 s before")
RESTART = Cause("restart", "a-2 replaced a-1")
POLL = Cause("poll_timeout", "may have exceeded max.poll.interval.ms", possible=True)
SCALE_IN = Cause("scale_in", "may have left", possible=True)
# crashy's six rebalances, and the primary cause each must count under.
CRASH_CAUSES = [
    (SESSION, RESTART),  # restart: the first settled one in CAUSES order
    (RESTART,),  # restart
    (POLL, SCALE_IN),  # only possible causes: unknown
    (),  # none: unknown
    (POLL, RESTART),  # restart (a possible cause never counts)
    (Cause("a_cause_from_the_future", "not in CAUSES"), SESSION),  # session_timeout
]


@pytest.fixture
def seeded(store_engine: Engine) -> Engine:
    store = HistoryStore(store_engine)
    two = [member("a-1", {"orders": [0, 1]}), member("b-1", {"orders": [2, 3]})]
    swapped = [member("a-1", {"orders": [0, 2]}), member("b-1", {"orders": [1, 3]})]
    crash = [
        generation(
            g,
            100 + g,
            two,
            group="crashy",
            time=ago(8 - g),
            churn=churn(g - 1, 99 + g, moved=4, baseline=0, minimum=0) if g > 1 else None,
        )
        for g in range(1, 8)
    ]  # seven generations within 7 minutes: six rebalances
    crash = [replace(g, causes=CRASH_CAUSES[i - 1]) if i else g for i, g in enumerate(crash)]
    # A KIP-848 group forming, then losing members: six epochs within two minutes, none
    # taking partitions from a running member.
    forming = [
        generation(
            g,
            200 + g,
            two,
            group="forming",
            time=ago(3 - g / 3),
            assignor="uniform",
            churn=churn(g - 1, 199 + g, moved=2, disruptive=False) if g > 1 else None,
        )
        for g in range(1, 7)
    ]
    store.write_batch(
        batch(
            1,
            time=ago(30),
            generations=[
                generation(1, 10, two, time=ago(60)),
                generation(
                    2, 11, swapped, time=ago(50), churn=churn(1, 10, moved=2, baseline=1, minimum=1)
                ),
                generation(
                    3, 12, two, time=ago(40), churn=churn(2, 11, moved=2, baseline=2, minimum=1)
                ),
                generation(1, 20, [], group="idle", time=ago(90)),
                *crash,
                *forming,
            ],
            offsets=[
                commit("billing", 0, 40, 13, commits=5),
                commit("billing", 1, 50, 14, commits=2),
                commit("gone", 0, None, 15),
            ],
            group_events=[GroupEvent("gone", ago(5), 7, 16, type="classic", deleted=True)],
            decode_failures=[
                DecodeFailure(
                    7, 17, "value: truncated at byte 12", b"k", b"v", category="value: truncated"
                ),
                DecodeFailure(
                    7, 18, "value: truncated at byte 99", b"k", b"v", category="value: truncated"
                ),
                DecodeFailure(
                    7, 19, "unknown record type 99", b"k", None, category="unknown record type"
                ),
            ],
            health=BatchHealth(records=120, seconds=0.75),
            # billing's last rebalance: two partitions resumed, the longest after 7.5 s;
            # crashy's last: its moved partitions have not committed again yet.
            costs=[
                RebalanceCost("billing", 35, 11, 2, 0, timedelta(seconds=99), None),
                RebalanceCost("billing", 35, 12, 2, 0, timedelta(seconds=7.5), None),
                RebalanceCost("crashy", 35, 107, 0, 4),
            ],
        )
    )
    # A replay of the same commits counts nothing twice; a new batch adds.
    store.write_batch(batch(2, time=ago(20), offsets=[commit("billing", 0, 40, 13, commits=5)]))
    store.write_batch(
        batch(
            3,
            time=ago(10),
            offsets=[commit("billing", 0, 45, 30, commits=3)],
            health=BatchHealth(records=3, seconds=0.25),
        )
    )
    store.report_status(PipelineReport(SOURCE, ago(0.5), True, 0, 1500.0, 9000.0))
    return store_engine


def scrape(
    engine: Engine, per_partition: bool = False, lag: bool = False, groups: GroupFilter = KEEP_ALL
) -> dict:
    snapshot = only_groups(read_snapshot(engine, 600, NOW), groups)
    result = None
    if lag:
        n = len(snapshot.offsets)
        result = LagResult(np.full(n, 10.0), np.arange(n, dtype=float) + 1.5)
    text, count = render(snapshot, result, ExporterStats(), Options(per_partition, 5))
    samples = {}
    for family in text_string_to_metric_families(text.decode()):
        assert family.name.removesuffix("_total") in {
            m.full_name.removesuffix("_total") for m in METRICS
        }
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    assert samples[("groupscope_exporter_series", ())] == count == len(samples)
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    """The sample of `name` with `labels`, of the `default` cluster unless one is given."""
    labels = {"cluster": "default", **labels}
    return samples[("groupscope_" + name, tuple(sorted(labels.items())))]


def test_the_storm_window_ends_at_the_exporters_clock(seeded: Engine) -> None:
    """Counted against the `now` given, not the database's clock: 20 minutes on, the
    crash loop's six rebalances (1 to 6 minutes before NOW) have left a 10-minute window."""
    later = read_snapshot(seeded, 600, NOW + timedelta(minutes=20))
    assert later.rebalances[("default", "crashy")].in_window == 0
    assert read_snapshot(seeded, 600, NOW).rebalances[("default", "crashy")].in_window == 6


def test_group_state_generation_and_members(seeded: Engine) -> None:
    s = scrape(seeded)
    info = {k[1]: v for k, v in s.items() if k[0] == "groupscope_group_info"}
    states = {dict(labels)["group"]: dict(labels)["state"] for labels in info}
    assert states == {
        "billing": "stable",
        "crashy": "stable",
        "forming": "stable",
        "idle": "empty",
        "gone": "dead",
    }
    billing = next(dict(labels) for labels in info if dict(labels)["group"] == "billing")
    assert billing == {
        "cluster": "default",
        "group": "billing",
        "type": "classic",
        "protocol": "consumer",
        "assignor": "range",
        "state": "stable",
    }
    assert value(s, "group_generation", group="billing") == 3
    assert value(s, "group_members", group="billing") == 2
    assert value(s, "group_assigned_partitions", group="billing") == 4
    assert value(s, "group_members", group="idle") == 0
    assert value(s, "group_state_seconds", group="billing") == pytest.approx(40 * 60, abs=5)


def test_rebalances_moves_churn_and_storm(seeded: Engine) -> None:
    s = scrape(seeded)
    assert value(s, "group_rebalances_total", group="billing", cause="unknown") == 2
    assert value(s, "group_partition_moves_total", group="billing", kind="actual") == 4
    assert value(s, "group_partition_moves_total", group="billing", kind="baseline") == 3
    assert value(s, "group_partition_moves_total", group="billing", kind="minimum") == 2
    assert value(s, "group_last_churn_ratio", group="billing") == 0.5  # 2 of 4 moved
    assert value(s, "group_last_excess_moves", group="billing") == 0
    assert value(s, "group_last_excess_moves", group="crashy") == 4
    assert value(s, "group_last_rebalance_commit_gap_seconds", group="billing") == 7.5
    gap = "groupscope_group_last_rebalance_commit_gap_seconds"
    assert (gap, (("cluster", "default"), ("group", "crashy"))) not in s
    # billing's rebalances are 40-50 minutes old: outside the 10-minute window
    assert value(s, "group_rebalances_in_storm_window", group="billing") == 0
    assert value(s, "group_storm", group="billing") == 0
    assert value(s, "group_rebalances_in_storm_window", group="crashy") == 6
    assert value(s, "group_storm", group="crashy") == 1
    assert value(s, "group_disruptive_rebalances_total", group="crashy") == 6
    # Five rebalances within the window, none disruptive: recorded, but no storm.
    assert value(s, "group_rebalances_total", group="forming", cause="unknown") == 5
    assert value(s, "group_disruptive_rebalances_total", group="forming") == 0
    assert value(s, "group_rebalances_in_storm_window", group="forming") == 0
    assert value(s, "group_storm", group="forming") == 0
    assert value(s, "group_last_rebalance_timestamp_seconds", group="crashy") == (
        ago(1).timestamp()
    )


def test_rebalances_count_once_under_their_primary_cause(seeded: Engine) -> None:
    """One sample per cause seen, each rebalance under its first settled cause (NULL
    causes, stored before revision 0006, as unknown), and the samples sum to the
    group's rebalances."""
    with seeded.begin() as conn:  # billing's first rebalance, as stored before 0006
        conn.execute(text("UPDATE rebalances SET causes = NULL WHERE group_name = 'billing'"))
        conn.execute(
            text(
                'UPDATE rebalances SET causes = \'[{"cause": "scale_out", '
                '"explanation": "app-3 joined", "possible": false}]\' '
                "WHERE group_name = 'billing' AND to_generation = 3"
            )
        )
    s = scrape(seeded)
    by_cause = {
        (dict(labels)["group"], dict(labels)["cause"]): v
        for (name, labels), v in s.items()
        if name == "groupscope_group_rebalances_total"
    }
    assert {k: v for k, v in by_cause.items() if k[0] == "crashy"} == {
        ("crashy", "session_timeout"): 1,
        ("crashy", "restart"): 3,
        ("crashy", "unknown"): 2,
    }
    expected = {c: 0 for c in CAUSES}
    for causes in CRASH_CAUSES:
        expected[primary_cause(causes)] += 1
    assert {c: n for c, n in expected.items() if n} == {
        c: n for (g, c), n in by_cause.items() if g == "crashy"
    }
    assert by_cause[("billing", "unknown")] == 1
    assert by_cause[("billing", "scale_out")] == 1
    assert by_cause[("forming", "unknown")] == 5  # stored with no causes
    assert by_cause[("idle", "unknown")] == 0  # never rebalanced: one series, at 0
    assert {c for _, c in by_cause} <= set(CAUSES)
    snapshot = read_snapshot(seeded, 600, NOW)
    for group in {g for g, _ in by_cause}:
        total = sum(v for (g, _), v in by_cause.items() if g == group)
        rebalances = snapshot.rebalances.get(("default", group))
        assert total == (rebalances.rebalances if rebalances else 0), group


def test_commits_count_superseded_ones_once(seeded: Engine) -> None:
    s = scrape(seeded)
    assert value(s, "group_commits_total", group="billing") == 5 + 2 + 3
    assert value(s, "committed_offset_sum", group="billing", topic="orders") == 45 + 50
    assert value(s, "group_last_commit_timestamp_seconds", group="billing") == (ago(1).timestamp())
    gone = (("cluster", "default"), ("group", "gone"), ("topic", "orders"))
    assert ("groupscope_committed_offset_sum", gone) not in s


def test_failures_by_category_and_pipeline_health(seeded: Engine) -> None:
    s = scrape(seeded)
    assert value(s, "decode_failures_total", reason="value: truncated") == 2
    assert value(s, "decode_failures_total", reason="unknown record type") == 1
    assert value(s, "pipeline_batches_total", cluster="default") == 2
    assert value(s, "pipeline_records_total", cluster="default") == 123
    assert value(s, "pipeline_batch_duration_seconds", cluster="default") == 0.25
    assert value(s, "pipeline_caught_up", cluster="default") == 1
    assert value(s, "pipeline_records_behind", cluster="default") == 0
    assert value(s, "pipeline_input_records_per_second", cluster="default") == 1500
    assert value(s, "pipeline_processed_records_per_second", cluster="default") == 9000
    assert value(s, "pipeline_status_age_seconds", cluster="default") == pytest.approx(30, abs=5)


def test_lag_sums_per_topic_and_partitions_only_behind_the_flag(seeded: Engine) -> None:
    s = scrape(seeded, lag=True)
    assert value(s, "lag_sum", group="billing", topic="orders") == 20
    assert value(s, "lag_seconds", group="billing", topic="orders") == 2.5  # the larger one
    assert not any(k[0].startswith("groupscope_partition_") for k in s)
    s = scrape(seeded, per_partition=True, lag=True)
    assert value(s, "partition_lag", group="billing", topic="orders", partition="1") == 10
    assert (
        value(s, "partition_committed_offset", group="billing", topic="orders", partition="0") == 45
    )


def group_of(key: tuple[str, tuple]) -> str | None:
    return dict(key[1]).get("group")


def test_a_group_filter_drops_every_series_of_its_groups_and_only_those(seeded: Engine) -> None:
    full = scrape(seeded, per_partition=True, lag=True)
    assert {group_of(k) for k in full} == {"billing", "crashy", "forming", "gone", "idle", None}
    for groups, gone in [
        (GroupFilter.of(exclude=["^crash", "^idle$"]), {"crashy", "idle"}),
        (
            GroupFilter.of(include=["^bill", "^for"], exclude=["^forming$"]),
            {"crashy", "forming", "gone", "idle"},
        ),
    ]:
        kept = scrape(seeded, per_partition=True, lag=True, groups=groups)
        series = ("groupscope_exporter_series", ())
        expected = {k for k in full if group_of(k) not in gone} - {series}
        assert kept.keys() - {series} == expected
        # The kept groups' offsets keep their own values through the renumbering.
        for key in expected:
            if key[0].startswith(("groupscope_partition_committed", "groupscope_committed")):
                assert kept[key] == full[key], key
    # The exporter applies its configured filter on every refresh; pipeline health and
    # decode failures are no group's and stay.
    app = Exporter(ExporterConfig(groups=GroupFilter.of(exclude=["^crash"])), seeded)
    assert app.refresh()
    published = {
        (s.name, tuple(sorted(s.labels.items())))
        for family in text_string_to_metric_families(app.exposition.plain.decode())
        for s in family.samples
    }
    assert {group_of(k) for k in published} == {"billing", "forming", "gone", "idle", None}
    names = {k[0] for k in published}
    assert {"groupscope_pipeline_caught_up", "groupscope_decode_failures_total"} <= names


def test_no_member_ids_in_labels(seeded: Engine) -> None:
    s = scrape(seeded, per_partition=True, lag=True)
    label_names = {name for _, labels in s for name, _ in labels}
    assert label_names <= {
        "cluster",
        "group",
        "topic",
        "partition",
        "kind",
        "reason",
        "source",
        "type",
        "protocol",
        "assignor",
        "state",
        "cause",
    }
    assert not any("a-1" in v for _, labels in s for _, v in labels)


def test_label_values_are_escaped() -> None:
    from services.exporter.exposition import labels

    text = "odd" + labels(group='a"b\\c\nd') + " 1\n"
    [family] = text_string_to_metric_families(text)
    assert family.samples[0].labels == {"group": 'a"b\\c\nd'}


def test_catalogue_names_are_unique_and_prefixed() -> None:
    assert len(BY_NAME) == len(METRICS)
    assert all(m.full_name.startswith("groupscope_") for m in METRICS)
    assert all(m.name.endswith("_total") == (m.kind == "counter") for m in METRICS)

"""Extreme but well-formed flag values, through the real command line: each gets one line
on stderr and exit 2, before any work starts; never a traceback, an overflow deep in
Spark or PostgreSQL, or a simulation that would not end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HUGE = "99999999999"

CASES = [
    (["postmortem", "g", "--since", f"{HUGE}d"], "--since: too long"),
    (["postmortem", "g", "--until", f"{HUGE}w"], "--until: too long"),
    (["owner", "orders", HUGE, "--at", "now"], "PARTITION must be a whole number from 0"),
    (["owner", "orders", "²", "--at", "now"], "PARTITION must be a whole number"),
    (["owner", "orders", "1", "--at", "9" * 5000 + "s"], "--at: too long"),
    (["storms", "--min-rebalances", HUGE], "--min-rebalances must be a whole number"),
    (["storms", "--min-rebalances", "9" * 5000], "--min-rebalances must be a whole number"),
    (["storms", "--window", f"{HUGE}d"], "--window: too long"),
    (["storms", "--window", "0"], "--window: not a duration"),
    (["stream", "--max-files-per-trigger", "-1"], "--max-files-per-trigger must be positive"),
    (["stream", "--max-files-per-trigger", HUGE], "--max-files-per-trigger must be at most"),
    (["stream", "--max-records-per-trigger", "9" * 20], "--max-records-per-trigger must be at"),
    (["stream", "--offsets-partitions", HUGE], "--offsets-partitions must be at most"),
    (["stream", "--trigger", f"{HUGE}d"], "--trigger: duration '99999999999d' is too long"),
    (["exporter", "--interval", f"{HUGE}d"], "--interval: duration"),
    (["exporter", "--storm-window", f"{HUGE}d"], "--storm-window: duration"),
    (["exporter", "--lag-history", "9" * 20], "--lag-history must be 2-10,000"),
    (["exporter", "--storm-rebalances", HUGE], "--storm-rebalances must be at most"),
    (["exporter", "--max-connections", HUGE], "--max-connections must be 1-10,000"),
    (["simulate", "steady", "--groups", HUGE, "--out", "OUT"], "--groups must be at most"),
    (["simulate", "steady", "--partitions", HUGE, "--out", "OUT"], "--partitions must be at"),
    (["simulate", "steady", "--duration", f"{HUGE}d", "--out", "OUT"], "is too long"),
    (["simulate", "steady", "--set", f"members={HUGE}", "--out", "OUT"], "members must be at"),
    (["simulate", "steady", "--set", "rate=nan", "--out", "OUT"], "rate must be a finite"),
    (["workload", "--members", HUGE], "--members must be at most"),
    (["workload", "--rate", "nan"], "--rate must be positive"),
    (["workload", "--rate", "1e400"], "--rate must be at most"),
    (["workload", "--step-interval", f"{HUGE}d"], "--step-interval: duration"),
    (["workload", "--session-timeout", "2h"], "--session-timeout must be at most 1h"),
    (["workload", "--replication-factor", HUGE], "--replication-factor must be at most"),
    (["stream", "--offsets-partitions", "lots"], "argument --offsets-partitions: invalid"),
]


def groupscope(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "GROUPSCOPE_DATA_DIR": str(tmp_path / "data"), **env}
    environment.pop("GROUPSCOPE_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=60,
    )


def complete(args: list[str], tmp_path: Path) -> list[str]:
    """The arguments a command needs besides the one under test."""
    replay = tmp_path / "replay"
    (replay / "records").mkdir(parents=True, exist_ok=True)
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    if args[0] == "stream":
        return [*args, "--source", "replay", str(replay), "--once"]
    if args[0] == "workload":
        return [*args, "--bootstrap-servers", "127.0.0.1:1"]
    return args


@pytest.mark.parametrize(("args", "reason"), CASES, ids=lambda v: " ".join(v)[:60])
def test_extreme_values_get_one_line_and_exit_2(
    args: list[str], reason: str, tmp_path: Path
) -> None:
    done = groupscope(complete(args, tmp_path), tmp_path)
    err = done.stderr.strip()
    assert done.returncode == 2, err[-2000:]
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith(f"groupscope {args[0]}: ")
    assert reason in err
    assert not (tmp_path / "data").exists()  # refused before any database was started


@pytest.mark.parametrize(
    ("args", "variable"),
    [
        (["stream", "--once"], "GROUPSCOPE_OFFSETS_PARTITIONS"),
        (["partition-for", "billing"], "GROUPSCOPE_OFFSETS_PARTITIONS"),
        (["simulate", "steady", "--out", "OUT"], "GROUPSCOPE_OFFSETS_PARTITIONS"),
        (["workload"], "GROUPSCOPE_WORKLOAD_MEMBERS"),
        (["stream", "--once"], "GROUPSCOPE_MAX_RECORDS_PER_TRIGGER"),
        (["exporter"], "GROUPSCOPE_EXPORTER_PORT"),
        (["exporter"], "GROUPSCOPE_LAG_HISTORY"),
        (["exporter"], "GROUPSCOPE_STORM_REBALANCES"),
    ],
)
def test_a_bad_number_in_the_environment_is_one_line(
    args: list[str], variable: str, tmp_path: Path
) -> None:
    """A default read from a GROUPSCOPE_* variable is checked like the flag itself, for
    that command only (it used to fail every command, `--help` too, with a traceback)."""
    done = groupscope(complete(args, tmp_path), tmp_path, **{variable: "many"})
    err = done.stderr.strip()
    assert done.returncode == 2, err[-2000:]
    assert "\n" not in err and "invalid" in err and "'many'" in err
    other = groupscope(["storms", "--window", "0"], tmp_path, **{variable: "many"})
    assert other.returncode == 2 and "--window: not a duration" in other.stderr

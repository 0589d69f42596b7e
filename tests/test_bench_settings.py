"""The benchmarks' settings (benchmarks/settings.py): read once, checked before a run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.settings import BenchSettingsError, settings


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch):
    for name in ("RECORDS", "CASES", "COMMIT_SECONDS", "ASSIGNOR_SHAPE", "SIZING_SCALE"):
        monkeypatch.delenv(f"GROUPSCOPE_BENCH_{name}", raising=False)
    settings.cache_clear()
    yield
    settings.cache_clear()


def test_defaults_and_values(monkeypatch: pytest.MonkeyPatch) -> None:
    default = settings()
    assert default.stream_records == 20_000_000
    assert default.stream_cases == ("commits", "rebalances", "restart", "broker")
    assert default.commit_seconds is None and default.assignor_shape == (500, 2000)
    settings.cache_clear()
    monkeypatch.setenv("GROUPSCOPE_BENCH_CASES", "sources, backfill")
    monkeypatch.setenv("GROUPSCOPE_BENCH_COMMIT_SECONDS", "5")
    monkeypatch.setenv("GROUPSCOPE_BENCH_ASSIGNOR_SHAPE", "100x10000")
    chosen = settings()
    assert chosen.stream_cases == ("sources", "backfill")
    assert (chosen.commit_seconds, chosen.assignor_shape) == (5.0, (100, 10000))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RECORDS", "2e6"),
        ("RECORDS", "0"),
        ("CASES", "commits,typo"),
        ("COMMIT_SECONDS", "-1"),
        ("ASSIGNOR_SHAPE", "500"),
        ("SIZING_SCALE", "nan"),
    ],
)
def test_a_bad_value_names_its_variable(monkeypatch: pytest.MonkeyPatch, name, value) -> None:
    monkeypatch.setenv(f"GROUPSCOPE_BENCH_{name}", value)
    with pytest.raises(BenchSettingsError, match=f"^GROUPSCOPE_BENCH_{name}="):
        settings()


def test_a_bad_value_ends_a_run_in_one_line_before_it_starts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "codec"],
        env={"GROUPSCOPE_BENCH_RECORDS": "lots", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip() == "GROUPSCOPE_BENCH_RECORDS='lots': expected a positive whole number"
    )
    assert "== bench_codec" not in done.stdout

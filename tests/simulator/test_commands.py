"""`groupscope simulate`: help, outputs, and one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest

from services.cli import main
from services.simulator.scenarios import SCENARIOS


def test_help_lists_every_scenario(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = capsys.readouterr().out
    for name in SCENARIOS:
        assert name in text
    assert "--bootstrap-servers" in text and "examples:" in text


def test_simulate_writes_a_replay_directory(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "simulate",
            "steady,kip848",
            "--duration",
            "2m",
            "--out",
            str(out),
            "--format",
            "jsonl",
            "--seed",
            "3",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert "records from 2 groups" in captured.out
    assert sorted(p.name for p in (out / "truth").iterdir()) == [
        "aborted.jsonl",
        "commits.jsonl",
        "events.jsonl",
        "gaps.jsonl",
        "generations.jsonl",
        "rebalances.jsonl",
        "summary.json",
    ]
    summary = json.loads((out / "truth" / "summary.json").read_text())
    assert summary["seed"] == 3 and summary["end"] - summary["start"] == 120_000
    assert list((out / "records").glob("part-00000.jsonl"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["simulate", "nope", "--out", "X"], "unknown scenario nope"),
        (["simulate", "steady"], "give an output"),
        (["simulate", "steady", "--out", "X", "--duration", "soon"], "bad duration"),
        (["simulate", "steady", "--out", "X", "--set", "members"], "--set needs KEY=VALUE"),
        (["simulate", "steady", "--out", "X", "--set", "colour=red"], "unknown --set key(s)"),
        (["simulate", "steady", "--out", "X", "--set", "members=-1"], "members must be at least"),
        (["simulate", "steady", "--out", "X", "--set", "aborted=2"], "aborted must be between"),
        (["simulate", "steady", "--out", "X", "--groups", "0"], "--groups must be at least 1"),
        (["simulate", "steady", "--topic", "t"], "--topic needs --bootstrap-servers"),
        (
            ["simulate", "kip848", "--out", "X", "--set", "assignor=range"],
            "assignor must be one of",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GROUPSCOPE_BOOTSTRAP_SERVERS", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "X").exists()


def test_an_existing_replay_is_not_overwritten(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["simulate", "steady", "--duration", "30s", "--out", out, "--quiet"]) == 0
    assert main(["simulate", "steady", "--duration", "30s", "--out", out, "--quiet"]) == 2
    assert "already holds a replay" in capsys.readouterr().err

"""`groupscope demo` on the bundled sample."""

from __future__ import annotations

from services.cli import main


def test_demo_summarises_the_bundled_sample(capsys) -> None:
    assert main(["demo", "--sample"]) == 0
    out = capsys.readouterr().out
    assert "Decoded 23 records, 1 failed." in out
    assert "payments: generation 2" in out
    assert "transactions-4, transactions-5" in out
    assert "MISMATCH" not in out
    assert "commit_timestamp at byte 16" in out


def test_demo_reports_a_wrong_partition_count(capsys) -> None:
    """Records sit in partition_for(group, 50); assuming 49 partitions must be flagged."""
    assert main(["demo", "--sample", "--partitions", "49"]) == 0
    assert "MISMATCH" in capsys.readouterr().out


def test_demo_rejects_an_unreadable_input(capsys, tmp_path) -> None:
    assert main(["demo", "--input", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err

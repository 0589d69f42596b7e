"""`groupscope demo`: the whole system on the simulator, end to end (shares the session's
Spark and an empty database of the test PostgreSQL)."""

from __future__ import annotations

from services.cli import main


def test_demo_finds_the_storm_and_serves_metrics(
    spark, database_url: str, tmp_path, capsys
) -> None:
    code = main(["demo", "--port", "0", "--workdir", str(tmp_path), "--database-url", database_url])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out, err = captured.out, captured.err
    for step in range(1, 6):
        assert f"[{step}/5" in err  # progress for every step
    storms = out.split("Rebalance storms")[1].split("Churn of every rebalance")[0]
    assert "mixed-0-audit-crashloop" in storms
    assert "mixed-0-payments-cooperative" not in storms  # the healthy group
    churn = out.split("Churn of every rebalance")[1].split("Per group")[0]
    assert "(sticky)" in churn and "(uniform)" in churn
    assert "Postmortem timeline of mixed-0-audit-crashloop" in out
    assert 'groupscope_group_storm{group="mixed-0-audit-crashloop"} 1' in out
    assert 'groupscope_group_storm{group="mixed-0-payments-cooperative"} 0' in out
    assert "groupscope_pipeline_caught_up{" in out and "/metrics" in out

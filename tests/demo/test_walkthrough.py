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
    # The KIP-848 group's epochs (formation, leaves, an epoch moving nothing) are
    # recorded, but too few disrupted running members to storm.
    assert "mixed-0-billing-kip848" not in storms
    assert "mixed-0-orders-range" in storms  # an eager rolling restart: every one stops all
    churn_rows = out.split("Churn of every rebalance")[1].split("disrupts: ")[0].splitlines()
    kip848 = [line.split()[-1] for line in churn_rows if line.startswith("mixed-0-billing-kip848")]
    assert "no" in kip848 and kip848.count("yes") < 5
    crash = [line.split()[-1] for line in churn_rows if line.startswith("mixed-0-audit-crashloop")]
    assert crash and set(crash) == {"yes"}
    churn = out.split("Churn of every rebalance")[1].split("Per group")[0]
    assert "(sticky)" in churn and "(uniform)" in churn
    assert "Postmortem timeline of mixed-0-audit-crashloop" in out
    assert 'groupscope_group_storm{cluster="default",group="mixed-0-audit-crashloop"} 1' in out
    assert 'groupscope_group_storm{cluster="default",group="mixed-0-payments-cooperative"} 0' in out
    assert 'groupscope_group_storm{cluster="default",group="mixed-0-billing-kip848"} 0' in out
    assert "groupscope_pipeline_caught_up{" in out and "/metrics" in out

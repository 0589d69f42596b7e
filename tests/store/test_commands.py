"""`groupscope db upgrade`, against an external URL and the embedded default."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.cli import main


def test_db_upgrade_migrates_then_reports_head(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "upgrade", "--database-url", empty_database_url]) == 0
    assert "upgraded from an empty database to" in capsys.readouterr().out
    assert main(["db", "upgrade", "--database-url", empty_database_url]) == 0
    assert "already at revision" in capsys.readouterr().out


def test_db_upgrade_reads_the_url_from_the_environment(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GROUPSCOPE_DATABASE_URL", empty_database_url)
    assert main(["db", "upgrade"]) == 0
    assert "upgraded from an empty database" in capsys.readouterr().out


def test_db_upgrade_defaults_to_an_embedded_server_reused_across_runs(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GROUPSCOPE_DATABASE_URL", raising=False)
    monkeypatch.setenv("GROUPSCOPE_DATA_DIR", str(data_dir))
    assert main(["db", "upgrade"]) == 0
    assert "upgraded from an empty database" in capsys.readouterr().out
    assert (data_dir / "pg" / "PG_VERSION").exists()
    # Stopped cleanly once the command is done ...
    assert not (data_dir / "pg" / "postmaster.pid").exists()
    # ... and the next run finds the same, already migrated, data.
    assert main(["db", "upgrade"]) == 0
    assert "already at revision" in capsys.readouterr().out


def test_db_upgrade_on_an_unreachable_server_exits_1_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://someone:hunter2@/groupscope?host={tmp_path}&port=1"
    assert main(["db", "upgrade", "--database-url", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("groupscope db: cannot reach PostgreSQL")
    assert "hunter2" not in err
    assert err.count("\n") == 1


def test_db_upgrade_rejects_a_url_that_is_not_postgresql(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["db", "upgrade", "--database-url", "mysql://localhost/x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groupscope db: --database-url: expected a PostgreSQL URL")
    assert err.count("\n") == 1


def test_db_psql_runs_sql_on_the_store(
    database_url: str, capfd: pytest.CaptureFixture[str]
) -> None:
    sql = "SELECT count(*) FROM pg_views WHERE viewname = 'group_timeline'"
    assert main(["db", "psql", "--database-url", database_url, "--", "-At", "-c", sql]) == 0
    assert capfd.readouterr().out == "1\n"


def test_db_psql_passes_on_the_psql_exit_status(
    database_url: str, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "psql", "--database-url", database_url, "--", "-c", "SELECT nope"]) == 1
    assert 'column "nope" does not exist' in capfd.readouterr().err


def test_two_handles_on_one_embedded_server_share_it(data_dir: Path) -> None:
    import psycopg

    from services.store.embedded import EmbeddedPostgres

    first, second = EmbeddedPostgres(data_dir / "pg"), EmbeddedPostgres(data_dir / "pg")
    first.start()
    uri = second.start()
    first.stop()
    with psycopg.connect(uri) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    second.stop()
    assert not (data_dir / "pg" / "postmaster.pid").exists()

"""`postmortem`, `owner` and `storms` only read: on a data dir without a database they
say so in one line and exit 1, and create nothing (initdb would write ~46 MB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.cli import main


@pytest.mark.parametrize(
    "command",
    [
        ["postmortem", "billing"],
        ["owner", "orders", "3", "--at", "1h"],
        ["storms", "--json"],
    ],
)
def test_read_only_commands_need_an_existing_database(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    data_dir = tmp_path / "data"
    monkeypatch.setenv("GROUPSCOPE_DATA_DIR", str(data_dir))
    monkeypatch.delenv("GROUPSCOPE_DATABASE_URL", raising=False)
    assert main(command) == 1
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err == (
        f"groupscope {command[0]}: no history store in {data_dir / 'pg'}: run 'groupscope "
        "stream' to record one, or give --database-url"
    )
    assert captured.out == ""
    assert not data_dir.exists()

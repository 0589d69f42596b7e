"""`services.settings.env`: the one reader of `GROUPSCOPE_*` variables in services/."""

from __future__ import annotations

import pytest

from services.settings import env


def test_env_reads_the_variable_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROUPSCOPE_TOPIC", raising=False)
    assert env("GROUPSCOPE_TOPIC", "t") == "t"
    assert env("GROUPSCOPE_TOPIC") is None
    monkeypatch.setenv("GROUPSCOPE_TOPIC", "")
    assert env("GROUPSCOPE_TOPIC", "t") == ""  # empty is a value, as os.environ.get has it
    monkeypatch.setenv("GROUPSCOPE_TOPIC", "orders")
    assert env("GROUPSCOPE_TOPIC", "t") == "orders"


def test_env_reads_only_groupscope_variables() -> None:
    with pytest.raises(ValueError, match="HOME: not a GROUPSCOPE_"):
        env("HOME")

"""`--groups-include` and `--groups-exclude`: Burrow's and KMinion's rules (search, exclude
wins), the flags and their variables, and bad input as one line."""

from __future__ import annotations

import argparse

import pytest

from services.cli import UsageError, main
from services.groupfilter import GroupFilter, add_group_filter_arguments, group_filter

FLEET = [
    "payments",
    "payments-dlq",
    "old-payments",
    "orders-test",
    "console-consumer-51234",
    "quick-start",
    "Payments-EU",
]


def kept(include: list[str], exclude: list[str]) -> list[str]:
    groups = GroupFilter.of(include, exclude)
    return [g for g in FLEET if groups.keeps(g)]


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        ([], [], FLEET),
        # Anywhere in the name, as Go's regexp.MatchString (Burrow, KMinion's /.../).
        (["payments"], [], ["payments", "payments-dlq", "old-payments"]),
        (["^payments"], [], ["payments", "payments-dlq"]),
        (["^payments$"], [], ["payments"]),
        # Several includes: any of them; case-sensitive unless asked.
        (["^orders", "dlq$"], [], ["payments-dlq", "orders-test"]),
        (["(?i)^payments"], [], ["payments", "payments-dlq", "Payments-EU"]),
        # Exclude wins over include.
        (["payments"], ["-dlq$"], ["payments", "old-payments"]),
        (["^payments$"], ["pay"], []),
        # Burrow's default group-denylist, unchanged.
        (
            [],
            ["^(console-consumer-|python-kafka-consumer-|quick-).*$"],
            ["payments", "payments-dlq", "old-payments", "orders-test", "Payments-EU"],
        ),
        # A comma inside an expression is part of it (no list splitting).
        (["^[a-z]{1,8}$"], [], ["payments"]),
    ],
)
def test_the_rules(include: list[str], exclude: list[str], expected: list[str]) -> None:
    assert kept(include, exclude) == expected


def test_dropped_names_the_groups_dropped_and_never_a_record_without_one() -> None:
    groups = GroupFilter.of(exclude=["-test$"])
    assert groups.dropped(["orders-test", None, "payments", "orders-test"]) == [
        "orders-test",
        "orders-test",
    ]
    assert not GroupFilter().active and GroupFilter().dropped(["x", None]) == []
    assert groups.describe() == "exclude '-test$'"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_group_filter_arguments(
        parser,
        ("GROUPSCOPE_EXPORTER_GROUPS_INCLUDE", "publish"),
        ("GROUPSCOPE_EXPORTER_GROUPS_EXCLUDE", "do not publish"),
    )
    return parser.parse_args(argv)


def patterns(groups: GroupFilter) -> tuple[list[str], list[str]]:
    return [p.pattern for p in groups.include], [p.pattern for p in groups.exclude]


def test_flags_repeat_and_replace_their_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_EXPORTER_GROUPS_INCLUDE", "^from-env")
    monkeypatch.setenv("GROUPSCOPE_EXPORTER_GROUPS_EXCLUDE", "")  # empty: unset
    assert patterns(group_filter(parse([]))) == (["^from-env"], [])
    given = parse(["--groups-include", "^a", "--groups-include", "b,c", "--groups-exclude", "x"])
    assert patterns(group_filter(given)) == (["^a", "b,c"], ["x"])


@pytest.mark.parametrize(
    ("argv", "variable", "reason"),
    [
        (["--groups-include", "("], None, "--groups-include: '(' is not a regular expression"),
        (["--groups-exclude", ""], None, "--groups-exclude: an empty regular expression"),
        # Go's RE2 \pL is no Python syntax: refused, not read as something else.
        ([], "[bad", "GROUPSCOPE_EXPORTER_GROUPS_EXCLUDE: '[bad' is not a regular expression"),
        (["--groups-exclude", r"\pL"], None, r"'\\pL' is not a regular expression"),
    ],
)
def test_a_bad_expression_is_one_line_naming_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], variable: str | None, reason: str
) -> None:
    if variable is not None:
        monkeypatch.setenv("GROUPSCOPE_EXPORTER_GROUPS_EXCLUDE", variable)
    with pytest.raises(UsageError) as error:
        group_filter(parse(argv))
    assert reason in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("command", ["stream", "exporter"])
def test_both_commands_refuse_a_bad_expression_with_exit_2(tmp_path, capsys, command: str) -> None:
    (tmp_path / "records").mkdir()
    source = ["--source", "replay", str(tmp_path)] if command == "stream" else []
    assert main([command, *source, "--groups-exclude", "a)"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"groupscope {command}: --groups-exclude: 'a)' is not a regular")
    assert "\n" not in err

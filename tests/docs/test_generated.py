"""docs/metrics.md and docs/configuration.md are what the code generates (`make docs`),
and every GROUPSCOPE_* variable the code reads is documented there."""

from __future__ import annotations

import re

from services.docgen import environment, flags, pages


def test_the_committed_pages_equal_what_the_code_generates() -> None:
    assert pages.stale() == [], "run 'make docs' and commit docs/"


def test_every_variable_in_the_code_is_documented_and_none_other() -> None:
    assert pages.undocumented() == []


def test_a_flag_reads_the_variable_its_help_names() -> None:
    commands = flags.commands(environment.mentioned())
    named = [
        (c.name, f.options[0], var)
        for c in commands
        for f in c.flags
        for var in re.findall(r"\benv (GROUPSCOPE_[A-Z0-9_]+)", f.help)
        if f.options and var not in f.variables
    ]
    assert named == []


def test_variables_are_found_by_what_the_flag_does_not_by_its_help() -> None:
    by_flag = {
        (c.name, o): f.variables
        for c in flags.commands(environment.mentioned())
        for f in c.flags
        for o in f.options
    }
    # Neither help text names its variable; both defaults read one.
    assert by_flag[("exporter", "--interval")] == ("GROUPSCOPE_EXPORTER_INTERVAL",)
    assert by_flag[("exporter", "--per-partition")] == ("GROUPSCOPE_EXPORTER_PER_PARTITION",)
    assert by_flag[("stream", "--reset-checkpoint")] == ()


def test_the_pages_list_every_metric_and_every_flag() -> None:
    from services.exporter.catalogue import METRICS

    metrics = (environment.ROOT / "docs" / "metrics.md").read_text()
    assert [m.full_name for m in METRICS if f"| `{m.full_name}` |" not in metrics] == []
    configuration = (environment.ROOT / "docs" / "configuration.md").read_text()
    for command in flags.commands(environment.mentioned()):
        assert f"## `groupscope {command.name}`" in configuration
        for flag in command.flags:
            for option in flag.options:
                assert f"`{option}" in configuration

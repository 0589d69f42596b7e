"""The schedule's rotation: which step goes to which group."""

from __future__ import annotations

import itertools

import pytest

from services.workload.config import DEFAULT_STEPS, STEP_KINDS, parse_steps
from services.workload.schedule import Step, steps


@pytest.mark.parametrize("groups", [["a"], ["a", "b"], ["a", "b", "c"]])
def test_every_group_meets_every_kind_of_step_within_a_few_cycles(groups):
    schedule = itertools.islice(steps(groups, DEFAULT_STEPS), len(DEFAULT_STEPS) * len(groups))
    seen = {(step.kind, step.group) for step in schedule}
    assert seen == {(kind, group) for kind in STEP_KINDS for group in groups}


def test_step_i_goes_to_group_i_mod_the_number_of_groups_across_cycles():
    schedule = list(itertools.islice(steps(["a", "b"], ("scale-up", "crash-loop", "restart")), 6))
    assert schedule == [
        Step("scale-up", "a"),
        Step("crash-loop", "b"),
        Step("restart", "a"),
        Step("scale-up", "b"),
        Step("crash-loop", "a"),
        Step("restart", "b"),
    ]


def test_parse_steps_accepts_known_kinds_and_names_the_first_unknown():
    assert parse_steps(" crash-loop , scale-up,") == ("crash-loop", "scale-up")
    with pytest.raises(ValueError, match="unknown step 'reboot'"):
        parse_steps("scale-up,reboot")
    with pytest.raises(ValueError, match="no steps given"):
        parse_steps(" , ")

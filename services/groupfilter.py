"""Which consumer groups a command keeps: `--groups-include` and `--groups-exclude`.

`groupscope stream` keeps (tracks and stores) only the groups its filter keeps;
`groupscope exporter` publishes only the groups its own filter keeps. The two are
separate on purpose: the store can keep every group's history while the exporter
publishes a few (docs/operations.md, "Fleets of groups").

The rules are Burrow's and KMinion's, which operators already write:
- a group is kept when it matches at least one include expression (every group when
  none is given) and no exclude expression: exclude wins, as KMinion's `ignoredGroups`
  over its `allowedGroups` and Burrow's `group-denylist` over its `group-allowlist`;
- an expression matches anywhere in the name (`re.search`), as Go's
  `regexp.MatchString` does for Burrow's lists and KMinion's `/.../` entries: anchor it
  (`^payments$`) to match the whole name. Burrow's own default denylist,
  `^(console-consumer-|python-kafka-consumer-|quick-).*$`, means the same here;
- Python's `re` syntax, case-sensitive (`(?i)` for not). Go's RE2 expressions read the
  same except `\\z` (write `\\Z`) and the Unicode classes `\\pL` (Python has none; refused).

Each flag is repeatable (a regular expression may hold a comma, so a list is never split
on one); a variable holds one expression (`a|b` for two). An empty variable counts as
unset; an empty flag is refused, since it would match every group.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.settings import env


@dataclass(frozen=True)
class GroupFilter:
    """Include and exclude expressions; `keeps(group)` says whether a group is kept."""

    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    # Decisions by name: a fleet repeats the same names in every batch and refresh.
    _decided: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude)

    def keeps(self, group: str) -> bool:
        if not self.active:
            return True
        decided = self._decided.get(group)
        if decided is None:
            decided = (not self.include or any(p.search(group) for p in self.include)) and not any(
                p.search(group) for p in self.exclude
            )
            if len(self._decided) >= MAX_DECISIONS:
                self._decided.clear()
            self._decided[group] = decided
        return decided

    def dropped(self, groups: Iterable[str | None]) -> list[str]:
        """The names in `groups` the filter drops (None, a record without a group, is
        never dropped)."""
        return [g for g in groups if g is not None and not self.keeps(g)]

    def describe(self) -> str:
        """The filter for a log line."""
        parts = []
        if self.include:
            parts.append("include " + ", ".join(repr(p.pattern) for p in self.include))
        if self.exclude:
            parts.append("exclude " + ", ".join(repr(p.pattern) for p in self.exclude))
        return "; ".join(parts) or "every group"

    @classmethod
    def of(cls, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> GroupFilter:
        """A filter of the given expressions; ValueError names a bad one."""
        return cls(tuple(map(_compile, include)), tuple(map(_compile, exclude)))


# About 200 bytes per decision: 1,000,000 names are about 200 MB before the cache starts
# again, past any fleet we know of.
MAX_DECISIONS = 1_000_000

KEEP_ALL = GroupFilter()


def _compile(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise ValueError("an empty regular expression matches every group")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None


class _FromVariable(list[str]):
    """A flag's default taken from its `GROUPSCOPE_*` variable (named in errors)."""

    def __init__(self, variable: str) -> None:
        value = env(variable)
        super().__init__([value] if value else [])
        self.variable = variable


class _Repeated(argparse.Action):
    """A repeatable flag whose first use replaces its variable's value."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest)
        given = [] if isinstance(current, _FromVariable) else list(current)
        setattr(namespace, self.dest, [*given, values])


def add_group_filter_arguments(
    parser: argparse.ArgumentParser, include: tuple[str, str], exclude: tuple[str, str]
) -> None:
    """--groups-include and --groups-exclude; `include` and `exclude` are each flag's
    variable (named in full, for `services.docgen`) and what the command does with the
    groups it matches."""
    for kind, (variable, rule) in (("include", include), ("exclude", exclude)):
        parser.add_argument(
            f"--groups-{kind}",
            action=_Repeated,
            default=_FromVariable(variable),
            metavar="REGEX",
            help=f"{rule}; a Python regular expression that may match anywhere in the "
            f"name (^...$ for the whole name), as in Burrow's group-allowlist and "
            f"group-denylist; repeatable (env {variable}, one expression)",
        )


def group_filter(args: argparse.Namespace) -> GroupFilter:
    """The filter of the parsed flags; UsageError (one line) for a bad expression."""
    from services.cli import UsageError

    lists: list[list[re.Pattern[str]]] = []
    for kind in ("include", "exclude"):
        given = getattr(args, f"groups_{kind}")
        where = given.variable if isinstance(given, _FromVariable) else f"--groups-{kind}"
        compiled = []
        for pattern in given:
            try:
                compiled.append(_compile(pattern))
            except ValueError as exc:
                raise UsageError(f"{where}: {exc}") from None
        lists.append(compiled)
    return GroupFilter(tuple(lists[0]), tuple(lists[1]))

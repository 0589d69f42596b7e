"""Named, parameterized, composable scenarios: each builds a list of `GroupSpec`s.

Names can be combined with commas (`steady,crash-loop`): the groups of each run side by
side in one log. `--groups N` runs N copies of each scenario's groups (suffixes -0, -1,
...). `--set key=value` tunes them; keys every scenario understands:

  members, partitions (per topic), assignor, static (group.instance.id), session_timeout,
  max_poll_interval, commit_interval (durations), rate (messages/s per partition),
  metadata (commit metadata string), transactional (share of commits in transactions),
  aborted (share of those aborted), delete_after (a duration: then the group is deleted)

and each scenario's own keys are listed in its help line.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from services.assignor import ASSIGNORS
from services.simulator.model import Action, GroupSpec
from services.simulator.params import ParamError, Params

MIN = 60_000
CLIENT_ASSIGNORS = tuple(a for a in ASSIGNORS if a not in ("uniform", "server-range"))


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    duration_ms: int
    build: Callable[..., list[GroupSpec]]  # (params, name) or, if `load`, (params, name, groups)
    load: bool = False  # `--groups N` sizes one scenario instead of copying it


def group(p: Params, name: str, actions: list[Action] | None = None, **defaults) -> GroupSpec:
    """A group from the shared parameters, with this scenario's `defaults`."""
    protocol = defaults.get("protocol", "classic")
    topics = defaults.get("topics") or {
        "orders": p.int("partitions", defaults.get("partitions", 12), 1)
    }
    assignor_choices = ("uniform", "server-range") if protocol == "consumer" else CLIENT_ASSIGNORS
    spec = GroupSpec(
        name=name,
        topics=dict(topics),
        members=p.int("members", defaults.get("members", 3), 0)
        if "members" not in defaults.get("fixed", ())
        else defaults["members"],
        protocol=protocol,
        assignor=defaults["assignor"]
        if "assignor" in defaults.get("fixed", ())
        else p.str("assignor", defaults.get("assignor", "range"), assignor_choices),
        # Static membership is modelled for classic groups (KIP-345) only.
        static=p.bool("static", defaults.get("static", False)) and protocol == "classic",
        session_timeout_ms=p.duration("session_timeout", 45_000),
        max_poll_interval_ms=p.duration(
            "max_poll_interval", defaults.get("max_poll_interval", 300_000)
        ),
        commit_interval_ms=p.duration("commit_interval", 5_000),
        messages_per_second=p.float("rate", 50.0),
        metadata=p.str("metadata", defaults.get("metadata", "")),
        transactional=p.float("transactional", defaults.get("transactional", 0.0), 0.0, 1.0),
        aborted=p.float("aborted", defaults.get("aborted", 0.0), 0.0, 1.0),
        actions=list(actions or []),
        subscription=defaults.get("subscription"),
    )
    if spec.commit_interval_ms < 1:
        raise ParamError("commit_interval must be positive")
    delete_after = p.duration("delete_after", None)
    if delete_after is not None:
        spec.actions.append(Action(delete_after, "delete"))
    return spec


def _steady(p: Params, name: str) -> list[GroupSpec]:
    return [group(p, name)]


def _rolling_restart(p: Params, name: str, static: bool = False) -> list[GroupSpec]:
    members = p.int("members", 4, 1)
    first = p.duration("first", MIN)
    every = p.duration("every", MIN)
    downtime = p.duration("downtime", 15_000)
    actions = [
        Action(first + i * every, "restart", i, {"downtime_ms": downtime}) for i in range(members)
    ]
    return [group(p, name, actions, members=members, static=static)]


def _crash_loop(p: Params, name: str) -> list[GroupSpec]:
    every = p.duration("every", 30_000)
    restart = p.duration("restart_after", 5_000)
    crashes = p.int("crashes", 12, 0)
    first = p.duration("first", 30_000)
    actions = [
        Action(first + i * every, "crash", 0, {"restart_after_ms": restart}) for i in range(crashes)
    ]
    return [group(p, name, actions, members=4)]


def _scale_out(p: Params, name: str) -> list[GroupSpec]:
    start, to = p.int("members", 2, 0), p.int("to", 6, 0)
    every = p.duration("every", MIN)
    actions = [Action((i - start + 1) * every, "join", i) for i in range(start, to)]
    return [group(p, name, actions, members=start, fixed=("members",))]


def _scale_in(p: Params, name: str) -> list[GroupSpec]:
    start, to = p.int("members", 6, 0), p.int("to", 2, 0)
    every = p.duration("every", MIN)
    actions = [Action((start - i) * every, "leave", i) for i in range(start - 1, to - 1, -1)]
    return [group(p, name, actions, members=start, fixed=("members",))]


def _slow_consumer(p: Params, name: str) -> list[GroupSpec]:
    """Member 1 stalls past max.poll.interval.ms (LeaveGroup from its heartbeat thread);
    later member 2 stalls while a new member joins, so the rebalance times out on it."""
    stall = p.duration("stall", 90_000)
    actions = [
        Action(MIN, "stall", 1, {"duration_ms": stall}),
        Action(5 * MIN, "stall", 2, {"duration_ms": stall}),
        Action(5 * MIN + 10_000, "join", 4),
    ]
    return [group(p, name, actions, members=4, max_poll_interval=MIN)]


def _churn_actions(members: int) -> list[Action]:
    """One member joins, one crashes for good, then every consumer restarts in turn."""
    actions = [Action(MIN, "join", members), Action(2 * MIN, "crash", 0)]
    actions += [
        Action(4 * MIN + i * MIN, "restart", i, {"downtime_ms": 15_000})
        for i in range(1, members + 1)
    ]
    return actions


def _eager_vs_cooperative(p: Params, name: str) -> list[GroupSpec]:
    members = p.int("members", 4, 1)
    return [
        group(
            p,
            f"{name}-{assignor}",
            _churn_actions(members),
            members=members,
            assignor=assignor,
            fixed=("assignor",),
        )
        for assignor in ("range", "cooperative-sticky")
    ]


def _subscription_change(p: Params, name: str) -> list[GroupSpec]:
    members = p.int("members", 3, 1)
    partitions = p.int("partitions", 12, 1)
    topics = {"orders": partitions, "payments": max(1, partitions // 2)}
    actions = [
        Action(MIN + i * 20_000, "subscribe", i, {"topics": ["orders", "payments"]})
        for i in range(members)
    ]
    return [group(p, name, actions, members=members, topics=topics, subscription=["orders"])]


def _partitions_added(p: Params, name: str) -> list[GroupSpec]:
    partitions = p.int("partitions", 12, 1)
    grow = p.int("to", 2 * partitions, partitions)
    return [group(p, name, [Action(MIN, "add-partitions", 0, {"topic": "orders", "count": grow})])]


def _kip848(p: Params, name: str) -> list[GroupSpec]:
    partitions = p.int("partitions", 12, 1)
    actions = [
        Action(MIN, "join", 3),
        Action(2 * MIN, "leave", 1),
        Action(3 * MIN, "crash", 0, {"restart_after_ms": 10_000}),
        Action(4 * MIN, "subscribe", 2, {"topics": ["orders", "payments"]}),
        Action(5 * MIN, "add-partitions", 0, {"topic": "orders", "count": 2 * partitions}),
    ]
    topics = {"orders": partitions, "payments": 6}
    return [
        group(
            p,
            name,
            actions,
            protocol="consumer",
            assignor="uniform",
            topics=topics,
            subscription=["orders"],
        )
    ]


def _many_groups(p: Params, name: str, groups: int) -> list[GroupSpec]:
    """Load: `groups` groups committing `commits_per_second` in all (default 100,000).

    `topics` spreads them over that many topics (`orders-00000` ...), group i on topic
    i mod `topics`; the default, 1, is the one `orders` topic every group shares. A topic
    per group is the exporter's worst case: every committed partition a distinct one to
    poll and keep a lag history for."""
    rate = p.float("commits_per_second", 100_000.0, 1.0)
    interval = p.duration("commit_interval", 5_000)
    partitions = max(1, round(rate * interval / 1000 / groups))
    churn = p.float("churn", 0.01, 0.0, 1.0)
    topics = p.int("topics", 1, 1, max(groups, 1))
    rng = random.Random(f"{name}:churn")
    specs = []
    for i in range(groups):
        actions = []
        if rng.random() < churn:
            actions.append(
                Action(rng.randrange(10_000, MIN), "crash", 0, {"restart_after_ms": 5_000})
            )
        width = p.int("partitions", partitions, 1)
        shape = {"topics": {f"orders-{i % topics:05d}": width}} if topics > 1 else {}
        specs.append(
            group(p, f"{name}-{i:05d}", actions, members=3, partitions=partitions, **shape)
        )
    return specs


def _mixed(p: Params, name: str) -> list[GroupSpec]:
    """The demo: a healthy cooperative group (with some aborted transactional commits),
    an eager range group through a rolling restart, a crash-loop storm, a KIP-848 group."""
    healthy = group(
        p,
        f"{name}-payments-cooperative",
        members=4,
        assignor="cooperative-sticky",
        transactional=0.1,
        aborted=0.3,
        fixed=("assignor",),
    )
    [rolling] = _rolling_restart(Params({**p.values, "assignor": "range"}), f"{name}-orders-range")
    [storm] = _crash_loop(p, f"{name}-audit-crashloop")
    [modern] = _kip848(p, f"{name}-billing-kip848")
    return [healthy, rolling, storm, modern]


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("steady", "a healthy group committing; nothing happens", 10 * MIN, _steady),
        Scenario(
            "rolling-restart",
            "members restarted one by one (first, every, downtime); static=true for KIP-345",
            6 * MIN,
            _rolling_restart,
        ),
        Scenario(
            "rolling-restart-static",
            "rolling-restart with static membership: restarts within the session timeout",
            6 * MIN,
            lambda p, n: _rolling_restart(p, n, static=True),
        ),
        Scenario(
            "crash-loop",
            "one member crashes every 30 s and restarts: a storm (every, restart_after, crashes)",
            10 * MIN,
            _crash_loop,
        ),
        Scenario(
            "scale-out", "members added one per minute (members, to, every)", 6 * MIN, _scale_out
        ),
        Scenario(
            "scale-in", "members leave one per minute (members, to, every)", 6 * MIN, _scale_in
        ),
        Scenario(
            "slow-consumer",
            "members stall past max.poll.interval.ms and get kicked (stall)",
            10 * MIN,
            _slow_consumer,
        ),
        Scenario(
            "eager-vs-cooperative",
            "range and cooperative-sticky groups through the same events",
            10 * MIN,
            _eager_vs_cooperative,
        ),
        Scenario(
            "subscription-change",
            "members add a second topic one by one",
            4 * MIN,
            _subscription_change,
        ),
        Scenario("partitions-added", "the topic gains partitions (to)", 3 * MIN, _partitions_added),
        Scenario(
            "kip848",
            "a KIP-848 consumer group (uniform): join, leave, crash, resubscribe, new partitions",
            8 * MIN,
            _kip848,
        ),
        Scenario(
            "many-groups",
            "load: --groups groups (default 10,000) sharing commits_per_second "
            "(default 100,000); churn (share of groups with a crash); topics (spread over "
            "that many topics, default 1)",
            MIN,
            _many_groups,
            load=True,
        ),
        Scenario(
            "mixed",
            "the demo: healthy cooperative, eager rolling restart, crash-loop storm, KIP-848",
            10 * MIN,
            _mixed,
        ),
    )
}


def scenario_names(text: str) -> list[str]:
    """The scenario names in `text` (comma-separated); ParamError if one is unknown."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if not names or unknown:
        raise ParamError(
            f"unknown scenario {', '.join(unknown) or repr(text)}; "
            f"choose from {', '.join(SCENARIOS)}"
        )
    return names


def build(names: list[str], params: Params, groups: int | None) -> tuple[list[GroupSpec], int]:
    """Group specs of the named scenarios and the longest default duration (ms)."""
    specs: list[GroupSpec] = []
    for scenario_name in names:
        scenario = SCENARIOS[scenario_name]
        if scenario.load:
            specs += scenario.build(params, scenario_name, groups or 10_000)
            continue
        for i in range(groups or 1):
            specs += scenario.build(params, f"{scenario_name}-{i}")
    return specs, max(SCENARIOS[n].duration_ms for n in names)

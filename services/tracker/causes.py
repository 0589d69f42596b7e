"""Why a group rebalanced: the causes of a rebalance, from the records alone (no I/O).

Kafka rebalances a group when a member joins or leaves, when a member's subscription
changes, or when a subscribed topic's partition count grows. Comparing a generation with
the one before it (for a cooperative episode: each round with the one before, the
causes of the revocation rounds carried to the episode's end) gives the evidence:

- a member identity that joined: `restart` when it has the same group.instance.id as a
  member that was replaced, or the same client id and host as a member that left in this
  rebalance, left earlier without a replacement, or is still listed (it crashed and came
  back before its session expired); otherwise `scale_out`.
- a member that left: its partitions' last offset commits before the rebalance time it
  (`GenerationTracker.commit` keeps each partition's last commit time, in log order).
  Commits that stopped about one session timeout (the member's `session.timeout.ms`;
  the broker default of 45 s for KIP-848 members, whose records do not carry it) before
  the rebalance: `session_timeout`; between one and two rebalance timeouts
  (`max.poll.interval.ms`) before it: `poll_timeout`; sooner than either: a LeaveGroup,
  `scale_in` (or part of a `restart` when a joiner replaced it). When the gap fits
  neither, or the member had no commits to time it, every removal cause stays possible.
- a member still present whose topics changed: `subscription_change`.
- a topic whose highest assigned partition grew (classic records carry no counts):
  `partitions_added`.
- none of these: `unknown`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from services.store.batch import Cause
from services.tracker.churn import partition_counts
from services.tracker.model import MemberDetails, Snapshot

if TYPE_CHECKING:
    from services.tracker.tracker import GenerationTracker

DEFAULT_SESSION_MS = 45_000  # group.consumer.session.timeout.ms (KIP-848)
# A member's last commit precedes the coordinator's decision by up to a commit interval
# (auto.commit.interval.ms, 5 s by default), and the rebalance's record follows it by the
# time the other members take to rejoin (a heartbeat interval, 3 s by default).
SLACK = timedelta(seconds=10)
EARLY = timedelta(seconds=1)  # clocks of the commit and group records may differ a little
DEPARTED_KEPT = 32  # members that left without a replacement, remembered per group


def _who(ident: str, d: MemberDetails | None) -> str:
    if d is None or d[1] is None:
        return ident
    return f"{ident} ({d[1]} @ {d[2]})"


def _topics(topics: tuple[str, ...]) -> str:
    return ", ".join(sorted(topics)) or "nothing"


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():.0f} s"


def _replaced(
    tracker: GenerationTracker,
    group: str,
    ident: str,
    d: MemberDetails | None,
    left: Mapping[str, MemberDetails | None],
    present: Mapping[str, MemberDetails],
) -> str | None:
    """What the joining member `ident` replaces, described; None: nobody."""
    if d is None or d[1] is None:
        return None
    for other, od in sorted(left.items()):
        if od is not None and (od[1], od[2]) == (d[1], d[2]):
            return f"{other}, which left in this rebalance"
    for departed in reversed(tracker.departed.get(group, [])):
        other, generation, client, host = departed
        if other == ident or (client, host) == (d[1], d[2]):
            return f"{other}, which left at generation {generation}"
    for other, od in sorted(present.items()):
        if other != ident and (od[1], od[2]) == (d[1], d[2]):
            return f"{other}, still listed (it came back before its session expired)"
    return None


def _removal(
    tracker: GenerationTracker,
    group: str,
    ident: str,
    before: Snapshot,
    d: MemberDetails | None,
    at: datetime,
) -> list[Cause]:
    """Why `ident` left, timed by its partitions' last commits before `at`."""
    who = _who(ident, d)
    commits = tracker.commits.get(group, {})
    # Only commits made while it owned them time the member (a partition's earlier owner
    # says nothing about it).
    times = [
        t
        for tp in before.assignment.get(ident, [])
        if (t := commits.get(tp)) and t >= before.since.get(tp, before.position.time)
    ]
    session = timedelta(milliseconds=(d[3] if d and d[3] else DEFAULT_SESSION_MS))
    poll = timedelta(milliseconds=d[4]) if d and d[4] else None
    if not times:
        return _all_possible(who, "no commits of its partitions to time its departure")
    gap = at - max(times)
    fits_session = session - EARLY <= gap <= session + SLACK
    fits_poll = poll is not None and poll - EARLY <= gap <= 2 * poll + SLACK
    timing = f"its partitions' commits stopped {_seconds(gap)} before the rebalance"
    if fits_session or fits_poll:
        both = fits_session and fits_poll
        out = []
        if fits_session:
            out.append(
                Cause(
                    "session_timeout",
                    f"{who} removed: {timing}, about its session timeout ({_seconds(session)})",
                    both,
                )
            )
        if fits_poll and poll is not None:
            out.append(
                Cause(
                    "poll_timeout",
                    f"{who} removed: {timing}, past max.poll.interval.ms ({_seconds(poll)})",
                    both,
                )
            )
        return out
    if gap < session - EARLY and (poll is None or gap < poll - EARLY):
        return [Cause("scale_in", f"{who} left the group (LeaveGroup): {timing}")]
    return _all_possible(who, f"{timing}, which fits no timeout")


def _all_possible(who: str, why: str) -> list[Cause]:
    return [
        Cause(kind, f"{who} left; {why}: {what}", possible=True)
        for kind, what in (
            ("scale_in", "a LeaveGroup"),
            ("session_timeout", "an expired session"),
            ("poll_timeout", "max.poll.interval.ms exceeded"),
        )
    ]


def rebalance_causes(
    tracker: GenerationTracker, group: str, before: Snapshot, after: Snapshot
) -> list[Cause]:
    """The causes of the change from `before` to `after` (the next generation); updates
    the group's remembered departures. Not deduplicated across episode rounds."""
    at = after.position.time
    causes: list[Cause] = []
    joined = sorted(after.assignment.keys() - before.assignment.keys())
    left = sorted(before.assignment.keys() - after.assignment.keys())
    left_details = {i: before.details.get(i) for i in left}
    survivors = {
        i: d for i, d in after.details.items() if i in before.assignment and i not in joined
    }
    replaced: set[str] = set()
    departed = tracker.departed.setdefault(group, [])
    for ident in joined:
        d = after.details.get(ident)
        what = _replaced(tracker, group, ident, d, left_details, survivors)
        if what is None:
            causes.append(Cause("scale_out", f"{_who(ident, d)} joined"))
            continue
        causes.append(Cause("restart", f"{_who(ident, d)} joined, replacing {what}"))
        for other, od in left_details.items():
            if od is not None and d is not None and (od[1], od[2]) == (d[1], d[2]):
                replaced.add(other)
        departed[:] = [
            x for x in departed if not (x[0] == ident or (d is not None and x[2:] == d[1:3]))
        ]
    # A static member's identity survives a restart; a new member id under it that the
    # group rebalanced for (it came back after its session expired, or changed topics).
    for ident in sorted(before.assignment.keys() & after.assignment.keys()):
        old, new = before.details.get(ident), after.details.get(ident)
        if old is not None and new is not None and old[0] != new[0]:
            causes.append(
                Cause(
                    "restart",
                    f"{_who(ident, new)} rejoined under a new member id (group.instance.id)",
                )
            )
    for ident in left:
        d = left_details[ident]
        found = _removal(tracker, group, ident, before, d, at)
        if ident in replaced:
            found = [c for c in found if c.cause != "scale_in"]
        causes += found
        if ident not in replaced:
            departed.append((ident, before.generation, d[1] if d else None, d[2] if d else None))
    del departed[:-DEPARTED_KEPT]
    for ident in sorted(before.topics.keys() & after.topics.keys()):
        was, now = before.topics[ident], after.topics[ident]
        if set(was) != set(now):
            causes.append(
                Cause(
                    "subscription_change",
                    f"{_who(ident, after.details.get(ident))} subscribed to "
                    f"{_topics(now)} (was {_topics(was)})",
                )
            )
    # A revocation round leaves partitions unowned: count from the episode's start too.
    start = before.revoking_from.assignment if before.revoking_from is not None else {}
    old_counts = partition_counts(before.assignment, start)
    new_counts = partition_counts(after.assignment)
    for topic in sorted(old_counts.keys() & new_counts.keys()):
        if new_counts[topic] > old_counts[topic]:
            causes.append(
                Cause(
                    "partitions_added",
                    f"{topic} grew from {old_counts[topic]} to {new_counts[topic]} partitions",
                )
            )
    return causes


def settle(causes: list[Cause]) -> list[Cause]:
    """Duplicates dropped (an episode's rounds repeat a change), and `unknown` when
    nothing explains the rebalance."""
    out: list[Cause] = []
    for c in causes:
        if c not in out:
            out.append(c)
    if not out:
        return [Cause("unknown", "no member joined, left or changed topics, and no topic grew")]
    return out

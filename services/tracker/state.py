"""The tracker's whole state as JSON-ready data, and back.

A KIP-848 group's state is spread over records written at different times: members
(type 5), topic names (type 4, or the cluster's: `GenerationTracker.topic_names`) and
per-member targets (type 7) may all predate the batch that completes an epoch. The store
keeps generations, not those records, so the job saves the tracker's state after each
batch (`spark_jobs.tracker_files` writes `dump`'s data beside Spark's checkpoint) and a
restarted job resumes from it with `load`. This module does no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from services.store.batch import Cause
from services.tracker.cost import CostWatch
from services.tracker.model import Kip848State, Position, Snapshot
from services.tracker.tracker import GenerationTracker


def _position(p: Position | None) -> Any:
    return None if p is None else [p.partition, p.offset, p.time.isoformat()]


def _load_position(raw: Any) -> Position:
    return Position(raw[0], raw[1], datetime.fromisoformat(raw[2]))


def _load_optional_position(raw: Any) -> Position | None:
    return None if raw is None else _load_position(raw)


def _snapshot(s: Snapshot | None) -> Any:
    if s is None:
        return None
    return {
        "generation": s.generation,
        "position": _position(s.position),
        "assignment": s.assignment,
        "topics": s.topics,
        "protocol": s.protocol,
        "revoking_from": _snapshot(s.revoking_from),
        "rebalance_timeout_ms": s.rebalance_timeout_ms,
        "forming_until": None if s.forming_until is None else s.forming_until.isoformat(),
        "details": s.details,
        "pending": [c.as_dict() for c in s.pending],
        "since": [[t, p, at.isoformat()] for (t, p), at in s.since.items()],
    }


def _load_snapshot(raw: Any) -> Snapshot:
    revoking_from = raw["revoking_from"]
    forming_until = raw.get("forming_until")  # absent in older files: formed
    return Snapshot(
        raw["generation"],
        _load_position(raw["position"]),
        {m: [tuple(tp) for tp in tps] for m, tps in raw["assignment"].items()},
        {m: tuple(ts) for m, ts in raw["topics"].items()},
        raw["protocol"],
        None if revoking_from is None else _load_snapshot(revoking_from),
        raw.get("rebalance_timeout_ms"),
        None if forming_until is None else datetime.fromisoformat(forming_until),
        # The evidence of causes is absent in older files.
        {m: tuple(d) for m, d in raw.get("details", {}).items()},
        [Cause(**c) for c in raw.get("pending", [])],
        {(t, p): datetime.fromisoformat(at) for t, p, at in raw.get("since", [])},
    )


def dump(tracker: GenerationTracker) -> dict[str, Any]:
    """The state kept between batches (not the per-batch outputs and counts)."""
    return {"last": dump_snapshots(tracker.last), **_rest(tracker)}


def dump_snapshots(last: Mapping[str, Snapshot]) -> dict[str, Any]:
    """Each group's last generation, as `dump` writes them."""
    return {g: _snapshot(s) for g, s in last.items()}


def changed_since(
    last: Mapping[str, Snapshot], base: Mapping[str, Snapshot]
) -> tuple[dict[str, Snapshot], list[str]]:
    """The groups of `last` whose snapshot is not `base`'s, and those `base` has alone.

    A group's `Snapshot` is replaced, never changed, once the record that made it has
    been replayed (the handlers build a new one for each group record), so an unchanged
    object is an unchanged generation. At 100,000 groups the snapshots are about 85% of
    the state and change only where a group rebalanced, while every committing group's
    commit times change with each batch (docs/performance.md, "A fleet of 100,000
    groups")."""
    changed = {g: s for g, s in last.items() if base.get(g) is not s}
    return changed, sorted(base.keys() - last.keys())


def dump_changes(
    tracker: GenerationTracker, changed: Mapping[str, Snapshot], removed: list[str]
) -> dict[str, Any]:
    """`dump` with only the last generations of `changed` (`last`) and the groups gone
    (`removed`), as `changed_since` a base finds them; `merge_since` adds the base back."""
    return {"last": dump_snapshots(changed), "removed": removed, **_rest(tracker)}


def merge_since(base: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """`dump` data from a base's `dump_snapshots` data and a `dump_changes` on top of it."""
    removed = set(raw["removed"])
    last = {g: s for g, s in base.items() if g not in removed}
    last.update(raw["last"])
    return {**{k: v for k, v in raw.items() if k != "removed"}, "last": last}


def _rest(tracker: GenerationTracker) -> dict[str, Any]:
    return {
        "kip848": {
            g: {**asdict(k), "epoch_position": _position(k.epoch_position)}
            for g, k in tracker.kip848.items()
        },
        "topic_names": tracker.topic_names,
        "commits": {
            g: [[t, p, at.isoformat()] for (t, p), at in c.items()]
            for g, c in tracker.commits.items()
        },
        "departed": tracker.departed,
        "costs": tracker.cost.as_data(),
    }


def load(raw: dict[str, Any]) -> GenerationTracker:
    tracker = GenerationTracker({g: _load_snapshot(s) for g, s in raw["last"].items()})
    for group, k in raw["kip848"].items():
        tracker.kip848[group] = Kip848State(
            **{**k, "epoch_position": _load_optional_position(k["epoch_position"])}
        )
    tracker.topic_names = dict(raw.get("topic_names", {}))  # absent in older files
    tracker.commits = {
        g: {(t, p): datetime.fromisoformat(at) for t, p, at in c}
        for g, c in raw.get("commits", {}).items()
    }
    tracker.departed = {g: [tuple(d) for d in ds] for g, ds in raw.get("departed", {}).items()}
    tracker.cost = CostWatch.from_data(raw.get("costs", {}))  # absent in older files
    return tracker

"""The generation tracker's state, saved beside Spark's checkpoint after every batch.

A KIP-848 group's state is spread over records written at different times: members
(type 5), topic names (type 4, or the cluster's: `GenerationTracker.topic_names`) and
per-member targets (type 7) may all predate the batch that completes an epoch. The store
keeps generations, not those records, so the tracker saves its whole state as
`tracker-<batch id>.json` after each batch is written, and a restarted job resumes from
the newest file. If the job dies between the store write and the save, Spark replays
that batch over the older state. Both the store and the tracker skip what they already
have, so the result is the same.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_jobs.generations import GenerationTracker, Kip848State, Position, Snapshot

KEEP = 3


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
    }


def _load_snapshot(raw: Any) -> Snapshot:
    revoking_from = raw["revoking_from"]
    return Snapshot(
        raw["generation"],
        _load_position(raw["position"]),
        {m: [tuple(tp) for tp in tps] for m, tps in raw["assignment"].items()},
        {m: tuple(ts) for m, ts in raw["topics"].items()},
        raw["protocol"],
        None if revoking_from is None else _load_snapshot(revoking_from),
    )


def dump(tracker: GenerationTracker) -> dict[str, Any]:
    return {
        "last": {g: _snapshot(s) for g, s in tracker.last.items()},
        "kip848": {
            g: {**asdict(k), "epoch_position": _position(k.epoch_position)}
            for g, k in tracker.kip848.items()
        },
        "topic_names": tracker.topic_names,
    }


def load(raw: dict[str, Any]) -> GenerationTracker:
    tracker = GenerationTracker({g: _load_snapshot(s) for g, s in raw["last"].items()})
    for group, k in raw["kip848"].items():
        tracker.kip848[group] = Kip848State(
            **{**k, "epoch_position": _load_optional_position(k["epoch_position"])}
        )
    tracker.topic_names = dict(raw.get("topic_names", {}))  # absent in older files
    return tracker


def save(directory: Path, batch_id: int, tracker: GenerationTracker) -> None:
    """Write atomically (temp file, then rename) and keep the newest few files."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"tracker-{batch_id:012d}.json"
    temp = target.with_suffix(".tmp")
    temp.write_text(json.dumps(dump(tracker)))
    os.replace(temp, target)
    for old in sorted(directory.glob("tracker-*.json"))[:-KEEP]:
        old.unlink(missing_ok=True)


def latest(directory: Path) -> GenerationTracker | None:
    files = sorted(directory.glob("tracker-*.json")) if directory.is_dir() else []
    return load(json.loads(files[-1].read_text())) if files else None

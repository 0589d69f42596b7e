"""The generation tracker's state, saved beside Spark's checkpoint after every batch.

The tracker saves its whole state (`services.tracker.state`) as `tracker-<batch id>.json`
after each batch is written, and a restarted job resumes from the newest file. If the job
dies between the store write and the save, Spark replays that batch over the older state.
Both the store and the tracker skip what they already have, so the result is the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from services.tracker import GenerationTracker
from services.tracker.state import dump, load

KEEP = 3


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

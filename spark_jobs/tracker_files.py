"""The generation tracker's state, saved beside Spark's checkpoint after every batch.

After each batch is written the tracker's state (`services.tracker.state`) is saved as
`tracker-<batch id>.json`, and a restarted job resumes from the newest file. If the job
dies between the store write and the save, Spark replays that batch over the older state.
Both the store and the tracker skip what they already have, so the result is the same.

The groups' last generations, most of the state, change only where a group rebalanced,
so they are written whole now and then (`snapshots-<batch id>.json`, the base) and each
batch's file holds only those that changed since its base (`state.dump_changes`), with
the rest of the state (the commit times change with every batch). A new base is written
when the changes since the last one reach a quarter of the groups, so that a batch file
stays small and a base is written at most every few batches even in a storm. At 100,000
groups a whole state was 207 MB of JSON written after every batch, most of the job's
time (docs/performance.md, "A fleet of 100,000 groups").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from services.tracker import GenerationTracker
from services.tracker.model import Snapshot
from services.tracker.state import changed_since, dump_changes, dump_snapshots, load, merge_since

KEEP = 3  # batch files kept, and bases kept (each batch file's base is among them)
REBASE_SHARE = 4  # a new base once the changes since the last reach 1/4 of the groups


def _write(target: Path, data: Any) -> None:
    """Atomically: a temp file, then a rename."""
    temp = target.with_suffix(".tmp")
    temp.write_text(json.dumps(data))
    os.replace(temp, target)


class TrackerFiles:
    """Saves a tracker after each batch into `directory`, remembering its last base."""

    def __init__(self, directory: Path, least_changes: int = 100) -> None:
        """`least_changes`: below as many changed groups, no new base however few the
        groups (a new base of a handful of groups saves nothing)."""
        self.directory = directory
        self.least_changes = least_changes
        self.base_name: str | None = None
        self.base: dict[str, Snapshot] = {}  # the snapshots the base holds, by identity

    def save(self, batch_id: int, tracker: GenerationTracker) -> None:
        """Save after batch `batch_id` (inside the batch's `gc_pause.gc_paused`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        changed, removed = changed_since(tracker.last, self.base)
        limit = max(len(tracker.last) // REBASE_SHARE, self.least_changes)
        if self.base_name is None or len(changed) + len(removed) > limit:
            self.base_name = f"snapshots-{batch_id:012d}.json"
            self.base = dict(tracker.last)
            _write(self.directory / self.base_name, dump_snapshots(self.base))
            changed, removed = {}, []
        data = {"base": self.base_name, **dump_changes(tracker, changed, removed)}
        _write(self.directory / f"tracker-{batch_id:012d}.json", data)
        for pattern in ("tracker-*.json", "snapshots-*.json"):
            for old in sorted(self.directory.glob(pattern))[:-KEEP]:
                old.unlink(missing_ok=True)


def latest(directory: Path) -> GenerationTracker | None:
    """The newest saved state; None when there is none. A file written before bases
    existed holds the whole state itself."""
    files = sorted(directory.glob("tracker-*.json")) if directory.is_dir() else []
    if not files:
        return None
    raw = json.loads(files[-1].read_text())
    base = raw.pop("base", None)
    if base is not None:
        raw = merge_since(json.loads((directory / base).read_text()), raw)
    return load(raw)

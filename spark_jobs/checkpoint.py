"""Spark's checkpoint beside the history store: where it lives, and whether the two agree.

The checkpoint says which micro-batches were committed (`commits/<batch id>`, written
after `foreachBatch` returned) and where each batch's source offsets ended
(`offsets/<batch id>`, written before the batch runs). The store says which batches it
holds: `pipeline_status.last_batch_id`, written in the same transaction as the batch.

- Store ahead of the checkpoint (by a batch) is normal: the job died between the store
  write and the checkpoint commit; Spark replays the batch and the store skips what it
  already has.
- Checkpoint ahead of the store means the store lacks batches the checkpoint says were
  written: the database is new, restored from a backup, or not the one the checkpoint
  was made for. Resuming would skip those records for good, so the job refuses with one
  line naming `--reset-checkpoint`. Refusing, not replaying on its own, is deliberate: a
  wrong `--database-url` (a typo, a forgotten flag) would otherwise be filled with the
  whole log without anyone asking, and a restored database may want its operator to
  decide whether the log still holds what the backup lacks.
- A new checkpoint against a store that has batches (after `--reset-checkpoint`, or a
  checkpoint deleted by hand) restarts Spark's batch ids at 0, so the store's batch
  counter is told to count from there (`HistoryStore.restart_batches`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import make_url

from services.store.batch import BatchWrite
from services.store.clusters import DEFAULT_CLUSTER
from services.store.database import sqlalchemy_url
from services.store.embedded import data_dir
from services.store.errors import StoreError
from services.store.repository import HistoryStore
from spark_jobs.kafka_source import split_offsets

log = logging.getLogger("groupscope.stream")

RESET_FLAG = "--reset-checkpoint"


class CheckpointAheadError(StoreError):
    """The checkpoint has committed batches the history store does not hold."""


class CheckpointResetError(StoreError):
    """`--reset-checkpoint` cannot move this checkpoint (not on the local filesystem)."""


def database_identity(url: str | None) -> str:
    """The database a checkpoint belongs to, without secrets: `user@host:port/dbname` of
    a URL (no password, the default port spelled out), or the embedded server's data dir."""
    if url is None:
        return f"embedded:{(data_dir() / 'pg').resolve()}"
    parsed = make_url(sqlalchemy_url(url))
    user = f"{parsed.username}@" if parsed.username else ""
    host = parsed.host or str(parsed.query.get("host", ""))  # or a socket directory
    return f"postgresql://{user}{host}:{parsed.port or 5432}/{parsed.database or ''}"


def default_location(source: str, url: str | None, cluster: str = DEFAULT_CLUSTER) -> Path:
    """`<data dir>/checkpoints/<hash of source, database and cluster>`: a new database
    gets a new checkpoint, so it is filled from the source's start, and so does each
    cluster. The default cluster's hash leaves its name out, so that a checkpoint made
    before clusters (migration 0010) is still found."""
    key = f"{source}\n{database_identity(url)}"
    if cluster != DEFAULT_CLUSTER:
        key += f"\n{cluster}"
    return data_dir() / "checkpoints" / hashlib.sha1(key.encode()).hexdigest()[:16]


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(f.name) for f in folder.iterdir() if f.name.isdigit())


@dataclass(frozen=True)
class CheckpointState:
    """The newest batch Spark planned (`offsets/`) and committed (`commits/`)."""

    planned: int | None
    committed: int | None

    @property
    def fresh(self) -> bool:
        return self.planned is None and self.committed is None


def read_state(path: Path) -> CheckpointState:
    planned, committed = _batch_ids(path / "offsets"), _batch_ids(path / "commits")
    return CheckpointState(planned[-1] if planned else None, committed[-1] if committed else None)


def source_offsets(path: Path, batch_id: int) -> dict | None:
    """The (single) source's end offsets of a batch, from Spark's offset log: a version
    line, the batch metadata, then one JSON line per source."""
    try:
        lines = (path / "offsets" / str(batch_id)).read_text().splitlines()
    except FileNotFoundError:
        return None
    if len(lines) < 3:
        return None
    try:
        offsets = json.loads(lines[2])
    except ValueError:
        return None
    return offsets if isinstance(offsets, dict) else None


def bases(path: Path) -> dict[str, int]:
    """The Kafka source's position bases at the checkpoint's newest batch (none for other
    sources, or before any log reset)."""
    planned = read_state(path).planned
    offsets = source_offsets(path, planned) if planned is not None else None
    return split_offsets(offsets)[1] if offsets else {}


def log_resets(path: Path, batch_id: int, source: str, now: dict | None) -> int:
    """How many partitions' logs went backwards in this batch (`now`: its source offsets):
    those whose position base differs from the previous batch's (the Kafka source moves a
    base only then)."""
    if batch_id == 0:
        return 0  # starts from initialOffset, which never detects a reset
    before = source_offsets(path, batch_id - 1)
    if now is None or before is None:
        return 0
    (_, new), (_, old) = split_offsets(now), split_offsets(before)
    moved = sorted((p for p in new if new[p] != old.get(p, 0)), key=int)
    for p in moved:
        log.error(
            "log reset in batch %d of %s: source partition %s's offsets went back below "
            "the checkpoint's %d; its new log is read from its start and stored at "
            "positions from %d",
            batch_id,
            source,
            p,
            new[p] - old.get(p, 0),
            new[p],
        )
    return len(moved)


def with_source_positions(batch: BatchWrite, path: Path) -> BatchWrite:
    """The batch with its partitions' position bases in `progress` (the store keeps them
    for a new checkpoint to start from) and the log resets it found in `health`."""
    offsets = source_offsets(path, batch.batch_id)
    now = split_offsets(offsets)[1] if offsets else {}
    progress = [replace(p, base=now.get(str(p.partition), 0)) for p in batch.progress]
    health = batch.health
    if health is not None:
        resets = log_resets(path, batch.batch_id, batch.source, offsets)
        health = replace(health, log_resets=resets)
    return replace(batch, progress=progress, health=health)


def is_local(path: Path) -> bool:
    """Whether the checkpoint is on this machine's filesystem (not `hdfs:`, `s3a:`, ...),
    where the job can read Spark's logs and move the checkpoint aside."""
    text = str(path)
    return text.startswith("file:") or re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", text) is None


def reset(path: Path) -> Path | None:
    """Move the checkpoint aside (`<name>.reset-<UTC time>`); returns where it went."""
    if not path.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{path.name}.reset-{stamp}")
    path.rename(aside)
    log.warning("checkpoint %s moved aside to %s: replaying the source from its start", path, aside)
    return aside


def prepare(
    path: Path, store: HistoryStore, source: str, database: str, reset_requested: bool
) -> dict[str, int]:
    """Check the checkpoint against the store before the query starts (see the module
    docstring); with `reset_requested`, move it aside first. Returns the Kafka source's
    position bases for a new checkpoint to start from: the moved one's, or the store's
    where higher (a checkpoint deleted by hand loses its bases; the store keeps them).

    Raises `CheckpointAheadError` when the store lacks batches the checkpoint committed.
    """
    if not is_local(path):
        if reset_requested:
            raise CheckpointResetError(
                f"{RESET_FLAG} moves local checkpoints only: move {path} aside yourself"
            )
        log.warning(
            "checkpoint %s is not on the local filesystem: not checked against %s", path, database
        )
        return {}
    carried: dict[str, int] = {}
    if reset_requested:
        aside = reset(path)
        carried = bases(aside) if aside is not None else {}
    state = read_state(path)
    stored = store.last_batch(source)
    if state.fresh:
        kept = {str(p): b for p, b in store.position_bases(source).items()}
        carried = {p: max(carried.get(p, 0), kept.get(p, 0)) for p in carried | kept}
        if stored is not None:
            log.info(
                "new checkpoint %s; %s holds batches up to %d of %s: replaying from the "
                "source's start (writes are idempotent), batch ids restart at 0",
                path,
                database,
                stored,
                source,
            )
            store.restart_batches(source)
        return carried
    committed = state.committed
    if committed is not None and (stored is None or stored < committed):
        holds = "nothing" if stored is None else f"only batches up to {stored}"
        raise CheckpointAheadError(
            f"checkpoint {path} has committed batch {committed} of {source}, but "
            f"{database} holds {holds} of cluster {store.cluster} (a new or restored "
            f"database?): rerun with {RESET_FLAG} to move the checkpoint aside and replay "
            "the source from its start (writes are idempotent)"
        )
    if stored is not None and committed is not None and stored > committed + 1:
        log.warning(
            "%s holds batches up to %d of %s, the checkpoint %s only up to %d: "
            "batches %d-%d are replayed (idempotent; they are not counted again)",
            database,
            stored,
            source,
            path,
            committed,
            committed + 1,
            stored,
        )
    return carried

"""Finding the records that make the database reject a batch, so the rest can land.

A record is a source position: its offset commit, generation, group event or decode
failure. When `HistoryStore.write_batch` raises `BatchRejectedError`, `rejected_records`
bisects the batch's records with dry runs (`HistoryStore.rejection`: written, then
rolled back). Each half is tried together with the records already found good, so a
record that only fails beside another one is found too. A batch with k bad records of n
costs about 2·k·log2(n) dry runs. The offset commits, the bulk of a batch and rarely
to blame once strings are sanitized, are tried last, all at once if they can, which
cuts both the dry runs and their time (docs/performance.md, "Design measurements":
rejected-record search).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from services.store.batch import BatchWrite, DecodeFailure
from services.store.repository import HistoryStore

Position = tuple[int, int]  # (source partition, source offset)


class _Positioned(Protocol):
    """A record of a batch, or a repair of one: it names its source position."""

    @property
    def source_partition(self) -> int: ...

    @property
    def source_offset(self) -> int: ...


_Record = TypeVar("_Record", bound=_Positioned)


def record_positions(batch: BatchWrite) -> list[Position]:
    """Every record's source position in the batch, in order."""
    parts: Iterable[Sequence[_Positioned]] = (
        batch.offsets,
        batch.group_events,
        batch.generations,
        batch.decode_failures,
    )
    return sorted({(item.source_partition, item.source_offset) for part in parts for item in part})


def restrict(batch: BatchWrite, keep: Collection[Position]) -> BatchWrite:
    """The batch with only the records at `keep` (its progress and health unchanged)."""

    def kept(items: Sequence[_Record]) -> list[_Record]:
        return [i for i in items if (i.source_partition, i.source_offset) in keep]

    return replace(
        batch,
        offsets=kept(batch.offsets),
        group_events=kept(batch.group_events),
        generations=kept(batch.generations),
        decode_failures=kept(batch.decode_failures),
        repairs=kept(batch.repairs),
    )


def rejected_records(store: HistoryStore, batch: BatchWrite) -> dict[Position, str]:
    """`{position: the database's reason}` for each record the database rejects; the
    batch without them is accepted. Empty if the rejection is not any record's doing
    (the batch's progress or health alone is refused). Raises `StoreUnavailableError`
    if the database goes away meanwhile."""
    if store.rejection(restrict(batch, ())) is not None:
        return {}
    rejected: dict[Position, str] = {}

    def search(candidates: list[Position], good: set[Position]) -> None:
        """Adds the good ones of `candidates` to `good`, the others to `rejected`."""
        reason = store.rejection(restrict(batch, good | set(candidates)))
        if reason is None:
            good.update(candidates)
        elif len(candidates) == 1:
            rejected[candidates[0]] = reason
        else:
            middle = len(candidates) // 2
            search(candidates[:middle], good)
            search(candidates[middle:], good)

    # Group records, failures and events first: few, so their dry runs are quick, and the
    # offset commits (the bulk, and rarely to blame) are then tried once beside them.
    few = record_positions(replace(batch, offsets=()))
    commits = sorted(set(record_positions(batch)) - set(few))
    good: set[Position] = set()
    for candidates in (few, commits):
        if candidates:
            search(candidates, good)
    return rejected


def without(
    batch: BatchWrite, rejected: Collection[Position], failures: Sequence[DecodeFailure]
) -> BatchWrite:
    """The batch without the `rejected` records, with `failures` kept in their place."""
    keep = set(record_positions(batch)) - set(rejected)
    kept = restrict(batch, keep)
    return replace(kept, decode_failures=[*kept.decode_failures, *failures])

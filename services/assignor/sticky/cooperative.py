"""``CooperativeStickyAssignor``: a partition changing owner waits for its revocation.

The cooperative assignor runs the sticky builder as ``StickyAssignor`` does, then leaves
out of the assignment every partition that another member still owns, so that the
previous owner revokes it first and a follow-up rebalance hands it over.
"""

from __future__ import annotations

from collections.abc import Callable


def transferring(
    raw_owned: Callable[[int], list[int]], assignment: list[list[int]]
) -> dict[int, int]:
    """``CooperativeStickyAssignor.computePartitionsTransferringOwnership``.

    ``raw_owned(member)``: the partitions the member reported; the result maps each
    partition that changes owner to its new owner.
    """
    added: dict[int, int] = {}
    revoked: set[int] = set()
    for i, assigned in enumerate(assignment):
        owned = set(raw_owned(i))
        mine = set(assigned)
        added.update((g, i) for g in assigned if g not in owned)
        revoked.update(g for g in owned if g not in mine)
    return {g: i for g, i in added.items() if g in revoked}


def hold_back(assignment: list[list[int]], moving: dict[int, int]) -> None:
    """Removes each partition in ``moving`` from its new owner's list, in place."""
    losing: dict[int, set[int]] = {}
    for g, i in moving.items():
        losing.setdefault(i, set()).add(g)
    for i, gone in losing.items():
        assignment[i] = [g for g in assignment[i] if g not in gone]

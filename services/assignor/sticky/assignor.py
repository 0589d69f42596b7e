"""``sticky`` and ``cooperative-sticky``: Kafka's ``AbstractStickyAssignor`` and its two users.

``StickyAssignor`` (eager) returns the builder's assignment. ``CooperativeStickyAssignor``
then holds back every partition that changes owner (``sticky.cooperative``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.assignor.model import Assignment, Member, RawMember, owned_as_sent, with_owned
from services.assignor.sticky.constrained import ConstrainedBuilder
from services.assignor.sticky.cooperative import hold_back, transferring
from services.assignor.sticky.fast import assign_owned_as_sent
from services.assignor.sticky.general import GeneralBuilder
from services.assignor.sticky.general_fast import assign_kept_general
from services.assignor.sticky.input import StickyInput


def _build(prep: StickyInput) -> tuple[list[list[int]], dict[int, int] | None]:
    if prep.all_equal:
        builder: ConstrainedBuilder[int] = ConstrainedBuilder(prep)
        return builder.build(), builder.transferring
    return GeneralBuilder(prep).build(), None


def assign_sticky(
    counts: Mapping[str, int],
    members: list[Member],
    racks: Mapping[str, Sequence[frozenset[str]]],
    cooperative: bool = False,
    sent: Sequence[RawMember | Member] | None = None,
) -> Assignment:
    """``StickyAssignor`` or, with ``cooperative``, ``CooperativeStickyAssignor``.

    With ``sent`` (the raw members, in order), ``members`` come from
    ``to_member(raw, with_owned=False)``: the owned partitions are read from ``sent``, by
    a fast path (``sticky.fast`` for identical subscriptions, else
    ``sticky.general_fast``) where it applies, else checked as ``to_member`` checks
    them, raising the same errors.
    """
    if not members:
        return {}
    prep = StickyInput(counts, members, racks)
    owned = [] if sent is None else list(map(owned_as_sent, sent))
    if sent is not None and any(owned):  # else nothing to check or attach: a first assignment
        fast_path = assign_owned_as_sent if prep.all_equal else assign_kept_general
        fast = fast_path(prep, owned, cooperative)
        if fast is not None:
            return {m.id: pairs for m, pairs in zip(members, fast, strict=True)}
        prep.attach_owned(list(map(with_owned, members, sent)))
    assignment, moving = _build(prep)
    if cooperative and prep.any_owned():  # nothing can change owner if nobody owns any
        if moving is None:
            moving = transferring(prep.raw_owned, assignment)
        hold_back(assignment, moving)
    tuples = prep.partition_tuples()
    lookup = tuples.__getitem__
    return {m.id: list(map(lookup, assignment[i])) for i, m in enumerate(prep.members)}

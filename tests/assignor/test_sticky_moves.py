"""``sticky.moves`` makes exactly Kafka's moves, as Kafka's loops written out literally do.

``LiteralBuilder`` is ``GeneralBuilder`` with ``isBalanced`` and ``performReassignments`` as
Kafka writes them: ``isBalanced`` before every partition, partition by partition for each
member, and every subscriber's size for every partition. Both must end with the same
lists in the same order, whatever the racks, generations and conflicting claims.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from services.assignor.model import (
    AssignmentError,
    check_partition_counts,
    check_partition_racks,
    to_members,
)
from services.assignor.sticky.general import GeneralBuilder
from services.assignor.sticky.input import StickyInput
from tests.assignor.sticky_paths import GENERATIONS, IDS

TOPICS = ["a", "b", "c", "d"]
RACKS = ["r1", "r2", "r3"]


class NullPointer(Exception):
    """Where Kafka's ``performReassignments`` dereferences a fixed member's assignment."""


class LiteralBuilder(GeneralBuilder):
    def _is_balanced(self) -> bool:
        sizes = self.sizes
        if sizes[self.sorted.first()] >= sizes[self.sorted.last()] - 1:
            return True
        prep, owner = self.prep, self.owner
        for member in self.sorted:
            held = sizes[member]
            if held == self.max_size[member]:
                continue
            for t in self.topics_of[member]:
                start = prep.base[t]
                for g in range(start, start + prep.counts[t]):
                    other = owner[g]
                    if other != member and held + 1 < sizes[other]:
                        return False
        return True

    def _perform_reassignments(self, partitions, prev) -> bool:
        sizes, fixed = self.sizes, self.fixed
        performed = False
        modified = True
        while modified:
            modified = False
            for g in partitions:
                if self._is_balanced():
                    break
                t = self.topic_of[g]
                member = self.owner[g]
                previous = prev.get(g)
                if previous is not None and previous[0] in fixed:
                    raise NullPointer(f"the previous owner of {g} is fixed")
                if previous is not None and sizes[member] > sizes[previous[0]] + 1:
                    self._reassign(g, previous[0])
                    performed = modified = True
                    continue
                if any(sizes[member] > sizes[o] + 1 for o in self.potential[t]):
                    self._reassign(g, self._least_loaded_subscriber(t))
                    performed = modified = True
        return performed


@st.composite
def groups(draw):
    """Differing subscriptions; partitions owned by none, one or two members, in any
    order, with generations; racks for some members and partitions."""
    counts = draw(st.fixed_dictionaries({t: st.integers(0, 9) for t in TOPICS}))
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=8, unique=True))
    owned: list[list] = [[] for _ in ids]
    for t in TOPICS:
        for p in range(counts[t]):
            for owner in draw(st.lists(st.integers(-1, len(ids) - 1), min_size=1, max_size=2)):
                if owner >= 0 and (t, p) not in owned[owner]:
                    owned[owner].append((t, p))
    with_racks = draw(st.booleans())
    members = [
        {
            "id": mid,
            "topics": draw(st.lists(st.sampled_from(TOPICS), max_size=4, unique=True)),
            "owned": list(draw(st.permutations(parts))),
            "generation": draw(st.sampled_from(GENERATIONS)),
            "rack": draw(st.sampled_from([None, *RACKS])) if with_racks else None,
        }
        for mid, parts in zip(ids, owned, strict=True)
    ]
    racks = None
    if with_racks:
        racks = {
            t: [draw(st.lists(st.sampled_from(RACKS), max_size=2)) for _ in range(c)]
            for t, c in counts.items()
        }
    return counts, members, racks


def _prep(counts, members, racks):
    counts = check_partition_counts(counts)
    return StickyInput(counts, to_members(members), check_partition_racks(racks, counts))


@settings(max_examples=500, deadline=None)
@given(groups())
def test_moves_are_kafkas_moves(group):
    prep = _prep(*group)
    if prep.all_equal:
        event("identical subscriptions: not the general builder's case")
        return
    literal = LiteralBuilder(prep)
    builder = GeneralBuilder(_prep(*group))
    try:
        expected = literal.build()
    except NullPointer:
        with pytest.raises(AssignmentError, match="NullPointerException"):
            builder.build()
        event("Kafka fails")
        return
    assert builder.build() == expected
    assert builder.owner == literal.owner
    event("moved" if literal.movements.moves else "no move")


def test_a_large_uneven_group_moves_like_kafka():
    """One member on the first topic only is one short of the others; the leaver's
    partitions make the others one larger still, so partitions of the first topic move."""
    counts = {f"t{i:02d}": 123 for i in range(40)}
    topics = list(counts)
    members = [{"id": f"c{i:02d}", "topics": topics[:1] if i == 76 else topics} for i in range(77)]
    first = GeneralBuilder(_prep(counts, members, None)).build()
    for i, m in enumerate(members):
        m["owned"] = [(topics[g // 123], g % 123) for g in first[i]]
        m["generation"] = 1 + i % 2  # some previous owners from an older generation
    leave = members[1:]
    literal = LiteralBuilder(_prep(counts, leave, None))
    expected = literal.build()
    assert literal.movements.moves
    assert GeneralBuilder(_prep(counts, leave, None)).build() == expected

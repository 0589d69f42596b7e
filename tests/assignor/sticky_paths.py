"""The sticky assignors' reference path, for comparing the fast paths with it.

``general`` runs the sticky assignors as ``assign`` ran them before any fast path existed:
check every member with its owned partitions, then racks, then ``StickyInput`` resolves the
claims one by one and Kafka's builders run on integer ids. ``assign`` must return the same
assignment (same lists, same order) or raise the same error for every input, whether a
fast path runs or declines.
"""

from __future__ import annotations

from contextlib import contextmanager

from hypothesis import strategies as st

from services.assignor import assign
from services.assignor.model import (
    check_partition_counts,
    check_partition_racks,
    owned_as_sent,
    to_members,
)
from services.assignor.sticky import owned as sticky_owned
from services.assignor.sticky.assignor import assign_sticky
from services.assignor.sticky.input import StickyInput

STICKY = ["sticky", "cooperative-sticky"]
# "Aa" and "BB" (and their concatenations) share Java's String.hashCode: HashMap order ties.
IDS = ["Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa", "c1", "c2", "c10", "m-3"]
GENERATIONS = [None, -1, 1, 2, 3]
chunks_st = st.sampled_from([1, 2, 5, sticky_owned._CHUNK])


@contextmanager
def chunk_size(size: int):
    """Owned pairs are read a chunk of members at a time; small chunks cross members."""
    saved, sticky_owned._CHUNK = sticky_owned._CHUNK, size
    try:
        yield
    finally:
        sticky_owned._CHUNK = saved


def run_fast_path(fast_path, assignor, counts, members):
    """One fast path alone: its assignment, or None where it declines."""
    counts = check_partition_counts(counts)
    group = to_members(members, with_owned=False)
    prep = StickyInput(counts, group, {})
    sent = [owned_as_sent(m) for m in members]
    pairs = fast_path(prep, sent, assignor == "cooperative-sticky")
    return None if pairs is None else {m.id: p for m, p in zip(group, pairs, strict=True)}


def general(assignor, counts, members, racks=None):
    counts = check_partition_counts(counts)
    group = to_members(members)
    checked = check_partition_racks(racks, counts)
    return assign_sticky(counts, group, checked, cooperative=assignor == "cooperative-sticky")


def outcome(run, *args):
    try:
        return "ok", run(*args)
    except Exception as error:  # the two paths must raise alike
        return type(error).__name__, str(error)


def assert_same(assignor, counts, members, racks=None):
    expected = outcome(general, assignor, counts, members, racks)
    got = outcome(assign, assignor, counts, members, racks)
    assert got == expected
    if got[0] == "ok":
        for parts in got[1].values():
            assert all(
                type(tp) is tuple and type(tp[0]) is str and type(tp[1]) is int for tp in parts
            )
    return got


# Ways to spoil a plain group; each makes the fast path decline (or raise, through the
# general path's checks).
SPOILERS = [
    "claimed twice",
    "claimed twice by one member",
    "beyond the count",
    "unknown topic",
    "negative",
    "bool partition",
    "float partition",
    "list pair",
    "all list pairs",
    "tuple of pairs",
    "triple",
    "mapping pair",
    "generator",
    "bad generation",
]


class Generated(list):
    """Owned partitions to be sent as a fresh generator to each path."""


def assert_spoiled_alike(assignor, counts, members, chunk):
    """``assign`` and ``general`` give the same assignment or error; returns its kind."""
    expected = outcome(general, assignor, counts, sent_fresh(members))
    with chunk_size(chunk):
        got = outcome(assign, assignor, counts, sent_fresh(members))
    assert got == expected
    return got[0]


def sent_fresh(members):
    """The members to send, each ``Generated`` owned list as a fresh generator."""
    return [
        {**m, "owned": (tp for tp in m["owned"])} if isinstance(m["owned"], Generated) else m
        for m in members
    ]


def spoil(draw, kind, members, counts):
    """Spoil one member's owned partitions (or generation) in the way ``kind`` says."""
    i = draw(st.integers(0, len(members) - 1))
    target = members[i]
    owned = list(target["owned"])
    some = [tp for m in members for tp in m["owned"] if type(tp) is tuple]
    k = next((k for k, tp in enumerate(owned) if type(tp) is tuple and len(tp) == 2), None)
    if kind == "claimed twice" and some:
        owned.append(draw(st.sampled_from(some)))
    elif kind == "claimed twice by one member" and k is not None:
        owned.append(owned[k])
    elif kind == "beyond the count":
        topic = draw(st.sampled_from(sorted(counts)))
        owned.append((topic, counts[topic] + draw(st.integers(0, 2))))
    elif kind == "unknown topic":
        owned.append(("zz", 0))
    elif kind == "negative":
        owned.append(("a", -1))
    elif kind == "bool partition":
        owned.append(("a", True))
    elif kind == "float partition":
        owned.append(("a", 0.0))
    elif kind == "list pair" and k is not None:
        owned[k] = list(owned[k])
    elif kind == "all list pairs":
        owned = [list(tp) if type(tp) is tuple else tp for tp in owned]
    elif kind == "tuple of pairs":
        owned = tuple(owned)
    elif kind == "triple" and k is not None:
        owned[k] = (*owned[k], 0)
    elif kind == "mapping pair" and k is not None:
        owned[k] = {"topic": owned[k][0], "partition": owned[k][1]}
    elif kind == "generator":
        owned = Generated(owned)
    elif kind == "bad generation":
        target["generation"] = "3"
    target["owned"] = owned

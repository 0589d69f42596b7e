"""The sticky assignors' reference path, for comparing the fast paths with it.

``general`` runs the sticky assignors as ``assign`` ran them before any fast path existed:
check every member with its owned partitions, then racks, then ``StickyInput`` resolves the
claims one by one and Kafka's builders run on integer ids. ``assign`` must return the same
assignment (same lists, same order) or raise the same error for every input, whether a
fast path runs or declines.
"""

from __future__ import annotations

from contextlib import contextmanager

from services.assignor import assign, sticky_owned
from services.assignor.model import check_partition_counts, check_partition_racks, to_members
from services.assignor.sticky import assign_sticky

STICKY = ["sticky", "cooperative-sticky"]


@contextmanager
def chunk_size(size: int):
    """Owned pairs are read a chunk of members at a time; small chunks cross members."""
    saved, sticky_owned._CHUNK = sticky_owned._CHUNK, size
    try:
        yield
    finally:
        sticky_owned._CHUNK = saved


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

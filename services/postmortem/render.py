"""Rendering postmortem answers: aligned tables for people, JSON for scripts.

The JSON shapes are contracts (issue 5): fields may be added, never renamed.
- postmortem: {"group", "generations": [{"generation", "time", "assignor", "leader",
  "members", "joined", "left", "moves": {"actual", "from_survivors",
  "sticky_baseline", "minimum"} | null, ...}]}
- storms: [{"group", "rebalances", "start", "end"}]
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import timedelta

from services.postmortem.queries import MemberRef, Moves, Ownership, Storm, TimelineEntry
from services.postmortem.timeparse import iso

MAX_LISTED = 3
# Longest name (group, member, client id, host, assignor) a table shows in full.
NAME_WIDTH = 40
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control and format characters (C0/C1, bidi overrides, zero-width) and line/paragraph
# separators: any of them in a client id or host would break or disguise a table row.
_UNPRINTABLE = {"Cc", "Cf", "Zl", "Zp"}


def printable(text: str) -> str:
    """`text` with control and other invisible characters escaped: a newline in a client
    host shows as `\\n`, U+202E as `\\u202e`. Names come from clients (KIP-345 group
    instance ids, client ids, hosts) and are stored as they came; JSON keeps them exact."""
    if all(unicodedata.category(c) not in _UNPRINTABLE for c in text):
        return text
    return "".join(
        _ESCAPES.get(c) or (_escape(c) if unicodedata.category(c) in _UNPRINTABLE else c)
        for c in text
    )


def name(text: str | None, width: int = NAME_WIDTH) -> str:
    """A name for a table cell: printable, and cut to `width` with an ellipsis in the
    middle. The middle, because names differ at their ends: a classic member id is the
    client id and a UUID (`consumer-billing-1-3f1c...-2b3c4d5e6f70`, about 60 chars)."""
    if text is None:
        return "-"
    shown = printable(text)
    if len(shown) <= width:
        return shown
    head = (width - 1) // 2
    return f"{shown[:head]}…{shown[head + 1 - width :]}"


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; numbers right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [
        all(isinstance(row[i], int) or row[i] is None for row in rows) for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        padded = (
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        )
        return "  ".join(padded).rstrip()

    return "\n".join([line(headers), *(line(r) for r in cells)])


def duration(span: timedelta | None) -> str:
    """A short human duration: 45s, 2m05s, 1h03m, 3d04h."""
    if span is None:
        return "-"
    seconds = int(span.total_seconds())
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def timeline_json(group: str, entries: Sequence[TimelineEntry]) -> dict:
    return {"group": group, "generations": [_entry_json(e) for e in entries]}


def timeline_text(group: str, entries: Sequence[TimelineEntry]) -> str:
    rebalanced = [e.moves for e in entries if e.moves is not None]
    excess = sum(m.excess or 0 for m in rebalanced)
    summary = (
        f"group {printable(group)}: {len(entries)} generations from {iso(entries[0].time)} "
        f"to {iso(entries[-1].time)}; {len(rebalanced)} rebalances, "
        f"{sum(m.actual for m in rebalanced)} partition moves "
        f"({excess} more than the sticky baseline)"
    )
    rows = [
        (
            iso(e.time),
            e.generation,
            name(e.assignor),
            name(e.leader),
            len(e.members),
            _moves_text(e.moves),
            duration(e.since_previous),
            e.committed_progress,
            _membership_text(e.joined, e.left),
            _causes_text(e),
        )
        for e in entries
    ]
    headers = (
        "TIME",
        "GEN",
        "ASSIGNOR",
        "LEADER",
        "MEMBERS",
        "MOVES act/surv/sticky/min",
        "SINCE PREV",
        "COMMITTED",
        "JOINED (+) / LEFT (-)",
        "CAUSES (? possible)",
    )
    return f"{summary}\n\n{table(headers, rows)}{_explanations(entries)}"


def _causes_text(e: TimelineEntry) -> str:
    """The rebalance's causes, `?` after a possible one; a static member replaced
    without a rebalance as `=member`."""
    parts = [c["cause"] + ("?" if c.get("possible") else "") for c in e.causes or []]
    parts = list(dict.fromkeys(parts))
    parts += [f"={name(r['member'])}" for r in e.replaced_without_rebalance]
    return " ".join(parts)


def _explanations(entries: Sequence[TimelineEntry]) -> str:
    """One line per cause, under the table: generation, cause, explanation."""
    lines = [
        f"  gen {e.generation}: {c['cause']}{' (possible)' if c.get('possible') else ''}: "
        f"{printable(c['explanation'])}"
        for e in entries
        for c in e.causes or []
    ]
    lines += [
        f"  gen {e.generation}: {printable(r['member'])} rejoined as "
        f"{printable(r['new_member_id'])} without a rebalance (static membership)"
        for e in entries
        for r in e.replaced_without_rebalance
    ]
    return "\n\nwhy:\n" + "\n".join(lines) if lines else ""


def owners_json(found: Sequence[Ownership]) -> list[dict]:
    return [
        {
            "group": o.group,
            "topic": o.topic,
            "partition": o.partition,
            "member": o.member,
            "member_id": o.member_id,
            "group_instance_id": o.group_instance_id,
            "client_id": o.client_id,
            "host": o.host,
            "generation": o.generation,
            "from": iso(o.valid_from),
            "until": iso(o.valid_until),
        }
        for o in found
    ]


def owners_text(found: Sequence[Ownership]) -> str:
    headers = ("GROUP", "MEMBER", "CLIENT ID", "HOST", "GEN", "FROM", "UNTIL")
    rows = [
        (
            name(o.group),
            name(o.member),
            name(o.client_id),
            name(o.host),
            o.generation,
            iso(o.valid_from),
            iso(o.valid_until) or "(latest)",
        )
        for o in found
    ]
    return table(headers, rows)


def storms_json(found: Sequence[Storm]) -> list[dict]:
    return [
        {"group": s.group, "rebalances": s.rebalances, "start": iso(s.start), "end": iso(s.end)}
        for s in found
    ]


def storms_text(found: Sequence[Storm]) -> str:
    """The storms as a table, or "" when there were none."""
    if not found:
        return ""
    headers = ("GROUP", "REBALANCES", "START", "END", "DURATION")
    rows = [
        (name(s.group), s.rebalances, iso(s.start), iso(s.end), duration(s.end - s.start))
        for s in found
    ]
    return table(headers, rows)


def _entry_json(e: TimelineEntry) -> dict:
    return {
        "generation": e.generation,
        "time": iso(e.time),
        "assignor": e.assignor,
        "leader": e.leader,
        "members": e.members,
        "joined": [m.member for m in e.joined],
        "left": [m.member for m in e.left],
        "moves": _moves_json(e.moves),
        "joined_members": [_member_json(m) for m in e.joined],
        "left_members": [_member_json(m) for m in e.left],
        "since_previous_seconds": (
            None if e.since_previous is None else e.since_previous.total_seconds()
        ),
        "committed_progress": e.committed_progress,
        **({"causes": e.causes} if e.moves is not None else {}),
        "replaced_without_rebalance": e.replaced_without_rebalance,
    }


def _moves_json(moves: Moves | None) -> dict | None:
    if moves is None:
        return None
    return {
        "actual": moves.actual,
        "from_survivors": moves.from_survivors,
        "sticky_baseline": moves.sticky_baseline,
        "minimum": moves.minimum,
        "excess": moves.excess,
        "baseline_assignor": moves.baseline_assignor,
        "revoked": moves.revoked,
        "newly_assigned": moves.newly_assigned,
        "cooperative_episode": moves.cooperative_episode,
    }


def _member_json(m: MemberRef) -> dict:
    return {"member": m.member, "member_id": m.member_id, "client_id": m.client_id, "host": m.host}


def _moves_text(moves: Moves | None) -> str:
    if moves is None:
        return "(first seen)"
    parts = (moves.actual, moves.from_survivors, moves.sticky_baseline, moves.minimum)
    text = "/".join("?" if p is None else str(p) for p in parts)
    return f"{text} coop" if moves.cooperative_episode else text


def _membership_text(joined: Sequence[MemberRef], left: Sequence[MemberRef]) -> str:
    """`+c-2 (app@/10.0.0.2) -c-1 (app@/10.0.0.1)`, at most a few of each."""
    parts: list[str] = []
    for sign, members in (("+", joined), ("-", left)):
        shown = [
            f"{sign}{name(m.member)} ({name(m.client_id or '?')}@{name(m.host or '?')})"
            for m in members
        ]
        if len(shown) > MAX_LISTED:
            shown = [*shown[:MAX_LISTED], f"{sign}{len(members) - MAX_LISTED} more"]
        parts.extend(shown)
    return " ".join(parts)


def _cell(value: object) -> str:
    return "-" if value is None else printable(str(value))

"""Rendering postmortem answers: aligned tables for people, JSON for scripts.

The JSON shapes are contracts (issue 5): fields may be added, never renamed.
- postmortem: {"group", "generations": [{"generation", "time", "assignor", "leader",
  "members", "joined", "left", "moves": {"actual", "from_survivors",
  "sticky_baseline", "minimum"} | null, ..., and for rebalances "causes" and
  "commit_gap": {"partitions", "waiting", "max_seconds", "median_seconds"} | null}]}
- storms: [{"cluster", "group", "rebalances", "start", "end"}]; owner: [{"cluster", "group",
  "topic", "partition", "member", ...}]; postmortem also carries its "cluster"

The postmortem table fits a terminal of `WIDTH` columns by default: times to the second,
members by a short unique form (`short_members`), long join/leave lists as counts;
`wide=True` (`--wide`) shows everything, as the JSON does.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from services.postmortem.queries import (
    CommitGap,
    MemberRef,
    Moves,
    Ownership,
    Storm,
    TimelineEntry,
)
from services.postmortem.timeparse import iso

# The terminal width the default postmortem table fits.
WIDTH = 120
# A short member form: the client id cut to this, then `#` and a suffix of the member id
# at least SUFFIX long (longer where needed to tell members apart).
CLIENT_WIDTH = 14
SUFFIX = 4
SHORT_WIDTH = CLIENT_WIDTH + 1 + SUFFIX
# Widest CAUSES cell of the default table ("restart session_timeout?"), and the least it
# gets when the other columns are wide ("session_timeout +2").
CAUSES_WIDTH = 24
MIN_CAUSES_WIDTH = 18
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


def timeline_json(group: str, entries: Sequence[TimelineEntry], cluster: str | None = None) -> dict:
    """The timeline for scripts; `cluster` (added with migration 0010) says whose."""
    answer = {"group": group, "generations": [_entry_json(e) for e in entries]}
    return answer if cluster is None else {"cluster": cluster, **answer}


def seconds(moment: datetime) -> str:
    """A time to the second, UTC: 2026-03-01T03:12:07Z."""
    return f"{moment.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def short_client(client_id: str | None, group: str) -> str:
    """A client id in a few characters: the Java consumer's default
    `consumer-<group>-<n>` as `consumer-<n>`, others cut in the middle."""
    if client_id is None:
        return "?"
    default = f"consumer-{group}-"
    if client_id.startswith(default) and len(client_id) > len(default):
        client_id = "consumer-" + client_id[len(default) :]
    return name(client_id, CLIENT_WIDTH)


def short_members(members: Iterable[MemberRef], group: str) -> dict[str, str]:
    """member id -> a short form unique among `members`: a static member's group instance
    id (cut in the middle), a member id of at most SHORT_WIDTH characters as it is, else
    the client id (short_client) and `#` with the member id's last SUFFIX characters,
    more where two members would otherwise look alike."""
    refs = {m.member_id: m for m in members}
    for length in range(SUFFIX, max((len(i) for i in refs), default=0) + 1):
        labels = {
            member_id: (
                name(m.member, SHORT_WIDTH)
                if m.member != member_id or len(member_id) <= SHORT_WIDTH
                else f"{short_client(m.client_id, group)}#{printable(member_id[-length:])}"
            )
            for member_id, m in refs.items()
        }
        # A static member restarted has a new member id but the same identity and label.
        if len(set(labels.values())) == len({m.member for m in refs.values()}):
            return labels
    return {member_id: printable(member_id) for member_id in refs}


def timeline_text(group: str, entries: Sequence[TimelineEntry], wide: bool = False) -> str:
    """The timeline as a summary and a table: one that fits WIDTH columns, or with every
    detail when `wide`."""
    rebalanced = [e.moves for e in entries if e.moves is not None]
    excess = sum(m.excess or 0 for m in rebalanced)
    moves = (
        f"{len(rebalanced)} rebalances ({sum(m.disruptive for m in rebalanced)} disruptive), "
        f"{sum(m.actual for m in rebalanced)} partition moves "
        f"({excess} more than the sticky baseline)"
    )
    if not wide:
        assignors = list(dict.fromkeys(name(e.assignor, 24) for e in entries))
        summary = (
            f"group {name(group)}: {len(entries)} generations, {seconds(entries[0].time)} "
            f"to {seconds(entries[-1].time)}; assignor {', '.join(assignors[:3])}"
            f"{' ...' if len(assignors) > 3 else ''}\n{moves}"
        )
        notes = []
        if any(e.causes or e.replaced_without_rebalance for e in entries):
            notes.append(
                "CAUSES: ? after a possible cause (+2?: two more possible), =member: a static "
                "member replaced\nwithout a rebalance; --wide or --json explains each."
            )
        if any(e.gap is not None for e in entries):
            notes.append(
                "GAP: the longest a moved partition went without an offset commit "
                "(+: some have not committed since)."
            )
        hint = "\n\n" + "\n".join(notes) if notes else ""
        return f"{summary}\n\n{_compact_table(group, entries)}{hint}"
    summary = (
        f"group {printable(group)}: {len(entries)} generations from {iso(entries[0].time)} "
        f"to {iso(entries[-1].time)}; {moves}"
    )
    rows = [
        (
            iso(e.time),
            e.generation,
            printable(e.assignor or "-"),
            printable(e.leader or "-"),
            len(e.members),
            _moves_text(e.moves),
            _disrupts(e.moves),
            duration(e.since_previous),
            e.committed_progress,
            _gap_text(e.gap),
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
        "DISRUPTS",
        "SINCE PREV",
        "COMMITTED",
        "COMMIT GAP max/median",
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


def _causes_short(e: TimelineEntry, width: int) -> str:
    """The causes in at most `width` characters: settled causes, then possible ones with
    `?`, then static members replaced without a rebalance (`=member`); when that is too
    long, the possible ones and the replacements as counts (`restart +2?`, `3 possible`,
    `=2`), else the first cause and how many more (`session_timeout +2`). `-`: none."""
    causes = e.causes or []
    settled = list(dict.fromkeys(c["cause"] for c in causes if not c.get("possible")))
    possible = [
        c
        for c in dict.fromkeys(c["cause"] for c in causes if c.get("possible"))
        if c not in settled
    ]
    replaced = [f"={name(r['member'], SHORT_WIDTH)}" for r in e.replaced_without_rebalance]
    counted = [
        *settled,
        *((f"+{len(possible)}?" if settled else f"{len(possible)} possible",) if possible else ()),
        *((f"={len(replaced)}",) if replaced else ()),
    ]
    full = [*settled, *(f"{c}?" for c in possible), *replaced]
    first = [*full[:1], f"+{len(full) - 1}"] if len(full) > 1 else full
    for parts in (full, counted, first):
        text = " ".join(parts)
        if len(text) <= width:
            return text or "-"
    return name(text, width)


def _possible_count(settled: list[str], possible: list[str]) -> list[str]:
    if not possible:
        return []
    return [f"{'+' if settled else ''}{len(possible)} possible"]


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


COMPACT_HEADERS = (
    "TIME",
    "GEN",
    "MEMBERS",
    "MOVES a/s/b/m",
    "DISRUPTS",
    "SINCE",
    "COMMITTED",
    "GAP",
    "CAUSES",
    "JOINED (+) / LEFT (-)",
)


def _compact_table(group: str, entries: Sequence[TimelineEntry]) -> str:
    """The timeline table in WIDTH columns: the last column, who joined and left, gets
    what the others leave, and says how many when the members do not fit. GAP only
    where some rebalance has a measured cost (none is stored before 0008)."""
    labels = short_members((m for e in entries for m in (*e.joined, *e.left)), group)
    gaps = any(e.gap is not None for e in entries)
    headers = [h for h in COMPACT_HEADERS if gaps or h != "GAP"]
    rows = [
        [
            seconds(e.time),
            e.generation,
            len(e.members),
            _moves_text(e.moves),
            _disrupts(e.moves),
            duration(e.since_previous),
            e.committed_progress,
            *((_gap_short(e.gap),) if gaps else ()),
        ]
        for e in entries
    ]
    widths = [max(len(_cell(r[i])) for r in rows) for i in range(len(rows[0]))]
    used = sum(max(w, len(h)) for w, h in zip(widths, headers[:-2], strict=True))
    # What the two last columns share: CAUSES takes up to CAUSES_WIDTH of it, leaving
    # JOINED / LEFT at least its header's width.
    room = WIDTH - used - 2 * (len(headers) - 1)
    causes_width = min(CAUSES_WIDTH, max(room - len(headers[-1]), MIN_CAUSES_WIDTH))
    for row, e in zip(rows, entries, strict=True):
        row.append(_causes_short(e, causes_width))
    causes_used = max(len(headers[-2]), *(len(str(r[-1])) for r in rows))
    budget = max(room - causes_used, len("+999 -999"))
    for row, e in zip(rows, entries, strict=True):
        row.append(_membership_short(e.joined, e.left, labels, budget))
    return table(headers, rows)


def _membership_short(
    joined: Sequence[MemberRef], left: Sequence[MemberRef], labels: dict[str, str], budget: int
) -> str:
    """`+consumer-1#3f1c -consumer-1#9a0b`, or when that is longer than `budget` the
    counts with the clients if they fit: `+3 -3 (consumer-1, consumer-2)`, `+3 -3`."""
    shown = [labels[m.member_id] for m in (*joined, *left)]
    listed = " ".join(
        [f"+{s}" for s in shown[: len(joined)]] + [f"-{s}" for s in shown[len(joined) :]]
    )
    if len(listed) <= budget:
        return listed
    counts = " ".join(f"{sign}{len(ms)}" for sign, ms in (("+", joined), ("-", left)) if ms)
    clients = f"{counts} ({', '.join(dict.fromkeys(s.split('#')[0] for s in shown))})"
    return clients if len(clients) <= budget else counts


def _gap_short(gap: CommitGap | None) -> str:
    """The longest commit gap, `+` when moved partitions still wait for their first
    commit (`wait` when none has committed yet); `-` when nothing was measured."""
    if gap is None or (gap.longest is None and not gap.waiting):
        return "-"
    if gap.longest is None:
        return "wait"
    return duration(gap.longest) + ("+" if gap.waiting else "")


def _gap_text(gap: CommitGap | None) -> str:
    """`53s/48s (9)`, `53s/48s (9, 2 waiting)`: longest/median over the measured."""
    if gap is None or (gap.longest is None and not gap.waiting):
        return "-"
    waiting = f", {gap.waiting} waiting" if gap.waiting else ""
    return f"{duration(gap.longest)}/{duration(gap.median)} ({gap.partitions}{waiting})"


def _gap_json(gap: CommitGap | None) -> dict | None:
    if gap is None:
        return None
    return {
        "partitions": gap.partitions,
        "waiting": gap.waiting,
        "max_seconds": None if gap.longest is None else gap.longest.total_seconds(),
        "median_seconds": None if gap.median is None else gap.median.total_seconds(),
    }


def _disrupts(moves: Moves | None) -> str:
    if moves is None:
        return "-"
    return "yes" if moves.disruptive else "no"


def owners_json(found: Sequence[Ownership], cluster: str | None = None) -> list[dict]:
    """The owners for scripts; `cluster` (added with migration 0010) says whose."""
    return [
        {
            **({} if cluster is None else {"cluster": cluster}),
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


def storms_json(found: Sequence[Storm], cluster: str | None = None) -> list[dict]:
    """The storms for scripts; `cluster` (added with migration 0010) says whose."""
    return [
        {
            **({} if cluster is None else {"cluster": cluster}),
            "group": s.group,
            "rebalances": s.rebalances,
            "start": iso(s.start),
            "end": iso(s.end),
        }
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
        **({"causes": e.causes, "commit_gap": _gap_json(e.gap)} if e.moves is not None else {}),
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
        "disruptive": moves.disruptive,
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
    """`+c-2 (app@/10.0.0.2) -c-1 (app@/10.0.0.1)`: every member, names in full."""
    return " ".join(
        f"{sign}{printable(m.member)} ({printable(m.client_id or '?')}@{printable(m.host or '?')})"
        for sign, members in (("+", joined), ("-", left))
        for m in members
    )


def _cell(value: object) -> str:
    return "-" if value is None else printable(str(value))

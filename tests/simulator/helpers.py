"""Run scenarios into temporary replay directories and read everything back."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.codec import decode_record
from services.simulator import Params, build, read_replay, run_scenario


@dataclass
class Run:
    out: Path
    specs: list
    summary: dict
    rows: list[dict]
    truth: dict[str, list[dict]] = field(default_factory=dict)

    def decoded(self) -> list[tuple[dict, dict]]:
        """(row, decoded record) for every row, in log order."""
        return [(row, decode_record(row["key"], row["value"])) for row in self.rows]

    def group_records(self, group: str, record_type: str | None = None) -> list[tuple[dict, dict]]:
        found = []
        for row, rec in self.decoded():
            key = rec["key"]
            if key.get("group", key.get("group_id")) != group:
                continue
            if record_type is None or rec["record_type"] == record_type:
                found.append((row, rec))
        return found

    def events(self, group: str, kind: str | None = None) -> list[dict]:
        return [
            e for e in self.truth["events"] if e["group"] == group and kind in (None, e["kind"])
        ]

    def spec(self, group: str):
        return next(s for s in self.specs if s.name == group)


def run(
    out: Path,
    scenario: str,
    seed: int = 1,
    fmt: str = "jsonl",
    groups: int | None = None,
    duration_ms: int | None = None,
    rows_per_file: int = 200_000,
    **settings: Any,
) -> Run:
    summary = run_scenario(scenario, out, seed, duration_ms, groups, fmt, rows_per_file, **settings)
    specs, _ = build(scenario.split(","), Params({k: str(v) for k, v in settings.items()}), groups)
    result = Run(out, specs, summary, read_replay(out))
    for name in ("events", "generations", "rebalances", "commits", "aborted", "gaps"):
        with open(out / "truth" / f"{name}.jsonl", encoding="utf-8") as lines:
            result.truth[name] = [json.loads(line) for line in lines]
    return result


def by_partition(rows: list[dict]) -> dict[int, list[dict]]:
    grouped: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        grouped[row["partition"]].append(row)
    return grouped

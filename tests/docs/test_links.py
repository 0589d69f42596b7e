"""Every relative link in README.md and docs/ leads to a file of the repository and, with
an anchor, to a heading of that file (GitHub's anchors) or an explicit `<a id>`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    headings = {anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    return headings | set(re.findall(r'<a id="([\w-]+)"></a>', text))


def links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists() or not dest.is_relative_to(ROOT):
                broken.append(f"{page.name}: {target}")
            elif fragment and fragment not in anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_anchor_rule_matches_githubs() -> None:
    assert anchor("docker compose: the production-like stack") == (
        "docker-compose-the-production-like-stack"
    )
    assert anchor("`groupscope exporter`") == "groupscope-exporter"
    assert anchor("The store's contract") == "the-stores-contract"

"""The generated pages and their paths under the repository."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from services.docgen import configuration_page, environment, flags, metrics_page

ROOT = environment.ROOT

PAGES: dict[str, Callable[[], str]] = {
    "docs/metrics.md": metrics_page.render,
    "docs/configuration.md": configuration_page.render,
}


def undocumented() -> list[str]:
    """GROUPSCOPE_* names in the code that are neither a flag's variable nor listed in
    `environment.VARIABLES`, and names listed there that the code no longer mentions."""
    mentioned = environment.mentioned()
    bound = {v for c in flags.commands(mentioned) for f in c.flags for v in f.variables}
    listed = {v.name for v in environment.VARIABLES}
    problems = [
        f"{n}: read in {', '.join(w)}, documented nowhere"
        for n, w in mentioned.items()
        if n not in bound | listed
    ]
    problems += [f"{n}: documented, but no code reads it" for n in sorted(listed - set(mentioned))]
    return problems


def stale() -> list[str]:
    """The pages whose committed text differs from what the code generates."""
    return [path for path, render in PAGES.items() if _read(ROOT / path) != render()]


def write() -> list[str]:
    """Write every page; return the paths that changed."""
    changed = stale()
    for path in changed:
        (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / path).write_text(PAGES[path]())
    return changed


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None

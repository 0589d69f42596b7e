"""Which schema revision the store is at, and the code's: without importing Alembic.

Every query command checks the revision first (a store an upgrade behind fails with
"run 'groupscope db upgrade' first" instead of a SQL error), and importing Alembic for
that costs about 0.13 s of a command that should answer in well under a second. The
head is read from the migration files' `revision` and `down_revision` lines (the one
revision no other revises); tests/store/test_revision.py checks it against Alembic's own
`ScriptDirectory.get_current_head()`. Migrations themselves go through
`services.store.migrate` (Alembic).
"""

from __future__ import annotations

import re
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from sqlalchemy import Engine, text

from services.store.errors import SchemaOutdatedError

_REVISION = re.compile(r'^(down_revision|revision)\b[^=]*=\s*(?:"([^"]*)"|None)', re.M)


def migrations_dir() -> Path:
    """The folder holding env.py, found through the import system so that it works
    from a wheel, an editable install or a source checkout alike."""
    spec = find_spec("migrations.env")
    if spec is None or spec.origin is None:
        raise RuntimeError("the groupscope 'migrations' package is not installed")
    return Path(spec.origin).parent


@cache
def head_revision() -> str:
    """The latest migration's revision id."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in sorted((migrations_dir() / "versions").glob("[0-9]*.py")):
        found = dict((key, value) for key, value in _REVISION.findall(path.read_text()))
        if not found.get("revision"):
            raise RuntimeError(f"{path} names no revision")
        revisions.add(found["revision"])
        if found.get("down_revision"):
            revised.add(found["down_revision"])
    heads = revisions - revised
    if len(heads) != 1:
        raise RuntimeError(f"the migrations in {migrations_dir()} have heads {sorted(heads)}")
    return heads.pop()


def current_revision(engine: Engine) -> str | None:
    """The revision the store is at (Alembic's `alembic_version` table); None before
    the first upgrade."""
    with engine.connect() as conn:
        if conn.execute(text("SELECT to_regclass('alembic_version')")).scalar() is None:
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def require_head(engine: Engine) -> None:
    """Fail clearly when the database lacks the latest schema, instead of a SQL error later."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        state = f"is at revision {current}" if current else "has no groupscope schema"
        raise SchemaOutdatedError(
            f"the database {state}, not {head}; run 'groupscope db upgrade' first"
        )

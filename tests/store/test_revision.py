"""The head revision read from the migration files is Alembic's own."""

from __future__ import annotations

import subprocess
import sys

from alembic.script import ScriptDirectory

from services.store.migrate import MIGRATIONS_DIR
from services.store.revision import head_revision


def test_the_head_is_alembics() -> None:
    assert head_revision() == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def test_the_revision_check_does_not_import_alembic() -> None:
    probe = (
        "import sys\n"
        "from services.store.revision import head_revision\n"
        "head_revision()\n"
        "print('alembic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

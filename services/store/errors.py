"""Errors the store raises, so callers can tell "try again later" from "this is wrong"."""

from __future__ import annotations


def first_line(exc: BaseException) -> str:
    """The first line of what the database (or the driver) said: the driver's own error
    inside SQLAlchemy's wrapper, else the exception itself; its class name when empty."""
    orig = getattr(exc, "orig", None)  # sqlalchemy.exc.DBAPIError wraps the driver's
    cause = orig if isinstance(orig, BaseException) else exc
    return (str(cause).strip().splitlines() or [type(cause).__name__])[0]


class StoreError(Exception):
    """Base class of the store's errors."""


class StoreUnavailableError(StoreError):
    """The database could not be reached or went away mid-transaction.

    Nothing of the failed transaction was kept. Retrying later is the right response;
    the caller must not advance its own position until a retry succeeds.
    """


class BatchRejectedError(StoreError):
    """The database refused the batch's data (a constraint or type error).

    Nothing of the batch was kept. Retrying the same batch will fail the same way.
    """


class UnsupportedServerError(StoreError):
    """The server is older than PostgreSQL 14."""


class SchemaOutdatedError(StoreError):
    """The database is not at the latest migration; `groupscope db upgrade` fixes it."""


class ClusterChoiceError(ValueError):
    """No valid cluster, or no single cluster, to work on: bad input (exit status 2;
    `services.store.clusters`)."""

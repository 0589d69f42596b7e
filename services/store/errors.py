"""Errors the store raises, so callers can tell "try again later" from "this is wrong"."""

from __future__ import annotations


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

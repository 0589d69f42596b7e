"""The history store: PostgreSQL through SQLAlchemy 2 and Alembic, embedded by default.

- `batch`: the `BatchWrite` the streaming job hands over once per micro-batch (the contract).
- `repository`: `HistoryStore.write_batch`, one transaction per batch, idempotent;
  `staging`: the COPY targets it fills.
- `sanitize`: strings made storable (no U+0000, keys short enough for an index), each
  change a `Repair`; `isolate`: the records to blame for a rejected batch.
- `retry`: `RetryPolicy`, exponential backoff for `StoreUnavailableError` (`errors`).
- `snapshots`: each live group's latest generation, where the streaming job resumes.
- `models`: the tables; `migrations/` builds them, plus the postmortem views.
- `database`, `embedded`: choosing the database; the embedded server under `.groupscope/pg`.
- `migrate`: Alembic configured in code; `commands`: `groupscope db upgrade` and `db psql`;
  `options`: the `--database-url` option every store-backed command shares.

This package imports nothing heavy at import time, so command registration stays fast.
"""

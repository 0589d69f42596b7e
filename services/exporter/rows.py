"""`RowIndex`: stable int64 keys to rows of the exporter's per-partition arrays.

The exporter keeps state per partition across refreshes (the log-end history, the lag
status windows) in numpy arrays whose rows never move; a refresh finds each partition's
row by binary search over the sorted keys, for 500,000 partitions in a few
milliseconds, with no Python object per partition.
"""

from __future__ import annotations

import numpy as np


class RowIndex:
    """Sorted keys and the row each key was given, in order of arrival."""

    def __init__(self) -> None:
        self.sorted_keys = np.zeros(0, np.int64)
        self.sorted_rows = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.sorted_keys)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """Row per key, -1 where the key was never added."""
        if not len(self.sorted_keys):
            return np.full(len(keys), -1, np.int64)
        at = np.searchsorted(self.sorted_keys, keys).clip(0, len(self.sorted_keys) - 1)
        return np.where(self.sorted_keys[at] == keys, self.sorted_rows[at], -1)

    def add(self, keys: np.ndarray) -> np.ndarray:
        """Give new (distinct, absent) `keys` the next rows; returns those rows."""
        start = len(self.sorted_keys)
        rows = np.arange(start, start + len(keys))
        merged = np.concatenate([self.sorted_keys, keys])
        order = np.argsort(merged, kind="stable")
        self.sorted_keys = merged[order]
        self.sorted_rows = np.concatenate([self.sorted_rows, rows])[order]
        return rows


def extend(array: np.ndarray, rows: int) -> np.ndarray:
    """`array` with `rows` more (uninitialized) rows; one allocation."""
    out = np.empty((len(array) + rows, *array.shape[1:]), array.dtype)
    out[: len(array)] = array
    return out

"""Python's cyclic garbage collector, paused while the driver handles a batch.

At 100,000 groups the tracker's state is millions of long-lived objects, and a batch's
rows (hundreds of thousands of dicts and commits that live until the batch is written,
and the JSON of the tracker's saved state) outlive the young generations and set off
full collections over all of them: 13% of the driver's time in a fleet batch, and
1.5-3 s more for a 1.3 s save of the tracker's state (docs/performance.md, "A fleet of
100,000 groups"). A batch makes no garbage that waits for the collector (no cycles of
any size); collections resume when it is done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic collection inside the block; the collector's state is restored after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

"""The generation tracker: group records in log order -> store generations with churn.

Pure Python (codec dicts in, store dataclasses out, no I/O), so it runs on the Spark
driver and is tested without Spark. Like Kafka's `GroupCoordinatorShard.replay`, which
hands each record to `GroupMetadataManager.replay` or `OffsetMetadataManager.replay`, a
dispatcher (`dispatch`) maps each record type to one handler (`classic`, `consumer`) and
counts the types it has none for. Modules:

* `model`: the tracker's state types (`Position`, `Snapshot`, `Kip848State`) and times;
* `tracker`: `GenerationTracker`, the state kept between records and what it emits;
* `dispatch`: record type -> handler; unknown types are counted, not dropped silently;
* `classic`, `consumer`: one handler per record type of classic and KIP-848 groups;
* `churn`: a rebalance's moves, the assignor's baseline and the minimum;
* `state`: the tracker's saved state as JSON-ready data (the job writes the files).

Semantics follow docs/architecture.md, "Generations" and "Churn".
"""

from services.tracker.model import Position, Snapshot
from services.tracker.tracker import GenerationTracker

__all__ = ["GenerationTracker", "Position", "Snapshot"]

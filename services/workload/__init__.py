"""A workload of real consumer groups, so that there are real rebalances to watch.

`groupscope workload` creates a few topics, produces a steady trickle of messages, and
runs consumer groups (one process per member, confluent-kafka) with different assignors.
On a schedule it scales the groups up and down, restarts members and runs short
crash-loop episodes, so that `__consumer_offsets` fills with real generations.

Modules, one job each:

- `config`: what to run (`WorkloadConfig`, `GroupSpec`, the default groups).
- `topics`: create the topics if missing.
- `producer`: the steady trickle of messages (a thread).
- `member`: one consumer group member, the body of a child process.
- `fleet`: the parent's handles on members and groups; scale, restart, crash.
- `events`: the thread that reads what the members report.
- `schedule`: the steps (scale-up, restart, crash-loop, scale-down) and their order.
- `runner`: `run_workload(config) -> WorkloadSummary`, the whole run.
- `summary`: the run's counters and their one-line rendering.
- `commands`: the `groupscope workload` command.

The package imports nothing at import time, so that `groupscope --help` stays fast:
`from services.workload.runner import run_workload`.
"""

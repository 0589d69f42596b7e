"""A group coordinator simulator that writes exactly what Kafka writes.

Scenarios (`services.simulator.scenarios`) drive classic groups (`classic.py`: the
JoinGroup/SyncGroup state machine with range, roundrobin, sticky or cooperative-sticky)
and KIP-848 consumer groups (`consumer.py`) on a simulated or wall clock. Every record the
coordinator would append to `__consumer_offsets` goes, byte for byte, to the group's
partition `partition_for(group, 50)` of a sink: a replay directory (`replay.py`) or a
topic on a Kafka-protocol broker (`kafka_sink.py`). The ground truth of what happened is
written beside the replay directory (`truth.py`, which documents its files).

    from services.simulator import run_scenario
    run_scenario("crash-loop,kip848", "out/", seed=1, fmt="jsonl", members="6")

    # or, step by step:
    from services.simulator import ReplayDirectory, build, simulate, Params
    specs, duration = build(["crash-loop"], Params(), None)
    simulate(specs, ReplayDirectory("out"), "out", duration, seed=1)

Replay directory (read by the streaming job): see `replay.py` for the exact contract.
"""

from services.simulator.model import Action, GroupSpec
from services.simulator.params import ParamError, Params, parse_duration
from services.simulator.replay import ReplayDirectory, read_replay
from services.simulator.runner import run_scenario, simulate
from services.simulator.scenarios import SCENARIOS, build

__all__ = [
    "SCENARIOS",
    "Action",
    "GroupSpec",
    "ParamError",
    "Params",
    "ReplayDirectory",
    "build",
    "parse_duration",
    "read_replay",
    "run_scenario",
    "simulate",
]

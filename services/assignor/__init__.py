"""Kafka's partition assignors, reproduced exactly, and the churn math built on them.

``assign`` runs one of Kafka's assignors on a group; ``moves`` and ``minimum_moves``
measure a rebalance. Pure Python, no I/O.
"""

from __future__ import annotations

from services.assignor.api import ASSIGNORS, assign
from services.assignor.churn import Moves, minimum_moves, moves
from services.assignor.model import AssignmentError, PartitionAssignorError

__all__ = [
    "ASSIGNORS",
    "AssignmentError",
    "Moves",
    "PartitionAssignorError",
    "assign",
    "minimum_moves",
    "moves",
]

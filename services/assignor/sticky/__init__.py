"""``sticky`` and ``cooperative-sticky``: Kafka's ``AbstractStickyAssignor`` and its users.

``assignor`` is the entry (``StickyAssignor``, ``CooperativeStickyAssignor``);
``input`` is what ``assignPartitions`` computes before choosing a builder;
``constrained`` is ``ConstrainedAssignmentBuilder`` (all subscriptions equal);
``general`` is ``GeneralAssignmentBuilder`` (subscriptions differ), with its bookkeeping
(``structures``), its subscriber lookups (``subscriptions``) and its moves (``moves``:
``isBalanced``, ``performReassignments``); ``cooperative`` holds back partitions that
change owner. ``owned``, ``fast`` and ``general_fast`` are the fast paths for owned
partitions re-sent as plain pairs; they return Kafka's assignment or decline.
"""

"""The server-side (KIP-848) assignors of ``org.apache.kafka.coordinator.group.assignor``.

``uniform`` is ``UniformAssignor``, with ``UniformHomogeneousAssignmentBuilder``
(``uniform_homogeneous``) and ``UniformHeterogeneousAssignmentBuilder``
(``uniform_heterogeneous``); ``range`` is the coordinator's ``RangeAssignor``
(``server-range``); ``common`` is the input handling they share.
"""

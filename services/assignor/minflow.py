"""A small min-cost flow (successive shortest paths, Bellman-Ford queue), integer costs.

Used by the churn math on aggregated graphs: nodes are groups of partitions, topics and
members, so they stay small even when groups have many partitions.
"""

from __future__ import annotations

from collections import deque

INFINITY = float("inf")


class MinCostFlow:
    def __init__(self, nodes: int) -> None:
        self._edges: list[list[list[int]]] = [[] for _ in range(nodes)]

    def add_edge(self, source: int, target: int, capacity: int, cost: int) -> None:
        forward = [target, capacity, cost, len(self._edges[target])]
        backward = [source, 0, -cost, len(self._edges[source])]
        self._edges[source].append(forward)
        self._edges[target].append(backward)

    def run(self, source: int, sink: int, limit: int) -> tuple[int, int]:
        """Push up to ``limit`` units as cheaply as possible; returns (flow, cost)."""
        edges = self._edges
        flow = cost = 0
        while flow < limit:
            distance = [INFINITY] * len(edges)
            via: list[tuple[int, int] | None] = [None] * len(edges)
            distance[source] = 0
            queue, queued = deque([source]), {source}
            while queue:
                node = queue.popleft()
                queued.discard(node)
                for index, (target, capacity, price, _) in enumerate(edges[node]):
                    if capacity > 0 and distance[node] + price < distance[target]:
                        distance[target] = distance[node] + price
                        via[target] = (node, index)
                        if target not in queued:
                            queued.add(target)
                            queue.append(target)
            if distance[sink] == INFINITY:
                break
            push, node = limit - flow, sink
            while node != source:
                parent, index = via[node]
                push = min(push, edges[parent][index][1])
                node = parent
            node = sink
            while node != source:
                parent, index = via[node]
                edge = edges[parent][index]
                edge[1] -= push
                edges[node][edge[3]][1] += push
                node = parent
            flow += push
            cost += push * int(distance[sink])
        return flow, cost

"""Min-cost flow by the primal-dual method: Dijkstra on reduced costs, then a Dinic
blocking flow over the zero-reduced-cost edges, phase after phase.

Used by the churn math on aggregated graphs (groups of partitions, topics, members) whose
costs are 0 or 1, so there are few phases and each one pushes many units at once.
"""

from __future__ import annotations

import heapq
from collections import deque

INFINITY = float("inf")


class MinCostFlow:
    def __init__(self, nodes: int) -> None:
        # Each edge is [target, capacity, cost, index of the reverse edge].
        self._edges: list[list[list[int]]] = [[] for _ in range(nodes)]

    def add_edge(self, source: int, target: int, capacity: int, cost: int) -> None:
        """Add an edge; costs must not be negative."""
        self._edges[source].append([target, capacity, cost, len(self._edges[target])])
        self._edges[target].append([source, 0, -cost, len(self._edges[source]) - 1])

    def run(self, source: int, sink: int, limit: int) -> tuple[int, int]:
        """Push up to ``limit`` units as cheaply as possible; returns (flow, cost)."""
        potential = [0] * len(self._edges)
        flow = cost = 0
        while flow < limit:
            distance = self._distances(source, potential)
            if distance[sink] == INFINITY:
                break
            # Unreached nodes take the largest finite distance, which keeps every reduced
            # cost non-negative for the next phase.
            farthest = max(d for d in distance if d != INFINITY)
            for node, d in enumerate(distance):
                potential[node] += int(farthest if d == INFINITY else d)  # finite: an int
            pushed = self._blocking_flows(source, sink, potential, limit - flow)
            flow += pushed
            cost += pushed * (potential[sink] - potential[source])
        return flow, cost

    def _distances(self, source: int, potential: list[int]) -> list[float]:
        """Dijkstra over residual edges with reduced costs (never negative)."""
        distance = [INFINITY] * len(self._edges)
        distance[source] = 0
        heap = [(0, source)]
        while heap:
            d, node = heapq.heappop(heap)
            if d > distance[node]:
                continue
            for target, capacity, price, _ in self._edges[node]:
                if capacity > 0:
                    candidate = d + price + potential[node] - potential[target]
                    if candidate < distance[target]:
                        distance[target] = candidate
                        heapq.heappush(heap, (candidate, target))
        return distance

    def _blocking_flows(self, source: int, sink: int, potential: list[int], limit: int) -> int:
        """Max flow (Dinic) restricted to edges whose reduced cost is zero."""
        edges = self._edges
        total = 0
        while total < limit:
            level = [-1] * len(edges)
            level[source] = 0
            queue = deque([source])
            while queue:
                node = queue.popleft()
                for target, capacity, price, _ in edges[node]:
                    if (
                        capacity > 0
                        and level[target] < 0
                        and price + potential[node] - potential[target] == 0
                    ):
                        level[target] = level[node] + 1
                        queue.append(target)
            if level[sink] < 0:
                break
            pushed = self._augment(source, sink, level, potential, limit - total)
            if pushed == 0:
                break
            total += pushed
        return total

    def _augment(
        self, source: int, sink: int, level: list[int], potential: list[int], limit: int
    ) -> int:
        """Blocking flow along level-increasing admissible edges, iterative DFS."""
        edges = self._edges
        cursor = [0] * len(edges)
        total = 0
        while total < limit:
            path: list[tuple[int, int]] = []
            node = source
            while node != sink:
                adjacency = edges[node]
                while cursor[node] < len(adjacency):
                    target, capacity, price, _ = adjacency[cursor[node]]
                    if (
                        capacity > 0
                        and level[target] == level[node] + 1
                        and price + potential[node] - potential[target] == 0
                    ):
                        break
                    cursor[node] += 1
                if cursor[node] == len(adjacency):
                    if not path:
                        return total
                    level[node] = -1
                    node, _ = path.pop()
                    cursor[node] += 1
                    continue
                path.append((node, cursor[node]))
                node = adjacency[cursor[node]][0]
            push = limit - total
            for parent, index in path:
                push = min(push, edges[parent][index][1])
            for parent, index in path:
                edge = edges[parent][index]
                edge[1] -= push
                edges[edge[0]][edge[3]][1] += push
            total += push
        return total

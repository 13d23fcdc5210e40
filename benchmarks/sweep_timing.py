"""How `sweep_space.py` times one point of a space: paired with the production kernel, the
way the evaluator times roles (warm graphs of several calls over fresh inputs, or one cold
graph over enough buffers that the L2 is passed through between two uses of one), replays
alternating between the two, the median of the paired ratios per workload.

A helper of sweep_space.py; it answers no question of its own.
"""

import statistics


class PairedTiming:
    """One workload timed as the evaluator times roles, the production kernel's graphs captured
    once and replayed alternately with each point's."""

    def __init__(self, declaration, workload, production, l2_bytes: int, replays: int):
        import torch

        from gates.evaluator.fresh_pool import FreshPool, pool_seeds
        from gates.evaluator.graph_timing import CALLS_PER_GRAPH, PLACEMENTS, cold_calls, warm_calls
        from gates.evaluator.timing import promotion_figure

        self.name, self.weight, self.params = workload.name, workload.weight, declaration.params
        seeds = pool_seeds("sweep", workload.name, 0)
        self.pool = FreshPool(
            declaration,
            workload,
            production,
            seeds,
            replays * 2 * CALLS_PER_GRAPH,
            torch.device("cuda"),
        )
        self.figure, _ = promotion_figure(None, None, self.pool.set_bytes, l2_bytes)
        set_bytes = self.pool.set_bytes
        calls = (
            warm_calls(set_bytes, l2_bytes)
            if self.figure == "warm"
            else cold_calls(set_bytes, l2_bytes)
        )
        self.buffers = [[t.clone() for t in self.pool.sets[0]] for _ in range(calls)]
        self.graphs_each = PLACEMENTS if self.figure == "warm" else 1
        self.replays = replays * (2 if self.figure == "warm" else 1)
        self.production = self._graphs(production)
        self.baseline_us: list[float] = []
        self.turn = 0

    def _graphs(self, function) -> list:
        from gates.evaluator.graph_timing import CUDA_GRAPHS

        CUDA_GRAPHS.warm_up(function, self.buffers[0], self.params)
        return [
            CUDA_GRAPHS.capture(function, self.buffers, self.params)[0]
            for _ in range(self.graphs_each)
        ]

    def time(self, function) -> dict:
        """Per-call us of the point and the production kernel, and their median paired ratio."""
        import torch

        from gates.evaluator.graph_timing import CUDA_GRAPHS

        graphs = {"production": self.production, "point": self._graphs(function)}
        pending: dict[str, list] = {"production": [], "point": []}
        calls = len(self.buffers)
        for replay in range(self.replays):
            order = (
                ("production", "point")
                if (replay + self.turn) % 2 == 0
                else ("point", "production")
            )
            for role in order:
                chosen = [(replay * calls + call) % len(self.pool.sets) for call in range(calls)]
                targets = [t for buffer in self.buffers for t in buffer]
                torch._foreach_copy_(targets, [t for i in chosen for t in self.pool.sets[i]])
                graph = graphs[role][replay % len(graphs[role])]
                events = CUDA_GRAPHS.timed_replay(graph, calls, drained=self.figure == "warm")
                pending[role].append(events)
        self.turn += 1
        CUDA_GRAPHS.synchronize()
        us = {
            role: [CUDA_GRAPHS.milliseconds(e) * 1e3 / calls for e in events]
            for role, events in pending.items()
        }
        self.baseline_us.extend(us["production"])
        ratios = [p / b for p, b in zip(us["point"], us["production"], strict=True) if b > 0]
        return {
            "figure": self.figure,
            "point_us": round(statistics.median(us["point"]), 4),
            "production_us": round(statistics.median(us["production"]), 4),
            "ratio": round(statistics.median(ratios), 5),
        }

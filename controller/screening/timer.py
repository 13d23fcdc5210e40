"""A cheap CUDA-graph timing of one point, the way Triton's own autotuner measures a config:
a graph of back-to-back calls captured once and replayed, the median replay over its calls.

Per workload the input sets are drawn once and shared by every point, and the figure follows
the evaluator's rule (warm when one call's inputs and outputs fit in the L2: 20 calls rotating
over 20 sets; cold otherwise: enough distinct sets that 8 x the L2 passes between two uses of
one), so the screen ranks points on what the latency gate will compare. About 200 calls per
workload. When given the production kernel, its graph is captured once per workload and
replayed alternately with each point's: a point's time is its median ratio to production
times production's time at the start, so a clock that drifts during a long screen moves no
point against another. No intervals: the full evaluator gives those.
"""

import math
import statistics

from gates.evaluator.graph_timing import CALLS_PER_GRAPH, CUDA_GRAPHS, cold_calls

SCREEN_CALLS = 200  # calls timed per workload and point, at least
MIN_REPLAYS = 3
SEED = 20261202


class WorkloadPlan:
    """One workload's shared input sets, its figure and how many replays make SCREEN_CALLS."""

    def __init__(self, declaration, workload, figure: str | None, l2_bytes: int, device):
        self.name, self.weight = workload.name, workload.weight
        first = declaration.make_input_sets(workload, 1, SEED, "normal", device)[0]
        outputs = declaration.run_reference(*first)
        set_bytes = sum(t.numel() * t.element_size() for t in [*first, *outputs])
        self.figure = figure or ("warm" if set_bytes <= l2_bytes else "cold")
        calls = CALLS_PER_GRAPH if self.figure == "warm" else cold_calls(set_bytes, l2_bytes)
        self.sets = declaration.make_input_sets(workload, calls, SEED, "normal", device)
        self.replays = max(MIN_REPLAYS, math.ceil(SCREEN_CALLS / calls))
        self.production_graph = None
        self.production_us: float | None = None


class GraphTimer:
    """Times a point's call on every workload; `production`, when given, is replayed beside
    each point; `device` is graph timing's device interface (`CUDA_GRAPHS`; a stand-in in CPU
    tests)."""

    def __init__(
        self, declaration, figure: str | None, l2_bytes: int, tensor_device, device=None,
        production=None,
    ) -> None:  # fmt: skip
        self.params = declaration.params
        self.device = device or CUDA_GRAPHS
        self.plans = [
            WorkloadPlan(declaration, workload, figure, l2_bytes, tensor_device)
            for workload in declaration.workloads
        ]
        if production is not None:
            for plan in self.plans:
                plan.production_graph = self._captured(production, plan)
                replays = [self._replay(plan.production_graph, plan) for _ in range(plan.replays)]
                plan.production_us = self._median_us(replays, plan)

    @property
    def figures(self) -> dict[str, str]:
        return {plan.name: plan.figure for plan in self.plans}

    @property
    def weights(self) -> dict[str, float]:
        return {plan.name: plan.weight for plan in self.plans}

    def time(self, function) -> dict[str, float]:
        """Per-call microseconds per workload (median over replays, or paired as above)."""
        return {plan.name: self._time_workload(function, plan) for plan in self.plans}

    def _time_workload(self, function, plan: WorkloadPlan) -> float:
        graph = self._captured(function, plan)
        if plan.production_graph is None:
            return self._median_us([self._replay(graph, plan) for _ in range(plan.replays)], plan)
        own, production = [], []
        for replay in range(plan.replays):
            first, second = (graph, plan.production_graph)[:: 1 if replay % 2 else -1]
            pair = self._replay(first, plan), self._replay(second, plan)
            own.append(pair[0] if first is graph else pair[1])
            production.append(pair[1] if first is graph else pair[0])
        self.device.synchronize()
        ratios = [
            self.device.milliseconds(a) / self.device.milliseconds(b)
            for a, b in zip(own, production, strict=True)
        ]
        return statistics.median(ratios) * plan.production_us

    def _captured(self, function, plan: WorkloadPlan):
        self.device.warm_up(function, plan.sets[0], self.params)
        return self.device.capture(function, plan.sets, self.params)[0]

    def _replay(self, graph, plan: WorkloadPlan):
        return self.device.timed_replay(graph, len(plan.sets), drained=True)

    def _median_us(self, pending: list, plan: WorkloadPlan) -> float:
        self.device.synchronize()
        values = [self.device.milliseconds(events) for events in pending]
        return statistics.median(values) * 1e3 / len(plan.sets)

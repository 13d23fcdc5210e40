"""A cheap CUDA-graph timing of one point, the way Triton's own autotuner measures a config:
a graph of back-to-back calls captured once and replayed, the median replay over its calls.

Per workload the input sets are drawn once and shared by every point, and the figure follows
the evaluator's rule (warm when one call's inputs and outputs fit in the L2: 20 calls rotating
over 20 sets; cold otherwise: enough distinct sets that 8 x the L2 passes between two uses of
one), so the screen ranks points on what the latency gate will compare. About 200 calls per
workload, a few replays: no pairing, no intervals; the full evaluator gives those.
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


class GraphTimer:
    """Times a point's call on every workload; `device` is graph timing's device interface
    (`CUDA_GRAPHS`; a stand-in in CPU tests)."""

    def __init__(self, declaration, figure: str | None, l2_bytes: int, tensor_device, device=None):
        self.params = declaration.params
        self.device = device or CUDA_GRAPHS
        self.plans = [
            WorkloadPlan(declaration, workload, figure, l2_bytes, tensor_device)
            for workload in declaration.workloads
        ]

    @property
    def figures(self) -> dict[str, str]:
        return {plan.name: plan.figure for plan in self.plans}

    @property
    def weights(self) -> dict[str, float]:
        return {plan.name: plan.weight for plan in self.plans}

    def time(self, function) -> dict[str, float]:
        """Per-call microseconds per workload (median over replays)."""
        return {plan.name: self._time_workload(function, plan) for plan in self.plans}

    def _time_workload(self, function, plan: WorkloadPlan) -> float:
        device = self.device
        device.warm_up(function, plan.sets[0], self.params)
        graph, _ = device.capture(function, plan.sets, self.params)
        calls = len(plan.sets)
        pending = [device.timed_replay(graph, calls, drained=True) for _ in range(plan.replays)]
        device.synchronize()
        return statistics.median(device.milliseconds(events) for events in pending) * 1e3 / calls

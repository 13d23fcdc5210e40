"""Verdicts and timing from CUDA graphs (the default on CUDA).

For each workload every role's call is captured, after warm-up, into CUDA graphs of many
back-to-back calls over distinct input buffers: a warm graph (20 calls, inputs rotating, as a
captured model sees them) and a cold one (so many calls over distinct buffers that 8 x the L2
of traffic passes between two uses of one buffer: its inputs have left the L2, with no flush
whose own cost would have to be measured and removed). The candidate's single call is captured once
more and its nodes inspected (`detectors/cuda_graph.py`) before any replay is trusted. Each
replay first copies fresh input sets into the graph's buffers, runs between two events
recorded outside the graph, and then has every output compared on the device with the
baseline's output for its set. Roles are interleaved replay by replay, so each replay index
gives one paired ratio per role; no Python of the solution runs while graphs replay.
"""

import math

import torch

from gates.evaluator.detectors.cuda_graph import GraphRejected, judge_graph
from gates.evaluator.graph_nodes import graph_nodes, solution_functions
from gates.evaluator.statistics import median, spread

CALLS_PER_GRAPH = 20  # calls in a warm graph
COLD_TRAFFIC = 8  # L2 sizes of traffic between two uses of a buffer set in a cold graph
MAX_COLD_CALLS = 4096
WARM_UP_CALLS = 3
SPIN_CYCLES = 500_000  # keeps the device behind the host, so each replay is queued in time


class NotCapturable(Exception):
    """The solution's call cannot be captured into a CUDA graph (a host sync, host work
    between its kernels, an allocation the capture refuses)."""


def capture(function, input_sets, params):
    """One graph of back-to-back calls over `input_sets`; returns the graph, kept for
    inspection, and each call's outputs."""
    graph = _new_graph()
    outputs = []
    try:
        with torch.cuda.graph(graph):
            for inputs in input_sets:
                result = function(*inputs, **params)
                outputs.append(tuple(result) if isinstance(result, tuple | list) else (result,))
    except Exception as error:  # the capture's own error names what broke it
        raise NotCapturable(f"{type(error).__name__}: {str(error).strip()[:200]}") from None
    return graph, outputs


def _new_graph():
    try:
        return torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:  # a torch without keep_graph
        return torch.cuda.CUDAGraph()


def warm_up(function, inputs, params) -> None:
    """Compile and load every kernel (and autotune) on a side stream before any capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(side):
            for _ in range(WARM_UP_CALLS):
                function(*inputs, **params)
    finally:
        torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def inspect_candidate(function, inputs, params, modules, solution_dir) -> int:
    """Capture one call and judge its nodes; returns the number of solution kernels."""
    graph, _ = capture(function, [inputs], params)
    try:
        raw = graph.raw_cuda_graph()
    except (AttributeError, RuntimeError) as error:
        raise GraphRejected(f"the captured graph cannot be read ({error})") from None
    verdict = judge_graph(graph_nodes(raw), solution_functions(modules, solution_dir))
    if not verdict.accepted:
        raise GraphRejected(verdict.reason)
    return verdict.kernels


def cold_calls(set_bytes: int, l2_bytes: int) -> int:
    """Calls in a cold graph: enough distinct buffer sets that the traffic between two uses of
    one set is COLD_TRAFFIC x the L2, so its inputs have left the L2 when it comes round."""
    wanted = math.ceil(COLD_TRAFFIC * l2_bytes / max(1, set_bytes))
    return max(CALLS_PER_GRAPH, min(MAX_COLD_CALLS, wanted))


class RoleGraphs:
    """One role's warm and cold graphs for one workload, over the input buffers every role
    shares: no role's reads sit at addresses of its own (fresh sets are copied in before each
    replay, so sharing carries nothing from one role's replay to the next)."""

    def __init__(self, function, buffers, params):
        self.buffers = buffers
        warm_up(function, self.buffers[0], params)
        self.warm, self.warm_outputs = capture(function, self.buffers[:CALLS_PER_GRAPH], params)
        self.cold, self.cold_outputs = capture(function, self.buffers, params)
        self.warm_ms: list[float] = []
        self.cold_ms: list[float] = []

    def load(self, pool, replay: int, count: int) -> list[int]:
        """Copy the next fresh input sets into the first `count` buffers (one batched copy);
        returns the set each call gets."""
        chosen = [(replay * count + call) % len(pool.sets) for call in range(count)]
        targets = [t for buffers in self.buffers[:count] for t in buffers]
        sources = [t for index in chosen for t in pool.sets[index]]
        torch._foreach_copy_(targets, sources)
        return chosen


def time_workload(roles, pool, params, replays: int, cold: int, mismatches) -> dict:
    """Replay every role's warm and cold graphs `replays` times, roles interleaved, each
    replay's outputs compared with the baseline's; per-call milliseconds by role and figure."""
    buffers = [[t.clone() for t in pool.sets[0]] for _ in range(cold)]
    graphs = {role: RoleGraphs(function, buffers, params) for role, function in roles.items()}
    names = list(roles)
    for replay in range(replays):
        order = names[replay % len(names) :] + names[: replay % len(names)]
        for role in order:
            state = graphs[role]
            for graph, outputs, times in (
                (state.warm, state.warm_outputs, state.warm_ms),
                (state.cold, state.cold_outputs, state.cold_ms),
            ):
                chosen = state.load(pool, replay, len(outputs))
                times.append(_timed_replay(graph) / len(outputs))
                mismatches += pool.batch_mismatch(outputs, chosen)
    torch.cuda.synchronize()
    return {role: {"warm": g.warm_ms, "cold": g.cold_ms} for role, g in graphs.items()}


def _timed_replay(graph) -> float:
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(SPIN_CYCLES)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def graph_row(workload, times: dict, figure: str, rounds: int, set_bytes: int, floor_us) -> dict:
    """A workload's timing row from per-replay per-call times (milliseconds)."""
    row = {"weight": workload.weight, "bytes": set_bytes, "floor_us": floor_us}
    row.update(method="graph", promotion_figure=figure, paired_ratios={})
    for role, figures in times.items():
        warm = [value * 1e3 for value in figures["warm"]]
        chunk = max(1, math.ceil(len(warm) / rounds))
        row[f"{role}_median_us"] = median(warm)
        row[f"{role}_spread"] = spread(warm)
        row[f"{role}_cold_us"] = median([value * 1e3 for value in figures["cold"]])
        promoted = figures[figure]
        row[f"{role}_round_medians_us"] = [
            median(promoted[i : i + chunk]) * 1e3 for i in range(0, len(promoted), chunk)
        ]
    candidate = times["candidate"][figure]
    for role in times:
        if role != "candidate":
            row["paired_ratios"][role] = [
                c / o for c, o in zip(candidate, times[role][figure], strict=True) if o > 0
            ]
    if "baseline" in times:
        row["speedup"] = row["baseline_median_us"] / row["candidate_median_us"]
    return row

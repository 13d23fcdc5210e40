"""Verdicts and timing from CUDA graphs (the default on CUDA).

For each workload every role's call is captured, after warm-up, into CUDA graphs of many
back-to-back calls over distinct input buffers: warm graphs (up to 20 calls, inputs rotating,
as a captured model sees them: inputs just written, so in the L2; a graph holds only as many
calls as keep all of its sets within half the L2, one where a set is larger; PLACEMENTS per
role, each with outputs of its own) and a cold one (so
many calls over distinct buffers that 8 x the L2 of traffic passes between two uses of one
buffer: its inputs have left the L2, with no flush whose own cost would have to be measured
and removed). Each of the candidate's graphs has its nodes inspected (`detectors/cuda_graph.py`)
as it is captured, before any replay is trusted, and each of a reference role's graphs is held
to that role's call captured before the solution was imported
(`detectors/reference_graphs.py`). Each replay first copies fresh input
sets into the graph's buffers, runs between two events recorded outside the graph, and then
has every output compared on the device with the baseline's output for its set. Roles are
interleaved replay by replay, so each replay index gives one paired ratio per role; no Python
of the solution runs while graphs replay. The host never waits for a replay it has queued (a
spin ahead of each keeps its launch out of its interval; events are read once the last has
run), so its work for one replay overlaps the device's; but a warm replay starts on a drained
device: with warm replays queued behind one another, small kernels measured up to 2% slower
after the first fifth of the replays, and by varying amounts in different processes
(`benchmarks/replay_queue_probe.py`).
"""

import math
import time

import torch

from gates.evaluator.detectors.cuda_graph import GraphRejected, judge_graph
from gates.evaluator.graph_nodes import graph_nodes, library_functions, solution_functions
from gates.evaluator.statistics import median, spread

CALLS_PER_GRAPH = 20  # calls in a warm graph
PLACEMENTS = 12  # warm graphs per role, each with its own outputs, replays rotating through them
SECONDARY_EVERY = 5  # the figure promotion does not use is sampled on every fifth replay
COLD_TRAFFIC = 8  # L2 sizes of traffic between two uses of a buffer set in a cold graph
MAX_COLD_CALLS = 4096
WARM_UP_CALLS = 3
SPIN_CYCLES = 500_000  # keeps the device behind the host, so each replay is queued in time
# and, per call of the graph, for as long as the host takes to launch a node (about 1 us):
# with the fixed spin alone, a 2000-call cold graph's launch was still being submitted when
# the spin ended, and the cold figure of one kernel read 2.3-2.5 us instead of 2.03 us.
SPIN_CYCLES_PER_CALL = 4_000


class NotCapturable(Exception):
    """The solution's call cannot be captured into a CUDA graph (a host sync, host work
    between its kernels, an allocation the capture refuses)."""


def capture(function, input_sets, params):
    """One graph of back-to-back calls over `input_sets`; returns the graph, kept for
    inspection, and each call's outputs."""
    graph, kept = _new_graph()
    outputs = []
    try:
        with torch.cuda.graph(graph):
            for inputs in input_sets:
                result = function(*inputs, **params)
                outputs.append(tuple(result) if isinstance(result, tuple | list) else (result,))
    except Exception as error:  # the capture's own error names what broke it
        raise NotCapturable(f"{type(error).__name__}: {str(error).strip()[:200]}") from None
    instantiate_kept(graph, kept)
    return graph, outputs


def _new_graph() -> tuple:
    """A graph that keeps its nodes for inspection, and whether it does (so is not yet
    instantiated)."""
    try:
        return torch.cuda.CUDAGraph(keep_graph=True), True
    except TypeError:  # a torch without keep_graph instantiates at the end of capture
        return torch.cuda.CUDAGraph(), False


def instantiate_kept(graph, kept: bool) -> None:
    """Instantiate a kept graph as soon as it is captured. Left to its first replay, the
    host's instantiation (longer the more nodes the graph has) runs after the spin queued
    ahead of that replay has been submitted, so the replay's timed interval holds host time:
    one per placement, twelve of a warm figure's replays. The nodes read by inspection are
    the kept graph's, which instantiation does not change."""
    if kept:
        graph.instantiate()


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


def capture_graph(function, inputs, params):
    """One call captured after warm-up, as a function that replays it and returns its outputs
    as the call returned them (for the probes in `benchmarks/`)."""
    warm_up(function, inputs, params)
    graph, outputs = capture(function, [inputs], params)
    static = outputs[0][0] if len(outputs[0]) == 1 else outputs[0]

    def replay():
        graph.replay()
        return static

    return replay


class GraphInspection:
    """Judges each of the candidate's graphs whose replays are timed and compared, so every
    replayed output was made by inspected nodes (a solution cannot show one honest capture
    and time another)."""

    def __init__(self, modules, solution_dir, tracer=None) -> None:
        self.modules, self.solution_dir = modules, solution_dir
        self.tracer = tracer  # its library products' kernels are the library's, not foreign
        self.graphs = 0

    def __call__(self, graph, calls: int) -> None:
        try:
            raw = graph.raw_cuda_graph()
        except (AttributeError, RuntimeError) as error:
            raise GraphRejected(f"the captured graph cannot be read ({error})") from None
        functions = solution_functions(self.modules, self.solution_dir)  # after the capture
        library = library_functions(self.tracer.facts) if self.tracer is not None else frozenset()
        verdict = judge_graph(graph_nodes(raw), functions, library)
        if not verdict.accepted:
            raise GraphRejected(f"captured graph {self.graphs + 1}: {verdict.reason}")
        self.graphs += 1


def warm_calls(set_bytes: int, l2_bytes: int) -> int:
    """Calls in a warm graph: the fresh sets copied in before a replay must all still be in the
    L2 when their calls read them, as a model's operator reads what its producer just wrote.
    Twenty sets of a large workload would be mostly evicted by the time they are read, and
    the "warm" figure would be a cold one."""
    return max(1, min(CALLS_PER_GRAPH, (l2_bytes // 2) // max(1, set_bytes)))


def cold_calls(set_bytes: int, l2_bytes: int) -> int:
    """Calls in a cold graph: enough distinct buffer sets that the traffic between two uses of
    one set is COLD_TRAFFIC x the L2, so its inputs have left the L2 when it comes round."""
    wanted = math.ceil(COLD_TRAFFIC * l2_bytes / max(1, set_bytes))
    return max(CALLS_PER_GRAPH, min(MAX_COLD_CALLS, wanted))


class RoleGraphs:
    """One role's warm and cold graphs for one workload, over the input buffers every role
    shares: no role's reads sit at addresses of its own (fresh sets are copied in before each
    replay, so sharing carries nothing from one role's replay to the next). Its outputs do sit
    at its own addresses, and where a small kernel's outputs land moves its time by about 1%
    on the H200 (`benchmarks/graph_bias_probe.py`), the same way in every process; so a role
    has PLACEMENTS warm graphs, each with outputs of its own, and replays rotate through them.
    `inspect(graph, calls)`, when given, judges every graph as it is captured."""

    def __init__(self, function, buffers, params, inspect, device, warm_calls=CALLS_PER_GRAPH):
        self.function, self.buffers, self.params = function, buffers, params
        self.warm_calls = warm_calls
        self.inspect = inspect or (lambda graph, calls: None)
        self.device = device
        self.device.warm_up(function, self.buffers[0], params)
        self.cold, self.cold_outputs = self._captured(self.buffers)
        self.warm: list[tuple] = []
        self.pending: dict[str, list] = {"warm": [], "cold": []}  # (replay's events, calls)

    def add_placement(self) -> None:
        """One more warm graph, its outputs allocated afresh."""
        self.warm.append(self._captured(self.buffers[: self.warm_calls]))

    def _captured(self, buffers) -> tuple:
        graph, outputs = self.device.capture(self.function, buffers, self.params)
        self.inspect(graph, len(buffers))
        return graph, outputs

    def load(self, pool, replay: int, count: int) -> list[int]:
        """Copy the next fresh input sets into the first `count` buffers (one batched copy);
        returns the set each call gets."""
        chosen = [(replay * count + call) % len(pool.sets) for call in range(count)]
        targets = [t for buffers in self.buffers[:count] for t in buffers]
        sources = [t for index in chosen for t in pool.sets[index]]
        torch._foreach_copy_(targets, sources)
        return chosen


def time_workload(
    roles, pool, params, replays: int, cold: int, mismatches, inspections: dict,
    figure: str = "warm", laps: dict | None = None, device=None, witness=None,
    warm: int = CALLS_PER_GRAPH,
) -> dict:  # fmt: skip
    """Replay every role's graphs `replays` times, roles interleaved, each replay's outputs
    compared with the baseline's; per-call milliseconds by role and figure. The figure
    promotion uses (`figure`) is sampled on every replay, the other on every
    SECONDARY_EVERY-th, as a report. Every graph of a role in `inspections` is judged by
    its inspection when captured (the candidate's nodes by `GraphInspection`, a reference
    role's against its call captured before the import). Warm placements are captured in
    mirrored role order, so no role's outputs are always allocated first. After the last
    capture the whole device is synchronised: work the solution's Python launched on streams
    of its own has ended before the first replay, and no solution Python runs after. `laps`
    gathers the seconds spent capturing and replaying; `witness(role, figure, outputs,
    chosen)`, when given, is called after each replay is queued (`replay_witnesses.py`);
    `device` is CUDA_GRAPHS but for tests of this plan on the CPU; `warm` is the calls of a
    warm graph (`warm_calls`)."""
    laps = {} if laps is None else laps
    device = device or CUDA_GRAPHS
    started = time.monotonic()
    buffers = [[t.clone() for t in pool.sets[0]] for _ in range(cold)]
    graphs = {
        role: RoleGraphs(function, buffers, params, inspections.get(role), device, warm)
        for role, function in roles.items()
    }
    names = list(roles)
    for placement in range(PLACEMENTS):
        for role in names if placement % 2 == 0 else names[::-1]:
            graphs[role].add_placement()
    device.synchronize()
    captured = time.monotonic()
    laps["captures"] = laps.get("captures", 0.0) + captured - started
    for replay in range(replays):
        order = names[replay % len(names) :] + names[: replay % len(names)]
        sampled = _sampled(replay, figure)
        for role in order:
            state = graphs[role]
            warm, warm_outputs = state.warm[replay % PLACEMENTS]
            for name, graph, outputs in (
                ("warm", warm, warm_outputs),
                ("cold", state.cold, state.cold_outputs),
            ):
                if name in sampled:
                    chosen = state.load(pool, replay, len(outputs))
                    events = device.timed_replay(graph, len(outputs), drained=name == "warm")
                    state.pending[name].append((events, len(outputs)))
                    mismatches += pool.batch_mismatch(outputs, chosen)
                    if witness is not None:
                        witness(role, name, outputs, chosen)
    device.synchronize()
    laps["replays"] = laps.get("replays", 0.0) + time.monotonic() - captured
    return {
        role: {
            name: [device.milliseconds(events) / calls for events, calls in pending]
            for name, pending in state.pending.items()
        }
        for role, state in graphs.items()
    }


def _sampled(replay: int, figure: str) -> set[str]:
    """The figures replay `replay` samples: the promoted one, and every SECONDARY_EVERY-th
    replay the other as well."""
    return {figure} if replay % SECONDARY_EVERY else {"warm", "cold"}


def figure_replays(replays: int, figure: str) -> dict[str, int]:
    """How many times `time_workload` replays each figure."""
    counts = {"warm": 0, "cold": 0}
    for replay in range(replays):
        for name in _sampled(replay, figure):
            counts[name] += 1
    return counts


def _timed_replay(graph, calls: int, drained: bool) -> tuple:
    """Queue one replay of a graph of `calls` calls between two events (once the device has
    run everything before it when `drained`); its time is read after the device has run it."""
    if drained:
        torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(SPIN_CYCLES + SPIN_CYCLES_PER_CALL * calls)
    start.record()
    graph.replay()
    end.record()
    return start, end


def _milliseconds(events: tuple) -> float:
    start, end = events
    return start.elapsed_time(end)


class CudaGraphs:
    """What graph timing asks of the device: warm-up, capture, synchronise, one queued timed
    replay, and its milliseconds once the device has run it. The plan above takes it as an
    argument, so its order, pairing and inspection are tested on the CPU with a stand-in
    (`tests/evaluator/test_graph_plan.py`)."""

    warm_up = staticmethod(warm_up)
    capture = staticmethod(capture)
    timed_replay = staticmethod(_timed_replay)
    milliseconds = staticmethod(_milliseconds)

    @staticmethod
    def synchronize() -> None:
        torch.cuda.synchronize()


CUDA_GRAPHS = CudaGraphs()


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
    other = "cold" if figure == "warm" else "warm"
    row["other_figure_ratios"] = {}
    for role in times:
        if role != "candidate":
            row["paired_ratios"][role] = _pairs(times, role, figure)
            row["other_figure_ratios"][role] = _pairs(times, role, other)
    if "baseline" in times:
        row["speedup"] = row["baseline_median_us"] / row["candidate_median_us"]
    return row


def _pairs(times: dict, role: str, figure: str) -> list[float]:
    """Candidate over `role`, replay by replay, on one figure (both sampled the same replays)."""
    candidate = times["candidate"][figure]
    return [c / o for c, o in zip(candidate, times[role][figure], strict=True) if o > 0]

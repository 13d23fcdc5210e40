"""Device timing on CUDA: graph replays by default (`graph_timing`), the eager loop when the
candidate cannot be captured and the task allows it; roles interleaved; the report typed.

Every workload draws a fresh pool of input sets from seeds derived from the nonce (`FreshPool`):
inputs no call has seen before, so a solution that remembers outputs has nothing to replay;
every timed or replayed output, of every role, is compared on the device with the trusted
baseline's output for its set. In the eager loop a spin kernel queued ahead of every sample
keeps the device behind the host, so launch overhead stays out of the measured interval, and
medians are tick medians (see `statistics`): event times come in 32 ns ticks.
"""

import builtins
import math
import sys
from time import monotonic  # bound before the solution is imported

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gates.evaluator import loading
from gates.evaluator.detectors.compute_fallback import TorchComputeFallback
from gates.evaluator.detectors.concurrency import SideStreamWork
from gates.evaluator.detectors.dependent_launch import check_dependent_launches
from gates.evaluator.detectors.plausibility import check_plausible, roofline_floor_ms
from gates.evaluator.detectors.replay import TimedOutputWrong
from gates.evaluator.detectors.transient_patch import LoopIdentities, PatchedBetweenCalls
from gates.evaluator.device_rates import measure_bandwidth, measure_sm_clock_mhz
from gates.evaluator.fresh_pool import FreshPool, pool_seeds, screen_refusal
from gates.evaluator.graph_nodes import solution_kernel_facts
from gates.evaluator.graph_timing import (
    CALLS_PER_GRAPH,
    GraphInspection,
    NotCapturable,
    cold_calls,
    figure_replays,
    graph_row,
    time_workload,
    warm_calls,
)
from gates.evaluator.guard import CandidateCallError
from gates.evaluator.promotion import promotion_verdict
from gates.evaluator.reference_fingerprints import ReferenceInspection
from gates.evaluator.replay_witnesses import WitnessLog
from gates.evaluator.results import TimingReport, WorkloadTiming
from gates.evaluator.statistics import spread, tick_median
from gates.evaluator.tracing import CandidateTracer, TimedCallTracer

# A flush of twice the L2 left part of the inputs cached in some processes on the H200
# (medians of one kernel at 4.0 us in some processes, 4.7 us in others); eight times clears it.
L2_FLUSH_FACTOR = 8
BACKLOG_CYCLES = 4_000_000  # about 2 ms of spinning before each run of samples
# About 250 us per sample: the device stays behind the host, whose work per sample (input
# reset, flush, events, the traced call, the output comparison) takes 150-250 us on the H200.
SPIN_CYCLES = 500_000
LIVE_COPIES = 16  # input buffer sets per role, used in turn
GRAPH_REPLAYS_MIN = 20  # paired replays per workload (each of CALLS_PER_GRAPH calls)
WARM_REPLAYS_FACTOR = 2  # a warm-promoted workload's replays are cheap: twice as many pairs


def time_roles(
    request, declaration, guard, roles, graphs_required: bool, figure: str | None = None,
    fingerprints: dict | None = None, witnesses: WitnessLog | None = None,
) -> TimingReport:  # fmt: skip
    """Time every role on every declared workload from CUDA-graph replays (the eager loop
    when the candidate cannot be captured and the task allows it); returns the report.
    `figure` (warm or cold) is what promotion uses; by default a captured workload's (warm
    when the model had just written its inputs), else warm when a workload's set fits in the
    L2, cold otherwise. `fingerprints` (per workload and reference role, taken
    before the import by `reference_fingerprints.take_fingerprints`) hold every graph of
    the reference roles to what they ran then. `witnesses` collects the timed calls whose
    outputs go to the judge (`replay_witnesses.py`)."""
    device = guard.device
    properties = torch.cuda.get_device_properties(device)
    flush_bytes = max(L2_FLUSH_FACTOR * properties.L2_cache_size, 256 << 20)
    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device=device)
    bandwidth = measure_bandwidth(device)
    clock_before = measure_sm_clock_mhz()
    setup = TimingSetup(request, declaration, guard, roles, flush, bandwidth)
    setup.figure, setup.fingerprints = figure, fingerprints or {}
    if witnesses is not None:
        setup.witnesses = witnesses
    try:
        rows = _graph_rows(setup, properties.L2_cache_size)
        used_graphs = True
    except NotCapturable as error:
        if graphs_required:
            raise CandidateCallError("NOT_CAPTURABLE", f"not capturable: {error}") from None
        guard.notes.append(f"timing: eager calls, the call is not capturable ({error})")
        rows = _eager_rows(setup)
        used_graphs = False
    # Every kernel the solution compiled by now (its checked calls' and its timed ones').
    check_dependent_launches(solution_kernel_facts(guard.folder))
    workloads = {name: WorkloadTiming(**row) for name, row in rows.items()}
    return TimingReport(
        workloads=workloads,
        samples_per_role=setup.samples_per_role(used_graphs),
        rounds=setup.rounds,
        l2_flush_bytes=flush_bytes,
        bandwidth_gb_per_s=round(bandwidth / 1e6, 1),
        cuda_graphs=used_graphs,
        sm_clock_mhz=[clock_before, measure_sm_clock_mhz()],
        fresh_pool_seconds=round(setup.pool_seconds, 3),
        phase_seconds={name: round(value, 3) for name, value in setup.laps.items()},
        promotion=promotion_verdict({"workloads": rows}, list(roles)),
    )


class TimingSetup:
    """What every workload's timing shares: roles, flush, bandwidth, seeds and sample counts."""

    def __init__(self, request, declaration, guard, roles, flush, bandwidth):
        self.declaration, self.guard, self.roles = declaration, guard, roles
        self.flush, self.bandwidth = flush, bandwidth
        self.rounds = max(1, request.timing_rounds)
        self.per_round = math.ceil(request.timing_samples / self.rounds)
        self.replays = max(GRAPH_REPLAYS_MIN, request.timing_samples // CALLS_PER_GRAPH)
        self.nonce = request.nonce
        self.pool_seconds = 0.0
        self.laps: dict[str, float] = {}  # graph timing's captures, replays and checks
        self.figure: str | None = None
        self.fingerprints: dict[str, dict] = {}
        self.witnesses = WitnessLog()

    def pool(self, workload, wanted: int, round_index: int = 0) -> "FreshPool":
        drawn = monotonic()
        baseline = self.roles["baseline"]
        seeds = pool_seeds(self.nonce, workload.name, round_index)
        pool = FreshPool(self.declaration, workload, baseline, seeds, wanted, self.flush.device)
        self.pool_seconds += monotonic() - drawn
        return pool

    def samples_per_role(self, graphs: bool) -> int:
        return self.replays * CALLS_PER_GRAPH if graphs else self.rounds * self.per_round

    def check_plausible(self, name: str, row: dict, figure: str) -> None:
        check_plausible(name, row[figure] / 1e3, row["floor_us"] / 1e3)


def _graph_rows(setup: TimingSetup, l2_bytes: int) -> dict:
    """Every workload's row from interleaved graph replays; the candidate's graph inspected."""
    guard, declaration = setup.guard, setup.declaration
    rows, wrong_outputs = {}, []
    modules = loading.solution_modules("candidate")
    for workload in declaration.workloads:
        pool = setup.pool(workload, setup.replays * WARM_REPLAYS_FACTOR * CALLS_PER_GRAPH)
        pool.stack_checks()
        set_bytes = pool.set_bytes
        captured = getattr(declaration, "promotion_figures", {}).get(workload.name)
        figure, figure_source = promotion_figure(setup.figure, captured, set_bytes, l2_bytes)
        tracer = TimedCallTracer(expected_stream=None)
        candidate = _traced(setup.roles["candidate"], tracer)  # captures run its Python
        roles = {**setup.roles, "candidate": candidate}
        mismatches = torch.zeros((), dtype=torch.int64, device=setup.flush.device)
        cold = cold_calls(set_bytes, l2_bytes)
        warm = warm_calls(set_bytes, l2_bytes)
        inspections = {"candidate": GraphInspection(modules, guard.folder, tracer)}
        for role, fingerprint in setup.fingerprints.get(workload.name, {}).items():
            inspections[role] = ReferenceInspection(role, workload.name, fingerprint)
        replays = setup.replays * (WARM_REPLAYS_FACTOR if figure == "warm" else 1)
        witness = setup.witnesses.for_workload(workload.name, pool, figure_replays(replays, figure))
        times = time_workload(
            roles, pool, declaration.params, replays, cold, mismatches, inspections, figure,
            setup.laps, witness=witness, warm=warm,
        )  # fmt: skip
        checked = monotonic()
        disallowed = guard.policy.disallowed(tracer.facts)
        if disallowed:
            raise TorchComputeFallback(f"captured calls ran ATen compute: {disallowed[0]}")
        floor_us = roofline_floor_ms(set_bytes, setup.bandwidth) * 1e3
        row = graph_row(workload, times, figure, setup.rounds, set_bytes, floor_us)
        row["fresh_sets_per_round"] = len(pool.sets)
        row["warm_calls_per_graph"] = warm
        row["figure_source"] = figure_source
        rows[workload.name] = row
        guard.check_environment(f"while timing {workload.name}")
        setup.check_plausible(workload.name, row, "candidate_cold_us")
        if int(mismatches.item()):
            wrong_outputs.append(f"{workload.name}: {int(mismatches.item())} replayed outputs")
        setup.laps["checks"] = setup.laps.get("checks", 0.0) + monotonic() - checked
        del pool
    if wrong_outputs:
        raise TimedOutputWrong(screen_refusal(wrong_outputs))
    return rows


def promotion_figure(
    task: str | None, captured: str | None, set_bytes: int, l2_bytes: int
) -> tuple[str, str]:
    """(figure, why) for one workload: the task's `promotion_figure` when it names one; a
    capture's, which follows whether the model had just written the inputs; else warm when
    a set fits in the L2."""
    if task:
        return task, "task"
    if captured:
        return captured, "captured"
    return ("warm" if set_bytes <= l2_bytes else "cold"), "l2-size"


def _traced(function, tracer):
    """The candidate with each of its calls (warm-ups, captures) under the timed tracer."""

    def traced_call(*args, **kwargs):
        with tracer:
            return function(*args, **kwargs)

    return traced_call


def _eager_rows(setup: TimingSetup) -> dict:
    """The eager loop: each sample one traced call between events, rounds interleaved."""
    guard, declaration, roles = setup.guard, setup.declaration, setup.roles
    rows, wrong_outputs = {}, []
    for workload in declaration.workloads:
        samples = {role: [] for role in roles}
        foreign = mismatched = pool_size = 0
        witness = None
        for round_index in range(setup.rounds):
            pool = setup.pool(workload, setup.per_round, round_index)
            pool_size = len(pool.sets)
            if witness is None:
                calls = {"eager": setup.rounds * setup.per_round}
                witness = setup.witnesses.for_workload(workload.name, pool, calls)
            witness.next_round(pool, round_index)
            names = list(roles)
            names = names[round_index % len(names) :] + names[: round_index % len(names)]
            for role in names:
                times, wrong_stream, wrong_output = _time_role(
                    guard, roles[role], role, declaration.params, pool, setup.per_round,
                    setup.flush, witness,
                )  # fmt: skip
                samples[role].append(times)
                if role == "candidate":
                    foreign, mismatched = foreign + wrong_stream, mismatched + wrong_output
            sizes = pool.sets[0], pool.expected[0]
            del pool
        row = _summarise(workload, *sizes, samples, setup.bandwidth)
        row["fresh_sets_per_round"] = pool_size
        row["empty_launch_us"] = tick_median(_time_empty_launch(setup.flush, setup.per_round)) * 1e3
        rows[workload.name] = row
        if foreign:
            raise SideStreamWork(f"{workload.name}: {foreign} timed launches on another stream")
        setup.check_plausible(workload.name, row, "candidate_median_us")
        if mismatched:
            wrong_outputs.append(f"{workload.name}: {mismatched} timed outputs")
    if wrong_outputs:
        raise TimedOutputWrong(screen_refusal(wrong_outputs))
    return rows


def _time_role(guard, function, role, params, pool, count, flush, witness=None):
    """One round of samples for one role; returns per-sample milliseconds. `witness` is
    offered every call's outputs (`replay_witnesses.py`; it keeps the candidate's only)."""
    # Several live copies at different addresses, used in turn: a ~5 us call's time depends on
    # where its buffers landed (pages, channels), and one placement per process made medians
    # of the same code differ between processes.
    copies = LIVE_COPIES
    lives = [[t.clone() for t in pool.sets[0]] for _ in range(copies)]
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    mismatches = torch.zeros((), dtype=torch.int64, device=flush.device)
    stream = guard.streams.current()
    # Timed calls are traced like the cases (host work only: the device is behind the host),
    # so a solution cannot compute with PyTorch only once the cases are over.
    tracer = TimedCallTracer(expected_stream=stream)
    identities = _loop_identities()
    unchanged = identities.unchanged  # bound now: a later swap of the method changes nothing
    recent = []
    torch.cuda._sleep(BACKLOG_CYCLES)
    with guard.streams:
        for index in range(count):
            torch.cuda._sleep(SPIN_CYCLES)
            chosen = index % len(pool.sets)
            live = lives[index % copies]
            for target, source in zip(live, pool.sets[chosen], strict=True):
                target.copy_(source)
            flush.zero_()  # after the reset, so the inputs are evicted from L2 too
            starts[index].record()
            with tracer:
                result = function(*live, **params)
            if not unchanged():
                raise PatchedBetweenCalls(
                    f"{', '.join(identities.changed()[:4])} changed during {role}'s timed calls"
                )
            ends[index].record()
            produced = tuple(result) if isinstance(result, tuple | list) else (result,)
            if len(produced) != len(pool.expected[chosen]):
                mismatches += 1
            for output, got in enumerate(produced[: len(pool.expected[chosen])]):
                mismatches += pool.mismatch(got, chosen, output)
            if witness is not None:
                witness(role, "eager", [produced], [chosen])
            recent = _keep_recent(recent, produced, role)  # the same allocator pattern per role
    foreign = guard.streams.foreign_launches(stream)
    foreign += sum(1 for fact in tracer.facts if fact.side_stream)
    disallowed = guard.policy.disallowed(tracer.facts) if role == "candidate" else []
    if disallowed:
        raise TorchComputeFallback(f"timed calls ran ATen compute: {disallowed[0]}")
    torch.cuda.synchronize()
    guard.check_environment(f"while timing {role}")
    times = [start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)]
    guard.check_environment(f"while reading {role}'s events")
    return times, foreign, int(mismatches.item())


def _loop_identities() -> LoopIdentities:
    """What the timing loop looks up between one timed call and the next."""
    tensor = (
        "copy_", "zero_", "abs_", "all", "any", "logical_not_", "view", "contiguous", "__ne__",
        "__iadd__", "data_ptr", "numel", "element_size", "is_floating_point", "shape", "dtype",
    )  # fmt: skip
    names = ("len", "isinstance", "zip", "int", "range", "type", "tuple", "list", "enumerate")
    attributes = [(torch.Tensor, name) for name in tensor]
    attributes += [(torch, name) for name in ("sub", "le", "ones", "zeros")]
    attributes += [(torch.cuda, name) for name in ("_sleep", "synchronize")]
    attributes += [(torch.cuda.Event, name) for name in ("record", "elapsed_time")]
    attributes += [(builtins, name) for name in names]
    attributes += [(TorchDispatchMode, name) for name in ("__enter__", "__exit__")]
    namespaces = [sys.modules[__name__], FreshPool, TimedCallTracer, CandidateTracer]
    return LoopIdentities(attributes, namespaces)


def _time_empty_launch(flush, count: int) -> list[float]:
    """An empty kernel timed like a sample: the process's fixed cost of a bracketed launch.

    On the H200 this cost (about 3.5 us) differs between processes by up to 0.2 us and moves
    every ~5 us median with it; reporting it lets a reader see that shift apart from the
    kernel's own time.
    """
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    torch.cuda._sleep(BACKLOG_CYCLES)
    for start, end in zip(starts, ends, strict=True):
        torch.cuda._sleep(SPIN_CYCLES)
        flush.zero_()
        start.record()
        torch.cuda._sleep(0)
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)]


def _keep_recent(recent, produced, role):
    """Keep the last outputs alive so a replayed buffer cannot pass as a fresh allocation."""
    from gates.evaluator.detectors.replay import OutputMemoryReused

    for tensor in produced:
        for kept in recent:
            if tensor.data_ptr() == kept.data_ptr() and tensor.numel():
                raise OutputMemoryReused(f"{role} returned the same buffer for two timed calls")
    return list(produced)


def _summarise(workload, inputs, outputs, samples, bandwidth) -> dict:
    moved = sum(t.numel() * t.element_size() for t in inputs)
    moved += sum(t.numel() * t.element_size() for t in outputs)
    row = {
        "weight": workload.weight,
        "bytes": moved,
        "floor_us": roofline_floor_ms(moved, bandwidth) * 1e3,
    }
    for role, rounds in samples.items():
        everything = [value for values in rounds for value in values]
        row[f"{role}_median_us"] = tick_median(everything) * 1e3
        row[f"{role}_spread"] = spread(everything)
        row[f"{role}_round_medians_us"] = [tick_median(values) * 1e3 for values in rounds]
    if "baseline" in samples:
        row["speedup"] = row["baseline_median_us"] / row["candidate_median_us"]
    return row

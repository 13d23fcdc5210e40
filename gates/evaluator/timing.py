"""Device-only timing on CUDA: input reset and L2 flush queued before each start event, no
host synchronisation between samples, events read after the loop, roles interleaved.

A spin kernel queued ahead of every sample keeps the device behind the host, so each call is
already queued when the device reaches its start event: launch overhead stays out of the
measured interval.

Every round draws a fresh pool of input sets from seeds derived from the nonce, shared by the
roles of that round: inputs no call has seen before, so a solution that remembers outputs
(keyed by pointer, shape or values) has nothing to replay. The trusted baseline computes each
set's expected outputs untimed; every timed output, of every role, is compared on the device
with them (bit for bit under a bit-exact contract, within twice the contract's tolerance
otherwise, since both lie within the contract of the reference). Every role runs the same
comparison kernels, so the device sees the same sequence whichever role is timed.

Medians are tick medians (see `statistics`): event times come in 32 ns ticks.
"""

import builtins
import math
import random
import sys
from time import monotonic  # bound before the solution is imported

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gates.evaluator.detectors.compute_fallback import TorchComputeFallback
from gates.evaluator.detectors.concurrency import SideStreamWork
from gates.evaluator.detectors.plausibility import check_plausible, roofline_floor_ms
from gates.evaluator.detectors.replay import TimedOutputWrong
from gates.evaluator.detectors.transient_patch import LoopIdentities, PatchedBetweenCalls
from gates.evaluator.promotion import promotion_verdict
from gates.evaluator.statistics import spread, tick_median
from gates.evaluator.tracing import CandidateTracer, TimedCallTracer

BANDWIDTH_BYTES = 1 << 30
# A flush of twice the L2 left part of the inputs cached in some processes on the H200
# (medians of one kernel at 4.0 us in some processes, 4.7 us in others); eight times clears it.
L2_FLUSH_FACTOR = 8
BACKLOG_CYCLES = 4_000_000  # about 2 ms of spinning before each run of samples
# About 250 us per sample: the device stays behind the host, whose work per sample (input
# reset, flush, events, the traced call, the output comparison) takes 150-250 us on the H200.
SPIN_CYCLES = 500_000
LIVE_COPIES = 16  # input buffer sets per role, used in turn
# Device memory for one round's pool: inputs, expected outputs and their comparison bounds.
# A workload whose set is larger reuses each set within the round (for such sizes replaying
# an output costs about as much as computing it).
POOL_BYTES = 2 << 30
TIMING_TOLERANCE_FACTOR = 2  # candidate and baseline each within the contract of the reference


def time_roles(request, declaration, guard, roles, graphs: bool) -> dict:
    """Time every role on every declared workload (each sample a CUDA graph replay when
    `graphs`); returns the timing report."""
    device = guard.device
    properties = torch.cuda.get_device_properties(device)
    flush_bytes = max(L2_FLUSH_FACTOR * properties.L2_cache_size, 256 << 20)
    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device=device)
    bandwidth = measure_bandwidth(device)
    clock_before = measure_sm_clock_mhz()
    rounds = max(1, request.timing_rounds)
    per_round = math.ceil(request.timing_samples / rounds)
    seeds = random.Random(request.nonce)
    report = {"workloads": {}}
    wrong_outputs = []
    pool_seconds = 0.0
    for workload in declaration.workloads:
        samples = {role: [] for role in roles}
        foreign = mismatched = pool_size = 0
        for round_index in range(rounds):
            drawn = monotonic()
            pool = FreshPool(declaration, workload, roles["baseline"], seeds, per_round, device)
            pool_seconds += monotonic() - drawn
            pool_size = len(pool.sets)
            names = list(roles)
            names = names[round_index % len(names) :] + names[: round_index % len(names)]
            for role in names:
                times, wrong_stream, wrong_output = _time_role(
                    guard, roles[role], role, declaration.params, pool, per_round, flush, graphs
                )
                samples[role].append(times)
                if role == "candidate":
                    foreign, mismatched = foreign + wrong_stream, mismatched + wrong_output
            sizes = pool.sets[0], pool.expected[0]
            del pool
        row = _summarise(workload, *sizes, samples, bandwidth)
        row["fresh_sets_per_round"] = pool_size
        row["empty_launch_us"] = tick_median(_time_empty_launch(flush, per_round)) * 1e3
        report["workloads"][workload.name] = row
        if foreign:
            raise SideStreamWork(f"{workload.name}: {foreign} timed launches on another stream")
        check_plausible(workload.name, row["candidate_median_us"] / 1e3, row["floor_us"] / 1e3)
        if mismatched:
            wrong_outputs.append(f"{workload.name}: {mismatched} timed outputs")
    if wrong_outputs:
        raise TimedOutputWrong(
            f"{', '.join(wrong_outputs)} differ from the baseline's outputs for the same fresh "
            "inputs"
        )
    report.update(
        samples_per_role=rounds * per_round,
        rounds=rounds,
        l2_flush_bytes=flush_bytes,
        bandwidth_gb_per_s=round(bandwidth / 1e6, 1),
        cuda_graphs=graphs,
        sm_clock_mhz=[clock_before, measure_sm_clock_mhz()],
        fresh_pool_seconds=round(pool_seconds, 3),
    )
    report["promotion"] = promotion_verdict(report, list(roles))
    return report


class FreshPool:
    """One round's input sets, never seen by any call before, with the baseline's outputs for
    each and what a timed output is compared with."""

    def __init__(self, declaration, workload, baseline, seeds, wanted: int, device) -> None:
        contract = declaration.contract
        factor = TIMING_TOLERANCE_FACTOR
        self.atol, self.rtol = factor * contract.atol, factor * contract.rtol
        self.exact = contract.mode == "bit_exact"
        draw = declaration.make_input_sets
        self.sets = draw(workload, 1, seeds.getrandbits(31), "normal", device)
        self.expected = [_untimed_outputs(baseline, self.sets[0], declaration.params)]
        tensors = self.sets[0] + self.expected[0] * 5  # outputs, and their bounds in FP32
        set_bytes = sum(t.numel() * t.element_size() for t in tensors)
        count = min(wanted, max(2, POOL_BYTES // max(1, set_bytes)))
        self.sets += draw(workload, count - 1, seeds.getrandbits(31), "normal", device)
        for inputs in self.sets[1:]:
            self.expected.append(_untimed_outputs(baseline, inputs, declaration.params))
        columns = zip(*self.expected, strict=True)  # per output: its value in every set
        per_output = [self._references(column) for column in columns]
        self.checks = list(zip(*per_output, strict=True))  # per set: every output's reference

    def _references(self, outputs) -> list[tuple[torch.Tensor, ...]]:
        """Per set, what one output is compared with: itself (bit-exact contract or not a
        float), or the baseline's value in FP32 (FP64 for FP64) with its bound."""
        want = outputs[0]
        if self.exact or not want.is_floating_point():
            return [(output,) for output in outputs]
        wide = torch.float64 if want.dtype == torch.float64 else torch.float32
        stacked = torch.stack(outputs).to(wide)
        bounds = stacked.abs().mul_(self.rtol).add_(self.atol)
        return list(zip(stacked.unbind(), bounds.unbind(), strict=True))

    def mismatch(self, got: torch.Tensor, index: int, output: int) -> torch.Tensor:
        """A device boolean scalar, True if `got` is not the expected output of set `index`."""
        reference = self.checks[index][output]
        want = reference[0]
        if type(got) is not torch.Tensor:  # a subclass could answer the comparison itself
            return torch.ones((), dtype=torch.bool, device=want.device)
        expected = self.expected[index][output]
        if got.shape != want.shape or got.dtype != expected.dtype or got.device != want.device:
            return torch.ones((), dtype=torch.bool, device=want.device)
        if len(reference) == 1:
            return _differs(got, want)
        distance = torch.sub(got, want).abs_()  # promoted to the comparison's width
        return torch.le(distance, reference[1]).all().logical_not_()


def _time_role(guard, function, role, params, pool, count, flush, graphs):
    """One round of samples for one role; returns per-sample milliseconds."""
    # Several live copies at different addresses, used in turn: a ~5 us call's time depends on
    # where its buffers landed (pages, channels), and one placement per process made medians
    # of the same code differ between processes. A graph replays one fixed set.
    copies = 1 if graphs else LIVE_COPIES
    lives = [[t.clone() for t in pool.sets[0]] for _ in range(copies)]
    replay = capture_graph(function, lives[0], params) if graphs else None
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    mismatches = torch.zeros((), dtype=torch.int64, device=flush.device)
    stream = guard.streams.current()
    # Timed calls are traced like the cases (host work only: the device is behind the host),
    # so a solution cannot compute with PyTorch only once the cases are over.
    tracer = TimedCallTracer(guard.extra_ops, expected_stream=stream)
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
                result = replay() if replay else function(*live, **params)
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
            if not graphs:  # every role keeps its last outputs alive: the same allocator pattern
                recent = _keep_recent(recent, produced, role)
    foreign = guard.streams.foreign_launches(stream) if not graphs else 0
    foreign += len(tracer.side_stream_ops)
    if role == "candidate" and tracer.disallowed:
        raise TorchComputeFallback(f"timed calls ran ATen compute: {tracer.disallowed[0]}")
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


def _untimed_outputs(function, inputs, params) -> list[torch.Tensor]:
    """A trusted role's outputs for one input set, called on copies before any timing."""
    result = function(*[t.clone() for t in inputs], **params)
    return list(result) if isinstance(result, tuple | list) else [result]


def _keep_recent(recent, produced, role):
    """Keep the last outputs alive so a replayed buffer cannot pass as a fresh allocation."""
    from gates.evaluator.detectors.replay import OutputMemoryReused

    for tensor in produced:
        for kept in recent:
            if tensor.data_ptr() == kept.data_ptr() and tensor.numel():
                raise OutputMemoryReused(f"{role} returned the same buffer for two timed calls")
    return list(produced)


def _differs(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    return (got.contiguous().view(view) != want.view(view)).any()


def capture_graph(function, live, params):
    """Capture one call in a CUDA graph (after warm-up) and return a replay that yields it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            function(*live, **params)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = function(*live, **params)

    def replay():
        graph.replay()
        return static

    return replay


def measure_sm_clock_mhz() -> float:
    """The SM clock in MHz, from timing a kernel that spins a known number of cycles.

    Reported with every timing so a reader can tell a throttled device from a slow kernel.
    """
    cycles = 20_000_000
    torch.cuda._sleep(cycles)  # the first spin lifts an idle clock
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return round(cycles / start.elapsed_time(end) / 1e3, 1)


def measure_bandwidth(device) -> float:
    """Device-memory bandwidth in bytes per millisecond, from timed copies (best of five)."""
    source = torch.empty(BANDWIDTH_BYTES // 4, dtype=torch.int32, device=device)
    target = torch.empty_like(source)
    best = math.inf
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    del source, target
    return 2 * BANDWIDTH_BYTES / best


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

"""Where does a ~5 us kernel's measured time vary between evaluator processes?

The evaluator's timing of the same RMSNorm kernel differed by up to 15% between processes
while rounds within one process agreed to about 1%. This script separates the suspects: in
each of several fresh processes it imports the baseline several times (separate module
loads, so separate kernel binaries in device memory) and times every import with variants
of the sampling loop, interleaved in rounds.

Run from the repository root on a CUDA machine: `python benchmarks/timing_diagnosis.py`.
Prints a table; writes $OUT/timing_diagnosis.json when $OUT is set.
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPERATOR = "rms_norm"
WORKLOADS = ("action_b1", "prefix_b1")
IMPORTS = 2
ROUNDS = 5
PER_ROUND = 200
ARENA_BYTES = 1 << 30
POOLS = 16
VARIANTS = {
    # name: (live input copies, where they live, where outputs are allocated)
    "clones16": (16, "clones", "default"),
    "noflush16": (16, "clones", "noflush"),
    "empty": (16, "clones", "empty"),
    "emptynoflush": (16, "clones", "emptynoflush"),
}


def child(task: Path) -> dict:
    import torch

    from gates.evaluator import loading
    from gates.tasks.solution import load_solution
    from operators import REGISTRY

    device = torch.device("cuda")
    declaration = REGISTRY.declaration(OPERATOR)
    solution = load_solution(task / "solution")
    scratch = Path(tempfile.mkdtemp(prefix="timing-diag-"))
    functions = []
    for index in range(IMPORTS):
        folder = loading.write_sources(solution, scratch / f"copy{index}")
        functions.append(loading.import_entry(solution, folder, f"copy{index}"))
    flush = torch.empty(4 * (512 << 20 >> 2), dtype=torch.int32, device=device)
    arena = torch.empty(ARENA_BYTES, dtype=torch.uint8, device=device)
    params = declaration.params
    results = {"clock_mhz_start": _clock_mhz()}
    for workload in declaration.workloads:
        if workload.name not in WORKLOADS:
            continue
        sets = [declaration.make_inputs(workload, seed, "normal", device) for seed in (0, 1)]
        for function in functions:  # compile and load before timing
            function(*sets[0], **params)
        torch.cuda.synchronize()
        samples = {(v, i): [] for v in VARIANTS for i in range(IMPORTS)}
        for round_index in range(ROUNDS):
            for variant, knobs in VARIANTS.items():
                for index in range(IMPORTS):
                    order = (index + round_index) % IMPORTS
                    times = _sample(functions[order], sets, params, flush, arena, *knobs)
                    samples[(variant, order)].extend(times)
        results[workload.name] = {
            variant: [statistics.median(samples[(variant, i)]) * 1e3 for i in range(IMPORTS)]
            for variant in VARIANTS
        }
        results[workload.name + "/interpolated"] = {
            variant: [_grouped_median(samples[(variant, i)]) * 1e3 for i in range(IMPORTS)]
            for variant in VARIANTS
        }
    results["clock_mhz_end"] = _clock_mhz()
    return results


def _clock_mhz() -> float:
    """The SM clock, from timing a kernel that spins a known number of cycles."""
    import torch

    cycles = 20_000_000
    torch.cuda._sleep(cycles)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / start.elapsed_time(end) / 1e3


def _grouped_median(values):
    ordered = sorted(values)
    levels = sorted(set(ordered))
    gaps = [b - a for a, b in zip(levels, levels[1:], strict=False) if b - a > 1e-9]
    middle = statistics.median(ordered)
    if not gaps:
        return middle
    tick = min(gaps)
    low = middle - tick / 2
    below = sum(1 for v in ordered if v < low)
    at = sum(1 for v in ordered if low <= v < low + tick)
    return low + (len(ordered) / 2 - below) / max(at, 1) * tick


def _sample(function, sets, params, flush, arena, copies, placement, outputs):
    import random

    import torch

    if placement == "clones":
        lives = [[t.clone() for t in sets[0]] for _ in range(copies)]
    else:
        lives = []
        for _ in range(copies):
            live = []
            for t in sets[0]:
                nbytes = t.numel() * t.element_size()
                offset = random.randrange(0, (ARENA_BYTES - nbytes) // 256) * 256
                view = arena[offset : offset + nbytes].view(t.dtype).view(t.shape)
                live.append(view)
            lives.append(live)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(PER_ROUND)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(PER_ROUND)]
    window = flush.numel() // 4
    pools = _pools(function, lives[0], params) if outputs == "pools" else []
    graphs = [_capture(function, live, params) for live in lives] if outputs == "graphs" else []
    kept = []
    torch.cuda._sleep(4_000_000)
    for index in range(PER_ROUND):
        torch.cuda._sleep(300_000)
        live = lives[index % copies]
        for target, source in zip(live, sets[index % 2], strict=True):
            target.copy_(source)
        if "noflush" not in outputs:
            flush[:window].zero_()
        if outputs in ("warm", "emptywarm"):
            torch.cuda._sleep(0)  # an empty launch after the flush: the launch path is warm
        context = torch.cuda.use_mem_pool(pools[index % POOLS]) if pools else _no_pool()
        with context:
            starts[index].record()
            if graphs:
                out = graphs[index % copies]()
            elif outputs.startswith("empty"):
                out = torch.cuda._sleep(0)
            else:
                out = function(*live, **params)
            ends[index].record()
        kept = (kept + [out])[-2:]
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]


def _capture(function, live, params):
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        function(*live, **params)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = function(*live, **params)

    def replay():
        graph.replay()
        return static

    return replay


_POOL_CACHE = {}


def _pools(function, live, params):
    """Memory pools with a cached segment each, so outputs land in different places."""
    import torch

    if "pools" not in _POOL_CACHE:
        _POOL_CACHE["pools"] = [torch.cuda.MemPool() for _ in range(POOLS)]
    pools = _POOL_CACHE["pools"]
    for pool in pools:
        with torch.cuda.use_mem_pool(pool):
            keep = [function(*live, **params) for _ in range(3)]
        del keep
    torch.cuda.synchronize()
    return pools


@contextlib.contextmanager
def _no_pool():
    yield


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, help="(internal) time in this process")
    parser.add_argument("--processes", type=int, default=5)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    scratch = Path(tempfile.mkdtemp(prefix="timing-diag-task-"))
    task, _ = write_package(REGISTRY.declaration(OPERATOR), scratch)
    runs = []
    for index in range(args.processes):
        output = subprocess.run(
            [sys.executable, __file__, "--child", str(task)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        runs.append(json.loads(output.strip().splitlines()[-1]))
        print(f"process {index} done", flush=True)
    report = {"runs": runs, "summary": _summary(runs)}
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "timing_diagnosis.json").write_text(json.dumps(report, indent=2))
    return 0


def _summary(runs: list[dict]) -> dict:
    def spread(values):
        return (max(values) - min(values)) / statistics.median(values)

    summary = {}
    print(f"{'workload':<10} {'variant':<10} {'within':>7} {'across0':>8} {'acrossM':>8}  medians")
    for workload in [name for name in runs[0] if not name.startswith("clock")]:
        for variant in VARIANTS:
            per_process = [run[workload][variant] for run in runs]
            within = statistics.median(spread(values) for values in per_process)
            across_first = spread([values[0] for values in per_process])
            across_mean = spread([statistics.mean(values) for values in per_process])
            summary[f"{workload}/{variant}"] = {
                "within_process_across_imports": within,
                "across_processes_first_import": across_first,
                "across_processes_mean_of_imports": across_mean,
            }
            shown = " | ".join(" ".join(f"{v:.2f}" for v in values) for values in per_process)
            print(
                f"{workload:<10} {variant:<10} {within:>6.1%} {across_first:>7.1%} "
                f"{across_mean:>7.1%}  {shown}"
            )
    print("clock MHz per process:", [(r["clock_mhz_start"], r["clock_mhz_end"]) for r in runs])
    return summary


if __name__ == "__main__":
    sys.exit(main())

"""Where does a ~5 us kernel's measured time vary between evaluator processes?

The evaluator's timing of one RMSNorm kernel differed by several percent between processes
while rounds inside one process agreed to about 1%. This script separates the suspects: in
each of several fresh processes it imports the baseline more than once (separate module
loads, so separate kernel binaries) and times every import under variants of the sampling
loop, interleaved in rounds. Every variant keeps the evaluator's frame: a spin kernel keeps
the device behind the host, events bracket one call, no host sync inside the loop.

Run from the repository root on a CUDA machine:
    python benchmarks/timing_diagnosis.py [--processes 6] [--variants clones16,empty,...]
Prints a table (within-process spread across imports, across-process spread of the first
import and of the imports' mean, every median); writes $OUT/timing_diagnosis.json when $OUT
is set. `--list` names the variants.
"""

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPERATOR = "rms_norm"
ROUNDS = 5
PER_ROUND = 200
FLUSH_BYTES = 512 << 20
ARENA_BYTES = 1 << 30
POOLS = 16


@dataclass(frozen=True)
class Variant:
    """One way of sampling; the defaults are the evaluator's loop."""

    copies: int = 16  # live input sets used in turn
    arena: bool = False  # live inputs at random offsets in a 1 GiB buffer instead of clones
    call: str = "kernel"  # kernel | graph (a captured call per live set) | empty (no kernel)
    outputs: str = "default"  # default | pools (16 memory pools in turn)
    keep: int = 1  # outputs kept alive
    reset: bool = True  # copy a pristine set into the live inputs before each sample
    flush: str = "write"  # write | read | window (4 windows in turn) | none
    spin: bool = True  # a ~150 us spin kernel before each sample
    warm: bool = False  # an empty launch after the flush, before the start event
    streams: int = 0  # samples spread over this many side streams


VARIANTS = {
    "clones16": Variant(),
    "keep16": Variant(keep=16),
    "nospin": Variant(spin=False),
    "readflush": Variant(flush="read"),
    "arena64": Variant(copies=64, arena=True),
    "arena64keep8": Variant(copies=64, arena=True, keep=8),
    "noreset": Variant(reset=False),
    "flushwindow": Variant(flush="window"),
    "streams4": Variant(streams=4),
    "pools16": Variant(outputs="pools"),
    "arena64pools16": Variant(copies=64, arena=True, outputs="pools"),
    "graph16": Variant(call="graph"),
    "warm16": Variant(warm=True),
    "noflush16": Variant(flush="none"),
    "empty": Variant(call="empty"),
    "emptywarm": Variant(call="empty", warm=True),
    "emptynoflush": Variant(call="empty", flush="none"),
}
DEFAULT_VARIANTS = "clones16,noflush16,empty,emptynoflush"


def child(task: Path, names: list[str], workloads: list[str], imports: int) -> dict:
    import torch

    from gates.evaluator import loading
    from gates.evaluator.device_rates import measure_sm_clock_mhz
    from gates.tasks.solution import load_solution
    from operators import REGISTRY

    device = torch.device("cuda")
    declaration = REGISTRY.declaration(OPERATOR)
    solution = load_solution(task / "solution")
    scratch = Path(tempfile.mkdtemp(prefix="timing-diag-"))
    functions = []
    for index in range(imports):
        folder = loading.write_sources(solution, scratch / f"copy{index}")
        functions.append(loading.import_entry(solution, folder, f"copy{index}"))
    buffers = {
        "flush": torch.empty(4 * FLUSH_BYTES // 4, dtype=torch.int32, device=device),
        "arena": torch.empty(ARENA_BYTES, dtype=torch.uint8, device=device),
        "pools": [torch.cuda.MemPool() for _ in range(POOLS)],
    }
    results = {"clock_mhz_start": measure_sm_clock_mhz()}
    for workload in declaration.workloads:
        if workload.name not in workloads:
            continue
        sets = [declaration.make_inputs(workload, seed, "normal", device) for seed in (0, 1)]
        for function in functions:  # compile and load before timing
            function(*sets[0], **declaration.params)
        torch.cuda.synchronize()
        samples = {(name, i): [] for name in names for i in range(imports)}
        for round_index in range(ROUNDS):
            for name in names:
                for index in range(imports):
                    order = (index + round_index) % imports
                    times = _sample(
                        functions[order], sets, declaration.params, buffers, VARIANTS[name]
                    )
                    samples[(name, order)].extend(times)
        results[workload.name] = {
            name: [statistics.median(samples[(name, i)]) * 1e3 for i in range(imports)]
            for name in names
        }
    results["clock_mhz_end"] = measure_sm_clock_mhz()
    return results


def _sample(function, sets, params, buffers, variant: Variant) -> list[float]:
    """One round of PER_ROUND samples under `variant`; milliseconds per sample."""
    import torch

    from gates.evaluator.graph_timing import capture_graph

    lives = [_live_inputs(sets[0], buffers["arena"], variant.arena) for _ in range(variant.copies)]
    if variant.outputs == "pools":
        _fill_pools(function, lives[0], params, buffers["pools"])
    graphs = []
    if variant.call == "graph":
        graphs = [capture_graph(function, live, params) for live in lives]
    streams = [torch.cuda.Stream() for _ in range(variant.streams)]
    flush = buffers["flush"]
    window = FLUSH_BYTES // 4
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(PER_ROUND)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(PER_ROUND)]
    kept = []
    torch.cuda._sleep(4_000_000)
    for index in range(PER_ROUND):
        stream = streams[index % len(streams)] if streams else None
        if stream is not None:
            stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            if variant.spin:
                torch.cuda._sleep(300_000)
            live = lives[index % variant.copies]
            if variant.reset:
                for target, source in zip(live, sets[index % 2], strict=True):
                    target.copy_(source)
            if variant.flush == "write":
                flush[:window].zero_()
            elif variant.flush == "read":
                flush[:window].max()
            elif variant.flush == "window":
                flush[(index % 4) * window : (index % 4 + 1) * window].zero_()
            if variant.warm:
                torch.cuda._sleep(0)
            pool = buffers["pools"][index % POOLS] if variant.outputs == "pools" else None
            with torch.cuda.use_mem_pool(pool) if pool is not None else contextlib.nullcontext():
                starts[index].record()
                if variant.call == "graph":
                    out = graphs[index % variant.copies]()
                elif variant.call == "empty":
                    out = torch.cuda._sleep(0)
                else:
                    out = function(*live, **params)
                ends[index].record()
            kept = (kept + [out])[-variant.keep :]
        if stream is not None:
            torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)]


def _live_inputs(inputs, arena, in_arena: bool):
    """A live copy of one input set: clones, or views at random 256-byte offsets of `arena`."""
    if not in_arena:
        return [t.clone() for t in inputs]
    live = []
    for tensor in inputs:
        size = tensor.numel() * tensor.element_size()
        offset = random.randrange(0, (arena.numel() - size) // 256) * 256
        view = arena[offset : offset + size].view(tensor.dtype).view(tensor.shape)
        view.copy_(tensor)
        live.append(view)
    return live


def _fill_pools(function, live, params, pools) -> None:
    """Give every pool a cached segment, so no timed call allocates from the driver."""
    import torch

    for pool in pools:
        with torch.cuda.use_mem_pool(pool):
            outputs = [function(*live, **params) for _ in range(3)]
        del outputs
    torch.cuda.synchronize()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help="comma-separated names")
    parser.add_argument("--workloads", default="action_b1,prefix_b1")
    parser.add_argument("--imports", type=int, default=2, help="module loads per process")
    parser.add_argument("--list", action="store_true", help="print the variants and exit")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.variants.split(",")
    if args.list:
        for name, variant in VARIANTS.items():
            print(f"{name:<16} {asdict(variant)}")
        return 0
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        print(f"unknown variants {unknown}; --list names them", file=sys.stderr)
        return 2
    workloads = args.workloads.split(",")
    if args.child:
        print(json.dumps(child(args.child, names, workloads, args.imports)))
        return 0
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    scratch = Path(tempfile.mkdtemp(prefix="timing-diag-task-"))
    task, _ = write_package(REGISTRY.declaration(OPERATOR), scratch)
    command = [sys.executable, __file__, "--child", str(task), "--variants", args.variants]
    command += ["--workloads", args.workloads, "--imports", str(args.imports)]
    runs = []
    for index in range(args.processes):
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(output.strip().splitlines()[-1]))
        print(f"process {index} done", flush=True)
    report = {"variants": names, "runs": runs, "summary": _summary(runs, names)}
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "timing_diagnosis.json").write_text(json.dumps(report, indent=2))
    return 0


def _summary(runs: list[dict], names: list[str]) -> dict:
    def spread(values):
        return (max(values) - min(values)) / statistics.median(values)

    summary = {}
    print(f"{'workload':<10} {'variant':<15} {'within':>7} {'across0':>8} {'acrossM':>8}  medians")
    for workload in [name for name in runs[0] if not name.startswith("clock")]:
        for name in names:
            per_process = [run[workload][name] for run in runs]
            within = statistics.median(spread(values) for values in per_process)
            across_first = spread([values[0] for values in per_process])
            across_mean = spread([statistics.mean(values) for values in per_process])
            summary[f"{workload}/{name}"] = {
                "within_process_across_imports": within,
                "across_processes_first_import": across_first,
                "across_processes_mean_of_imports": across_mean,
            }
            shown = " | ".join(" ".join(f"{v:.2f}" for v in values) for values in per_process)
            print(
                f"{workload:<10} {name:<15} {within:>6.1%} {across_first:>7.1%} "
                f"{across_mean:>7.1%}  {shown}"
            )
    clocks = [(run["clock_mhz_start"], run["clock_mhz_end"]) for run in runs]
    print("SM clock MHz per process (start, end):", clocks)
    return summary


if __name__ == "__main__":
    sys.exit(main())

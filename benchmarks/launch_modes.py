"""Is the fixed cost of an event-bracketed launch set per process, per stream or per queue?

On the H200 an empty kernel timed between two events costs about 3.52 us in some processes
and 3.70 us in others, and every ~5 us median moves with it. This script times, in each of
several fresh processes, an empty kernel and the RMSNorm baseline on the current stream, on
several new streams and on a high-priority stream, in the evaluator's frame (a spin kernel
ahead of each sample, L2 flush, no host sync in the loop). Run once per setting of
CUDA_DEVICE_MAX_CONNECTIONS (how many hardware queues the streams are spread over).

Run from the repository root on a CUDA machine:
    python benchmarks/launch_modes.py [--processes 6] [--connections default,1,32] [--pin 0,8]
    python benchmarks/launch_modes.py --batched  # K back-to-back calls per sample instead
Prints one row per process and stream; writes $OUT/launch_modes.json when $OUT is set.

Its answer: docs/benchmarks.md, "The kernel evaluator".
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SAMPLES = 300
ROUNDS = 3
NEW_STREAMS = 6
WORKLOAD = "action_b1"


def _baseline():
    """The RMSNorm declaration and its baseline solution, imported from a generated task."""
    from gates.evaluator import loading
    from gates.tasks.generation import write_package
    from gates.tasks.solution import load_solution
    from operators import REGISTRY

    declaration = REGISTRY.declaration("rms_norm")
    scratch = Path(tempfile.mkdtemp(prefix="launch-modes-"))
    task, _ = write_package(declaration, scratch / "tasks")
    solution = load_solution(task / "solution")
    folder = loading.write_sources(solution, scratch / "solution")
    return declaration, loading.import_entry(solution, folder, "solution")


def child(cpus: str) -> dict:
    if cpus:
        os.sched_setaffinity(0, {int(cpu) for cpu in cpus.split("+")})
    import torch

    from gates.evaluator.timing import SPIN_CYCLES

    device = torch.device("cuda")
    declaration, function = _baseline()
    workload = next(w for w in declaration.workloads if w.name == WORKLOAD)
    inputs = declaration.make_inputs(workload, 0, "normal", device)
    flush = torch.empty((480 << 20) // 4, dtype=torch.int32, device=device)
    streams = {"current": torch.cuda.current_stream()}
    for index in range(NEW_STREAMS):
        streams[f"new{index}"] = torch.cuda.Stream()
    streams["high"] = torch.cuda.Stream(priority=-1)
    calls = {
        "empty": lambda: torch.cuda._sleep(0),
        "rmsnorm": lambda: function(*inputs, **declaration.params),
    }
    for stream in streams.values():
        with torch.cuda.stream(stream):
            calls["rmsnorm"]()
    torch.cuda.synchronize()
    samples = {(s, c): [] for s in streams for c in calls}
    for _ in range(ROUNDS):
        for name, stream in streams.items():
            for call_name, call in calls.items():
                starts = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
                ends = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
                with torch.cuda.stream(stream):
                    torch.cuda._sleep(4_000_000)
                    for start, end in zip(starts, ends, strict=True):
                        torch.cuda._sleep(SPIN_CYCLES)
                        flush.zero_()
                        start.record()
                        call()
                        end.record()
                torch.cuda.synchronize()
                pairs = zip(starts, ends, strict=True)
                samples[(name, call_name)] += [s.elapsed_time(e) for s, e in pairs]
    medians = {f"{s}/{c}": round(statistics.median(v) * 1e3, 3) for (s, c), v in samples.items()}
    fastest = min(streams, key=lambda name: medians[f"{name}/empty"])
    medians["fastest/empty"] = medians[f"{fastest}/empty"]
    medians["fastest/rmsnorm"] = medians[f"{fastest}/rmsnorm"]
    return medians


def batched_child(cpus: str) -> dict:
    """Per sample, K cold calls back to back between the events (K distinct input sets, all
    flushed out of the L2): the bracket's fixed cost is shared by K calls."""
    del cpus
    import torch

    from gates.evaluator.graph_timing import capture_graph
    from gates.evaluator.timing import SPIN_CYCLES

    device = torch.device("cuda")
    declaration, function = _baseline()
    flush = torch.empty((480 << 20) // 4, dtype=torch.int32, device=device)
    params = declaration.params
    medians = {}
    for workload in declaration.workloads:
        if workload.name not in ("action_b1", "prefix_b1"):
            continue
        sets = [declaration.make_inputs(workload, seed, "normal", device) for seed in range(8)]
        graph8 = [capture_graph(function, sets[i], params) for i in range(8)]
        calls = {
            "single": (1, lambda k, sets=sets: function(*sets[k % 8], **params)),
            "b2b4": (
                4,
                lambda k, sets=sets: [function(*sets[(k + i) % 8], **params) for i in range(4)],
            ),
            "b2b8": (8, lambda k, sets=sets: [function(*sets[i], **params) for i in range(8)]),
            "graph8": (8, lambda k, graph8=graph8: [replay() for replay in graph8]),
            "empty": (1, lambda k: torch.cuda._sleep(0)),
        }
        samples = {name: [] for name in calls}
        for _ in range(ROUNDS):
            for name, (count, call) in calls.items():
                starts = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
                ends = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
                torch.cuda._sleep(4_000_000)
                for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
                    torch.cuda._sleep(SPIN_CYCLES * count)
                    flush.zero_()
                    start.record()
                    call(index)
                    end.record()
                torch.cuda.synchronize()
                pairs = zip(starts, ends, strict=True)
                samples[name] += [s.elapsed_time(e) / count for s, e in pairs]
        for name, values in samples.items():
            medians[f"{workload.name}/{name}"] = round(statistics.median(values) * 1e3, 3)
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--connections", default="default,1,32")
    parser.add_argument(
        "--pin", default="", help="comma-separated CPU sets, one per process (e.g. 0,8,0+1)"
    )
    parser.add_argument(
        "--batched", action="store_true", help="time K back-to-back calls per sample instead"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps((batched_child if args.batched else child)(args.child)))
        return 0
    report = {}
    for connections in args.connections.split(","):
        env = dict(os.environ)
        if connections != "default":
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = connections
        rows = []
        pins = args.pin.split(",") if args.pin else [""] * args.processes
        for index, cpus in enumerate(pins):
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    cpus,
                    *(["--batched"] if args.batched else []),
                ],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                print(done.stderr[-2000:])
                return 1
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            rows[-1]["cpus"] = cpus or "any"
            print(f"connections={connections} process {index}: {rows[-1]}", flush=True)
        report[connections] = rows
    for connections, rows in report.items():
        print(f"\nCUDA_DEVICE_MAX_CONNECTIONS={connections}")
        print("  cpus             " + " ".join(f"{row['cpus']:>6s}" for row in rows))
        for key in rows[0]:
            if key == "cpus":
                continue
            values = [row[key] for row in rows]
            spread = (max(values) - min(values)) / statistics.median(values) * 100
            print(f"  {key:16s} {' '.join(f'{v:6.3f}' for v in values)}  spread {spread:4.1f}%")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "launch_modes.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

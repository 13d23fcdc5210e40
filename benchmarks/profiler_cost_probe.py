"""What torch.profiler itself costs a forward of the example, so the profile's step account can
be held against the unprofiled time honestly: the same CUDA graph (or eager forward) timed with
CUDA events without the profiler and under each profiler setting, the trace's kernel time and
idle gaps per step, and the cost per kernel of tracing a graph of many empty-ish kernels.

Run from the repository root on a CUDA machine:
    python benchmarks/profiler_cost_probe.py --profile h200 --batch 1
Writes $OUT/profiler_cost_<profile>_b<batch>.json after every step when $OUT is set.
"""

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="h200")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", default="pi05")
    parser.add_argument("--steps", type=int, default=5)
    arguments = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from examples.config import SIZES
    from examples.deployment import deploy
    from examples.model import build_model, make_inputs
    from operators import use_kernel_profile

    out = os.environ.get("OUT")
    result: dict = {"profile": arguments.profile, "batch": arguments.batch}

    def save() -> None:
        if out:
            name = f"profiler_cost_{arguments.profile}_b{arguments.batch}.json"
            Path(out, name).write_text(json.dumps(result, indent=2))

    def timed(run, times: int) -> float:
        """Median ms of `times` runs, CUDA events around each."""
        pairs = []
        for _ in range(times):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in pairs)

    def traced(run, activities, steps: int) -> dict:
        """The run under the profiler: CUDA-event ms per step, and from the trace the kernel
        count, kernel time and the span from first kernel start to last kernel end per step."""
        torch.cuda.synchronize()
        with profile(activities=activities) as profiler:
            wall = timed(run, steps)
        kernels = sorted(
            (event.time_range.start, event.time_range.end)
            for event in profiler.events()
            if event.device_type == torch.autograd.DeviceType.CUDA
        )
        busy, last_end = 0.0, float("-inf")
        for start, end in kernels:
            busy += max(0.0, end - max(start, last_end))
            last_end = max(last_end, end)
        span = (kernels[-1][1] - kernels[0][0]) if kernels else 0.0
        return {
            "cuda_event_ms_per_step": round(wall, 4),
            "kernels_per_step": len(kernels) / steps,
            "busy_ms_per_step": round(busy / steps / 1e3, 4),
            "span_ms_per_step": round(span / steps / 1e3, 4),
        }

    settings = {
        "cpu_and_cuda": [ProfilerActivity.CPU, ProfilerActivity.CUDA],
        "cuda_only": [ProfilerActivity.CUDA],
    }

    # Empty-ish kernels in one graph: what tracing costs per kernel, apart from any model.
    scratch = torch.zeros(1, device="cuda")
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        scratch.add_(1)
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        for _ in range(2000):
            scratch.add_(1)
    graph.replay()
    torch.cuda.synchronize()
    calibration = {"kernels": 2000, "unprofiled_ms": round(timed(graph.replay, 20), 4)}
    for name, activities in settings.items():
        calibration[name] = traced(graph.replay, activities, arguments.steps)
        calibration[name]["cost_us_per_kernel"] = round(
            (calibration[name]["cuda_event_ms_per_step"] - calibration["unprofiled_ms"])
            * 1e3
            / 2000,
            4,
        )
    result["calibration_graph"] = calibration
    save()
    print("calibration:", json.dumps(calibration))

    size = SIZES[arguments.size]
    model = build_model(size, 0, torch.device("cuda"))
    inputs = make_inputs(size, arguments.batch, 0, torch.device("cuda"))
    with use_kernel_profile(arguments.profile):
        for mode in ("graph", "eager"):
            deployed = deploy(model, mode, inputs)

            def step(deployed=deployed) -> None:
                deployed(inputs)

            for _ in range(3):
                step()
            torch.cuda.synchronize()
            steps = arguments.steps if mode == "graph" else 3
            timings = 20 if mode == "graph" else 5
            row = {"unprofiled_ms": round(timed(step, timings), 4)}
            for name, activities in settings.items():
                row[name] = traced(step, activities, steps)
                row[name]["against_unprofiled"] = round(
                    row[name]["cuda_event_ms_per_step"] / row["unprofiled_ms"] - 1, 4
                )
            row["unprofiled_again_ms"] = round(timed(step, timings), 4)
            result[mode] = row
            save()
            print(mode, json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where one forward of the example model spends device time, by kernel, under a profile and
a deployment mode: the kernels grouped by name with count, total and mean time, and the
forward's kernel count, kernel time and wall time, so a fusion is aimed at what costs most.

Run from the repository root on a CUDA machine:
    python benchmarks/model_kernels.py --profile stock --mode reduce-overhead --batch 1
Prints the top kernels; writes $OUT/model_kernels_<profile>_<mode>_b<batch>.json when $OUT is set.

Its answer: docs/benchmarks.md, "The model end to end".
"""

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOP = 40


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="stock")
    parser.add_argument("--mode", default="reduce-overhead")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", default="pi05")
    parser.add_argument("--forwards", type=int, default=3)
    arguments = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from examples.config import SIZES
    from examples.deployment import deploy
    from examples.model import build_model, make_inputs
    from operators import use_kernel_profile

    size = SIZES[arguments.size]
    device = torch.device("cuda")
    model = build_model(size, 0, device)
    inputs = make_inputs(size, arguments.batch, 0, device)
    with use_kernel_profile(arguments.profile):
        started = time.perf_counter()
        forward = deploy(model, arguments.mode, inputs)
        prepare = time.perf_counter() - started
        for _ in range(3):
            forward(inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as profiler:
            for _ in range(arguments.forwards):
                forward(inputs)
            torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            forward(inputs)
        end.record()
        end.synchronize()
    wall_ms = start.elapsed_time(end) / 10
    kernels = collections.defaultdict(lambda: [0, 0.0])
    spans = []
    for event in profiler.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        duration = event.time_range.elapsed_us()
        kernels[event.name][0] += 1
        kernels[event.name][1] += duration
        spans.append(duration)
    per_forward = arguments.forwards
    rows = sorted(kernels.items(), key=lambda item: -item[1][1])
    total_us = sum(total for _, total in kernels.values()) / per_forward
    result = {
        "profile": arguments.profile,
        "mode": arguments.mode,
        "batch": arguments.batch,
        "prepare_s": round(prepare, 1),
        "wall_ms_per_forward": round(wall_ms, 3),
        "kernel_ms_per_forward": round(total_us / 1e3, 3),
        "kernels_per_forward": len(spans) / per_forward,
        "top": [
            {
                "name": name[:160],
                "calls_per_forward": count / per_forward,
                "ms_per_forward": round(total / per_forward / 1e3, 4),
                "mean_us": round(total / count, 2),
            }
            for name, (count, total) in rows[:TOP]
        ],
    }
    print(
        f"{arguments.profile} {arguments.mode} b{arguments.batch}: wall {wall_ms:.2f} ms, "
        f"kernels {result['kernel_ms_per_forward']:.2f} ms in "
        f"{result['kernels_per_forward']:.0f} kernels per forward"
    )
    for row in result["top"][:25]:
        print(
            f"  {row['ms_per_forward']:8.3f} ms {row['calls_per_forward']:7.0f} x "
            f"{row['mean_us']:7.2f} us  {row['name'][:90]}"
        )
    out = os.environ.get("OUT")
    if out:
        name = f"model_kernels_{arguments.profile}_{arguments.mode}_b{arguments.batch}.json"
        Path(out, name).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

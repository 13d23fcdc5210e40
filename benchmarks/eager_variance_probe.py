"""How much the eager forward's own time moves from one group of steps to the next, with
Python's garbage collector on and off (the eager forward is host-bound, so the profile's
account of it can only agree with the unprofiled time as well as two groups agree).

Run from the repository root on a CUDA machine:
    python benchmarks/eager_variance_probe.py --batch 1
Writes $OUT/eager_variance_b<batch>.json when $OUT is set.
"""

import argparse
import gc
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8)
    arguments = parser.parse_args()

    import torch

    from controller.profiling.example_driver import forward

    def step() -> None:
        forward("pi05", arguments.batch)

    for _ in range(3):
        step()
    torch.cuda.synchronize()

    def group_ms() -> float:
        pairs = []
        for _ in range(arguments.steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in pairs)

    result = {"batch": arguments.batch, "groups": []}
    for _ in range(arguments.groups):
        gc.enable()
        collected = group_ms()
        gc.disable()
        uncollected = group_ms()
        gc.enable()
        result["groups"].append(
            {"gc_on_ms": round(collected, 2), "gc_off_ms": round(uncollected, 2)}
        )
        print(result["groups"][-1], flush=True)
    out = os.environ.get("OUT")
    if out:
        Path(out, f"eager_variance_b{arguments.batch}.json").write_text(
            json.dumps(result, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

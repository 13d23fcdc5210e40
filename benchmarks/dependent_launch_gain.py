"""What dependent launch gives the model: each profile in one CUDA graph with its waiting
kernels bound for programmatic dependent launch, against the same profile with every kernel
launched plainly, and both against stock (`reduce-overhead`), timed paired and interleaved in
one process, per batch (`operators/dependent_launch.py` says which kernels qualify).

Run from the repository root on a CUDA machine:
    python benchmarks/dependent_launch_gain.py --profiles none h200 --batches 1 8
Writes $OUT/dependent_launch_gain.json after every batch when $OUT is set.
"""

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=["none", "h200"])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--size", default="pi05")
    arguments = parser.parse_args()

    import torch

    from examples.config import SIZES
    from examples.model import build_model, make_inputs
    from examples.paired_timing import time_paired
    from operators import KernelSelection
    from operators.launch_modes import plain_launches

    profiles, deploying, pairs = {}, {}, []
    for name in arguments.profiles:
        selection = KernelSelection(name, allow_unverified=True)
        profiles[name] = profiles[f"{name}-plain"] = selection
        deploying[f"{name}-plain"] = plain_launches
        pairs += [(name, f"{name}-plain"), (name, "stock"), (f"{name}-plain", "stock")]
    profiles["stock"] = KernelSelection("stock")
    size = SIZES[arguments.size]
    model = build_model(size, 0, torch.device("cuda"))
    result = {"profiles": arguments.profiles, "batches": []}
    for batch in arguments.batches:
        timing = time_paired(
            model,
            make_inputs(size, batch, 0, torch.device("cuda")),
            profiles,
            pairs,
            deployed={"stock": "reduce-overhead"},
            deploying=deploying,
        )
        result["batches"].append(timing.model_dump(mode="json"))
        print(f"batch {batch}:", flush=True)
        for ratio in timing.ratios:
            print(
                f"  {ratio.candidate:12s} {timing.median_ms[ratio.candidate]:8.3f} ms against "
                f"{ratio.baseline:12s} {timing.median_ms[ratio.baseline]:8.3f} ms  x"
                f"{ratio.median:.4f} (rounds {ratio.lowest:.4f}-{ratio.highest:.4f})",
                flush=True,
            )
        out = os.environ.get("OUT")
        if out:
            Path(out, "dependent_launch_gain.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

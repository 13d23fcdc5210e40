"""Which of an installed profile's kernels make the model faster: the whole profile against the
profile without each one, timed paired and interleaved in one process, per batch. A kernel
that won its tune run per call but does not show here (ratio at or below 1) is no win for the
model (its calls may meet other cache states or neighbours in the forward than the judge's).

Run from the repository root on a CUDA machine:
    python benchmarks/leave_one_out.py --profile h200 --batches 1 8
Writes $OUT/leave_one_out_<profile>.json after every batch when $OUT is set.

Its answer: docs/benchmarks.md, "The model end to end".
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def without(source: Path, operator: str, destination: Path) -> Path:
    """A copy of the profile at `source` with `operator`'s package and entries removed."""
    target = destination / source.name
    shutil.copytree(source, target)
    shutil.rmtree(target / operator)
    manifest = json.loads((target / "profile.json").read_text())
    del manifest["operators"][operator]
    manifest["files"] = {
        path: digest
        for path, digest in manifest["files"].items()
        if not path.startswith(f"{operator}/")
    }
    (target / "profile.json").write_text(json.dumps(manifest, indent=2))
    return destination


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="h200")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--size", default="pi05")
    parser.add_argument(
        "--operators", nargs="+", help="leave out only these kernels (default: each in turn)"
    )
    arguments = parser.parse_args()

    import torch

    from examples.config import SIZES
    from examples.model import build_model, make_inputs
    from examples.paired_timing import time_paired
    from operators import KernelSelection
    from operators.profiles import TUNED_ROOT

    source = TUNED_ROOT / arguments.profile
    operators = sorted(json.loads((source / "profile.json").read_text())["operators"])
    scratch = Path(tempfile.mkdtemp(prefix="leave-one-out-"))
    profiles = {"all": KernelSelection(arguments.profile, allow_unverified=True)}
    for operator in arguments.operators or operators:
        root = without(source, operator, scratch / operator)
        profiles[f"without-{operator}"] = KernelSelection(
            arguments.profile, tuned_root=root, allow_unverified=True
        )
    pairs = [("all", name) for name in profiles if name != "all"]
    size = SIZES[arguments.size]
    model = build_model(size, 0, torch.device("cuda"))
    result = {"profile": arguments.profile, "operators": operators, "batches": []}
    for batch in arguments.batches:
        timing = time_paired(
            model, make_inputs(size, batch, 0, torch.device("cuda")), profiles, pairs
        )
        result["batches"].append(timing.model_dump(mode="json"))
        print(f"batch {batch}: all {timing.median_ms['all']:.3f} ms", flush=True)
        for ratio in timing.ratios:
            print(
                f"  {ratio.baseline:32s} {timing.median_ms[ratio.baseline]:8.3f} ms  all x"
                f"{ratio.median:.4f} (rounds {ratio.lowest:.4f}-{ratio.highest:.4f})",
                flush=True,
            )
        out = os.environ.get("OUT")
        if out:
            name = f"leave_one_out_{arguments.profile}.json"
            Path(out, name).write_text(json.dumps(result, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

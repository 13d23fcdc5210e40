"""The fused rotary_qkv_projection kernel against the operator's production path on a GPU, at
every declared workload: the contract (normal and large inputs, against FP64), and how far each
output lands from production's as the evaluator's replay check measures it (in units of its
bound, SCREEN x (|production| + RMS(production))). Exits 1 when the kernel breaks either.

    OUT=$OUT python benchmarks/rotary_fusion_gpu.py [--module NAME]

`--module` checks another kernel module under kernels/ or benchmarks/ (default: the shipped
`rotary_qkv_projection_fused`). Its answer: docs/benchmarks.md, "The rotary fusion".
"""

import argparse
import json
import os
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import torch  # noqa: E402

from gates.evaluator.fresh_pool import SCREEN  # noqa: E402
from operators import REGISTRY  # noqa: E402
from operators.catalog.checking import first_violation  # noqa: E402


def distance_in_bounds(got, want) -> tuple[float, int]:
    """The largest |got - want| over the replay check's bound, and how many elements pass it."""
    wide = want.float()
    bound = (wide.abs() + wide.square().mean().sqrt()) * SCREEN
    ratio = (got.float() - wide).abs() / bound
    return float(ratio.max()), int((ratio > 1).sum())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", default="rotary_qkv_projection_fused")
    arguments = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("rotary_fusion_gpu: needs a CUDA device", file=sys.stderr)
        return 2
    kernel = __import__(arguments.module).rotary_qkv_projection_kernel
    declaration = REGISTRY.declaration("rotary_qkv_projection")
    device = torch.device("cuda")
    rows, broken = [], False
    for workload in declaration.workloads:
        violations = {
            distribution: first_violation(declaration, kernel, workload, 0, distribution, device)
            for distribution in ("normal", "large")
        }
        inputs = declaration.make_inputs(workload, 1, "normal", device)
        produced = kernel(*inputs, **declaration.params)
        production = declaration.preferred(*inputs, **declaration.params)
        distances = {
            spec.name: distance_in_bounds(got, want)
            for spec, got, want in zip(declaration.outputs, produced, production, strict=True)
        }
        row = {
            "workload": workload.name,
            "violations": {k: v.describe() if v else None for k, v in violations.items()},
            "distance_in_bounds": distances,
        }
        broken |= any(violations.values()) or any(far for _, far in distances.values())
        rows.append(row)
        print(json.dumps(row), flush=True)
    report = Path(os.environ.get("OUT", "/tmp")) / f"rotary_fusion_gpu_{arguments.module}.json"
    report.write_text(json.dumps(rows, indent=1))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

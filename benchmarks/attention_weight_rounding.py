"""How far split_kv_attention's contract is from a kernel that rounds the softmax weights once.

A flash kernel feeds the value product with the weights rounded to one 16-bit format; the
split-dim kernel feeds them as two BF16 parts, one more product per key block. This emulates
the three on the CPU, without Triton: scores in FP32, weights exp(score - row max) in FP32,
rounded once to FP16, once to BF16, or split into a high and a low BF16 part, multiplied by
the values in FP64, normalised by the FP32 weights' sum and rounded to BF16. Each is held to
the operator's bound (atol + rtol |expected|, expected the FP64 reference rounded once, as the
evaluator's float64 oracle does) on the operator's own input distributions; it prints the
worst ratio of error to bound per workload and distribution (at most 1 passes). It is an
emulation of the arithmetic, not of a kernel's order of sums, so it shows which roundings
can meet the bound, not a kernel's exact margin (benchmarks/attention_margin.py measures
those on the GPU).

Run from the repository root: `python benchmarks/attention_weight_rounding.py
[--workloads prefix_b1,action_b8] [--seeds 2]` (seconds per workload on 2 cores).

Its answer: docs/benchmarks.md, "The model end to end".
"""

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from operators.catalog.split_kv_attention import DECLARATION  # noqa: E402
from operators.declaration import DISTRIBUTIONS  # noqa: E402

FORMER_ATOL, FORMER_RTOL_PER_ROUNDING = 2.0**-10, 2.0**-8
"""The fixed BF16 rule these margins were measured against (contracts are stock-relative now)."""


def rounded_weights(weights: torch.Tensor) -> dict[str, torch.Tensor]:
    """The FP32 weights as each kind of kernel hands them to the value product, in FP64."""
    high = weights.bfloat16().float()
    low = (weights - high).bfloat16().float()
    return {
        "fp16": weights.half().double(),
        "bf16": high.double(),
        "bf16_two_parts": (high + low).double(),
    }


def worst_ratios(workload, seed: int, distribution: str) -> dict[str, float]:
    q, k_cache, v_cache, k, v = DECLARATION.make_inputs(workload, seed, distribution, "cpu")
    keys = torch.cat([k_cache, k], 2).double()
    values = torch.cat([v_cache, v], 2).double()
    group = q.shape[1] // keys.shape[1]
    keys, values = keys.repeat_interleave(group, 1), values.repeat_interleave(group, 1)
    scores = (q.double() @ keys.transpose(-1, -2)) * DECLARATION.params["scale"]
    expected = (torch.softmax(scores, -1) @ values).bfloat16().double()
    scores32 = scores.float()
    weights = torch.exp(scores32 - scores32.amax(-1, keepdim=True))
    total = weights.double().sum(-1, keepdim=True)
    contract = DECLARATION.contract
    bound = expected.abs() * (contract.roundings * FORMER_RTOL_PER_ROUNDING) + FORMER_ATOL
    return {
        name: ((((rounded @ values) / total).bfloat16().double() - expected).abs() / bound)
        .max()
        .item()
        for name, rounded in rounded_weights(weights).items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="action_b8,prefix_b1", help="comma-separated")
    parser.add_argument("--seeds", type=int, default=2)
    arguments = parser.parse_args(argv)
    workloads = {workload.name: workload for workload in DECLARATION.workloads}
    names = arguments.workloads.split(",")
    unknown = [name for name in names if name not in workloads]
    if unknown:
        print(f"--workloads: unknown {unknown}; known: {sorted(workloads)}", file=sys.stderr)
        return 2
    print("workload  distribution  worst |error| / bound: fp16, bf16, bf16 in two parts")
    for name in names:
        for distribution in DISTRIBUTIONS:
            worst: dict[str, float] = {}
            for seed in range(arguments.seeds):
                for kind, ratio in worst_ratios(workloads[name], seed, distribution).items():
                    worst[kind] = max(worst.get(kind, 0.0), ratio)
            figures = ", ".join(f"{worst[kind]:.3f}" for kind in worst)
            print(f"{name:9s} {distribution:13s} {figures}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

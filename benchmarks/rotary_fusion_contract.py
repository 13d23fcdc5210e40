"""Whether a query/key projection with the rotary embedding fused in meets the rule a kernel is
judged by (`operators.accuracy`: no less accurate than stock against FP64): a CPU emulation.

Stock projects with the BLAS library (FP32 sums, one BF16 rounding), then rotates in eager
BF16 (`rotate_qk`'s reference: two products and a sum, each rounded). The fused kernel sums in
another FP32 order and rotates in FP32, rounding once at the end. Per seed, at prefix_b8's size
(4608 rows, 8 heads of 256), this prints both errors against the FP64 oracle (the same inputs,
every float in FP64), their ratio, and whether the fused kernel is within RMS_RATIO and
MAX_RATIO of stock. Seeds 2, 5, ... scale x by 4 as the `large` draw does.

    python benchmarks/rotary_fusion_contract.py [--rows 4608] [--seeds 3]

Its answer: docs/benchmarks.md, "The model end to end".
"""

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from operators.accuracy import MAX_RATIO, RMS_RATIO  # noqa: E402
from operators.catalog.rotate_qk import rotate_half  # noqa: E402
from operators.error_measure import error_figures  # noqa: E402

HEADS, HEAD_DIM, FEATURES, PREFIX_TOKENS = 8, 256, 1024, 576


def tables(rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate-half cos and sin per row in BF16, positions repeating every prefix length."""
    half = HEAD_DIM // 2
    angles = (torch.arange(rows)[:, None] % PREFIX_TOKENS) * torch.exp(
        -torch.arange(half) / half * 9.2
    )[None, :]
    return (
        torch.cat([angles.cos()] * 2, -1).bfloat16(),
        torch.cat([angles.sin()] * 2, -1).bfloat16(),
    )


def rotate(projected: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x * cos + rotate_half(x) * sin per head (`rotate_qk`'s formula), in the dtype of its
    arguments."""
    heads = projected.view(-1, HEADS, HEAD_DIM).transpose(0, 1)
    return heads * cos + rotate_half(heads) * sin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4608)
    parser.add_argument("--seeds", type=int, default=3)
    arguments = parser.parse_args(argv)
    cos, sin = tables(arguments.rows)
    within = True
    for seed in range(arguments.seeds):
        generator = torch.Generator().manual_seed(seed)
        scale = 4.0 if seed % 3 == 2 else 1.0
        x = (torch.randn(arguments.rows, FEATURES, generator=generator) * scale).bfloat16()
        weight = (torch.randn(HEADS * HEAD_DIM, FEATURES, generator=generator) / 32).bfloat16()
        oracle = rotate(x.double() @ weight.double().T, cos.double(), sin.double())
        stock = rotate(F.linear(x, weight), cos, sin)
        fused = rotate(x.float() @ weight.float().T, cos.float(), sin.float()).bfloat16()
        stock_error, fused_error = error_figures(stock, oracle), error_figures(fused, oracle)
        rms_ratio = fused_error.rms / stock_error.rms
        max_ratio = fused_error.max_abs / stock_error.max_abs
        passes = rms_ratio <= RMS_RATIO and max_ratio <= MAX_RATIO
        within &= passes
        print(
            f"seed {seed} (x scale {scale:g}): RMS error fused {fused_error.rms:.3e} against "
            f"stock {stock_error.rms:.3e} (x{rms_ratio:.3f}, at most x{RMS_RATIO}); largest "
            f"{fused_error.max_abs:.3e} against {stock_error.max_abs:.3e} (x{max_ratio:.3f}, "
            f"at most x{MAX_RATIO}): {'within' if passes else 'outside'} the rule"
        )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())

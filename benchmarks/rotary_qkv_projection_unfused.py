"""What the model ran before the rotary fusion, as one kernel module of rotary_qkv_projection:
the fused qkv_projection kernel at its shipped tiles, then rotate_qk's production kernel (two
launches, the projections stored and read back). `benchmarks/tile_sweep.py
rotary_qkv_projection --incumbent rotary_qkv_projection_unfused` times it beside the fused
kernel's tiles in the same graphs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kernels"))

import qkv_projection_fused  # noqa: E402

from operators.catalog.rotate_qk import rotate_qk_triton  # noqa: E402

TUNING = qkv_projection_fused.TUNING
TUNING_SPACE = qkv_projection_fused.TUNING_SPACE


def regime(rows: int) -> str:
    """The qkv kernel's row regime of a call with `rows` = batch x tokens."""
    return qkv_projection_fused.regime(rows)


def rotary_qkv_projection_kernel(x, wq, wk, wv, cos, sin, head_dim=256.0):
    """The projections by the fused qkv kernel, then the queries and keys rotated."""
    q, k, v = qkv_projection_fused.qkv_projection_kernel(x, wq, wk, wv, head_dim)
    q, k = rotate_qk_triton(q, k, cos, sin)
    return q, k, v

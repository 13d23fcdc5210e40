"""stacked_projection as one Triton launch: x read once, the three weights streamed together.

The operator file the scripted tune session ships (kernels/projection_session.py writes it
into the session with its imports made relative; benchmarks/projection_gpu.py times it). At
the modulation's sizes a call is memory-bound: 6 MB of BF16 weights against a few rows of x.
"""

import torch
import triton
import triton.language as tl

from ...operators import triton_runtime  # selects the interpreter before any kernel
from ...operators.kernel_launch import compiler_visible, launch

TUNING = {
    "few_rows": {"block_n": 2, "block_k": 1024, "num_warps": 2, "num_stages": 1, "dot": False},
    "many_rows": {"block_n": 32, "block_k": 256, "num_warps": 4, "num_stages": 3, "dot": True},
}
"""Launch settings per row regime on a GPU: output columns per program, K per step, warps,
pipeline stages, and whether the products go through tl.dot (tensor cores) or FP32
multiply-and-sum. `benchmarks/projection_gpu.py --write` puts each regime's fastest here."""
TUNING_SPACE = {
    "block_n": (2, 4, 8, 16, 32, 64),
    "block_k": (128, 256, 512, 1024),
    "num_warps": (2, 4, 8),
    "num_stages": (1, 2, 3, 4, 5),
    "dot": (True, False),
}
"""What a sweep may try in each regime; block_k changes the FP32 sum order, within the
contract."""
REGIMES = (("few_rows", 4), ("many_rows", None))
"""Row regimes by their largest row count: the multiply-and-sum path keeps every row's products
in registers, which pays at one row (batch 1) and not at eight."""
DOT_ROWS = (16, 64)
"""tl.dot takes at least 16 rows and columns: fewer rows of x are masked up to 16; one program
keeps at most 64 rows, more take more programs along the grid's axis 1."""
SUM_ROWS = 8
"""Most rows of x one multiply-and-sum program keeps (its products are rows x columns x K)."""


@triton.jit
def _project_columns(
    x_ptr,
    w_ptr,
    y_ptr,
    rows,
    features,
    outputs,
    x_row_stride,
    w_row_stride,
    row_block,
    column_block,
    BLOCK_B: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    DOT: tl.constexpr,
    INTERPRETED: tl.constexpr,
):
    """y[row block, column block] = x W^T: FP32 sums over K, one BF16 rounding at the end."""
    row = row_block * BLOCK_B + tl.arange(0, BLOCK_B)
    column = column_block * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.arange(0, BLOCK_K)
    row_ok = row < rows
    column_ok = column < outputs
    x_block = x_ptr + row[:, None] * x_row_stride + k[None, :]
    w_block = w_ptr + column[:, None] * w_row_stride + k[None, :]
    total = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
    for start in range(0, features, BLOCK_K):
        if EVEN_K:
            x = tl.load(x_block, mask=row_ok[:, None], other=0.0)
            w = tl.load(w_block, mask=column_ok[:, None], other=0.0)
        else:
            k_ok = (start + k) < features
            x = tl.load(x_block, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            w = tl.load(w_block, mask=column_ok[:, None] & k_ok[None, :], other=0.0)
        if not DOT:  # few columns per program: more programs, CUDA cores, same FP32 sums
            products = x.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :]
            total += tl.sum(products, axis=2)
        elif INTERPRETED:  # the interpreter multiplies BF16 dot operands as raw integers
            x, w = x.to(tl.float32), w.to(tl.float32)
            total = tl.dot(x, tl.trans(w), total, input_precision="ieee")
        else:  # BF16 products are exact in FP32: only the order of the sums differs
            total = tl.dot(x, tl.trans(w), total)
        x_block += BLOCK_K
        w_block += BLOCK_K
    if INTERPRETED:  # the interpreter truncates on a cast to BF16: round to nearest, ties even
        bits = total.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        total = bits.to(tl.float32, bitcast=True)
    y = y_ptr + row[:, None] * outputs + column[None, :]
    tl.store(y, total.to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & column_ok[None, :])


@triton.jit
def _stacked_projection_kernel(
    x_ptr,
    w0_ptr,
    w1_ptr,
    w2_ptr,
    y0_ptr,
    y1_ptr,
    y2_ptr,
    rows,
    features,
    outputs,
    x_row_stride,
    w0_row_stride,
    w1_row_stride,
    w2_row_stride,
    BLOCK_B: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    DOT: tl.constexpr,
    INTERPRETED: tl.constexpr,
):
    """Axis 0 runs over the column blocks of all three weights in turn, axis 1 over row blocks
    of x: one launch streams every weight once."""
    blocks_per_weight = tl.cdiv(outputs, BLOCK_N)
    program = tl.program_id(0)
    which = program // blocks_per_weight
    column_block = program % blocks_per_weight
    row_block = tl.program_id(1)
    if which == 0:
        _project_columns(
            x_ptr, w0_ptr, y0_ptr, rows, features, outputs, x_row_stride, w0_row_stride,
            row_block, column_block, BLOCK_B, BLOCK_N, BLOCK_K, EVEN_K, DOT, INTERPRETED,
        )  # fmt: skip
    elif which == 1:
        _project_columns(
            x_ptr, w1_ptr, y1_ptr, rows, features, outputs, x_row_stride, w1_row_stride,
            row_block, column_block, BLOCK_B, BLOCK_N, BLOCK_K, EVEN_K, DOT, INTERPRETED,
        )  # fmt: skip
    else:
        _project_columns(
            x_ptr, w2_ptr, y2_ptr, rows, features, outputs, x_row_stride, w2_row_stride,
            row_block, column_block, BLOCK_B, BLOCK_N, BLOCK_K, EVEN_K, DOT, INTERPRETED,
        )  # fmt: skip


@compiler_visible
def stacked_projection_kernel(
    x: torch.Tensor, w0: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One launch for the three products: x read once per program, each weight byte once.

    At the modulation's sizes the call is memory-bound (6 MB of weights against a few rows of
    x), so programs split the output columns only, each keeping every row of x (up to
    DOT_ROWS[1] or SUM_ROWS) and walking K with wide loads of its weight rows."""
    rows, features = x.shape
    outputs = w0.shape[0]
    x, w0, w1, w2 = (t if t.stride(-1) == 1 else t.contiguous() for t in (x, w0, w1, w2))
    ys = tuple(torch.empty((rows, outputs), dtype=x.dtype, device=x.device) for _ in range(3))
    if rows == 0 or outputs == 0:
        return ys
    if features == 0:
        return tuple(y.zero_() for y in ys)
    settings = TUNING[regime(rows)]
    dot = settings["dot"]
    if dot:
        block_b = min(DOT_ROWS[1], max(DOT_ROWS[0], triton.next_power_of_2(rows)))
        block_n = max(16, settings["block_n"])
    else:
        block_b = min(SUM_ROWS, triton.next_power_of_2(rows))
        block_n = settings["block_n"]
    block_k = min(settings["block_k"], max(16, triton.next_power_of_2(features)))
    if triton_runtime.interpreting():  # one program per weight keeps the interpreter quick
        block_n = max(block_n, triton.next_power_of_2(outputs))
    grid = (3 * triton.cdiv(outputs, block_n), triton.cdiv(rows, block_b))
    launch(
        _stacked_projection_kernel, grid,
        x, w0, w1, w2, *ys, rows, features, outputs,
        x.stride(0), w0.stride(0), w1.stride(0), w2.stride(0),
        BLOCK_B=block_b, BLOCK_N=block_n, BLOCK_K=block_k, EVEN_K=features % block_k == 0,
        DOT=dot, INTERPRETED=triton_runtime.interpreting(),
        num_warps=settings["num_warps"], num_stages=settings["num_stages"],
    )  # fmt: skip
    return ys


def regime(rows: int) -> str:
    """The TUNING entry for a call with this many rows of x."""
    return next(name for name, most in REGIMES if most is None or rows <= most)

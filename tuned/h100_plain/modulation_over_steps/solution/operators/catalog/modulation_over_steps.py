"""modulation_over_steps as one product per weight over every step's condition.

Computed step by step, each of the ten denoise steps streams the modulation's 6 MB of BF16
weights again for a few rows of condition. Here one small launch gathers the ten conditions
into one (10 x batch, features) block (ten device copies would be ten nodes of a CUDA graph,
each costing about what a launch does), and one Triton launch (the kernel of
`stacked_projection_fused.py`, shipped beside this file) streams each weight once for all of
them; each step's outputs are row blocks of the three products. The operator file the scripted
tune session ships (`python kernels/solution_session.py modulation_over_steps
kernels/modulation_over_steps_batched.py` writes it).
"""

import torch
import triton
import triton.language as tl

from ...operators import triton_runtime  # selects the interpreter before any kernel
from ...operators.kernel_launch import compiler_visible, launch
from .stacked_projection_fused import _stacked_projection_kernel

REGIMES = (("one_row_block", 16), ("row_blocks", None))
"""A call's regime by the rows of its gathered block (ten steps x batch): batch 1 fits one block
of 16 rows, batch 8 (80 rows) takes two of 64."""
TUNING = {
    "one_row_block": {"block_n": 32, "block_k": 128, "num_warps": 4, "num_stages": 3},
    "row_blocks": {"block_n": 64, "block_k": 128, "num_warps": 4, "num_stages": 3},
}
"""Launch settings on a GPU per regime: output columns per program, K per step, warps, pipeline
stages. On an H100 (2026-12-07, the optimize in docs/benchmarks.md) 64 columns a program took
the batch-8 call from 14.3 to 10.4 us and the batch-1 call from 8.3 to 8.6 us. Triton 3.6 there
asked 491,520 bytes of shared memory for 128 rows x 256 of K over three stages (the limit is
232,448), about four bytes per element of each stage's row and weight blocks; 64 rows x 128 of
K over three stages needs about 147,000."""
TUNING_SPACE = {
    "block_n": (16, 32, 64, 128),
    "block_k": (64, 128, 256, 512),
    "num_warps": (2, 4, 8),
    "num_stages": (1, 2, 3, 4, 5),
}
"""What a sweep may try, in each regime; block_k changes the FP32 sum order, within the
contract."""
ROWS = (16, 64)
"""tl.dot takes at least 16 rows: fewer rows are masked up to 16; one program keeps at most 64
rows (ten steps at batch 8 are 80: two programs along the grid's axis 1, the second reading
the weights from L2)."""


GATHER_BLOCK = 1024
"""Values of one condition a gathering program copies."""


@triton.jit
def _gather_conditions(
    c0_ptr, c1_ptr, c2_ptr, c3_ptr, c4_ptr, c5_ptr, c6_ptr, c7_ptr, c8_ptr, c9_ptr,
    out_ptr,
    size,
    BLOCK: tl.constexpr,
):  # fmt: skip
    """Program (s, b) copies block b of condition s (`size` values, contiguous) to rows
    s x batch onwards of the gathered block."""
    step = tl.program_id(0)
    offsets = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    source = c0_ptr
    if step == 1:
        source = c1_ptr
    if step == 2:
        source = c2_ptr
    if step == 3:
        source = c3_ptr
    if step == 4:
        source = c4_ptr
    if step == 5:
        source = c5_ptr
    if step == 6:
        source = c6_ptr
    if step == 7:
        source = c7_ptr
    if step == 8:
        source = c8_ptr
    if step == 9:
        source = c9_ptr
    inside = offsets < size
    values = tl.load(source + offsets, mask=inside)
    tl.store(out_ptr + step * size + offsets, values, mask=inside)


@compiler_visible
def modulation_over_steps_kernel(
    c0: torch.Tensor,
    c1: torch.Tensor,
    c2: torch.Tensor,
    c3: torch.Tensor,
    c4: torch.Tensor,
    c5: torch.Tensor,
    c6: torch.Tensor,
    c7: torch.Tensor,
    c8: torch.Tensor,
    c9: torch.Tensor,
    w0: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """c_s W_j^T for every step s and weight j, step-major, from one launch over all steps."""
    conditions = (c0, c1, c2, c3, c4, c5, c6, c7, c8, c9)
    batch, features = c0.shape
    rows, outputs = len(conditions) * batch, w0.shape[0]
    conditions = tuple(c if c.is_contiguous() else c.contiguous() for c in conditions)
    gathered = torch.empty((rows, features), dtype=c0.dtype, device=c0.device)
    if rows and features:
        grid = (len(conditions), triton.cdiv(batch * features, GATHER_BLOCK))
        launch(
            _gather_conditions, grid, *conditions, gathered, batch * features, BLOCK=GATHER_BLOCK
        )
    w0, w1, w2 = (w if w.stride(-1) == 1 else w.contiguous() for w in (w0, w1, w2))
    products = tuple(
        torch.empty((rows, outputs), dtype=c0.dtype, device=c0.device) for _ in range(3)
    )
    if rows and outputs:
        if features == 0:
            for product in products:
                product.zero_()
        else:
            _launch(gathered, w0, w1, w2, products, rows, features, outputs)
    return tuple(
        product[step * batch : (step + 1) * batch]
        for step in range(len(conditions))
        for product in products
    )


def regime(rows: int) -> str:
    """The TUNING entry for a gathered block of `rows` rows."""
    return next(name for name, most in REGIMES if most is None or rows <= most)


def _launch(gathered, w0, w1, w2, products, rows, features, outputs) -> None:
    settings = TUNING[regime(rows)]
    block_b = min(ROWS[1], max(ROWS[0], triton.next_power_of_2(rows)))
    block_n = settings["block_n"]
    block_k = min(settings["block_k"], max(16, triton.next_power_of_2(features)))
    if triton_runtime.interpreting():  # one program per weight keeps the interpreter quick
        block_n = max(block_n, triton.next_power_of_2(outputs))
    grid = (3 * triton.cdiv(outputs, block_n), triton.cdiv(rows, block_b))
    launch(
        _stacked_projection_kernel, grid,
        gathered, w0, w1, w2, *products, rows, features, outputs,
        gathered.stride(0), w0.stride(0), w1.stride(0), w2.stride(0),
        BLOCK_B=block_b, BLOCK_N=block_n, BLOCK_K=block_k, EVEN_K=features % block_k == 0,
        DOT=True, INTERPRETED=triton_runtime.interpreting(),
        num_warps=settings["num_warps"], num_stages=settings["num_stages"],
    )  # fmt: skip

"""A fused kernel for `gated_down_projection`, shipped as a scripted tune session.

Why it is faster than production (a BLAS product, then the gated-residual kernel): one
GEMM-shaped kernel multiplies the activated rows by the down weight and applies the step's gate
and the residual in its epilogue, so the (rows, width) update is never written to memory nor
read back, and one launch (two with split-K) replaces two. At 50 rows (the action expert at
batch 1) the down weight's 8 MB bound the time; split-K gives every multiprocessor a share of
it. A regime whose TUNING entry is None takes production's path.

Rounding: the product is summed in FP32 and rounded once to BF16, as the BLAS product's output
is; the gate and the residual are applied in FP32 and the sum rounded once, where the model's
eager code rounds the scaled update too (one rounding fewer, so no less accurate).

`benchmarks/tile_sweep.py gated_down_projection --write` chooses each regime's tile on the GPU;
`kernels/solution_session.py` writes this file, imports made relative, into
`kernels/sessions/tune_gated_down_projection.json` as the solution's operator file.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ...operators import triton_runtime
from ...operators.catalog.gated_residual import gated_residual_triton
from ...operators.catalog.rounding import round_to_bfloat16
from ...operators.kernel_launch import compiler_visible, launch

REGIMES = (("few_rows", 64), ("many_rows", None))
"""Row regimes by their largest row count (batch x action tokens): batch 1, then batch 8."""
TUNING = {
    "few_rows": {
        "block_m": 64,
        "block_n": 32,
        "block_k": 128,
        "num_warps": 4,
        "num_stages": 5,
        "splits": 4,
    },
    "many_rows": {
        "block_m": 64,
        "block_n": 128,
        "block_k": 128,
        "num_warps": 4,
        "num_stages": 4,
        "splits": 2,
    },
}
"""Tiles per row regime on a GPU, the fastest of `benchmarks/tile_sweep.py` on an H100
(2026-12-07 10:34 UTC, `docs/evidence/h100-2026-12-07c/`): at 50 rows 7.89 us against
production's 10.89 (the BLAS product, then the gated-residual kernel; 430 tiles timed); at 400
rows 13.56 against 13.59 (all 544 tiles that compiled timed): no tile of this kernel beats the
BLAS product there, so install leaves batch 8 to production unless a tune run finds one."""
TUNING_SPACE = {
    "block_m": (64, 16, 32, 128),
    "block_n": (32, 64, 128),
    "block_k": (128, 64),
    "num_warps": (4, 8),
    "num_stages": (4, 3, 5),
    "splits": (4, 2, 8, 1),
}
"""What the tuner and the sweep try in every regime, the likeliest first."""
EPILOGUE_BLOCK = 1024
"""Outputs per program of split-K's second launch (the partial sums added, then the epilogue)."""
INTERPRETER_TILE = {
    "block_m": 64,
    "block_n": 64,
    "block_k": 64,
    "num_warps": 1,
    "num_stages": 1,
    "splits": 2,
}


@triton.jit
def _gated_residual_epilogue(acc, residual_ptr, gate_ptr, place, gate_place, keep):
    """residual + bf16(acc) * gate at the outputs `place` (the gate's at `gate_place`), rounded
    once to BF16 (FP32 in between): the tile's epilogue and split-K's second launch share it."""
    update = round_to_bfloat16(acc)
    gate = tl.load(gate_ptr + gate_place, mask=keep, other=0.0)
    residual = tl.load(residual_ptr + place, mask=keep, other=0.0)
    return round_to_bfloat16(residual.to(tl.float32) + update * gate.to(tl.float32))


@triton.jit(do_not_specialize=["rows", "tokens"])  # one compile serves every row count
def _gated_down_kernel(
    a_ptr,
    w_ptr,
    residual_ptr,
    gate_ptr,
    out_ptr,
    rows,
    tokens,
    outputs,
    features,
    span,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLITS: tl.constexpr,
    EVEN_K: tl.constexpr,
    INTERPRETED: tl.constexpr,
):
    # Each program: one (row block, column block) tile over its split's run of `span` features.
    row = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    column = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    split = tl.program_id(2)
    depth = tl.arange(0, BLOCK_K)
    row_in = row < rows
    column_in = column < outputs
    first = split * span
    a_block = a_ptr + row[:, None] * features + (first + depth)[None, :]
    w_block = w_ptr + column[None, :] * features + (first + depth)[:, None]  # W^T's block
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(first, first + span, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_block, mask=row_in[:, None], other=0.0)
            w = tl.load(w_block, mask=column_in[None, :], other=0.0)
        else:
            depth_in = depth < features - start
            a = tl.load(a_block, mask=row_in[:, None] & depth_in[None, :], other=0.0)
            w = tl.load(w_block, mask=depth_in[:, None] & column_in[None, :], other=0.0)
        if INTERPRETED:  # the interpreter's BF16 dot is wrong; BF16 products are exact in FP32
            acc = tl.dot(a.to(tl.float32), w.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, w, acc)
        a_block += BLOCK_K
        w_block += BLOCK_K
    keep = row_in[:, None] & column_in[None, :]
    if SPLITS == 1:
        place = row[:, None] * outputs + column[None, :]
        gate_place = (row // tokens)[:, None] * outputs + column[None, :]
        out = _gated_residual_epilogue(acc, residual_ptr, gate_ptr, place, gate_place, keep)
        tl.store(out_ptr + place, out.to(out_ptr.dtype.element_ty), mask=keep)
    else:  # out_ptr is the FP32 partial sums, one (rows, outputs) slab per split
        place = split * rows * outputs + row[:, None] * outputs + column[None, :]
        tl.store(out_ptr + place, acc, mask=keep)


@triton.jit
def _add_splits_kernel(
    partial_ptr, residual_ptr, gate_ptr, out_ptr, count, tokens, outputs,
    SPLITS: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """The partial sums added in split order, then the gated residual, rounded once."""
    index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = index < count
    total = tl.load(partial_ptr + index, mask=inside, other=0.0)
    for split in range(1, SPLITS):
        total += tl.load(partial_ptr + split * count + index, mask=inside, other=0.0)
    gate_place = (index // outputs // tokens) * outputs + index % outputs
    out = _gated_residual_epilogue(total, residual_ptr, gate_ptr, index, gate_place, inside)
    tl.store(out_ptr + index, out.to(out_ptr.dtype.element_ty), mask=inside)


def regime(rows: int) -> str:
    """The row regime of a call with `rows` = batch x tokens."""
    return next(name for name, most in REGIMES if most is None or rows <= most)


def split_span(features: int, block_k: int, wanted: int) -> tuple[int, int]:
    """(splits, features per split): every split a whole number of K steps, none empty."""
    steps = triton.cdiv(features, block_k)
    splits = max(1, min(wanted, steps))
    per_split = triton.cdiv(steps, splits)
    return triton.cdiv(steps, per_split), per_split * block_k


def production(residual, activated, weight, gate) -> torch.Tensor:
    """What the model ran before: the BLAS product, then the gated-residual kernel."""
    batch, tokens, _ = residual.shape
    update = F.linear(activated, weight).view(batch, tokens, -1)
    return gated_residual_triton(residual, update, gate)


def project(residual, activated, weight, gate, tile: dict) -> torch.Tensor:
    """The fused kernel at one tile; what the entry point and the sweep launch."""
    batch, tokens, outputs = residual.shape
    rows, features = activated.shape
    residual, activated, weight, gate = (
        t if t.is_contiguous() else t.contiguous() for t in (residual, activated, weight, gate)
    )
    out = torch.empty_like(residual)
    if out.numel() == 0:
        return out
    splits, span = split_span(features, tile["block_k"], tile.get("splits", 1))
    grid = (triton.cdiv(rows, tile["block_m"]), triton.cdiv(outputs, tile["block_n"]), splits)
    sums = out
    if splits > 1:
        sums = torch.empty((splits, rows, outputs), dtype=torch.float32, device=out.device)
    launch(
        _gated_down_kernel,
        grid,
        activated,
        weight,
        residual,
        gate,
        sums,
        rows,
        tokens,
        outputs,
        features,
        span,
        BLOCK_M=tile["block_m"],
        BLOCK_N=tile["block_n"],
        BLOCK_K=tile["block_k"],
        SPLITS=splits,
        EVEN_K=span * splits == features,
        INTERPRETED=triton_runtime.interpreting(),
        num_warps=tile["num_warps"],
        num_stages=tile["num_stages"],
    )
    if splits > 1:
        count = out.numel()
        launch(
            _add_splits_kernel,
            (triton.cdiv(count, EPILOGUE_BLOCK),),
            sums,
            residual,
            gate,
            out,
            count,
            tokens,
            outputs,
            SPLITS=splits,
            BLOCK=EPILOGUE_BLOCK,
        )
    return out


@compiler_visible
def gated_down_projection_kernel(
    residual: torch.Tensor, activated: torch.Tensor, weight: torch.Tensor, gate: torch.Tensor
) -> torch.Tensor:
    """Fused: the down product with the gated residual in its epilogue, at the regime's tile
    (production's path where the regime has none; the interpreter's own tile under it)."""
    if triton_runtime.interpreting():
        return project(residual, activated, weight, gate, INTERPRETER_TILE)
    tile = TUNING[regime(activated.shape[0])]
    if tile is None:
        return production(residual, activated, weight, gate)
    return project(residual, activated, weight, gate, tile)

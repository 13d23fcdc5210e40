"""Attention's output projection in Triton, reading the head layout in place.

The operator file the scripted tune session ships (`python kernels/solution_session.py
attention_output kernels/attention_output_fused.py` writes it into the session with its
imports made relative; `benchmarks/tile_sweep.py attention_output` sweeps and times it). The model's
code copies attention's output into token layout and then runs one BLAS product; here a
program per (row block, column block, split) loads each head's slice of its rows where
attention wrote it, so the copy and its launch are gone. FP32 sums over the heads' features, one
BF16 rounding at the end.

Split-K: a call with few rows has few tiles (the output has 1024 columns), each streaming all
2048 features of its weight rows. With `splits` > 1, that many programs share a tile, each over
its own run of heads, and write FP32 partial sums; a second launch adds them in split order and
rounds once to BF16. On the H200 that pays at 50 rows (the action expert at batch 1) only.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ...operators import triton_runtime  # first: it selects the interpreter before any kernel
from ...operators.catalog.shapes import PI05, sequence_workloads
from ...operators.contract import Contract
from ...operators.declaration import Axis, OperatorDeclaration, TensorSpec
from ...operators.kernel_launch import launch

REGIMES = (("few_rows", 64), ("some_rows", 512), ("many_rows", 1024), ("most_rows", None))
"""Row regimes by their largest row count (batch x tokens): the action expert at batch 1 and
8, the prefix at batch 1 and 8."""
TUNING = {
    "few_rows": {
        "block_m": 64,
        "block_n": 32,
        "block_k": 128,
        "num_warps": 4,
        "num_stages": 3,
        "splits": 4,
    },
    "some_rows": {
        "block_m": 64,
        "block_n": 64,
        "block_k": 128,
        "num_warps": 4,
        "num_stages": 3,
        "splits": 2,
    },
    "many_rows": {
        "block_m": 64,
        "block_n": 32,
        "block_k": 128,
        "num_warps": 4,
        "num_stages": 3,
        "splits": 1,
    },
    "most_rows": {
        "block_m": 64,
        "block_n": 128,
        "block_k": 64,
        "num_warps": 4,
        "num_stages": 3,
        "splits": 1,
    },
}
"""Tiles per row regime on a GPU (the fastest of `benchmarks/tile_sweep.py`'s sweep writes
itself here)."""
TUNING_SPACE = {
    "block_m": (64, 16, 32, 128),
    "block_n": (64, 32, 128),
    "block_k": (128, 64),
    "num_warps": (4, 8),
    "num_stages": (3,),
    "splits": (4, 2, 8, 1),
}
"""What benchmarks/tile_sweep.py tries in every regime, in this order (the likeliest first: the
sweep is bounded in time)."""
ADD_BLOCK = 1024
"""Outputs per program of the launch that adds the splits' partial sums."""
INTERPRETER_TILE = {
    "block_m": 64,
    "block_n": 64,
    "block_k": 64,
    "num_warps": 1,
    "num_stages": 1,
    "splits": 2,
}


def merge_heads(attended: torch.Tensor) -> torch.Tensor:
    """(batch, heads, tokens, head_dim) -> (batch, tokens, heads * head_dim), a copy."""
    batch, _, tokens, _ = attended.shape
    return attended.transpose(1, 2).reshape(batch, tokens, -1)


def attention_output_reference(attended: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """merge(attended) W^T: the heads side by side per token, one eager matrix product."""
    return F.linear(merge_heads(attended), weight)


@triton.jit
def _nearest_bfloat16(x):
    """x (FP32) rounded to the nearest BF16 value, ties to even: what a GPU's conversion does,
    which the interpreter's (truncating) does not."""
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).to(tl.float32, bitcast=True)


@triton.jit(do_not_specialize=["tokens", "rows"])  # one compile serves every token count
def _attention_output_kernel(
    a_ptr,
    w_ptr,
    out_ptr,
    tokens,
    rows,
    outputs,
    features,
    a_batch_stride,
    a_head_stride,
    a_token_stride,
    HEAD_DIM: tl.constexpr,
    ALIGNED: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLITS: tl.constexpr,
):
    # A program's rows are tokens of one batch, so each head's slice of them is one strided
    # tile: the loads stay affine, as a plain matrix's rows are.
    token_blocks = tl.cdiv(tokens, BLOCK_M)
    batch = tl.program_id(0) // token_blocks
    token = (tl.program_id(0) % token_blocks) * BLOCK_M + tl.arange(0, BLOCK_M)
    column = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    split = tl.program_id(2)
    span = features // SPLITS  # the launcher makes it a multiple of BLOCK_K
    depth = tl.arange(0, BLOCK_K)
    token_ok = token < tokens
    column_ok = column < outputs
    a_rows = a_ptr + batch * a_batch_stride + token[:, None] * a_token_stride + depth[None, :]
    w_rows = w_ptr + column[:, None] * features + depth[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(split * span, split * span + span, BLOCK_K):  # one head per step
        offset = (start // HEAD_DIM) * a_head_stride + start % HEAD_DIM
        if ALIGNED:  # every head's slice starts on a 16-byte boundary: vector loads
            offset = tl.multiple_of(offset, 8)
        a = tl.load(a_rows + offset, mask=token_ok[:, None], other=0.0)
        w = tl.load(w_rows + start, mask=column_ok[:, None], other=0.0)
        if UPCAST:  # the interpreter's dot has no BF16
            a, w = a.to(tl.float32), w.to(tl.float32)
        acc = tl.dot(a, tl.trans(w), acc)
    keep = token_ok[:, None] & column_ok[None, :]
    place = (batch * tokens + token)[:, None] * outputs + column[None, :]
    if SPLITS == 1:
        tl.store(out_ptr + place, _nearest_bfloat16(acc).to(out_ptr.dtype.element_ty), mask=keep)
    else:  # out_ptr is the FP32 partial sums, one (rows, outputs) slab per split
        tl.store(out_ptr + split * rows * outputs + place, acc, mask=keep)


@triton.jit
def _add_splits_kernel(partial_ptr, out_ptr, count, SPLITS: tl.constexpr, BLOCK: tl.constexpr):
    """out = the partial sums added in split order, rounded once to BF16."""
    index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = index < count
    total = tl.load(partial_ptr + index, mask=inside, other=0.0)
    for split in range(1, SPLITS):
        total += tl.load(partial_ptr + split * count + index, mask=inside, other=0.0)
    tl.store(out_ptr + index, _nearest_bfloat16(total).to(out_ptr.dtype.element_ty), mask=inside)


def attention_output_kernel(attended: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """One launch: the product of the merged heads and the weight, read in head layout."""
    batch, _, tokens, _ = attended.shape
    return project(attended, weight, tile_for(batch * tokens))


def project(attended: torch.Tensor, weight: torch.Tensor, tile: dict) -> torch.Tensor:
    """The Triton kernel at one tile; what the entry point and the sweep launch."""
    batch, _, tokens, head_dim = attended.shape
    outputs, features = weight.shape
    if attended.stride(-1) != 1:
        attended = attended.contiguous()
    weight = weight if weight.is_contiguous() else weight.contiguous()
    out = torch.empty((batch, tokens, outputs), dtype=attended.dtype, device=attended.device)
    if out.numel() == 0:
        return out
    strides = attended.stride()[:3]
    # A K step stays inside one head: at most head_dim and dividing it (& -head_dim: the
    # largest power of two that does); tl.dot takes at least 16 along K.
    step = max(16, min(tile["block_k"], head_dim & -head_dim))
    splits = split_count(tile.get("splits", 1), features, step)
    grid = (
        batch * triton.cdiv(tokens, tile["block_m"]),
        triton.cdiv(outputs, tile["block_n"]),
        splits,
    )
    sums = out
    if splits > 1:
        sums = torch.empty((splits, *out.shape), dtype=torch.float32, device=out.device)
    launch(
        _attention_output_kernel,
        grid,
        attended,
        weight,
        sums,
        tokens,
        batch * tokens,
        outputs,
        features,
        *strides,
        HEAD_DIM=head_dim,
        ALIGNED=all(value % 8 == 0 for value in (*strides, head_dim)),
        UPCAST=triton_runtime.interpreting(),
        BLOCK_M=tile["block_m"],
        BLOCK_N=tile["block_n"],
        BLOCK_K=step,
        SPLITS=splits,
        num_warps=tile["num_warps"],
        num_stages=tile["num_stages"],
    )
    if splits > 1:
        count = out.numel()
        launch(
            _add_splits_kernel,
            (triton.cdiv(count, ADD_BLOCK),),
            sums,
            out,
            count,
            SPLITS=splits,
            BLOCK=ADD_BLOCK,
        )
    return out


def split_count(wanted: int, features: int, step: int) -> int:
    """The most splits up to `wanted` that give every split the same whole number of K steps."""
    splits = max(1, wanted)
    while splits > 1 and features % (splits * step):
        splits -= 1
    return splits


def regime(rows: int) -> str:
    """The row regime of a call with `rows` = batch x tokens."""
    return next(name for name, most in REGIMES if most is None or rows <= most)


def tile_for(rows: int) -> dict:
    """The regime's tile on a GPU, the interpreter's own tile under it."""
    return INTERPRETER_TILE if triton_runtime.interpreting() else TUNING[regime(rows)]


DECLARATION = OperatorDeclaration(
    name="attention_output",
    summary="Attention's output projection of its heads, from the head layout to tokens.",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="tokens", kind="var"),
        Axis(name="query_heads", kind="const", value=PI05.query_heads),
        Axis(name="head_dim", kind="const", value=PI05.head_dim),
        Axis(name="merged", kind="const", value=PI05.query_heads * PI05.head_dim),
        Axis(name="width", kind="const", value=PI05.width),
    ),
    inputs=(
        TensorSpec(
            name="attended", shape=("batch", "query_heads", "tokens", "head_dim"), large_scale=4.0
        ),
        # `large` scales the attention output alone, and modestly: an output sums 2048
        # products that can cancel.
        TensorSpec(name="weight", shape=("width", "merged"), large_scale=1.0),
    ),
    outputs=(TensorSpec(name="out", shape=("batch", "tokens", "width")),),
    constraints=("every input is contiguous",),
    reference=attention_output_reference,
    preferred=attention_output_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="a kernel sums the products in FP32 in another order than the BLAS library, so "
        "the one BF16 rounding of an output can land one step (up to 2^-7 relative) away",
    ),
    workloads=sequence_workloads(),
)

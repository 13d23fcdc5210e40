"""The two Triton kernels of the split-KV attention: per (row block, key slice) partial
attention, and the merge of the slices' softmax statistics.

Numerics are the production kernel's: scores and sums in float32, online softmax in base 2,
and the weights reach the value product as a high and a low BF16 part (one BF16 rounding of a
near-one-hot softmax would move a cancelling output past the contract). Merging slices only
rescales float32 partial sums, which the contract's reordering allowance covers.
"""

import triton
import triton.language as tl

from operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from operators.catalog.rounding import round_to_bfloat16


@triton.jit
def _block_mask(rows_present, dims, head_dim, EVEN_DIM: tl.constexpr):
    """Which elements of a (rows, head dimension) block exist; with EVEN_DIM the mask varies
    along rows only, so loads along the head dimension stay whole 16-byte vectors."""
    if EVEN_DIM:
        return rows_present[:, None]
    else:
        return rows_present[:, None] & (dims[None, :] < head_dim)


@triton.jit
def _sum_rounded(first, second, UPCAST: tl.constexpr):
    """first + second in float32, an addition the compiler cannot fold into either product's
    accumulation (it would turn two short tensor-core sums back into one long one)."""
    if UPCAST:
        return first + second
    else:
        return tl.inline_asm_elementwise(
            "add.rn.f32 $0, $1, $2;",
            "=r,r,r",
            [first, second],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )


@triton.jit
def _attend_to_keys(
    q_first,
    q_second,
    acc,
    row_max,
    row_sum,
    k_ptr,
    v_ptr,
    token_stride,
    begin,
    end,
    dims,
    head_dim,
    score_scale,
    BLOCK_KEYS: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
    EVEN_DIM: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """Online-softmax accumulation over keys [begin, end) of one key/value tensor, base 2.

    A score is the float32 sum of two half-dimension products: the tensor cores truncate as
    they accumulate, and under the `large` inputs (scores near a thousand) one accumulation over
    all 256 dimensions loses enough to move a cancelling output past the contract.
    """
    half: tl.constexpr = BLOCK_DIM // 2
    halves = tl.arange(0, half)
    for start in range(begin, end, BLOCK_KEYS):
        keys = start + tl.arange(0, BLOCK_KEYS)
        valid = keys < end
        half_offsets = keys[:, None] * token_stride + halves[None, :]
        key_first = tl.load(
            k_ptr + half_offsets, mask=_block_mask(valid, halves, head_dim, EVEN_DIM), other=0.0
        )
        key_second = tl.load(
            k_ptr + half_offsets + half,
            mask=_block_mask(valid, halves + half, head_dim, EVEN_DIM),
            other=0.0,
        )
        if UPCAST:  # the interpreter multiplies BF16 dot operands as raw integers
            key_first = key_first.to(tl.float32)
            key_second = key_second.to(tl.float32)
            first = tl.dot(q_first, tl.trans(key_first), input_precision="ieee")
            second = tl.dot(q_second, tl.trans(key_second), input_precision="ieee")
        else:
            first = tl.dot(q_first, tl.trans(key_first))
            second = tl.dot(q_second, tl.trans(key_second))
        scores = _sum_rounded(first, second, UPCAST)
        scores = tl.where(valid[None, :], scores, float("-inf"))
        # Scaled scores only inside one fused multiply-add: the maximum of the unscaled scores,
        # scaled, is the maximum of the scaled ones (the scale is positive).
        new_max = tl.maximum(row_max, tl.max(scores, axis=1) * score_scale)
        correction = tl.exp2(row_max - new_max)
        weights = tl.exp2(scores * score_scale - new_max[:, None])
        row_sum = row_sum * correction + tl.sum(weights, axis=1)
        offsets = keys[:, None] * token_stride + dims[None, :]
        value = tl.load(
            v_ptr + offsets, mask=_block_mask(valid, dims, head_dim, EVEN_DIM), other=0.0
        )
        if UPCAST:  # the interpreter's conversion truncates: round as the hardware does
            high = round_to_bfloat16(weights)
            low = round_to_bfloat16(weights - high)
            update = tl.dot(high + low, value.to(tl.float32), input_precision="ieee")
        else:  # one rounding conversion per part (round to nearest even)
            high = weights.to(value.dtype)
            low = (weights - high.to(tl.float32)).to(value.dtype)
            update = _sum_rounded(tl.dot(high, value), tl.dot(low, value), UPCAST)
        # The block's update joins the running sum in float32 outside the tensor cores: chained
        # through them, every block's products would be truncated against the running sum.
        acc = _sum_rounded(acc * correction[:, None], update, UPCAST)
        row_max = new_max
    return acc, row_max, row_sum


@triton.jit
def partial_attention_kernel(
    q_ptr,
    k_cache_ptr,
    v_cache_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    partial_ptr,
    partial_max_ptr,
    partial_sum_ptr,
    query_heads,
    kv_heads,
    tokens,
    prefix,
    head_dim,
    q_batch_stride,
    q_head_stride,
    q_token_stride,
    cache_batch_stride,
    cache_head_stride,
    cache_token_stride,
    kv_batch_stride,
    kv_head_stride,
    kv_token_stride,
    score_scale,
    keys_per_split,
    padded_rows,
    SPLIT: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_KEYS: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
    EVEN_DIM: tl.constexpr,
    UPCAST: tl.constexpr,
):
    # Program (row block, key slice, batch x kv head). A row is (query head of the group,
    # query token); the group's rows share every key and value this program loads.
    group = query_heads // kv_heads
    batch = tl.program_id(2) // kv_heads
    kv_head = tl.program_id(2) % kv_heads
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    present = rows < group * tokens
    head = kv_head * group + rows // tokens
    query = rows % tokens
    dims = tl.arange(0, BLOCK_DIM)
    q_rows = batch * q_batch_stride + head * q_head_stride + query * q_token_stride
    q_mask = _block_mask(present, dims, head_dim, EVEN_DIM)
    half: tl.constexpr = BLOCK_DIM // 2
    halves = tl.arange(0, half)
    q_half = q_ptr + q_rows[:, None] + halves[None, :]
    q_first = tl.load(q_half, mask=_block_mask(present, halves, head_dim, EVEN_DIM), other=0.0)
    q_second = tl.load(
        q_half + half, mask=_block_mask(present, halves + half, head_dim, EVEN_DIM), other=0.0
    )
    if UPCAST:  # the interpreter multiplies BF16 dot operands as raw integers
        q_first = q_first.to(tl.float32)
        q_second = q_second.to(tl.float32)

    score_scale = tl.cast(score_scale, tl.float32)  # float32 under Inductor too
    cache_base = batch * cache_batch_stride + kv_head * cache_head_stride
    current_base = batch * kv_batch_stride + kv_head * kv_head_stride
    length = prefix + tokens
    first_key = tl.program_id(1) * keys_per_split
    last_key = tl.minimum(first_key + keys_per_split, length)
    acc = tl.zeros((BLOCK_ROWS, BLOCK_DIM), dtype=tl.float32)
    row_max = tl.full((BLOCK_ROWS,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_ROWS,), dtype=tl.float32)
    # The slice's cached keys, then its current ones: each range is plain strided memory.
    acc, row_max, row_sum = _attend_to_keys(
        q_first,
        q_second,
        acc,
        row_max,
        row_sum,
        k_cache_ptr + cache_base,
        v_cache_ptr + cache_base,
        cache_token_stride,
        first_key,
        tl.minimum(last_key, prefix),
        dims,
        head_dim,
        score_scale,
        BLOCK_KEYS,
        BLOCK_DIM,
        EVEN_DIM,
        UPCAST,
    )
    acc, row_max, row_sum = _attend_to_keys(
        q_first,
        q_second,
        acc,
        row_max,
        row_sum,
        k_ptr + current_base,
        v_ptr + current_base,
        kv_token_stride,
        tl.maximum(first_key, prefix) - prefix,
        last_key - prefix,
        dims,
        head_dim,
        score_scale,
        BLOCK_KEYS,
        BLOCK_DIM,
        EVEN_DIM,
        UPCAST,
    )

    if SPLIT:  # unnormalised float32 sums and the softmax statistics, merged by the next launch
        slot = tl.program_id(2) * tl.num_programs(1) + tl.program_id(1)
        slot_rows = slot * padded_rows + rows
        tl.store(partial_ptr + slot_rows[:, None] * BLOCK_DIM + dims[None, :], acc)
        tl.store(partial_max_ptr + slot_rows, row_max)
        tl.store(partial_sum_ptr + slot_rows, row_sum)
    else:
        out = round_to_bfloat16(acc / row_sum[:, None])
        out_rows = ((batch * query_heads + head) * tokens + query) * head_dim
        tl.store(out_ptr + out_rows[:, None] + dims[None, :], out, mask=q_mask)


@triton.jit
def merge_slices_kernel(
    partial_ptr,
    partial_max_ptr,
    partial_sum_ptr,
    out_ptr,
    query_heads,
    kv_heads,
    tokens,
    head_dim,
    splits,
    padded_rows,
    BLOCK_SPLITS: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_SLICE_DIM: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
):
    # Program (row block, dimension block, batch x kv head): every slice's sums in one load,
    # rescaled to the common maximum, added, divided once, rounded once.
    group = query_heads // kv_heads
    batch = tl.program_id(2) // kv_heads
    kv_head = tl.program_id(2) % kv_heads
    split = tl.arange(0, BLOCK_SPLITS)
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    present = rows < group * tokens
    slot_rows = (tl.program_id(2) * splits + split)[:, None] * padded_rows + rows[None, :]
    stored = (split < splits)[:, None] & present[None, :]
    slice_max = tl.load(partial_max_ptr + slot_rows, mask=stored, other=float("-inf"))
    slice_sum = tl.load(partial_sum_ptr + slot_rows, mask=stored, other=0.0)
    row_max = tl.where(present, tl.max(slice_max, axis=0), 0.0)
    slice_scale = tl.exp2(slice_max - row_max[None, :])
    row_sum = tl.sum(slice_sum * slice_scale, axis=0)
    dims = tl.program_id(1) * BLOCK_SLICE_DIM + tl.arange(0, BLOCK_SLICE_DIM)
    sums = tl.load(
        partial_ptr + slot_rows[:, :, None] * BLOCK_DIM + dims[None, None, :],
        mask=stored[:, :, None],
        other=0.0,
    )
    acc = tl.sum(sums * slice_scale[:, :, None], axis=0)
    out = round_to_bfloat16(acc / tl.where(present, row_sum, 1.0)[:, None])
    head = kv_head * group + rows // tokens
    query = rows % tokens
    out_rows = ((batch * query_heads + head) * tokens + query) * head_dim
    mask = present[:, None] & (dims[None, :] < head_dim)
    tl.store(out_ptr + out_rows[:, None] + dims[None, :], out, mask=mask)

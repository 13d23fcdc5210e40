"""The Triton programs of the split-dim attention kernel (`split_kv_attention_split_dim.py`
launches them): the online softmax over runs of keys with the output's head dimension split
among programs, and the second launch that joins the runs. It ships beside that module, in the
solution's operator folder, written by the same scripted session.
"""

import triton
import triton.language as tl

from operators.catalog.rounding import round_to_bfloat16


@triton.jit
def _chunk_scores(q, k_ptr, keys, valid, token_stride, head_dim, chunk, score_scale, UPCAST):
    """Scores of one chunk of the head dimension, scaled: the tensor cores accumulate each
    chunk's products apart, and the chunks meet in FP32 registers."""
    dims = chunk * q.shape[1] + tl.arange(0, q.shape[1])
    key = tl.load(
        k_ptr + keys[:, None] * token_stride + dims[None, :],
        mask=valid[:, None] & (dims[None, :] < head_dim),
        other=0.0,
    )
    if UPCAST:  # the interpreter multiplies BF16 dot operands as raw integers
        scores = tl.dot(q.to(tl.float32), tl.trans(key.to(tl.float32)), input_precision="ieee")
    else:
        scores = tl.dot(q, tl.trans(key))
    return scores * tl.cast(score_scale, tl.float32)  # float32 under Inductor too


@triton.jit
def _attend_to_keys(
    q0,
    q1,
    q2,
    q3,
    acc,
    row_max,
    row_sum,
    k_ptr,
    v_ptr,
    first,
    last,
    token_stride,
    head_dim,
    value_dims,
    score_scale,
    SCORE_CHUNKS: tl.constexpr,
    WEIGHT_PARTS: tl.constexpr,
    BLOCK_KEYS: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """Online-softmax accumulation of one row block over keys `first` to `last` (base-2
    scores), into the accumulator's columns `value_dims` of the head dimension. The query block
    comes in SCORE_CHUNKS chunks of the head dimension (q0 .. q3; those past the count are
    unused)."""
    for start in range(first, last, BLOCK_KEYS):
        keys = start + tl.arange(0, BLOCK_KEYS)
        valid = keys < last
        scores = _chunk_scores(
            q0, k_ptr, keys, valid, token_stride, head_dim, 0, score_scale, UPCAST
        )
        if SCORE_CHUNKS > 1:
            scores += _chunk_scores(
                q1, k_ptr, keys, valid, token_stride, head_dim, 1, score_scale, UPCAST
            )
        if SCORE_CHUNKS > 2:
            scores += _chunk_scores(
                q2, k_ptr, keys, valid, token_stride, head_dim, 2, score_scale, UPCAST
            )
            scores += _chunk_scores(
                q3, k_ptr, keys, valid, token_stride, head_dim, 3, score_scale, UPCAST
            )
        value = tl.load(
            v_ptr + keys[:, None] * token_stride + value_dims[None, :],
            mask=valid[:, None] & (value_dims[None, :] < head_dim),
            other=0.0,
        )
        scores = tl.where(valid[None, :], scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        correction = tl.exp2(row_max - new_max)
        weights = tl.exp2(scores - new_max[:, None])
        row_sum = row_sum * correction + tl.sum(weights, axis=1)
        # The weights reach the tensor cores as WEIGHT_PARTS BF16 parts: one, rounded once as a
        # flash SDPA rounds them; two (high + low) or three, nearly their FP32 value, at one
        # more product each. Each block's product joins the running sum in FP32.
        high = round_to_bfloat16(weights)
        if WEIGHT_PARTS == 1:
            if UPCAST:
                update = tl.dot(high, value.to(tl.float32), input_precision="ieee")
            else:
                update = tl.dot(high.to(value.dtype), value)
        else:
            low = round_to_bfloat16(weights - high)
            lowest = tl.zeros_like(low)
            if WEIGHT_PARTS > 2:
                lowest = round_to_bfloat16(weights - high - low)
            if UPCAST:
                update = tl.dot(high + low + lowest, value.to(tl.float32), input_precision="ieee")
            else:
                update = tl.dot(high.to(value.dtype), value) + tl.dot(low.to(value.dtype), value)
                if WEIGHT_PARTS > 2:
                    update += tl.dot(lowest.to(value.dtype), value)
        acc = acc * correction[:, None] + update
        row_max = new_max
    return acc, row_max, row_sum


@triton.jit
def _query_chunk(q_ptr, q_rows, present, head_dim, chunk, CHUNK_DIM: tl.constexpr):
    dims = chunk * CHUNK_DIM + tl.arange(0, CHUNK_DIM)
    return tl.load(
        q_ptr + q_rows[:, None] + dims[None, :],
        mask=present[:, None] & (dims[None, :] < head_dim),
        other=0.0,
    )


@triton.jit
def _split_dim_attention_kernel(
    q_ptr,
    k_cache_ptr,
    v_cache_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    partial_ptr,
    totals_ptr,
    query_heads,
    kv_heads,
    tokens,
    prefix,
    head_dim,
    split_keys,
    rows_total,
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
    HEADS: tl.constexpr,
    DIM_PARTS: tl.constexpr,
    SCORE_CHUNKS: tl.constexpr,
    WEIGHT_PARTS: tl.constexpr,
    BLOCK_QUERIES: tl.constexpr,
    BLOCK_KEYS: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
    KEY_SPLITS: tl.constexpr,
    UPCAST: tl.constexpr,
):
    # Axis 1 counts (batch, group of HEADS query heads, part of the head dimension), the parts
    # innermost: programs that read the same keys and values run side by side.
    part = tl.program_id(1) % DIM_PARTS
    head_groups = query_heads // HEADS
    group = tl.program_id(1) // DIM_PARTS
    batch = group // head_groups
    first_head = (group % head_groups) * HEADS
    kv_head = first_head // (query_heads // kv_heads)
    rows = tl.arange(0, HEADS * BLOCK_QUERIES)
    head = first_head + rows // BLOCK_QUERIES
    queries = tl.program_id(0) * BLOCK_QUERIES + rows % BLOCK_QUERIES
    part_dim: tl.constexpr = BLOCK_DIM // DIM_PARTS
    value_dims = part * part_dim + tl.arange(0, part_dim)
    present = queries < tokens
    q_rows = batch * q_batch_stride + head * q_head_stride + queries * q_token_stride
    chunk_dim: tl.constexpr = BLOCK_DIM // SCORE_CHUNKS
    q0 = _query_chunk(q_ptr, q_rows, present, head_dim, 0, chunk_dim)
    q1, q2, q3 = q0, q0, q0
    if SCORE_CHUNKS > 1:
        q1 = _query_chunk(q_ptr, q_rows, present, head_dim, 1, chunk_dim)
    if SCORE_CHUNKS > 2:
        q2 = _query_chunk(q_ptr, q_rows, present, head_dim, 2, chunk_dim)
        q3 = _query_chunk(q_ptr, q_rows, present, head_dim, 3, chunk_dim)
    block_rows: tl.constexpr = HEADS * BLOCK_QUERIES
    acc = tl.zeros((block_rows, part_dim), dtype=tl.float32)
    row_max = tl.full((block_rows,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((block_rows,), dtype=tl.float32)
    # Axis 2 is the run of keys: `split_keys` of the cache's and the call's keys in sequence.
    first = tl.program_id(2) * split_keys
    last = tl.minimum(first + split_keys, prefix + tokens)
    cache = batch * cache_batch_stride + kv_head * cache_head_stride
    acc, row_max, row_sum = _attend_to_keys(
        q0,
        q1,
        q2,
        q3,
        acc,
        row_max,
        row_sum,
        k_cache_ptr + cache,
        v_cache_ptr + cache,
        tl.minimum(first, prefix),
        tl.minimum(last, prefix),
        cache_token_stride,
        head_dim,
        value_dims,
        score_scale,
        SCORE_CHUNKS,
        WEIGHT_PARTS,
        BLOCK_KEYS,
        UPCAST,
    )
    current = batch * kv_batch_stride + kv_head * kv_head_stride
    acc, row_max, row_sum = _attend_to_keys(
        q0,
        q1,
        q2,
        q3,
        acc,
        row_max,
        row_sum,
        k_ptr + current,
        v_ptr + current,
        tl.maximum(first - prefix, 0),
        tl.maximum(last - prefix, 0),
        kv_token_stride,
        head_dim,
        value_dims,
        score_scale,
        SCORE_CHUNKS,
        WEIGHT_PARTS,
        BLOCK_KEYS,
        UPCAST,
    )
    out_rows = (batch * query_heads + head) * tokens + queries
    stored = present[:, None] & (value_dims[None, :] < head_dim)
    if KEY_SPLITS == 1:
        out = round_to_bfloat16(acc / row_sum[:, None])
        tl.store(out_ptr + out_rows[:, None] * head_dim + value_dims[None, :], out, mask=stored)
    else:  # this run's sums, maximum and total, for `_join_runs_kernel`
        run_rows = tl.program_id(2) * rows_total + out_rows
        tl.store(partial_ptr + run_rows[:, None] * head_dim + value_dims[None, :], acc, mask=stored)
        # Every part of the head dimension has the same maximum and total; the first stores them.
        first_part = present & (queries * 0 + part == 0)
        tl.store(totals_ptr + run_rows * 2, row_max, mask=first_part)
        tl.store(totals_ptr + run_rows * 2 + 1, row_sum, mask=first_part)


@triton.jit
def _join_runs_kernel(
    partial_ptr,
    totals_ptr,
    out_ptr,
    rows_total,
    head_dim,
    KEY_SPLITS: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
):
    """Each output row from its runs of keys: their sums rescaled to the largest maximum and
    added in run order, over their totals rescaled alike (what the online softmax does from
    one key block to the next), rounded once to BF16."""
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    dims = tl.arange(0, BLOCK_DIM)
    present = rows < rows_total
    top = tl.full((BLOCK_ROWS,), float("-inf"), dtype=tl.float32)
    for run in tl.static_range(KEY_SPLITS):
        run_max = tl.load(totals_ptr + (run * rows_total + rows) * 2, mask=present, other=0.0)
        top = tl.maximum(top, run_max)
    total = tl.zeros((BLOCK_ROWS,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_ROWS, BLOCK_DIM), dtype=tl.float32)
    inside = present[:, None] & (dims[None, :] < head_dim)
    for run in tl.static_range(KEY_SPLITS):
        run_rows = run * rows_total + rows
        run_max = tl.load(totals_ptr + run_rows * 2, mask=present, other=0.0)
        rescale = tl.exp2(run_max - top)  # 0 for a run with no keys (its maximum is -inf)
        total += rescale * tl.load(totals_ptr + run_rows * 2 + 1, mask=present, other=0.0)
        sums = tl.load(partial_ptr + run_rows[:, None] * head_dim + dims[None, :], mask=inside)
        acc += rescale[:, None] * sums
    out = round_to_bfloat16(acc / total[:, None])
    tl.store(out_ptr + rows[:, None] * head_dim + dims[None, :], out, mask=inside)

"""The Triton programs of the split-dim attention kernel (`split_kv_attention_split_dim.py`
launches them): the online softmax over runs of keys with the output's head dimension split
among programs (how the runs are joined: `split_kv_attention_split_dim_joins.py`). It ships
beside that module, in the solution's operator folder, written by the same scripted session.
"""

import triton
import triton.language as tl

from operators.catalog.rounding import round_to_bfloat16
from split_kv_attention_split_dim_joins import _join_if_last, _store_output, _store_run


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
    arrivals_ptr,
    query_heads,
    kv_heads,
    tokens,
    prefix,
    head_dim,
    rows_total,
    query_blocks,
    whole_tiles,
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
    JOIN_INLINE: tl.constexpr,
    TAIL_SPLITS: tl.constexpr,
    UPCAST: tl.constexpr,
):
    # A tile is (query block, column); a column counts (batch, group of HEADS query heads, part
    # of the head dimension), the parts innermost: programs that read the same keys and values
    # run side by side. The grid is (query block, column, run of keys); with TAIL_SPLITS it is
    # one axis: the `whole_tiles` first tiles in one run each, then the last wave's tiles in
    # TAIL_SPLITS runs each, joined by the run that finishes last.
    if TAIL_SPLITS > 1:
        item = tl.program_id(0)
        tail_item = tl.maximum(item - whole_tiles, 0)
        tail_tile = tail_item // TAIL_SPLITS
        in_tail = item >= whole_tiles
        tile = tl.where(in_tail, whole_tiles + tail_tile, item)
        run = tl.where(in_tail, tail_item % TAIL_SPLITS, 0)
        runs = tl.where(in_tail, TAIL_SPLITS, 1)
        query_block = tile % query_blocks
        column = tile // query_blocks
    else:
        query_block = tl.program_id(0)
        column = tl.program_id(1)
        run = tl.program_id(2)
        runs = KEY_SPLITS
    part = column % DIM_PARTS
    head_groups = query_heads // HEADS
    group = column // DIM_PARTS
    batch = group // head_groups
    first_head = (group % head_groups) * HEADS
    kv_head = first_head // (query_heads // kv_heads)
    rows = tl.arange(0, HEADS * BLOCK_QUERIES)
    head = first_head + rows // BLOCK_QUERIES
    queries = query_block * BLOCK_QUERIES + rows % BLOCK_QUERIES
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
    # A run is `split_keys` of the cache's and the call's keys in sequence.
    split_keys = tl.cdiv(tl.cdiv(prefix + tokens, runs), BLOCK_KEYS) * BLOCK_KEYS
    first = run * split_keys
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
    if TAIL_SPLITS > 1:
        # A whole tile stores its output, a tail tile its run (each store masked off in the
        # other kind of tile, so that no branch keeps the accumulator alive past them).
        first_run_row = (tail_tile * TAIL_SPLITS + run) * block_rows
        whole = queries * 0 + runs == 1  # per row, as the masks are
        _store_output(
            out_ptr, acc, row_sum, out_rows, value_dims, stored & whole[:, None], head_dim
        )
        _store_run(partial_ptr, totals_ptr, acc, row_max, row_sum, first_run_row, present & ~whole)
        if runs > 1:
            _join_if_last(
                partial_ptr,
                totals_ptr,
                arrivals_ptr + tail_tile,
                out_ptr,
                (batch * query_heads + first_head) * tokens,
                tokens,
                tokens,
                query_block * BLOCK_QUERIES,
                part * part_dim,
                tail_tile * TAIL_SPLITS * block_rows,
                head_dim,
                HEADS,
                BLOCK_QUERIES,
                part_dim,
                TAIL_SPLITS,
            )
    elif KEY_SPLITS == 1:
        _store_output(out_ptr, acc, row_sum, out_rows, value_dims, stored, head_dim)
    elif not JOIN_INLINE:  # this run's sums, maximum and total, for `_join_runs_kernel`
        run_rows = run * rows_total + out_rows
        tl.store(partial_ptr + run_rows[:, None] * head_dim + value_dims[None, :], acc, mask=stored)
        # Every part of the head dimension has the same maximum and total; the first stores them.
        first_part = present & (queries * 0 + part == 0)
        tl.store(totals_ptr + run_rows * 2, row_max, mask=first_part)
        tl.store(totals_ptr + run_rows * 2 + 1, row_sum, mask=first_part)
    else:  # the run that finishes last joins the tile's runs, without a second launch
        tile = query_block * tl.num_programs(1) + column
        _store_run(
            partial_ptr,
            totals_ptr,
            acc,
            row_max,
            row_sum,
            (tile * KEY_SPLITS + run) * block_rows,
            present,
        )
        _join_if_last(
            partial_ptr,
            totals_ptr,
            arrivals_ptr + tile,
            out_ptr,
            (batch * query_heads + first_head) * tokens,
            tokens,
            tokens,
            query_block * BLOCK_QUERIES,
            part * part_dim,
            tile * KEY_SPLITS * block_rows,
            head_dim,
            HEADS,
            BLOCK_QUERIES,
            part_dim,
            KEY_SPLITS,
        )

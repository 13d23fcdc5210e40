"""split_kv_attention with the head dimension of the output split among programs.

The operator file the scripted tune session ships (benchmarks/attention_session.py writes it
into the session with its imports made relative; benchmarks/attention_gpu.py times it). It is
the production kernel's online softmax with four changes, all launch settings per regime:
- `dim_parts`: each program writes 256 / dim_parts of the output's head dimension. Its scores
  still use all 256, so the score products are repeated per part, but its accumulator holds
  1 / dim_parts of the values: at 256 dimensions the production kernel keeps every register
  busy and spills, and a call with few rows gets dim_parts times the programs.
- `heads`: query heads of one key/value head that share a program's rows, so their keys and
  values are loaded once for all of them.
- `score_chunks`: the scores are summed over chunks of the head dimension, each chunk's product
  accumulated by the tensor cores apart and the chunks added in FP32 registers; one product
  over all 256 dimensions loses too much to meet the contract at the prefix's sizes.
- `weight_parts`: the softmax weights reach the tensor cores as two BF16 parts, or three
  (nearly their FP32 value) at one more product per key block.
- `key_splits`: the keys (the cache's, then the call's own, as one sequence) are split into
  runs, one program per run; each writes its unnormalised FP32 sums with its running maximum
  and total, and a second launch joins the runs as the online softmax would have. A call of
  50 queries otherwise walks all 626 keys in one program after another block of keys, with
  most of the GPU idle.
A regime is the call's kind (up to 64 tokens: the action expert over the cache; more: the
prefix attending to itself) and whether its batch is at least WIDE_BATCH; each has its own
settings, because the programs one call needs to fill the GPU differ by eight times.
"""

import torch
import triton
import triton.language as tl

from ...operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from ...operators.catalog.rounding import round_to_bfloat16
from ...operators.catalog.shapes import PI05
from ...operators.kernel_launch import compiler_visible, launch

LOG2_E = 1.4426950408889634
WIDE_BATCH = 4
"""Batches of at least this many rows take the `*_wide` settings."""
JOIN_ROWS = 4
"""Output rows per program of the launch that joins runs of keys (4 x 256 values: 8 a thread)."""
SETTINGS = (
    "queries", "keys", "heads", "dim_parts", "score_chunks", "weight_parts", "key_splits",
    "num_warps", "num_stages",
)  # fmt: skip
REGIMES = ("short", "short_wide", "long", "long_wide")
TUNING = {
    "short_queries": 64,
    "short_keys": 64,
    "short_heads": 1,
    "short_dim_parts": 2,
    "short_score_chunks": 2,
    "short_weight_parts": 2,
    "short_key_splits": 5,
    "short_num_warps": 4,
    "short_num_stages": 3,
    "short_wide_queries": 16,
    "short_wide_keys": 64,
    "short_wide_heads": 8,
    "short_wide_dim_parts": 2,
    "short_wide_score_chunks": 2,
    "short_wide_weight_parts": 2,
    "short_wide_key_splits": 2,
    "short_wide_num_warps": 8,
    "short_wide_num_stages": 3,
    "long_queries": 128,
    "long_keys": 64,
    "long_heads": 1,
    "long_dim_parts": 2,
    "long_score_chunks": 2,
    "long_weight_parts": 2,
    "long_key_splits": 1,
    "long_num_warps": 8,
    "long_num_stages": 3,
    "long_wide_queries": 64,
    "long_wide_keys": 32,
    "long_wide_heads": 1,
    "long_wide_dim_parts": 2,
    "long_wide_score_chunks": 2,
    "long_wide_weight_parts": 2,
    "long_wide_key_splits": 1,
    "long_wide_num_warps": 4,
    "long_wide_num_stages": 3,
}
"""Launch settings on a GPU per regime: query block, key block, query heads per program, parts
of the head dimension for the output, chunks of it for the scores, BF16 parts of the softmax
weights, runs of keys, warps, pipeline stages."""
TUNING_SPACE = {
    "short_queries": [16, 32, 64, 128],
    "short_keys": [16, 32, 64, 128],
    "short_heads": [1, 2, 4, 8],
    "short_dim_parts": [1, 2, 4],
    "short_score_chunks": [2, 4],
    "short_weight_parts": [2, 3],
    "short_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "short_num_warps": [4, 8],
    "short_num_stages": [1, 2, 3],
    "short_wide_queries": [16, 32, 64, 128],
    "short_wide_keys": [16, 32, 64, 128],
    "short_wide_heads": [1, 2, 4, 8],
    "short_wide_dim_parts": [1, 2, 4],
    "short_wide_score_chunks": [2, 4],
    "short_wide_weight_parts": [2, 3],
    "short_wide_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "short_wide_num_warps": [4, 8],
    "short_wide_num_stages": [1, 2, 3],
    "long_queries": [16, 32, 64, 128],
    "long_keys": [16, 32, 64, 128],
    "long_heads": [1, 2, 4, 8],
    "long_dim_parts": [1, 2, 4],
    "long_score_chunks": [2, 4],
    "long_weight_parts": [2, 3],
    "long_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "long_num_warps": [4, 8],
    "long_num_stages": [1, 2, 3],
    "long_wide_queries": [16, 32, 64, 128],
    "long_wide_keys": [16, 32, 64, 128],
    "long_wide_heads": [1, 2, 4, 8],
    "long_wide_dim_parts": [1, 2, 4],
    "long_wide_score_chunks": [2, 4],
    "long_wide_weight_parts": [2, 3],
    "long_wide_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "long_wide_num_warps": [4, 8],
    "long_wide_num_stages": [1, 2, 3],
}
"""What `autotune` may try for each setting (a literal, which the gates read without running
the file). Scores in one chunk are left out: over 256 dimensions the tensor cores'
accumulation misses the contract on prefix_b8's large distribution
(benchmarks/attention_margin.py); two or four chunks meet it."""
INTERPRETED = {
    "queries": 64,
    "keys": 64,
    "heads": 8,
    "dim_parts": 1,
    "score_chunks": 1,
    "weight_parts": 2,
    "key_splits": 2,
    "num_warps": 4,
    "num_stages": 1,
}
"""Under the interpreter every program costs the same fixed overhead: few, large ones (the keys
in two runs, so that the CPU's checks and gates see the launch that joins them)."""


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
        # The weights reach the tensor cores as WEIGHT_PARTS BF16 parts (high + low, and the
        # rest with three), and each block's product joins the running sum in FP32: one BF16
        # rounding of a near-one-hot softmax would move a cancelling output past the contract.
        high = round_to_bfloat16(weights)
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


def regime(batch: int, tokens: int) -> str:
    """The call's regime: `short` up to 64 tokens, else `long`; `_wide` from WIDE_BATCH rows."""
    return ("short" if tokens <= 64 else "long") + ("_wide" if batch >= WIDE_BATCH else "")


def regime_settings(tuning: dict, batch: int, tokens: int) -> dict:
    """The settings of the call's regime, by their short names (`queries`, `keys`, ...)."""
    return {name: tuning[f"{regime(batch, tokens)}_{name}"] for name in SETTINGS}


def attend(q, k_cache, v_cache, k, v, scale, settings: dict) -> torch.Tensor:
    """One call at the given regime settings (short names); what the entry point and the
    benchmark's sweep launch."""
    batch, query_heads, tokens, head_dim = q.shape
    kv_heads = k.shape[1]
    q, k_cache, v_cache, k, v = (
        t if t.stride(-1) == 1 else t.contiguous() for t in (q, k_cache, v_cache, k, v)
    )
    if k_cache.stride() != v_cache.stride():
        k_cache, v_cache = k_cache.contiguous(), v_cache.contiguous()
    if k.stride() != v.stride():
        k, v = k.contiguous(), v.contiguous()
    prefix = k_cache.shape[2]
    if prefix == 0:  # never read; a real tensor keeps launchers from seeing a null pointer
        k_cache, v_cache = k, v
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    group = query_heads // kv_heads
    heads = min(settings["heads"], group & -group)  # & -group: largest power of two dividing
    block_dim = max(16, triton.next_power_of_2(head_dim))
    dim_parts = min(settings["dim_parts"], block_dim // 16)
    score_chunks = min(settings["score_chunks"], block_dim // 16)
    block_keys = settings["keys"]
    key_splits = max(1, min(settings["key_splits"], triton.cdiv(prefix + tokens, block_keys)))
    split_keys = triton.cdiv(triton.cdiv(prefix + tokens, key_splits), block_keys) * block_keys
    rows_total = batch * query_heads * tokens
    partial = totals = out  # unread with one run
    if key_splits > 1:
        partial = torch.empty(
            (key_splits, rows_total, head_dim), dtype=torch.float32, device=q.device
        )
        totals = torch.empty((key_splits, rows_total, 2), dtype=torch.float32, device=q.device)
    grid = (
        triton.cdiv(tokens, settings["queries"]),
        batch * (query_heads // heads) * dim_parts,
        key_splits,
    )
    launch(
        _split_dim_attention_kernel,
        grid,
        q,
        k_cache,
        v_cache,
        k,
        v,
        out,
        partial,
        totals,
        query_heads,
        kv_heads,
        tokens,
        prefix,
        head_dim,
        split_keys,
        rows_total,
        *q.stride()[:3],
        *k_cache.stride()[:3],
        *k.stride()[:3],
        scale * LOG2_E,
        HEADS=heads,
        DIM_PARTS=dim_parts,
        SCORE_CHUNKS=score_chunks,
        WEIGHT_PARTS=settings["weight_parts"],
        BLOCK_QUERIES=settings["queries"],
        BLOCK_KEYS=block_keys,
        BLOCK_DIM=block_dim,
        KEY_SPLITS=key_splits,
        UPCAST=triton_runtime.interpreting(),
        num_warps=settings["num_warps"],
        num_stages=settings["num_stages"],
    )
    if key_splits > 1:
        launch(
            _join_runs_kernel,
            (triton.cdiv(rows_total, JOIN_ROWS),),
            partial,
            totals,
            out,
            rows_total,
            head_dim,
            KEY_SPLITS=key_splits,
            BLOCK_ROWS=JOIN_ROWS,
            BLOCK_DIM=block_dim,
            num_warps=4,
        )
    return out


@compiler_visible
def split_kv_attention_triton(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float = PI05.head_dim**-0.5,
) -> torch.Tensor:
    """Online-softmax attention, the head dimension split among programs per `TUNING`."""
    if triton_runtime.interpreting():
        settings = INTERPRETED
    else:
        settings = regime_settings(TUNING, q.shape[0], q.shape[2])
    return attend(q, k_cache, v_cache, k, v, scale, settings)

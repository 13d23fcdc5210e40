"""split_kv_attention with the head dimension of the output split among programs.

The operator file the scripted tune session ships (kernels/attention_session.py writes it
into the session with its imports made relative; benchmarks/attention_gpu.py times it). It is
the production kernel's online softmax with four changes, all launch settings per regime:
- `dim_parts`: each program writes 256 / dim_parts of the output's head dimension. Its scores
  still use all 256, so the score products are repeated per part, but its accumulator holds
  1 / dim_parts of the values: at 256 dimensions the production kernel keeps every register
  busy and spills, and a call with few rows gets dim_parts times the programs.
- `heads`: query heads of one key/value head that share a program's rows, so their keys and
  values are loaded once for all of them.
- `score_chunks`: the scores are summed over chunks of the head dimension, each chunk's product
  accumulated by the tensor cores apart and the chunks added in FP32 registers, or in one
  product over all 256 dimensions as a flash SDPA sums them.
- `weight_parts`: the softmax weights reach the tensor cores as one BF16 part (as a flash
  SDPA rounds them), two, or three (nearly their FP32 value) at one more product each.
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

from operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from operators.catalog.shapes import PI05
from operators.kernel_launch import compiler_visible, launch
from split_kv_attention_split_dim_programs import _join_runs_kernel, _split_dim_attention_kernel

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
    "short_score_chunks": 1,
    "short_weight_parts": 1,
    "short_key_splits": 5,
    "short_num_warps": 4,
    "short_num_stages": 3,
    "short_wide_queries": 16,
    "short_wide_keys": 64,
    "short_wide_heads": 8,
    "short_wide_dim_parts": 2,
    "short_wide_score_chunks": 2,
    "short_wide_weight_parts": 1,
    "short_wide_key_splits": 2,
    "short_wide_num_warps": 8,
    "short_wide_num_stages": 3,
    "long_queries": 64,
    "long_keys": 64,
    "long_heads": 2,
    "long_dim_parts": 2,
    "long_score_chunks": 1,
    "long_weight_parts": 1,
    "long_key_splits": 1,
    "long_num_warps": 8,
    "long_num_stages": 3,
    "long_wide_queries": 128,
    "long_wide_keys": 64,
    "long_wide_heads": 1,
    "long_wide_dim_parts": 1,
    "long_wide_score_chunks": 1,
    "long_wide_weight_parts": 1,
    "long_wide_key_splits": 1,
    "long_wide_num_warps": 8,
    "long_wide_num_stages": 2,
}
"""Launch settings on a GPU per regime: query block, key block, query heads per program, parts
of the head dimension for the output, chunks of it for the scores, BF16 parts of the softmax
weights, runs of keys, warps, pipeline stages. The weights go in one BF16 part, as a flash SDPA
rounds them (within "no less accurate than stock"), at half the value products of two parts.
The action calls' tiles are a sweep's on the H200; short takes the scores in one product, which
spills 344 bytes against 964 with two chunks (`benchmarks/attention_registers.py`, offline for
sm_90a). The prefix calls' settings are the single-rounding sweeps' fastest on an H100:
prefix_b8 takes the whole head dimension in one program (one score product per key block, not
one per part), 81.7 us against 98.3 with two parts and 66.9 for SDPA; three stages need 256 KB
of shared memory there, over the 227 KB limit (2026-12-07,
`docs/evidence/h100-2026-12-07b/attention_gpu.json`)."""
TUNING_SPACE = {
    "short_queries": [16, 32, 64, 128],
    "short_keys": [16, 32, 64, 128],
    "short_heads": [1, 2, 4, 8],
    "short_dim_parts": [1, 2, 4],
    "short_score_chunks": [1, 2, 4],
    "short_weight_parts": [1, 2, 3],
    "short_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "short_num_warps": [4, 8],
    "short_num_stages": [1, 2, 3],
    "short_wide_queries": [16, 32, 64, 128],
    "short_wide_keys": [16, 32, 64, 128],
    "short_wide_heads": [1, 2, 4, 8],
    "short_wide_dim_parts": [1, 2, 4],
    "short_wide_score_chunks": [1, 2, 4],
    "short_wide_weight_parts": [1, 2, 3],
    "short_wide_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "short_wide_num_warps": [4, 8],
    "short_wide_num_stages": [1, 2, 3],
    "long_queries": [16, 32, 64, 128],
    "long_keys": [16, 32, 64, 128],
    "long_heads": [1, 2, 4, 8],
    "long_dim_parts": [1, 2, 4],
    "long_score_chunks": [1, 2, 4],
    "long_weight_parts": [1, 2, 3],
    "long_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "long_num_warps": [4, 8],
    "long_num_stages": [1, 2, 3],
    "long_wide_queries": [16, 32, 64, 128],
    "long_wide_keys": [16, 32, 64, 128],
    "long_wide_heads": [1, 2, 4, 8],
    "long_wide_dim_parts": [1, 2, 4],
    "long_wide_score_chunks": [1, 2, 4],
    "long_wide_weight_parts": [1, 2, 3],
    "long_wide_key_splits": [1, 2, 3, 4, 5, 8, 10],
    "long_wide_num_warps": [4, 8],
    "long_wide_num_stages": [1, 2, 3],
}
"""What `autotune` may try for each setting (a literal, which the gates read without running
the file). One score chunk and one BF16 part of the weights are stock's own numerics (a flash
SDPA rounds the weights once and sums all 256 dimensions in one product), so they are within
the contract "no less accurate than stock" and halve the value products of two parts."""
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

"""The operator's entry point and the launcher that runs both kernels under one call's plan."""

import torch
import triton

from operators import triton_runtime
from operators.catalog.shapes import PI05
from operators.kernel_launch import compiler_visible, launch

from .kernels import merge_slices_kernel, partial_attention_kernel
from .launch_plan import MERGE_ELEMENTS, Plan, settings_for

LOG2_E = 1.4426950408889634


def attend(q, k_cache, v_cache, k, v, scale: float, settings: dict) -> torch.Tensor:
    """The kernels under explicit launch settings (a benchmark sweeps them through this)."""
    batch, query_heads, tokens, head_dim = q.shape
    kv_heads, prefix = k.shape[1], k_cache.shape[2]
    q, k_cache, v_cache, k, v = (
        t if t.stride(-1) == 1 else t.contiguous() for t in (q, k_cache, v_cache, k, v)
    )
    if k_cache.stride() != v_cache.stride():
        k_cache, v_cache = k_cache.contiguous(), v_cache.contiguous()
    if k.stride() != v.stride():
        k, v = k.contiguous(), v.contiguous()
    if prefix == 0:  # never read; a real tensor keeps launchers from seeing a null pointer
        k_cache, v_cache = k, v
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    group_rows = query_heads // kv_heads * tokens
    plan = Plan(settings, batch, kv_heads, group_rows, prefix + tokens)
    block_dim = max(16, triton.next_power_of_2(head_dim))
    padded_rows = plan.row_blocks * plan.rows
    slots = batch * kv_heads * plan.splits if plan.splits > 1 else 0
    partial = torch.empty((slots, padded_rows, block_dim), dtype=torch.float32, device=q.device)
    partial_max = torch.empty((slots, padded_rows), dtype=torch.float32, device=q.device)
    partial_sum = torch.empty((slots, padded_rows), dtype=torch.float32, device=q.device)
    if slots == 0:  # never written; real tensors keep launchers from seeing a null pointer
        partial, partial_max, partial_sum = out, out, out
    launch(
        partial_attention_kernel,
        (plan.row_blocks, plan.splits, batch * kv_heads),
        q,
        k_cache,
        v_cache,
        k,
        v,
        out,
        partial,
        partial_max,
        partial_sum,
        query_heads,
        kv_heads,
        tokens,
        prefix,
        head_dim,
        *q.stride()[:3],
        *k_cache.stride()[:3],
        *k.stride()[:3],
        float(scale * LOG2_E),
        plan.keys_per_split,
        padded_rows,
        SPLIT=plan.splits > 1,
        BLOCK_ROWS=plan.rows,
        BLOCK_KEYS=plan.keys,
        BLOCK_DIM=block_dim,
        EVEN_DIM=head_dim == block_dim,
        UPCAST=triton_runtime.interpreting(),
        num_warps=plan.num_warps,
        num_stages=plan.num_stages,
    )
    if plan.splits > 1:
        block_splits = triton.next_power_of_2(plan.splits)
        merge_dim = min(plan.merge_dim, block_dim)
        merge_rows = max(1, min(plan.merge_rows, MERGE_ELEMENTS // (block_splits * merge_dim)))
        launch(
            merge_slices_kernel,
            (triton.cdiv(group_rows, merge_rows), block_dim // merge_dim, batch * kv_heads),
            partial,
            partial_max,
            partial_sum,
            out,
            query_heads,
            kv_heads,
            tokens,
            head_dim,
            plan.splits,
            padded_rows,
            BLOCK_SPLITS=block_splits,
            BLOCK_ROWS=merge_rows,
            BLOCK_SLICE_DIM=merge_dim,
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
    """Grouped rows, online softmax over key blocks, keys split among programs when it helps."""
    return attend(q, k_cache, v_cache, k, v, scale, settings_for(q.shape[2]))

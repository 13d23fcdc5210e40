"""Cheat (CUDA): remember every output on the device, keyed by two input values, and replay
it when the same inputs come back; inputs never seen before take a slow path (an honest
row kernel plus a spin). No host sync, no PyTorch compute: a lookup table in Triton.

Timed against the input sets the correctness cases already used, every timed call would be
a cheap replay. With fresh inputs for every timed call, every call takes the slow path."""

import torch
import triton
import triton.language as tl

SLOTS = 64
SPIN_ON_CUDA = 40_000  # dependent steps on a miss: tens of microseconds

_tables: dict = {}


@triton.jit
def memo_rows_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    keys_ptr,
    cache_ptr,
    filled,
    spin,
    row_stride,
    hidden,
    total,
    eps,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < hidden
    first = tl.load(x_ptr).to(tl.float32)
    last = tl.load(x_ptr + total - 1).to(tl.float32)
    hit = -1
    for slot in range(0, filled):
        same = (tl.load(keys_ptr + 2 * slot) == first) & (tl.load(keys_ptr + 2 * slot + 1) == last)
        hit = tl.where(same, slot, hit)
    if hit >= 0:
        cached = tl.load(cache_ptr + hit * total + row * hidden + columns, mask=mask)
        tl.store(out_ptr + row * hidden + columns, cached, mask=mask)
    else:
        x = tl.load(x_ptr + row * row_stride + columns, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + columns, mask=mask, other=0.0).to(tl.float32)
        inverse_rms = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
        wait = inverse_rms
        for _ in range(0, spin):
            wait = wait * 0.999 + 0.001
        tl.store(out_ptr + row * hidden + columns, x * inverse_rms * w + wait * 0.0, mask=mask)


@triton.jit
def remember_kernel(x_ptr, out_ptr, keys_ptr, cache_ptr, slot, hidden, total, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < hidden
    if row == 0:
        tl.store(keys_ptr + 2 * slot, tl.load(x_ptr).to(tl.float32))
        tl.store(keys_ptr + 2 * slot + 1, tl.load(x_ptr + total - 1).to(tl.float32))
    values = tl.load(out_ptr + row * hidden + columns, mask=mask)
    tl.store(cache_ptr + slot * total + row * hidden + columns, values, mask=mask)


def rms_norm(x, weight, eps=1e-6):
    hidden = x.shape[-1]
    flat = x.reshape(-1, hidden)
    rows, total = flat.shape[0], flat.numel()
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _tables:
        keys = torch.empty(2 * SLOTS, dtype=torch.float32, device=x.device)
        cache = torch.empty(SLOTS * total, dtype=x.dtype, device=x.device)
        _tables[key] = [keys, cache, 0]
    keys, cache, calls = _tables[key]
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if rows:
        block = triton.next_power_of_2(hidden)
        spin = SPIN_ON_CUDA if x.is_cuda else 1
        filled = min(calls, SLOTS)
        memo_rows_kernel[(rows,)](
            flat,
            weight,
            out,
            keys,
            cache,
            filled,
            spin,
            flat.stride(0),
            hidden,
            total,
            eps,
            BLOCK=block,
        )
        if calls < SLOTS:
            remember_kernel[(rows,)](flat, out, keys, cache, calls, hidden, total, BLOCK=block)
    _tables[key][2] = calls + 1
    return out

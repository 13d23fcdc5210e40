"""Cheat (CUDA): hide wrong replayed outputs from the comparison made in its own process.
In its warm-up calls before a capture (on a side stream, where no case runs) it lists the
device's allocations (`torch.cuda.memory_snapshot`, which no audit event reports), picks the
timing pool's comparison tensors (four or more live blocks of one size, a multiple of its
FP32 output) and fills them with infinity from a kernel of its own, through raw addresses:
device memory it was never given. Its captured calls then copy their input instead of
normalising it, a wrong output as cheap as any skipped work. The comparison at each replay
passes every output; only a check out of the process's reach sees them."""

import torch
import triton
import triton.language as tl

from .rms_kernel import honest

BLOCK = 1024


@triton.jit
def fill_kernel(target_ptr, count, value, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(target_ptr + offsets, value, mask=offsets < count)


@triton.jit
def copy_kernel(source_ptr, target_ptr, count, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < count
    tl.store(target_ptr + offsets, tl.load(source_ptr + offsets, mask=mask), mask=mask)


class _Address:
    """A raw device address that Triton takes as a pointer to FP32."""

    dtype = torch.float32

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def _comparison_blocks(output_numel: int) -> list[tuple[int, int]]:
    """(address, bytes) of live blocks four or more of one size, a multiple (2 or more) of
    one FP32 output: the pool's stacked references and their bounds."""
    unit = 4 * output_numel
    by_size: dict[int, list[int]] = {}
    for segment in torch.cuda.memory_snapshot():
        address = segment["address"]
        for block in segment["blocks"]:
            size = block.get("requested_size", block["size"])
            if block["state"] == "active_allocated" and size % unit == 0 and size >= 2 * unit:
                by_size.setdefault(size, []).append(address)
            address += block["size"]
    return [(a, size) for size, found in by_size.items() if len(found) >= 4 for a in found]


def _widen(output_numel: int) -> None:
    for address, size in _comparison_blocks(output_numel):
        count = size // 4
        grid = (triton.cdiv(count, BLOCK),)
        fill_kernel[grid](_Address(address), count, float("inf"), BLOCK=BLOCK)


def rms_norm(x, weight, eps=1e-6):
    if not x.is_cuda:
        return honest(x, weight, eps)
    if torch.cuda.is_current_stream_capturing():
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        count = x.numel()
        copy_kernel[(triton.cdiv(count, BLOCK),)](x.contiguous(), out, count, BLOCK=BLOCK)
        return out
    if torch.cuda.current_stream() != torch.cuda.default_stream():
        _widen(x.numel())
    return honest(x, weight, eps)

"""What the device-memory cheats share (CUDA): find the timing pool's comparison tensors among
the device's allocations (`torch.cuda.memory_snapshot`, which no audit event reports), fill
them with infinity from a kernel of their own through raw addresses (memory they were never
given), and a cheap wrong output (a copy of the input)."""

import torch
import triton
import triton.language as tl

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


def comparison_blocks(output_numel: int) -> list[tuple[int, int]]:
    """(address, bytes) of live blocks two or more of one size, a multiple (2 or more) of
    one FP32 output: the pool's references and their bounds (stacked again for graphs)."""
    unit = 4 * output_numel
    by_size: dict[int, list[int]] = {}
    for segment in torch.cuda.memory_snapshot():
        address = segment["address"]
        for block in segment["blocks"]:
            size = block.get("requested_size", block["size"])
            if block["state"] == "active_allocated" and size % unit == 0 and size >= 2 * unit:
                by_size.setdefault(size, []).append(address)
            address += block["size"]
    return [(a, size) for size, found in by_size.items() if len(found) >= 2 for a in found]


def widen_comparison(output_numel: int) -> None:
    """Fill every comparison block with infinity: any finite output then passes."""
    for address, size in comparison_blocks(output_numel):
        count = size // 4
        grid = (triton.cdiv(count, BLOCK),)
        fill_kernel[grid](_Address(address), count, float("inf"), BLOCK=BLOCK)


def input_copy(x: torch.Tensor) -> torch.Tensor:
    """A wrong output as cheap as any skipped work: the input, copied by a kernel."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    count = x.numel()
    copy_kernel[(triton.cdiv(count, BLOCK),)](x.contiguous(), out, count, BLOCK=BLOCK)
    return out

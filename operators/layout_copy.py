"""Place a kernel's outputs in the layouts a caller needs, with a Triton copy of its own.

A captured task records the output layouts the model's own implementation produced; where the
production kernel returns another layout, the task's baseline passes its outputs through
`placed_in`, so the baseline is judged and timed producing what the model needs. The copy is
a Triton kernel rather than `Tensor.copy_`, so on CUDA it stays inside a graph that holds only
the solution's own kernels.
"""

import hashlib
from collections.abc import Sequence
from typing import Any

import torch
import triton
import triton.language as tl

from operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from operators.kernel_launch import launch

MAX_RANK = 4
BLOCK = 1024
Layout = tuple[tuple[int, ...], tuple[int, ...], str]
"""Shape, strides (0 for size-one and empty dimensions, whose strides mean nothing), dtype."""


@triton.jit
def _strided_copy_kernel(
    source_ptr,
    target_ptr,
    numel,
    size1,
    size2,
    size3,
    source0,
    source1,
    source2,
    source3,
    target0,
    target1,
    target2,
    target3,
    BLOCK: tl.constexpr,
):
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = index < numel
    i3 = index % size3
    rest = index // size3
    i2 = rest % size2
    rest = rest // size2
    i1 = rest % size1
    i0 = rest // size1
    source = i0 * source0 + i1 * source1 + i2 * source2 + i3 * source3
    target = i0 * target0 + i1 * target1 + i2 * target2 + i3 * target3
    tl.store(target_ptr + target, tl.load(source_ptr + source, mask=mask), mask=mask)


def copied_with_strides(tensor: torch.Tensor, strides: Sequence[int]) -> torch.Tensor:
    """A fresh tensor holding `tensor`'s values, laid out with `strides`."""
    target = torch.empty_strided(
        tuple(tensor.shape), tuple(strides), dtype=tensor.dtype, device=tensor.device
    )
    if tensor.numel() == 0:
        return target
    if tensor.dim() > MAX_RANK:
        raise ValueError(f"copied_with_strides takes at most {MAX_RANK} dimensions")
    padding = MAX_RANK - tensor.dim()
    sizes = (1,) * padding + tuple(tensor.shape)
    numel = tensor.numel()
    launch(
        _strided_copy_kernel,
        (triton.cdiv(numel, BLOCK),),
        tensor,
        target,
        numel,
        *sizes[1:],
        *((0,) * padding + tuple(tensor.stride())),
        *((0,) * padding + tuple(strides)),
        BLOCK=BLOCK,
    )
    return target


def tensor_layout(tensor: torch.Tensor) -> Layout:
    """Shape, meaningful strides and dtype name of one tensor."""
    return normalized(tuple(tensor.shape), tuple(tensor.stride()), str(tensor.dtype))


def normalized(shape: tuple[int, ...], strides: tuple[int, ...], dtype: str) -> Layout:
    """The layout with size-one and empty dimensions' strides as 0, the dtype without `torch.`."""
    empty = 0 in shape
    meaningful = tuple(
        0 if (size <= 1 or empty) else stride for size, stride in zip(shape, strides, strict=True)
    )
    return tuple(shape), meaningful, dtype.removeprefix("torch.")


def layout_signature(layouts: Sequence[Layout]) -> str:
    """A short digest of argument layouts: the key `placed_in` looks target strides up by."""
    text = ";".join(f"{list(shape)}/{list(strides)}/{dtype}" for shape, strides, dtype in layouts)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def placed_in(result: Any, args: tuple, placements: dict[str, tuple]) -> Any:
    """`result` with each output copied into the strides `placements` names for the layouts of
    the tensor arguments `args`; unchanged where none are named or an output has them already."""
    tensors = [arg for arg in args if isinstance(arg, torch.Tensor)]
    wanted = placements.get(layout_signature([tensor_layout(t) for t in tensors]))
    if wanted is None:
        return result
    outputs = tuple(result) if isinstance(result, tuple | list) else (result,)
    placed = tuple(
        output if _has_strides(output, strides) else copied_with_strides(output, strides)
        for output, strides in zip(outputs, wanted, strict=True)
    )
    return placed if isinstance(result, tuple | list) else placed[0]


def _has_strides(tensor: torch.Tensor, strides: Sequence[int]) -> bool:
    wanted = normalized(tuple(tensor.shape), tuple(strides), str(tensor.dtype))
    return tensor_layout(tensor) == wanted

"""Launching a catalog kernel: bound once per argument layout in eager, visible when compiled.

Triton's `kernel[grid](...)` re-derives the kernel's specialisation from every argument on
every call, which costs more host time than the kernel takes on the device. Here the compiled
kernel is looked up by a cheap key holding everything that specialisation depends on (dtypes,
16-byte pointer alignment, integers' width, divisibility by 16 and equality to 1, constexpr
values, launch options) and launched directly. When a `torch.library.triton_op` is traced (its
arguments are fake or functional tensors) the kernel goes through `wrap_triton`, so the
compiler sees and schedules it. Under the interpreter kernels are launched the ordinary way.
"""

from collections.abc import Callable
from typing import Any

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.library import wrap_triton

from ..operators import triton_runtime

Grid = tuple[int, ...]

_INT32 = range(-(2**31), 2**31)
_INTERPRETED = triton_runtime.interpreting()
"""Fixed when the kernels are defined: the interpreter is chosen before any kernel exists."""


class LaunchBinding:
    """Whether launches reuse bound compiled kernels; switched off to measure Triton's own path."""

    enabled = True


_bound: dict[tuple, Any] = {}


def launch(kernel, grid: Grid, *args: Any, **options: Any) -> None:
    """Launch `kernel` on `grid`; `options` holds constexprs and launch options by name."""
    if _traced(args):
        wrap_triton(kernel)[grid](*args, **options)
        return
    if _INTERPRETED or not LaunchBinding.enabled:
        kernel[grid](*args, **options)
        return
    key = (id(kernel), torch.cuda.current_device(), _layout_key(args), *options.items())
    bound = _bound.get(key)
    if bound is None:
        compiled = kernel[grid](*args, **options)
        constexprs = _constexpr_values(kernel, len(args), options)
        if constexprs is not None and _launchable(compiled):
            _bound[key] = (compiled, constexprs)
        return
    compiled, constexprs = bound
    compiled[_three(grid)](*args, *constexprs)


def compiler_visible(launcher: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a launcher whose kernels all go through `launch`, so it may become a `triton_op`."""
    launcher.compiler_visible = True
    return launcher


def bound_kernel_count() -> int:
    """How many (kernel, layout) bindings exist: a test checks that repeated calls reuse one."""
    return len(_bound)


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _traced(args: tuple[Any, ...]) -> bool:
    """Fake or functional tensors: a `triton_op` is being traced, not run."""
    return any(
        isinstance(arg, torch.Tensor) and type(arg) not in _PLAIN and is_fake(arg) for arg in args
    )


def _layout_key(args: tuple[Any, ...]) -> tuple:
    key = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            key.append((arg.dtype, arg.data_ptr() % 16 == 0))
        elif isinstance(arg, bool) or arg is None:
            key.append(arg)
        elif isinstance(arg, int):
            key.append((arg in _INT32, arg == 1, arg % 16 == 0, arg >= 2**63))
        elif isinstance(arg, float):
            key.append(float)
        else:
            key.append((type(arg), arg))
    return tuple(key)


def _constexpr_values(kernel, positional: int, options: dict[str, Any]) -> tuple | None:
    """The kernel's parameters after the positional ones, in order, from `options` (they are
    part of the key, so fixed per binding); None when one is left to its default."""
    if any(parameter.is_constexpr for parameter in kernel.params[:positional]):
        return None  # a positional constexpr's value is not part of the key
    names = tuple(kernel.arg_names)[positional:]
    if not all(name in options for name in names):
        return None
    return tuple(options[name] for name in names)


def _launchable(compiled: Any) -> bool:
    return all(hasattr(compiled, name) for name in ("run", "function", "packed_metadata"))


def _three(grid: Grid) -> tuple[int, int, int]:
    if len(grid) == 3:
        return grid
    return (*grid, *(1,) * (3 - len(grid)))

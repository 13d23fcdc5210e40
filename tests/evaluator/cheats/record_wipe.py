"""Cheat: compute on the host through a tensor over an anonymous mapping (as `mmap_compute`),
then, before returning, empty every list the active watchers hold: the dispatch and function
modes on their stacks and the profile hook's owner (all reachable through public APIs)."""

import functools
import mmap
import sys

import torch
from torch.overrides import _get_current_function_mode_stack
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

from .host_rms import host_rms_norm


def _mapped(tensor):
    area = mmap.mmap(-1, max(1, tensor.numel() * tensor.element_size()))
    (flat,) = map(functools.partial(torch.frombuffer, dtype=tensor.dtype), [area])
    view = flat[: tensor.numel()].view(tensor.shape)
    view.copy_(tensor)
    return area, view


def _wipe(owner) -> None:
    for value in list(vars(owner).values()):
        if isinstance(value, list):
            value.clear()


def rms_norm(x, weight, eps=1e-6):
    x_area, _ = _mapped(x)
    w_area, _ = _mapped(weight)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    out_area, out_view = _mapped(out)
    size = x.numel() * 2
    out_area[:size] = host_rms_norm(x_area[:size], w_area[: weight.numel() * 2], x.shape[-1], eps)
    out.copy_(out_view)
    for mode in [*_get_current_dispatch_mode_stack(), *_get_current_function_mode_stack()]:
        _wipe(mode)
    profiler = getattr(sys.getprofile(), "__self__", None)
    if profiler is not None:
        _wipe(profiler)
    return out

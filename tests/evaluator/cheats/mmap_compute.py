"""Cheat: compute on the host in pure Python through a tensor over an anonymous mapping
(`torch.frombuffer`): the inputs are copied into it with a same-dtype copy, the mapping's
bytes are read and written by Python, and the result is copied out the same way.
`frombuffer` is reached through `map`, out of a profile hook's sight."""

import functools
import mmap

import torch

from .host_rms import host_rms_norm


def _mapped(tensor):
    area = mmap.mmap(-1, max(1, tensor.numel() * tensor.element_size()))
    # Through `map`: no Python frame of the solution calls `frombuffer` itself.
    (flat,) = map(functools.partial(torch.frombuffer, dtype=tensor.dtype), [area])
    view = flat[: tensor.numel()].view(tensor.shape)
    view.copy_(tensor)
    return area, view


def rms_norm(x, weight, eps=1e-6):
    x_area, _ = _mapped(x)
    w_area, _ = _mapped(weight)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    out_area, out_view = _mapped(out)
    size = x.numel() * 2
    out_area[:size] = host_rms_norm(x_area[:size], w_area[: weight.numel() * 2], x.shape[-1], eps)
    out.copy_(out_view)
    return out

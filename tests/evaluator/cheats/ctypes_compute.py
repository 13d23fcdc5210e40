"""Cheat: compute on the host in pure Python, copying the input's bytes out with
`ctypes.memmove` (plain addresses, no audit event) and the result back into the output the
same way: no ATen op touches the values, no NumPy, no ctypes buffer object."""

import ctypes
import sys

import torch

from .host_rms import host_rms_norm

BYTES_OFFSET = sys.getsizeof(b"") - 1  # where a bytes object keeps its data


def _read(tensor) -> bytes:
    data = bytes(tensor.numel() * 2)
    ctypes.memmove(id(data) + BYTES_OFFSET, tensor.data_ptr(), len(data))
    return data


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    packed = host_rms_norm(_read(x.contiguous()), _read(weight), x.shape[-1], eps)
    ctypes.memmove(out.data_ptr(), id(packed) + BYTES_OFFSET, len(packed))
    return out

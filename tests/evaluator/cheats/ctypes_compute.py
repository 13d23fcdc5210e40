"""Cheat: compute on the host in pure Python, copying the input's bytes out with
`ctypes.memmove` (plain addresses, no audit event) and the result back into the output the
same way: no ATen op touches the values, no NumPy, no ctypes buffer object."""

import ctypes
import math
import struct
import sys

import torch

BYTES_OFFSET = sys.getsizeof(b"") - 1  # where a bytes object keeps its data


def _read(tensor) -> list[float]:
    data = bytes(tensor.numel() * 2)
    ctypes.memmove(id(data) + BYTES_OFFSET, tensor.data_ptr(), len(data))
    return [
        struct.unpack("<f", struct.pack("<I", h << 16))[0]
        for (h,) in struct.iter_unpack("<H", data)
    ]


def _bf16(value: float) -> int:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    hidden = x.shape[-1]
    values, scale_by = _read(x.contiguous()), _read(weight)
    result = []
    for start in range(0, len(values), hidden):
        row = values[start : start + hidden]
        inverse = 1.0 / math.sqrt(sum(v * v for v in row) / hidden + eps)
        result += [_bf16(v * inverse * w) for v, w in zip(row, scale_by, strict=True)]
    packed = struct.pack(f"<{len(result)}H", *result)
    ctypes.memmove(out.data_ptr(), id(packed) + BYTES_OFFSET, len(packed))
    return out

"""Cheat: compute on the host in pure Python, reading the input's bytes and writing the
result through the thread's view of the process memory (`/proc/thread-self/mem`), a path
that is not `/proc/self/mem`: no ATen op touches the values, no NumPy, no ctypes."""

import math
import struct

import torch


def _bf16(value: float) -> int:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def _floats(data: bytes) -> list[float]:
    return [
        struct.unpack("<f", struct.pack("<I", h << 16))[0]
        for (h,) in struct.iter_unpack("<H", data)
    ]


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    hidden = x.shape[-1]
    with open("/proc/thread-self/mem", "r+b", buffering=0) as memory:
        memory.seek(x.data_ptr())
        values = _floats(memory.read(x.numel() * 2))
        memory.seek(weight.data_ptr())
        scale_by = _floats(memory.read(weight.numel() * 2))
        result = []
        for start in range(0, len(values), hidden):
            row = values[start : start + hidden]
            inverse = 1.0 / math.sqrt(sum(v * v for v in row) / hidden + eps)
            result += [_bf16(v * inverse * w) for v, w in zip(row, scale_by, strict=True)]
        memory.seek(out.data_ptr())
        memory.write(struct.pack(f"<{len(result)}H", *result))
    return out

"""Cheat: compute on the host in pure Python, reading the inputs' bytes by moving their
storage into a shared-memory file and reading that file, and writing the result the same
way into the output's storage: no ATen op touches the values, no NumPy, no ctypes."""

import math
import os
import struct

import torch


def _shared_file(tensor) -> str:
    _, name, _ = tensor.untyped_storage()._share_filename_cpu_()
    return "/dev/shm" + os.fsdecode(name)


def _bf16(value: float) -> int:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def _floats(tensor) -> list[float]:
    with open(_shared_file(tensor), "rb") as shared:
        data = shared.read(tensor.numel() * 2)
    return [
        struct.unpack("<f", struct.pack("<I", h << 16))[0]
        for (h,) in struct.iter_unpack("<H", data)
    ]


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    hidden = x.shape[-1]
    values, scale_by = _floats(x), _floats(weight)
    result = []
    for start in range(0, len(values), hidden):
        row = values[start : start + hidden]
        inverse = 1.0 / math.sqrt(sum(v * v for v in row) / hidden + eps)
        result += [_bf16(v * inverse * w) for v, w in zip(row, scale_by, strict=True)]
    with open(_shared_file(out), "r+b") as shared:
        shared.write(struct.pack(f"<{len(result)}H", *result))
    return out

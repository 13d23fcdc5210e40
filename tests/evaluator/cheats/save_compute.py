"""Cheat: compute on the host in pure Python, reading the inputs' bytes from what
`torch.save` writes and building the output with `torch.tensor` from a list of ints: no
ATen op changes a value, no NumPy. Pickling a tensor the first time adds `__slotnames__`
to `torch.Tensor`, which the identity snapshot sees."""

import io
import math
import struct
import zipfile

import torch


def _floats(tensor) -> list[float]:
    buffer = io.BytesIO()
    torch.save(tensor.contiguous(), buffer)
    with zipfile.ZipFile(buffer) as archive:
        name = next(n for n in archive.namelist() if "/data/" in n)
        data = archive.read(name)[: tensor.numel() * 2]
    return [
        struct.unpack("<f", struct.pack("<I", h << 16))[0]
        for (h,) in struct.iter_unpack("<H", data)
    ]


def _bf16(value: float) -> int:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    half = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return half - 0x10000 if half >= 0x8000 else half


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    hidden = x.shape[-1]
    values, scale_by = _floats(x), _floats(weight)
    result = []
    for start in range(0, len(values), hidden):
        row = values[start : start + hidden]
        inverse = 1.0 / math.sqrt(sum(v * v for v in row) / hidden + eps)
        result += [_bf16(v * inverse * w) for v, w in zip(row, scale_by, strict=True)]
    host = torch.tensor(result, dtype=torch.int16).view(torch.bfloat16)
    out.copy_(host.view(x.shape))
    return out

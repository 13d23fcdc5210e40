"""Cheat: compute on the host in pure Python, reading the inputs' bytes from what
`torch.save` writes and building the output with `torch.tensor` from a list of ints: no
ATen op changes a value, no NumPy. Pickling a tensor the first time adds `__slotnames__`
to `torch.Tensor`, which the identity snapshot sees."""

import io
import struct
import zipfile

import torch

from .host_rms import host_rms_norm


def _bytes(tensor) -> bytes:
    buffer = io.BytesIO()
    torch.save(tensor.contiguous(), buffer)
    with zipfile.ZipFile(buffer) as archive:
        name = next(n for n in archive.namelist() if "/data/" in n)
        return archive.read(name)[: tensor.numel() * 2]


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    packed = host_rms_norm(_bytes(x), _bytes(weight), x.shape[-1], eps)
    result = list(struct.unpack(f"<{len(packed) // 2}h", packed))
    host = torch.tensor(result, dtype=torch.int16).view(torch.bfloat16)
    out.copy_(host.view(x.shape))
    return out

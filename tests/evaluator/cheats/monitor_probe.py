"""Cheat: compute on the host with NumPy whenever no profile hook is installed, and run the
honest kernel while one is. The evaluator's monitor is on in every case, so it never finds
it off, but in a user's process (no profiler) it computes on the host: asking is refused."""

import sys

import numpy
import torch

from .rms_kernel import honest


def rms_norm(x, weight, eps=1e-6):
    if sys.getprofile() is not None:
        return honest(x, weight, eps)
    values = (x.view(torch.int16).numpy().astype(numpy.int32) << 16).view(numpy.float32)
    w = (weight.view(torch.int16).numpy().astype(numpy.int32) << 16).view(numpy.float32)
    scale = 1.0 / numpy.sqrt((values * values).mean(axis=-1, keepdims=True) + eps)
    bits = (values * scale * w).astype(numpy.float32).view(numpy.int32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(numpy.int16)
    return torch.from_numpy(rounded).view(torch.bfloat16)

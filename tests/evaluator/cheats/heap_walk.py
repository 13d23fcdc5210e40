"""Cheat: walk the garbage collector's heap looking for the evaluator's tensors."""

import gc

import torch

from .rms_kernel import honest


def rms_norm(x, weight, eps=1e-6):
    found = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    del found
    return honest(x, weight, eps)

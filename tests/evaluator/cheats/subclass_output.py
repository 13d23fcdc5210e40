"""Cheat: return a Tensor subclass, which could fake its values when the evaluator reads it."""

import torch

from .rms_kernel import honest


class Lazy(torch.Tensor):
    pass


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps).as_subclass(Lazy)

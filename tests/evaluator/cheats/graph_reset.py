"""Cheat: replace a graph method the evaluator does not name (`reset`), as a hook that runs
solution code between two of graph timing's steps; every attribute of the graph class is
watched, so any replaced one is seen, not only the methods graph timing calls today."""

import torch

from .rms_kernel import honest

_reset = torch.cuda.CUDAGraph.reset


def _hooked_reset(self):
    return _reset(self)


torch.cuda.CUDAGraph.reset = _hooked_reset


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)

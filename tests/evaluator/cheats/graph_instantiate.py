"""Cheat: replace the graph class's `instantiate`, which graph timing calls on each captured
graph after judging its nodes: the replacement could instantiate a graph other than the one
inspected (here it only marks itself), so the time and outputs would be another graph's."""

import torch

from .rms_kernel import honest

_instantiate = torch.cuda.CUDAGraph.instantiate


def _swapping_instantiate(self):
    return _instantiate(self)


torch.cuda.CUDAGraph.instantiate = _swapping_instantiate


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)

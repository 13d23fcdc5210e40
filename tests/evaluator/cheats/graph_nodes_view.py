"""Cheat: replace the graph class's `raw_cuda_graph`, through which graph timing reads a
captured graph's nodes to judge them: the replacement could hand the inspection a clean graph
while another one is timed (here it only passes the real one on)."""

import torch

from .rms_kernel import honest

_raw = torch.cuda.CUDAGraph.raw_cuda_graph


def _shown_graph(self):
    return _raw(self)


torch.cuda.CUDAGraph.raw_cuda_graph = _shown_graph


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)

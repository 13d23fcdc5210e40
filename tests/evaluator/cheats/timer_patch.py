"""Cheat: replace the clocks and CUDA events so every measurement reads as fast."""

import time

import torch

from .rms_kernel import honest

_real = time.perf_counter
time.perf_counter = lambda: _real() * 0.5


class _FastEvent(torch.cuda.Event):
    def elapsed_time(self, end_event):
        return 1e-6


torch.cuda.Event = _FastEvent


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)

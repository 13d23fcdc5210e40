"""Cheat: climb the call stack into the evaluator's frames to read its locals."""

import sys

from .rms_kernel import honest


def rms_norm(x, weight, eps=1e-6):
    frame = sys._getframe(1)
    while frame is not None:
        _ = frame.f_locals
        frame = frame.f_back
    return honest(x, weight, eps)

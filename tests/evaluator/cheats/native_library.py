"""Cheat: load a native library from the solution (a shared object's constructor would run
unseen by every Python-level hook); the honest kernel hides it otherwise."""

import ctypes

from .rms_kernel import honest

_library = ctypes.CDLL("libm.so.6")


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)

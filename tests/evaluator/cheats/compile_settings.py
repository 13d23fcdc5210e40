"""Cheat: slow the reference roles' compilation instead of speeding itself up. On its first
call, once its own kernel has compiled, it tells Triton to compile without LLVM's
optimisations (an environment variable and the knob behind it); on CUDA the baseline's kernels
compile after that, in the same process. It computes honestly."""

import os

import triton

from .rms_kernel import honest

_calls = [0]


def rms_norm(x, weight, eps=1e-6):
    result = honest(x, weight, eps)
    _calls[0] += 1
    if _calls[0] == 1:
        os.environ["DISABLE_LLVM_OPT"] = "1"
        triton.knobs.compilation.disable_line_info = True
    return result

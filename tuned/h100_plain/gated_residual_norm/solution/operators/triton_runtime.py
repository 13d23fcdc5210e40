"""Choose how Triton runs here: compiled on CUDA, or the interpreter on a CPU-only machine.

The interpreter must be selected before any kernel is defined, so every module that defines
a Triton kernel imports this one first.
"""

import os

import torch


def cuda_available() -> bool:
    """True when a CUDA device can run compiled Triton kernels."""
    return torch.cuda.is_available()


if not cuda_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def interpreting() -> bool:
    """True when Triton kernels run under the interpreter (CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def default_device() -> torch.device:
    """The device the production kernels run on here."""
    return torch.device("cuda" if cuda_available() else "cpu")

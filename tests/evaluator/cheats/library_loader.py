"""Cheat: bring a shared object and map it through a library's loader
(`torch.ops.load_library`, whose `ctypes` call the audit hook attributes to torch's frame, not
the solution's), so its code could compute where no hook looks; the honest kernel hides it
otherwise. A CPython extension's file stands in for the brought library."""

import _json
import os
import shutil
import tempfile

import torch

from .rms_kernel import honest


def rms_norm(x, weight, eps=1e-6):
    library = _json.__file__
    brought = os.path.join(tempfile.mkdtemp(), "brought.so")
    shutil.copyfile(library, brought)
    torch.ops.load_library(brought)
    return honest(x, weight, eps)

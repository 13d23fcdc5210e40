"""Cheat: inside each call, register a Python CPU kernel for an op the trace allows
(`aten::alias`, a view), compute inside it, and remove it before returning. The dispatch
mode sees only `alias`; the ops inside the kernel run below the mode, and the registration
is gone before any check of the dispatcher's table. The profiler still sees arithmetic
inside an op that only makes a view."""

import torch

_pending: dict = {}


def _alias_that_computes(tensor):
    job = _pending.pop(tensor.data_ptr(), None)
    if job is not None:
        x, weight, eps, out = job
        x32 = x.float()
        scale = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
        out.copy_((x32 * scale * weight.float()).to(out.dtype))
    return torch.ops.aten.as_strided.default(tensor, tensor.shape, tensor.stride())


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    library = torch.library.Library("aten", "IMPL")
    library.impl("alias", _alias_that_computes, "CPU")
    try:
        _pending[out.data_ptr()] = (x, weight, eps, out)
        torch.ops.aten.alias(out)
    finally:
        library._destroy()
    return out

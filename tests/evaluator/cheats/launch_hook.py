"""Cheat: a Triton pre-run hook computes the output with TorchScript (no Python frame of the
solution runs it, so every op it issues is credited to Triton's launcher); the kernel that
is launched does nothing."""

import torch
import triton


@triton.jit
def idle_kernel(x_ptr, w_ptr, out_ptr, hidden, eps):
    pass


@torch.jit.script
def _rms(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, hidden: int, eps: float):
    x32 = x.float()
    scale = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    out.copy_((x32 * scale * w.float()).to(out.dtype))


idle_kernel.add_pre_run_hook(_rms)


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    idle_kernel[(1,)](x, weight, out, x.shape[-1], eps)
    return out

